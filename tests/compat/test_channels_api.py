"""Channel control plane (CreateChannel, DescribeChannel, ListChannels, UpdateChannel,
DeleteChannel) against a real server: shapes, defaults, states, quotas, and every
validation rule with AWS's error type (kds-delivery-spec.md §1)."""

import copy
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import ACCOUNT, BINARY, Server, channel_request, kinesis_call, wait_channel  # noqa: E402

SERVER = None
K = None


def setUpModule():
    global SERVER, K
    SERVER = Server().start()
    K = SERVER.client()
    K.create_stream(StreamName="src")              # ON_DEMAND
    K.create_stream(StreamName="prov", ShardCount=2)  # PROVISIONED


def tearDownModule():
    SERVER.stop()
    SERVER.cleanup()


def call(op, body):
    return kinesis_call(SERVER, op, body)


class ChannelLifecycle(unittest.TestCase):
    def test_create_describe_list_update_delete(self):
        K.create_stream(StreamName="life")
        st, body = call("CreateChannel", channel_request("life-ch", "life"))
        self.assertEqual(st, 200, body)
        d = body["ChannelDescription"]
        self.assertEqual(d["ChannelStatus"], "CREATING")
        self.assertTrue(d["ChannelARN"].endswith("channel/" + d["ChannelId"]))
        self.assertEqual(d["ChannelARN"], f"arn:aws:kinesis:us-east-1:{ACCOUNT}:channel/{d['ChannelId']}")
        s3 = d["S3DestinationConfiguration"]
        self.assertEqual(s3["DataFreshnessInSeconds"], 300)
        self.assertEqual(s3["StorageConfiguration"]["StorageClass"], "STANDARD")
        self.assertTrue(s3["StorageConfiguration"]["OutputKeyTemplate"].startswith("kinesis-channel/!{channel-name}/"))
        self.assertEqual(s3["DeadLetterQueueS3Configuration"]["ErrorOutputPrefix"],
                         f"kinesis-channel/errors/life-ch/{d['ChannelId']}/")
        self.assertEqual(s3["DeadLetterQueueS3Configuration"]["BucketARN"], "arn:aws:s3:::my-bucket")
        cw = d["LoggingConfiguration"]["CloudWatchLogs"]
        self.assertEqual(cw, {"Enabled": False, "LogGroupName": f"/aws/kinesis/life-ch/{d['ChannelId']}",
                              "LogStreamName": "DestinationDelivery"})
        self.assertEqual(d["StreamConfigurationList"][0]["RecordConfiguration"]["RecordFormatType"], "JSON")
        self.assertIn("StreamCreationTimestamp", d["StreamConfigurationList"][0])
        arn = d["ChannelARN"]
        active = wait_channel(SERVER, arn)
        self.assertEqual(active["ChannelName"], "life-ch")

        # The stream sees its channel; it cannot be deleted while the channel exists.
        # (This botocore predates the channel fields and drops them: read them raw.)
        st, s = call("DescribeStreamSummary", {"StreamName": "life"})
        self.assertEqual(s["StreamDescriptionSummary"]["ChannelCount"], 1)
        st, lim = call("DescribeLimits", {})
        self.assertGreaterEqual(lim["ChannelCount"], 1)
        self.assertEqual(lim["ChannelCountLimit"], 100)
        with self.assertRaises(Exception) as cm:
            K.delete_stream(StreamName="life")
        self.assertEqual(cm.exception.response["Error"]["Code"], "ResourceInUseException")

        # Update: freshness and logging only; UPDATING, then ACTIVE again.
        st, body = call("UpdateChannel", {"ChannelARN": arn, "S3DestinationConfiguration": {"DataFreshnessInSeconds": 600},
                                          "LoggingConfiguration": {"CloudWatchLogs": {"Enabled": True}}})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["ChannelDescription"]["ChannelStatus"], "UPDATING")
        d = wait_channel(SERVER, arn)
        self.assertEqual(d["S3DestinationConfiguration"]["DataFreshnessInSeconds"], 600)
        self.assertTrue(d["LoggingConfiguration"]["CloudWatchLogs"]["Enabled"])
        st, body = call("UpdateChannel", {"ChannelARN": arn})
        self.assertEqual(body["__type"], "InvalidArgumentException")
        st, body = call("UpdateChannel", {"ChannelARN": arn, "S3TablesDestinationConfiguration": {"DataFreshnessInSeconds": 300}})
        self.assertEqual(body["__type"], "InvalidArgumentException")

        # Tags on the channel ARN.
        K.tag_resource(ResourceARN=arn, Tags={"team": "data"})
        self.assertEqual(K.list_tags_for_resource(ResourceARN=arn)["Tags"], [{"Key": "team", "Value": "data"}])
        K.untag_resource(ResourceARN=arn, TagKeys=["team"])
        self.assertEqual(K.list_tags_for_resource(ResourceARN=arn)["Tags"], [])

        # Delete: DELETING, then gone; a repeat delete while DELETING succeeds.
        st, body = call("DeleteChannel", {"ChannelARN": arn})
        self.assertEqual(st, 200, body)
        self.assertIsNone(body)
        wait_channel(SERVER, arn, "GONE")
        st, body = call("DescribeChannel", {"ChannelARN": arn})
        self.assertEqual(body["__type"], "ResourceNotFoundException")
        st, body = call("DeleteChannel", {"ChannelARN": arn})
        self.assertEqual(body["__type"], "ResourceNotFoundException")
        K.delete_stream(StreamName="life")

    def test_list_channels_filter_and_paging(self):
        for n in ("lst-a", "lst-b", "lst-c"):
            K.create_stream(StreamName=n)
            st, body = call("CreateChannel", channel_request(n + "-ch", n))
            self.assertEqual(st, 200, body)
        st, body = call("ListChannels", {"StreamFilter": [{"StreamARN": f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/lst-b"}]})
        self.assertEqual([c["ChannelName"] for c in body["ChannelSummaries"]], ["lst-b-ch"])
        s = body["ChannelSummaries"][0]
        self.assertEqual(s["ChannelDestinationType"], "S3")
        self.assertEqual(s["Streams"][0]["StreamARN"], f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/lst-b")
        names = []
        token = None
        while True:
            req = {"MaxResults": 1}
            if token:
                req["NextToken"] = token
            st, body = call("ListChannels", req)
            self.assertEqual(st, 200, body)
            names += [c["ChannelName"] for c in body["ChannelSummaries"]]
            token = body.get("NextToken")
            if not token:
                break
        for n in ("lst-a-ch", "lst-b-ch", "lst-c-ch"):
            self.assertIn(n, names)
        self.assertEqual(len(names), len(set(names)))
        st, body = call("ListChannels", {"MaxResults": 0})
        self.assertEqual(body["__type"], "ValidationException")
        st, body = call("ListChannels", {"NextToken": "bogus"})
        self.assertEqual(body["__type"], "InvalidArgumentException")

    def test_quotas_and_conflicts(self):
        K.create_stream(StreamName="quota")
        st, body = call("CreateChannel", channel_request("quota-1", "quota"))
        self.assertEqual(st, 200, body)
        st, body = call("CreateChannel", channel_request("quota-1", "quota"))
        self.assertEqual(body["__type"], "ResourceInUseException")
        st, body = call("CreateChannel", channel_request("quota-2", "quota"))
        self.assertEqual(body["__type"], "LimitExceededException")
        st, body = call("CreateChannel", channel_request("nostream", "missing-stream"))
        self.assertEqual(body["__type"], "ResourceNotFoundException")
        st, body = call("CreateChannel", channel_request("prov-ch", "prov"))
        self.assertEqual(body["__type"], "ValidationException")
        st, body = call("DescribeChannel", {"ChannelARN": f"arn:aws:kinesis:us-east-1:{ACCOUNT}:channel/does-not-exist"})
        self.assertEqual(body["__type"], "ResourceNotFoundException")


class Validation(unittest.TestCase):
    def check(self, expected, req):
        st, body = call("CreateChannel", req)
        self.assertEqual(st, 400, body)
        self.assertEqual(body["__type"], expected, json.dumps(req)[:300] + " -> " + json.dumps(body))

    def base(self):
        return channel_request("valid-name", "src")

    def test_model_constraints_are_validation_exceptions(self):
        def with_(fn):
            r = self.base()
            fn(r)
            return r
        cases = [
            lambda r: r.pop("ChannelName"),
            lambda r: r.__setitem__("ChannelName", "bad name"),
            lambda r: r.__setitem__("ChannelName", "x" * 129),
            lambda r: r.__setitem__("ChannelName", ""),
            lambda r: r.pop("ServiceExecutionRoleARN"),
            lambda r: r.__setitem__("ServiceExecutionRoleARN", "arn:aws:iam::12:role/x"),
            lambda r: r.pop("StreamConfigurationList"),
            lambda r: r.__setitem__("StreamConfigurationList", []),
            lambda r: r["StreamConfigurationList"][0].__setitem__("StreamARN", "arn:aws:s3:::nope"),
            lambda r: r["StreamConfigurationList"][0].pop("RecordConfiguration"),
            lambda r: r["StreamConfigurationList"][0]["RecordConfiguration"].__setitem__("RecordFormatType", "XML"),
            lambda r: r["StreamConfigurationList"][0]["RecordConfiguration"].__setitem__("GSRSchemaARN", "not-an-arn"),
            lambda r: r["S3DestinationConfiguration"].pop("StorageConfiguration"),
            lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"].__setitem__("BucketARN", "arn:aws:s3:::UPPER"),
            lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"].__setitem__("BucketARN", "arn:aws:s3:::ab"),
            lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"].pop("CompressionType"),
            lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"].__setitem__("CompressionType", "LZ4"),
            lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"].__setitem__("ExpectedBucketOwner", "123"),
            lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"].pop("ExpectedBucketOwner"),
            lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"].__setitem__("OutputKeyTemplate", "a b/!{yyyy}!{extension}"),
            lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"].__setitem__("OutputKeyTemplate", "a" * 1025),
            lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"].__setitem__("StorageClass", "GLACIER"),
            lambda r: r["S3DestinationConfiguration"].__setitem__("DataFreshnessInSeconds", 0),
            lambda r: r["S3DestinationConfiguration"].__setitem__("DataFreshnessInSeconds", 901),
            lambda r: r["S3DestinationConfiguration"].__setitem__("DeadLetterQueueS3Configuration", {"BucketARN": "arn:aws:s3:::dlq-bucket"}),
            lambda r: r["S3DestinationConfiguration"].__setitem__("DeadLetterQueueS3Configuration",
                                                                  {"BucketARN": "arn:aws:s3:::dlq-bucket", "ExpectedBucketOwner": ACCOUNT, "ErrorOutputPrefix": "bad prefix"}),
            lambda r: r.__setitem__("EncryptionConfiguration", {"EncryptionType": "AES", "KeyId": "k"}),
            lambda r: r.__setitem__("EncryptionConfiguration", {"EncryptionType": "KMS"}),
            lambda r: r.__setitem__("LoggingConfiguration", {"CloudWatchLogs": {}}),
            lambda r: r.__setitem__("LoggingConfiguration", {}),
            lambda r: r.__setitem__("LoggingConfiguration", {"CloudWatchLogs": {"Enabled": True, "LogStreamName": "a:b"}}),
            lambda r: r.__setitem__("Tags", {f"k{i}": "v" for i in range(201)}),
        ]
        for i, fn in enumerate(cases):
            with self.subTest(case=i):
                self.check("ValidationException", with_(fn))

    def test_semantic_rules_are_invalid_argument(self):
        def with_(fn):
            r = self.base()
            fn(r)
            return r
        storage = lambda r: r["S3DestinationConfiguration"]["StorageConfiguration"]  # noqa: E731
        tables = {"DeadLetterQueueS3Configuration": {"BucketARN": "arn:aws:s3:::dlq-bucket", "ExpectedBucketOwner": ACCOUNT},
                  "S3TablesConfigurationList": [{"TableBucketARN": f"arn:aws:s3tables:us-east-1:{ACCOUNT}:bucket/table-bucket",
                                                 "Namespace": "ns", "TableName": "t", "CompressionType": "ZSTD"}]}
        cases = [
            lambda r: r.pop("S3DestinationConfiguration"),                              # no destination
            lambda r: r.__setitem__("S3TablesDestinationConfiguration", tables),         # both
            lambda r: r["StreamConfigurationList"].append(copy.deepcopy(r["StreamConfigurationList"][0])),
            lambda r: r["StreamConfigurationList"][0]["RecordConfiguration"].__setitem__("RecordFormatType", "GSR_JSON"),
            lambda r: storage(r).__setitem__("OutputKeyTemplate", "/lead/!{yyyy}!{extension}"),
            lambda r: storage(r).__setitem__("OutputKeyTemplate", "a/../!{yyyy}!{extension}"),
            lambda r: storage(r).__setitem__("OutputKeyTemplate", "a//!{yyyy}!{extension}"),
            lambda r: storage(r).__setitem__("OutputKeyTemplate", "a/!{partition-id}!{extension}"),
            lambda r: storage(r).__setitem__("OutputKeyTemplate", "a/!{yyyy}/x"),        # GZIP without extension
            lambda r: storage(r).__setitem__("OutputKeyTemplate", "a/!{extension}/!{yyyy}"),
            lambda r: storage(r).__setitem__("OutputKeyTemplate", "a/!{yyyy"),
            lambda r: storage(r).__setitem__("OutputKeyTemplate", "a/!{yyyy}/!{extension:json}"),
            lambda r: r.__setitem__("EncryptionConfiguration", {"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"}),
        ]
        for i, fn in enumerate(cases):
            with self.subTest(case=i):
                self.check("InvalidArgumentException", with_(fn))
        # A streaming-table destination is validated by its own rules first...
        def table_request(fn=None):
            r = self.base()
            r.pop("S3DestinationConfiguration")
            t = copy.deepcopy(tables)
            t["S3TablesConfigurationList"][0]["PartitionSpec"] = {
                "PartitionFields": [{"SourceName": "event_time", "Transform": "TIME_HOUR"}]}
            r["S3TablesDestinationConfiguration"] = t
            r["StreamConfigurationList"][0]["RecordConfiguration"]["GSRSchemaARN"] = (
                f"arn:aws:glue:us-east-1:{ACCOUNT}:schema/reg/events")
            if fn:
                fn(r)
            return r
        tconf = lambda r: r["S3TablesDestinationConfiguration"]["S3TablesConfigurationList"][0]  # noqa: E731
        fields = lambda r: tconf(r)["PartitionSpec"]["PartitionFields"]  # noqa: E731
        for i, fn in enumerate([
                lambda r: fields(r)[0].__setitem__("Transform", "DAY"),
                lambda r: fields(r)[0].__setitem__("SourceName", "a b"),
                lambda r: fields(r)[0].pop("Transform"),
                lambda r: tconf(r)["PartitionSpec"].__setitem__("PartitionFields", []),
                lambda r: tconf(r)["PartitionSpec"].__setitem__("PartitionFields", [fields(r)[0]] * 11),
                lambda r: tconf(r).__setitem__("Namespace", "Upper")]):
            with self.subTest(table_model=i):
                self.check("ValidationException", table_request(fn))
        rc = lambda r: r["StreamConfigurationList"][0]["RecordConfiguration"]  # noqa: E731
        for i, fn in enumerate([
                lambda r: rc(r).pop("GSRSchemaARN"),
                lambda r: rc(r).__setitem__("RecordFormatType", "STRING"),
                lambda r: r["S3TablesDestinationConfiguration"]["S3TablesConfigurationList"].append(copy.deepcopy(tconf(r)))]):
            with self.subTest(table_rule=i):
                self.check("InvalidArgumentException", table_request(fn))
        # ...then by the registry: the schema must exist, be a JSON Schema, and map to a table
        # whose partition source is a date-time string.
        st, body = call("CreateChannel", table_request())
        self.assertEqual(body["__type"], "ResourceNotFoundException", body)
        self.assertIn("schema/reg/events", body["message"])
        glue = SERVER.client("glue")
        glue.create_registry(RegistryName="reg")
        glue.create_schema(RegistryId={"RegistryName": "reg"}, SchemaName="avro", DataFormat="AVRO",
                           SchemaDefinition='{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}')
        glue.create_schema(RegistryId={"RegistryName": "reg"}, SchemaName="events", DataFormat="JSON",
                           SchemaDefinition=json.dumps({"type": "object", "properties": {
                               "event_time": {"type": "string", "format": "date-time"},
                               "name": {"type": "string"}}}))
        for i, fn in enumerate([
                lambda r: rc(r).__setitem__("GSRSchemaARN", f"arn:aws:glue:us-east-1:{ACCOUNT}:schema/reg/avro"),
                lambda r: rc(r).__setitem__("GSRSchemaARN", f"arn:aws:glue:eu-west-1:{ACCOUNT}:schema/reg/events"),
                lambda r: fields(r)[0].__setitem__("SourceName", "name"),
                lambda r: fields(r)[0].__setitem__("SourceName", "missing"),
                lambda r: tconf(r).pop("PartitionSpec"),
                lambda r: fields(r).append({"SourceName": "event_time", "Transform": "TIME_HOUR"})]):
            with self.subTest(registry_rule=i):
                self.check("InvalidArgumentException", table_request(fn))
        st, body = call("CreateChannel", table_request())
        self.assertEqual(st, 200, body)
        self.assertEqual(body["ChannelDescription"]["ChannelStatus"], "CREATING")

    def test_valid_variants_are_accepted(self):
        K.create_stream(StreamName="variants")
        good = channel_request("variant", "variants", compression="ZSTD", freshness=1, fmt="STRING",
                               template="data/stream=!{stream-name}/!{yyyy}-!{MM}-!{dd}/!{HH}!{mm}!{extension:.json.zst}",
                               dlq={"BucketARN": "arn:aws:s3:::dlq-bucket", "ExpectedBucketOwner": ACCOUNT,
                                    "ErrorOutputPrefix": "dlq/"},
                               EncryptionConfiguration={"EncryptionType": "KMS", "KeyId": "arn:aws:kms:us-east-1:000000000000:key/1234"},
                               Tags={"a": "b"})
        good["S3DestinationConfiguration"]["StorageConfiguration"]["StorageClass"] = "INTELLIGENT_TIERING"
        st, body = call("CreateChannel", good)
        self.assertEqual(st, 200, body)
        d = body["ChannelDescription"]
        self.assertEqual(d["EncryptionConfiguration"]["KeyId"], "arn:aws:kms:us-east-1:000000000000:key/1234")
        self.assertEqual(d["S3DestinationConfiguration"]["DeadLetterQueueS3Configuration"]["ErrorOutputPrefix"], "dlq/")
        self.assertEqual(d["S3DestinationConfiguration"]["StorageConfiguration"]["StorageClass"], "INTELLIGENT_TIERING")
        self.assertEqual(K.list_tags_for_resource(ResourceARN=d["ChannelARN"])["Tags"], [{"Key": "a", "Value": "b"}])


class StrictAndRestart(unittest.TestCase):
    def test_aws_strict_freshness_and_restart(self):
        srv = Server(extra_args=["--aws-strict"]).start()
        try:
            k = srv.client()
            k.create_stream(StreamName="s")
            st, body = kinesis_call(srv, "CreateChannel", channel_request("c", "s", freshness=60))
            self.assertEqual(body["__type"], "ValidationException")
            st, body = kinesis_call(srv, "CreateChannel", channel_request("c", "s", freshness=300))
            self.assertEqual(st, 200, body)
            arn = body["ChannelDescription"]["ChannelARN"]
            wait_channel(srv, arn)
            k.tag_resource(ResourceARN=arn, Tags={"keep": "me"})
            # AWS's control-plane rate (5 TPS per operation and account) is enforced.
            time.sleep(1.1)
            codes = [kinesis_call(srv, "DescribeChannel", {"ChannelARN": arn})[1].get("__type")
                     for _ in range(12)]
            self.assertIsNone(codes[0])
            self.assertIn("LimitExceededException", codes)
            time.sleep(1.1)
            st, body = kinesis_call(srv, "DescribeChannel", {"ChannelARN": arn})
            self.assertEqual(st, 200, body)
            srv.stop()
            srv.start()
            d = wait_channel(srv, arn)
            self.assertEqual(d["S3DestinationConfiguration"]["DataFreshnessInSeconds"], 300)
            self.assertEqual(srv.client().list_tags_for_resource(ResourceARN=arn)["Tags"], [{"Key": "keep", "Value": "me"}])
        finally:
            srv.stop()
            srv.cleanup()


class NoRateLimitByDefault(unittest.TestCase):
    def test_rapid_control_plane_calls_are_served(self):
        K.create_stream(StreamName="rapid")
        st, body = kinesis_call(SERVER, "CreateChannel", channel_request("rapid-ch", "rapid"))
        self.assertEqual(st, 200, body)
        arn = body["ChannelDescription"]["ChannelARN"]
        for _ in range(20):
            st, body = kinesis_call(SERVER, "DescribeChannel", {"ChannelARN": arn})
            self.assertEqual(st, 200, body)
        kinesis_call(SERVER, "DeleteChannel", {"ChannelARN": arn})
        wait_channel(SERVER, arn, status="GONE")


class Cli(unittest.TestCase):
    def test_channels_cli(self):
        K.create_stream(StreamName="cli-src")
        req = channel_request("cli-ch", "cli-src", freshness=5)
        path = os.path.join(SERVER.data_dir, "..", os.path.basename(SERVER.data_dir) + "-req.json")
        with open(path, "w") as f:
            json.dump(req, f)
        try:
            env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test")
            p = subprocess.run([BINARY, "channels", "create", "file://" + path, "--endpoint", SERVER.endpoint],
                               capture_output=True, text=True, env=env, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            arn = json.loads(p.stdout)["ChannelDescription"]["ChannelARN"]
            p = subprocess.run([BINARY, "channels", "describe", "--channel-arn", arn, "--endpoint", SERVER.endpoint],
                               capture_output=True, text=True, env=env, timeout=60)
            self.assertEqual(json.loads(p.stdout)["ChannelDescription"]["ChannelName"], "cli-ch")
            p = subprocess.run([BINARY, "channels", "list", "--endpoint", SERVER.endpoint],
                               capture_output=True, text=True, env=env, timeout=60)
            self.assertIn("cli-ch", [c["ChannelName"] for c in json.loads(p.stdout)["ChannelSummaries"]])
            # Errors come back in the AWS shape on stderr, with a non-zero exit.
            p = subprocess.run([BINARY, "channels", "create", "-", "--endpoint", SERVER.endpoint],
                               input=json.dumps(req), capture_output=True, text=True, env=env, timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertEqual(json.loads(p.stderr)["__type"], "ResourceInUseException")
            p = subprocess.run([BINARY, "channels", "delete", "--channel-arn", arn, "--endpoint", SERVER.endpoint],
                               capture_output=True, text=True, env=env, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
        finally:
            os.remove(path)


class UnreachableDestination(unittest.TestCase):
    """A channel whose S3 endpoint does not answer stays CREATING with the reason and the
    attempts in DescribeChannel (IcestreamStatus), then FAILS after the activation limit."""

    def test_activation_retries_visibly_then_fails(self):
        import socket
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            dead = s.getsockname()[1]
        srv = Server(config_text=f"""
[s3]
endpoint = "http://127.0.0.1:{dead}"
max_attempts = 1
request_timeout_ms = 1000
[delivery]
activation_timeout_ms = 6000
""").start()
        try:
            k = srv.client()
            k.create_stream(StreamName="dead")
            st, body = kinesis_call(srv, "CreateChannel", channel_request("dead-ch", "dead", freshness=1))
            self.assertEqual(st, 200, body)
            arn = body["ChannelDescription"]["ChannelARN"]
            deadline = time.time() + 5
            status = {}
            while time.time() < deadline:
                st, body = kinesis_call(srv, "DescribeChannel", {"ChannelARN": arn})
                d = body["ChannelDescription"]
                status = d.get("IcestreamStatus", {})
                if status.get("ActivationAttempts", 0) >= 2:
                    break
                time.sleep(0.1)
            self.assertEqual(d["ChannelStatus"], "CREATING")
            self.assertGreaterEqual(status.get("ActivationAttempts", 0), 2, status)
            self.assertIn("destination bucket", status.get("LastError", ""))
            d = wait_channel(srv, arn, status="FAILED", timeout=30)
            self.assertIn("could not reach its destination", d["ChannelStatusReason"])
            self.assertIn("activation attempt", srv.read_log())
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

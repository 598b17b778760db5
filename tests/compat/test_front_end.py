"""Fidelity of the Kinesis front end to AWS on malformed requests (issue 11): one request
pipeline in AWS's order — body type checks (SerializationException), model validation
listing every violation (ValidationException), authentication, then service checks
("Neither StreamARN nor StreamName was provided." last) — plus AWS's texts for tags,
blobs, CORS and query-string SigV4. Messages marked "AWS" were recorded against AWS
(kinesalite's suite, aws-api.md). Driven by boto3, the AWS CLI and raw HTTP."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, error_code, http_send, raw_call  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

K = "Kinesis_20131202."
JSON11 = "application/x-amz-json-1.1"
INVALID_TAG = ("Some tags contain invalid characters. Valid characters: Unicode letters, digits, "
               "white space, _ . / = + - % @.")

# Every operation the server answers, each with a body that passes the model checks.
OPS = {
    "CreateStream": {"StreamName": "never", "ShardCount": 1},
    "DeleteStream": {"StreamName": "fe"},
    "DescribeStream": {"StreamName": "fe"},
    "DescribeStreamSummary": {"StreamName": "fe"},
    "ListStreams": {},
    "DescribeLimits": {},
    "IncreaseStreamRetentionPeriod": {"StreamName": "fe", "RetentionPeriodHours": 48},
    "DecreaseStreamRetentionPeriod": {"StreamName": "fe", "RetentionPeriodHours": 24},
    "UpdateStreamMode": {"StreamARN": "arn:aws:kinesis:us-east-1:000000000000:stream/fe",
                         "StreamModeDetails": {"StreamMode": "ON_DEMAND"}},
    "EnableEnhancedMonitoring": {"StreamName": "fe", "ShardLevelMetrics": ["ALL"]},
    "DisableEnhancedMonitoring": {"StreamName": "fe", "ShardLevelMetrics": ["ALL"]},
    "StartStreamEncryption": {"StreamName": "fe", "EncryptionType": "KMS", "KeyId": "k"},
    "StopStreamEncryption": {"StreamName": "fe", "EncryptionType": "KMS", "KeyId": "k"},
    "UpdateMaxRecordSize": {"StreamName": "fe", "MaxRecordSizeInKiB": 2048},
    "UpdateStreamWarmThroughput": {"StreamName": "fe", "WarmThroughputMiBps": 1},
    "DescribeAccountSettings": {},
    "UpdateAccountSettings": {"MinimumThroughputBillingCommitment": {"Status": "DISABLED"}},
    "ListShards": {"StreamName": "fe"},
    "SplitShard": {"StreamName": "fe", "ShardToSplit": "shardId-000000000000", "NewStartingHashKey": "1"},
    "MergeShards": {"StreamName": "fe", "ShardToMerge": "shardId-000000000000",
                    "AdjacentShardToMerge": "shardId-000000000001"},
    "UpdateShardCount": {"StreamName": "fe", "TargetShardCount": 1, "ScalingType": "UNIFORM_SCALING"},
    "PutRecord": {"StreamName": "fe", "Data": "aGk=", "PartitionKey": "k"},
    "PutRecords": {"StreamName": "fe", "Records": [{"Data": "aGk=", "PartitionKey": "k"}]},
    "GetShardIterator": {"StreamName": "fe", "ShardId": "shardId-000000000000",
                         "ShardIteratorType": "TRIM_HORIZON"},
    "GetRecords": {"ShardIterator": "x"},
    "AddTagsToStream": {"StreamName": "fe", "Tags": {"a": "b"}},
    "RemoveTagsFromStream": {"StreamName": "fe", "TagKeys": ["a"]},
    "ListTagsForStream": {"StreamName": "fe"},
    "TagResource": {"ResourceARN": "arn:aws:kinesis:us-east-1:000000000000:stream/fe", "Tags": {"a": "b"}},
    "UntagResource": {"ResourceARN": "arn:aws:kinesis:us-east-1:000000000000:stream/fe", "TagKeys": ["a"]},
    "ListTagsForResource": {"ResourceARN": "arn:aws:kinesis:us-east-1:000000000000:stream/fe"},
    "PutResourcePolicy": {"ResourceARN": "arn:aws:kinesis:us-east-1:000000000000:stream/fe", "Policy": "{}"},
    "GetResourcePolicy": {"ResourceARN": "arn:aws:kinesis:us-east-1:000000000000:stream/fe"},
    "DeleteResourcePolicy": {"ResourceARN": "arn:aws:kinesis:us-east-1:000000000000:stream/fe"},
    "ListChannels": {},
    "RegisterStreamConsumer": {"StreamARN": "arn:aws:kinesis:us-east-1:000000000000:stream/fe",
                               "ConsumerName": "c"},
}


class FrontEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().start()
        cls.k = cls.srv.client()
        cls.k.create_stream(StreamName="fe", ShardCount=2)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()

    def call(self, op, body, sign=True, **kw):
        text = body if isinstance(body, (str, bytes)) else json.dumps(body)
        return raw_call(self.srv, K + op, text, sign=sign, **kw)

    def assertError(self, op, body, etype, message=None, sign=True):
        st, hdrs, out = self.call(op, body, sign=sign)
        self.assertEqual(st, 400, out)
        self.assertEqual(out["__type"], etype, out)
        self.assertEqual(hdrs.get("x-amzn-ErrorType"), etype)
        if message is not None:
            self.assertEqual(out.get("message", out.get("Message")), message, out)
        return out

    # --- the pipeline's order -------------------------------------------------------

    def test_type_errors_come_before_validation_and_the_stream_selector(self):
        # A wrong-typed member and a missing stream: SerializationException.
        self.assertError("PutRecord", {"Data": "aGk=", "PartitionKey": 5}, "SerializationException")
        self.assertError("DescribeStream", {"Limit": "5"}, "SerializationException",
                         "class java.lang.String can not be converted to an Integer")
        # A missing required member without a stream: ValidationException, not
        # "Neither StreamARN nor StreamName".
        out = self.assertError("PutRecord", {"Data": "aGk="}, "ValidationException")
        self.assertEqual(out["message"], "1 validation error detected: Value null at 'partitionKey' "
                                         "failed to satisfy constraint: Member must not be null")
        self.assertError("PutRecord", {"Data": "aGk=", "PartitionKey": "k"}, "InvalidArgumentException",
                         "Neither StreamARN nor StreamName was provided.")
        self.assertError("AddTagsToStream", {}, "ValidationException")

    def test_every_violation_is_listed_with_aws_member_paths(self):
        out = self.assertError("DescribeStream", {"StreamName": "", "Limit": 0, "ExclusiveStartShardId": "!"},
                               "ValidationException")
        msg = out["message"]
        self.assertTrue(msg.startswith("4 validation errors detected: "), msg)
        for part in ["Value '' at 'streamName' failed to satisfy constraint: Member must satisfy regular "
                     "expression pattern: [a-zA-Z0-9_.-]+",
                     "Value '' at 'streamName' failed to satisfy constraint: Member must have length "
                     "greater than or equal to 1",
                     "Value '0' at 'limit' failed to satisfy constraint: Member must have value greater "
                     "than or equal to 1",
                     "Value '!' at 'exclusiveStartShardId' failed to satisfy constraint: Member must "
                     "satisfy regular expression pattern: [a-zA-Z0-9_.-]+"]:
            self.assertIn(part, msg)
        out = self.assertError("PutRecords", {"StreamName": "a b", "Records": [{"Data": "aGk="}]},
                               "ValidationException")
        self.assertIn("at 'records.1.member.partitionKey'", out["message"])
        self.assertIn("at 'streamName'", out["message"])
        # boto3 sees the same error.
        with self.assertRaises(ClientError) as cm:
            self.k.list_shards(StreamName="bad name", MaxResults=0)
        self.assertEqual(error_code(cm.exception), "ValidationException")
        self.assertIn("2 validation errors detected", cm.exception.response["Error"]["Message"])

    def test_authentication_comes_after_model_checks_and_before_service_checks(self):
        self.assertError("DescribeStream", {"StreamName": "fe", "Limit": "x"}, "SerializationException",
                         sign=False)
        self.assertError("DescribeStream", {"StreamName": "fe", "Limit": 0}, "ValidationException", sign=False)
        self.assertError("DescribeStream", {}, "MissingAuthenticationTokenException",
                         "Missing Authentication Token", sign=False)
        self.assertError("DescribeStream", {"StreamName": "nope"}, "MissingAuthenticationTokenException",
                         sign=False)
        self.assertError("DescribeStream", {}, "InvalidArgumentException",
                         "Neither StreamARN nor StreamName was provided.")
        # A body that does not parse is a SerializationException even without auth.
        for body in ("{not json", "[1]", "\"x\""):
            self.assertError("ListStreams", body, "SerializationException", sign=False)

    def test_no_operation_answers_an_unauthenticated_call(self):
        for op, body in OPS.items():
            st, _, out = self.call(op, body, sign=False)
            self.assertEqual((st, out["__type"]), (400, "MissingAuthenticationTokenException"), (op, out))
            st, _, out = self.call(op, {}, sign=False)
            self.assertEqual(st, 400, op)
            self.assertIn(out["__type"], ("MissingAuthenticationTokenException", "ValidationException"),
                          (op, out))
        # Operations whose valid bodies are long: an empty body must not pass either.
        for op in ("CreateChannel", "DescribeChannel", "UpdateChannel", "DeleteChannel",
                   "DescribeStreamConsumer", "DeregisterStreamConsumer", "ListStreamConsumers",
                   "SubscribeToShard"):
            st, _, out = self.call(op, {}, sign=False)
            self.assertEqual(st, 400, op)
            self.assertIn(out["__type"], ("MissingAuthenticationTokenException", "ValidationException"),
                          (op, out))
        self.assertNotIn("never", self.k.list_streams()["StreamNames"])
        shards = self.k.list_shards(StreamName="fe")["Shards"]
        self.assertEqual(len(shards), 2)

    # --- SerializationException bodies ------------------------------------------------

    def test_serialization_exception_bodies(self):
        st, _, out = self.call("ListStreams", "", sign=False)
        self.assertEqual((st, out), (400, {"__type": "SerializationException"}))
        # A body that does not parse: no message either (as AWS answers; kinesalite's suite).
        st, _, out = self.call("ListStreams", "{oops")
        self.assertEqual((st, out), (400, {"__type": "SerializationException"}))
        st, _, out = self.call("DescribeStream", {"StreamName": True})
        self.assertEqual(set(out), {"__type", "Message"}, out)

    # --- blobs ------------------------------------------------------------------------

    def test_data_must_be_canonical_base64(self):
        cases = {
            "+/+=": "'+/+=' can not be converted to a Blob: Invalid last non-pad Base64 character dectected",
            "=+/=": "'=+/=' can not be converted to a Blob: Invalid Base64 character: '='",
            "23456": "'23456' can not be converted to a Blob: Base64 encoded length is expected a multiple "
                     "of 4 bytes but found: 5",
        }
        for data, msg in cases.items():
            self.assertError("PutRecord", {"StreamName": "fe", "Data": data, "PartitionKey": "k"},
                             "SerializationException", msg)
            self.assertError("PutRecords", {"StreamName": "fe", "Records": [{"Data": data, "PartitionKey": "k"}]},
                             "SerializationException", msg)
        self.assertError("PutRecord", {"StreamName": "fe", "Data": True, "PartitionKey": "k"},
                         "SerializationException", "class java.lang.Boolean can not be converted to a Blob")
        st, _, out = self.call("PutRecord", {"StreamName": "fe", "Data": "+/8=", "PartitionKey": "k"})
        self.assertEqual(st, 200, out)

    # --- tags -------------------------------------------------------------------------

    def test_tag_characters(self):
        for key, value in [("a\tb", "1"), ("a\nb", "1"), ("a;b", "1"), ("a,b", "1"), ("ok", "x\ty"),
                           ("ok", "x\u0085y")]:
            self.assertError("AddTagsToStream", {"StreamName": "fe", "Tags": {key: value}},
                             "InvalidArgumentException", INVALID_TAG)
        self.assertError("AddTagsToStream", {"StreamName": "fe", "Tags": {"a%b": "1"}}, "InvalidArgumentException",
                         "Failed to add tags to stream fe under account 000000000000 because some tags "
                         "contained illegal characters. The allowed characters are Unicode letters, "
                         "white-spaces, '_',',','/','=','+','-','@'.")
        self.assertError("AddTagsToStream", {"StreamName": "fe", "Tags": {"a": 5}}, "SerializationException")
        # A nonexistent stream is reported before the characters.
        self.assertError("AddTagsToStream", {"StreamName": "nope", "Tags": {"a;b": "1"}},
                         "ResourceNotFoundException")
        good = {"k e_y.1:/=+-@": "v\u00e9 \u00e0", "\u6771\u4eac": "\u5927\u962a"}
        self.k.add_tags_to_stream(StreamName="fe", Tags=good)
        for bad in (["a\tb"], ["a;b"], ["x\ny"]):
            self.assertError("RemoveTagsFromStream", {"StreamName": "fe", "TagKeys": bad},
                             "InvalidArgumentException", INVALID_TAG)
        self.assertError("RemoveTagsFromStream", {"StreamName": "fe", "TagKeys": [1]}, "SerializationException")
        self.assertError("RemoveTagsFromStream", {"StreamName": "fe", "TagKeys": ["ok", None]},
                         "SerializationException")
        # Nothing was removed by the refused calls; the valid keys go.
        tags = {t["Key"] for t in self.k.list_tags_for_stream(StreamName="fe")["Tags"]}
        self.assertTrue(set(good) <= tags)
        self.k.remove_tags_from_stream(StreamName="fe", TagKeys=list(good))
        # The CLI sees the same refusal.
        rc, _, err = self.srv.cli("kinesis", "add-tags-to-stream", "--stream-name", "fe", "--tags", '{"a;b": "1"}',
                                  check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("InvalidArgumentException", err)

    # --- CORS -------------------------------------------------------------------------

    def test_cors(self):
        st, hdrs, out = http_send(self.srv, "OPTIONS", "/", {
            "Origin": "http://example.com",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,x-amz-target,authorization"})
        self.assertEqual(st, 200)
        h = {k.lower(): v for k, v in hdrs.items()}
        self.assertEqual(h["access-control-allow-origin"], "*")
        self.assertEqual(h["access-control-max-age"], "172800")
        self.assertEqual(h["access-control-allow-headers"], "content-type,x-amz-target,authorization")
        self.assertEqual(h["access-control-allow-methods"], "POST")
        self.assertFalse(out)
        st, hdrs, out = self.call("ListStreams", {}, extra_headers={"Origin": "http://example.com"})
        self.assertEqual(st, 200)
        h = {k.lower(): v for k, v in hdrs.items()}
        self.assertEqual(h["access-control-allow-origin"], "*")
        self.assertIn("x-amzn-RequestId", h["access-control-expose-headers"])
        self.assertIn("x-amzn-ErrorType", h["access-control-expose-headers"])
        st, hdrs, out = self.call("DescribeStream", {}, extra_headers={"Origin": "http://example.com"})
        self.assertEqual(st, 400)
        self.assertEqual({k.lower(): v for k, v in hdrs.items()}["access-control-allow-origin"], "*")

    # --- query-string SigV4 ------------------------------------------------------------

    def query_call(self, query, authorization=None):
        headers = {"Content-Type": JSON11, "X-Amz-Target": K + "ListStreams"}
        if authorization:
            headers["Authorization"] = authorization
        return http_send(self.srv, "POST", "/?" + query, headers, b"{}")

    def test_query_string_signatures(self):
        full = ("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20260101%2Fus-east-1%2Fkinesis"
                "%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=" + "0" * 64)
        st, _, out = self.query_call(full, authorization="AWS4-HMAC-SHA256 Credential=a/b/c/d/e, "
                                                         "SignedHeaders=host, Signature=0")
        self.assertEqual((st, out["__type"]), (400, "InvalidSignatureException"))
        self.assertEqual(out["message"], "Found both 'X-Amz-Algorithm' as a query-string param and "
                                         "'Authorization' as HTTP header.")
        st, _, out = self.query_call("X-Amz-Algorithm")
        self.assertEqual((st, out["__type"]), (400, "IncompleteSignatureException"))
        self.assertEqual(out["message"],
                         "AWS query-string parameters must include 'X-Amz-Algorithm'. "
                         "AWS query-string parameters must include 'X-Amz-Credential'. "
                         "AWS query-string parameters must include 'X-Amz-Signature'. "
                         "AWS query-string parameters must include 'X-Amz-SignedHeaders'. "
                         "AWS query-string parameters must include 'X-Amz-Date'. "
                         "Re-examine the query-string parameters.")
        st, _, out = self.query_call("X-Amz-Algorithm=a&X-Amz-Credential=b&X-Amz-Signature=c&X-Amz-Date=d")
        self.assertEqual((st, out["__type"]), (400, "IncompleteSignatureException"))
        self.assertEqual(out["message"], "AWS query-string parameters must include 'X-Amz-SignedHeaders'. "
                                         "Re-examine the query-string parameters.")
        # A complete presigned query is still refused (not supported).
        st, _, out = self.query_call(full)
        self.assertEqual((st, out["__type"]), (400, "InvalidSignatureException"))

    # --- MergeShards -------------------------------------------------------------------

    def test_merge_refuses_the_inverted_pair_via_the_cli(self):
        self.k.create_stream(StreamName="fe-merge", ShardCount=2)
        rc, _, err = self.srv.cli("kinesis", "merge-shards", "--stream-name", "fe-merge",
                                  "--shard-to-merge", "shardId-000000000001",
                                  "--adjacent-shard-to-merge", "shardId-000000000000", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("InvalidArgumentException", err)
        self.srv.cli("kinesis", "merge-shards", "--stream-name", "fe-merge",
                     "--shard-to-merge", "shardId-000000000000", "--adjacent-shard-to-merge", "shardId-000000000001")
        child = self.k.list_shards(StreamName="fe-merge")["Shards"][-1]
        self.assertEqual((child["ParentShardId"], child["AdjacentParentShardId"]),
                         ("shardId-000000000000", "shardId-000000000001"))
        self.k.delete_stream(StreamName="fe-merge")


if __name__ == "__main__":
    unittest.main(verbosity=2)

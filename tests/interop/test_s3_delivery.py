"""End to end S3 delivery: records over several shards and partition keys, through
channels with each compression, format and several key templates, into the embedded
bucket folders and into a real S3 server (radosgw). Every acknowledged valid record is
delivered exactly once in per-shard order under keys that follow the template; invalid
records appear in the DLQ and nowhere else. Objects are decompressed with independent
tools (Python's gzip, the zstd CLI)."""

import datetime
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import (LocalBucket, S3Bucket, dlq_entries, produce, verify_exactly_once,  # noqa: E402
                            wait_delivered)
from harness import ACCOUNT, Rgw, Server, channel_request, kinesis_call, wait_channel  # noqa: E402

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
SUFFIX = r"-\d{18}-\d{6}-[0-9a-f]{11}"


def make_records(n, fmt, invalid_every=0):
    recs, bad = [], []
    for i in range(n):
        if invalid_every and i % invalid_every == 7:
            data = b"{not json" if fmt == "JSON" else b"bad utf8 \xff\xfe"
            bad.append(data + str(i).encode())
            recs.append((f"pk-{i % 97}", data + str(i).encode()))
        elif fmt == "BYTE_ARRAY":
            recs.append((f"pk-{i % 97}", os.urandom(20) + i.to_bytes(4, "big")))
        elif fmt == "STRING":
            recs.append((f"pk-{i % 97}", f"line {i} héllo ✓".encode()))
        else:
            recs.append((f"pk-{i % 97}", ('{"i": %d, "user": "u%d", "tags": ["a", "b"]}' % (i, i % 13)).encode()))
    return recs, set(bad)


class Delivery:
    """Mixin: one scenario run against `self.server` and `self.bucket_of(name)`."""

    def scenario(self, stream, channel, fmt, compression, template, n, regex, invalid_every=0, **extra):
        k = self.server.client()
        k.create_stream(StreamName=stream)
        req = channel_request(channel, stream, bucket=self.bucket_name, compression=compression, freshness=1,
                              fmt=fmt, template=template, **extra)
        st, body = kinesis_call(self.server, "CreateChannel", req)
        self.assertEqual(st, 200, body)
        d = wait_channel(self.server, body["ChannelDescription"]["ChannelARN"])
        cid = d["ChannelId"]
        recs, bad = make_records(n, fmt, invalid_every)
        acked = produce(k, stream, recs)
        self.assertEqual(len(acked), n)
        valid = [a for a in acked if a[0] not in bad]
        prefix = template.split("!{")[0] if template else f"kinesis-channel/{channel}/"
        want = sum(len(a[0]) for a in valid) if fmt == "BYTE_ARRAY" else len(valid)
        objs = wait_delivered(self.bucket(), prefix, want, fmt)
        if bad:
            objs = {key: v for key, v in objs.items() if "/errors/" not in key}
        verify_exactly_once(self, objs, valid, fmt, re.compile(regex.replace("CID", cid)))
        if bad:
            errors = self.wait_dlq(f"kinesis-channel/errors/{channel}/{cid}/", len(bad))
            seqs = {a[2] for a in acked if a[0] in bad}
            self.assertEqual({e["sequenceNumber"] for e in errors}, seqs)
            for e in errors:
                self.assertEqual(e["streamARN"], f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/{stream}")
                self.assertEqual(e["errorCode"], "DESERIALIZATION_ERROR")
                self.assertRegex(e["shardId"], r"shardId-\d{12}")
                arrived = datetime.datetime.fromisoformat(e["approximateArrivalTimestamp"].replace("Z", "+00:00"))
                attempted = datetime.datetime.fromisoformat(e["attemptTimestamp"].replace("Z", "+00:00"))
                self.assertGreaterEqual(attempted, arrived)
                self.assertEqual(e["channelARN"].rsplit("/", 1)[-1], cid)
                self.assertNotIn("data", e)
            # Invalid payloads are nowhere in the data objects.
            all_data = b"".join(objs.values())
            for b in list(bad)[:20]:
                self.assertNotIn(b, all_data)
        return cid

    def wait_dlq(self, prefix, count, timeout=30):
        import time
        deadline = time.time() + timeout
        while time.time() < deadline:
            entries = dlq_entries(self.bucket().objects(prefix))
            if len(entries) >= count:
                self.assertEqual(len(entries), count)
                return entries
            time.sleep(0.2)
        raise AssertionError("DLQ entries missing")


class LocalDelivery(unittest.TestCase, Delivery):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().start()
        cls.bucket_name = "local-bucket"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    def bucket(self):
        return LocalBucket(os.path.join(self.server.data_dir, "buckets", self.bucket_name))

    def test_json_gzip_default_template_with_dlq(self):
        self.scenario("s-json", "ch-json", "JSON", "GZIP", None, 3000,
                      rf"^kinesis-channel/ch-json/CID/\d{{4}}/\d{{2}}/\d{{2}}/\d{{2}}/ch-json-CID-\d{{4}}-\d{{2}}-\d{{2}}-\d{{2}}-\d{{2}}{SUFFIX}\.gz$",
                      invalid_every=50)

    def test_string_zstd_custom_template(self):
        self.scenario("s-str", "ch-str", "STRING", "ZSTD",
                      "data/stream=!{stream-name}/!{yy}/!{yyyy}-!{MM}-!{dd}/!{HH}!{mm}/part!{extension}", 2000,
                      rf"^data/stream=s-str/\d{{2}}/\d{{4}}-\d{{2}}-\d{{2}}/\d{{4}}/part{SUFFIX}\.zst$",
                      invalid_every=40)

    def test_bytes_uncompressed_no_extension(self):
        self.scenario("s-bin", "ch-bin", "BYTE_ARRAY", "NONE", "raw/!{channel-name}/!{channel-id}", 1500,
                      rf"^raw/ch-bin/CID{SUFFIX}$")

    def test_literal_extension_and_dlq_prefix(self):
        self.scenario("s-lit", "ch-lit", "JSON", "NONE", "lit/!{HH}/x!{extension:.json}", 500,
                      rf"^lit/\d{{2}}/x{SUFFIX}\.json$",
                      dlq=None)

    def test_logging_toggled_while_delivering(self):
        # UpdateChannel replaces the delivery log while batches run (a use-after-free once).
        k = self.server.client()
        k.create_stream(StreamName="s-log")
        st, body = kinesis_call(self.server, "CreateChannel",
                                channel_request("ch-log", "s-log", bucket=self.bucket_name, compression="NONE",
                                                freshness=1, template="log/!{mm}/o",
                                                LoggingConfiguration={"CloudWatchLogs": {"Enabled": True}}))
        arn = wait_channel(self.server, body["ChannelDescription"]["ChannelARN"])["ChannelARN"]
        acked = []
        for i in range(30):
            acked += produce(k, "s-log", [(f"k{j}", b'{"i": %d}' % (i * 100 + j)) for j in range(100)])
            wait_channel(self.server, arn)
            st, body = kinesis_call(self.server, "UpdateChannel",
                                    {"ChannelARN": arn, "LoggingConfiguration": {"CloudWatchLogs": {"Enabled": i % 2 == 1}}})
            self.assertEqual(st, 200, body)
        objs = wait_delivered(self.bucket(), "log/", len(acked), "JSON")
        verify_exactly_once(self, objs, acked, "JSON")
        logs = os.path.join(self.server.data_dir, "delivery-logs")
        self.assertTrue(any(f.endswith(".jsonl") for _, _, fs in os.walk(logs) for f in fs))

    def test_key_time_comes_from_record_arrival(self):
        k = self.server.client()
        k.create_stream(StreamName="s-time")
        st, body = kinesis_call(self.server, "CreateChannel",
                                channel_request("ch-time", "s-time", bucket=self.bucket_name, compression="NONE",
                                                freshness=1, template="t/!{yyyy}/!{MM}/!{dd}/!{HH}/!{mm}/o"))
        d = wait_channel(self.server, body["ChannelDescription"]["ChannelARN"])
        acked = produce(k, "s-time", [("k", b'{"a": 1}')])
        objs = wait_delivered(self.bucket(), "t/", 1, "JSON")
        (key,) = objs.keys()
        shard = acked[0][1]
        it = k.get_shard_iterator(StreamName="s-time", ShardId=shard, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        arrival = k.get_records(ShardIterator=it)["Records"][0]["ApproximateArrivalTimestamp"].astimezone(datetime.timezone.utc)
        self.assertTrue(key.startswith(arrival.strftime("t/%Y/%m/%d/%H/%M/o-")), (key, arrival))
        self.assertIsNotNone(d)


class RgwDelivery(unittest.TestCase, Delivery):
    @classmethod
    def setUpClass(cls):
        cls.rgw = Rgw().start()
        cls.bucket_name = "delivery-bucket"
        cls.rgw.s3().create_bucket(Bucket=cls.bucket_name)
        os.environ["AWS_ACCESS_KEY_ID"] = Rgw.access_key
        os.environ["AWS_SECRET_ACCESS_KEY"] = Rgw.secret_key
        # A missing bucket FAILS the channel after a short grace (the default is minutes).
        cls.server = Server(extra_args=["--s3-endpoint", cls.rgw.endpoint],
                            config_text="[delivery]\ndestination_grace_ms = 3000\n").start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()
        cls.rgw.stop()

    def bucket(self):
        return S3Bucket(self.rgw.s3(), self.bucket_name)

    def test_gzip_json_with_dlq(self):
        self.scenario("r-json", "rch-json", "JSON", "GZIP", None, 1500,
                      rf"^kinesis-channel/rch-json/CID/\d{{4}}/\d{{2}}/\d{{2}}/\d{{2}}/rch-json-CID-\d{{4}}-\d{{2}}-\d{{2}}-\d{{2}}-\d{{2}}{SUFFIX}\.gz$",
                      invalid_every=30)

    def test_zstd_with_sse_kms(self):
        cid = self.scenario("r-kms", "rch-kms", "STRING", "ZSTD", "kms/!{channel-name}/!{mm}!{extension}", 800,
                            rf"^kms/rch-kms/\d{{2}}{SUFFIX}\.zst$",
                            EncryptionConfiguration={"EncryptionType": "KMS", "KeyId": "testkey-1"})
        s3 = self.rgw.s3()
        key = s3.list_objects_v2(Bucket=self.bucket_name, Prefix="kms/")["Contents"][0]["Key"]
        head = s3.head_object(Bucket=self.bucket_name, Key=key)
        self.assertEqual(head.get("ServerSideEncryption"), "aws:kms")
        self.assertIsNotNone(cid)

    def test_missing_bucket_fails_the_channel(self):
        k = self.server.client()
        k.create_stream(StreamName="r-missing")
        st, body = kinesis_call(self.server, "CreateChannel",
                                channel_request("rch-missing", "r-missing", bucket="no-such-bucket-here"))
        self.assertEqual(st, 200, body)
        d = wait_channel(self.server, body["ChannelDescription"]["ChannelARN"], status="FAILED", timeout=30)
        self.assertIn("no-such-bucket-here", d["ChannelStatusReason"])
        self.assertIn("grace period", d["ChannelStatusReason"])
        st, body = kinesis_call(self.server, "UpdateChannel", {"ChannelARN": d["ChannelARN"],
                                                               "S3DestinationConfiguration": {"DataFreshnessInSeconds": 10}})
        self.assertEqual(body["__type"], "ResourceInUseException")


if __name__ == "__main__":
    unittest.main(verbosity=2)

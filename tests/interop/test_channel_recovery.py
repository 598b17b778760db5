"""FAILED is for what cannot heal (issue 17), black-box against a real S3 server (radosgw),
with the fault proxy in front of it answering 404 NoSuchBucket for a bucket on demand (a
store coming up, a bucket created a moment later):

- a bucket that appears a moment after CreateChannel: the channel stays CREATING with the
  reason (it FAILED at once before), then becomes ACTIVE and delivers;
- a bucket that goes missing for less than the grace period while delivering: retried
  with LastError, then every record exactly once;
- a bucket missing past the grace period: FAILED with a reason that says so; records
  written while it is FAILED are kept; `icestream channels resume` brings it back and
  every record is delivered exactly once (nothing lost, nothing doubled);
- a table channel whose table bucket appears late: ACTIVE, rows in the table;
- ResumeChannel's errors: not FAILED (ResourceInUseException), unknown channel
  (ResourceNotFoundException); a channel that failed before it ever became active starts
  its activation over.
"""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import S3Bucket, produce, verify_exactly_once, wait_delivered  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from harness import BINARY, Rgw, Server, channel_request, kinesis_call, wait_channel  # noqa: E402
from table_check import register_schema, table_channel_request, wait_records  # noqa: E402

GRACE_MS = 8000


def describe(server, arn):
    st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arn})
    assert st == 200, body
    return body["ChannelDescription"]


def records(tag, n):
    return [(f"{tag}-{i}", f'{{"tag": "{tag}", "i": {i}}}'.encode()) for i in range(n)]


class ChannelRecovery(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rgw = Rgw().start()
        cls.s3 = cls.rgw.s3()
        cls.proxy = FaultProxy(cls.rgw.port, fault_rate=0.0).start()
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = cls.rgw.access_key, cls.rgw.secret_key
        try:
            cls.server = Server(extra_args=["--s3-endpoint", cls.proxy.endpoint],
                                config_text=f"[delivery]\ndestination_grace_ms = {GRACE_MS}\n",
                                log_level="info").start()  # the resume is said at info
        except Exception:
            cls.proxy.stop()
            cls.rgw.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()
        cls.proxy.stop()
        cls.rgw.stop()

    def setUp(self):
        self.proxy.hide([])

    def create(self, name, bucket, **kw):
        k = self.server.client()
        k.create_stream(StreamName=name)
        st, body = kinesis_call(self.server, "CreateChannel", channel_request(
            name, name, bucket=bucket, compression="NONE", freshness=1, template=f"{name}/!{{mm}}/o!{{extension}}",
            **kw))
        self.assertEqual(st, 200, body)
        return k, body["ChannelDescription"]["ChannelARN"]

    def test_bucket_created_after_the_channel(self):
        k, arn = self.create("late", "late-bucket")
        time.sleep(2.5)
        d = describe(self.server, arn)
        self.assertEqual(d["ChannelStatus"], "CREATING", d)
        self.assertIn("late-bucket", d["IcestreamStatus"].get("LastError", ""), d)
        self.assertGreaterEqual(d["IcestreamStatus"]["ActivationAttempts"], 1)
        self.s3.create_bucket(Bucket="late-bucket")
        wait_channel(self.server, arn, timeout=40)
        acked = produce(k, "late", records("late", 300))
        objs = wait_delivered(S3Bucket(self.s3, "late-bucket"), "late/", len(acked), "JSON", timeout=60)
        verify_exactly_once(self, objs, acked, "JSON")

    def test_bucket_missing_briefly_while_delivering(self):
        self.s3.create_bucket(Bucket="brief-bucket")
        k, arn = self.create("brief", "brief-bucket")
        wait_channel(self.server, arn, timeout=30)
        acked = produce(k, "brief", records("a", 200))
        wait_delivered(S3Bucket(self.s3, "brief-bucket"), "brief/", len(acked), "JSON", timeout=60)
        self.proxy.hide(["brief-bucket"])
        acked += produce(k, "brief", records("b", 200))
        deadline = time.time() + 20
        status = {}
        while time.time() < deadline:
            d = describe(self.server, arn)
            status = d.get("IcestreamStatus", {})
            if "NoSuchBucket" in status.get("LastError", ""):
                break
            time.sleep(0.2)
        self.assertIn("NoSuchBucket", status.get("LastError", ""), status)
        self.assertEqual(d["ChannelStatus"], "ACTIVE")
        time.sleep(2)
        self.proxy.hide([])
        acked += produce(k, "brief", records("c", 200))
        objs = wait_delivered(S3Bucket(self.s3, "brief-bucket"), "brief/", len(acked), "JSON", timeout=90)
        verify_exactly_once(self, objs, acked, "JSON")
        self.assertEqual(describe(self.server, arn)["ChannelStatus"], "ACTIVE")

    def test_grace_expires_then_resume_loses_nothing(self):
        self.s3.create_bucket(Bucket="gone-bucket")
        k, arn = self.create("gone", "gone-bucket")
        wait_channel(self.server, arn, timeout=30)
        acked = produce(k, "gone", records("a", 300))
        wait_delivered(S3Bucket(self.s3, "gone-bucket"), "gone/", len(acked), "JSON", timeout=60)
        self.proxy.hide(["gone-bucket"])
        started = time.time()
        acked += produce(k, "gone", records("b", 300))
        failed = wait_channel(self.server, arn, status="FAILED", timeout=GRACE_MS / 1000 + 60)
        self.assertGreaterEqual(time.time() - started, GRACE_MS / 1000 - 1, "FAILED before the grace period was over")
        self.assertIn("grace period", failed["ChannelStatusReason"])
        self.assertIn("NoSuchBucket", failed["ChannelStatusReason"])
        # Records written while it is FAILED are kept for a resume.
        acked += produce(k, "gone", records("c", 300))
        time.sleep(2)
        self.proxy.hide([])
        p = subprocess.run([BINARY, "channels", "resume", "--endpoint", self.server.endpoint, "--channel-arn", arn],
                           capture_output=True, text=True, timeout=60, env=self.server.cli_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"ChannelStatus": "ACTIVE"', p.stdout)
        self.assertNotIn("ChannelStatusReason", p.stdout)
        acked += produce(k, "gone", records("d", 300))
        objs = wait_delivered(S3Bucket(self.s3, "gone-bucket"), "gone/", len(acked), "JSON", timeout=90)
        verify_exactly_once(self, objs, acked, "JSON")
        d = describe(self.server, arn)
        self.assertEqual(d["ChannelStatus"], "ACTIVE")
        with open(self.server.log_path, errors="replace") as f:
            self.assertIn("channel gone (", f.read())

    def test_resume_rules(self):
        st, body = kinesis_call(self.server, "ResumeChannel", {
            "ChannelARN": "arn:aws:kinesis:us-east-1:000000000000:channel/no-such-channel"})
        self.assertEqual(body["__type"], "ResourceNotFoundException", body)
        st, body = kinesis_call(self.server, "ResumeChannel", {})
        self.assertEqual(body["__type"], "ValidationException", body)
        # Never active: FAILED at activation once the grace period is over, resumed into
        # CREATING, then ACTIVE once the bucket exists.
        k, arn = self.create("never", "never-bucket")
        failed = wait_channel(self.server, arn, status="FAILED", timeout=GRACE_MS / 1000 + 60)
        self.assertIn("never-bucket", failed["ChannelStatusReason"])
        st, body = kinesis_call(self.server, "ResumeChannel", {"ChannelARN": arn})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["ChannelDescription"]["ChannelStatus"], "CREATING")
        self.s3.create_bucket(Bucket="never-bucket")
        wait_channel(self.server, arn, timeout=40)
        st, body = kinesis_call(self.server, "ResumeChannel", {"ChannelARN": arn})
        self.assertEqual(body["__type"], "ResourceInUseException", body)
        self.assertIn("not FAILED", body["message"])
        acked = produce(k, "never", records("n", 100))
        objs = wait_delivered(S3Bucket(self.s3, "never-bucket"), "never/", len(acked), "JSON", timeout=60)
        verify_exactly_once(self, objs, acked, "JSON")

    def test_table_bucket_created_after_the_channel(self):
        k = self.server.client()
        k.create_stream(StreamName="late-table")
        self.s3.create_bucket(Bucket="late-dlq")
        schema = {"type": "object", "required": ["id", "ts"],
                  "properties": {"id": {"type": "integer"}, "ts": {"type": "string", "format": "date-time"}}}
        sarn, _ = register_schema(self.server.client("glue"), "reg-late", "late", schema)
        st, body = kinesis_call(self.server, "CreateChannel", table_channel_request(
            "late-table", "late-table", sarn, "late-tables", "ns", "t", "late-dlq", partition="ts"))
        self.assertEqual(st, 200, body)
        arn = body["ChannelDescription"]["ChannelARN"]
        time.sleep(2.5)
        d = describe(self.server, arn)
        self.assertEqual(d["ChannelStatus"], "CREATING", d)
        self.assertIn("late-tables", d["IcestreamStatus"].get("LastError", ""))
        self.s3.create_bucket(Bucket="late-tables")
        wait_channel(self.server, arn, timeout=40)
        produce(k, "late-table", [(f"p{i}", f'{{"id": {i}, "ts": "2026-01-01T00:00:00Z"}}'.encode())
                                  for i in range(50)])
        wait_records(self.server, "arn:aws:s3tables:us-east-1:000000000000:bucket/late-tables", "ns", "t", 50)


if __name__ == "__main__":
    unittest.main(verbosity=2)

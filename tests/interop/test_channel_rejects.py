"""Rejected records are visible (issue 17), black-box on the embedded server:

- a table channel whose every record is rejected: the table never appears, but
  DescribeChannel's IcestreamStatus has LastRejected (error code, message, shard,
  sequence number, times) and RejectedRecordCounts per error code; the server log has one
  info line per channel per interval such as "3 of 3 records to the DLQ
  (MISSING_REQUIRED_FIELD $.order_id ×3)"; /metrics has the same counts
  (icestream_channel_rejected_records_total{error_code=...});
- several codes at once, counted apart; the info line is rate-limited;
- an S3 channel's invalid JSON the same way (DESERIALIZATION_ERROR);
- delivery events at info in a compact form (one line per batch, no ranges), the detail
  at debug.
"""

import os
import re
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import produce  # noqa: E402
from harness import Server, channel_request, kinesis_call, wait_channel  # noqa: E402
from table_check import register_schema, table_channel_request  # noqa: E402

SCHEMA = {"type": "object", "required": ["order_id", "ts"],
          "properties": {"order_id": {"type": "integer"}, "ts": {"type": "string", "format": "date-time"},
                         "total": {"type": "number"}}}


def metrics(server):
    with urllib.request.urlopen(server.endpoint + "/metrics", timeout=5) as r:
        return r.read().decode()


def rejected_metric(text, channel):
    out = {}
    for m in re.finditer(r'^icestream_channel_rejected_records_total\{([^}]*)\} ([0-9.e+]+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if labels["channel_name"] == channel:
            out[labels["error_code"]] = float(m.group(2))
    return out


def status(server, arn):
    st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arn})
    assert st == 200, body
    return body["ChannelDescription"].get("IcestreamStatus", {})


def wait_status(server, arn, pred, timeout=30):
    deadline = time.time() + timeout
    s = {}
    while time.time() < deadline:
        s = status(server, arn)
        if pred(s):
            return s
        time.sleep(0.2)
    raise AssertionError(f"status never matched: {s}")


class ChannelRejects(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(log_level="info").start()
        os.makedirs(os.path.join(cls.server.data_dir, "buckets", "rej-dlq"), exist_ok=True)
        cls.schema_arn, _ = register_schema(cls.server.client("glue"), "reg-rej", "orders", SCHEMA)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    def log(self):
        with open(self.server.log_path, errors="replace") as f:
            return f.read()

    def table_channel(self, name):
        k = self.server.client()
        k.create_stream(StreamName=name)
        st, body = kinesis_call(self.server, "CreateChannel", table_channel_request(
            name, name, self.schema_arn, "rej-tables", "ns", name.replace("-", "_"), "rej-dlq", partition="ts"))
        self.assertEqual(st, 200, body)
        arn = body["ChannelDescription"]["ChannelARN"]
        wait_channel(self.server, arn, timeout=30)
        return k, arn

    def test_every_record_rejected_is_visible(self):
        k, arn = self.table_channel("rej-all")
        acked = produce(k, "rej-all", [(f"p{i}", f'{{"ts": "2026-01-01T00:00:0{i}Z", "total": 1}}'.encode())
                                       for i in range(3)])
        s = wait_status(self.server, arn, lambda s: s.get("RejectedRecordCounts", {}).get("MISSING_REQUIRED_FIELD") == 3)
        self.assertEqual(s["RejectedRecordCounts"], {"MISSING_REQUIRED_FIELD": 3})
        self.assertFalse(s["TableCreated"])
        last = s["LastRejected"]
        self.assertEqual(last["ErrorCode"], "MISSING_REQUIRED_FIELD")
        self.assertIn("order_id", last["ErrorMessage"])
        self.assertIn((last["ShardId"], last["SequenceNumber"]), {(sh, q) for _, sh, q in acked})
        self.assertGreater(last["Timestamp"], time.time() - 120)
        self.assertGreater(last["ApproximateArrivalTimestamp"], time.time() - 120)
        self.assertNotIn("LastError", s)
        # The same counts in /metrics.
        self.assertEqual(rejected_metric(metrics(self.server), "rej-all"), {"MISSING_REQUIRED_FIELD": 3.0})
        # One info line says what went where and why.
        deadline = time.time() + 10
        while time.time() < deadline and "channel rej-all: 3 of 3 records to the DLQ" not in self.log():
            time.sleep(0.2)
        self.assertRegex(self.log(), r" I \[\d+\] channel rej-all: 3 of 3 records to the DLQ "
                                     r"\(MISSING_REQUIRED_FIELD \$\.order_id ×3\)")

    def test_codes_counted_apart_and_the_line_is_rate_limited(self):
        k, arn = self.table_channel("rej-mix")
        # Several batches (freshness 1 s) within the 30 s interval of the info line.
        for round_ in range(4):
            produce(k, "rej-mix", [
                ("a", b'{"order_id": 1, "ts": "2026-01-01T00:00:00Z"}'),              # valid
                ("b", b'{"order_id": "x", "ts": "2026-01-01T00:00:00Z"}'),            # TYPE_MISMATCH
                ("c", b'{"ts": "2026-01-01T00:00:00Z"}'),                             # MISSING_REQUIRED_FIELD
                ("d", b'not json')])                                                  # DESERIALIZATION_ERROR
            time.sleep(1.5)
        s = wait_status(self.server, arn, lambda s: sum(s.get("RejectedRecordCounts", {}).values()) == 12)
        self.assertEqual(s["RejectedRecordCounts"],
                         {"TYPE_MISMATCH": 4, "MISSING_REQUIRED_FIELD": 4, "DESERIALIZATION_ERROR": 4})
        self.assertEqual(s["DeliveredRecordCount"], 4)
        self.assertEqual(rejected_metric(metrics(self.server), "rej-mix"),
                         {"TYPE_MISMATCH": 4.0, "MISSING_REQUIRED_FIELD": 4.0, "DESERIALIZATION_ERROR": 4.0})
        lines = re.findall(r"channel rej-mix: \d+ of \d+ records to the DLQ.*", self.log())
        self.assertEqual(len(lines), 1, lines)  # the first batch's; the rest wait for the interval
        self.assertRegex(lines[0], r"TYPE_MISMATCH \$\.order_id ×1")
        self.assertRegex(lines[0], r"DESERIALIZATION_ERROR ×1")

    def test_s3_channel_invalid_json(self):
        k = self.server.client()
        k.create_stream(StreamName="rej-s3")
        os.makedirs(os.path.join(self.server.data_dir, "buckets", "rej-bucket"), exist_ok=True)
        st, body = kinesis_call(self.server, "CreateChannel", channel_request("rej-s3", "rej-s3", bucket="rej-bucket",
                                                                              compression="NONE", freshness=1))
        self.assertEqual(st, 200, body)
        arn = body["ChannelDescription"]["ChannelARN"]
        wait_channel(self.server, arn, timeout=30)
        produce(k, "rej-s3", [("a", b'{"ok": 1}'), ("a", b'{broken'), ("a", b'{"ok": 2}')])
        s = wait_status(self.server, arn, lambda s: "LastRejected" in s)
        self.assertEqual(s["RejectedRecordCounts"], {"DESERIALIZATION_ERROR": 1})
        self.assertEqual(s["LastRejected"]["ErrorCode"], "DESERIALIZATION_ERROR")
        self.assertIn("not valid JSON", s["LastRejected"]["ErrorMessage"])
        deadline = time.time() + 10
        while time.time() < deadline and "channel rej-s3: 1 of 3 records to the DLQ" not in self.log():
            time.sleep(0.2)
        self.assertIn("channel rej-s3: 1 of 3 records to the DLQ (DESERIALIZATION_ERROR ×1)", self.log())
        # Delivery events at info, compact: one line per batch without the ranges' detail.
        batch = re.findall(r" I \[\d+\] channel rej-s3: delivered .*", self.log())
        self.assertTrue(batch, self.log()[-2000:])
        self.assertIn("1 to the DLQ", batch[0])
        self.assertNotIn("shardId-", batch[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)

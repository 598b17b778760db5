"""Exactly-once DLQ redrive (issue 17), black-box on the embedded server, read back with the
independent table reader (tests/lib/read_table.mjs):

- the worked example of docs/channels.md: records rejected for a schema bound, a compatible
  schema version registered, `icestream channels redrive` → every rejected record once in
  the table, every DLQ line marked done in the redrive's report, status and metrics; a
  second redrive finds nothing left to do;
- filters by error code and arrival time; a record that fails again gets a new DLQ line
  marked as a redrive attempt (redriveId, redriveOf), and a later redrive takes those new
  lines, never the old ones;
- an S3 channel: redrive lines that fail again, and DLQ lines of valid records delivered as
  objects; the payload mode (IncludeRecordData) puts the record into the DLQ line;
- the API's errors.
"""

import base64
import json
import os
import re
import subprocess
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import LocalBucket, produce  # noqa: E402
from harness import BINARY, Server, channel_request, kinesis_call, wait_channel  # noqa: E402
from table_check import (assert_rows, create_channel, dlq_lines, expected_row, npm_dir, read_table,  # noqa: E402
                         register_schema, table_bucket_arn, table_channel_request, wait_records)

WAREHOUSE, DLQ = "rd-tables", "rd-dlq"


def schema(maximum):
    return {"type": "object", "required": ["id", "ts", "n"],
            "properties": {"id": {"type": "string"}, "ts": {"type": "string", "format": "date-time"},
                           "n": {"type": "integer", "minimum": 0, "maximum": maximum},
                           "note": {"type": "string"}}}


def record(i, n, ts="2026-03-01T10:00:00Z"):
    return json.dumps({"id": f"r{i}", "ts": ts, "n": n, "note": "x" * (i % 7)}).encode()


def metrics(server):
    with urllib.request.urlopen(server.endpoint + "/metrics", timeout=5) as r:
        return r.read().decode()


class Redrive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        npm_dir()
        cls.server = Server(config_text="[delivery]\nredrive_batch_records = 7\n").start()
        for b in (DLQ, "rd-bucket"):
            os.makedirs(os.path.join(cls.server.data_dir, "buckets", b), exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    def bucket(self, name):
        return LocalBucket(os.path.join(self.server.data_dir, "buckets", name))

    def read(self, ns, table):
        return read_table(catalog=self.server.endpoint + "/iceberg", warehouse=table_bucket_arn(WAREHOUSE),
                          namespace=ns, table=table)

    def channel(self, tag, maximum=1000, **kw):
        k = self.server.client()
        k.create_stream(StreamName=f"s-{tag}")
        g = self.server.client("glue")
        arn, _ = register_schema(g, f"reg-{tag}", "events", schema(maximum))
        d = create_channel(self, self.server, table_channel_request(
            f"ch-{tag}", f"s-{tag}", arn, WAREHOUSE, f"ns_{tag}", "events", DLQ, partition="ts",
            dlq_prefix=f"errors/{tag}/", **kw))
        return k, g, arn, d

    def redrive(self, arn, *args):
        p = subprocess.run([BINARY, "channels", "redrive", "--endpoint", self.server.endpoint, "--channel-arn", arn,
                            *args], capture_output=True, text=True, timeout=60, env=self.server.cli_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)["Redrive"]

    def wait_redrive(self, arn, rid, status="COMPLETED", timeout=90):
        deadline = time.time() + timeout
        r = None
        while time.time() < deadline:
            st, body = kinesis_call(self.server, "DescribeChannelRedrive", {"ChannelARN": arn, "RedriveId": rid})
            self.assertEqual(st, 200, body)
            r = body["Redrive"]
            if r["Status"] == status:
                return r
            if r["Status"] == "FAILED":
                self.fail(f"redrive FAILED: {r}")
            time.sleep(0.3)
        self.fail(f"redrive did not reach {status}: {r}")

    def reports(self, tag, rid):
        return [e for _, e in dlq_lines(self.bucket(DLQ), f"errors/{tag}/redrive/{rid}/done-")]

    def dlq(self, tag):
        """The channel's DLQ lines (not the redrive's own files): [(key, line number, entry)]."""
        out = []
        for key, body in sorted(self.bucket(DLQ).objects(f"errors/{tag}/").items()):
            if "/redrive/" in key:
                continue
            for n, line in enumerate(body.decode().splitlines()):
                out.append((key, n, json.loads(line)))
        return out

    def test_worked_example_schema_fixed_then_redrive(self):
        k, g, sarn, d = self.channel("worked")
        good = [record(i, i) for i in range(150)]
        bad = [record(1000 + i, 5000 + i) for i in range(50)]   # over the maximum of 1000
        produce(k, "s-worked", [(f"p{i}", r) for i, r in enumerate(good + bad)])
        wait_records(self.server, table_bucket_arn(WAREHOUSE), "ns_worked", "events", len(good))
        deadline = time.time() + 30
        while len(self.dlq("worked")) < len(bad) and time.time() < deadline:
            time.sleep(0.3)
        lines = self.dlq("worked")
        self.assertEqual(len(lines), len(bad))
        self.assertEqual({e["errorCode"] for _, _, e in lines}, {"VALUE_OUT_OF_RANGE"})
        # The cause is fixed: a compatible version lifts the bound.
        g.register_schema_version(SchemaId={"SchemaArn": sarn}, SchemaDefinition=json.dumps(schema(100000)))
        r = self.redrive(d["ChannelARN"], "--error-code", "VALUE_OUT_OF_RANGE")
        self.assertIn(r["Status"], ("PREPARING", "IN_PROGRESS"))
        self.assertEqual(r["Filter"]["ErrorCodes"], ["VALUE_OUT_OF_RANGE"])
        done = self.wait_redrive(d["ChannelARN"], r["RedriveId"])
        self.assertEqual((done["LinesMatched"], done["LinesDone"], done["RecordsDelivered"],
                          done["RecordsFailedAgain"], done["RecordsExpired"], done["LinesSkipped"]),
                         (50, 50, 50, 0, 0, 0), done)
        wait_records(self.server, table_bucket_arn(WAREHOUSE), "ns_worked", "events", len(good) + len(bad))
        t = self.read("ns_worked", "events")
        assert_rows(self, t["rows"], [expected_row(x, t["schema"]) for x in good + bad], "id")
        # Every DLQ line marked done, once.
        rep = self.reports("worked", r["RedriveId"])
        self.assertEqual(sorted((e["object"], e["line"]) for e in rep), sorted((key, n) for key, n, _ in lines))
        self.assertEqual({e["outcome"] for e in rep}, {"DELIVERED"})
        self.assertTrue(done["ReportLocation"].endswith(f"errors/worked/redrive/{r['RedriveId']}/"))
        # Status and metrics.
        st, body = kinesis_call(self.server, "DescribeChannel", {"ChannelARN": d["ChannelARN"]})
        self.assertEqual(body["ChannelDescription"]["IcestreamStatus"]["Redrive"]["Status"], "COMPLETED")
        text = metrics(self.server)
        self.assertRegex(text, r'icestream_channel_redrive_records_total\{channel_name="ch-worked",[^}]*'
                               r'outcome="delivered"\} 50\b')
        self.assertRegex(text, r'icestream_channel_redrive_active\{channel_name="ch-worked",[^}]*\} 0\b')
        # A second redrive: nothing left to do.
        r2 = self.redrive(d["ChannelARN"])
        done2 = self.wait_redrive(d["ChannelARN"], r2["RedriveId"])
        self.assertEqual((done2["LinesMatched"], done2["LinesSkipped"]), (0, 50), done2)
        time.sleep(2)
        self.assertEqual(len(self.read("ns_worked", "events")["rows"]), len(good) + len(bad))

    def test_filters_and_failed_again(self):
        k, g, sarn, d = self.channel("again")
        arn = d["ChannelARN"]
        early = produce(k, "s-again", [(f"a{i}", json.dumps({"id": f"t{i}", "ts": "2026-03-01T10:00:00Z",
                                                             "n": "x"}).encode()) for i in range(10)])
        time.sleep(2.5)
        split = time.time()
        time.sleep(0.5)
        late_bad = produce(k, "s-again", [(f"b{i}", json.dumps({"id": f"u{i}", "ts": "2026-03-01T10:00:00Z",
                                                                "n": "y"}).encode()) for i in range(10)])
        oor = produce(k, "s-again", [(f"c{i}", record(2000 + i, 9000)) for i in range(5)])
        deadline = time.time() + 30
        while len(self.dlq("again")) < 25 and time.time() < deadline:
            time.sleep(0.3)
        self.assertEqual(len(self.dlq("again")), 25)
        # Only TYPE_MISMATCH, only those that arrived after `split`: the 10 late ones, which
        # fail again.
        r = self.redrive(arn, "--error-code", "TYPE_MISMATCH", "--start-time", f"{split:.3f}")
        done = self.wait_redrive(arn, r["RedriveId"])
        self.assertEqual((done["LinesMatched"], done["RecordsFailedAgain"], done["RecordsDelivered"]), (10, 10, 0), done)
        again = [e for _, _, e in self.dlq("again") if e.get("redriveId") == r["RedriveId"]]
        self.assertEqual(len(again), 10)
        self.assertEqual({(e["shardId"], e["sequenceNumber"]) for e in again}, {(s, q) for _, s, q in late_bad})
        originals = {(key, n) for key, n, e in self.dlq("again") if "redriveId" not in e}
        self.assertTrue(all((e["redriveOf"]["object"], e["redriveOf"]["line"]) in originals for e in again))
        self.assertEqual({e["outcome"] for e in self.reports("again", r["RedriveId"])}, {"FAILED_AGAIN"})
        # All TYPE_MISMATCH now: the 10 early originals and the 10 new attempt lines, not the
        # 10 late originals (redriven already).
        r2 = self.redrive(arn, "--error-code", "TYPE_MISMATCH")
        done2 = self.wait_redrive(arn, r2["RedriveId"])
        self.assertEqual((done2["LinesMatched"], done2["LinesSkipped"]), (20, 10), done2)
        got = {(e["shardId"], e["sequenceNumber"]) for e in self.reports("again", r2["RedriveId"])}
        self.assertEqual(got, {(s, q) for _, s, q in early + late_bad})
        # The VALUE_OUT_OF_RANGE ones were left alone; fixed, they are delivered once.
        g.register_schema_version(SchemaId={"SchemaArn": sarn}, SchemaDefinition=json.dumps(schema(100000)))
        r3 = self.redrive(arn, "--error-code", "VALUE_OUT_OF_RANGE", "--end-time", "2100-01-01T00:00:00Z")
        done3 = self.wait_redrive(arn, r3["RedriveId"])
        self.assertEqual((done3["LinesMatched"], done3["RecordsDelivered"]), (5, 5), done3)
        wait_records(self.server, table_bucket_arn(WAREHOUSE), "ns_again", "events", 5)
        self.assertEqual(sorted(x["id"] for x in self.read("ns_again", "events")["rows"]),
                         sorted(f"r{2000 + i}" for i in range(5)))

    def test_s3_channel_and_payload_mode(self):
        k = self.server.client()
        k.create_stream(StreamName="s-rd-s3")
        dlq = {"BucketARN": "arn:aws:s3:::rd-dlq", "ExpectedBucketOwner": "000000000000",
               "ErrorOutputPrefix": "errors/s3/", "IncludeRecordData": True}
        st, body = kinesis_call(self.server, "CreateChannel", channel_request(
            "ch-rd-s3", "s-rd-s3", bucket="rd-bucket", compression="NONE", freshness=1,
            template="o/!{mm}/x!{extension}", dlq=dlq))
        self.assertEqual(st, 200, body)
        arn = body["ChannelDescription"]["ChannelARN"]
        self.assertTrue(body["ChannelDescription"]["S3DestinationConfiguration"]
                        ["DeadLetterQueueS3Configuration"]["IncludeRecordData"])
        wait_channel(self.server, arn, timeout=30)
        good = produce(k, "s-rd-s3", [(f"g{i}", json.dumps({"i": i}).encode()) for i in range(20)])
        bad = produce(k, "s-rd-s3", [(f"b{i}", b"{not json %d" % i) for i in range(8)])
        deadline = time.time() + 30
        while len(self.dlq("s3")) < 8 and time.time() < deadline:
            time.sleep(0.3)
        lines = self.dlq("s3")
        self.assertEqual(len(lines), 8)
        # The payload mode: the record itself, base64, with its partition key.
        by_seq = {q: data for data, _, q in bad}
        for _, _, e in lines:
            self.assertEqual(base64.b64decode(e["data"]), by_seq[e["sequenceNumber"]])
            self.assertTrue(e["partitionKey"].startswith("b"))
        # Redrive: they are still not JSON, so they fail again, each once.
        r = self.redrive(arn)
        done = self.wait_redrive(arn, r["RedriveId"])
        self.assertEqual((done["LinesMatched"], done["RecordsFailedAgain"]), (8, 8), done)
        again = [e for _, _, e in self.dlq("s3") if e.get("redriveId") == r["RedriveId"]]
        self.assertEqual(sorted(e["sequenceNumber"] for e in again), sorted(q for _, _, q in bad))
        self.assertTrue(all("data" in e for e in again))
        # DLQ lines for valid records (written by hand) are delivered as objects once.
        extra = [json.dumps({"streamARN": "x", "shardId": s, "sequenceNumber": q,
                             "approximateArrivalTimestamp": "2026-03-01T10:00:00.000Z", "errorCode": "MANUAL",
                             "errorMessage": "test", "channelARN": arn}) for _, s, q in good[:5]]
        with open(os.path.join(self.server.data_dir, "buckets", DLQ, "errors", "s3", "manual.jsonl"), "w") as f:
            f.write("\n".join(extra) + "\n")
        before = self.bucket("rd-bucket").objects("o/")
        r2 = self.redrive(arn, "--error-code", "MANUAL")
        done2 = self.wait_redrive(arn, r2["RedriveId"])
        self.assertEqual((done2["LinesMatched"], done2["RecordsDelivered"]), (5, 5), done2)
        new = {key: body for key, body in self.bucket("rd-bucket").objects("o/").items() if key not in before}
        redelivered = [line for body in new.values() for line in body.decode().splitlines()]
        self.assertEqual(sorted(redelivered), sorted(data.decode() for data, _, _ in good[:5]))
        # ...in objects of their own: the stream's objects (whose first records they are)
        # are left as they were, not overwritten.
        after = self.bucket("rd-bucket").objects("o/")
        for key, body in before.items():
            self.assertEqual(after.get(key), body, key)

    def test_api_errors(self):
        k, g, sarn, d = self.channel("api")
        arn = d["ChannelARN"]
        st, body = kinesis_call(self.server, "DescribeChannelRedrive", {"ChannelARN": arn})
        self.assertEqual(body["__type"], "ResourceNotFoundException", body)
        st, body = kinesis_call(self.server, "StartChannelRedrive", {"ChannelARN": arn, "ErrorCodes": ["lower"]})
        self.assertEqual(body["__type"], "ValidationException", body)
        st, body = kinesis_call(self.server, "StartChannelRedrive", {"ChannelARN": arn, "StartTimestamp": 200,
                                                                     "EndTimestamp": 100})
        self.assertEqual(body["__type"], "InvalidArgumentException", body)
        st, body = kinesis_call(self.server, "StartChannelRedrive", {
            "ChannelARN": "arn:aws:kinesis:us-east-1:000000000000:channel/nope"})
        self.assertEqual(body["__type"], "ResourceNotFoundException", body)
        st, body = kinesis_call(self.server, "DescribeChannelRedrive", {"ChannelARN": arn, "RedriveId": "nope"})
        self.assertEqual(body["__type"], "ResourceNotFoundException", body)
        st, body = kinesis_call(self.server, "StartChannelRedrive", {"ChannelARN": arn})
        self.assertEqual(st, 200, body)
        rid = body["Redrive"]["RedriveId"]
        st, body = kinesis_call(self.server, "DescribeChannelRedrive", {"ChannelARN": arn})
        self.assertEqual(body["Redrive"]["RedriveId"], rid)
        self.assertEqual(body["RedriveIds"], [rid])
        self.wait_redrive(arn, rid)


if __name__ == "__main__":
    unittest.main(verbosity=2)

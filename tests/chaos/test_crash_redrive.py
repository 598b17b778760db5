"""Exactly-once DLQ redrive under kill -9 (issue 17), black-box, on the embedded warehouse
and on radosgw:

- a table channel rejects thousands of records (a schema bound); a compatible version of
  the schema is registered; a redrive starts, and the server is killed with SIGKILL at
  random moments during it (at least 10 times) while a producer keeps writing valid
  records, so kills land in the redrive's prepare step, in its batches (reading records
  back, writing files, the report, committing) and in the stream's own batches;
- afterwards every record of the stream — every rejected one among them — is a row of the
  table exactly once, read by the independent reader (icebird + DuckDB through the REST
  catalog); the redrive's reports name every DLQ line exactly once, all DELIVERED; no
  record failed again; the redrive's counts agree.
"""

import json
import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import LocalBucket, S3Bucket, produce  # noqa: E402
from harness import Rgw, Server, kinesis_call, read_stream, wait_channel  # noqa: E402
from table_check import (assert_rows, dlq_lines, expected_row, npm_dir, read_table, register_schema,  # noqa: E402
                         table_bucket_arn, table_channel_request, wait_records)

KILLS = int(os.environ.get("REDRIVE_KILLS", "10"))
BAD = int(os.environ.get("REDRIVE_BAD_RECORDS", "6000"))
STREAM, NS, TABLE = "rd-src", "chaos", "redrive"


def schema(maximum):
    return {"type": "object", "required": ["id", "ts", "n"],
            "properties": {"id": {"type": "string"}, "ts": {"type": "string", "format": "date-time"},
                           "n": {"type": "integer", "minimum": 0, "maximum": maximum},
                           "pad": {"type": "string"}}}


def rec(tag, i, n):
    return json.dumps({"id": f"{tag}-{i}", "ts": f"2026-03-01T{i % 3:02d}:00:00Z", "n": n,
                       "pad": "p" * (i % 40)}).encode()


class Producer(threading.Thread):
    """Valid records until the server goes away."""

    def __init__(self, server, tag):
        super().__init__(daemon=True)
        self.k = server.client(connect_timeout=2, read_timeout=10)
        self.tag = tag
        self.stop = threading.Event()

    def run(self):
        i = 0
        while not self.stop.is_set():
            try:
                self.k.put_records(StreamName=STREAM, Records=[
                    {"Data": rec(self.tag, i + j, (i + j) % 1000), "PartitionKey": f"k{i + j}"} for j in range(50)])
            except Exception:
                return
            i += 50
            time.sleep(0.05)


class RedriveChaos:
    CONFIG = "[delivery]\nredrive_batch_records = 150\n"

    def describe_redrive(self, server, arn, rid):
        st, body = kinesis_call(server, "DescribeChannelRedrive", {"ChannelARN": arn, "RedriveId": rid})
        self.assertEqual(st, 200, body)
        return body["Redrive"]

    def scenario(self, tag):
        server = self.make_server()
        try:
            k = server.client()
            k.create_stream(StreamName=STREAM)
            g = server.client("glue")
            sarn, _ = register_schema(g, f"reg-{tag}", "events", schema(1000))
            st, body = kinesis_call(server, "CreateChannel", table_channel_request(
                "rd-ch", STREAM, sarn, f"{tag}-tables", NS, TABLE, f"{tag}-dlq", partition="ts", freshness=1))
            self.assertEqual(st, 200, body)
            arn = body["ChannelDescription"]["ChannelARN"]
            wait_channel(server, arn, timeout=60)
            rng = random.Random(17)
            produce(k, STREAM, [(f"b{i}", rec("bad", i, 5000 + i)) for i in range(BAD)])
            produce(k, STREAM, [(f"g{i}", rec("good", i, i % 1000)) for i in range(500)])
            wait_records(server, table_bucket_arn(f"{tag}-tables"), NS, TABLE, 500, timeout=120)
            deadline = time.time() + 120
            lines = []
            while time.time() < deadline:
                lines = [(key, e) for key, e in dlq_lines(self.bucket(f"{tag}-dlq"), "kinesis-channel/errors/")
                         if "/redrive/" not in key]
                if len(lines) >= BAD:
                    break
                time.sleep(0.5)
            self.assertEqual(len(lines), BAD)
            g.register_schema_version(SchemaId={"SchemaArn": sarn}, SchemaDefinition=json.dumps(schema(10 ** 9)))
            st, body = kinesis_call(server, "StartChannelRedrive", {"ChannelARN": arn})
            self.assertEqual(st, 200, body)
            rid = body["Redrive"]["RedriveId"]
            kills = 0
            seen_progress = set()
            last_done, last_status = None, None
            while True:
                r = self.describe_redrive(server, arn, rid)
                seen_progress.add(r["LinesDone"])
                if r["Status"] == "COMPLETED" and kills >= KILLS:
                    break
                self.assertNotEqual(r["Status"], "FAILED", r)
                if r["Status"] == "COMPLETED":
                    self.fail(f"the redrive completed after only {kills} kills; raise REDRIVE_BAD_RECORDS")
                self.assertLess(kills, 200, f"the redrive made no headway: {r}")
                p = Producer(server, f"v{kills}")
                p.start()
                time.sleep(rng.uniform(0.2, 1.5))
                if r["LinesDone"] == last_done and r["Status"] == last_status:
                    # No headway since the last kill (a slower store: the restart and the
                    # batch in flight take longer than the pause): this time the kill waits
                    # for the next step, so that it lands later in the redrive.
                    wait_until = time.time() + 120
                    while time.time() < wait_until:
                        now = self.describe_redrive(server, arn, rid)
                        if now["LinesDone"] != r["LinesDone"] or now["Status"] != r["Status"]:
                            break
                        time.sleep(0.1)
                last_done, last_status = r["LinesDone"], r["Status"]
                server.kill()
                p.join(30)
                kills += 1
                server.start()
            # The stream's every record exactly once, the rejected ones through the redrive.
            everything = read_stream(k, STREAM)
            wh = table_bucket_arn(f"{tag}-tables")
            wait_records(server, wh, NS, TABLE, len(everything), timeout=240)
            t = read_table(catalog=server.endpoint + "/iceberg", warehouse=wh, namespace=NS, table=TABLE,
                           s3=self.s3())
            assert_rows(self, t["rows"], [expected_row(d, t["schema"]) for d, _, _ in everything], "id")
            # Every DLQ line in the reports once, DELIVERED; no record failed again.
            reports = [e for key, e in dlq_lines(self.bucket(f"{tag}-dlq"), "kinesis-channel/errors/")
                       if f"/redrive/{rid}/done-" in key]
            marks = [(e["object"], e["line"]) for e in reports]
            self.assertEqual(len(marks), len(set(marks)), "a DLQ line was redriven twice")
            by_key = {}
            for key, _ in lines:
                by_key[key] = by_key.get(key, 0) + 1
            want = {(key, n) for key, count in by_key.items() for n in range(count)}
            self.assertEqual(set(marks), want)
            self.assertEqual({e["outcome"] for e in reports}, {"DELIVERED"})
            again = [e for key, e in dlq_lines(self.bucket(f"{tag}-dlq"), "kinesis-channel/errors/")
                     if e.get("redriveId")]
            self.assertEqual(again, [])
            r = self.describe_redrive(server, arn, rid)
            self.assertEqual((r["LinesMatched"], r["LinesDone"], r["RecordsDelivered"], r["RecordsFailedAgain"],
                              r["RecordsExpired"]), (BAD, BAD, BAD, 0, 0), r)
            print(f"{kills} kills during the redrive ({len(seen_progress)} progress points seen); "
                  f"{len(everything)} records, {len(t['rows'])} rows exactly once, {BAD} redriven")
        finally:
            server.stop()
            server.cleanup()


class LocalRedriveChaos(unittest.TestCase, RedriveChaos):
    """The embedded warehouse (table buckets and DLQ bucket are folders)."""

    # Folders are fast: small redrive batches, so that the redrive outlasts 10 kills even on
    # a quiet machine (40-record batches finished after 4 kills there).
    CONFIG = "[delivery]\nredrive_batch_records = 10\n"

    def make_server(self):
        npm_dir()
        s = Server(config_text=self.CONFIG)
        self.server_dir = s.data_dir  # bucket() reads the DLQ folder
        os.makedirs(os.path.join(s.data_dir, "buckets", "local-dlq"), exist_ok=True)
        return s.start()

    def s3(self):
        return None

    def bucket(self, name):
        return LocalBucket(os.path.join(self.server_dir, "buckets", name))

    def test_kill9_during_redrive(self):
        self.scenario("local")


class RgwRedriveChaos(unittest.TestCase, RedriveChaos):
    @classmethod
    def setUpClass(cls):
        cls.rgw = Rgw().start()
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = Rgw.access_key, Rgw.secret_key

    @classmethod
    def tearDownClass(cls):
        cls.rgw.stop()

    def make_server(self):
        npm_dir()
        for b in ("rgw-tables", "rgw-dlq"):
            self.rgw.s3().create_bucket(Bucket=b)
        return Server(extra_args=["--s3-endpoint", self.rgw.endpoint], config_text=self.CONFIG).start()

    def s3(self):
        return (self.rgw.endpoint, Rgw.access_key, Rgw.secret_key)

    def bucket(self, name):
        return S3Bucket(self.rgw.s3(), name)

    def test_kill9_during_redrive(self):
        self.scenario("rgw")


if __name__ == "__main__":
    unittest.main(verbosity=2)

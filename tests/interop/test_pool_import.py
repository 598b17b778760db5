"""From one server to a pool, black-box: a single `icestream serve` (meta.db) delivers a
stream into an S3 bucket and a streaming table, and is killed with SIGKILL while records
are still undelivered. `icestream pool import` moves its channels (checkpoints, planned
batches) and Iceberg catalog into PostgreSQL; `serve --pg` on the same data directory and
an `icestream worker` then continue. Afterwards every record is in the bucket exactly
once and a row of the table exactly once (icebird + DuckDB through the REST catalog, which
now serves the PostgreSQL rows), and a server started on the directory without --pg no
longer has the channels (nothing can deliver them twice). Importing again is refused for
a channel whose name the pool holds with another document, and is a no-op otherwise."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import harness  # noqa: E402
from delivery_check import LocalBucket, decompress  # noqa: E402
from harness import Server, channel_request, kinesis_call, read_stream, wait_channel  # noqa: E402
from pg import PgCluster  # noqa: E402
from table_check import (assert_rows, expected_row, read_table, register_schema, table_bucket_arn,  # noqa: E402
                         table_channel_request, total_records, wait_records)

STREAM = "imp-src"
SCHEMA = {"type": "object", "required": ["id"],
          "properties": {"id": {"type": "string"}, "t": {"type": "string", "format": "date-time"}}}
CONFIG = "[scaleout]\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n"


def put(k, start, n):
    for i in range(start, start + n, 250):
        k.put_records(StreamName=STREAM, Records=[
            {"Data": json.dumps({"id": f"r{j}", "t": "2026-12-01T10:00:00Z"}).encode(), "PartitionKey": f"k{j}"}
            for j in range(i, min(start + n, i + 250))])


def bucket_ids(data_dir):
    b = LocalBucket(os.path.join(data_dir, "buckets", "out"))
    return [json.loads(line)["id"] for key, raw in b.objects("").items()
            for line in decompress(key, raw).splitlines() if line.strip()]


class PoolImport(unittest.TestCase):
    def test_a_single_servers_channels_continue_in_a_pool(self):
        with PgCluster() as pg:
            conninfo = pg.create_database("pool")
            data = tempfile.mkdtemp(prefix="icestream-import-")
            server = Server(data_dir=data, config_text=CONFIG).start()
            worker = None
            try:
                k = server.client()
                k.create_stream(StreamName=STREAM, StreamModeDetails={"StreamMode": "ON_DEMAND"})
                schema, _ = register_schema(server.client("glue"), "imp", "events", SCHEMA)
                st, body = kinesis_call(server, "CreateChannel",
                                        channel_request("imp-s3", STREAM, bucket="out", freshness=1))
                self.assertEqual(st, 200, body)
                s3_arn = body["ChannelDescription"]["ChannelARN"]
                st, body = kinesis_call(server, "CreateChannel", table_channel_request(
                    "imp-table", STREAM, schema, "tables", "ns", "t", "dlq", freshness=1, partition="t"))
                self.assertEqual(st, 200, body)
                wait_channel(server, s3_arn, timeout=60)
                wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)
                put(k, 0, 2000)
                wh = table_bucket_arn("tables")
                wait_records(server, wh, "ns", "t", 2000, timeout=60)
                put(k, 2000, 3000)
                server.kill()  # with records read, converted or planned but not all delivered
                self.assertLess(total_records_offline(data), 5000, "everything was delivered before the kill")

                p = subprocess.run([harness.BINARY, "pool", "import", "--data-dir", data, "--pg", conninfo],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("imported 2 channel(s)", p.stdout)
                self.assertIn("1 table(s)", p.stdout)
                again = subprocess.run([harness.BINARY, "pool", "import", "--data-dir", data, "--pg", conninfo],
                                       capture_output=True, text=True, timeout=60)
                self.assertEqual(again.returncode, 0, again.stderr)
                self.assertIn("imported 0 channel(s)", again.stdout)

                server = Server(data_dir=data, config_text=CONFIG, extra_args=["--pg", conninfo]).start()
                k = server.client()
                port = harness.free_port()
                wlog = open(data.rstrip("/") + "-worker.log", "ab")
                worker = subprocess.Popen([harness.BINARY, "worker", "--pg", conninfo, "--source", server.endpoint,
                                           "--data-dir", data, "--listen", f"127.0.0.1:{port}",
                                           "--config", server.config_path], stdout=wlog, stderr=subprocess.STDOUT)
                put(k, 5000, 1000)
                everything = read_stream(k, STREAM)
                self.assertEqual(len(everything), 6000)
                want = sorted(f"r{i}" for i in range(6000))
                deadline = time.time() + 90
                while True:
                    got = bucket_ids(data)
                    if len(got) >= 6000 or time.time() > deadline:
                        break
                    time.sleep(0.5)
                self.assertEqual(sorted(got), want, "the bucket does not hold every record exactly once")
                wait_records(server, wh, "ns", "t", 6000, timeout=90)
                t = read_table(catalog=server.endpoint + "/iceberg", warehouse=wh, namespace="ns", table="t")
                assert_rows(self, t["rows"], [expected_row(d, t["schema"]) for d, _, _ in everything], "id")
                worker.terminate()
                self.assertEqual(worker.wait(30), 0)
                worker = None
                wlog.close()
                server.stop()

                # Without --pg, the directory no longer has the channels.
                server = Server(data_dir=data).start()
                st, body = kinesis_call(server, "ListChannels", {})
                self.assertEqual(st, 200, body)
                self.assertEqual(body.get("Channels", []), [])
            finally:
                if worker and worker.poll() is None:
                    worker.kill()
                    worker.wait()
                server.stop()
                server.cleanup()
                # The servers of the data directory kept their configuration and log beside it.
                subprocess.run(["rm", "-rf", data, data.rstrip("/") + "-worker.log"] +
                               [data.rstrip("/") + ext for ext in (".toml", ".log")])


def total_records_offline(data_dir):
    """Rows the table's current metadata (in meta.db's catalog) claims, read from the file."""
    import sqlite3
    con = sqlite3.connect(os.path.join(data_dir, "meta.db"))
    try:
        row = con.execute("SELECT metadata_location FROM iceberg_tables").fetchone()
    finally:
        con.close()
    path = row[0].replace("file://", "", 1)
    with open(path) as f:
        md = json.load(f)
    cur = md.get("current-snapshot-id")
    for s in md.get("snapshots", []):
        if s["snapshot-id"] == cur:
            return int(s["summary"].get("total-records", 0))
    return 0


if __name__ == "__main__":
    unittest.main()

"""Quiet tables get their upkeep (issue 17), black-box in real time (no tmpfs, small
targets): a table channel commits every second for a while, then its stream goes quiet.
While nothing arrives the channel still

- merges the cold partition's small files (table_compaction_cold_after_ms),
- expires old snapshots (table_snapshot_max_age_ms), and
- removes the unreferenced files of failed attempts (table_orphan_age_ms; one is planted
  beside the table's data files, named as the channel names its files),

and the independent reader (icebird + DuckDB) still finds every record exactly once.
Before upkeep ran on its own schedule all three waited for the next record.
"""

import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import produce  # noqa: E402
from harness import Server, kinesis_call  # noqa: E402
from table_check import (assert_rows, create_channel, expected_row, npm_dir, read_table, register_schema,  # noqa: E402
                         table_bucket_arn, table_channel_request, wait_records)

CONFIG = """
[delivery]
table_target_file_bytes = 1048576
table_compaction_cold_after_ms = 20000  # longer than the busy table takes to read back
table_snapshot_max_age_ms = 8000
table_expire_interval_ms = 2000
table_orphan_age_ms = 5000
"""
SCHEMA = {"type": "object", "required": ["id", "ts"],
          "properties": {"id": {"type": "string"}, "ts": {"type": "string", "format": "date-time"},
                         "pad": {"type": "string"}}}
WAREHOUSE, DLQ = "quiet-tables", "quiet-dlq"


def status(server, arn):
    st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arn})
    assert st == 200, body
    return body["ChannelDescription"]["IcestreamStatus"]


class QuietTable(unittest.TestCase):
    def test_upkeep_runs_while_the_stream_is_quiet(self):
        npm_dir()
        server = Server(config_text=CONFIG).start()
        try:
            os.makedirs(os.path.join(server.data_dir, "buckets", DLQ), exist_ok=True)
            k = server.client()
            k.create_stream(StreamName="quiet")
            arn, _ = register_schema(server.client("glue"), "reg-quiet", "events", SCHEMA)
            d = create_channel(self, server, table_channel_request(
                "quiet-ch", "quiet", arn, WAREHOUSE, "ns", "events", DLQ, partition="ts", freshness=1))
            records = []
            stop = threading.Event()

            def write():
                i = 0
                while not stop.is_set():
                    batch = [json.dumps({"id": f"q{i + j}", "ts": "2026-04-01T08:15:00Z",
                                         "pad": "x" * 200}).encode() for j in range(40)]
                    produce(k, "quiet", [(f"p{i + j}", r) for j, r in enumerate(batch)])
                    records.extend(batch)
                    i += 40
                    time.sleep(0.3)

            t = threading.Thread(target=write, daemon=True)
            t.start()
            time.sleep(15)  # about 14 commits: more than the 10 snapshots expiry keeps
            stop.set()
            t.join(30)
            wh = table_bucket_arn(WAREHOUSE)
            wait_records(server, wh, "ns", "events", len(records), timeout=60)
            busy = read_table(catalog=server.endpoint + "/iceberg", warehouse=wh, namespace="ns", table="events")
            self.assertGreaterEqual(len(busy["files"]), 5, "the test needs small files to begin with")
            # A failed attempt's leftover beside the data files.
            data_dir = os.path.dirname(busy["files"][0]["file_path"].removeprefix("file://"))
            orphan = os.path.join(data_dir, f"{d['ChannelId']}-deadbeef-00000.parquet")
            with open(orphan, "wb") as f:
                f.write(b"PAR1 leftover of an attempt that never committed")
            os.utime(orphan, (time.time() - 3600, time.time() - 3600))
            snapshots_before = len(busy["snapshots"])
            # Quiet from now on: no record arrives.
            deadline = time.time() + 120
            s = {}
            while time.time() < deadline:
                s = status(server, d["ChannelARN"])
                if s.get("LiveDataFiles") == 1 and s.get("SnapshotsExpired", 0) > 0 and \
                        s.get("OrphanFilesRemoved", 0) > 0 and not os.path.exists(orphan):
                    break
                time.sleep(1)
            print(f"{len(records)} records in {len(busy['files'])} files and {snapshots_before} snapshots; "
                  f"quiet: {s.get('LiveDataFiles')} file(s), {s.get('SnapshotsExpired')} snapshots expired, "
                  f"{s.get('OrphanFilesRemoved')} orphan(s) removed, {s.get('UpkeepRuns')} upkeep runs")
            self.assertEqual(s.get("LiveDataFiles"), 1, s)
            self.assertGreater(s.get("SnapshotsExpired", 0), 0, s)
            self.assertFalse(os.path.exists(orphan), "the orphan file is still there")
            quiet = read_table(catalog=server.endpoint + "/iceberg", warehouse=wh, namespace="ns", table="events")
            self.assertEqual(len(quiet["files"]), 1)
            # Expiry keeps the newest history.expire.min-snapshots-to-keep (10): of the
            # channel's commits and the merge's, the older ones are gone.
            self.assertGreater(s["CommitCount"] + 1, 10, "the test needs more snapshots than are kept")
            self.assertLessEqual(len(quiet["snapshots"]), 10)
            assert_rows(self, quiet["rows"], [expected_row(r, quiet["schema"]) for r in records], "id")
        finally:
            server.stop()
            server.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""Chaos test of inline compaction and table upkeep (issue 10), black-box, against the
embedded warehouse: a tiny target file size (16 KiB), a short cold delay, snapshot
expiry every 0.5 s with a 5 s max age, orphan cleanup after 5 s, freshness 1 s — so
compaction, expiry and orphan cleanup run around every commit — while two producers
write steadily (event times near now, a share in the previous hour) and the server is
killed with SIGKILL at random moments at least 20 times (CRASH_ROUNDS, default 22).

- After every restart the table is readable by the independent reader (read_table.mjs:
  icebird and DuckDB agree, manifests consistent) and holds no row twice.
- At the end every valid record of the stream, every acknowledged one among them, is a
  row exactly once; the snapshot log is bounded; compaction ran (merged files live);
  files that attempts or merges cut short by a kill left behind are deleted by the
  orphan cleanup (OrphanFilesRemoved > 0, and no unreferenced data file or manifest list
  older than the orphan age plus one scan interval is left)."""

import json
import os
import random
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from compaction_check import COMPACTION_SCHEMA, SteadyProducer  # noqa: E402
from harness import Server, kinesis_call, read_stream, wait_channel  # noqa: E402
from table_check import (ReadError, assert_rows, describe, expected_row, npm_dir, read_table,  # noqa: E402
                         register_schema, table_bucket_arn, table_channel_request, wait_records)

ROUNDS = int(os.environ.get("CRASH_ROUNDS", "22"))
STREAM, WH, NS, TABLE, DLQ = "crash-compact", "crash-tables", "chaos", "compacted", "crash-dlq"
TARGET = 16 * 1024
ORPHAN_AGE_MS = 5000
ORPHAN_SCAN_MS = 10000  # the server scans at most every max(age / 4, 10 s)
CONFIG = f"""[delivery]
table_target_file_bytes = {TARGET}
table_compaction_cold_after_ms = 2000
table_expire_interval_ms = 500
table_snapshot_max_age_ms = 5000
table_orphan_age_ms = {ORPHAN_AGE_MS}
"""


class CrashCompaction(unittest.TestCase):
    def setUp(self):
        npm_dir()
        self.server = Server(config_text=CONFIG)
        self.addCleanup(self.server.cleanup)
        self.addCleanup(self.server.stop)
        self.server.start()
        os.makedirs(os.path.join(self.server.data_dir, "buckets", DLQ), exist_ok=True)

    def read(self, **kw):
        """read_table.mjs; one retry when the read fails, since a snapshot read while the
        channel runs may be expired (and its replaced files deleted) before the reader
        gets to them. A table that cannot be read twice in a row fails the test."""
        wh = table_bucket_arn(WH)
        try:
            return read_table(catalog=self.server.endpoint + "/iceberg", warehouse=wh, namespace=NS, table=TABLE, **kw)
        except ReadError as e:
            self.retried_reads.append(str(e)[-300:])
            return read_table(catalog=self.server.endpoint + "/iceberg", warehouse=wh, namespace=NS, table=TABLE, **kw)

    def test_kill9_during_compaction_and_expiry(self):
        server = self.server
        self.retried_reads = []
        k = server.client()
        k.create_stream(StreamName=STREAM)
        arn, _ = register_schema(server.client("glue"), "chaos", "events", COMPACTION_SCHEMA)
        st, body = kinesis_call(server, "CreateChannel", table_channel_request(
            "crash-compact-ch", STREAM, arn, WH, NS, TABLE, DLQ, compression="ZSTD", freshness=1,
            LoggingConfiguration={"CloudWatchLogs": {"Enabled": True}}))
        self.assertEqual(st, 200, body)
        chan = wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)
        rng = random.Random(10)
        acked = []
        merged_seen = 0
        for r in range(ROUNDS):
            producers = [SteadyProducer(server, STREAM, f"r{r}p{i}", per_put=rng.randint(20, 60), period=0.25,
                                        late_share=0.2, tolerate_errors=True, size=300) for i in range(2)]
            for p in producers:
                p.start()
            time.sleep(rng.uniform(0.5, 3.5))
            server.kill()
            for p in producers:
                p.stop.set()
                p.join(30)
                acked += p.acked
            server.start()
            # Readable right after the crash, both readers agreeing, no row twice.
            t = self.read()
            if t["exists"]:
                ids = [row["id"] for row in t["rows"]]
                self.assertEqual(len(ids), len(set(ids)), f"a row twice after crash {r}")
                merged_seen = max(merged_seen, sum(1 for f in t["files"] if "-m-" in f["file_path"]))
                print(f"crash {r + 1}: {len(ids)} rows in {len(t['files'])} files, {len(t['snapshots'])} snapshots",
                      flush=True)
        # Files a crash may or may not have left are planted too, so that the cleanup has
        # work for sure: an hour-old copy of a live data file under one of the channel's
        # own file names, an hour-old unreferenced manifest list (both must go), and an
        # hour-old data file of another writer (which must stay).
        # (The files of the snapshot read may have been compacted and expired since.)
        location = t["location"][len("file://"):]
        for f in t["files"] + [None]:
            self.assertIsNotNone(f, "no file of the table left to copy")
            try:
                with open(f["file_path"][len("file://"):], "rb") as fi:
                    content = fi.read()
                live = f["file_path"][len("file://"):]
                break
            except FileNotFoundError:
                continue
        planted = {"ours": os.path.join(os.path.dirname(live), f"{chan['ChannelId']}-planted-00000.parquet"),
                   "list": os.path.join(location, "metadata", "snap-1-1-planted.avro"),
                   "theirs": os.path.join(os.path.dirname(live), "another-engine-planted.parquet")}
        hour_ago = time.time() - 3600
        for dst in planted.values():
            with open(dst, "wb") as fo:
                fo.write(content)
            os.utime(dst, (hour_ago, hour_ago))
        # Last phase without kills: long enough for an orphan scan after the last crash's
        # leftovers are older than the orphan age.
        p = SteadyProducer(server, STREAM, "final", per_put=20, period=0.5, late_share=0.2, size=300)
        p.start()
        time.sleep((ORPHAN_AGE_MS + 2 * ORPHAN_SCAN_MS) / 1000 + 2)
        p.stop.set()
        p.join(30)
        self.assertIsNone(p.error)
        acked += p.acked
        everything = read_stream(k, STREAM)
        wait_records(server, table_bucket_arn(WH), NS, TABLE, len(everything), timeout=180)
        time.sleep(2)
        checked_at = time.time()
        t = self.read()
        assert_rows(self, t["rows"], [expected_row(d, t["schema"]) for d, _, _ in everything], "id")
        stream = {(s, q): d for d, s, q in everything}
        for d, s, q in acked:
            self.assertEqual(stream.get((s, q)), d, "an acknowledged record is not in the stream")
        self.assertGreater(len(acked), 3000)
        merged_seen = max(merged_seen, sum(1 for f in t["files"] if "-m-" in f["file_path"]))
        self.assertGreater(merged_seen, 0, "compaction never ran")
        self.assertLessEqual(len(t["snapshots"]), 40, "snapshot log not bounded")
        st = describe(server, chan["ChannelARN"])["IcestreamStatus"]
        # Orphans: what crashes left (attempts and merges never committed) is deleted. The
        # status counts since the last start; the delivery log keeps every lifetime's.
        log = os.path.join(server.data_dir, "delivery-logs", chan["ChannelId"], "DestinationDelivery.jsonl")
        with open(log) as f:
            events = [json.loads(line) for line in f if line.strip().startswith("{") and line.strip().endswith("}")]
        orphans_logged = sum(e.get("files", 0) for e in events if e.get("eventType") == "OrphansRemoved")
        self.assertFalse(os.path.exists(planted["ours"]), "an unreferenced data file of the channel was left")
        self.assertFalse(os.path.exists(planted["list"]), "an unreferenced manifest list was left")
        self.assertTrue(os.path.exists(planted["theirs"]), "another writer's file was deleted")
        self.assertGreaterEqual(orphans_logged, 2, "OrphansRemoved events do not count the removed files")
        self.assertGreaterEqual(st["OrphanFilesRemoved"], 2, st)
        referenced, lists = set(), set()
        for s in t["snapshots"]:
            lists.add(s["manifest_list"])
            rs = self.read(snapshot_id=s["snapshot_id"], skip_icebird=True)
            referenced |= {f["file_path"] for f in rs["files"]}
        too_old = checked_at - (ORPHAN_AGE_MS + ORPHAN_SCAN_MS) / 1000 - 5
        left = []
        for sub, keep in (("data", referenced), ("metadata", lists)):
            for dp, _, fs in os.walk(os.path.join(location, sub)):
                for f in fs:
                    path = os.path.join(dp, f)
                    url = "file://" + path
                    ours = f.startswith(chan["ChannelId"] + "-") if sub == "data" else f.startswith("snap-")
                    if ours and url not in keep and os.path.getmtime(path) < too_old:
                        left.append(url)
        self.assertEqual(left, [], "unreferenced files older than the orphan age were not removed")
        print(json.dumps({"crashes": ROUNDS, "records": len(everything), "acked": len(acked), "rows": len(t["rows"]),
                          "files": len(t["files"]), "snapshots": len(t["snapshots"]), "merged_files_seen": merged_seen,
                          "orphans_removed": orphans_logged, "snapshots_expired": st["SnapshotsExpired"],
                          "reads_retried": len(self.retried_reads)}))
        for e in self.retried_reads:
            print("retried read:", e)


if __name__ == "__main__":
    unittest.main(verbosity=2)

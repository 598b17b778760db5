"""Inline compaction and table upkeep of streaming-table channels (issue 10), black-box,
against the embedded warehouse:

- test_steady_one_second_freshness: freshness 1 s for COMPACTION_SECONDS (default 600)
  at a steady load with a small target file size (512 KiB), event times near "now" and,
  for the first minute, a share of late records in the previous hour. Sampled over time:
  in every partition the files below target/2 stay within the two-tier bound
  (~2 sqrt(T/s)), all live files within live bytes/(T/2) plus that, the previous hour is
  finished off once cold (at most one file below T/2), and the snapshot log stays within
  what expiry allows. At the end: write amplification <= 3 (the server's figure, and the
  same figure computed here from every snapshot summary seen), every row exactly once
  through both readers (icebird and DuckDB, read_table.mjs). The test mostly sleeps.
- test_expiry: a short max age and expiry interval keep the snapshot count within
  "younger than the max age or among the newest 10"; then with the table properties
  min-snapshots-to-keep = 1 and max-snapshot-age-ms = 1 set from outside, the newest
  snapshot with the channel's checkpoints is still always in the table; files only
  expired snapshots referenced are deleted; after kill -9 the channel resumes from the
  table with no row twice.
- test_compaction_survives_external_schema_neutral_commits: another engine commits
  snapshots that change nothing (tests/lib/external_writer.mjs) while the channel writes
  and compacts; the channel stays ACTIVE, compaction goes on after them (a replace
  snapshot on top of the external ones), every row exactly once."""

import json
import os
import re
import subprocess
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from compaction_check import (COMPACTION_SCHEMA, SnapshotTracker, SteadyProducer, partition_files,  # noqa: E402
                              small_file_bound, write_amplification)
from harness import Server, wait_channel  # noqa: E402
from table_check import (assert_rows, create_channel, describe, expected_row, metrics, npm_dir,  # noqa: E402
                         read_table, register_schema, rest_metadata, table_bucket_arn, table_channel_request,
                         wait_records)

HERE = os.path.dirname(os.path.abspath(__file__))
SECONDS = int(os.environ.get("COMPACTION_SECONDS", "600"))
WH = "compact-tables"
DLQ = "compact-dlq"
NS = "compact"


def metric_value(text, name, channel):
    for m in re.finditer(r'^icestream_table_' + name + r'\{([^}]*)\} ([0-9.eE+-]+)$', text, re.M):
        if f'channel_name="{channel}"' in m.group(1):
            return float(m.group(2))
    return None


class Compaction(unittest.TestCase):
    def start(self, config):
        server = Server(config_text=config).start()
        self.addCleanup(server.cleanup)
        self.addCleanup(server.stop)
        os.makedirs(os.path.join(server.data_dir, "buckets", DLQ), exist_ok=True)
        return server

    def channel(self, server, tag, freshness=1):
        k = server.client()
        k.create_stream(StreamName=f"s-{tag}")
        arn, _ = register_schema(server.client("glue"), f"reg-{tag}", "events", COMPACTION_SCHEMA)
        d = create_channel(self, server, table_channel_request(f"ch-{tag}", f"s-{tag}", arn, WH, NS, tag, DLQ,
                                                               freshness=freshness))
        return k, d

    def read(self, server, table, **kw):
        return read_table(catalog=server.endpoint + "/iceberg", warehouse=table_bucket_arn(WH), namespace=NS,
                          table=table, **kw)

    def rest_commit(self, server, table, requirements, updates):
        base = server.endpoint + "/iceberg"
        with urllib.request.urlopen(f"{base}/v1/config?warehouse={table_bucket_arn(WH)}") as r:
            prefix = json.loads(r.read())["overrides"]["prefix"]
        req = urllib.request.Request(f"{base}/v1/{prefix}/namespaces/{NS}/tables/{table}",
                                     data=json.dumps({"requirements": requirements, "updates": updates}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            self.assertEqual(r.status, 200)

    # ------------------------------------------------------------------ 10 minutes
    def test_steady_one_second_freshness(self):
        target = 512 * 1024
        cold_ms, max_age_ms, interval_ms = 60_000, 120_000, 30_000
        server = self.start(f"""[delivery]
table_target_file_bytes = {target}
table_compaction_cold_after_ms = {cold_ms}
table_snapshot_max_age_ms = {max_age_ms}
table_expire_interval_ms = {interval_ms}
""")
        tag = "steady"
        k, d = self.channel(server, tag)
        arn = d["ChannelARN"]
        wh = table_bucket_arn(WH)
        start = time.time()
        # ~80 records/s of ~400 bytes; for the first minute 15 % of them an hour late.
        p = SteadyProducer(server, f"s-{tag}", tag, per_put=40, period=0.5, late_share=0.15, late_until=start + 60)
        limits = []

        def snapshot_bound(md, tr):
            # Expiry keeps snapshots younger than the max age and the newest 10; it runs
            # at most every interval (after a commit), so allow one interval and a margin.
            now_ms = time.time() * 1000
            young = tr.committed_since(now_ms - max_age_ms - interval_ms - 5000)
            n = len(md.get("snapshots", []))
            limits.append((n, young))
            recent = tr.committed_since(now_ms - interval_ms - 5000)
            if time.time() - start > (max_age_ms + interval_ms) / 1000 + 20:
                assert n <= max(young, 10) + recent + 1, \
                    f"{n} snapshots in the table, {young} younger than max age + interval, {recent} within one interval"
        tracker = SnapshotTracker(server, wh, NS, tag, interval=2.0, check=snapshot_bound)
        p.start()
        tracker.start()
        samples = []
        try:
            next_full = start + 60
            last_fresh = target  # the fresh files' median size, from the last sample that had some
            while time.time() - start < SECONDS:
                time.sleep(15)
                st = describe(server, arn)["IcestreamStatus"]
                row = {"t": round(time.time() - start), "live": st.get("LiveDataFiles"),
                       "mean": st.get("MeanDataFileBytes"), "wa": st.get("Compaction", {}).get("WriteAmplification")}
                if time.time() >= next_full:
                    next_full += 60
                    t = self.read(server, tag, skip_icebird=True)
                    parts = partition_files(t)

                    def median(xs):
                        xs = sorted(xs)
                        return xs[len(xs) // 2] if xs else None
                    # s of the bound: the fresh files' median, of all and of the partition
                    # (whichever allows more files). A sample without fresh files (all just
                    # merged) keeps the size seen last: the merged files below T/2 it still
                    # holds were made from fresh files of that size.
                    fresh_all = median(s for files in parts.values() for s, merged in files if not merged)
                    if fresh_all is None:
                        fresh_all = last_fresh
                    last_fresh = fresh_all
                    bounds = {key: small_file_bound(min(fresh_all, median(s for s, m in files if not m) or target),
                                                    target)
                              for key, files in parts.items()}
                    live_bytes = sum(f["file_size_in_bytes"] for f in t["files"])
                    small = {key: sum(1 for s, _ in files if s < target // 2) for key, files in parts.items()}
                    row.update(files=len(t["files"]), partitions=len(parts), small=small, bounds=bounds,
                               fresh_median=fresh_all)
                    if row["t"] >= 90:
                        for key, n in small.items():
                            self.assertLessEqual(n, bounds[key], f"t={row['t']} s: partition {key} holds {n} files "
                                                 f"below T/2 (fresh median {fresh_all} B): {sorted(parts[key])}")
                        self.assertLessEqual(len(t["files"]), live_bytes // (target // 2) + sum(bounds.values()))
                samples.append(row)
                print(row, flush=True)
                self.assertIsNone(p.error)
        finally:
            p.stop.set()
            p.join(30)
        self.assertIsNone(p.error)
        total = len(p.acked)
        wait_records(server, wh, NS, tag, total, timeout=120)
        time.sleep(3)
        tracker.finish()
        self.assertEqual(tracker.failures, [], "snapshot log not bounded by expiry")
        self.assertEqual(tracker.gaps, [], "the tracker missed snapshots: its figures would be wrong")
        t = self.read(server, tag)
        assert_rows(self, t["rows"], [expected_row(data, t["schema"]) for data, _, _ in p.acked], "id")
        self.assertEqual(t["icebird_rows"], total)
        st = describe(server, arn)["IcestreamStatus"]
        wa, appended, rewritten, appends, replaces = write_amplification(tracker, arn)
        comp = st["Compaction"]
        print(f"{SECONDS} s at 1 s freshness: {total} records, {len(appends)} appends, {len(replaces)} compaction "
              f"commits, {len(t['files'])} live files, mean {st['MeanDataFileBytes']} B (target {target}), "
              f"write amplification {comp['WriteAmplification']:.3f} (from summaries {wa:.3f}), "
              f"{st['SnapshotsExpired']} snapshots expired, at most {max(n for n, _ in limits)} in the table")
        self.assertLessEqual(comp["WriteAmplification"], 3.0)
        self.assertLessEqual(wa, 3.0)
        self.assertAlmostEqual(comp["WriteAmplification"], wa, places=6)
        self.assertEqual(comp["BytesRewritten"], rewritten)
        self.assertEqual(comp["Commits"], len(replaces))
        # The first merges placed the fresh files' row groups as they are (not decoded):
        # the rows icebird and DuckDB read above went through such files.
        self.assertGreater(comp["FilesCopiedAsIs"], 0, comp)
        self.assertLessEqual(comp["FilesCopiedAsIs"], comp["FilesMerged"])
        text = metrics(server)
        self.assertGreaterEqual(metric_value(text, "compaction_files_copied_as_is_total", f"ch-{tag}") or 0,
                                comp["FilesCopiedAsIs"])
        self.assertEqual(st["CommitCount"], len(appends))
        self.assertGreater(len(appends), SECONDS * 0.8, "fewer commits than 1 s freshness makes")
        # Without compaction there would be a file per commit.
        self.assertLess(len(t["files"]), len(appends) / 5)
        self.assertGreater(st["SnapshotsExpired"], 0)
        self.assertEqual(metric_value(text, "live_data_files", f"ch-{tag}"), len(t["files"]))
        self.assertAlmostEqual(metric_value(text, "write_amplification", f"ch-{tag}"), wa, places=4)
        # The previous hour (late records of the first minute) went cold and was finished
        # off: at most one file below T/2 is left in it.
        late_hour = int(p.late_hour // 3600) - 1
        parts = partition_files(t)
        old = {key: files for key, files in parts.items() if list(json.loads(key).values()) == [late_hour]}
        self.assertTrue(old, f"no partition {late_hour}: {list(parts)}")
        for key, files in old.items():
            self.assertLessEqual(sum(1 for s, _ in files if s < target // 2), 1, f"cold partition {key}: {files}")

    # ------------------------------------------------------------------ expiry
    def test_expiry(self):
        max_age_ms, interval_ms = 4000, 1000
        server = self.start(f"""[delivery]
table_target_file_bytes = 65536
table_snapshot_max_age_ms = {max_age_ms}
table_expire_interval_ms = {interval_ms}
""")
        tag = "expiry"
        k, d = self.channel(server, tag)
        arn = d["ChannelARN"]
        wh = table_bucket_arn(WH)
        phase = {"name": "default", "since": time.time()}
        worst = {}

        def check(md, tr):
            snaps = md.get("snapshots", [])
            n = len(snaps)
            ours = [s for s in snaps if s["summary"].get("icestream.channel-arn") == arn]
            if tr.seen:
                assert ours, "no snapshot with the channel's checkpoints left in the table"
            settled = time.time() - phase["since"] > (max_age_ms + interval_ms) / 1000 + 3
            if phase["name"] == "default" and settled:
                # Kept at the last expiry run: the newest 10 and those younger than the max
                # age (and the checkpoint one among them); since then: at most what was
                # committed within one interval (expiry runs after the channel's commits).
                young = tr.committed_since(time.time() * 1000 - max_age_ms - interval_ms - 2000)
                recent = tr.committed_since(time.time() * 1000 - interval_ms - 2000)
                assert n <= max(young, 10) + recent + 1, \
                    f"{n} snapshots, {young} younger than max age + interval, {recent} within the interval"
            if phase["name"] == "keep1" and time.time() - phase["since"] > 3:
                # Only the current snapshot, the newest with checkpoints, and what was
                # committed since the last expiry run.
                recent = tr.committed_since(time.time() * 1000 - interval_ms - 1500)
                assert n <= 2 + recent, f"{n} snapshots with min-snapshots-to-keep 1, {recent} recent"
                # The newest append seen so far (this poll's included) is still there.
                newest_ours = tr.snapshots("icestream.channel-arn", arn)[-1]
                assert str(newest_ours["snapshot-id"]) in {str(s["snapshot-id"]) for s in ours}, \
                    "the newest snapshot with the channel's checkpoints was expired"
            if time.time() - phase["since"] > 3:
                worst[phase["name"]] = max(worst.get(phase["name"], 0), n)
        tracker = SnapshotTracker(server, wh, NS, tag, interval=0.3, check=check)
        p = SteadyProducer(server, f"s-{tag}", tag, per_put=30, period=0.5)
        p.start()
        tracker.start()
        try:
            time.sleep(25)
            # Another engine sets the expiry properties of the table (no schema change).
            md = rest_metadata(server, wh, NS, tag)["metadata"]
            self.rest_commit(server, tag, [{"type": "assert-table-uuid", "uuid": md["table-uuid"]}],
                             [{"action": "set-properties", "updates": {"history.expire.min-snapshots-to-keep": "1",
                                                                       "history.expire.max-snapshot-age-ms": "1"}}])
            phase.update(name="keep1", since=time.time())
            time.sleep(12)
        finally:
            p.stop.set()
            p.join(30)
        self.assertIsNone(p.error)
        wait_records(server, wh, NS, tag, len(p.acked))
        time.sleep(2)
        tracker.finish()
        self.assertEqual(tracker.failures, [])
        self.assertEqual(wait_channel(server, arn)["ChannelStatus"], "ACTIVE")
        st = describe(server, arn)["IcestreamStatus"]
        print(f"snapshots seen {len(tracker.seen)}, expired {st['SnapshotsExpired']}, most in the table: {worst}")
        self.assertLessEqual(worst["keep1"], 6)
        self.assertGreaterEqual(st["SnapshotsExpired"], len(tracker.seen) - len(tracker.last["snapshots"]))
        self.assertEqual(metric_value(metrics(server), "snapshots_expired_total", f"ch-{tag}"), st["SnapshotsExpired"])
        # Files: only what the retained snapshots reference is left under data/ and their
        # manifest lists under metadata/ (no failed attempts in this run: no orphans).
        t = self.read(server, tag)
        assert_rows(self, t["rows"], [expected_row(x, t["schema"]) for x, _, _ in p.acked], "id")
        referenced = set()
        for s in t["snapshots"]:
            rs = self.read(server, tag, snapshot_id=s["snapshot_id"], skip_icebird=True)
            referenced |= {f["file_path"] for f in rs["files"]}
        location = t["location"][len("file://"):]
        on_disk = {"file://" + os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(location, "data"))
                   for f in fs if f.endswith(".parquet")}
        self.assertEqual(on_disk - referenced, set(), "data files of expired snapshots were left")
        lists = {os.path.basename(s["manifest_list"]) for s in t["snapshots"]}
        snap_files = {f for f in os.listdir(os.path.join(location, "metadata")) if f.startswith("snap-")}
        self.assertEqual(snap_files - lists, set(), "manifest lists of expired snapshots were left")
        # A crash now: the channel resumes from the checkpoint snapshot that expiry kept.
        server.kill()
        server.start()
        p2 = SteadyProducer(server, f"s-{tag}", tag + "-after", per_put=30, period=0.5)
        p2.start()
        time.sleep(4)
        p2.stop.set()
        p2.join(30)
        acked = p.acked + p2.acked
        wait_records(server, wh, NS, tag, len(acked))
        time.sleep(2)
        t = self.read(server, tag)
        assert_rows(self, t["rows"], [expected_row(x, t["schema"]) for x, _, _ in acked], "id")

    # ------------------------------------------------------------------ external commits
    def test_compaction_survives_external_schema_neutral_commits(self):
        server = self.start("[delivery]\ntable_target_file_bytes = 32768\n")
        tag = "external"
        k, d = self.channel(server, tag)
        arn = d["ChannelARN"]
        wh = table_bucket_arn(WH)
        p = SteadyProducer(server, f"s-{tag}", tag, per_put=20, period=0.5)
        tracker = SnapshotTracker(server, wh, NS, tag, interval=0.5)
        p.start()
        tracker.start()
        try:
            time.sleep(6)
            w = subprocess.run(["node", os.path.join(HERE, "..", "lib", "external_writer.mjs"), npm_dir(),
                                "--catalog", server.endpoint + "/iceberg", "--warehouse", wh, "--namespace", NS,
                                "--table", tag, "--seconds", "10", "--append-every", "0", "--pause-ms", "150"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(w.returncode, 0, w.stderr)
            ext = json.loads(w.stdout)
            self.assertEqual(ext["other_errors"], 0, w.stderr)
            self.assertGreater(ext["rewrites"], 10, ext)
            c1 = describe(server, arn)["IcestreamStatus"]["Compaction"]["Commits"]
            time.sleep(15)
        finally:
            p.stop.set()
            p.join(30)
        self.assertIsNone(p.error)
        wait_records(server, wh, NS, tag, len(p.acked))
        time.sleep(2)
        tracker.finish()
        self.assertEqual(wait_channel(server, arn)["ChannelStatus"], "ACTIVE")
        st = describe(server, arn)["IcestreamStatus"]
        self.assertGreater(st["Compaction"]["Commits"], c1, "compaction stopped after the external commits")
        external = tracker.snapshots("external.writer", "rewrite")
        self.assertGreater(len(external), 10)
        last_external = max(int(s["sequence-number"]) for s in external)
        replaces = tracker.snapshots("icestream.compacted-by", arn)
        after = [s for s in replaces if int(s["sequence-number"]) > last_external]
        self.assertTrue(after, "no compaction commit after the external ones")
        t = self.read(server, tag)
        assert_rows(self, t["rows"], [expected_row(x, t["schema"]) for x, _, _ in p.acked], "id")
        appends = tracker.snapshots("icestream.channel-arn", arn)
        self.assertLess(len(t["files"]), len(appends) / 3, "compaction did not keep up")
        print(f"external writer: {ext}; channel {len(appends)} appends, {len(replaces)} compaction commits "
              f"({len(after)} after the last external one); {len(t['files'])} live files")


if __name__ == "__main__":
    npm_dir()
    unittest.main(verbosity=2)

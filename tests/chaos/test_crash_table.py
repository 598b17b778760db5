"""Chaos tests for streaming-table channels (stream -> Iceberg table), black-box:

- kill -9: producers write steadily while the server is killed with SIGKILL at random
  moments (freshness 1 s, so kills land while batches are read, files written, and
  commits made) at least 20 times, on the embedded warehouse and on radosgw. At the end
  every valid record in the stream - every acknowledged one among them - is a row of
  the table exactly once (independent reader: icebird + DuckDB), and every invalid one
  is in the DLQ;
- a fault-injecting proxy in front of radosgw (500, 503 SlowDown, resets before and
  after the upstream write, stalls): still exactly once, and DataFreshness shows it;
- commit conflicts: an external writer commits to the same table through the REST
  catalog as fast as it can (new snapshots that only re-point the manifest list or add a
  copied data file, plus a property), so the channel's commits meet real conflicts;
  the channel stays ACTIVE and every record is still there exactly once (the external
  files' rows aside)."""

import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import LocalBucket, S3Bucket  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from harness import Rgw, Server, kinesis_call, read_stream, wait_channel  # noqa: E402
from table_check import (assert_rows, dlq_lines, expected_row, metric, metrics, npm_dir, read_table,  # noqa: E402
                         register_schema, rows_by_file, table_bucket_arn, table_channel_request, ts_micros,
                         wait_records)

ROUNDS = int(os.environ.get("CRASH_ROUNDS", "22"))
STREAM = "crash-src"
NS, TABLE = "chaos", "events"
HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["id", "n"],
    "properties": {
        "id": {"type": "string"},
        "event_time": {"type": "string", "format": "date-time"},
        "n": {"type": "integer"},
        "amount": {"type": "number", "multipleOf": 0.01},
        "p": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
BASE = ts_micros("2025-03-01T10:00:00Z")


def record(tag, n, rng):
    micros = BASE + rng.randrange(3 * 3600 * 10**6)
    secs, us = divmod(micros, 10**6)
    r = {"id": f"{tag}-{n}", "event_time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{us:06d}Z",
         "n": n, "amount": f"{rng.randint(-10**6, 10**6) / 100:.2f}", "p": "x" * rng.randint(0, 600),
         "tags": ["t"] * rng.randint(0, 3)}
    text = json.dumps(r).replace(f'"amount": "{r["amount"]}"', f'"amount": {r["amount"]}')
    return text.encode()


class Producer(threading.Thread):
    """Puts batches until the server goes away; keeps what was acknowledged."""

    def __init__(self, server, tag, invalid_every=0, pause=0.0):
        super().__init__(daemon=True)
        self.k = server.client(connect_timeout=2, read_timeout=10)
        self.tag, self.invalid_every, self.pause = tag, invalid_every, pause
        self.acked = []
        self.stop = threading.Event()

    def run(self):
        n = 0
        rng = random.Random(self.tag)
        while not self.stop.is_set():
            recs = []
            for _ in range(rng.randint(20, 300)):
                if self.invalid_every and n % self.invalid_every == 3:
                    data = f'{{"id": "{self.tag}-{n}", "n": "not a number"}}'.encode()  # TYPE_MISMATCH
                else:
                    data = record(self.tag, n, rng)
                recs.append({"Data": data, "PartitionKey": f"k{rng.randint(0, 500)}"})
                n += 1
            try:
                r = self.k.put_records(StreamName=STREAM, Records=recs)
            except Exception:
                return
            for rec, res in zip(recs, r["Records"]):
                if "SequenceNumber" in res:
                    self.acked.append((rec["Data"], res["ShardId"], res["SequenceNumber"]))
            if self.pause:
                time.sleep(self.pause)


def is_valid(data):
    return b'"not a number"' not in data


class Chaos:
    """Mixin: scenarios against a server built by self.make_server(); bucket names come
    from the test's tag so that tests can share one radosgw."""

    def setup_channel(self, server, tag, freshness=1):
        k = server.client()
        k.create_stream(StreamName=STREAM)
        arn, _ = register_schema(server.client("glue"), "chaos", "events", SCHEMA)
        st, body = kinesis_call(server, "CreateChannel", table_channel_request(
            "crash-ch", STREAM, arn, f"{tag}-tables", NS, TABLE, f"{tag}-dlq", compression="ZSTD",
            freshness=freshness))
        self.assertEqual(st, 200, body)
        return wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)

    def verify(self, server, tag, external=None, timeout=240):
        """Every valid record of the stream exactly once; every invalid one in the DLQ."""
        k = server.client()
        everything = read_stream(k, STREAM)
        valid = [d for d, _, _ in everything if is_valid(d)]
        invalid = {(s, q) for d, s, q in everything if not is_valid(d)}
        ext_rows = sum(a["record_count"] for a in (external or {}).get("appends", []))
        wh = table_bucket_arn(f"{tag}-tables")
        wait_records(server, wh, NS, TABLE, len(valid) + ext_rows, timeout=timeout)
        t = read_table(catalog=server.endpoint + "/iceberg", warehouse=wh, namespace=NS, table=TABLE, s3=self.s3())
        rows = t["rows"]
        if external:
            ext = {a["file_path"] for a in external["appends"]}
            per_file = rows_by_file(t)
            self.assertEqual(ext & set(per_file), ext, "an externally added file is no longer live")
            rows = [r for path, rs in per_file.items() if path not in ext for r in rs]
        assert_rows(self, rows, [expected_row(d, t["schema"]) for d in valid], "id")
        self.dlq_repeats = 0
        if invalid:
            deadline = time.time() + 60
            while True:
                lines = [e for _, e in dlq_lines(self.bucket(server, f"{tag}-dlq"))]
                got = {(e["shardId"], e["sequenceNumber"]) for e in lines}
                if invalid <= got or time.time() > deadline:
                    break
                time.sleep(0.5)
            self.assertEqual(invalid - got, set(), "invalid records missing from the DLQ")
            self.assertEqual(got - invalid, set(), "DLQ lines for records that are not invalid")
            self.assertEqual({e["errorCode"] for e in lines}, {"TYPE_MISMATCH"})
            # A replayed range may write its DLQ object again; the spec asks no more than
            # "in the DLQ", so repeats are reported, not failed.
            self.dlq_repeats = len(lines) - len(got)
        return everything, t

    def check_acked(self, acked, everything):
        stream = {(s, q): d for d, s, q in everything}
        for d, s, q in acked:
            self.assertEqual(stream.get((s, q)), d, "an acknowledged record is not in the stream")

    def run_server(self, fn, **kw):
        server = self.make_server(**kw)
        try:
            return fn(server)
        finally:
            server.stop()
            server.cleanup()

    def kill9(self, server, tag):
        """>= 20 kill -9 rounds while two producers write; then exactly once."""
        self.setup_channel(server, tag)
        acked = []
        rng = random.Random(7)
        for r in range(ROUNDS):
            producers = [Producer(server, f"r{r}p{i}", invalid_every=97, pause=0.05) for i in range(2)]
            for p in producers:
                p.start()
            time.sleep(rng.uniform(0.3, 2.5))
            server.kill()
            for p in producers:
                p.join(30)
                acked += p.acked
            server.start()
            if r in (7, 14):
                # Readable at every moment: right after a crash the table is consistent
                # (both readers agree) and holds no row twice.
                mid = read_table(catalog=server.endpoint + "/iceberg", warehouse=table_bucket_arn(f"{tag}-tables"),
                                 namespace=NS, table=TABLE, s3=self.s3())
                ids = [row["id"] for row in mid["rows"]]
                self.assertEqual(len(ids), len(set(ids)), f"duplicate rows after crash {r}")
        everything, t = self.verify(server, tag)
        self.check_acked(acked, everything)
        self.assertGreater(len(acked), 3000)
        print(f"{ROUNDS} crashes: {len(everything)} records, {len(t['rows'])} rows exactly once in "
              f"{len(t['files'])} files, {len(t['snapshots'])} snapshots; DLQ lines repeated: {self.dlq_repeats}")

    def conflicts(self, server, tag):
        """An external writer commits through the REST catalog as fast as it can."""
        d = self.setup_channel(server, tag)
        p = Producer(server, "conflict", pause=0.05)
        p.start()
        wh = table_bucket_arn(f"{tag}-tables")
        wait_records(server, wh, NS, TABLE, 1, timeout=60)
        cmd = ["node", os.path.join(HERE, "..", "lib", "external_writer.mjs"), npm_dir(),
               "--catalog", server.endpoint + "/iceberg", "--warehouse", wh, "--namespace", NS, "--table", TABLE,
               "--seconds", "20", "--append-every", "15", "--max-appends", "6", "--pause-ms", "5"]
        if self.s3():
            cmd += ["--s3-endpoint", self.s3()[0], "--access-key", self.s3()[1], "--secret-key", self.s3()[2]]
        w = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        p.stop.set()
        p.join(30)
        self.assertEqual(w.returncode, 0, w.stderr)
        ext = json.loads(w.stdout)
        self.assertEqual(ext["other_errors"], 0, w.stderr)
        self.assertGreater(ext["commits"], 20, ext)
        self.assertGreater(len(ext["appends"]), 0, ext)
        # The external writer lost races to the channel, so the two really overlapped.
        self.assertGreater(ext["conflicts"], 0, ext)
        self.assertEqual(wait_channel(server, d["ChannelARN"])["ChannelStatus"], "ACTIVE")
        everything, t = self.verify(server, tag, external=ext)
        self.check_acked(p.acked, everything)
        by_id = {s["snapshot_id"]: s for s in t["snapshots"]}
        ours = [s for s in t["snapshots"] if any(k.startswith("icestream.checkpoint.") for k in s["summary"])]
        after_external = [s for s in ours if s["parent_snapshot_id"] in by_id
                          and "external.writer" in by_id[s["parent_snapshot_id"]]["summary"]]
        self.assertGreater(len(after_external), 0, "no channel commit followed an external one")
        # Manifest lists are named snap-<snapshot id>-<attempt>-<commit uuid>.avro
        # (docs/formats/iceberg.md): a channel snapshot of attempt >= 2 lost a race to the
        # external writer, reloaded the table and committed again.
        retried = [s for s in ours
                   if int(re.search(r"/snap-\d+-(\d+)-[0-9a-f-]+\.avro$", s["manifest_list"]).group(1)) > 1]
        self.assertGreater(len(retried), 0, "no channel commit met a conflict")
        print(f"external writer {ext['commits']} commits ({ext['conflicts']} lost races, "
              f"{len(ext['appends'])} files added); channel {len(ours)} commits, {len(after_external)} on top of "
              f"external snapshots, {len(retried)} committed after a conflict; {len(everything)} records exactly once")


class LocalChaos(unittest.TestCase, Chaos):
    """The embedded warehouse (table buckets and DLQ bucket are folders)."""

    def make_server(self):
        return Server().start()

    def s3(self):
        return None

    def bucket(self, server, name):
        return LocalBucket(os.path.join(server.data_dir, "buckets", name))

    def test_kill9(self):
        self.run_server(lambda s: self.kill9(s, "kill"))

    def test_commit_conflicts_from_an_external_writer(self):
        self.run_server(lambda s: self.conflicts(s, "conflict"))


class RgwChaos(unittest.TestCase, Chaos):
    """Table buckets and DLQ buckets in one radosgw shared by the tests."""

    @classmethod
    def setUpClass(cls):
        cls.rgw = Rgw().start()
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = Rgw.access_key, Rgw.secret_key

    @classmethod
    def tearDownClass(cls):
        cls.rgw.stop()

    def make_server(self, endpoint=None, config_text=None):
        return Server(extra_args=["--s3-endpoint", endpoint or self.rgw.endpoint], config_text=config_text).start()

    def s3(self):
        return (self.rgw.endpoint, Rgw.access_key, Rgw.secret_key)

    def bucket(self, server, name):
        return S3Bucket(self.rgw.s3(), name)

    def buckets(self, tag):
        for b in (f"{tag}-tables", f"{tag}-dlq"):
            self.rgw.s3().create_bucket(Bucket=b)

    def test_kill9(self):
        self.buckets("rkill")
        self.run_server(lambda s: self.kill9(s, "rkill"))

    def test_commit_conflicts_from_an_external_writer(self):
        self.buckets("rconflict")
        self.run_server(lambda s: self.conflicts(s, "rconflict"))

    def test_fault_proxy(self):
        tag = "rfault"
        self.buckets(tag)
        proxy = FaultProxy(self.rgw.port, fault_rate=0.3, stall_seconds=3).start()
        try:
            self.run_server(lambda s: self.faults(s, tag, proxy), endpoint=proxy.endpoint,
                            config_text="[s3]\nrequest_timeout_ms = 1500\nmax_attempts = 2\n")
        finally:
            proxy.stop()

    def faults(self, server, tag, proxy):
        d = self.setup_channel(server, tag)
        p = Producer(server, "fault", invalid_every=53, pause=0.3)
        p.start()
        worst = 0.0
        t0 = time.time()
        while time.time() - t0 < 20:
            m = metric(metrics(server), "DataFreshness", "crash-ch")
            worst = max(worst, m[0] if m else 0.0)
            time.sleep(0.5)
        p.stop.set()
        p.join(30)
        everything, t = self.verify(server, tag)
        self.check_acked(p.acked, everything)
        faults = sum(v for f, v in proxy.counts.items() if f != "ok")
        self.assertGreater(faults, 10, proxy.counts)
        self.assertGreater(worst, 1.5, "DataFreshness never showed the faults")
        self.assertEqual(wait_channel(server, d["ChannelARN"])["ChannelStatus"], "ACTIVE")
        print(f"proxy {proxy.counts}; worst DataFreshness {worst:.1f} s; {len(t['rows'])} rows exactly once")


if __name__ == "__main__":
    npm_dir()
    unittest.main(verbosity=2)

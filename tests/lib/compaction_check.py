"""Helpers for the compaction and table-upkeep suites and bench/table-delivery, black-box:

- `SteadyProducer`: puts records at a steady rate with event times near "now" (a live
  stream's shape: a batch spans one or two partition hours), optionally a share of
  late records in the previous hour; keeps what was acknowledged.
- `SnapshotTracker`: polls the table's metadata through the REST catalog and keeps every
  snapshot it has seen (summary, time, parent), so figures survive snapshot expiry;
  it notices snapshots it never saw (a parent missing from what was seen) and records,
  per poll, how many snapshots the metadata holds.
- `write_amplification(...)`: bytes written by appends and by compaction per byte written
  by appends, from snapshot summaries (independent of the server's own counter).
- `partition_files(...)`: live files per partition from a read_table result."""

import json
import math
import random
import threading
import time

from table_check import rest_metadata

HOUR_S = 3600


def iso(secs):
    us = int(round((secs - int(secs)) * 1e6))
    if us >= 1_000_000:
        secs, us = secs + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(secs))) + f".{us:06d}Z"


COMPACTION_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["id", "n"],
    "properties": {
        "id": {"type": "string"},
        "event_time": {"type": "string", "format": "date-time"},
        "n": {"type": "integer"},
        "amount": {"type": "number", "multipleOf": 0.01},
        "merchant": {"type": "string"},
        "note": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
WORDS = ("card present online terminal settlement batch acquirer issuer region branch counter kiosk "
         "subscription renewal loyalty points voucher refund partial capture authorization").split()


def steady_record(tag, n, rng, now, late_share=0.0, size=400, late_hour=None):
    """A record with event time a little before `now` (or, with probability late_share,
    within the hour before the one `late_hour` (epoch seconds) is in, default now's)."""
    if rng.random() < late_share:
        t = ((late_hour or now) // HOUR_S - 1) * HOUR_S + rng.uniform(0, HOUR_S - 1)
    else:
        t = now - rng.uniform(0, 2)
    words = []
    while sum(len(w) + 1 for w in words) < size - 150:
        words.append(rng.choice(WORDS))
    r = {"id": f"{tag}-{n}", "event_time": iso(t), "n": n, "amount": f"{rng.randint(-10**6, 10**6) / 100:.2f}",
         "merchant": " ".join(words), "note": f"{rng.getrandbits(64):016x}", "tags": rng.sample(WORDS, rng.randint(0, 3))}
    return json.dumps(r).replace(f'"amount": "{r["amount"]}"', f'"amount": {r["amount"]}').encode()


class SteadyProducer(threading.Thread):
    """`per_put` records every `period` seconds until stopped (or the server goes away,
    when `tolerate_errors`); acked = [(data, shard, seq)]. Late records (late_share of
    them until late_until) fall in the hour before the producer was made."""

    def __init__(self, server, stream, tag, per_put=40, period=0.5, late_share=0.0, late_until=None,
                 tolerate_errors=False, size=400):
        super().__init__(daemon=True)
        self.k = server.client(connect_timeout=2, read_timeout=15)
        self.stream, self.tag, self.per_put, self.period = stream, tag, per_put, period
        self.late_share, self.late_until, self.tolerate_errors, self.size = late_share, late_until, tolerate_errors, size
        self.late_hour = time.time()
        self.acked = []
        self.sent = 0
        self.error = None
        self.stop = threading.Event()

    def run(self):
        rng = random.Random(self.tag)
        n = 0
        while not self.stop.is_set():
            t0 = time.time()
            late = self.late_share if (self.late_until is None or t0 < self.late_until) else 0.0
            recs = []
            for _ in range(self.per_put):
                recs.append({"Data": steady_record(self.tag, n, rng, t0, late, self.size, self.late_hour),
                             "PartitionKey": f"k{rng.randrange(1000)}"})
                n += 1
            try:
                pending = recs
                while pending:
                    r = self.k.put_records(StreamName=self.stream, Records=pending)
                    retry = []
                    for rec, res in zip(pending, r["Records"]):
                        if "SequenceNumber" in res:
                            self.acked.append((rec["Data"], res["ShardId"], res["SequenceNumber"]))
                        else:
                            retry.append(rec)
                    pending = retry
                self.sent += len(recs)
            except Exception as e:  # noqa: BLE001 - the server was killed or stopped
                if not self.tolerate_errors:
                    self.error = e
                return
            self.stop.wait(max(0.0, self.period - (time.time() - t0)))


class SnapshotTracker(threading.Thread):
    """Polls the table's metadata every `interval` s. seen: {snapshot id: snapshot dict
    (exact ids as strings)}; polls: [(wall time, snapshots in metadata, current id,
    metadata)] for the last poll only keeps the metadata; gaps: snapshots whose parent
    was never seen (the tracker missed commits). `check(md, tracker)` runs on every
    poll (its exceptions are kept in `failures`)."""

    def __init__(self, server, warehouse, namespace, table, interval=1.0, check=None):
        super().__init__(daemon=True)
        self.server, self.wh, self.ns, self.table, self.interval = server, warehouse, namespace, table, interval
        self.check = check
        self.seen = {}
        self.first_seen_at = {}
        self.polls = []
        self.gaps = []
        self.failures = []
        self.last = None
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def poll_once(self):
        try:
            t = rest_metadata(self.server, self.wh, self.ns, self.table)
        except OSError:
            return None  # the server is restarting
        if not t:
            return None
        md = t["metadata"]
        now = time.time()
        with self.lock:
            for s in md.get("snapshots", []):
                sid = str(s["snapshot-id"])
                if sid not in self.seen:
                    parent = s.get("parent-snapshot-id")
                    if parent is not None and str(parent) not in self.seen and self.seen:
                        self.gaps.append(sid)
                    self.seen[sid] = s
                    self.first_seen_at[sid] = now
            self.polls.append((now, len(md.get("snapshots", [])), str(md.get("current-snapshot-id")),
                               int(md.get("last-sequence-number", 0))))
            self.last = md
        if self.check:
            try:
                self.check(md, self)
            except AssertionError as e:
                self.failures.append(str(e))
        return md

    def run(self):
        while not self.stop.is_set():
            self.poll_once()
            self.stop.wait(self.interval)

    def finish(self):
        self.stop.set()
        self.join(30)
        self.poll_once()

    def snapshots(self, key, value):
        """Seen snapshots whose summary has key = value, in commit order."""
        with self.lock:
            out = [s for s in self.seen.values() if s.get("summary", {}).get(key) == value]
        return sorted(out, key=lambda s: int(s["sequence-number"]))

    def committed_since(self, t_ms):
        with self.lock:
            return sum(1 for s in self.seen.values() if int(s["timestamp-ms"]) >= t_ms)


def write_amplification(tracker, channel_arn):
    """(WA, append bytes, compaction bytes, append snapshots, compaction snapshots) from
    the snapshots the tracker saw."""
    appends = tracker.snapshots("icestream.channel-arn", channel_arn)
    replaces = tracker.snapshots("icestream.compacted-by", channel_arn)
    a = sum(int(s["summary"].get("added-files-size", 0)) for s in appends)
    c = sum(int(s["summary"].get("added-files-size", 0)) for s in replaces)
    return ((a + c) / a if a else float("nan")), a, c, appends, replaces


def partition_files(t):
    """{partition value: [(size, is merged output)]} of a read_table result."""
    out = {}
    for f in t["files"]:
        key = json.dumps(f["partition"], sort_keys=True)
        out.setdefault(key, []).append((f["file_size_in_bytes"], "-m-" in f["file_path"].rsplit("/", 1)[-1]))
    return out


def small_file_bound(fresh_size, target):
    """Files below target/2 that one partition may hold under the two-tier plan: about
    sqrt(T/s) fresh files before they are merged plus as many merged ones, with one merge
    in flight each (docs/compaction.md)."""
    k = math.ceil(math.sqrt(target / max(fresh_size, 1)))
    return 2 * (k + 1) + 2

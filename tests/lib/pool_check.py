"""Invariants of a scale-out pool's deliveries, checked from what the pool left behind
(black-box: the stream read back through the Kinesis API, the bucket's objects as S3 lists
them, the table as the independent reader sees it, and the pool's icestream_commit_log and
icestream_lease_history rows). Used by tests/chaos/test_scaleout_pool.py:

- `check_bucket_ranges`: per shard, the S3 objects are contiguous runs of the shard's
  records that tile it from its first record to its last (no gap, no overlap), and each key
  names its first record (docs/channels.md "Keys": its offset in the shard, and the hash of
  the channel id and its sequence number);
- `check_bucket_children_after_parents`: every object of a child shard was written (S3's
  LastModified, the store's own clock) no earlier than the last object of each parent;
- `check_table_checkpoints`: each shard's checkpoints in the table's snapshot summaries form
  a chain of the stream's own sequence numbers, and the rows an append snapshot added for a
  shard are exactly the shard's records after the previous checkpoint up to the new one;
- `check_commits_fenced`: every table commit (icestream_commit_log: owner, epoch, at) ran
  under the latest grant of the control unit at its time (icestream_lease_history): that
  (owner, epoch) was granted before it, and no later grant (a higher epoch) came before it.

Run directly (`python3 tests/lib/pool_check.py`), it checks the checks: each one accepts a
consistent history and rejects the same history broken the way it must catch."""

import hashlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from delivery_check import parse_suffix  # noqa: E402

CHECKPOINT = "icestream.checkpoint."


def shard_number(shard_id):
    """The shard index of an object key's suffix (delivery/object_naming.cc: the shard id's
    trailing digits, modulo 10^6)."""
    digits = ""
    for c in reversed(shard_id):
        if not c.isdigit():
            break
        digits = c + digits
    return int(digits[:18] or "0") % 1000000


class StreamIndex:
    """Every record of a stream, by shard in sequence order. records: (data, shard id,
    sequence number) as the Kinesis API returns them; key(data) names a record uniquely (the
    same name the bucket's and the table's copies carry)."""

    def __init__(self, records, key):
        self.seqs = {}  # shard -> [sequence number text] in order
        self.where = {}  # record key -> (shard, position in the shard)
        for data, shard, seq in sorted(records, key=lambda r: (r[1], int(r[2]))):
            lst = self.seqs.setdefault(shard, [])
            k = key(data)
            if k in self.where:
                raise AssertionError(f"record {k} is twice in the stream")
            self.where[k] = (shard, len(lst))
            lst.append(seq)
        self.position_of = {(shard, int(q)): i for shard, lst in self.seqs.items() for i, q in enumerate(lst)}

    def position(self, shard, seq):
        """The position in its shard of the record with this sequence number, None when the
        shard has no such record."""
        return self.position_of.get((shard, int(seq)))


def check_bucket_ranges(tc, objects, stream, channel_id):
    """objects: {key: (record keys in the object's order, LastModified)} of the channel's
    objects (every object of the bucket: anything else in it fails). The offset in a key is
    the record's position in its shard (icestream's log offset, on a stream that retention
    has not trimmed). Returns {shard: [(first position, last position, LastModified, key)]},
    each list in the shard's order."""
    per_shard = {}
    for key, (ids, mtime) in objects.items():
        tc.assertTrue(ids, f"object {key} holds no record")
        first_offset, shard_no, m = parse_suffix(key)
        places = [stream.where.get(i) for i in ids]
        tc.assertNotIn(None, places, f"object {key} holds a record that is not in the stream")
        shards = {s for s, _ in places}
        tc.assertEqual(len(shards), 1, f"object {key} mixes shards {sorted(shards)}")
        shard = shards.pop()
        pos = [p for _, p in places]
        tc.assertEqual(pos, list(range(pos[0], pos[0] + len(pos))),
                       f"object {key}: its records are not a contiguous run of {shard} in order")
        tc.assertEqual(shard_no, shard_number(shard), f"object {key} is named after another shard than {shard}")
        tc.assertEqual(first_offset, pos[0], f"object {key}: the offset in its name is not its first record's "
                                             f"({pos[0]} in {shard})")
        first_seq = stream.seqs[shard][pos[0]]
        tc.assertEqual(m.group(3), hashlib.sha256(f"{channel_id}/{first_seq}".encode()).hexdigest()[:11],
                       f"object {key}: the hash in its name is not that of its first record {first_seq}")
        per_shard.setdefault(shard, []).append((pos[0], pos[-1], mtime, key))
    for shard in per_shard:
        per_shard[shard].sort()
    for shard, seqs in stream.seqs.items():
        want = 0
        for first, last, _, key in per_shard.get(shard, []):
            if first < want:
                tc.fail(f"{shard}: object {key} starts at record {first}, which an earlier object holds "
                        f"(records up to {want - 1}): overlap")
            if first > want:
                tc.fail(f"{shard}: records {want}..{first - 1} are in no object (the next one, {key}, "
                        f"starts at {first}): gap")
            want = last + 1
        tc.assertEqual(want, len(seqs), f"{shard}: the objects end at record {want - 1} of {len(seqs)}")
    return per_shard


def parents_of(shards):
    """{shard id: [parent ids]} from ListShards' Shards."""
    return {s["ShardId"]: [p for p in (s.get("ParentShardId"), s.get("AdjacentParentShardId")) if p]
            for s in shards}


def check_bucket_children_after_parents(tc, shards, per_shard, min_children=3):
    """Every object of a child shard was written no earlier than every object of its
    parents (LastModified; create-only PUTs in a pool, so it is the object's creation).
    Returns the number of (child, parent) pairs compared."""
    pairs = 0
    for child, ps in parents_of(shards).items():
        if not ps or not per_shard.get(child):
            continue
        first_child = min(per_shard[child], key=lambda o: o[2])
        for p in ps:
            if not per_shard.get(p):
                continue
            last_parent = max(per_shard[p], key=lambda o: o[2])
            tc.assertGreaterEqual(first_child[2], last_parent[2],
                                  f"{child}'s object {first_child[3]} (written {first_child[2]}) came before "
                                  f"its parent {p}'s object {last_parent[3]} (written {last_parent[2]})")
            pairs += 1
    tc.assertGreaterEqual(pairs, min_children, "too few resharded shards in the bucket to check the order")
    return pairs


def check_table_checkpoints(tc, table, stream):
    """table: read_table(..., file_keys=<the record key column>). Each shard's checkpoint
    chain starts at its first record, moves only forward over the stream's own sequence
    numbers of that shard and ends at its last record; an append snapshot that moves a
    shard's checkpoint from a to b added exactly that shard's records after a up to b (its
    added-records is their count over all shards), and no other rows. Rows a compaction
    (a later non-append snapshot) rewrote are found in the files that snapshot added.
    Returns the number of (snapshot, shard) steps checked."""
    snaps = sorted(table["snapshots"], key=lambda s: s["sequence_number"])
    tc.assertTrue(snaps, "the table has no snapshot")
    tc.assertIsNone(snaps[0]["parent_snapshot_id"],
                    "the table's first snapshots are gone (expired): the chain cannot be followed from the start")
    by_id = {s["snapshot_id"]: s for s in snaps}
    added = {}  # snapshot id -> shard -> positions of the rows its live files hold
    for f in table["files"]:
        tc.assertIn("keys", f, "read the table with file_keys")
        tc.assertIn(f["snapshot_id"], by_id, f"file {f['file_path']} was added by a snapshot the table lacks")
        for k in f["keys"]:
            place = stream.where.get(k)
            tc.assertIsNotNone(place, f"row {k} of {f['file_path']} is not a record of the stream")
            added.setdefault(f["snapshot_id"], {}).setdefault(place[0], set()).add(place[1])
    last = {}  # shard -> position of its checkpoint
    steps = 0
    for i, s in enumerate(snaps):
        op = s["summary"].get("operation")
        moved = {}
        for name, value in s["summary"].items():
            if not name.startswith(CHECKPOINT):
                continue
            shard = name[len(CHECKPOINT):]
            b = stream.position(shard, value)
            tc.assertIsNotNone(b, f"snapshot {s['snapshot_id']}: the checkpoint {value} of {shard} is no record "
                                  "of that shard")
            a = last.get(shard, -1)
            tc.assertGreaterEqual(b, a, f"snapshot {s['snapshot_id']}: the checkpoint of {shard} went back")
            if b > a:
                moved[shard] = (a, b)
            last[shard] = b
        if op != "append":
            tc.assertFalse(moved, f"snapshot {s['snapshot_id']} ({op}) moved checkpoints {moved}")
            continue
        later = {}  # rows in files added by later non-append snapshots (compactions)
        for t in snaps[i + 1:]:
            if t["summary"].get("operation") != "append":
                for shard, pos in added.get(t["snapshot_id"], {}).items():
                    later.setdefault(shard, set()).update(pos)
        got = added.get(s["snapshot_id"], {})
        for shard in set(got) | set(moved):
            a, b = moved.get(shard, (0, 0))
            want = set(range(a + 1, b + 1))
            have = got.get(shard, set())
            extra = sorted(have - want)
            tc.assertFalse(extra, f"snapshot {s['snapshot_id']} added rows of {shard} outside its checkpoint step "
                                  f"({a}, {b}]: records {extra[:10]}")
            lost = sorted(want - have - later.get(shard, set()))
            tc.assertFalse(lost, f"snapshot {s['snapshot_id']} moved {shard}'s checkpoint over ({a}, {b}] but added "
                                 f"no row for records {lost[:10]}")
            steps += 1 if shard in moved else 0
        if "added-records" in s["summary"]:
            tc.assertEqual(int(s["summary"]["added-records"]), sum(b - a for a, b in moved.values()),
                           f"snapshot {s['snapshot_id']}: added-records is not the records its checkpoints passed")
    for shard, seqs in stream.seqs.items():
        tc.assertEqual(last.get(shard, -1), len(seqs) - 1,
                       f"the checkpoints of {shard} end at record {last.get(shard, -1)} of {len(seqs)}")
    return steps


def check_commits_fenced(tc, commits, grants):
    """commits: (owner, epoch, at) of the channel's icestream_commit_log rows; grants: (owner,
    epoch, at[, released]) of its control unit's icestream_lease_history rows (at: microseconds
    on the database clock; released: the row records the owner handing the unit back).
    Every commit ran under the unit's latest event before it, a grant to (owner, epoch): not
    before it, not after a later grant, not after its owner gave it back. Returns the
    distinct (owner, epoch) pairs that committed."""
    tc.assertTrue(commits, "no table commit logged")
    events = sorted(((g[0], g[1], g[2], bool(g[3]) if len(g) > 3 else False) for g in grants),
                    key=lambda g: (g[2], g[1]))
    for owner, epoch, at in commits:
        before = [g for g in events if g[2] < at]
        tc.assertTrue(before, f"a commit by {owner} (epoch {epoch}) at {at} precedes every grant of the unit")
        latest = max(before, key=lambda g: (g[1], g[2]))
        tc.assertIn((owner, epoch), {(o, e) for o, e, _, r in before if not r},
                    f"a commit by {owner} at {at} carries epoch {epoch}, which was never granted to it before")
        tc.assertEqual((latest[0], latest[1]), (owner, epoch),
                       f"a commit by {owner} at {at} carries a superseded epoch {epoch}: the unit was granted to "
                       f"{latest[0]} (epoch {latest[1]}) at {latest[2]}")
        tc.assertFalse(latest[3], f"a commit by {owner} at {at} under epoch {epoch}, which it had handed back "
                                  f"at {latest[2]}")
    return {(o, e) for o, e, _ in commits}


# ------------------------------------------------------------------ checks of the checks

class _Checks(unittest.TestCase):
    """Each check on a small consistent history, then on that history broken."""

    CHANNEL = "c0ffee"

    def stream(self):
        recs = []
        for shard, n in (("shardId-000000000000", 6), ("shardId-000000000001", 4), ("shardId-000000000002", 3)):
            for i in range(n):
                recs.append((f"{shard[-1]}-{i}".encode(), shard, str(1000 + 10 * i + int(shard[-1]))))
        return recs, StreamIndex(recs, lambda d: d.decode())

    def key(self, stream, shard, first):
        seq = stream.seqs[shard][first]
        h = hashlib.sha256(f"{self.CHANNEL}/{seq}".encode()).hexdigest()[:11]
        return f"p/x-{first:018d}-{shard_number(shard):06d}-{h}.json.gz"

    def objects(self, stream, cuts, mtimes=None):
        """cuts: {shard: [(first, last)]} -> the bucket's objects."""
        out = {}
        for shard, runs in cuts.items():
            for j, (a, b) in enumerate(runs):
                ids = [f"{shard[-1]}-{i}" for i in range(a, b + 1)]
                out[self.key(stream, shard, a)] = (ids, (mtimes or {}).get((shard, j), 10 * j + 100 * int(shard[-1])))
        return out

    GOOD = {"shardId-000000000000": [(0, 2), (3, 5)], "shardId-000000000001": [(0, 3)],
            "shardId-000000000002": [(0, 0), (1, 2)]}

    def test_bucket_ranges(self):
        _, st = self.stream()
        per = check_bucket_ranges(self, self.objects(st, self.GOOD), st, self.CHANNEL)
        self.assertEqual(len(per["shardId-000000000000"]), 2)
        for broken in ({**self.GOOD, "shardId-000000000000": [(0, 2), (4, 5)]},      # a gap
                       {**self.GOOD, "shardId-000000000000": [(0, 3), (3, 5)]},      # an overlap
                       {**self.GOOD, "shardId-000000000001": [(0, 2)]},              # the tail missing
                       {**self.GOOD, "shardId-000000000002": [(1, 2)]}):             # the head missing
            with self.assertRaises(AssertionError):
                check_bucket_ranges(self, self.objects(st, broken), st, self.CHANNEL)
        objs = self.objects(st, self.GOOD)
        k = next(iter(objs))
        ids, t = objs[k]
        with self.assertRaises(AssertionError):  # a record out of order inside an object
            check_bucket_ranges(self, {**objs, k: (list(reversed(ids)), t)}, st, self.CHANNEL)
        with self.assertRaises(AssertionError):  # a key that does not name its first record
            check_bucket_ranges(self, {**{x: v for x, v in objs.items() if x != k}, k.replace("-0000", "-0001", 1):
                                       (ids, t)}, st, self.CHANNEL)
        with self.assertRaises(AssertionError):  # another channel's hash
            check_bucket_ranges(self, objs, st, "other")

    def test_bucket_children_after_parents(self):
        _, st = self.stream()
        shards = [{"ShardId": "shardId-000000000000"}, {"ShardId": "shardId-000000000001"},
                  {"ShardId": "shardId-000000000002", "ParentShardId": "shardId-000000000000",
                   "AdjacentParentShardId": "shardId-000000000001"}]
        per = check_bucket_ranges(self, self.objects(st, self.GOOD), st, self.CHANNEL)
        self.assertEqual(check_bucket_children_after_parents(self, shards, per, min_children=1), 2)
        # The child's first object written before its parent 0's last one.
        early = self.objects(st, self.GOOD, {("shardId-000000000002", 0): 5})
        per = check_bucket_ranges(self, early, st, self.CHANNEL)
        with self.assertRaises(AssertionError):
            check_bucket_children_after_parents(self, shards, per, min_children=1)

    def table(self, st, steps, compacted=()):
        """steps: [{shard: last position}] per append snapshot; compacted: indexes of steps
        whose files a final replace snapshot rewrote."""
        snaps, files, last = [], [], {}
        for i, step in enumerate(steps):
            summary = {"operation": "append"}
            n = 0
            for shard, b in step.items():
                a = last.get(shard, -1)
                summary[CHECKPOINT + shard] = st.seqs[shard][b]
                keys = [f"{shard[-1]}-{p}" for p in range(a + 1, b + 1)]
                n += len(keys)
                files.append({"file_path": f"f{i}{shard}", "snapshot_id": str(i + 1), "keys": keys,
                              "step": i})
                last[shard] = b
            summary["added-records"] = str(n)
            snaps.append({"snapshot_id": str(i + 1), "parent_snapshot_id": str(i) if i else None,
                          "sequence_number": i + 1, "summary": summary})
        if compacted:
            rid = str(len(steps) + 1)
            snaps.append({"snapshot_id": rid, "parent_snapshot_id": str(len(steps)), "sequence_number": len(steps) + 1,
                          "summary": {"operation": "replace"}})
            for f in files:
                if f["step"] in compacted:
                    f["snapshot_id"] = rid
        return {"snapshots": snaps, "files": files}

    def test_table_checkpoints(self):
        _, st = self.stream()
        s0, s1, s2 = "shardId-000000000000", "shardId-000000000001", "shardId-000000000002"
        good = [{s0: 1, s1: 0}, {s0: 4}, {s1: 3, s2: 2}, {s0: 5}]
        self.assertEqual(check_table_checkpoints(self, self.table(st, good), st), 6)
        self.assertEqual(check_table_checkpoints(self, self.table(st, good, compacted=(0, 1)), st), 6)
        with self.assertRaises(AssertionError):  # the last records of shard 0 never committed
            check_table_checkpoints(self, self.table(st, good[:3]), st)
        # A step whose rows skip a record (the checkpoint passes record 2 of shard 0 but no
        # file holds it): a gap.
        t = self.table(st, good)
        t["files"][2]["keys"].remove("0-2")
        with self.assertRaises(AssertionError):
            check_table_checkpoints(self, t, st)
        # A step that holds a record an earlier step already passed: an overlap.
        t = self.table(st, good)
        t["files"][2]["keys"].append("0-1")
        with self.assertRaises(AssertionError):
            check_table_checkpoints(self, t, st)
        # A checkpoint that goes back, and one that names no record of its shard.
        t = self.table(st, good)
        t["snapshots"][1]["summary"][CHECKPOINT + s0] = st.seqs[s0][0]
        with self.assertRaises(AssertionError):
            check_table_checkpoints(self, t, st)
        t = self.table(st, good)
        t["snapshots"][1]["summary"][CHECKPOINT + s0] = st.seqs[s1][3]
        with self.assertRaises(AssertionError):
            check_table_checkpoints(self, t, st)
        # added-records that does not match the checkpoints' step.
        t = self.table(st, good)
        t["snapshots"][1]["summary"]["added-records"] = "4"
        with self.assertRaises(AssertionError):
            check_table_checkpoints(self, t, st)

    def test_commits_fenced(self):
        grants = [("a", 1, 100), ("b", 2, 200), ("a", 3, 300)]
        ok = [("a", 1, 150), ("a", 1, 199), ("b", 2, 250), ("a", 3, 301)]
        self.assertEqual(check_commits_fenced(self, ok, grants), {("a", 1), ("b", 2), ("a", 3)})
        for bad in ([("a", 1, 250)],     # a's epoch 1 after b took the unit at 200: superseded
                    [("b", 2, 150)],     # before its grant
                    [("b", 1, 150)],     # an epoch never granted to b
                    [("a", 1, 50)]):     # before any grant
            with self.assertRaises(AssertionError):
                check_commits_fenced(self, bad, grants)
        # a handed its epoch 1 back at 180: a commit under it at 190 ran without the unit.
        released = [("a", 1, 100, False), ("a", 1, 180, True), ("b", 2, 200, False)]
        self.assertEqual(check_commits_fenced(self, [("a", 1, 150), ("b", 2, 250)], released),
                         {("a", 1), ("b", 2)})
        with self.assertRaises(AssertionError):
            check_commits_fenced(self, [("a", 1, 190)], released)


if __name__ == "__main__":
    unittest.main()

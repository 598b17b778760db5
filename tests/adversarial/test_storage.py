"""A bad day for the disk, black box: bit flips in the active and in a sealed segment
(with and without its index) at start-up, a missing or empty meta.db, two servers on one
data directory, and `icestream fsck` / `--repair`. Nothing acknowledged may be lost or
renumbered silently; damage is reported, never cut or skipped."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import BINARY, Server, error_code, free_port  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

SMALL_SEGMENTS = "[storage]\nsegment_bytes = 65536\n"


def health(srv):
    with urllib.request.urlopen(srv.endpoint + "/health", timeout=5) as r:
        return json.loads(r.read())


def put_batches(k, stream, batches, per_batch, size=100):
    """Acknowledged records, one PutRecords per batch; returns their sequence numbers."""
    seqs = []
    for b in range(batches):
        recs = [{"Data": f"{b:04d}-{i:04d}-".encode() + b"x" * size, "PartitionKey": "pk"} for i in range(per_batch)]
        r = k.put_records(StreamName=stream, Records=recs)
        assert r["FailedRecordCount"] == 0, r
        seqs += [e["SequenceNumber"] for e in r["Records"]]
    return seqs


def read_all(k, stream, shard="shardId-000000000000", limit=10000):
    """Every record from TRIM_HORIZON, or the ClientError that stopped the read."""
    it = k.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    out = []
    for _ in range(200):
        try:
            r = k.get_records(ShardIterator=it, Limit=limit)
        except ClientError as e:
            return out, e
        out += r["Records"]
        if not r["Records"] and r.get("MillisBehindLatest", 0) == 0:
            return out, None
        it = r.get("NextShardIterator")
        if not it:
            return out, None
    return out, None


def shard_dir(data_dir, uid_index=0):
    streams = sorted(os.listdir(os.path.join(data_dir, "streams")))
    return os.path.join(data_dir, "streams", streams[uid_index], "000000000000")


def segments(d):
    return sorted(glob.glob(os.path.join(d, "*.log")))


def flip(path, position):
    with open(path, "r+b") as f:
        f.seek(position)
        b = f.read(1)
        f.seek(position)
        f.write(bytes([b[0] ^ 0x10]))


def fsck(data_dir, *args):
    p = subprocess.run([BINARY, "fsck", "--data-dir", data_dir] + list(args), capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout + p.stderr


class Corruption(unittest.TestCase):
    def test_bit_flip_in_the_active_segment(self):
        srv = Server().start()
        try:
            k = srv.client()
            k.create_stream(StreamName="damaged", ShardCount=1)
            k.create_stream(StreamName="healthy", ShardCount=1)
            seqs = put_batches(k, "damaged", 10, 100)  # 1,000 records in 10 writes
            put_batches(k, "healthy", 1, 10)
            uid_of = {s: k.describe_stream(StreamName=s)["StreamDescription"]["StreamARN"] for s in ("damaged",)}
            self.assertTrue(uid_of)
            srv.stop()
            # The damaged stream's shard folder: the one whose log holds 1,000 records.
            dirs = [os.path.join(srv.data_dir, "streams", u, "000000000000")
                    for u in os.listdir(os.path.join(srv.data_dir, "streams"))]
            target = max(dirs, key=lambda d: os.path.getsize(segments(d)[-1]))
            active = segments(target)[-1]
            size = os.path.getsize(active)
            flip(active, size // 2)
            with open(active, "rb") as f:
                before = f.read()

            srv.start()
            body = health(srv)
            self.assertEqual(body["status"], "degraded", body)
            self.assertEqual(body["shards"][0]["stream"], "damaged")
            self.assertNotIn("/", body["shards"][0]["reason"])
            # The rest of the server serves.
            self.assertEqual(len(read_all(k, "healthy")[0]), 10)
            k.put_record(StreamName="healthy", Data=b"still", PartitionKey="k")
            # The damaged shard refuses clearly, with no path in the message.
            with self.assertRaises(ClientError) as cm:
                k.get_shard_iterator(StreamName="damaged", ShardId="shardId-000000000000",
                                     ShardIteratorType="TRIM_HORIZON")
            msg = cm.exception.response["Error"]["Message"]
            self.assertIn("damaged", msg)
            self.assertNotIn(srv.data_dir, msg)
            with self.assertRaises(ClientError):
                k.put_record(StreamName="damaged", Data=b"x", PartitionKey="pk")
            srv.stop()
            with open(active, "rb") as f:
                self.assertEqual(f.read(), before, "the damaged segment was changed")

            # fsck says what a repair would drop, before dropping anything.
            rc, out = fsck(srv.data_dir)
            self.assertEqual(rc, 1, out)
            self.assertIn("corrupt", out)
            self.assertIn("a repair would", out)
            self.assertRegex(out, r"1 record\(s\) would be dropped")
            with open(active, "rb") as f:
                self.assertEqual(f.read(), before)
            rc, out = fsck(srv.data_dir, "--repair")
            self.assertEqual(rc, 0, out)
            rc, out = fsck(srv.data_dir)
            self.assertEqual(rc, 0, out)

            srv.start()
            self.assertEqual(health(srv)["status"], "ok")
            records, err = read_all(k, "damaged")
            self.assertIsNone(err)
            self.assertEqual(len(records), 999)  # only the damaged record is gone
            got = [r["SequenceNumber"] for r in records]
            self.assertEqual(len(set(seqs) - set(got)), 1)
            self.assertTrue(set(got) <= set(seqs))
            # No sequence number is handed out twice.
            new = k.put_record(StreamName="damaged", Data=b"after", PartitionKey="pk")["SequenceNumber"]
            self.assertNotIn(new, seqs)
            self.assertGreater(int(new), max(int(s) for s in seqs))
        finally:
            srv.stop()
            srv.cleanup()

    def test_bit_flip_in_a_sealed_segment(self):
        srv = Server(config_text=SMALL_SEGMENTS).start()
        try:
            k = srv.client()
            k.create_stream(StreamName="sealed", ShardCount=1)
            put_batches(k, "sealed", 40, 50, size=200)  # ~480 KB: several 64 KiB segments
            srv.stop()
            d = shard_dir(srv.data_dir)
            segs = segments(d)
            self.assertGreater(len(segs), 4)
            flip(segs[1], 5000)  # a record in the middle of the second segment
            for without_index in (False, True):
                if without_index:
                    os.remove(segs[1][:-4] + ".idx")
                srv.start()
                records, err = read_all(k, "sealed")
                self.assertIsNotNone(err, "the read went past the damage")
                self.assertEqual(error_code(err), "InternalFailure")
                self.assertIn("damaged", err.response["Error"]["Message"])
                self.assertNotIn(srv.data_dir, err.response["Error"]["Message"])
                self.assertGreater(len(records), 0)
                # Contiguous up to the damage: nothing skipped.
                offsets = [int(r["SequenceNumber"]) for r in records]
                self.assertEqual(offsets, sorted(offsets))
                self.assertEqual(len(records), len({r["SequenceNumber"] for r in records}))
                srv.stop()
            rc, out = fsck(srv.data_dir)
            self.assertEqual(rc, 1, out)
            rc, out = fsck(srv.data_dir, "--repair")
            self.assertEqual(rc, 0, out)
            srv.start()
            records, err = read_all(k, "sealed")
            self.assertIsNone(err)
            self.assertEqual(len(records), 2000 - 1)
        finally:
            srv.stop()
            srv.cleanup()


class MetaDb(unittest.TestCase):
    def check_refused(self, damage):
        srv = Server().start()
        try:
            k = srv.client()
            k.create_stream(StreamName="keep", ShardCount=2)
            put_batches(k, "keep", 2, 20)
            srv.stop()
            folders = sorted(os.listdir(os.path.join(srv.data_dir, "streams")))
            damage(srv.data_dir)
            with self.assertRaises(RuntimeError) as cm:
                srv.start()
            self.assertIn("meta.db", str(cm.exception))
            self.assertIn("Refusing to start", str(cm.exception))
            self.assertEqual(sorted(os.listdir(os.path.join(srv.data_dir, "streams"))), folders)
            self.assertTrue(segments(shard_dir(srv.data_dir)))
        finally:
            srv.stop()
            srv.cleanup()

    def test_missing_meta_db_deletes_nothing(self):
        def remove(d):
            for f in glob.glob(os.path.join(d, "meta.db*")):
                os.remove(f)
        self.check_refused(remove)

    def test_empty_meta_db_deletes_nothing(self):
        def empty(d):
            for f in glob.glob(os.path.join(d, "meta.db*")):
                os.remove(f)
            open(os.path.join(d, "meta.db"), "wb").close()
        self.check_refused(empty)


class OneOwner(unittest.TestCase):
    def test_second_server_on_the_same_data_dir_is_refused(self):
        first = Server().start()
        try:
            p = subprocess.run([BINARY, "serve", "--data-dir", first.data_dir, "--listen", f"127.0.0.1:{free_port()}"],
                               capture_output=True, text=True, timeout=30)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("in use by another icestream process", p.stderr)
            self.assertIn(f"pid {first.proc.pid}", p.stderr)
            rc, out = fsck(first.data_dir)  # the repair tool respects the lock too
            self.assertEqual(rc, 2, out)
            self.assertIn(f"pid {first.proc.pid}", out)
            first.client().list_streams()
        finally:
            first.stop()
            first.cleanup()


class DiskFull(unittest.TestCase):
    """The data directory on a small tmpfs the test mounts (and unmounts)."""

    def setUp(self):
        self.mnt = tempfile.mkdtemp(prefix="icestream-diskfull-")
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", self.mnt], capture_output=True,
                           text=True)
        if p.returncode != 0:
            os.rmdir(self.mnt)
            raise AssertionError("cannot mount a tmpfs (the test needs root): " + p.stderr)

    def tearDown(self):
        subprocess.run(["umount", self.mnt], check=False)
        shutil.rmtree(self.mnt, ignore_errors=True)

    def fill(self):
        path = os.path.join(self.mnt, "filler")
        with open(path, "wb", buffering=0) as f:
            for chunk in (1 << 20, 4096):
                try:
                    while True:
                        f.write(b"\0" * chunk)
                except OSError:
                    pass
        return path

    def test_disk_full_heals(self):
        srv = Server(data_dir=os.path.join(self.mnt, "data"))
        try:
            srv.start()
            k = srv.client()
            k.create_stream(StreamName="full", ShardCount=1)
            seqs = put_batches(k, "full", 2, 50)
            filler = self.fill()
            big = [{"Data": b"y" * 50000, "PartitionKey": "pk"} for _ in range(20)]
            with self.assertRaises(ClientError) as cm:
                k.put_records(StreamName="full", Records=big)
            self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 503)
            self.assertEqual(error_code(cm.exception), "ServiceUnavailable")
            self.assertIn("no space", cm.exception.response["Error"]["Message"])
            self.assertNotIn(self.mnt, cm.exception.response["Error"]["Message"])
            with self.assertRaises(ClientError) as cm:
                k.put_record(StreamName="full", Data=b"z" * 900000, PartitionKey="pk")
            self.assertEqual(error_code(cm.exception), "ServiceUnavailable")
            body = health(srv)
            self.assertEqual(body["status"], "degraded", body)
            self.assertIn("No space left", body["shards"][0]["reason"])
            os.remove(filler)
            # Space is back: writes succeed again without a restart, at the next offset.
            r = k.put_records(StreamName="full", Records=big)
            self.assertEqual(r["FailedRecordCount"], 0)
            self.assertEqual(health(srv)["status"], "ok")
            after = [e["SequenceNumber"] for e in r["Records"]]
            records, err = read_all(k, "full")
            self.assertIsNone(err)
            self.assertEqual([x["SequenceNumber"] for x in records], seqs + after)
            # A split after a failed write: the parent ends where its records end, so a
            # reader reaches the end and the children.
            self.fill()
            with self.assertRaises(ClientError):
                k.put_records(StreamName="full", Records=big)
            os.remove(os.path.join(self.mnt, "filler"))
            k.split_shard(StreamName="full", ShardToSplit="shardId-000000000000", NewStartingHashKey=str(2 ** 127))
            it = k.get_shard_iterator(StreamName="full", ShardId="shardId-000000000000",
                                      ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            seen, children = 0, None
            for _ in range(50):
                r = k.get_records(ShardIterator=it, Limit=10000)
                seen += len(r["Records"])
                if r.get("ChildShards"):
                    children = r["ChildShards"]
                    break
                it = r["NextShardIterator"]
            self.assertEqual(seen, len(seqs) + len(after))
            self.assertIsNotNone(children, "the parent's end was never reached")
            srv.stop()
            srv.start()  # and the log reopens cleanly
            self.assertEqual(len(read_all(k, "full")[0]), len(seqs) + len(after))
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

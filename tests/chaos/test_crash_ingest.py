"""Crash test: producers run PutRecords while the server is killed with SIGKILL at random
moments, 20+ times. After every restart each acknowledged record is there exactly once,
in order within its shard, and nothing that was never sent (or was torn) is served."""

import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server  # noqa: E402

ROUNDS = int(os.environ.get("CRASH_ROUNDS", "22"))
PRODUCERS = 4
STREAM = "crash"


class Producer(threading.Thread):
    """Sends PutRecords batches with unique payloads until the server dies. Remembers what
    was acknowledged (payload → (shard, sequence number)) and what was sent but has no
    answer (unknown outcome)."""

    def __init__(self, server, pid, round_no, acked, attempted):
        super().__init__(daemon=True)
        self.client = server.client(retries=0, connect_timeout=2, read_timeout=10)
        self.pid, self.round_no = pid, round_no
        self.acked, self.attempted = acked, attempted
        self.rng = random.Random(pid * 1000 + round_no)

    def run(self):
        n = 0
        while True:
            batch = []
            for _ in range(self.rng.randint(1, 60)):
                payload = f"r{self.round_no}-p{self.pid}-{n:07d}-".encode() + os.urandom(self.rng.randint(0, 100)).hex().encode()
                batch.append({"Data": payload, "PartitionKey": f"k{self.rng.randint(0, 1000)}"})
                n += 1
            for rec in batch:
                self.attempted.add(rec["Data"])
            try:
                r = self.client.put_records(StreamName=STREAM, Records=batch)
            except Exception:
                return  # the server is gone; this batch's outcome is unknown
            for rec, res in zip(batch, r["Records"]):
                if "SequenceNumber" in res:
                    self.acked[rec["Data"]] = (res["ShardId"], res["SequenceNumber"])
            # Keep the volume modest: every round re-reads the whole stream to verify it.
            time.sleep(0.01)


def read_everything(client):
    shards = client.list_shards(StreamName=STREAM)["Shards"]
    out = {}
    for s in shards:
        it = client.get_shard_iterator(StreamName=STREAM, ShardId=s["ShardId"],
                                       ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        recs = []
        while True:
            r = client.get_records(ShardIterator=it, Limit=10000)
            recs += r["Records"]
            if not r["Records"]:
                break
            it = r["NextShardIterator"]
        out[s["ShardId"]] = recs
    return out


class CrashIngest(unittest.TestCase):
    def test_kill9_during_put_records(self):
        server = Server().start()
        try:
            server.client().create_stream(StreamName=STREAM, ShardCount=4)
            acked, attempted = {}, set()
            rng = random.Random(42)
            for round_no in range(ROUNDS):
                producers = [Producer(server, p, round_no, acked, attempted) for p in range(PRODUCERS)]
                for p in producers:
                    p.start()
                time.sleep(rng.uniform(0.15, 1.2))
                server.kill()
                for p in producers:
                    p.join(30)
                server.start()
                self.verify(server.client(), acked, attempted, round_no)
            self.assertGreater(len(acked), 1000, "the test acknowledged too little to mean much")
            print(f"{ROUNDS} crashes, {len(acked)} acknowledged records, {len(attempted)} attempted")
        finally:
            server.stop()
            server.cleanup()

    def verify(self, client, acked, attempted, round_no):
        by_shard = read_everything(client)
        seen = {}
        for shard, recs in by_shard.items():
            seqs = [int(r["SequenceNumber"]) for r in recs]
            self.assertEqual(seqs, sorted(seqs), f"round {round_no}: {shard} out of order")
            self.assertEqual(len(seqs), len(set(seqs)), f"round {round_no}: duplicate sequence numbers")
            last_per_producer = {}
            for r in recs:
                data = r["Data"]
                self.assertIn(data, attempted, f"round {round_no}: served a record nobody sent (torn?)")
                self.assertNotIn(data, seen, f"round {round_no}: record served twice")
                seen[data] = (shard, r["SequenceNumber"])
                # One producer's records within a shard keep the order it sent them in.
                prefix, counter = data.split(b"-")[0] + b"-" + data.split(b"-")[1], int(data.split(b"-")[2])
                if prefix in last_per_producer:
                    self.assertGreater(counter, last_per_producer[prefix], f"round {round_no}: reordered")
                last_per_producer[prefix] = counter
        for data, where in acked.items():
            self.assertIn(data, seen, f"round {round_no}: acknowledged record lost")
            self.assertEqual(seen[data], where, f"round {round_no}: acknowledged record moved")


if __name__ == "__main__":
    unittest.main(verbosity=2)

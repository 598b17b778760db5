"""Clean shutdown and restart: SIGTERM while producers are writing lets in-flight appends
finish and exits 0; streams, shards, tags, retention and records survive the restart."""

import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server  # noqa: E402


class Restart(unittest.TestCase):
    def test_metadata_and_records_survive(self):
        server = Server().start()
        try:
            k = server.client()
            k.create_stream(StreamName="keep", ShardCount=2, Tags={"t": "1"})
            k.increase_stream_retention_period(StreamName="keep", RetentionPeriodHours=100)
            k.split_shard(StreamName="keep", ShardToSplit="shardId-000000000001", NewStartingHashKey=str(2**127 + 2**120))
            k.create_stream(StreamName="od")
            acked = []
            stop = threading.Event()

            def produce():
                c = server.client()
                i = 0
                while not stop.is_set():
                    try:
                        r = c.put_records(StreamName="keep", Records=[{"Data": f"{i}-{j}".encode(), "PartitionKey": f"{i}-{j}"} for j in range(50)])
                    except Exception:
                        return
                    acked.extend(f"{i}-{j}".encode() for j, x in enumerate(r["Records"]) if "SequenceNumber" in x)
                    i += 1

            t = threading.Thread(target=produce)
            t.start()
            time.sleep(0.5)
            self.assertEqual(server.stop(), 0)  # SIGTERM → clean exit
            stop.set()
            t.join()
            self.assertGreater(len(acked), 0)
            server.start()
            k = server.client()
            self.assertEqual(sorted(k.list_streams()["StreamNames"]), ["keep", "od"])
            d = k.describe_stream(StreamName="keep")["StreamDescription"]
            self.assertEqual(d["RetentionPeriodHours"], 100)
            self.assertEqual(len(d["Shards"]), 4)
            self.assertEqual(k.list_tags_for_stream(StreamName="keep")["Tags"], [{"Key": "t", "Value": "1"}])
            seen = set()
            for s in d["Shards"]:
                it = k.get_shard_iterator(StreamName="keep", ShardId=s["ShardId"], ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
                while it:
                    r = k.get_records(ShardIterator=it)
                    seen.update(x["Data"] for x in r["Records"])
                    if not r["Records"]:
                        break
                    it = r.get("NextShardIterator")
            for a in acked:
                self.assertIn(a, seen)
            # Writes continue after the restart.
            k.put_record(StreamName="keep", Data=b"after", PartitionKey="x")
        finally:
            server.stop()
            server.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

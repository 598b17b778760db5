"""Crash test for S3 delivery: producers write while the server is killed with SIGKILL at
random moments (during reads, builds and uploads) at least 20 times. At the end every
record in the stream is in the bucket exactly once, in per-shard order — replayed
batches overwrote their objects instead of duplicating them."""

import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import LocalBucket, S3Bucket, verify_exactly_once, wait_delivered  # noqa: E402
from harness import Rgw, Server, channel_request, kinesis_call, read_stream, wait_channel  # noqa: E402

ROUNDS = int(os.environ.get("CRASH_ROUNDS", "22"))
STREAM = "crash-src"


class Producer(threading.Thread):
    def __init__(self, server, tag):
        super().__init__(daemon=True)
        self.k = server.client(connect_timeout=2, read_timeout=10)
        self.tag = tag

    def run(self):
        n = 0
        rng = random.Random(self.tag)
        while True:
            recs = []
            for _ in range(rng.randint(20, 300)):
                # Bigger records make bigger objects, so kills land inside uploads too.
                pad = "x" * rng.randint(10, 3000)
                recs.append({"Data": f'{{"t":"{self.tag}","n":{n},"p":"{pad}"}}'.encode(), "PartitionKey": f"k{rng.randint(0, 500)}"})
                n += 1
            try:
                self.k.put_records(StreamName=STREAM, Records=recs)
            except Exception:
                return


class CrashDelivery(unittest.TestCase):
    def run_rounds(self, server, bucket, bucket_name):
        k = server.client()
        k.create_stream(StreamName=STREAM)
        st, body = kinesis_call(server, "CreateChannel",
                                channel_request("crash-ch", STREAM, bucket=bucket_name, compression="GZIP",
                                                freshness=1, template="c/!{mm}/o!{extension}"))
        self.assertEqual(st, 200, body)
        wait_channel(server, body["ChannelDescription"]["ChannelARN"])
        rng = random.Random(7)
        for r in range(ROUNDS):
            producers = [Producer(server, f"r{r}p{i}") for i in range(2)]
            for p in producers:
                p.start()
            time.sleep(rng.uniform(0.3, 2.0))
            server.kill()
            for p in producers:
                p.join(30)
            server.start()
        k = server.client()
        everything = read_stream(k, STREAM)
        self.assertGreater(len(everything), 5000)
        objs = wait_delivered(bucket, "c/", len(everything), "JSON", timeout=180)
        verify_exactly_once(self, objs, everything, "JSON")
        print(f"{ROUNDS} crashes; {len(everything)} records delivered exactly once in {len(objs)} objects")

    def test_local_buckets(self):
        server = Server().start()
        try:
            self.run_rounds(server, LocalBucket(os.path.join(server.data_dir, "buckets", "crash-bucket")), "crash-bucket")
        finally:
            server.stop()
            server.cleanup()

    def test_radosgw(self):
        rgw = Rgw().start()
        try:
            rgw.s3().create_bucket(Bucket="crash-bucket")
            os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = Rgw.access_key, Rgw.secret_key
            # Small multipart threshold: kills also land between the parts of an upload.
            server = Server(extra_args=["--s3-endpoint", rgw.endpoint],
                            config_text="[s3]\nmultipart_threshold = 6000000\n").start()
            try:
                self.run_rounds(server, S3Bucket(rgw.s3(), "crash-bucket"), "crash-bucket")
            finally:
                server.stop()
                server.cleanup()
        finally:
            rgw.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""S3 channels in a pool create their objects and never overwrite one (issue 16), against a
real S3 store: Ceph radosgw (every PUT that reaches it is counted by the proxy in front).

1. `serve --pg` and an `icestream worker` deliver a 4-shard stream through a fault proxy
   that resets the connection *after* a share of the PUTs reached radosgw (the write
   happened, the writer never heard): the retried PUT finds its key taken (If-None-Match:
   * answers 412), reads the object back, finds its own bytes and moves on. Afterwards
   every record is in the bucket exactly once and every key was written by exactly one
   successful PUT: no object was written twice.
2. The same radosgw behind a proxy that drops If-None-Match (a store without conditional
   PUT, as older S3-compatible stores are), and a versioned bucket of radosgw itself
   (Ceph 16 ignores If-None-Match there: the second create makes a new version): in a
   pool the channel FAILS with a reason that names conditional PUT; one `icestream serve`
   without --pg delivers to the stripped store as before."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import harness  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from harness import REGION, Rgw, Server, channel_request, kinesis_call, read_stream, wait_channel  # noqa: E402
from pg import PgCluster  # noqa: E402

CONFIG = "[scaleout]\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n"


def bucket_lines(s3, bucket, prefix=""):
    """Every line of every current object (compression NONE) under `prefix`."""
    lines = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            body = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
            lines += [line for line in body.decode().splitlines() if line.strip()]
    return lines


def bucket_lines_keys(s3, bucket, prefix):
    return [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for o in page.get("Contents", [])]


def refused_in_a_pool(test, endpoint, bucket):
    """CreateChannel in a fresh pool delivering to `bucket` at `endpoint`: the channel's
    ChannelStatusReason once FAILED."""
    with PgCluster() as pg:
        conninfo = pg.create_database("pool")
        server = Server(config_text=CONFIG, extra_args=["--pg", conninfo, "--s3-endpoint", endpoint]).start()
        try:
            k = server.client()
            k.create_stream(StreamName=bucket, StreamModeDetails={"StreamMode": "ON_DEMAND"})
            k.put_record(StreamName=bucket, Data=b'{"id": "x"}', PartitionKey="p")
            st, body = kinesis_call(server, "CreateChannel",
                                    channel_request(bucket, bucket, bucket=bucket, compression="NONE", freshness=1))
            test.assertEqual(st, 200, body)
            d = wait_channel(server, body["ChannelDescription"]["ChannelARN"], status="FAILED", timeout=60)
            return d.get("ChannelStatusReason", "")
        finally:
            server.stop()
            server.cleanup()


class PoolCreateOnly(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="icestream-createonly-")
        cls.rgw = Rgw().start()
        cls.s3 = cls.rgw.s3()
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = Rgw.access_key, Rgw.secret_key
        cls.config = os.path.join(cls.tmp, "pool.toml")
        with open(cls.config, "w") as f:
            f.write(CONFIG)

    @classmethod
    def tearDownClass(cls):
        cls.rgw.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_a_lost_put_answer_is_recognised_not_written_twice(self):
        self.s3.create_bucket(Bucket="once")
        proxy = FaultProxy(self.rgw.port, fault_rate=0.35, faults=("reset_after",), methods=("PUT",)).start()
        procs, wlog = [], None
        with PgCluster() as pg:
            conninfo = pg.create_database("pool")
            server = Server(config_text=CONFIG, extra_args=["--pg", conninfo, "--s3-endpoint", proxy.endpoint])
            server.start()
            try:
                k = server.client()
                k.create_stream(StreamName="once", StreamModeDetails={"StreamMode": "ON_DEMAND"})
                st, body = kinesis_call(server, "CreateChannel",
                                        channel_request("once", "once", bucket="once", compression="NONE",
                                                        freshness=1))
                self.assertEqual(st, 200, body)
                arn = body["ChannelDescription"]["ChannelARN"]
                wait_channel(server, arn, timeout=60)
                wlog = open(os.path.join(self.tmp, "worker-a.log"), "wb")
                procs.append(subprocess.Popen(
                    [harness.BINARY, "worker", "--pg", conninfo, "--source", server.endpoint, "--s3-endpoint",
                     proxy.endpoint, "--data-dir", os.path.join(self.tmp, "worker-a"), "--listen",
                     f"127.0.0.1:{harness.free_port()}", "--config", self.config, "--log-level", "info"],
                    stdout=wlog, stderr=subprocess.STDOUT))
                stop = threading.Event()

                def produce():
                    n = 0
                    while not stop.is_set():
                        k.put_records(StreamName="once", Records=[
                            {"Data": json.dumps({"id": f"r{n + i}"}).encode(), "PartitionKey": f"k{n + i}"}
                            for i in range(40)])
                        n += 40
                        time.sleep(0.1)

                producer = threading.Thread(target=produce, daemon=True)
                producer.start()
                time.sleep(12)
                stop.set()
                producer.join(30)
                want = sorted(json.loads(d)["id"] for d, _, _ in read_stream(k, "once"))
                deadline = time.time() + 90
                while True:
                    got = sorted(json.loads(line)["id"] for line in bucket_lines(self.s3, "once", "kinesis-channel/once/"))
                    if len(got) >= len(want) or time.time() > deadline:
                        break
                    time.sleep(1)
                self.assertEqual(got, want, "the bucket does not hold every record exactly once")
                self.assertGreater(proxy.counts["reset_after"], 3, "too few lost PUT answers to prove anything")
                writes, refused = {}, 0
                for method, path, status in proxy.forwarded:
                    if method == "PUT" and path.startswith("/once/kinesis-channel/once/"):
                        if status == 200:
                            writes[path] = writes.get(path, 0) + 1
                        refused += status == 412
                self.assertEqual(len(writes), len(bucket_lines_keys(self.s3, "once", "kinesis-channel/once/")))
                self.assertEqual({p: n for p, n in writes.items() if n > 1}, {}, "objects were written twice")
                self.assertGreater(refused, 0, "no retried PUT found its object already there")
                # Both processes delivered (the leases were shared).
                owners = pg.psql("SELECT count(DISTINCT owner) FROM icestream_lease_history "
                                 "WHERE unit LIKE 'shard:%'", "pool")
                self.assertGreaterEqual(int(owners), 2)
            finally:
                for p in procs:
                    p.terminate()
                    p.wait(30)
                if wlog:
                    wlog.close()
                server.stop()
                server.cleanup()
                proxy.stop()

    def test_b_a_store_without_conditional_put_is_refused_in_a_pool(self):
        self.s3.create_bucket(Bucket="plain")
        proxy = FaultProxy(self.rgw.port, fault_rate=0, strip_headers=("if-none-match",),
                           resign=(Rgw.access_key, Rgw.secret_key, REGION)).start()
        try:
            reason = refused_in_a_pool(self, proxy.endpoint, "plain")
            self.assertIn("conditional PUT (If-None-Match: *)", reason)
            self.assertIn("bucket plain", reason)
            self.assertGreater(proxy.stripped, 0)
            self.assertEqual(bucket_lines(self.s3, "plain", "kinesis-channel/plain/"), [], "the pool wrote to the store it refused")
            # One server alone overwrites on replay, so the same store serves it unchanged.
            server = Server(config_text="", extra_args=["--s3-endpoint", proxy.endpoint]).start()
            try:
                k = server.client()
                k.create_stream(StreamName="plain", StreamModeDetails={"StreamMode": "ON_DEMAND"})
                st, body = kinesis_call(server, "CreateChannel",
                                        channel_request("plain", "plain", bucket="plain", compression="NONE",
                                                        freshness=1))
                self.assertEqual(st, 200, body)
                wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)
                k.put_record(StreamName="plain", Data=b'{"id": "y"}', PartitionKey="p")
                deadline = time.time() + 60
                while not bucket_lines(self.s3, "plain", "kinesis-channel/plain/") and time.time() < deadline:
                    time.sleep(0.5)
                self.assertEqual([json.loads(x)["id"] for x in bucket_lines(self.s3, "plain", "kinesis-channel/plain/")], ["y"])
            finally:
                server.stop()
                server.cleanup()
        finally:
            proxy.stop()

    def test_c_a_versioned_radosgw_bucket_is_refused_in_a_pool(self):
        self.s3.create_bucket(Bucket="versioned")
        self.s3.put_bucket_versioning(Bucket="versioned", VersioningConfiguration={"Status": "Enabled"})
        reason = refused_in_a_pool(self, self.rgw.endpoint, "versioned")
        self.assertIn("conditional PUT (If-None-Match: *)", reason)


if __name__ == "__main__":
    unittest.main()

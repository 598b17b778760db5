"""One client's streams must not slow down another's (issue 19, items 8 and 9).

- CreateStream with thousands of shards answers at once (the stream is CREATING while its
  shard logs are made, then ACTIVE) and PutRecord on another stream goes on meanwhile.
- Shards beyond what the process's descriptor limit can hold are refused with
  LimitExceededException, not an internal failure.
- Subscriptions are served from a bounded pool of threads: hundreds of SubscribeToShard
  streams cost a bounded number of server threads, and every subscriber still gets what
  is written to its shard."""

import json
import os
import resource
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from h2raw import H2Client  # noqa: E402
from harness import Server, error_code, sign_request  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402


def threads_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads line")


class LimitedServer(Server):
    """A Server whose process gets RLIMIT_NOFILE (soft, hard) = (n, n)."""

    def __init__(self, nofile, **kw):
        super().__init__(**kw)
        self.nofile = nofile

    def start(self, timeout=20):
        real = subprocess.Popen
        n = self.nofile

        def popen(*a, **k):
            k["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
            return real(*a, **k)

        subprocess.Popen = popen
        try:
            return super().start(timeout)
        finally:
            subprocess.Popen = real


class CreateStreamIsolation(unittest.TestCase):
    def test_big_create_does_not_freeze_other_streams(self):
        srv = Server().start()
        try:
            k = srv.client(read_timeout=120)
            k.create_stream(StreamName="busy", ShardCount=1)
            done = threading.Event()
            answered = {}

            def create():
                t = time.time()
                k2 = srv.client(read_timeout=120)
                k2.create_stream(StreamName="huge", ShardCount=5000)
                answered["create_s"] = time.time() - t
                done.set()

            t = threading.Thread(target=create)
            t.start()
            # While "huge" is CREATING, PutRecord on "busy" is answered.
            puts_while_creating = 0
            saw_creating = False
            deadline = time.time() + 120
            while time.time() < deadline:
                try:
                    status = k.describe_stream_summary(StreamName="huge")["StreamDescriptionSummary"]["StreamStatus"]
                except ClientError as e:
                    self.assertEqual(error_code(e), "ResourceNotFoundException")
                    status = None
                if status == "ACTIVE":
                    break
                if status == "CREATING":
                    saw_creating = True
                    k.put_record(StreamName="busy", PartitionKey="p", Data=b"x")
                    puts_while_creating += 1
                else:
                    time.sleep(0.01)
            t.join()
            self.assertTrue(saw_creating, "the 5000-shard stream was never seen CREATING")
            self.assertGreaterEqual(puts_while_creating, 5, "PutRecord on another stream waited for CreateStream")
            s = k.describe_stream_summary(StreamName="huge")["StreamDescriptionSummary"]
            self.assertEqual((s["StreamStatus"], s["OpenShardCount"]), ("ACTIVE", 5000))
            print(f"CreateStream(5000 shards) answered in {answered['create_s']:.2f} s; "
                  f"{puts_while_creating} PutRecord calls on another stream while it was CREATING")
            # A CREATING stream takes no records (AWS: ResourceNotFoundException), and
            # the created one takes them once ACTIVE.
            k.put_record(StreamName="huge", PartitionKey="p", Data=b"y")
        finally:
            srv.stop()
            srv.cleanup()

    def test_shards_beyond_the_descriptor_limit(self):
        srv = LimitedServer(512)
        try:
            srv.start()
            log = srv.read_log()
            self.assertIn("shard_limit", log)  # announced at start: far fewer shards fit
            k = srv.client()
            limits = k.describe_limits()
            with self.assertRaises(ClientError) as cm:
                k.create_stream(StreamName="toomany", ShardCount=600)
            self.assertEqual(error_code(cm.exception), "LimitExceededException")
            self.assertIn("ulimit -n", cm.exception.response["Error"]["Message"])
            # What fits is created and serves.
            k.create_stream(StreamName="fits", ShardCount=100)
            deadline = time.time() + 30
            while k.describe_stream_summary(StreamName="fits")["StreamDescriptionSummary"]["StreamStatus"] != "ACTIVE":
                self.assertLess(time.time(), deadline)
                time.sleep(0.05)
            k.put_record(StreamName="fits", PartitionKey="p", Data=b"z")
            with self.assertRaises(ClientError) as cm:
                k.create_stream(StreamName="more", ShardCount=min(limits["ShardLimit"], 500))
            self.assertEqual(error_code(cm.exception), "LimitExceededException")

        finally:
            srv.stop()
            srv.cleanup()


class SubscriptionPool(unittest.TestCase):
    def test_many_subscriptions_bounded_threads(self):
        srv = Server().start()
        try:
            k = srv.client()
            streams, consumers = 20, 10  # 200 subscriptions
            arns = {}
            for i in range(streams):
                name = f"s{i}"
                k.create_stream(StreamName=name, ShardCount=1)
                arns[name] = k.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]
            subs = []
            for name, arn in arns.items():
                for j in range(consumers):
                    subs.append((name, k.register_stream_consumer(StreamARN=arn, ConsumerName=f"c{j}")["Consumer"]["ConsumerARN"]))
            time.sleep(1)
            base_threads = threads_of(srv.proc.pid)
            # 100 subscriptions per connection (the stream limit is 128).
            clients, sids = [], {}
            for n, (name, consumer) in enumerate(subs):
                if n % 100 == 0:
                    c = H2Client(srv.port, window=1 << 24)
                    c.send_raw(c._frame(8, 0, 0, (1 << 30).to_bytes(4, "big")))  # connection window
                    clients.append(c)
                data = json.dumps({"ConsumerARN": consumer, "ShardId": "shardId-000000000000",
                                   "StartingPosition": {"Type": "LATEST"}}).encode()
                headers = sign_request(srv.endpoint + "/", body=data, headers={
                    "Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Kinesis_20131202.SubscribeToShard"})
                sids[(c, c.request("/", headers, data))] = name
            time.sleep(2)
            busy_threads = threads_of(srv.proc.pid)
            # Every subscriber of a stream gets what is written to it.
            marks = {}
            for name in arns:
                marks[name] = f"mark-{name}".encode()
                k.put_record(StreamName=name, PartitionKey="p", Data=marks[name])
            import base64
            expect = {key: base64.b64encode(marks[name]) for key, name in sids.items()}

            def got(key):
                cl, sid = key
                return expect[key] in bytes(cl.streams[sid].data)

            deadline = time.time() + 30
            while time.time() < deadline and not all(got(key) for key in sids):
                time.sleep(0.2)
            missing = [sids[key] for key in sids if not got(key)]
            for cl in clients:
                cl.close()
            self.assertFalse(missing, f"{len(missing)} subscriptions missed their record: {missing[:5]}")
            print(f"server threads: {base_threads} before, {busy_threads} with {len(subs)} subscriptions")
            self.assertLess(busy_threads - base_threads, 32,
                            f"{len(subs)} subscriptions took {busy_threads - base_threads} more threads")
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

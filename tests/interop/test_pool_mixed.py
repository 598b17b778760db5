"""A pool whose processes read different endpoints (issue 16): `icestream serve --pg`
delivers a channel on its own stream, and an `icestream worker --source <another server>`
delivers a channel on that other endpoint's stream, both channels in the same PostgreSQL
pool. Each process takes the leases of the channel it can deliver and none of the other's
(the server neither takes nor counts in the share of a channel it cannot read), so both
channels deliver every record exactly once, each entirely by the process that reads it.

A worker that cannot read its source takes no share of the channel (it signs with a wrong
secret: it cannot even describe the stream), or gives its share up once it has failed to
read for RunnerOptions::source_handover_ms, 30 s (it was cut off from its endpoint by a
TCP proxy that resets every connection): the server takes its shards, and every record is
delivered exactly once; neither worker fails anything."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import harness  # noqa: E402
from delivery_check import LocalBucket, decompress  # noqa: E402
from harness import Server, channel_request, kinesis_call  # noqa: E402
from pg import PgCluster  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402

CONFIG = "[scaleout]\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n"


def shared_bucket_ids(test, *roots):
    """The records of one bucket that several processes write as local folders (each its
    own copy): in a pool an object's key is a function of its batch's plan and objects are
    created, never overwritten, so a key written in two folders (a plan replayed by the
    unit's next owner after the first wrote it) must hold the same bytes, and is one object
    of the shared bucket."""
    objects = {}
    for root in roots:
        if not os.path.isdir(root):
            continue
        for key, raw in LocalBucket(root).objects("").items():
            if key.startswith("kinesis-channel/probes/"):
                continue
            test.assertEqual(objects.setdefault(key, raw), raw, f"object {key} written with other bytes")
    return sorted(json.loads(line)["id"] for key, raw in objects.items()
                  for line in decompress(key, raw).splitlines() if line.strip())


def bucket_ids(root):
    if not os.path.isdir(root):
        return []
    return sorted(json.loads(line)["id"] for key, raw in LocalBucket(root).objects("").items()
                  if not key.startswith("kinesis-channel/probes/")
                  for line in decompress(key, raw).splitlines() if line.strip())


def put(k, stream, prefix, n):
    ids = []
    for b in range(0, n, 50):
        recs = [{"Data": json.dumps({"id": f"{prefix}{i}"}).encode(), "PartitionKey": f"k{i}"}
                for i in range(b, min(n, b + 50))]
        r = k.put_records(StreamName=stream, Records=recs)
        assert r["FailedRecordCount"] == 0, r
        ids += [json.loads(x["Data"])["id"] for x in recs]
    return sorted(ids)


class MixedPool(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="icestream-poolmixed-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.config = os.path.join(self.tmp, "pool.toml")
        with open(self.config, "w") as f:
            f.write(CONFIG)
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = "test", "test"

    def wait_ids(self, root, want, what, state):
        deadline, got = time.time() + 90, []
        while time.time() < deadline:
            got = bucket_ids(root)
            if len(got) >= len(want):
                break
            time.sleep(0.5)
        time.sleep(2)  # nothing more arrives after the last record
        got = bucket_ids(root)
        if got != want:
            self.fail(f"{what}: {len(got)} records ({len(set(got))} distinct) of {len(want)}\n{state()}")

    def test_each_process_delivers_the_channels_of_the_endpoint_it_reads(self):
        with PgCluster() as pg:
            conninfo = pg.create_database("pool")
            server = Server(config_text=CONFIG, extra_args=["--pg", conninfo], log_level="info")
            self.addCleanup(server.cleanup)
            self.addCleanup(server.stop)
            server.start()
            far = Server()
            self.addCleanup(far.cleanup)
            self.addCleanup(far.stop)
            far.start()
            k, kf = server.client(), far.client()
            k.create_stream(StreamName="near", StreamModeDetails={"StreamMode": "ON_DEMAND"})
            kf.create_stream(StreamName="far", StreamModeDetails={"StreamMode": "ON_DEMAND"})
            for c, s in ((k, "near"), (kf, "far")):
                c.get_waiter("stream_exists").wait(StreamName=s, WaiterConfig={"Delay": 0.2})
            near_ids = put(k, "near", "n", 600)
            far_ids = put(kf, "far", "f", 600)

            req = channel_request("near-s3", "near", bucket="near-out", freshness=1)
            req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
            st, body = kinesis_call(server, "CreateChannel", req)
            self.assertEqual(st, 200, body)
            near_id = body["ChannelDescription"]["ChannelARN"].rsplit("/", 1)[-1]
            req = channel_request("far-s3", "far", bucket="far-out", freshness=1)
            req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
            p = subprocess.run([harness.BINARY, "channels", "create", "--pg", conninfo, "--source",
                                far.endpoint, "--config", self.config], input=json.dumps(req),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            far_id = json.loads(p.stdout)["ChannelDescription"]["ChannelARN"].rsplit("/", 1)[-1]

            worker_data = os.path.join(self.tmp, "worker")
            log_path = os.path.join(self.tmp, "worker.log")
            log = open(log_path, "ab")
            self.addCleanup(log.close)
            worker = subprocess.Popen(
                [harness.BINARY, "worker", "--pg", conninfo, "--source", far.endpoint, "--data-dir", worker_data,
                 "--listen", f"127.0.0.1:{harness.free_port()}", "--config", self.config, "--log-level", "info"],
                stdout=log, stderr=subprocess.STDOUT)

            def stop_worker():
                if worker.poll() is None:
                    worker.terminate()
                    worker.wait(30)
            self.addCleanup(stop_worker)

            def state():
                with open(log_path, "rb") as f:
                    wlog = f.read().decode(errors="replace")
                rows = []
                for table in ("icestream_lease", "icestream_interest", "icestream_worker"):
                    try:
                        rows.append(f"{table}:\n{pg.psql(f'TABLE {table}', dbname='pool')}")
                    except RuntimeError as e:  # a diagnostic: the failure is reported anyway
                        rows.append(f"{table}: {e}")
                return "\n".join(rows) + f"\nworker log (end):\n{wlog[-4000:]}"

            self.wait_ids(os.path.join(server.data_dir, "buckets", "near-out"), near_ids,
                          "the server's own stream", state)
            self.wait_ids(os.path.join(worker_data, "buckets", "far-out"), far_ids,
                          "the other endpoint's stream, by the worker", state)
            self.assertFalse(os.path.exists(os.path.join(server.data_dir, "buckets", "far-out")))
            self.assertFalse(os.path.exists(os.path.join(worker_data, "buckets", "near-out")))

            # Every unit of each channel is held by the process that reads its stream.
            owners = {}
            for line in pg.psql("SELECT l.channel_id || '|' || w.pid FROM icestream_lease l JOIN "
                                "icestream_worker w ON w.worker_id = l.owner WHERE l.expires_at > "
                                "clock_timestamp()", dbname="pool").split():
                ch, pid = line.split("|")
                owners.setdefault(ch, set()).add(int(pid))
            self.assertEqual(owners.get(near_id), {server.proc.pid}, state())
            self.assertEqual(owners.get(far_id), {worker.pid}, state())
            units = pg.psql(f"SELECT count(*) FROM icestream_lease WHERE channel_id = '{far_id}'",
                            dbname="pool").strip()
            self.assertEqual(int(units), 5)  # 4 shards and the control unit, all on the worker


    def test_a_worker_that_cannot_read_its_source_leaves_its_share_to_the_others(self):
        key, secret = "test", "test"  # what the harness's clients sign with
        config = os.path.join(self.tmp, "server.toml")
        with open(config, "w") as f:
            f.write(f'[[credentials]]\naccess_key_id = "{key}"\nsecret_access_key = "{secret}"\n' + CONFIG)
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = key, secret
        with PgCluster() as pg:
            conninfo = pg.create_database("pool")
            server = Server(extra_args=["--pg", conninfo, "--config", config], log_level="info")
            self.addCleanup(server.cleanup)
            self.addCleanup(server.stop)
            server.start()
            k = server.client()
            k.create_stream(StreamName="s", StreamModeDetails={"StreamMode": "ON_DEMAND"})
            k.get_waiter("stream_exists").wait(StreamName="s", WaiterConfig={"Delay": 0.2})
            # A worker reading the server through a TCP proxy that the test can cut.
            proxy = TcpProxy(server.port)
            proxy.start()
            self.addCleanup(proxy.stop)

            def worker(name, source, **env):
                log = open(os.path.join(self.tmp, f"{name}.log"), "ab")
                self.addCleanup(log.close)
                p = subprocess.Popen(
                    [harness.BINARY, "worker", "--pg", conninfo, "--source", source, "--data-dir",
                     os.path.join(self.tmp, name), "--listen", f"127.0.0.1:{harness.free_port()}", "--config",
                     self.config, "--log-level", "info"], stdout=log, stderr=subprocess.STDOUT,
                    env=dict(os.environ, **env))

                def stop():
                    if p.poll() is None:
                        p.terminate()
                        p.wait(30)
                self.addCleanup(stop)
                return p

            cut = worker("cut", f"http://127.0.0.1:{proxy.port}")
            # Signs with a wrong secret: cannot even describe the stream.
            bad = worker("bad", server.endpoint, AWS_SECRET_ACCESS_KEY="not-the-secret")

            req = channel_request("s3", "s", bucket="out", freshness=1)
            req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
            st, body = kinesis_call(server, "CreateChannel", req)
            self.assertEqual(st, 200, body)
            ids = put(k, "s", "a", 400)

            def held_by(p):
                return int(pg.psql(f"SELECT count(*) FROM icestream_lease l JOIN icestream_worker w ON "
                                   f"w.worker_id = l.owner WHERE w.pid = {p.pid} AND l.expires_at > "
                                   f"clock_timestamp()", dbname="pool"))

            def state():
                logs = ""
                for name in ("cut", "bad"):
                    with open(os.path.join(self.tmp, f"{name}.log"), "rb") as f:
                        logs += f"\n{name} worker log (end):\n" + f.read().decode(errors="replace")[-3000:]
                return f"icestream_lease:\n{pg.psql('TABLE icestream_lease', dbname='pool')}{logs}"

            deadline = time.time() + 30
            while time.time() < deadline and held_by(cut) == 0:
                time.sleep(0.3)
            self.assertGreater(held_by(cut), 0, "the worker never took its share: " + state())
            out = os.path.join(server.data_dir, "buckets", "out")
            out_cut = os.path.join(self.tmp, "cut", "buckets", "out")
            deadline = time.time() + 60
            while time.time() < deadline and len(shared_bucket_ids(self, out, out_cut)) < len(ids):
                time.sleep(0.5)
            self.assertEqual(held_by(bad), 0, "a worker that cannot read the source took leases: " + state())

            # The worker is cut off from its endpoint: records put now on its shards are
            # delivered once it has given them up (after 30 s), by the server.
            proxy.set_mode("reset")
            ids += put(k, "s", "b", 400)
            deadline, got = time.time() + 90, []
            while time.time() < deadline:
                got = shared_bucket_ids(self, out, out_cut)
                if len(got) >= len(ids):
                    break
                time.sleep(0.5)
            time.sleep(2)
            got = shared_bucket_ids(self, out, out_cut)
            if got != sorted(ids):
                self.fail(f"{len(got)} records ({len(set(got))} distinct) of {len(ids)}\n{state()}")
            self.assertEqual(held_by(cut), 0, state())
            self.assertEqual(held_by(bad), 0, state())
            for p, name in ((cut, "cut"), (bad, "bad")):
                self.assertIsNone(p.poll(), f"the {name} worker exited")
                with open(os.path.join(self.tmp, f"{name}.log"), "rb") as f:
                    self.assertNotIn(b"FAILED", f.read())
            with open(os.path.join(self.tmp, "cut.log"), "rb") as f:
                self.assertIn(b"handed to the pool", f.read())

if __name__ == "__main__":
    unittest.main(verbosity=2)

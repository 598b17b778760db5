"""Channels created with `icestream channels create --pg` in a pool that has an `icestream
serve --pg` in it (issue 16).

1. A channel on a stream of that server (the command's --source is the server): the server
   recognises its own stream by the channel's stream ARN and creation time and delivers it
   from its logs, with no worker in the pool; every record lands in its bucket exactly once.
   It is the stream's S3 channel: a second one is refused, through the server's API and
   through the command (LimitExceededException).
2. A channel on another endpoint's stream (a second icestream server outside the pool, as
   a pool's workers may read AWS Kinesis beside the server): the pool's server neither
   delivers nor fails it; it stays CREATING for a worker that reads that endpoint, and the
   server logs that it is left to the pool.
3. Without a source (no --source, no [scaleout] source): against a pool whose worker reads
   kinesalite, `channels list|describe|update|resume|delete` work from the pool's database
   alone (the conninfo given only as [scaleout] pg of --config), `list --stream-name` too;
   `describe` shows each shard's owner, epoch and checkpoint but no lag, and with the source
   named in [scaleout] source (no flag) the lag as well. `create` without a source is
   refused with an AWS-shaped error that names --source; with it, it works."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import harness  # noqa: E402
from delivery_check import LocalBucket, decompress  # noqa: E402
from harness import Kinesalite, Server, channel_request, kinesis_call  # noqa: E402
from pg import PgCluster  # noqa: E402

CONFIG = "[scaleout]\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n"


def bucket_ids(root):
    """The records of the bucket's data objects (not a pool's conditional-PUT probe, which
    lives under kinesis-channel/probes/ for a moment)."""
    if not os.path.isdir(root):
        return []
    return sorted(json.loads(line)["id"] for key, raw in LocalBucket(root).objects("").items()
                  if not key.startswith("kinesis-channel/probes/")
                  for line in decompress(key, raw).splitlines() if line.strip())


def pool_state(pg, server):
    """What a failure needs to be read: the pool's rows (leases, workers, checkpoints and plans)
    and the server's log lines about delivery."""
    rows = []
    for table in ("icestream_lease", "icestream_worker", "icestream_checkpoints", "icestream_plans"):
        try:
            rows.append(f"{table}:\n{pg.psql(f'TABLE {table}', dbname='pool')}")
        except Exception as e:  # noqa: BLE001 (a diagnostic: the failure is reported anyway)
            rows.append(f"{table}: {e}")
    # Lines about channels and leases, and every warning and error (the log's level letter
    # follows the timestamp: "…Z W [thread] …").
    log = [line for line in server.read_log().splitlines()
           if "channel" in line or "lease" in line or " W [" in line or " E [" in line]
    return "\n".join(rows) + "\nserver log (delivery lines):\n" + "\n".join(log[-150:])


def put(k, stream, prefix, n):
    ids = []
    for b in range(0, n, 50):
        recs = [{"Data": json.dumps({"id": f"{prefix}{i}"}).encode(), "PartitionKey": f"k{i}"}
                for i in range(b, min(n, b + 50))]
        r = k.put_records(StreamName=stream, Records=recs)
        assert r["FailedRecordCount"] == 0, r
        ids += [json.loads(x["Data"])["id"] for x in recs]
    return sorted(ids)


class PoolCliChannel(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="icestream-poolcli-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.config = os.path.join(self.tmp, "pool.toml")
        with open(self.config, "w") as f:
            f.write(CONFIG)
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = "test", "test"

    def cli(self, conninfo, source, *args, stdin=None):
        p = subprocess.run([harness.BINARY, "channels", *args, "--pg", conninfo, "--source", source,
                            "--config", self.config], input=stdin, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def describe(self, conninfo, source, name):
        code, out, err = self.cli(conninfo, source, "describe", "--channel-name", name)
        self.assertEqual(code, 0, err)
        return json.loads(out)["ChannelDescription"]

    def test_the_pools_server_delivers_its_own_streams_and_leaves_the_others(self):
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
            near_ids = put(k, "near", "n", 400)
            far_ids = put(kf, "far", "f", 300)

            # 1. The server's own stream, channel made through the Kinesis API: no worker.
            req = channel_request("near-s3", "near", bucket="near-out", freshness=1)
            req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
            code, out, err = self.cli(conninfo, server.endpoint, "create", stdin=json.dumps(req))
            self.assertEqual(code, 0, err)
            # 2. Another endpoint's stream in the same pool.
            req = channel_request("far-s3", "far", bucket="far-out", freshness=1)
            req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
            code, out, err = self.cli(conninfo, far.endpoint, "create", stdin=json.dumps(req))
            self.assertEqual(code, 0, err)

            near_root = os.path.join(server.data_dir, "buckets", "near-out")
            deadline, got = time.time() + 60, []
            while time.time() < deadline:
                got = bucket_ids(near_root)
                if len(got) >= len(near_ids):
                    break
                time.sleep(0.5)
            time.sleep(2)  # nothing more arrives after the last record
            got = bucket_ids(near_root)
            if got != near_ids:
                self.fail(f"the server did not deliver its own stream exactly once: {len(got)} records "
                          f"({len(set(got))} distinct) of {len(near_ids)}\n" + pool_state(pg, server))
            self.assertEqual(self.describe(conninfo, server.endpoint, "near-s3")["ChannelStatus"], "ACTIVE")
            # One channel per destination type and stream, whichever way the first was made.
            st, body = kinesis_call(server, "CreateChannel", channel_request("near-s3-again", "near",
                                                                             bucket="near-out-2"))
            self.assertEqual((st, body.get("__type")), (400, "LimitExceededException"), body)
            code, out, err = self.cli(conninfo, server.endpoint, "create",
                                      stdin=json.dumps(channel_request("near-s3-cli", "near", bucket="near-out-3")))
            self.assertEqual(code, 1, out)
            self.assertIn("LimitExceededException", err)

            d = self.describe(conninfo, far.endpoint, "far-s3")
            self.assertEqual(d["ChannelStatus"], "CREATING", d)
            self.assertIn("left to the pool", server.read_log())
            self.assertFalse(os.path.exists(os.path.join(server.data_dir, "buckets", "far-out")))

    def test_channels_without_a_source(self):
        kl = Kinesalite().start()
        self.addCleanup(kl.stop)
        import boto3
        k = boto3.client("kinesis", endpoint_url=kl.endpoint, region_name=harness.REGION,
                         aws_access_key_id="test", aws_secret_access_key="test")
        k.create_stream(StreamName="kl", ShardCount=2)
        with PgCluster() as pg:
            conninfo = pg.create_database("pool")
            rows_only = os.path.join(self.tmp, "rows.toml")  # the pool, no source
            with open(rows_only, "w") as f:
                f.write(f'[scaleout]\npg = "{conninfo}"\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n')
            with_source = os.path.join(self.tmp, "source.toml")
            with open(with_source, "w") as f:
                f.write(f'[scaleout]\npg = "{conninfo}"\nsource = "{kl.endpoint}"\n')

            def cli(config, *args, stdin=None):
                p = subprocess.run([harness.BINARY, "channels", *args, "--config", config], input=stdin,
                                   capture_output=True, text=True, timeout=60)
                return p.returncode, p.stdout, p.stderr

            def describe(config=rows_only):
                code, out, err = cli(config, "describe", "--channel-name", "kl-s3")
                self.assertEqual(code, 0, err)
                return json.loads(out)["ChannelDescription"]

            def wait(status, timeout=60):
                deadline, d = time.time() + timeout, None
                while time.time() < deadline:
                    d = describe()
                    if d["ChannelStatus"] == status:
                        return d
                    time.sleep(0.3)
                self.fail(f"kl-s3 did not reach {status}: {d}")

            req = channel_request("kl-s3", "kl", bucket="out", compression="NONE", freshness=1)
            req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
            # CreateChannel checks the stream at the source: without one it says what to pass.
            code, out, err = cli(rows_only, "create", stdin=json.dumps(req))
            self.assertEqual(code, 1, out)
            error = json.loads(err)
            self.assertEqual(error["__type"], "InvalidArgumentException", error)
            self.assertIn("--source", error["message"])
            self.assertIn("[scaleout]", error["message"])
            code, out, err = cli(rows_only, "create", "--source", kl.endpoint, stdin=json.dumps(req))
            self.assertEqual(code, 0, err)

            wlog = open(os.path.join(self.tmp, "worker.log"), "ab")
            self.addCleanup(wlog.close)
            worker_data = os.path.join(self.tmp, "worker")
            port = harness.free_port()
            w = subprocess.Popen([harness.BINARY, "worker", "--config", with_source, "--data-dir", worker_data,
                                  "--listen", f"127.0.0.1:{port}", "--log-level", "info"],
                                 stdout=wlog, stderr=subprocess.STDOUT)

            def stop_worker():
                if w.poll() is None:
                    w.terminate()
                    w.wait(30)
            self.addCleanup(stop_worker)
            wait("ACTIVE")
            for i in range(0, 200, 50):
                k.put_records(StreamName="kl", Records=[{"Data": json.dumps({"id": f"r{j}"}).encode(),
                                                         "PartitionKey": f"k{j}"} for j in range(i, i + 50)])
            shards = [s["ShardId"] for s in k.list_shards(StreamName="kl")["Shards"]]
            deadline, status = time.time() + 60, {}
            while time.time() < deadline:
                status = {s["ShardId"]: s for s in describe()["IcestreamStatus"]["Shards"]}
                if sorted(status) == sorted(shards) and all(
                        "Owner" in s and "LastCommittedSequenceNumber" in s for s in status.values()):
                    break
                time.sleep(0.5)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                worker = json.loads(r.read())["worker"]
            self.assertEqual(sorted(status), sorted(shards), status)
            for sh in shards:
                self.assertEqual(status[sh].get("Owner"), worker, status)
                self.assertGreaterEqual(status[sh].get("Epoch", 0), 1, status)
                self.assertIn("LastCommittedSequenceNumber", status[sh], status)
                # No endpoint, no lag: the fields are left out rather than guessed.
                for lag in ("LagSeconds", "MillisBehindLatest", "LagRecords"):
                    self.assertNotIn(lag, status[sh], status)
            # The source named in [scaleout] source: the lag too.
            with_lag = {s["ShardId"]: s for s in describe(with_source)["IcestreamStatus"]["Shards"]}
            for sh in shards:
                self.assertIn("LagSeconds", with_lag[sh], with_lag)
                self.assertIn("MillisBehindLatest", with_lag[sh], with_lag)

            code, out, err = cli(rows_only, "list")
            self.assertEqual(code, 0, err)
            self.assertEqual([c["ChannelName"] for c in json.loads(out)["ChannelSummaries"]], ["kl-s3"])
            code, out, err = cli(rows_only, "list", "--stream-name", "kl")
            self.assertEqual(code, 0, err)
            self.assertEqual([c["ChannelName"] for c in json.loads(out)["ChannelSummaries"]], ["kl-s3"])
            code, out, err = cli(rows_only, "list", "--stream-name", "other")
            self.assertEqual(code, 0, err)
            self.assertEqual(json.loads(out)["ChannelSummaries"], [])

            arn = describe()["ChannelARN"]
            code, out, err = cli(rows_only, "update", stdin=json.dumps(
                {"ChannelARN": arn, "S3DestinationConfiguration": {"DataFreshnessInSeconds": 2}}))
            self.assertEqual(code, 0, err)
            d = wait("ACTIVE")
            self.assertEqual(d["S3DestinationConfiguration"]["DataFreshnessInSeconds"], 2)

            # Resume is the API's own answer: an ACTIVE channel is not FAILED...
            code, out, err = cli(rows_only, "resume", "--channel-name", "kl-s3")
            self.assertEqual(code, 1, out)
            self.assertEqual(json.loads(err)["__type"], "ResourceInUseException", err)
            # ...and a FAILED one (its stream deleted at the source) delivers again.
            k.delete_stream(StreamName="kl")
            wait("FAILED")
            code, out, err = cli(rows_only, "resume", "--channel-name", "kl-s3")
            self.assertEqual(code, 0, err)
            self.assertEqual(json.loads(out)["ChannelDescription"]["ChannelStatus"], "ACTIVE", out)

            code, out, err = cli(rows_only, "delete", "--channel-name", "kl-s3")
            self.assertEqual(code, 0, err)
            deadline = time.time() + 30
            while time.time() < deadline:
                code, out, err = cli(rows_only, "list")
                if not json.loads(out)["ChannelSummaries"]:
                    break
                time.sleep(0.3)
            self.assertEqual(json.loads(out)["ChannelSummaries"], [], "the worker did not finish the deletion")
            stop_worker()


if __name__ == "__main__":
    unittest.main(verbosity=2)

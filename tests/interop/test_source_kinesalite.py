"""The Kinesis source against endpoints that are not icestream (issue 16), black-box:

1. kinesalite (npm) as a pool's source: the channel is created with `icestream channels
   create --pg … --source <kinesalite>` (the rows go into the pool's PostgreSQL; the stream
   is checked against kinesalite), listed and described the same way; an `icestream worker`
   delivers a 2-shard stream, one of whose shards is split while a producer writes, into an
   S3 bucket: every record exactly once, children after their parents; the records came as
   CBOR (kinesalite speaks it) until an answer outgrew the 16 KiB at which kinesalite cuts
   its CBOR answers, then in JSON. Bad requests get the CreateChannel API's AWS-shaped errors
   (a missing stream: ResourceNotFoundException; a missing role: ValidationException).
   `channels describe --pg` shows each open shard's owner, epoch and lag.
   `channels delete --pg` marks the channel DELETING and the worker finishes the deletion.
1b. kinesalite as the source of a streaming-table channel, its schema read from another
   icestream server's Glue API ([scaleout] registry of the command's and the worker's
   --config; without it `channels create` is refused with an error naming --registry and
   [scaleout] registry, as kinesalite has no Glue API): a 2-shard stream, one shard split while a
   producer writes, invalid records among the valid ones. Every valid record is a row
   exactly once (the independent reader, icebird + DuckDB, on the metadata file that the
   pool's JDBC-catalog row points at), every invalid one is in the dead-letter queue, and
   the table's snapshots checkpoint the children only after their parents.
2. moto's Kinesis answers CBOR with a 500: the worker falls back to JSON 1.1 and delivers.
3. A worker against `icestream serve --aws-strict` (GetRecords at most 5/s per shard, 2 MiB/s),
   with other readers spending the shards' budget: the throttling answers are backed off
   and nothing is lost or doubled.
4. A lone worker ([scaleout] pace_reads) delivering a 34 MB backlog from `serve --aws-strict`,
   killed (-9) half way and started again (its planned batches are read again directly
   while the shards' readers start over): not one of its GetRecords or GetShardIterator
   calls is throttled (the server's icestream_api_requests_total with error_code
   ProvisionedThroughputExceededException stays 0), and every record is delivered once."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import re
import signal
import time
import unittest
import urllib.request

import boto3

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import harness  # noqa: E402
from delivery_check import LocalBucket, decompress  # noqa: E402
from harness import REGION, Kinesalite, Moto, Server, channel_request, read_stream  # noqa: E402
from pg import PgCluster  # noqa: E402
from table_check import (assert_children_after_parents, dlq_lines, read_table, register_schema,  # noqa: E402
                         table_channel_request)

CONFIG = "[scaleout]\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n"


def kinesis(endpoint):
    return boto3.client("kinesis", endpoint_url=endpoint, region_name=REGION, aws_access_key_id="test",
                        aws_secret_access_key="test")


def channels_cli(*args, stdin=None):
    p = subprocess.run([harness.BINARY, "channels", *args], input=stdin, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def bucket_records(root):
    bucket = LocalBucket(root)
    return [json.loads(line) for key, raw in bucket.objects("").items()
            for line in decompress(key, raw).splitlines() if line.strip()]


class Pool:
    """A PostgreSQL pool database and one worker reading `source`."""

    def __init__(self, test, pg, source, tmp, conninfo=None, data=None, registry=None, config=""):
        """`registry` is given as --registry; `config` is added to the [scaleout] section."""
        self.conninfo = conninfo or pg.create_database(f"pool{harness.free_port()}")
        self.source = source
        self.extra = ["--registry", registry] if registry else []
        self.config = os.path.join(tmp, "pool.toml")
        with open(self.config, "w") as f:
            f.write(CONFIG + config)
        self.data = data or os.path.join(tmp, "worker")
        self.log_path = os.path.join(tmp, "worker.log")
        self.port = harness.free_port()
        self.proc = None
        self.test = test

    def cli(self, *args, stdin=None):
        return channels_cli(*args, "--pg", self.conninfo, "--source", self.source, "--config", self.config,
                            *self.extra, stdin=stdin)

    def start_worker(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [harness.BINARY, "worker", "--pg", self.conninfo, "--source", self.source, "--data-dir", self.data,
             "--listen", f"127.0.0.1:{self.port}", "--config", self.config, "--log-level", "info"] + self.extra,
            stdout=self.log, stderr=subprocess.STDOUT)

    def stop_worker(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
            self.log.close()

    def worker_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def describe(self, name):
        code, out, err = self.cli("describe", "--channel-name", name)
        self.test.assertEqual(code, 0, err)
        return json.loads(out)["ChannelDescription"]

    def wait_status(self, name, status, timeout=60):
        deadline = time.time() + timeout
        d = None
        while time.time() < deadline:
            d = self.describe(name)
            if d["ChannelStatus"] == status:
                return d
            time.sleep(0.3)
        self.test.fail(f"channel {name} did not reach {status}: {d}")


def produce(k, stream, stop, prefix, sent):
    n = 0
    while not stop.is_set():
        recs = [{"Data": json.dumps({"id": f"{prefix}{n + i}"}).encode(), "PartitionKey": f"k{n + i}"}
                for i in range(25)]
        r = k.put_records(StreamName=stream, Records=recs)
        sent += [json.loads(x["Data"])["id"] for x, res in zip(recs, r["Records"]) if "ErrorCode" not in res]
        n += 25
        time.sleep(0.1)


class SourceSuite(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="icestream-srcsuite-")
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = "test", "test"

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_a_kinesalite_stream_with_a_split_is_delivered_exactly_once(self):
        kl = Kinesalite().start()
        try:
            k = kinesis(kl.endpoint)
            k.create_stream(StreamName="kl", ShardCount=2)
            with PgCluster() as pg:
                pool = Pool(self, pg, kl.endpoint, self.tmp)
                # The API's validation and error shapes, answered from the pool's side.
                code, _, err = pool.cli("create", stdin=json.dumps(channel_request("nope", "no-such-stream",
                                                                                   bucket="out")))
                self.assertEqual(code, 1)
                self.assertEqual(json.loads(err)["__type"], "ResourceNotFoundException", err)
                bad = channel_request("bad", "kl", bucket="out")
                del bad["ServiceExecutionRoleARN"]
                code, _, err = pool.cli("create", stdin=json.dumps(bad))
                self.assertEqual(code, 1)
                self.assertEqual(json.loads(err)["__type"], "ValidationException", err)

                req = channel_request("kl-s3", "kl", bucket="out", compression="GZIP", freshness=1)
                req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
                code, out, err = pool.cli("create", stdin=json.dumps(req))
                self.assertEqual(code, 0, err)
                self.assertEqual(json.loads(out)["ChannelDescription"]["ChannelStatus"], "CREATING")
                code, out, err = pool.cli("list")
                self.assertEqual(code, 0, err)
                self.assertEqual([c["ChannelName"] for c in json.loads(out)["ChannelSummaries"]], ["kl-s3"])
                # A second S3 channel on the same stream is refused as the API refuses it.
                code, _, err = pool.cli("create", stdin=json.dumps(channel_request("kl-s3-2", "kl", bucket="out")))
                self.assertEqual(code, 1)
                self.assertIn(json.loads(err)["__type"], ("LimitExceededException", "ResourceInUseException"), err)

                pool.start_worker()
                self.addCleanup(pool.stop_worker)  # also when an assertion fails
                pool.wait_status("kl-s3", "ACTIVE")
                stop, sent = threading.Event(), []
                t = threading.Thread(target=produce, args=(k, "kl", stop, "a", sent), daemon=True)
                t.start()
                time.sleep(3)
                shard = k.list_shards(StreamName="kl")["Shards"][0]
                lo, hi = int(shard["HashKeyRange"]["StartingHashKey"]), int(shard["HashKeyRange"]["EndingHashKey"])
                k.split_shard(StreamName="kl", ShardToSplit=shard["ShardId"], NewStartingHashKey=str((lo + hi) // 2))
                time.sleep(5)
                stop.set()
                t.join(30)
                everything = read_stream(k, "kl")
                self.assertEqual(len(k.list_shards(StreamName="kl")["Shards"]), 4, "the split did not happen")
                want = sorted(json.loads(d)["id"] for d, _, _ in everything)
                self.assertEqual(want, sorted(sent))
                root = os.path.join(pool.data, "buckets", "out")
                deadline = time.time() + 60
                while True:
                    got = sorted(r["id"] for r in bucket_records(root))
                    if len(got) >= len(want) or time.time() > deadline:
                        break
                    time.sleep(0.5)
                self.assertEqual(got, want, "the bucket does not hold every record exactly once:\n" +
                                 pool.worker_log()[-6000:] + json.dumps(pool.describe("kl-s3"))[:3000])
                # DescribeChannel answered from the pool's side (the CLI delivers nothing)
                # shows who holds each open shard, under which epoch, and how far behind it is.
                with urllib.request.urlopen(f"http://127.0.0.1:{pool.port}/health", timeout=5) as r:
                    worker = json.loads(r.read())["worker"]
                open_shards = [s["ShardId"] for s in k.list_shards(StreamName="kl")["Shards"]
                               if "EndingSequenceNumber" not in s["SequenceNumberRange"]]
                status = {s["ShardId"]: s for s in pool.describe("kl-s3")["IcestreamStatus"]["Shards"]}
                self.assertEqual(len(open_shards), 3)
                for sh in open_shards:
                    self.assertEqual(status[sh].get("Owner"), worker, status)
                    self.assertGreaterEqual(status[sh].get("Epoch", 0), 1, status)
                    self.assertIn("LagSeconds", status[sh], status)
                    self.assertIn("MillisBehindLatest", status[sh], status)
                # Children after their parents: every shard's finished mark is in the pool's
                # database, the parent's before its children's.
                finished = pg.psql("SELECT count(*) FROM icestream_finished", pool.conninfo.split("dbname=")[-1].split()[0])
                self.assertGreaterEqual(int(finished), 1, "the split parent was never marked finished")
                text = pool.worker_log()
                self.assertIn("answers GetRecords in CBOR", text)
                # kinesalite cuts CBOR answers at 16 KiB (its encoder's buffer): the source
                # notices, reads that answer again in JSON and stays with JSON.
                self.assertNotIn("does not answer GetRecords in CBOR", text)

                code, out, err = pool.cli("delete", "--channel-name", "kl-s3")
                self.assertEqual(code, 0, err)
                deadline = time.time() + 30
                while time.time() < deadline:
                    code, out, _ = pool.cli("list")
                    if not json.loads(out)["ChannelSummaries"]:
                        break
                    time.sleep(0.3)
                self.assertEqual(json.loads(out)["ChannelSummaries"], [], "the worker did not finish the deletion")
                pool.stop_worker()
        finally:
            kl.stop()

    def test_a2_a_kinesalite_stream_into_a_streaming_table(self):
        schema = {"type": "object", "required": ["id", "t"],
                  "properties": {"id": {"type": "string"}, "t": {"type": "string", "format": "date-time"},
                                 "n": {"type": "integer"}}}
        kl = Kinesalite().start()
        registry = Server(config_text="").start()  # only its Glue API: the schema's versions
        try:
            arn, _ = register_schema(registry.client("glue"), "reg", "events", schema)
            k = kinesis(kl.endpoint)
            k.create_stream(StreamName="kt", ShardCount=2)
            sent, bad = [], []

            def put(prefix, count, invalid_every=0):
                recs = []
                for i in range(count):
                    key = f"{prefix}{i}"
                    if invalid_every and i % invalid_every == 0:
                        recs.append(({"id": key, "n": "not a number"}, key, False))  # no t, n not an integer
                    else:
                        recs.append(({"id": key, "t": "2026-06-01T08:%02d:00Z" % (i % 60), "n": i}, key, True))
                for j in range(0, len(recs), 100):
                    chunk = recs[j:j + 100]
                    r = k.put_records(StreamName="kt", Records=[{"Data": json.dumps(d).encode(), "PartitionKey": key}
                                                                 for d, key, _ in chunk])
                    self.assertEqual(r["FailedRecordCount"], 0)
                    for (d, key, ok), res in zip(chunk, r["Records"]):
                        if ok:
                            sent.append(key)
                        else:
                            bad.append(res["SequenceNumber"])

            put("a", 600, invalid_every=50)  # a backlog before the channel exists
            with PgCluster() as pg:
                req = table_channel_request("kl-table", "kt", arn, "tables", "ns", "events", "dlq", freshness=1,
                                            partition="t", start="TRIM_HORIZON")
                # The registry is the source unless given, and kinesalite has no Glue API: the
                # refusal says what to pass.
                bare = Pool(self, pg, kl.endpoint, self.tmp)
                code, out, err = bare.cli("create", stdin=json.dumps(req))
                self.assertEqual(code, 1, out)
                error = json.loads(err)
                self.assertEqual(error["__type"], "InvalidArgumentException", error)
                for words in ("Glue", "--registry", "[scaleout]", kl.endpoint):
                    self.assertIn(words, error["message"])
                # The registry named in the configuration's [scaleout] section (no flag), for
                # the command and for the worker.
                pool = Pool(self, pg, kl.endpoint, self.tmp, conninfo=bare.conninfo,
                            config=f'registry = "{registry.endpoint}"\n')
                code, out, err = pool.cli("create", stdin=json.dumps(req))
                self.assertEqual(code, 0, err)
                pool.start_worker()
                self.addCleanup(pool.stop_worker)  # also when an assertion fails
                pool.wait_status("kl-table", "ACTIVE")
                put("b", 300)
                shard = k.list_shards(StreamName="kt")["Shards"][0]
                lo, hi = int(shard["HashKeyRange"]["StartingHashKey"]), int(shard["HashKeyRange"]["EndingHashKey"])
                k.split_shard(StreamName="kt", ShardToSplit=shard["ShardId"], NewStartingHashKey=str((lo + hi) // 2))
                deadline = time.time() + 30
                while time.time() < deadline and len(k.list_shards(StreamName="kt")["Shards"]) < 4:
                    time.sleep(0.2)
                self.assertEqual(len(k.list_shards(StreamName="kt")["Shards"]), 4, "the split did not happen")
                put("c", 400, invalid_every=100)
                everything = read_stream(k, "kt")
                self.assertEqual(len(everything), len(sent) + len(bad))

                db = pool.conninfo.split("dbname=")[-1].split()[0]
                t, location = None, None
                deadline = time.time() + 90
                while time.time() < deadline:
                    location = pg.psql("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = 'tables' "
                                       "AND table_namespace = 'ns' AND table_name = 'events'", db) or None
                    if location:
                        t = read_table(metadata_location=location)
                        if len(t.get("rows", [])) >= len(sent):
                            break
                    time.sleep(1)
                self.assertIsNotNone(location, "the table never appeared in the pool's catalog:\n" +
                                     pool.worker_log()[-6000:])
                self.assertEqual(sorted(r["id"] for r in t["rows"]), sorted(sent),
                                 "the table does not hold every valid record exactly once:\n" +
                                 pool.worker_log()[-6000:])
                dlq = LocalBucket(os.path.join(pool.data, "buckets", "dlq"))
                deadline = time.time() + 30
                while time.time() < deadline and len(dlq_lines(dlq)) < len(bad):
                    time.sleep(0.5)
                self.assertEqual(sorted(e["sequenceNumber"] for _, e in dlq_lines(dlq)), sorted(bad),
                                 "the invalid records are not each once in the dead-letter queue")
                assert_children_after_parents(self, k.list_shards(StreamName="kt")["Shards"], everything,
                                              t["snapshots"], min_children=2)
                pool.stop_worker()
        finally:
            registry.stop()
            registry.cleanup()
            kl.stop()

    def test_b_moto_without_cbor_is_read_in_json(self):
        moto = Moto().start()
        try:
            k = kinesis(moto.endpoint)
            k.create_stream(StreamName="mo", StreamModeDetails={"StreamMode": "ON_DEMAND"})
            with PgCluster() as pg:
                pool = Pool(self, pg, moto.endpoint, self.tmp)
                req = channel_request("mo-s3", "mo", bucket="out", compression="NONE", freshness=1)
                req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
                for i in range(0, 200, 50):
                    k.put_records(StreamName="mo", Records=[{"Data": json.dumps({"id": f"m{j}"}).encode(),
                                                             "PartitionKey": f"k{j}"} for j in range(i, i + 50)])
                code, _, err = pool.cli("create", stdin=json.dumps(req))
                self.assertEqual(code, 0, err)
                pool.start_worker()
                self.addCleanup(pool.stop_worker)  # also when an assertion fails
                root = os.path.join(pool.data, "buckets", "out")
                deadline = time.time() + 60
                while time.time() < deadline and len(bucket_records(root)) < 200:
                    time.sleep(0.5)
                pool.stop_worker()
                self.assertEqual(sorted(r["id"] for r in bucket_records(root)), sorted(f"m{j}" for j in range(200)))
                self.assertIn("does not answer GetRecords in CBOR", pool.worker_log())
        finally:
            moto.stop()

    def test_d_a_lone_worker_stays_within_the_shards_read_limits(self):
        with PgCluster() as pg:
            # The backlog is written before the server turns strict (it would take 1,000
            # records/s per shard): 80,000 records of ~420 bytes, ~8 MB per shard, so a
            # shard's reads (10,000 records, ~4 MB each) outrun its 2 MiB/s unless paced.
            server = Server(config_text="")
            self.addCleanup(server.cleanup)
            self.addCleanup(server.stop)
            server.start()
            k = server.client()
            k.create_stream(StreamName="lim", StreamModeDetails={"StreamMode": "ON_DEMAND"})
            k.get_waiter("stream_exists").wait(StreamName="lim", WaiterConfig={"Delay": 0.2})
            sent, pad = [], "x" * 400
            for b in range(0, 80000, 500):
                recs = [{"Data": json.dumps({"id": f"l{i}", "pad": pad}).encode(), "PartitionKey": f"k{i}"}
                        for i in range(b, b + 500)]
                r = k.put_records(StreamName="lim", Records=recs)
                self.assertEqual(r["FailedRecordCount"], 0)
                sent += [f"l{i}" for i in range(b, b + 500)]
            server.stop()
            server.extra_args = ["--aws-strict"]
            server.start()
            pool = Pool(self, pg, server.endpoint, self.tmp, config="pace_reads = true\n")
            self.addCleanup(pool.stop_worker)
            req = channel_request("lim-s3", "lim", bucket="out", compression="NONE", freshness=1)
            req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
            code, _, err = pool.cli("create", stdin=json.dumps(req))
            self.assertEqual(code, 0, err)
            root = os.path.join(pool.data, "buckets", "out")
            pool.start_worker()
            deadline = time.time() + 60
            while time.time() < deadline and len(bucket_records(root)) < 20000:
                time.sleep(0.1)
            # Killed part way: plans stored, nothing handed over; the next worker reads the
            # planned batches again directly while the shards' readers start over.
            pool.proc.send_signal(signal.SIGKILL)
            pool.proc.wait(10)
            pool.log.close()
            at_kill = len(bucket_records(root))
            self.assertLess(at_kill, len(sent), "the first worker delivered everything before it was killed")
            pool.start_worker()
            deadline, got = time.time() + 240, []
            while time.time() < deadline:
                got = sorted(r["id"] for r in bucket_records(root))
                if len(got) >= len(sent):
                    break
                time.sleep(0.5)
            time.sleep(2)  # nothing more arrives
            got = sorted(r["id"] for r in bucket_records(root))
            self.assertEqual(got, sorted(sent), "records were lost or doubled:\n" + pool.worker_log()[-4000:])
            with urllib.request.urlopen(server.endpoint + "/metrics", timeout=10) as r:
                text = r.read().decode()
            calls = {}
            for m in re.finditer(r'^icestream_api_requests_total\{([^}]*)\} (\S+)$', text, re.M):
                labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
                if labels.get("operation") in ("GetRecords", "GetShardIterator"):
                    key = (labels["operation"], labels.get("error_code"))
                    calls[key] = calls.get(key, 0) + float(m.group(2))
            # More than one read per shard: the budget was spent and paid back.
            self.assertGreater(calls.get(("GetRecords", "none"), 0), 8, calls)
            throttled = {k: v for k, v in calls.items() if k[1] == "ProvisionedThroughputExceededException" and v}
            self.assertEqual(throttled, {}, f"the worker's own calls were throttled: {calls}\n" +
                             pool.worker_log()[-4000:])
            self.assertNotIn("ProvisionedThroughputExceededException", pool.worker_log())
            pool.stop_worker()

    def test_c_aws_strict_throttling_is_backed_off(self):
        with PgCluster() as pg:
            # The strict server is the pool's source only (not one of its processes).
            server = Server(config_text="", extra_args=["--aws-strict"]).start()
            pool = Pool(self, pg, server.endpoint, self.tmp)
            try:
                k = server.client()
                k.create_stream(StreamName="st", StreamModeDetails={"StreamMode": "ON_DEMAND"})
                # --aws-strict holds CreateChannel to AWS's 300 s freshness floor; the pool's
                # own command (not strict) creates a 1 s channel on the strict server's stream.
                code, _, err = pool.cli("create", stdin=json.dumps(
                    channel_request("st-s3", "st", bucket="out", compression="NONE", freshness=1)))
                self.assertEqual(code, 0, err)
                pool.start_worker()
                self.addCleanup(pool.stop_worker)  # also when an assertion fails
                pool.wait_status("st-s3", "ACTIVE")
                # Other readers of the same shards use the per-shard GetRecords budget too, so
                # the worker's calls meet ProvisionedThroughputExceededException.
                stop, sent = threading.Event(), []
                t = threading.Thread(target=produce, args=(k, "st", stop, "s", sent), daemon=True)
                t.start()
                throttled = [0]

                def hammer():
                    kk = server.client()
                    its = {}
                    while not stop.is_set():
                        for s in kk.list_shards(StreamName="st")["Shards"]:
                            sid = s["ShardId"]
                            try:
                                if sid not in its:
                                    its[sid] = kk.get_shard_iterator(StreamName="st", ShardId=sid,
                                                                     ShardIteratorType="LATEST")["ShardIterator"]
                                its[sid] = kk.get_records(ShardIterator=its[sid])["NextShardIterator"]
                            except kk.exceptions.ProvisionedThroughputExceededException:
                                throttled[0] += 1
                            except Exception:  # noqa: BLE001 (expired iterators and the like: start over)
                                its.pop(sid, None)

                hammers = [threading.Thread(target=hammer, daemon=True) for _ in range(3)]
                for h in hammers:
                    h.start()
                time.sleep(15)
                stop.set()
                t.join(30)
                for h in hammers:
                    h.join(30)
                self.assertGreater(throttled[0], 0, "the server throttled nobody: --aws-strict did not bite")
                time.sleep(2)  # the shards' read budget refills
                want = sorted(json.loads(d)["id"] for d, _, _ in read_stream(server.client(retries=30), "st"))
                self.assertEqual(want, sorted(sent))
                root = os.path.join(pool.data, "buckets", "out")
                deadline = time.time() + 120
                while True:
                    got = sorted(r["id"] for r in bucket_records(root))
                    if len(got) >= len(want) or time.time() > deadline:
                        break
                    time.sleep(1)
                self.assertEqual(got, want, "records were lost or doubled under throttling")
                pool.stop_worker()
                self.assertIn("ProvisionedThroughputExceededException", pool.worker_log(),
                              "the worker was never throttled")
            finally:
                pool.stop_worker()
                server.stop()
                server.cleanup()


if __name__ == "__main__":
    unittest.main()

"""Scale-out chaos, black-box: a pool of icestream processes on one PostgreSQL.

`icestream serve --pg` (the Kinesis API, the REST catalog, and one delivery worker of the
pool) and two `icestream worker --pg --source <server>` processes deliver a 4-shard stream
into an S3 bucket (radosgw) and into an Iceberg table (catalog in PostgreSQL's JDBC-catalog
tables, files in radosgw) while producers write. Meanwhile workers are killed with SIGKILL
(at least 20 times) and restarted, one is paused longer than its lease (SIGSTOP/SIGCONT),
and PostgreSQL itself is restarted with `-m immediate`. A second scenario puts one worker
behind a fault proxy to PostgreSQL (tests/lib/pg_fault_proxy.py): COMMITs dropped before
and after they reach the database, a partition longer than the lease, connections reset.
Afterwards, in both:

- every record of the stream (every acknowledged one among them) is in the bucket exactly
  once and a row of the table exactly once (the independent reader: icebird + DuckDB
  through the REST catalog);
- the bucket's objects of each shard are contiguous runs of its records that tile the
  shard with no gap and no overlap, each named after its first record;
- the table's shards are converted by several processes (each shard's batches staged under
  its lease) and committed by the holder of the channel's control unit; no table commit
  carries a superseded epoch: each icestream_commit_log row (owner, epoch, at) ran under
  the control unit's latest grant in icestream_lease_history at that time; nothing is left
  staged;
- the checkpoints in the table's snapshot summaries move only forward and contiguously:
  per shard a chain of the stream's own sequence numbers from its first record to its last,
  and each append snapshot adds exactly the shard's records between its previous checkpoint
  and its new one;
- the leases changed hands many times (the kills landed on workers holding work), and the
  table's committer changed (the holder of its control unit is paused past its lease once);
- the stream is split and merged during the kills: the first table snapshot that
  checkpoints a child shard holds each parent to its last record, and in the bucket every
  object of a child shard was written (S3's LastModified) after every object of its
  parents.

tests/lib/pool_check.py holds the checks (and, run directly, checks that each fails on a
history broken the way it must catch).

PostgreSQL comes from tests/lib/pg.py (a throw-away cluster made by pg_virtualenv), S3
from radosgw (tests/lib/start-rgw.sh); both fail the test when missing."""

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import harness  # noqa: E402
from delivery_check import decompress  # noqa: E402
from harness import Rgw, Server, channel_request, kinesis_call, read_stream, wait_channel  # noqa: E402
from pg import PgCluster  # noqa: E402
from pg_fault_proxy import PgFaultProxy  # noqa: E402
from pool_check import (StreamIndex, check_bucket_children_after_parents, check_bucket_ranges,  # noqa: E402
                        check_commits_fenced, check_table_checkpoints)
from table_check import (assert_children_after_parents, assert_rows, expected_row, read_table,  # noqa: E402
                         register_schema, table_bucket_arn, table_channel_request, wait_records)

ROUNDS = int(os.environ.get("POOL_KILL_ROUNDS", "20"))
STREAM = "pool-src"
NS, TABLE = "pool", "events"
LEASE_MS, RENEW_MS, TAKE_MS = 2000, 400, 400
CONFIG = f"""[scaleout]
lease_ms = {LEASE_MS}
renew_ms = {RENEW_MS}
take_ms = {TAKE_MS}
"""
SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["id", "n"],
    "properties": {
        "id": {"type": "string"},
        "event_time": {"type": "string", "format": "date-time"},
        "n": {"type": "integer"},
        "p": {"type": "string"},
    },
}


def record(tag, n, rng):
    secs = 1740823200 + rng.randrange(3 * 3600)
    return json.dumps({"id": f"{tag}-{n}", "n": n, "p": "x" * rng.randint(0, 300),
                       "event_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(secs))}).encode()


class Producer(threading.Thread):
    def __init__(self, server, tag):
        super().__init__(daemon=True)
        self.k = server.client(connect_timeout=2, read_timeout=10)
        self.tag = tag
        self.acked = []
        self.stop = threading.Event()

    def run(self):
        n = 0
        rng = random.Random(self.tag)
        while not self.stop.is_set():
            recs = []
            for _ in range(rng.randint(20, 200)):
                recs.append({"Data": record(self.tag, n, rng), "PartitionKey": f"k{rng.randint(0, 999)}"})
                n += 1
            try:
                r = self.k.put_records(StreamName=STREAM, Records=recs)
            except Exception:
                time.sleep(0.2)
                continue
            for rec, res in zip(recs, r["Records"]):
                if "SequenceNumber" in res:
                    self.acked.append((rec["Data"], res["ShardId"], res["SequenceNumber"]))
            time.sleep(0.05)


class Worker:
    """One `icestream worker` process of the pool."""

    def __init__(self, name, conninfo, source, s3_endpoint, config_path):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix=f"icestream-{name}-")
        self.port = harness.free_port()
        self.args = [harness.BINARY, "worker", "--pg", conninfo, "--source", source, "--s3-endpoint", s3_endpoint,
                     "--listen", f"127.0.0.1:{self.port}", "--data-dir", self.dir, "--config", config_path,
                     "--log-level", "info"]
        self.log_path = self.dir + ".log"
        self.proc = None
        self.starts = 0

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        self.starts += 1
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited with {self.proc.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"worker {self.name} did not become healthy: {self.tail()}")

    def health(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as r:
            return json.loads(r.read())

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError(f"worker {self.name} did not stop on SIGTERM: {self.tail()}")
            self.log.close()
        return self.proc.returncode if self.proc else None

    def tail(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-6000:]
        except OSError:
            return ""

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        subprocess.run(["rm", "-rf", self.dir, self.log_path])


def bucket_objects(s3, bucket):
    """{key: (body, LastModified)} of every object of the bucket."""
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            out[o["Key"]] = (s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read(), o["LastModified"])
    return out


class PoolChaos(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pg = PgCluster().start()
        try:
            cls.rgw = Rgw().start()
        except Exception:
            cls.pg.cleanup()
            raise
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = Rgw.access_key, Rgw.secret_key

    @classmethod
    def tearDownClass(cls):
        cls.rgw.stop()
        cls.pg.cleanup()

    def s3(self):
        return (self.rgw.endpoint, Rgw.access_key, Rgw.secret_key)

    def sql(self, query, db):
        out = self.pg.psql(query, db).strip()
        return [line.split("|") for line in out.splitlines() if line]

    def setup_pool(self, tag):
        """serve --pg on radosgw with an S3 channel and a table channel; returns them."""
        conninfo = self.pg.create_database(tag)
        s3 = self.rgw.s3()
        for b in (f"{tag}-out", f"{tag}-tables", f"{tag}-dlq"):
            s3.create_bucket(Bucket=b)
        server = Server(config_text=CONFIG, extra_args=["--pg", conninfo, "--s3-endpoint", self.rgw.endpoint],
                        log_level="info").start()
        k = server.client()
        k.create_stream(StreamName=STREAM, StreamModeDetails={"StreamMode": "ON_DEMAND"})
        schema_arn, _ = register_schema(server.client("glue"), "pool", "events", SCHEMA)
        st, body = kinesis_call(server, "CreateChannel", channel_request(
            f"{tag}-s3", STREAM, bucket=f"{tag}-out", compression="GZIP", freshness=1))
        self.assertEqual(st, 200, body)
        s3_arn = body["ChannelDescription"]["ChannelARN"]
        st, body = kinesis_call(server, "CreateChannel", table_channel_request(
            f"{tag}-table", STREAM, schema_arn, f"{tag}-tables", NS, TABLE, f"{tag}-dlq", freshness=1))
        self.assertEqual(st, 200, body)
        table_arn = body["ChannelDescription"]["ChannelARN"]
        wait_channel(server, s3_arn, timeout=60)
        wait_channel(server, table_arn, timeout=60)
        return conninfo, server, k, s3_arn, table_arn

    def reshard(self, k, how):
        """Splits the first open shard, or merges two adjacent open ones, while the pool
        delivers (split and merge are for PROVISIONED streams, as on AWS: the stream is
        switched around the reshard and back)."""
        arn = k.describe_stream_summary(StreamName=STREAM)["StreamDescriptionSummary"]["StreamARN"]
        k.update_stream_mode(StreamARN=arn, StreamModeDetails={"StreamMode": "PROVISIONED"})
        opened = sorted((s for s in k.list_shards(StreamName=STREAM)["Shards"]
                         if "EndingSequenceNumber" not in s["SequenceNumberRange"]),
                        key=lambda s: int(s["HashKeyRange"]["StartingHashKey"]))
        if how == "split":
            s0 = opened[0]
            lo, hi = int(s0["HashKeyRange"]["StartingHashKey"]), int(s0["HashKeyRange"]["EndingHashKey"])
            k.split_shard(StreamName=STREAM, ShardToSplit=s0["ShardId"], NewStartingHashKey=str((lo + hi) // 2))
        else:
            a, b = next((a, b) for a, b in zip(opened, opened[1:])
                        if int(a["HashKeyRange"]["EndingHashKey"]) + 1 == int(b["HashKeyRange"]["StartingHashKey"]))
            k.merge_shards(StreamName=STREAM, ShardToMerge=a["ShardId"], AdjacentShardToMerge=b["ShardId"])
        deadline = time.time() + 30
        while k.describe_stream_summary(StreamName=STREAM)["StreamDescriptionSummary"]["StreamStatus"] != "ACTIVE":
            self.assertLess(time.time(), deadline, "the stream did not become ACTIVE after " + how)
            time.sleep(0.2)
        k.update_stream_mode(StreamARN=arn, StreamModeDetails={"StreamMode": "ON_DEMAND"})

    def verify(self, tag, server, k, producers, table_arn, s3_arn, spread=False):
        """Exactly once in the bucket and the table, contiguously per shard; fenced commits;
        checkpoints forward and contiguous. Returns what the scenario checks further."""
        for p in producers:
            p.stop.set()
            p.join(30)
        acked = [a for p in producers for a in p.acked]
        self.assertGreater(len(acked), 2000, "the producers wrote too little to prove anything")
        everything = read_stream(k, STREAM)
        stream = {(s, q): d for d, s, q in everything}
        for d, s, q in acked:
            self.assertEqual(stream.get((s, q)), d, "an acknowledged record is not in the stream")
        want_ids = sorted(json.loads(d)["id"] for d, _, _ in everything)
        stream_index = StreamIndex(everything, lambda d: json.loads(d)["id"])

        deadline = time.time() + 180
        while True:
            got, objects = [], {}
            for key, (raw, modified) in bucket_objects(self.rgw.s3(), f"{tag}-out").items():
                ids = [json.loads(line)["id"] for line in decompress(key, raw).splitlines() if line.strip()]
                objects[key] = (ids, modified)
                got += ids
            if len(got) >= len(want_ids) or time.time() > deadline:
                break
            time.sleep(1)
        self.assertEqual(len(got), len(set(got)), "a record is in the bucket twice")
        self.assertEqual(sorted(got), want_ids, "the bucket does not hold every record")
        bucket_shards = check_bucket_ranges(self, objects, stream_index, s3_arn.rsplit("/", 1)[-1])

        wh = table_bucket_arn(f"{tag}-tables")
        wait_records(server, wh, NS, TABLE, len(everything), timeout=180)
        t = read_table(catalog=server.endpoint + "/iceberg", warehouse=wh, namespace=NS, table=TABLE, s3=self.s3(),
                       file_keys="id")
        assert_rows(self, t["rows"], [expected_row(d, t["schema"]) for d, _, _ in everything], "id")
        steps = check_table_checkpoints(self, t, stream_index)

        table_id = table_arn.rsplit("/", 1)[-1]
        db = tag
        at_us = "(extract(epoch FROM at) * 1000000)::bigint"
        grants = [(o, int(e), int(a), r == "t") for o, e, a, r in self.sql(
            f"SELECT owner, epoch, {at_us}, released FROM icestream_lease_history WHERE channel_id = "
            f"'{table_id}' AND unit = 'control'", db)]
        # One table's shards are converted across the pool: its shard leases (under which
        # every batch is staged) were held by more than one process.
        shard_owners = self.sql(f"SELECT count(DISTINCT owner) FROM icestream_lease_history WHERE channel_id = "
                                f"'{table_id}' AND unit LIKE 'shard:%'", db)
        if spread:
            self.assertGreater(int(shard_owners[0][0]), 1,
                               "the table's shards were never converted by two processes")
        # (A replay staged after its batch's commit is dropped by the next commit pass.)
        deadline = time.time() + 15
        while self.sql(f"SELECT count(*) FROM icestream_staged WHERE channel_id = '{table_id}'", db) != [["0"]]:
            self.assertLess(time.time(), deadline, "staged batches left uncommitted")
            time.sleep(0.5)
        commits = [(o, int(e), int(a)) for o, e, a in self.sql(
            f"SELECT owner, epoch, {at_us} FROM icestream_commit_log WHERE channel_id = '{table_id}' ORDER BY at",
            db)]
        self.assertGreater(len(commits), 5)
        committers = check_commits_fenced(self, commits, grants)
        top = 0
        for _, epoch, _ in commits:
            self.assertGreaterEqual(epoch, top, "a commit under a superseded epoch")
            top = epoch
        changes = int(self.sql("SELECT count(*) FROM icestream_lease_history", db)[0][0])
        return dict(everything=everything, t=t, commits=commits, changes=changes, top=top, committers=committers,
                    bucket_shards=bucket_shards, steps=steps)

    def control_holder(self, db, table_id, processes):
        """The (name, Popen) of the process that holds the table channel's control unit."""
        deadline = time.time() + 20
        while True:
            for (owner,) in self.sql(f"SELECT owner FROM icestream_lease WHERE channel_id = '{table_id}' AND unit = "
                                     "'control' AND owner IS NOT NULL AND expires_at > clock_timestamp()", db):
                pid = int(owner.split(":")[-2])
                for name, proc in processes:
                    if proc.pid == pid and proc.poll() is None:
                        return name, proc
            self.assertLess(time.time(), deadline, "no live process holds the table's control unit")
            time.sleep(0.2)

    def test_three_processes_exactly_once_through_kills_pauses_and_a_database_restart(self):
        tag = "pool"
        conninfo, server, k, s3_arn, table_arn = self.setup_pool(tag)
        workers = []
        producers = []
        try:
            workers = [Worker(f"w{i}", conninfo, server.endpoint, self.rgw.endpoint, server.config_path)
                       for i in range(2)]
            for w in workers:
                w.start()
            producers = [Producer(server, f"p{i}") for i in range(2)]
            for p in producers:
                p.start()

            rng = random.Random(16)
            kills = 0
            paused_committer = None
            for r in range(ROUNDS):
                time.sleep(rng.uniform(0.5, 2.0))
                if r == ROUNDS // 4:
                    self.reshard(k, "split")
                if r == ROUNDS // 2:
                    self.reshard(k, "merge")
                if r == ROUNDS // 3:
                    # Paused longer than its lease: the others take its units over; when it
                    # wakes up, its writes are fenced.
                    w = rng.choice(workers)
                    w.proc.send_signal(signal.SIGSTOP)
                    time.sleep((LEASE_MS + 2 * TAKE_MS) / 1000 + 1)
                    w.proc.send_signal(signal.SIGCONT)
                if r == 2 * ROUNDS // 3:
                    self.pg.restart(immediate=True)
                if r == 3 * ROUNDS // 4:
                    # The table's committer (the holder of its control unit: the server or a
                    # worker) paused past its lease: another process commits, under a new
                    # epoch, and the paused one's late commit is fenced.
                    processes = [("server", server.proc)] + [(w.name, w.proc) for w in workers]
                    paused_committer, proc = self.control_holder(tag, table_arn.rsplit("/", 1)[-1], processes)
                    proc.send_signal(signal.SIGSTOP)
                    time.sleep((LEASE_MS + 2 * TAKE_MS) / 1000 + 1)
                    proc.send_signal(signal.SIGCONT)
                w = rng.choice(workers)
                w.kill()
                kills += 1
                w.start()
            time.sleep(2)
            v = self.verify(tag, server, k, producers, table_arn, s3_arn, spread=True)
            everything, t, commits, changes, top = v["everything"], v["t"], v["commits"], v["changes"], v["top"]
            self.assertGreater(changes, kills, "the leases did not change hands as workers died")
            self.assertGreater(len(v["committers"]), 1,
                               f"the table was committed under one lease only, though its committer "
                               f"({paused_committer}) was paused past it")

            shards = k.list_shards(StreamName=STREAM)["Shards"]
            assert_children_after_parents(self, shards, everything, t["snapshots"])
            pairs = check_bucket_children_after_parents(self, shards, v["bucket_shards"])

            # DescribeChannel names an owner and an epoch for every shard.
            st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": s3_arn})
            shards = body["ChannelDescription"]["IcestreamStatus"]["Shards"]
            self.assertTrue(all("Epoch" in s for s in shards), shards)
            print(f"{kills} kill -9, 2 pauses past the lease (one of the table's committer, {paused_committer}), "
                  f"1 PostgreSQL restart: {len(everything)} records exactly once in the bucket "
                  f"({sum(len(o) for o in v['bucket_shards'].values())} objects, contiguous per shard, {pairs} "
                  f"child/parent pairs in order) and the table ({len(t['snapshots'])} snapshots, {v['steps']} "
                  f"contiguous checkpoint steps, {len(commits)} fenced commits under {len(v['committers'])} "
                  f"leases, {changes} lease changes, final table epoch {top})")
        finally:
            self.teardown_pool(server, workers, producers)

    def test_a_worker_partitioned_from_postgresql_and_losing_commits(self):
        """One worker reaches PostgreSQL through a fault proxy: COMMITs dropped before they
        reach the database and after (the answer lost: resolved by pg_xact_status), then a
        partition longer than the lease, then every connection reset."""
        tag = "part"
        conninfo, server, k, s3_arn, table_arn = self.setup_pool(tag)
        proxy = PgFaultProxy(self.pg.port).start()
        workers = []
        producers = []
        try:
            proxied = conninfo.replace(f"port={self.pg.port}", f"port={proxy.port}")
            self.assertNotEqual(proxied, conninfo)
            workers = [Worker("wp", proxied, server.endpoint, self.rgw.endpoint, server.config_path)]
            workers[0].start()
            producers = [Producer(server, f"q{i}") for i in range(2)]
            for p in producers:
                p.start()
            time.sleep(3)
            proxy.set_mode("commit_drop", commit_drop_rate=0.3)
            time.sleep(10)
            proxy.set_mode("pass")
            time.sleep(3)
            proxy.set_mode("blackhole")
            time.sleep((LEASE_MS + 2 * TAKE_MS) / 1000 + 2)
            proxy.set_mode("pass")
            time.sleep(4)
            proxy.set_mode("reset")
            proxy.set_mode("pass")
            time.sleep(4)
            try:
                v = self.verify(tag, server, k, producers, table_arn, s3_arn)
            except AssertionError:
                self.diagnose(server, workers, s3_arn)
                raise
            everything, commits, changes = v["everything"], v["commits"], v["changes"]
            self.assertGreater(proxy.counts["commit_before"] + proxy.counts["commit_after"], 0, proxy.counts)
            owners = {o for o, _, _ in commits}
            print(f"partition and lost COMMITs ({proxy.counts}): {len(everything)} records exactly once; "
                  f"{len(commits)} fenced commits by {len(owners)} owners, {changes} lease changes")
        finally:
            proxy.stop()
            self.teardown_pool(server, workers, producers)

    def diagnose(self, server, workers, arn):
        st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arn})
        print("DescribeChannel:", json.dumps(body.get("ChannelDescription", body).get("IcestreamStatus", body))[:3000])
        print("leases:", self.pg.psql("SELECT channel_id, unit, owner, epoch, expires_at > clock_timestamp() "
                                      "FROM icestream_lease ORDER BY 1, 2", "part"))
        # Who holds what: a lease row locked by a transaction that never ends keeps its shard
        # from every taker (FOR UPDATE SKIP LOCKED).
        print("backends:", self.pg.psql("SELECT pid, state, wait_event_type, wait_event, "
                                        "clock_timestamp() - xact_start, left(query, 100) FROM "
                                        "pg_stat_activity WHERE datname = current_database() "
                                        "ORDER BY xact_start", "part"))
        print("locks:", self.pg.psql("SELECT pid, locktype, mode, granted, relation::regclass FROM pg_locks "
                                     "WHERE locktype IN ('transactionid', 'tuple') OR NOT granted "
                                     "ORDER BY pid", "part"))
        print("server log:", server.read_log()[-4000:])
        for w in workers:
            print(f"worker {w.name} log:", w.tail())
            if os.environ.get("POOL_GDB") and w.proc and w.proc.poll() is None:
                print(subprocess.run(["gdb", "-p", str(w.proc.pid), "-batch", "-ex", "thread apply all bt 12"],
                                     capture_output=True, text=True).stdout[-20000:])

    def teardown_pool(self, server, workers, producers):
        for p in producers:
            p.stop.set()
        for w in workers:
            try:
                w.stop()
            except Exception as e:  # noqa: BLE001
                print(e)
            w.cleanup()
        server.stop()
        server.cleanup()


if __name__ == "__main__":
    unittest.main()

"""Driver of bench/scaleout (see run). Prints every figure with its goal; asserts nothing.

1. Throughput: a backlog of ~1 KiB JSON records (--mb) in a stream of --shards shards (4,
   ON_DEMAND's default, and 16), delivered from TRIM_HORIZON by an S3 channel (GZIP JSON to
   bucket folders) and by a streaming-table channel (ZSTD Parquet), each timed from
   CreateChannel to the last record delivered: by one `icestream serve` (meta.db, the
   single-process channel), by `serve --pg` alone (one worker of a pool), and by `serve
   --pg` plus one `icestream worker` (two workers), in turn, --rounds times (3); each ratio
   is against the single process of its own round and the medians are the figures. Goal:
   two workers >= 0.9x the single process on this 2-core machine (coordination costs
   nothing visible). A table channel's
   shards are converted where their leases are (staged, then committed by the control
   unit's holder), so its second worker adds conversion capacity where there are cores to
   use. The worker reads its shards from the server through GetRecords at AWS's rate (5
   calls/s per shard, each <= 10,000 records): the bound this puts on the two-worker run is
   printed beside it — with 4 shards it, not coordination, decides the figure; with 16 it
   is far above what two cores convert.
2. Failover gap: an S3 channel at freshness 1 s with a steady producer; the worker holding
   a shard is killed with SIGKILL; the gap is the time from the kill until that shard's
   checkpoint moves again. Goal <= lease + take interval + freshness + 1 s.
3. PostgreSQL load at steady state, while the S3 channel delivers a steady ~200 records/s
   with two workers: transactions per second per shard (pg_stat_database.xact_commit) and
   statements per second per shard (pg_stat_statements, BEGIN/COMMIT not counted), each
   besides the batches' own (their plans and checkpoints), with the most frequent other
   statements; goal <= 1 per shard (a renewal covers every unit of a worker in one
   statement). And the CPU of every process of the cluster over the same 20 s.
4. 1,000 leases renewed: one worker holding 1,000 units; the server-side duration of its
   renew statement (log_min_duration_statement = 0, parsed from PostgreSQL's log).
   Goal p99 <= 50 ms.
5. Freshness at DataFreshnessInSeconds 5 with 3 workers (serve --pg + 2 workers sharing
   the 4 shards of an S3 channel): per record, the time its object appeared in the bucket
   (the file's mtime: all processes write the same folders) minus the time the producer
   sent it. Goal p99 <= 8 s.
6. The same for a streaming-table channel (its shards staged by three processes, committed
   by the control unit's holder): per record, the time from its PutRecords to the first
   snapshot (the REST catalog polled every 50 ms) whose checkpoint of its shard covers it.
   Goal p99 <= 8 s.
No curve beyond two workers here: on two cores more processes add no capacity; where more
cores exist, --modes and more `icestream worker` processes give the curve.
All on 127.0.0.1; PostgreSQL is a throw-away cluster (tests/lib/pg.py)."""

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "lib"))
import harness  # noqa: E402
from harness import Server, channel_request, kinesis_call, wait_channel  # noqa: E402
from pg import PgCluster  # noqa: E402
from table_check import (register_schema, rest_metadata, table_bucket_arn, table_channel_request,  # noqa: E402
                         total_records)

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--mb", type=int, default=400, help="backlog size for the throughput runs")
ap.add_argument("--shards", default="4,16",
                help="shard counts of the throughput runs' stream (4: ON_DEMAND's default)")
ap.add_argument("--only", default="throughput,failover,pgload,renew,freshness,table_freshness")
ap.add_argument("--kinds", default="s3,table", help="channel kinds of the throughput runs")
ap.add_argument("--modes", default="single,one,two", help="throughput runs: single, one (serve --pg), two (+ a worker)")
ap.add_argument("--rounds", type=int, default=3,
                help="throughput: the modes run one after another this many times; each run's ratio is against the "
                "single process of its own round, and the medians are the figures")
ap.add_argument("--perf", default="", help="perf record (flat, 999 Hz; more perf record options in $BENCH_PERF_ARGS, e.g. "
                "'--call-graph dwarf,16384') the icestream processes of each throughput run from CreateChannel to the "
                "end into FILE.<kind>-<mode>-<shards>")
ap.add_argument("--log-level", default="warn", help="the processes' log level; logs are kept (paths printed) when not warn")
args = ap.parse_args()
harness.BINARY = os.path.abspath(args.bin)
LEASE_MS, RENEW_MS, TAKE_MS = 3000, 500, 500
CONFIG = f"[scaleout]\nlease_ms = {LEASE_MS}\nrenew_ms = {RENEW_MS}\ntake_ms = {TAKE_MS}\n"
SCHEMA = {"type": "object", "required": ["id"],
          "properties": {"id": {"type": "string"}, "n": {"type": "integer"}, "amount": {"type": "number"},
                         "merchant": {"type": "string"}, "t": {"type": "string", "format": "date-time"}}}
WORDS = "card present online terminal settlement batch acquirer issuer region branch kiosk".split()


def records(mb):
    rng = random.Random(1)
    out, size, n = [], 0, 0
    while size < mb * 1_000_000:
        merchant = " ".join(rng.choice(WORDS) for _ in range(120))
        d = json.dumps({"id": f"r{n}", "n": n, "amount": round(rng.uniform(1, 5000), 2), "merchant": merchant,
                        "t": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1764583200 + rng.randrange(7200)))})
        out.append(d.encode())
        size += len(d)
        n += 1
    return out, size


def put_all(k, stream, recs):
    for i in range(0, len(recs), 500):
        batch = [{"Data": d, "PartitionKey": f"k{i + j}"} for j, d in enumerate(recs[i:i + 500])]
        while True:
            r = k.put_records(StreamName=stream, Records=batch)
            if r["FailedRecordCount"] == 0:
                break
            batch = [b for b, res in zip(batch, r["Records"]) if "ErrorCode" in res]


class Worker:
    def __init__(self, conninfo, source, config_path, data_dir):
        self.conninfo = conninfo
        self.port = harness.free_port()
        self.log = open(os.path.join(tempfile.gettempdir(), f"icestream-bench-worker-{self.port}.log"), "wb")
        self.proc = subprocess.Popen([harness.BINARY, "worker", "--pg", conninfo, "--source", source, "--data-dir",
                                      data_dir, "--listen", f"127.0.0.1:{self.port}", "--config", config_path,
                                      "--log-level", args.log_level], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as r:
                    self.owner = json.loads(r.read())["worker"]
                    return
            except (OSError, KeyError, ValueError):
                time.sleep(0.1)
        raise RuntimeError("worker did not start")

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)
        self.log.close()
        if args.log_level == "warn":  # else kept for reading (the throughput runs print where)
            os.remove(self.log.name)


def shards_done(server, arn, want_last, active=None):
    """Whether every shard's checkpoint is at its last record; `active` (a list) gets True
    when the channel is ACTIVE."""
    st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arn})
    if st != 200:
        print(f"  (DescribeChannel answered {st}: {body})")
        return False
    if active is not None and body["ChannelDescription"].get("ChannelStatus") == "ACTIVE":
        active.append(True)
    shards = body["ChannelDescription"].get("IcestreamStatus", {}).get("Shards", [])
    got = {s["ShardId"]: s.get("LastCommittedSequenceNumber") for s in shards}
    return all(got.get(sh) == seq for sh, seq in want_last.items())


def last_sequences(k, stream):
    out = {}
    for sh in k.list_shards(StreamName=stream)["Shards"]:
        it = k.get_shard_iterator(StreamName=stream, ShardId=sh["ShardId"], ShardIteratorType="TRIM_HORIZON")[
            "ShardIterator"]
        last = None
        while it:
            r = k.get_records(ShardIterator=it, Limit=10000)
            if r["Records"]:
                last = r["Records"][-1]["SequenceNumber"]
            if not r["Records"] and r.get("MillisBehindLatest", 0) == 0:
                break
            it = r.get("NextShardIterator")
        if last:
            out[sh["ShardId"]] = last
    return out


def keep_logs(server, workers, label):
    """With --log-level other than warn: a copy of the (stopped) server's log, kept with the
    workers' logs; their paths are printed."""
    if args.log_level != "warn":
        kept = shutil.copy(server.log_path, tempfile.mkdtemp(prefix=f"icestream-bench-{label}-"))
        print(f"  (log of {label}: {kept}" + "".join(f", {w.log.name}" for w in workers) + ")")


def cpu_seconds(pid):
    """User + system CPU seconds a live process has used (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def minor_faults(pid):
    """Page faults a live process has taken that needed no I/O (a fresh or mapped page)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def throughput_run(kind, mode, recs, size, shards):
    """(seconds from CreateChannel until everything is delivered, seconds until the channel
    was ACTIVE, CPU seconds the icestream processes spent in that time, and per process:
    its CPU seconds and minor page faults in that time)."""
    tmp = tempfile.mkdtemp(prefix="icestream-bench-scaleout-")
    pg = PgCluster().start() if mode != "single" else None
    workers = []
    try:
        extra = ["--pg", pg.create_database("pool")] if pg else []
        server = Server(data_dir=os.path.join(tmp, "data"), config_text=CONFIG, extra_args=extra,
                        log_level=args.log_level).start()
        try:
            k = server.client()
            if shards == 4:
                k.create_stream(StreamName="bench", StreamModeDetails={"StreamMode": "ON_DEMAND"})
            else:
                k.create_stream(StreamName="bench", ShardCount=shards)
                arn = k.describe_stream_summary(StreamName="bench")["StreamDescriptionSummary"]["StreamARN"]
                k.update_stream_mode(StreamARN=arn, StreamModeDetails={"StreamMode": "ON_DEMAND"})
            put_all(k, "bench", recs)
            want = last_sequences(k, "bench")
            if mode == "two":
                workers.append(Worker(extra[1], server.endpoint, server.config_path, server.data_dir))
            if kind == "s3":
                req = channel_request("b", "bench", bucket="out", compression="GZIP", freshness=1)
                req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
            else:
                arn, _ = register_schema(server.client("glue"), "bench", "tx", SCHEMA)
                req = table_channel_request("b", "bench", arn, "tables", "ns", "t", "dlq", freshness=1,
                                            partition="t", start="TRIM_HORIZON")
            procs = [server.proc.pid] + [w.proc.pid for w in workers]
            perf = None
            if args.perf:
                perf_args = os.environ.get("BENCH_PERF_ARGS", "").split()
                perf = subprocess.Popen(["perf", "record", "-F", "999", "-q"] + perf_args +
                                        ["-p", ",".join(map(str, procs)), "-o", f"{args.perf}.{kind}-{mode}-{shards}"])
                time.sleep(0.5)  # perf attaches
            each0 = [(cpu_seconds(p), minor_faults(p)) for p in procs]
            t0 = time.time()
            st, body = kinesis_call(server, "CreateChannel", req)
            assert st == 200, body
            carn = body["ChannelDescription"]["ChannelARN"]
            deadline = t0 + 1800
            first = None  # seconds until the channel was ACTIVE (its activation)
            while time.time() < deadline:
                active = []
                if kind == "s3" and shards_done(server, carn, want, active):
                    break
                if kind == "table":
                    if total_records(server, table_bucket_arn("tables"), "ns", "t") >= len(recs):
                        break
                    st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": carn})
                    if st == 200 and body["ChannelDescription"].get("ChannelStatus") == "ACTIVE":
                        active.append(True)
                if active and first is None:
                    first = time.time() - t0
                time.sleep(0.1)
            total = time.time() - t0
            each = [(cpu_seconds(p) - c0, minor_faults(p) - f0) for p, (c0, f0) in zip(procs, each0)]
            cpu = sum(c for c, _ in each)
            if workers and args.log_level != "warn":
                # What the workers asked of the source (the server's API counters).
                with urllib.request.urlopen(server.endpoint + "/metrics", timeout=5) as r:
                    for line in r.read().decode().splitlines():
                        if line.startswith("icestream_api_requests_total") and (
                                "GetRecords" in line or "GetShardIterator" in line):
                            print("  (source: " + line + ")")
            if perf:
                perf.send_signal(signal.SIGINT)
                perf.wait(60)
            return total, first if first is not None else 0.0, cpu, each
        finally:
            for w in workers:
                w.stop()
            server.stop()
            keep_logs(server, workers, f"{kind}-{mode}")
            server.cleanup()
    finally:
        if pg:
            pg.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def throughput():
    recs, size = records(args.mb)
    for n in (int(x) for x in args.shards.split(",")):
        throughput_shards(recs, size, n)


def throughput_shards(recs, size, n):
    print(f"## 1. throughput: {len(recs)} records, {size / 1e6:.0f} MB backlog, {n} shards (goal: two workers >= 0.9x "
          "the single process)")
    # A worker reads its shards through GetRecords at AWS's rate: 5 calls/s per shard, each
    # at most 10,000 records and 10 MiB. With half the shards on the worker, the two-worker
    # run lasts at least as long as the worker takes to read its half. With few shards that
    # rule, not coordination, bounds the pool (as on AWS, where a stream's shard count grows
    # with its rate); with more shards the machine's cores do.
    per_shard = 5 * min(10000 * size / len(recs), 10 * 2**20) / 1e6
    floor = (size / 2 / 1e6) / (n // 2 * per_shard)
    print(f"  (a worker reads a shard at <= {per_shard:.0f} MB/s here: 5 GetRecords/s x 10,000 records; with {n // 2} of the "
          f"{n} shards it needs >= {floor:.1f} s for its half, so two workers deliver <= {size / 1e6 / floor:.0f} MB/s)")
    modes = [(m, label) for m, label in (("single", "one server (meta.db)"), ("one", "serve --pg (1 worker)"),
                                         ("two", "serve --pg + 1 worker (2 workers)")) if m in args.modes.split(",")]
    for kind in args.kinds.split(","):
        # The modes in turn, round after round: a busy neighbour of this VM (CPU-s per MB of one
        # and the same run vary by a third from one minute to the next) weighs on the runs of a
        # round alike, and each ratio is taken within its round.
        ratios = {m: [] for m, _ in modes}
        after_ratios = {m: [] for m, _ in modes}
        cpus = {m: [] for m, _ in modes}
        for r in range(args.rounds):
            base = after_base = None
            for mode, label in modes:
                secs, first, cpu, each = throughput_run(kind, mode, recs, size, n)
                mbs = size / 1e6 / secs
                base = base or mbs
                # Also the rate from the moment the channel is ACTIVE (its activation excluded;
                # the shards' lease takes and every batch included), which is what a longer
                # backlog converges to: a pool activates a channel through its control lease
                # and the channel reload interval, a fixed cost of seconds.
                after = size / 1e6 / max(0.001, secs - first)
                after_base = after_base or after
                ratios[mode].append(mbs / base)
                after_ratios[mode].append(after / after_base)
                cpus[mode].append(cpu / (size / 1e8))
                print(f"  {kind:5} {label:36} {secs:7.1f} s  {mbs:7.1f} MB/s  {mbs / base:5.2f}x   ACTIVE after "
                      f"{first:4.1f} s, then {after:6.1f} MB/s  {after / after_base:5.2f}x   "
                      f"CPU {cpu / (size / 1e8):5.2f} s/100 MB   (round {r + 1})", flush=True)
                if len(each) > 1:
                    # Where a pool's CPU goes: the server (the source, its own shards) and the
                    # worker (reading the source through GetRecords), with their minor page
                    # faults (fresh memory taken page by page) per 100 MB of the backlog.
                    print("      " + ", ".join(
                        f"{name} CPU {c / (size / 1e8):4.2f} s/100 MB, {fl / (size / 1e8):7.0f} faults/100 MB"
                        for name, (c, fl) in zip(["server"] + [f"worker {i + 1}" for i in range(len(each) - 1)],
                                                 each)), flush=True)
        for mode, label in modes:
            goal = "   (goal >= 0.9x)" if mode == "two" else ""
            print(f"  {kind:5} {label:36} median of {args.rounds}: {statistics.median(ratios[mode]):5.2f}x "
                  f"(from ACTIVE {statistics.median(after_ratios[mode]):5.2f}x), CPU "
                  f"{statistics.median(cpus[mode]):5.2f} s/100 MB{goal}")


def steady_pool(pg, n_workers=1, config=CONFIG, freshness=1, compression="GZIP", stamp=False):
    conninfo = pg.create_database(f"pool{random.randrange(10**6)}")
    server = Server(config_text=config, extra_args=["--pg", conninfo], log_level=args.log_level).start()
    k = server.client()
    k.create_stream(StreamName="steady", StreamModeDetails={"StreamMode": "ON_DEMAND"})
    st, body = kinesis_call(server, "CreateChannel", channel_request("s", "steady", bucket="out", freshness=freshness,
                                                                     compression=compression))
    arn = body["ChannelDescription"]["ChannelARN"]
    wait_channel(server, arn, timeout=60)
    workers = [Worker(conninfo, server.endpoint, server.config_path, server.data_dir) for _ in range(n_workers)]
    time.sleep(1)
    stop = threading.Event()

    def produce():
        n = 0
        while not stop.is_set():
            doc = (lambda i: {"n": n + i, "sent": time.time()}) if stamp else (lambda i: {"n": n + i})
            k.put_records(StreamName="steady", Records=[{"Data": json.dumps(doc(i)).encode(),
                                                         "PartitionKey": f"k{n + i}"} for i in range(20)])
            n += 20
            time.sleep(0.1)

    t = threading.Thread(target=produce, daemon=True)
    t.start()
    return server, workers, arn, stop, t, conninfo


def checkpoints(server, arn):
    st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arn})
    return {s["ShardId"]: (s.get("Owner"), s.get("LastCommittedSequenceNumber"))
            for s in body["ChannelDescription"]["IcestreamStatus"]["Shards"]}


def failover():
    print(f"## 2. failover gap after kill -9 (lease {LEASE_MS} ms, take {TAKE_MS} ms, freshness 1 s: goal <= "
          f"{(LEASE_MS + TAKE_MS) / 1000 + 2:.1f} s)")
    with PgCluster() as pg:
        server, workers, arn, stop, t, _ = steady_pool(pg, 1)
        try:
            gaps = []
            for _ in range(3):
                time.sleep(4)
                w = workers[0]
                mine = {sh: cp for sh, (owner, cp) in checkpoints(server, arn).items() if owner == w.owner}
                if not mine:
                    print("  the worker held no shard; skipped")
                    continue
                shard, cp = next(iter(mine.items()))
                t0 = time.time()
                w.stop(signal.SIGKILL)
                while time.time() - t0 < 60:
                    now = checkpoints(server, arn)[shard][1]
                    if now != cp and now is not None:
                        break
                    time.sleep(0.05)
                gaps.append(time.time() - t0)
                workers[0] = Worker(w.conninfo, server.endpoint, server.config_path, server.data_dir)
            for g in gaps:
                print(f"  gap {g:5.2f} s")
        finally:
            stop.set()
            for w in workers:
                w.stop()
            server.stop()
            keep_logs(server, workers, "failover")
            server.cleanup()


def postgres_cpu_seconds(pg):
    """utime + stime of every process of the cluster (postmaster, backends, background
    workers): PostgreSQL's CPU, read from /proc."""
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if not (cmd.startswith(b"postgres:") or (b"/postgres\0" in cmd and pg.data.encode() in cmd)):
                continue
            total += cpu_seconds(int(pid))
        except OSError:
            continue
    return total


# Statements of a batch (its plan, its checkpoint, its shard's "finished" mark and the
# fences they lock): what the goal counts "besides".
BATCH_TABLES = ("icestream_plans", "icestream_checkpoints", "icestream_finished", "icestream_staged")
# ... and what every fenced transaction of theirs starts with: its id (for a COMMIT whose
# answer is lost) and the lock of the unit's lease row on (owner, epoch).
BATCH_PREAMBLE = ("pg_current_xact_id()", "AND owner = $3 AND epoch = $4 FOR")


def pgload():
    print("## 3. PostgreSQL load at steady state (S3 channel, 4 shards, 2 workers, ~200 records/s, default lease "
          "timings; goal <= 1 statement per shard per second besides the batches' own)")
    with PgCluster(settings={"shared_preload_libraries": "pg_stat_statements",
                             "pg_stat_statements.track": "all"}) as pg:
        server, workers, arn, stop, t, conninfo = steady_pool(pg, 1, config="")
        db = conninfo.split("dbname=")[-1].split()[0]
        try:
            pg.psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", db)
            time.sleep(8)
            q = f"SELECT xact_commit FROM pg_stat_database WHERE datname = '{db}'"
            cq = "SELECT n_tup_upd + n_tup_ins FROM pg_stat_user_tables WHERE relname = 'icestream_checkpoints'"
            pg.psql("SELECT pg_stat_statements_reset()", db)
            a, c0, cpu0, t0 = int(pg.psql(q)), int(pg.psql(cq, db)), postgres_cpu_seconds(pg), time.time()
            time.sleep(20)
            b, c1, cpu1, t1 = int(pg.psql(q)), int(pg.psql(cq, db)), postgres_cpu_seconds(pg), time.time()
            rows = pg.psql("SELECT calls, regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements s JOIN "
                           f"pg_database d ON d.oid = s.dbid WHERE d.datname = '{db}' ORDER BY calls DESC", db)
            secs = t1 - t0
            per_s = (b - a) / secs
            batches = (c1 - c0) / secs
            other = max(0.0, per_s - 2 * batches)
            print(f"  transactions: {per_s:.1f}/s in all; {batches:.1f} batches/s (a plan and a checkpoint "
                  f"commit each); besides those {other:.2f}/s = {other / 4:.2f} per shard per second")
            stmts = batch_stmts = 0
            top = []
            for line in rows.splitlines():
                calls, _, text = line.partition("|")
                if not calls.strip().isdigit() or text.strip().upper() in ("BEGIN", "COMMIT", "ROLLBACK"):
                    continue
                n = int(calls)
                stmts += n
                if any(tb in text for tb in BATCH_TABLES) or any(p in text for p in BATCH_PREAMBLE):
                    batch_stmts += n
                else:
                    top.append((n, text))
            others = (stmts - batch_stmts) / secs
            print(f"  statements (pg_stat_statements, BEGIN/COMMIT not counted): {stmts / secs:.1f}/s in all, "
                  f"{batch_stmts / secs:.1f}/s of batches; besides those {others:.2f}/s = {others / 4:.2f} per shard "
                  f"per second (goal <= 1)")
            for n, text in sorted(top, reverse=True)[:4]:
                print(f"    {n / secs:5.2f}/s  {text[:110]}")
            print(f"  PostgreSQL's CPU (every process of the cluster): {(cpu1 - cpu0) / secs * 100:.1f}% of one core")
        finally:
            stop.set()
            for w in workers:
                w.stop()
            server.stop()
            keep_logs(server, workers, "pgload")
            server.cleanup()


def freshness():
    print("## 5. freshness at DataFreshnessInSeconds 5 with 3 workers (serve --pg + 2 workers; S3 channel, 4 shards, "
          "~200 records/s; per record: the time its object appeared in the bucket minus the time it was sent; "
          "goal p99 <= 8 s)")
    with PgCluster() as pg:
        server, workers, arn, stop, t, _ = steady_pool(pg, 2, freshness=5, compression="NONE", stamp=True)
        root = os.path.join(server.data_dir, "buckets", "out")
        try:
            time.sleep(5)  # the leases settle over the three processes
            t_from = time.time()
            time.sleep(40)
            stop.set()
            t.join(30)
            t_to = time.time()
            time.sleep(12)  # the last batches land
            owners = {o for o, _ in checkpoints(server, arn).values()}
            lags = []
            for d, _, files in os.walk(root):
                for f in files:
                    if ".tmp-" in f:
                        continue
                    path = os.path.join(d, f)
                    landed = os.stat(path).st_mtime
                    with open(path, "rb") as fh:
                        for line in fh.read().decode(errors="replace").splitlines():
                            if '"sent"' not in line:
                                continue
                            sent = json.loads(line)["sent"]
                            if t_from <= sent <= t_to:
                                lags.append(landed - sent)
            lags.sort()
            if not lags:
                print("  no record delivered")
                return
            p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))]  # noqa: E731
            print(f"  {len(lags)} records over {len(owners)} shard owner(s): p50 {p(0.5):.2f} s, p99 {p(0.99):.2f} s, "
                  f"max {lags[-1]:.2f} s (goal p99 <= 8 s)")
        finally:
            stop.set()
            for w in workers:
                w.stop()
            server.stop()
            keep_logs(server, workers, "freshness")
            server.cleanup()


def table_freshness():
    print("## 6. freshness of a streaming table at DataFreshnessInSeconds 5 with 3 workers (serve --pg + 2 workers, "
          "4 shards, ~200 records/s; per record: from its PutRecords to the first snapshot whose checkpoint of its "
          "shard covers it, read through the REST catalog every 50 ms; goal p99 <= 8 s)")
    with PgCluster() as pg:
        conninfo = pg.create_database(f"pool{random.randrange(10**6)}")
        server = Server(config_text=CONFIG, extra_args=["--pg", conninfo], log_level=args.log_level).start()
        workers = []
        try:
            k = server.client()
            k.create_stream(StreamName="tf", StreamModeDetails={"StreamMode": "ON_DEMAND"})
            schema_arn, _ = register_schema(server.client("glue"), "bench", "tf", SCHEMA)
            st, body = kinesis_call(server, "CreateChannel", table_channel_request(
                "tf", "tf", schema_arn, "tables", "ns", "t", "dlq", freshness=5, partition="t"))
            assert st == 200, body
            arn = body["ChannelDescription"]["ChannelARN"]
            wait_channel(server, arn, timeout=60)
            workers = [Worker(conninfo, server.endpoint, server.config_path, server.data_dir) for _ in range(2)]
            time.sleep(5)  # the leases settle over the three processes
            stop = threading.Event()
            seen = []  # (time, {shard: checkpoint}) for every new snapshot
            snapshots = set()

            def poll():
                last = None
                while not stop.is_set():
                    t = rest_metadata(server, table_bucket_arn("tables"), "ns", "t")
                    now = time.time()
                    if t:
                        md = t["metadata"]
                        for snap in md.get("snapshots", []):
                            snapshots.add(snap["snapshot-id"])
                        cur = next((x for x in md.get("snapshots", [])
                                    if x["snapshot-id"] == md.get("current-snapshot-id")), None)
                        cps = {key[len("icestream.checkpoint."):]: int(v)
                               for key, v in (cur or {}).get("summary", {}).items()
                               if key.startswith("icestream.checkpoint.")}
                        if cps and cps != last:
                            seen.append((now, cps))
                            last = cps
                    time.sleep(0.05)
            poller = threading.Thread(target=poll)
            poller.start()
            sent = []  # (shard, sequence, time before the call)
            n, end = 0, time.time() + 40
            while time.time() < end:
                t0 = time.time()
                recs = [{"Data": json.dumps({"id": f"r{n + i}", "n": n + i, "amount": 1.25, "merchant": "m",
                                             "t": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode(),
                         "PartitionKey": f"k{n + i}"} for i in range(20)]
                r = k.put_records(StreamName="tf", Records=recs)
                sent += [(res["ShardId"], int(res["SequenceNumber"]), t0) for res in r["Records"]
                         if "SequenceNumber" in res]
                n += 20
                time.sleep(max(0.0, 0.1 - (time.time() - t0)))
            deadline = time.time() + 30
            while time.time() < deadline and not (seen and all(seen[-1][1].get(sh, -1) >= q for sh, q, _ in sent[-80:])):
                time.sleep(0.1)
            stop.set()
            poller.join()
            lags = sorted(next((ts for ts, cps in seen if cps.get(sh, -1) >= q), float("inf")) - t
                          for sh, q, t in sent)
            if not lags:
                print("  no record sent")
                return
            p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))]  # noqa: E731
            owners = {o for o, _ in checkpoints(server, arn).values()}
            print(f"  {len(lags)} records over {len(owners)} shard owner(s), {len(snapshots)} snapshots in ~40 s: "
                  f"p50 {p(0.5):.2f} s, p99 {p(0.99):.2f} s, max {lags[-1]:.2f} s (goal p99 <= 8 s)")
        finally:
            for w in workers:
                w.stop()
            server.stop()
            keep_logs(server, workers, "table_freshness")
            server.cleanup()


def renew():
    print("## 4. 1,000 leases renewed by one worker (server-side duration of the renew statement; goal p99 <= 50 ms)")
    # A plain icestream server is the source: 4 streams of 250 shards, each with an S3
    # channel made in the pool's database (`channels create --pg`), so the one worker offers
    # and takes 1,000 shard units (and 4 control units) and renews them all in one statement.
    with PgCluster(settings={"log_min_duration_statement": "0"}) as pg:
        conninfo = pg.create_database("renew")
        tmp = tempfile.mkdtemp()
        server = Server(config_text=CONFIG).start()
        w = None
        try:
            k = server.client()
            for i in range(4):
                k.create_stream(StreamName=f"renew{i}", ShardCount=250)
            for i in range(4):
                k.get_waiter("stream_exists").wait(StreamName=f"renew{i}", WaiterConfig={"Delay": 1})
                arn = k.describe_stream_summary(StreamName=f"renew{i}")["StreamDescriptionSummary"]["StreamARN"]
                k.update_stream_mode(StreamARN=arn, StreamModeDetails={"StreamMode": "ON_DEMAND"})
                k.get_waiter("stream_exists").wait(StreamName=f"renew{i}", WaiterConfig={"Delay": 1})
            cfg = os.path.join(tmp, "c.toml")
            with open(cfg, "w") as f:
                f.write(CONFIG.replace("[scaleout]\n", f'[scaleout]\npg = "{conninfo}"\nsource = "{server.endpoint}"\n'))
            for i in range(4):
                req = channel_request(f"renew{i}", f"renew{i}", bucket="out", compression="NONE", freshness=60)
                p = subprocess.run([harness.BINARY, "channels", "create", "--config", cfg], input=json.dumps(req),
                                   capture_output=True, text=True, timeout=60)
                if p.returncode != 0:
                    raise RuntimeError(f"channels create: {p.stdout}{p.stderr}")
            w = Worker(conninfo, server.endpoint, cfg, tmp)
            deadline, held = time.time() + 60, 0
            while time.time() < deadline:
                held = int(pg.psql(f"SELECT count(*) FROM icestream_lease WHERE owner = '{w.owner}'", "renew"))
                if held >= 1004:
                    break
                time.sleep(1)
            with open(pg.log, errors="replace") as f:
                skip = sum(1 for _ in f)  # renewals while the units were still being taken are not counted
            time.sleep(15)
            held = int(pg.psql(f"SELECT count(*) FROM icestream_lease WHERE owner = '{w.owner}'", "renew"))
        finally:
            if w:
                w.stop()
            server.stop()
            server.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)
        durations = []
        with open(pg.log, errors="replace") as f:
            for n, line in enumerate(f):
                m = n >= skip and re.search(r"duration: ([0-9.]+) ms\s+execute [^:]*: WITH hb AS \(UPDATE icestream_worker",
                                            line)
                if m:
                    durations.append(float(m.group(1)))
        durations.sort()
        if not durations:
            print("  no renew statement found in the log")
            return
        p = lambda q: durations[min(len(durations) - 1, int(q * len(durations)))]  # noqa: E731
        print(f"  {held} units held (1,000 shards + 4 control units); {len(durations)} renewals: p50 {p(0.5):.2f} ms, "
              f"p99 {p(0.99):.2f} ms, max {durations[-1]:.2f} ms")


for part in args.only.split(","):
    {"throughput": throughput, "failover": failover, "pgload": pgload, "renew": renew, "freshness": freshness,
     "table_freshness": table_freshness}[part]()

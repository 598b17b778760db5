"""Driver of bench/table-delivery (see run). Prints figures with their goals; asserts nothing.

Records: card transactions from bench/convert's generator (transactions.schema.json),
each padded to about 1 KiB by lengthening the merchant name with random words, and with
event_time spread over two hours (a live stream's records carry times close to their
arrival; the generator's raw times span days, which would make every batch touch
hundreds of hourly partitions).

1. Throughput: the records are put into an ON_DEMAND stream (4 shards) first, then a
   channel with StartingPosition TRIM_HORIZON delivers them; MB/s = record bytes / (the
   last commit's own time, its snapshot's timestamp-ms, taken as the commit is made, a few
   ms before its metadata is written - CreateChannel), and the server's
   CPU seconds (utime + stime from /proc/<pid>/stat) from CreateChannel until the poller
   saw that commit, per MB. The table is polled every 250 ms: the span ends where the
   server committed, not where the poller looked, and the poller (a Python process on the
   same two cores, two HTTP requests per look; the converter has no such neighbour) takes
   as little CPU from the delivery as it can. Against `icestream convert --threads
   N` (ZSTD) on the same records as JSON lines with the same N (--threads, which is also
   the server's delivery.table_convert_threads), its whole process timed by farm-bench:
   like for like, N cores each. --throughput-runs pairs run back to back (convert, then
   delivery), each pair's ratios printed; the goals (issue 20) hold when every pair meets
   them: MB/s >= 0.9x the converter's, CPU per MB <= 1.1x.
2. Freshness: DataFreshnessInSeconds 5, ~1 MB/s steady for --latency-seconds; for every
   record, the time from its PutRecords to the first table snapshot (polled through the
   REST catalog every 50 ms) whose icestream.checkpoint.<shard> covers its sequence number.
3. Memory: 16 shards, a --backlog-mb backlog, delivered from TRIM_HORIZON; the server's
   peak RSS (VmHWM, reset through /proc/<pid>/clear_refs before the channel starts).
4. Compaction (issue 10): three servers side by side for --compaction-seconds, each fed
   --compaction-rate records/s with event times near "now" (a batch spans one or two
   partition hours), target file size lowered to --target-mb: freshness 1 s, freshness
   60 s, and freshness 1 s with compaction off. Then live data files, mean live file size
   (goal >= target/4 once the table holds >= 4 targets), write amplification (goal <=
   3), and the query-side cost: DuckDB reading every column of all live data files of the
   1 s tables (query_time.mjs), with and without compaction.
5. Commit cost (issue 10): compaction off; a table built to --commit-files live files
   (records spread over 200 partition hours, so every 1 s commit adds ~200 files), and one
   with 10; then a steady trickle (one small file per 1 s commit) for --commit-seconds:
   the server's CPU time (utime + stime from /proc/<pid>/stat) per commit (goal: flat)."""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "lib"))
import harness  # noqa: E402
from harness import ACCOUNT, Server, kinesis_call, wait_channel  # noqa: E402
from table_check import (describe, metric, metrics, npm_dir, register_schema, rest_metadata,  # noqa: E402
                         table_bucket_arn, table_channel_request)

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEMA = os.path.join(ROOT, "bench", "convert", "transactions.schema.json")
ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--gen", required=True)
ap.add_argument("--throughput-mb", type=int, default=500)
ap.add_argument("--throughput-runs", type=int, default=3, help="consecutive delivery/convert pairs")
ap.add_argument("--threads", type=int, default=2,
                help="cores: the server's delivery.table_convert_threads and convert --threads")
ap.add_argument("--latency-seconds", type=int, default=60)
ap.add_argument("--delivery", default="", help="more [delivery] lines for the backlog servers (A/B of a setting), "
                "e.g. 'table_max_commit_bytes = 536870912'")
ap.add_argument("--backlog-mb", type=int, default=1000)
ap.add_argument("--compaction-seconds", type=int, default=600)
ap.add_argument("--compaction-rate", type=int, default=200, help="records/s of ~1 KiB")
ap.add_argument("--target-mb", type=float, default=2.0)
ap.add_argument("--commit-files", type=int, default=10000)
ap.add_argument("--commit-seconds", type=int, default=60)
ap.add_argument("--only", default="throughput,freshness,memory,compaction,commitcost")
ap.add_argument("--perf", default="", help="perf record (DWARF call graphs, 999 Hz) the server from CreateChannel to "
                "the last row of each backlog delivery, into this file (one per delivery: .1, .2, ...)")
ap.add_argument("--perf-flat", action="store_true",
                help="with --perf: no call graphs (less overhead; compare with `perf record -F 999` of convert)")
ap.add_argument("--log-level", default="warn",
                help="the servers' --log-level; below warn, each backlog delivery's log is kept and its path printed")
args = ap.parse_args()
harness.BINARY = os.path.abspath(args.bin)
CACHE = os.path.join(ROOT, ".cache", "bench-table")
os.makedirs(CACHE, exist_ok=True)
WORDS = ("card present online terminal settlement batch acquirer issuer region branch counter kiosk "
         "subscription renewal loyalty points voucher refund partial capture authorization merchant "
         "category gateway token wallet device browser mobile checkout basket order invoice").split()


def records_file(mb):
    """JSON lines of ~1 KiB card transactions, about `mb` MB; generated once and cached."""
    path = os.path.join(CACHE, f"transactions-1k-{mb}mb.jsonl")
    if os.path.exists(path):
        return path
    raw = subprocess.run([args.gen, str(max(1, mb * 55 // 100))], capture_output=True, check=True).stdout.splitlines()
    rng = random.Random(42)
    base = 1735689600  # 2025-01-01T00:00:00Z
    n = len(raw)
    with open(path + ".tmp", "wb") as out:
        for i, line in enumerate(raw):
            text = line.decode()
            secs = base + i * 7200 // n
            us = rng.randrange(10**6)
            text = re.sub(r'"event_time":"[^"]*"', time.strftime('"event_time":"%Y-%m-%dT%H:%M:%S', time.gmtime(secs))
                          + f'.{us:06d}Z"', text, count=1)
            pad = []
            while len(text) + sum(len(w) + 1 for w in pad) < 1010:
                pad.append(rng.choice(WORDS))
            text = text.replace('"name":"', '"name":"' + " ".join(pad) + " ", 1)
            out.write(text.encode() + b"\n")
    os.rename(path + ".tmp", path)
    return path


def load_lines(path, limit_mb=None):
    lines = []
    total = 0
    with open(path, "rb") as f:
        for line in f:
            line = line.rstrip(b"\n")
            lines.append(line)
            total += len(line)
            if limit_mb and total >= limit_mb * 1e6:
                break
    return lines, total


def put_all(server, stream, lines, threads=4):
    """PutRecords of every line (500 per call, retrying failed entries) from `threads` clients."""
    chunks = [lines[i:i + 500] for i in range(0, len(lines), 500)]
    lock = threading.Lock()

    def work():
        k = server.client(read_timeout=120)
        while True:
            with lock:
                if not chunks:
                    return
                chunk = chunks.pop()
            pending = [{"Data": d, "PartitionKey": f"k{zlib.crc32(d) & 0xffff}"} for d in chunk]
            while pending:
                r = k.put_records(StreamName=stream, Records=pending)
                pending = [p for p, res in zip(pending, r["Records"]) if "SequenceNumber" not in res]
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def table_state(server, wh, ns, table, times=None):
    """(total-records of the current snapshot, its summary) through the REST catalog. With
    `times` (a dict), also the snapshots' commit times in seconds: "first" and "current"."""
    t = rest_metadata(server, table_bucket_arn(wh), ns, table)
    if not t:
        return 0, {}
    md = t["metadata"]
    cur = md.get("current-snapshot-id")
    snaps = md.get("snapshots", [])
    if times is not None and snaps:
        times["first"] = min(s["timestamp-ms"] for s in snaps) / 1000
    for s in snaps:
        if s["snapshot-id"] == cur:
            if times is not None:
                times["current"] = s["timestamp-ms"] / 1000
            return int(s["summary"].get("total-records", 0)), s["summary"]
    return 0, {}


def channel_request(server, stream, name, freshness, start):
    """CreateChannel's request, its schema registered first (a Glue client, then two calls)."""
    arn, _ = register_schema(server.client("glue"), "bench", f"tx-{name}", open(SCHEMA).read())
    return table_channel_request(name, stream, arn, "bench", "bench", name.replace("-", "_"), "bench-dlq",
                                 compression="ZSTD", freshness=freshness, start=start)


def start_channel(server, stream, name, freshness, start, req=None):
    if req is None:
        req = channel_request(server, stream, name, freshness, start)
    st, body = kinesis_call(server, "CreateChannel", req)
    assert st == 200, body
    return body["ChannelDescription"]["ChannelARN"]


def rss_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    """utime + stime of a process in seconds (/proc/<pid>/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


PERF_RUNS = 0
LOG_RUNS = 0


def keep_log(server):
    """Copies the server's log next to the cache when --log-level asks for more than warn."""
    if args.log_level == "warn":
        return
    global LOG_RUNS
    LOG_RUNS += 1
    path = os.path.join(CACHE, f"server-{LOG_RUNS}.log")
    shutil.copyfile(server.log_path, path)
    print(f"   server log: {path}", flush=True)


def deliver_backlog(shards, mb, measure_rss=False):
    server = Server(config_text=f"[delivery]\ntable_convert_threads = {args.threads}\n{args.delivery}\n",
                    log_level=args.log_level).start()
    try:
        k = server.client()
        if shards == 4:
            k.create_stream(StreamName="bl")  # ON_DEMAND, 4 shards
        else:
            k.create_stream(StreamName="bl", ShardCount=shards)
            k.update_stream_mode(StreamARN=f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/bl",
                                 StreamModeDetails={"StreamMode": "ON_DEMAND"})
        lines, nbytes = load_lines(records_file(max(mb, args.throughput_mb)), mb)
        p0 = time.time()
        put_all(server, "bl", lines)
        put_s = time.time() - p0
        pid = server.proc.pid
        reset = False
        if measure_rss:
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")  # resets VmHWM to the current RSS
                reset = True
            except OSError:
                pass
        before = rss_kb(pid, "VmRSS")
        name = f"bl{shards}"
        perf = None
        if args.perf:
            global PERF_RUNS
            PERF_RUNS += 1
            graph = [] if args.perf_flat else ["--call-graph", "dwarf,32768"]
            perf = subprocess.Popen(["perf", "record", *graph, "-F", "999", "-q", "-p", str(pid), "-o", f"{args.perf}.{PERF_RUNS}"])
            time.sleep(0.5)  # perf attaches
        # The schema is registered before the clock starts: the span is CreateChannel to the
        # last commit (making a boto3 Glue client alone took ~80 ms of a ~1.3 s delivery).
        req = channel_request(server, "bl", name, 1, "TRIM_HORIZON")
        cpu0 = cpu_s(pid)
        t0 = time.time()
        arn = start_channel(server, "bl", name, 1, "TRIM_HORIZON", req)
        wh = "bench"
        peak = 0
        active_s = None
        times = {}
        while True:
            n, _ = table_state(server, wh, "bench", name, times)
            if active_s is None:
                st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arn})
                if body["ChannelDescription"]["ChannelStatus"] == "ACTIVE":
                    active_s = time.time() - t0
            peak = max(peak, rss_kb(pid, "VmRSS"))
            if n >= len(lines):
                break
            if time.time() - t0 > 1800:
                raise RuntimeError(f"only {n} of {len(lines)} rows after 30 min")
            time.sleep(0.25)
        cpu = cpu_s(pid) - cpu0
        # The server's clock and this one are the machine's: the span ends at the commit.
        secs = times["current"] - t0
        first_commit_s = times["first"] - t0
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(60)
        text = metrics(server)
        commits = metric(text, "CommitSuccess", name)
        return {"records": len(lines), "mb": nbytes / 1e6, "seconds": secs, "mb_s": nbytes / 1e6 / secs,
                "put_mb_s": nbytes / 1e6 / put_s, "commits": commits[0] if commits else None,
                "rss_before_mb": before / 1024, "peak_rss_mb": rss_kb(pid, "VmHWM") / 1024,
                "peak_sampled_mb": peak / 1024, "hwm_reset": reset, "arn": arn, "active_s": active_s,
                "first_commit_s": first_commit_s, "cpu_s": cpu, "cpu_s_per_100mb": cpu * 1e8 / nbytes}
    finally:
        server.stop()
        keep_log(server)
        server.cleanup()


def convert_baseline(lines_path, mb):
    lines, nbytes = load_lines(lines_path, mb)
    inp = os.path.join(CACHE, f"convert-input-{mb}mb.jsonl")
    if not os.path.exists(inp):
        with open(inp + ".tmp", "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
        os.rename(inp + ".tmp", inp)
    out = os.path.join(CACHE, "convert-out.parquet")
    p = subprocess.run(["farm-bench", "-n", "3", "--warmup", "1", "--timeout", "900", "--",
                        os.path.abspath(args.bin), "convert", "--schema", SCHEMA, "--input", inp, "--output", out,
                        "--compression", "zstd", "--threads", str(args.threads), "--quiet"],
                       capture_output=True, text=True)
    m = re.search(r"^A wall s\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", p.stdout, re.M)
    c = re.search(r"^A cpu s\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", p.stdout, re.M)
    if p.returncode != 0 or not m or not c:
        raise RuntimeError("farm-bench: " + p.stdout + p.stderr)
    wall = float(m.group(2))
    cpu = float(c.group(2))
    os.remove(out)
    return {"mb": nbytes / 1e6, "seconds": wall, "mb_s": nbytes / 1e6 / wall, "spread": (float(m.group(1)), float(m.group(3))),
            "cpu_s": cpu, "cpu_s_per_100mb": cpu * 1e8 / nbytes}


def freshness():
    server = Server().start()
    try:
        k = server.client()
        k.create_stream(StreamName="fr")
        arn = start_channel(server, "fr", "fr", 5, "LATEST")
        wait_channel(server, arn, timeout=60)
        lines, _ = load_lines(records_file(args.throughput_mb), 100)
        put_times = []   # (shard, seq, time before the PutRecords call)
        seen = []        # (time seen, {shard: checkpoint})
        stop = threading.Event()

        def poll():
            last = None
            while not stop.is_set():
                _, summary = table_state(server, "bench", "bench", "fr")
                now = time.time()
                cps = {k2[len("icestream.checkpoint."):]: int(v) for k2, v in summary.items()
                       if k2.startswith("icestream.checkpoint.")}
                if cps and cps != last:
                    seen.append((now, cps))
                    last = cps
                time.sleep(0.05)
        w = threading.Thread(target=poll)
        w.start()
        i = 0
        end = time.time() + args.latency_seconds
        while time.time() < end:   # ~1 MB/s: 100 records of ~1 KiB every 0.1 s
            t = time.time()
            batch = [lines[(i + j) % len(lines)] for j in range(100)]
            r = k.put_records(StreamName="fr", Records=[{"Data": d, "PartitionKey": f"k{i + j}"}
                                                         for j, d in enumerate(batch)])
            for res in r["Records"]:
                if "SequenceNumber" in res:
                    put_times.append((res["ShardId"], int(res["SequenceNumber"]), t))
            i += 100
            time.sleep(max(0.0, 0.1 - (time.time() - t)))
        deadline = time.time() + 30
        while time.time() < deadline:
            if seen and all(seen[-1][1].get(s, -1) >= q for s, q, _ in put_times[-400:]):
                break
            time.sleep(0.1)
        stop.set()
        w.join()
        lat = []
        for shard, seq, t in put_times:
            vis = next((ts for ts, cps in seen if cps.get(shard, -1) >= seq), None)
            if vis is not None:
                lat.append(vis - t)
        lat.sort()
        return {"records": len(lat), "sent": len(put_times), "p50": lat[len(lat) // 2],
                "p99": lat[int(len(lat) * 0.99)], "max": lat[-1], "snapshots": len(seen)}
    finally:
        server.stop()
        server.cleanup()


EVENT_TIME = re.compile(rb'"event_time":"[^"]*"')


def with_event_time(line, secs):
    us = int((secs % 1) * 1e6)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{us:06d}Z"
    return EVENT_TIME.sub(b'"event_time":"' + stamp.encode() + b'"', line, count=1)


class Feeder(threading.Thread):
    """`rate` records/s (in puts every 0.25 s) of the bench records, each with its
    event_time set to a moment within `spread_hours` hours before now (0: within the last
    2 s, a live stream)."""

    def __init__(self, server, stream, lines, rate, spread_hours=0, seed=1):
        super().__init__(daemon=True)
        self.k = server.client(read_timeout=60)
        self.stream, self.lines, self.rate, self.spread = stream, lines, rate, spread_hours
        self.rng = random.Random(seed)
        self.acked = 0
        self.stop = threading.Event()

    def run(self):
        i = 0
        per_put = max(1, self.rate // 4)
        while not self.stop.is_set():
            t0 = time.time()
            recs = []
            for _ in range(per_put):
                if self.spread:
                    when = t0 - self.rng.randrange(self.spread) * 3600 - self.rng.uniform(0, 3599)
                else:
                    when = t0 - self.rng.uniform(0, 2)
                recs.append({"Data": with_event_time(self.lines[i % len(self.lines)], when),
                             "PartitionKey": f"k{self.rng.randrange(10**6)}"})
                i += 1
            while recs:
                r = self.k.put_records(StreamName=self.stream, Records=recs)
                ok = sum(1 for res in r["Records"] if "SequenceNumber" in res)
                self.acked += ok
                recs = [p for p, res in zip(recs, r["Records"]) if "SequenceNumber" not in res]
            self.stop.wait(max(0.0, 0.25 - (time.time() - t0)))


def delivery_config(target_bytes, compaction=True):
    return (f"[delivery]\ntable_target_file_bytes = {int(target_bytes)}\n"
            f"table_compaction = {'true' if compaction else 'false'}\n")


def status(server, arn):
    return describe(server, arn).get("IcestreamStatus", {})


def wait_rows(server, name, count, timeout):
    deadline = time.time() + timeout
    while True:
        n, _ = table_state(server, "bench", "bench", name)
        if n >= count:
            return n
        if time.time() > deadline:
            raise RuntimeError(f"{name}: {n} of {count} rows after {timeout} s")
        time.sleep(0.5)


def query_time(server, name):
    p = subprocess.run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "query_time.mjs"), npm_dir(),
                        server.endpoint + "/iceberg", table_bucket_arn("bench"), "bench", name.replace("-", "_"), "3"],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError("query_time.mjs: " + p.stderr)
    return json.loads(p.stdout)


def compaction_runs():
    target = args.target_mb * 2**20
    lines, _ = load_lines(records_file(args.throughput_mb), 50)
    cases = [("c1", 1, True), ("c60", 60, True), ("n1", 1, False)]
    runs = []
    try:
        for name, fresh, comp in cases:
            server = Server(config_text=delivery_config(target, comp)).start()
            runs.append({"name": name, "freshness": fresh, "compaction": comp, "server": server})
        for r in runs:
            k = r["server"].client()
            k.create_stream(StreamName=r["name"])
            r["arn"] = start_channel(r["server"], r["name"], r["name"], r["freshness"], "LATEST")
            wait_channel(r["server"], r["arn"], timeout=60)
            r["feeder"] = Feeder(r["server"], r["name"], lines, args.compaction_rate, seed=len(runs))
        for r in runs:
            r["feeder"].start()
        time.sleep(args.compaction_seconds)
        for r in runs:
            r["feeder"].stop.set()
        for r in runs:
            r["feeder"].join(60)
            wait_rows(r["server"], r["name"], r["feeder"].acked, timeout=180)
        time.sleep(3)  # compaction after the last commit
        for r in runs:
            st = status(r["server"], r["arn"])
            text = metrics(r["server"])
            live_bytes = None
            m = re.search(r'^icestream_table_live_data_bytes\{[^}]*channel_name="' + r["name"] + r'"[^}]*\} ([0-9.eE+-]+)$',
                          text, re.M)
            if m:
                live_bytes = float(m.group(1))
            r.update(records=r["feeder"].acked, live=st.get("LiveDataFiles"), mean=st.get("MeanDataFileBytes"),
                     live_bytes=live_bytes, wa=st.get("Compaction", {}).get("WriteAmplification"),
                     compaction_commits=st.get("Compaction", {}).get("Commits"), appends=st.get("CommitCount"))
        for r in runs:
            # The live files and bytes from the table's manifests (query_time.mjs lists
            # them), the query time for the 1 s tables.
            r["query"] = query_time(r["server"], r["name"])
        return target, runs
    finally:
        for r in runs:
            r["server"].stop()
            r["server"].cleanup()


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def commit_cost(files):
    """Server CPU ms per commit of a 1 s channel with one small file per commit, on a
    table grown to about `files` live files first (compaction off)."""
    lines, _ = load_lines(records_file(args.throughput_mb), 50)
    server = Server(config_text=delivery_config(128 * 2**20, compaction=False)).start()
    try:
        name = f"cc{files}"
        k = server.client()
        k.create_stream(StreamName=name)
        arn = start_channel(server, name, name, 1, "LATEST")
        wait_channel(server, arn, timeout=60)
        acked = 0
        t0 = time.time()
        if files > 50:
            build = Feeder(server, name, lines, 600, spread_hours=200, seed=5)
        else:
            build = Feeder(server, name, lines, 8, seed=5)
        build.start()
        while (status(server, arn).get("LiveDataFiles") or 0) < files:
            time.sleep(0.5)
            if time.time() - t0 > 1800:
                raise RuntimeError("the table did not grow")
        build.stop.set()
        build.join(60)
        acked += build.acked
        wait_rows(server, name, acked, timeout=300)
        build_s = time.time() - t0
        live = status(server, arn).get("LiveDataFiles")
        trickle = Feeder(server, name, lines, 8, seed=6)
        trickle.start()
        time.sleep(5)  # steady state
        pid = server.proc.pid
        c0, cpu0, w0 = metric(metrics(server), "CommitSuccess", name)[0], proc_cpu_s(pid), time.time()
        # The server's CPU sampled every 20 ms from /proc (no request to the server), to
        # split it by commit afterwards with the snapshots' timestamps.
        samples = []
        while time.time() - w0 < args.commit_seconds:
            samples.append((time.time(), proc_cpu_s(pid)))
            time.sleep(0.02)
        c1, cpu1, w1 = metric(metrics(server), "CommitSuccess", name)[0], proc_cpu_s(pid), time.time()
        trickle.stop.set()
        trickle.join(60)
        commits = c1 - c0
        md = rest_metadata(server, table_bucket_arn("bench"), "bench", name)["metadata"]
        stamps = sorted(int(x["timestamp-ms"]) / 1000 for x in md["snapshots"]
                        if "icestream.channel-arn" in x["summary"] and w0 <= int(x["timestamp-ms"]) / 1000 <= w1)

        def cpu_at(t):
            before = [c for ts, c in samples if ts <= t]
            return before[-1] if before else samples[0][1]
        per = sorted((cpu_at(b) - cpu_at(a)) * 1000 for a, b in zip(stamps, stamps[1:]))
        return {"files": live, "build_s": build_s, "commits": commits, "cpu_s": cpu1 - cpu0, "wall_s": w1 - w0,
                "ms_per_commit": (cpu1 - cpu0) * 1000 / commits if commits else float("nan"),
                "median_ms": per[len(per) // 2] if per else float("nan"), "max_ms": per[-1] if per else float("nan")}
    finally:
        server.stop()
        server.cleanup()


only = set(args.only.split(","))
print(f"load average before: {open('/proc/loadavg').read().split()[:3]} ({os.cpu_count()} cores)")
if "throughput" in only:
    path = records_file(args.throughput_mb)
    print(f"\n== throughput: {args.throughput_mb} MB of ~1 KiB card transactions already in a 4-shard ON_DEMAND stream,"
          f" channel from TRIM_HORIZON, ZSTD, freshness 1 s, delivery.table_convert_threads {args.threads}; against"
          f" icestream convert --threads {args.threads} on the same records ({args.throughput_runs} pairs back to back)")
    pairs = []
    for i in range(args.throughput_runs):
        conv = convert_baseline(path, args.throughput_mb)
        tp = deliver_backlog(4, args.throughput_mb)
        ratio, cpu_ratio = tp["mb_s"] / conv["mb_s"], tp["cpu_s_per_100mb"] / conv["cpu_s_per_100mb"]
        pairs.append((ratio, cpu_ratio))
        print(f"   pair {i + 1}: delivery {tp['records']} records, {tp['mb']:.0f} MB in {tp['seconds']:.2f} s = "
              f"{tp['mb_s']:.1f} MB/s, server CPU {tp['cpu_s']:.2f} s = {tp['cpu_s_per_100mb']:.2f} CPU-s/100 MB "
              f"({tp['commits']:.0f} commits; ACTIVE after {tp['active_s']:.2f} s, first commit after "
              f"{tp['first_commit_s']:.2f} s; the backlog was put at {tp['put_mb_s']:.1f} MB/s beforehand)")
        print(f"           convert --threads {args.threads} (farm-bench median of 3, min/max {conv['spread'][0]:.2f}/"
              f"{conv['spread'][1]:.2f} s): {conv['mb']:.0f} MB in {conv['seconds']:.2f} s = {conv['mb_s']:.1f} MB/s, "
              f"{conv['cpu_s_per_100mb']:.2f} CPU-s/100 MB")
        print(f"           ratio MB/s {ratio:.2f} (goal: >= 0.9)   CPU per MB {cpu_ratio:.2f} (goal: <= 1.1)", flush=True)
    print(f"   worst of {len(pairs)} pairs: MB/s ratio {min(p[0] for p in pairs):.2f} (goal: >= 0.9 in every pair), "
          f"CPU per MB ratio {max(p[1] for p in pairs):.2f} (goal: <= 1.1)")
if "freshness" in only:
    print(f"\n== freshness: DataFreshnessInSeconds 5, ~1 MB/s steady for {args.latency_seconds} s")
    f = freshness()
    print(f"   {f['records']} of {f['sent']} records, {f['snapshots']} snapshots seen: row visible - record put: "
          f"p50 {f['p50']:.2f} s, p99 {f['p99']:.2f} s, max {f['max']:.2f} s   (goal: p99 <= 6 s)")
if "memory" in only:
    print(f"\n== memory: 16 shards, {args.backlog_mb} MB backlog delivered from TRIM_HORIZON")
    m = deliver_backlog(16, args.backlog_mb, measure_rss=True)
    note = "" if m["hwm_reset"] else " (VmHWM could not be reset: it includes the ingest)"
    print(f"   {m['records']} records, {m['mb']:.0f} MB caught up in {m['seconds']:.1f} s ({m['mb_s']:.1f} MB/s); "
          f"RSS before {m['rss_before_mb']:.0f} MB; peak RSS {m['peak_rss_mb']:.0f} MB{note}   (goal: <= 512 MiB)")
if "compaction" in only:
    print(f"\n== compaction: {args.compaction_seconds} s at {args.compaction_rate} records/s (~1 KiB, event times near now), "
          f"target file size {args.target_mb:g} MiB, ZSTD; three servers side by side")
    target, runs = compaction_runs()
    for r in runs:
        files, nbytes = r["query"]["files"], r["query"]["bytes"]
        full = nbytes / target
        mean = nbytes / files if files else 0
        goal = ("baseline without compaction, no goal" if not r["compaction"] else
                "goal: >= target/4" if full >= 4 else "no goal: the table holds < 4 targets")
        print(f"   freshness {r['freshness']:>2} s, compaction {'on ' if r['compaction'] else 'off'}: {r['records']} records, "
              f"{r['appends']} appends, {r['compaction_commits']} compaction commits; {files} live data files, "
              f"{nbytes / 2**20:.1f} MiB = {full:.1f} targets (status: {r['live']} files, mean {r['mean']} B)")
        print(f"      mean live file {mean / 2**20:.2f} MiB = {mean / target:.2f} x target   ({goal})")
        print(f"      write amplification {r['wa']:.2f}   ({'goal: <= 3' if r['compaction'] else 'no goal'})")
    med = {}
    for r in runs:
        x = r["query"]
        med[r["name"]] = sorted(x["read_ms"])[len(x["read_ms"]) // 2]
        print(f"   query, freshness {r['freshness']:>2} s, compaction {'on ' if r['compaction'] else 'off'}: DuckDB reads "
              f"{x['rows']} rows of {x['files']} files ({x['bytes'] / 2**20:.1f} MiB) in {med[r['name']]:.0f} ms (median "
              f"of {len(x['read_ms'])}; listing the files took {x['plan_ms']:.0f} ms)")
    print(f"   1 s freshness: query time without / with compaction {med['n1'] / med['c1']:.1f}x; with compaction / 60 s "
          f"freshness {med['c1'] / med['c60']:.2f}   (goal: a table written at 1 s freshness reads as fast as one "
          f"written in large batches, ~1.0)")
if "commitcost" in only:
    print(f"\n== commit cost: 1 s freshness, one small file per commit for {args.commit_seconds} s, compaction off")
    small = commit_cost(10)
    large = commit_cost(args.commit_files)
    for c in (small, large):
        print(f"   {c['files']} live files (built in {c['build_s']:.0f} s): {c['commits']:.0f} commits, server CPU "
              f"{c['cpu_s']:.2f} s in {c['wall_s']:.0f} s = {c['ms_per_commit']:.1f} ms per commit "
              f"(between two commits: median {c['median_ms']:.1f} ms, max {c['max_ms']:.0f} ms)")
    print(f"   ratio {large['ms_per_commit'] / small['ms_per_commit']:.2f} (median "
          f"{large['median_ms'] / small['median_ms']:.2f})   (goal: flat, ~1.0)")

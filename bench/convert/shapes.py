"""Driver of bench/convert/shapes: per column shape, icestream convert vs DuckDB, timed by
farm-bench in alternating pairs (A = icestream, B = DuckDB), so that both see the same
machine. Prints figures and goals; asserts nothing.

Two ratios are printed. "process" compares whole processes (DuckDB's includes node and
DuckDB start-up, ~0.2 s). "COPY" compares icestream's whole process with DuckDB's COPY
statement alone (its own timer), which favours DuckDB; the goals are judged on it. The CPU
ratio is taken the same way: icestream's whole process against DuckDB's COPY statement alone
(process.cpuUsage() around it, all of DuckDB's threads). Against DuckDB's whole process it
would count node's and DuckDB's start-up (~0.65 CPU-s) and look better than the COPY wall
ratio without icestream being any faster.
Goals (issue 20): >= 1.5x on every shape and on the mix, file size <= 1.1x."""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--gen", required=True)
ap.add_argument("--size-mb", type=int, default=int(os.environ.get("BENCH_SIZE_MB", "100")))
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--only", default="")
ap.add_argument("--threads", default="1,2")
ap.add_argument("--compression-level", type=int, default=0, help="icestream zstd level (0: default, 3)")
args = ap.parse_args()

STRUCT_JS = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"},
    "loc": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
    "active": {"type": "boolean"}}}
STRUCT_DUCK = "STRUCT(id BIGINT, name VARCHAR, loc STRUCT(lat DOUBLE, lon DOUBLE), active BOOLEAN)"
# shape -> [(column, JSON Schema, DuckDB type)] (the generator's columns, gen_shapes.cc)
COLUMN_KINDS = {
    "uuid": ({"type": "string", "format": "uuid"}, "UUID"),
    "timestamp": ({"type": "string", "format": "date-time"}, "TIMESTAMPTZ"),
    "decimal": ({"type": "number", "multipleOf": 0.01}, "DECIMAL(38,2)"),
    "double": ({"type": "number"}, "DOUBLE"),
    "integer": ({"type": "integer"}, "BIGINT"),
    "dict_string": ({"type": "string"}, "VARCHAR"),
    "long_string": ({"type": "string"}, "VARCHAR"),
    "struct": (STRUCT_JS, STRUCT_DUCK),
    "string_array": ({"type": "array", "items": {"type": "string"}}, "VARCHAR[]"),
}
COLUMNS = {
    "uuid": ["u0", "u1", "u2", "u3"], "timestamp": ["t0", "t1", "t2", "t3"],
    "decimal": ["d0", "d1", "d2", "d3"], "double": ["f0", "f1", "f2", "f3"],
    "integer": ["i0", "i1", "i2", "i3"], "dict_string": ["s0", "s1", "s2", "s3"],
    "long_string": ["l0", "l1"], "struct": ["m0", "m1"], "string_array": ["a0", "a1"],
}
SHAPES = list(COLUMNS) + ["mix"]


def columns_of(shape):
    if shape == "mix":
        return [(cols[0], k) for k, cols in COLUMNS.items()]
    return [(c, shape) for c in COLUMNS[shape]]


def schema_files(shape, d):
    cols = columns_of(shape)
    js = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
          "properties": {c: COLUMN_KINDS[k][0] for c, k in cols}}
    path = os.path.join(d, f"{shape}.schema.json")
    with open(path, "w") as f:
        json.dump(js, f)
    duck = "{" + ", ".join(f"{c}: '{COLUMN_KINDS[k][1]}'" for c, k in cols) + "}"
    return path, duck


def farm(a, b, timeout):
    """Runs farm-bench A vs B; returns its table as {row: (min, median, max)}."""
    cmd = ["farm-bench", "-n", str(args.runs), "--warmup", "1", "--timeout", str(timeout), "--vs", b, "--"] + a
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("farm-bench failed: " + p.stdout + p.stderr)
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^(A/B \w+|[AB] \w+ \w+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", line)
        if m:
            rows[m.group(1)] = tuple(float(m.group(i)) for i in (2, 3, 4))
    for k in ("A wall s", "B wall s", "A/B wall"):
        if k not in rows:
            raise RuntimeError("farm-bench output without " + k + ":\n" + p.stdout)
    return rows, p.stdout


def main():
    cache = os.path.join(ROOT, ".cache", "bench-convert", "shapes")
    os.makedirs(cache, exist_ok=True)
    npm = os.path.join(ROOT, ".cache", "npm")
    only = [s for s in args.only.split(",") if s] or SHAPES
    threads_list = [int(t) for t in args.threads.split(",")]
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]} ({os.cpu_count()} cores); "
          f"{args.size_mb} MB per shape, farm-bench {args.runs} pairs per row")
    hdr = (f"{'shape':<13}{'thr':>4}{'ice MB/s':>10}{'duck MB/s':>11}{'ratio':>7}{'duck COPY':>11}"
           f"{'ratio':>7}{'ice MB':>9}{'duck MB':>9}{'size':>7}{'ice RSS':>9}{'ice CPU':>9}{'duck CPU':>10}{'ratio':>7}"
           f"{'proc':>6}{'w/c ice':>8}{'duck':>6}{'same':>6}")
    print(hdr)
    results = []
    for shape in only:
        inp = os.path.join(cache, f"{shape}-{args.size_mb}mb.jsonl")
        if not os.path.exists(inp):
            with open(inp + ".tmp", "wb") as f:
                subprocess.run([args.gen, shape, str(args.size_mb)], stdout=f, check=True)
            os.rename(inp + ".tmp", inp)
        subprocess.run(["cat", inp], stdout=subprocess.DEVNULL, check=True)  # page cache
        nbytes = os.path.getsize(inp)
        schema, duck_cols = schema_files(shape, cache)
        for threads in threads_list:
            ice_out = os.path.join(cache, f"out-ice-{shape}-{threads}.parquet")
            duck_out = os.path.join(cache, f"out-duck-{shape}-{threads}.parquet")
            duck_log = os.path.join(cache, f"duck-{shape}-{threads}.log")
            if os.path.exists(duck_log):
                os.remove(duck_log)
            a = [os.path.abspath(args.bin), "convert", "--schema", schema, "--input", inp, "--output", ice_out,
                 "--compression", "zstd", "--threads", str(threads), "--quiet"]
            if args.compression_level:
                a += ["--compression-level", str(args.compression_level)]
            duck_cmd = (f"node {os.path.join(ROOT, 'bench', 'convert', 'duckdb_convert.mjs')} {npm} {threads} "
                        f"{inp} {duck_out} \"{duck_cols}\"")
            b = "sh -c 'rm -f " + duck_out + "; exec " + duck_cmd.replace("'", "'\\''") + " >>" + duck_log + " 2>&1'"
            rows, raw = farm(a, b, timeout=max(300, args.size_mb * 12))
            log = open(duck_log).read()
            copy_s = [float(x) for x in re.findall(r"seconds: ([0-9.]+)", log)]
            copy_cpu = [float(x) for x in re.findall(r"cpu: ([0-9.]+)", log)]
            copy_s = copy_s[1:] if len(copy_s) > args.runs else copy_s  # the warm-up's first
            copy_cpu = copy_cpu[1:] if len(copy_cpu) > args.runs else copy_cpu
            if not copy_s:
                raise RuntimeError("DuckDB printed no time: " + open(duck_log).read())
            ice_s, duck_s = rows["A wall s"][1], rows["B wall s"][1]
            copy_med = statistics.median(copy_s)
            ratio = 1 / rows["A/B wall"][1]
            ratio_copy = copy_med / ice_s
            ice_size, duck_size = os.path.getsize(ice_out), os.path.getsize(duck_out)
            rss = rows.get("A peak MiB", (0, 0, 0))[1]
            # CPU seconds (user + sys) per 100 MB of input: steadier than wall time on a
            # shared machine. icestream's is its whole process; DuckDB's both its whole
            # process (node and start-up, ~0.65 CPU-s, included) and its COPY statement
            # alone (process.cpuUsage() around it, every thread), which the ratio uses, as
            # the COPY wall ratio does.
            ice_cpu = rows.get("A cpu s", (0, 0, 0))[1] * 1e8 / nbytes
            duck_cpu_proc = rows.get("B cpu s", (0, 0, 0))[1] * 1e8 / nbytes
            duck_cpu = statistics.median(copy_cpu) * 1e8 / nbytes if copy_cpu else 0
            r = dict(shape=shape, threads=threads, ice=nbytes / 1e6 / ice_s, duck=nbytes / 1e6 / duck_s,
                     ratio=ratio, duck_copy=nbytes / 1e6 / copy_med, ratio_copy=ratio_copy,
                     ice_mb=ice_size / 1e6, duck_mb=duck_size / 1e6, size=ice_size / duck_size, rss=rss,
                     ice_cpu=ice_cpu, duck_cpu=duck_cpu, duck_cpu_proc=duck_cpu_proc,
                     ice_wall_per_cpu=ice_s / rows["A cpu s"][1] if rows.get("A cpu s", (0, 0, 0))[1] else 0,
                     duck_wall_per_cpu=copy_med / statistics.median(copy_cpu) if copy_cpu else 0)
            same = subprocess.run(["node", os.path.join(ROOT, "bench", "convert", "same_rows.mjs"), npm, ice_out,
                                   duck_out], capture_output=True, text=True)
            m = re.search(r"only in icestream's (\d+), only in DuckDB's (\d+)", same.stdout)
            r["same"] = "yes" if m and m.group(1) == "0" and m.group(2) == "0" else \
                ("NO" if m else "?")
            if r["same"] != "yes":
                print("   rows differ or could not be compared: " + (same.stdout + same.stderr).strip(), flush=True)
            results.append(r)
            print(f"{shape:<13}{threads:>4}{r['ice']:>10.1f}{r['duck']:>11.1f}{r['ratio']:>7.2f}"
                  f"{r['duck_copy']:>11.1f}{r['ratio_copy']:>7.2f}{r['ice_mb']:>9.2f}{r['duck_mb']:>9.2f}"
                  f"{r['size']:>7.3f}{rss:>9.0f}{ice_cpu:>9.2f}{duck_cpu:>10.2f}"
                  f"{duck_cpu / ice_cpu if ice_cpu else 0:>7.2f}{duck_cpu_proc:>6.2f}{r['ice_wall_per_cpu']:>8.2f}"
                  f"{r['duck_wall_per_cpu']:>6.2f}{r['same']:>6}", flush=True)
    print()
    print("ratio: icestream / DuckDB MB/s (whole processes, farm-bench median of pairs); COPY: against DuckDB's")
    print("COPY statement alone (node and DuckDB start-up left out); size: icestream / DuckDB file bytes;")
    print("CPU: CPU-seconds (user + sys) per 100 MB of input: icestream's whole process (farm-bench median),")
    print("DuckDB's COPY statement alone (all its threads), and DuckDB's over icestream's (how many times less")
    print("CPU icestream spends); proc: DuckDB's whole process (node and DuckDB start-up, ~0.65 CPU-s, included);")
    print("w/c: wall over CPU seconds, icestream's process and DuckDB's COPY (< 1: more than one core busy;")
    print("> 1: waiting or preempted); same: DuckDB reads both files and finds the same rows in each")
    print("(bench/convert/same_rows.mjs, EXCEPT ALL both ways).")
    worst = min(results, key=lambda r: r["ratio_copy"])
    worst_size = max(results, key=lambda r: r["size"])
    print(f"lowest COPY ratio: {worst['ratio_copy']:.2f} ({worst['shape']}, {worst['threads']} thread(s))   "
          f"(goal: >= 1.5 on every shape and on the mix)")
    print(f"largest size ratio: {worst_size['size']:.3f} ({worst_size['shape']}, {worst_size['threads']} thread(s))"
          f"   (goal: <= 1.1)")
    with open(os.path.join(cache, "last-results.json"), "w") as f:
        json.dump(results, f, indent=1)


main()

"""Driver of bench/fanout (see run). Prints figures; asserts nothing.

Two parts, both with the AWS SDK for JavaScript v3 (clients.cjs) as producer:

1. PutRecords MB/s over HTTP/2 vs HTTP/1.1 with the same client, icestream only: one
   KinesisClient, `--batch` records of `--record-size` bytes per call, `--inflight` calls
   in flight, for `--seconds`; NodeHttpHandler (HTTP/1.1 keep-alive) against the Kinesis
   client's default NodeHttp2Handler (no requestHandler given; it is configured with
   disableConcurrentStreams, so one HTTP/2 session, one TCP connection, per request) and
   against `new NodeHttp2Handler()` (pooled sessions, concurrent streams). Goal: >= 0.9x
   the HTTP/1.1 figure. Rounds alternate so that drift hits every handler alike.

3, 4. Hostile clients and 1,000 subscriptions across 100 streams: see attacks.py.

2. Fan-out, 1 producer, 1 shard, N = 1, 5, 20 consumers. Enhanced fan-out (SubscribeToShard,
   over HTTP/2 when the server speaks it) against polling GetRecords every 200 ms (AWS's
   recommended minimum) on the same server and against kinesalite's polling: per-consumer
   and aggregate read MB/s, delivery latency p50/p99 (PutRecords acknowledgement -> record
   received). Two phases per configuration: a steady 1,000 records/s of 1 KiB (a shard's
   write quota) for latency, then the producer as fast as `--inflight` calls in flight go
   for MB/s. The readers (`--readers`): `raw` (default) frames the event stream / reads the
   GetRecords body and only picks each record's index and size out of it, so that the
   aggregate measures the servers; `sdk` is the KinesisClient itself (CRC checks, JSON,
   base64 of every record). Polling readers are the same code against both servers. The
   CPU seconds each party used (server, kinesalite, the Node clients) are printed beside
   each row: on a small machine all share the same cores.

Each record carries its index in its first 8 bytes; the producer notes when PutRecords
acknowledged it, each consumer when it received it (one clock: same Node process).
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "lib"))
import harness  # noqa: E402
from harness import Server  # noqa: E402

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--npm", required=True)
ap.add_argument("--seconds", type=float, default=5)
ap.add_argument("--rate", type=int, default=1000)
ap.add_argument("--record-size", type=int, default=1024)
ap.add_argument("--batch", type=int, default=500, help="records per PutRecords call (max phases)")
ap.add_argument("--inflight", type=int, default=4, help="PutRecords calls in flight (max phases)")
ap.add_argument("--rounds", type=int, default=3, help="rounds of the HTTP/2 vs HTTP/1.1 figure")
ap.add_argument("--readers", choices=("raw", "sdk"), default="raw")
ap.add_argument("--efo-protocol", choices=("auto", "h1", "h2"), default="auto",
                help="SubscribeToShard over HTTP/2 (auto: when the server speaks it) or HTTP/1.1")
ap.add_argument("--counts", default="1,5,20")
ap.add_argument("--only", choices=("put", "fanout", "attacks", "many"), default=None)
ap.add_argument("--vs-bin", default=None,
                help="another build (e.g. one before a fix) measured in the same run for the attacks and "
                     "many-subscriptions parts; ratios are this build's over it")
args = ap.parse_args()
harness.BINARY = os.path.abspath(args.bin)
COUNTS = tuple(int(x) for x in args.counts.split(","))
CLIENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clients.cjs")


def client(endpoint):
    return boto3.client("kinesis", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test",
                        config=Config(retries={"max_attempts": 0}, read_timeout=60))


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def node_clients(cmd, cfg, timeout=300):
    env = dict(os.environ, NODE_PATH=args.npm)
    p = subprocess.run(["node", "--no-warnings", CLIENTS, cmd, json.dumps(cfg)], capture_output=True, text=True,
                       env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"clients.cjs {cmd} failed: {p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def speaks_h2c(port):
    """Whether the server answers the HTTP/2 connection preface with a SETTINGS frame."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
        try:
            head = s.recv(9)
        except OSError:
            return False
        return len(head) >= 4 and head[3] == 4


def measure(endpoint, stream, n, mode, consumer_arns, rate, efo_protocol, pids):
    cfg = {"endpoint": endpoint, "stream": stream, "mode": mode,
           "consumers": consumer_arns if mode == "efo" else n, "seconds": args.seconds, "rate": rate,
           "size": args.record_size, "batch": args.batch if rate == 0 else max(1, rate // 20),
           "inflight": args.inflight, "interval": 200, "readers": args.readers,
           "efo_protocol": efo_protocol, "efo_handler": "default" if efo_protocol == "h2" else "http1",
           "handler": "http1", "workers": 2}
    before = {k: cpu_seconds(p) for k, p in pids.items()}
    r = node_clients("fanout", cfg)
    r["cpu"] = {k: cpu_seconds(p) - before[k] for k, p in pids.items()}
    return r


def put_figure(srv):
    """Part 1: PutRecords MB/s by request handler, same client and load."""
    k = client(srv.endpoint)
    k.create_stream(StreamName="put-h2", ShardCount=4)
    handlers = (("http1", "NodeHttpHandler (HTTP/1.1)"),
                ("default", "default handler (HTTP/2, a session per request)"),
                ("shared", "new NodeHttp2Handler() (HTTP/2, pooled sessions)"))
    got = {h: [] for h, _ in handlers}
    print(f"PutRecords, JS SDK v3 KinesisClient: {args.batch} x {args.record_size} B per call, "
          f"{args.inflight} calls in flight, {args.seconds:g} s per run, 4 shards", flush=True)
    for rnd in range(args.rounds):
        for h, label in handlers:
            cpu0 = cpu_seconds(srv.proc.pid)
            r = node_clients("put", {"endpoint": srv.endpoint, "handler": h, "stream": "put-h2",
                                     "seconds": args.seconds, "inflight": args.inflight, "batch": args.batch,
                                     "size": args.record_size})
            server_cpu = cpu_seconds(srv.proc.pid) - cpu0
            got[h].append(r["mbs"])
            mb = max(r["bytes"] / 1e6, 1e-9)
            print(f"  round {rnd + 1} {label:48} {r['mbs']:7.2f} MB/s  ({r['calls']} calls, {r['failed']} "
                  f"records failed; CPU ms per MB: server {server_cpu * 1000 / mb:.1f}, client "
                  f"{r['cpu_s'] * 1000 / mb:.1f})", flush=True)
    mean = {h: sum(v) / len(v) for h, v in got.items()}
    lines = []
    for h, label in handlers[1:]:
        ratio = mean[h] / max(mean["http1"], 1e-9)
        lines.append(f"PutRecords over HTTP/2 ({label}) {mean[h]:.2f} MB/s vs HTTP/1.1 {mean['http1']:.2f} MB/s "
                     f"= {ratio:.2f}x (goal >= 0.9x) -> {'met' if ratio >= 0.9 else 'NOT met'}")
    return lines


def h2load_figure(srv):
    """Part 1b: the same PutRecords body sent by h2load (nghttp2's load generator, C++) over
    HTTP/1.1 (4 connections) and HTTP/2 (1 connection, 4 streams): one efficient client on
    both protocols, so the ratio is the server's, not a JavaScript client's."""
    import base64
    import re
    import shutil
    import tempfile
    h2load = shutil.which("h2load")
    if not h2load:
        return ["PutRecords via h2load: not measured (h2load missing: scripts/install-deps installs nghttp2-client)."]
    k = client(srv.endpoint)
    k.create_stream(StreamName="put-h2load", ShardCount=4)
    k.get_waiter("stream_exists").wait(StreamName="put-h2load")
    records = [{"PartitionKey": f"k{i}", "Data": base64.b64encode(os.urandom(args.record_size)).decode()}
               for i in range(args.batch)]
    body = json.dumps({"StreamName": "put-h2load", "Records": records}).encode()
    payload = args.batch * args.record_size
    tmp = tempfile.mkdtemp(prefix="icestream-h2load-")
    try:
        path = os.path.join(tmp, "body.json")
        with open(path, "wb") as f:
            f.write(body)
        hdrs = harness.sign_request(srv.endpoint + "/", body=body, headers={
            "Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Kinesis_20131202.PutRecords"})
        hargs = []
        for name, value in hdrs.items():
            if name.lower() not in ("host", "content-length"):
                hargs += ["-H", f"{name}: {value}"]
        # Enough calls for a few seconds at ~200 MB/s.
        calls = max(40, int(args.seconds * 200e6 / payload))
        runs = (("h1", "HTTP/1.1, 4 connections", ["--h1", "-c", "4", "-m", "1"]),
                ("h2", "HTTP/2 (h2c), 1 connection x 4 streams", ["-c", "1", "-m", "4"]))
        got = {key: [] for key, _, _ in runs}
        print(f"\nPutRecords, h2load: the same {len(body)} B body ({args.batch} x {args.record_size} B records), "
              f"{calls} calls per run", flush=True)
        for rnd in range(args.rounds):
            for key, label, extra in runs:
                cpu0 = cpu_seconds(srv.proc.pid)
                p = subprocess.run([h2load, "-n", str(calls), *extra, "-d", path, *hargs, srv.endpoint + "/"],
                                   capture_output=True, text=True, timeout=600)
                server_cpu = cpu_seconds(srv.proc.pid) - cpu0
                fin = re.search(r"finished in ([0-9.]+)(ms|s)", p.stdout)
                ok = re.search(r"requests: .* (\d+) succeeded", p.stdout)
                codes = re.search(r"status codes: (\d+) 2xx", p.stdout)
                if not fin or not ok or not codes or int(codes.group(1)) != calls:
                    raise RuntimeError(f"h2load {label}: {p.stdout[-2000:]}{p.stderr[-2000:]}")
                secs = float(fin.group(1)) / (1000 if fin.group(2) == "ms" else 1)
                mbs = int(codes.group(1)) * payload / 1e6 / secs
                got[key].append(mbs)
                print(f"  round {rnd + 1} {label:40} {mbs:7.2f} MB/s of records  (server CPU ms per MB "
                      f"{server_cpu * 1000 / (calls * payload / 1e6):.1f})", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    h1 = sum(got["h1"]) / len(got["h1"])
    h2 = sum(got["h2"]) / len(got["h2"])
    ratio = h2 / max(h1, 1e-9)
    return [f"PutRecords over HTTP/2 (h2load) {h2:.2f} MB/s vs HTTP/1.1 (h2load) {h1:.2f} MB/s = {ratio:.2f}x "
            f"(goal >= 0.9x) -> {'met' if ratio >= 0.9 else 'NOT met'}"]


def start_kinesalite():
    port = harness.free_port()
    env = dict(os.environ, NODE_PATH=args.npm)
    proc = subprocess.Popen(["node", "-e", 'require("kinesalite")({createStreamMs: 0, deleteStreamMs: 0, '
                             'updateStreamMs: 0}).listen(Number(process.argv[1]), "127.0.0.1")', str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise RuntimeError("kinesalite did not start")


def fanout_figure(srv, h2):
    rows = []
    kin_proc = None
    efo_protocol = args.efo_protocol if args.efo_protocol != "auto" else ("h2" if h2 else "h1")
    try:
        k = client(srv.endpoint)
        kin_proc, kin = start_kinesalite()
        kk = client(kin)
        print(f"\nFan-out: readers {args.readers}, EFO over {'HTTP/2' if efo_protocol == 'h2' else 'HTTP/1.1'}, polling over "
              f"HTTP/1.1; producer JS SDK over HTTP/1.1, max phase {args.batch} x {args.record_size} B per call, "
              f"{args.inflight} in flight", flush=True)
        for n in COUNTS:
            name = f"fan{n}"
            k.create_stream(StreamName=name, ShardCount=1)
            kk.create_stream(StreamName=name, ShardCount=1)
            time.sleep(0.6)
            arn = k.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]
            arns = [k.register_stream_consumer(StreamARN=arn, ConsumerName=f"c{i}")["Consumer"]["ConsumerARN"]
                    for i in range(n)]
            time.sleep(0.6)  # CREATING -> ACTIVE
            for phase, rate in (("steady", args.rate), ("max", 0)):
                for label, endpoint, mode, server_pid in (
                        ("icestream EFO", srv.endpoint, "efo", srv.proc.pid),
                        ("icestream poll 200 ms", srv.endpoint, "poll", srv.proc.pid),
                        ("kinesalite poll 200 ms", kin, "poll", kin_proc.pid)):
                    if mode == "efo":
                        time.sleep(5.2)  # a consumer may re-subscribe to a shard after 5 s
                    r = measure(endpoint, name, n, mode, arns, rate, efo_protocol, {"server": server_pid})
                    rows.append((n, phase, label, r))
                    wall = r["elapsed"]
                    p50 = float("nan") if r["p50"] is None else r["p50"]
                    p99 = float("nan") if r["p99"] is None else r["p99"]
                    print(f"N={n:2} {phase:6} {label:24} per-consumer {r['per_mbs']:6.2f} MB/s  "
                          f"aggregate {r['agg_mbs']:7.2f} MB/s  p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  "
                          f"(sent {r['sent']}, slowest consumer got {r['min_got']}; cores used: server "
                          f"{r['cpu']['server'] / wall:.2f}, clients {r['cpu_s'] / wall:.2f})"
                          f"{'  INCOMPLETE: some readers reported nothing' if r['incomplete'] else ''}", flush=True)
    finally:
        if kin_proc:
            kin_proc.send_signal(signal.SIGTERM)
            try:
                kin_proc.wait(10)
            except subprocess.TimeoutExpired:
                kin_proc.kill()
                kin_proc.wait()

    lines = ["Goals: EFO p99 <= 50 ms (steady phase); aggregate read MB/s >= 20x kinesalite's polling (max phase)."]
    for n in COUNTS:
        efo = next(r for m, p, label, r in rows if m == n and p == "steady" and label == "icestream EFO")
        p99 = float("nan") if efo["p99"] is None else efo["p99"]
        lines.append(f"N={n:2}: EFO p99 {p99:.1f} ms (goal <= 50) -> {'met' if p99 <= 50 else 'NOT met'}")
        e = next(r for m, p, label, r in rows if m == n and p == "max" and label == "icestream EFO")
        kp = next(r for m, p, label, r in rows if m == n and p == "max" and label.startswith("kinesalite"))
        ratio = e["agg_mbs"] / max(kp["agg_mbs"], 1e-9)
        lines.append(f"N={n:2}: aggregate read {e['agg_mbs']:.2f} MB/s vs kinesalite {kp['agg_mbs']:.2f} MB/s = "
                     f"{ratio:.1f}x (goal >= 20x) -> {'met' if ratio >= 20 else 'NOT met'}")
    lines.append(f"The server, kinesalite and every client share {os.cpu_count()} cores: read the 'cores used' "
                 "columns before the ratio (a saturated machine caps both sides).")
    return lines


def main():
    import attacks
    bins = [("this build", harness.BINARY)]
    if args.vs_bin:
        bins.append(("--vs-bin", os.path.abspath(args.vs_bin)))
    summary = []
    if args.only in ("attacks", "many"):
        if args.only == "attacks":
            summary += attacks.part3(bins)
        else:
            summary += attacks.part4(bins, args.seconds)
        print()
        for line in summary:
            print(line)
        return
    srv = Server().start()
    try:
        h2 = speaks_h2c(srv.port)
        if args.only in (None, "put"):
            if h2:
                summary += put_figure(srv)
                summary += h2load_figure(srv)
            else:
                summary.append("HTTP/2 vs HTTP/1.1 PutRecords: not measured (this server does not speak HTTP/2).")
        if args.only in (None, "fanout"):
            summary += fanout_figure(srv, h2)
    finally:
        srv.stop()
        srv.cleanup()
    if args.only is None:
        summary += attacks.part4(bins, args.seconds)
        summary += attacks.part3(bins)
    print()
    for line in summary:
        print(line)


main()

"""Driver of bench/fanout (see run). Prints figures; asserts nothing.

Each record carries its index in its first 8 bytes; the producer notes when PutRecords
acknowledged it, each consumer when it received it; latency is the difference (same
machine, monotonic clock). Two phases per configuration: a steady 1,000 records/s of
1 KiB (a shard's write quota) for latency, then the producer as fast as it goes for MB/s.
"""

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
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
args = ap.parse_args()
harness.BINARY = os.path.abspath(args.bin)
COUNTS = (1, 5, 20)


def client(endpoint):
    return boto3.client("kinesis", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test",
                        config=Config(retries={"max_attempts": 0}, read_timeout=60,
                                      max_pool_connections=50))


class Run:
    def __init__(self, n):
        self.acked = {}
        self.received = [dict() for _ in range(n)]
        self.bytes = [0] * n
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def got(self, i, records, now):
        for r in records:
            idx = int.from_bytes(r["Data"][:8], "big")
            self.received[i].setdefault(idx, now)
            self.bytes[i] += len(r["Data"])


def produce(k, stream, run, seconds, rate):
    """PutRecords in batches; rate 0 = as fast as one client goes. Returns records sent."""
    size = args.record_size
    idx = 0
    batch = 100 if rate == 0 else max(1, rate // 20)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        recs = [{"Data": (idx + j).to_bytes(8, "big") + b"x" * (size - 8), "PartitionKey": "k"}
                for j in range(batch)]
        r = k.put_records(StreamName=stream, Records=recs)
        now = time.monotonic()
        for j, e in enumerate(r["Records"]):
            if "SequenceNumber" in e:
                run.acked[idx + j] = now
        idx += batch
        if rate:
            target = t0 + idx / rate
            if target > time.monotonic():
                time.sleep(target - time.monotonic())
    return idx


def efo_reader(k, consumer_arn, run, i, ready):
    es = k.subscribe_to_shard(ConsumerARN=consumer_arn, ShardId="shardId-000000000000",
                              StartingPosition={"Type": "LATEST"})["EventStream"]
    ready.release()
    try:
        for ev in es:
            e = ev.get("SubscribeToShardEvent")
            if e:
                run.got(i, e["Records"], time.monotonic())
            if run.stop.is_set():
                break
    finally:
        es.close()


def poll_reader(k, stream, run, i, ready, interval=0.2):
    it = k.get_shard_iterator(StreamName=stream, ShardId="shardId-000000000000",
                              ShardIteratorType="LATEST")["ShardIterator"]
    ready.release()
    while not run.stop.is_set():
        r = k.get_records(ShardIterator=it, Limit=10000)
        run.got(i, r["Records"], time.monotonic())
        it = r["NextShardIterator"]
        time.sleep(interval)


def measure(endpoint, stream, n, mode, consumer_arns, rate):
    run = Run(n)
    ready = threading.Semaphore(0)
    threads = []
    for i in range(n):
        k = client(endpoint)
        if mode == "efo":
            t = threading.Thread(target=efo_reader, args=(k, consumer_arns[i], run, i, ready), daemon=True)
        else:
            t = threading.Thread(target=poll_reader, args=(k, stream, run, i, ready), daemon=True)
        t.start()
        threads.append(t)
    for _ in range(n):
        ready.acquire()
    time.sleep(0.3)
    t0 = time.monotonic()
    sent = produce(client(endpoint), stream, run, args.seconds, rate)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(len(r) < len(run.acked) for r in run.received):
        time.sleep(0.05)
    elapsed = time.monotonic() - t0
    run.stop.set()
    # EFO readers end at their next event (heartbeats come every 2 s).
    for t in threads:
        t.join(timeout=5)
    lat = []
    for rec in run.received:
        for idx, when in rec.items():
            if idx in run.acked:
                lat.append(max(0.0, when - run.acked[idx]) * 1000)
    lat.sort()
    got = [len(r) for r in run.received]
    per = [b / elapsed / 1e6 for b in run.bytes]
    return {
        "sent": sent, "min_got": min(got), "per_mbs": statistics.mean(per), "agg_mbs": sum(per),
        "p50": lat[len(lat) // 2] if lat else float("nan"),
        "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan"),
    }


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_kinesalite():
    port = free_port()
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
    raise RuntimeError("kinesalite did not start")


def main():
    rows = []
    srv = Server().start()
    kin_proc = None
    try:
        k = client(srv.endpoint)
        kin_proc, kin = start_kinesalite()
        kk = client(kin)
        for n in COUNTS:
            name = f"fan{n}"
            k.create_stream(StreamName=name, ShardCount=1)
            kk.create_stream(StreamName=name, ShardCount=1)
            time.sleep(0.6)
            arn = k.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]
            arns = [k.register_stream_consumer(StreamARN=arn, ConsumerName=f"c{i}")["Consumer"]["ConsumerARN"]
                    for i in range(n)]
            time.sleep(0.6)  # CREATING → ACTIVE
            for phase, rate in (("steady", args.rate), ("max", 0)):
                for label, endpoint, mode in (("icestream EFO", srv.endpoint, "efo"),
                                              ("icestream poll 200 ms", srv.endpoint, "poll"),
                                              ("kinesalite poll 200 ms", kin, "poll")):
                    if mode == "efo":
                        time.sleep(5.2)  # a consumer may re-subscribe to a shard after 5 s
                    r = measure(endpoint, name, n, mode, arns, rate)
                    rows.append((n, phase, label, r))
                    print(f"N={n:2} {phase:6} {label:24} per-consumer {r['per_mbs']:6.2f} MB/s  "
                          f"aggregate {r['agg_mbs']:7.2f} MB/s  p50 {r['p50']:7.1f} ms  p99 {r['p99']:7.1f} ms  "
                          f"(sent {r['sent']}, slowest consumer got {r['min_got']})", flush=True)
    finally:
        if kin_proc:
            kin_proc.send_signal(signal.SIGTERM)
            kin_proc.wait(10)
        srv.stop()
        srv.cleanup()

    print("\nGoals: EFO p99 <= 50 ms (steady phase); aggregate read MB/s >= 20x kinesalite's polling (max phase).")
    for n in COUNTS:
        efo = next(r for m, p, label, r in rows if m == n and p == "steady" and label == "icestream EFO")
        print(f"N={n:2}: EFO p99 {efo['p99']:.1f} ms (goal <= 50) -> {'met' if efo['p99'] <= 50 else 'NOT met'}")
        e = next(r for m, p, label, r in rows if m == n and p == "max" and label == "icestream EFO")
        kp = next(r for m, p, label, r in rows if m == n and p == "max" and label.startswith("kinesalite"))
        ratio = e["agg_mbs"] / max(kp["agg_mbs"], 1e-9)
        print(f"N={n:2}: aggregate read {e['agg_mbs']:.2f} MB/s vs kinesalite {kp['agg_mbs']:.2f} MB/s = "
              f"{ratio:.1f}x (goal >= 20x) -> {'met' if ratio >= 20 else 'NOT met'}")
    print("The readers and the producer are Python boto3 clients on the same cores as the servers: the max "
          "phase measures the clients as much as the servers.")
    print("HTTP/2 vs HTTP/1.1 PutRecords: not measured (no HTTP/2 yet).")


main()

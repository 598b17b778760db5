"""What one hostile CBOR body costs the server (issue 19, item 7): 16 MB of one-byte items
(a map with one array of 16 million zeros), sent to ListStreams without credentials.
Prints, per case, the peak RSS growth (VmHWM reset through /proc/<pid>/clear_refs), the
time to the answer, the CPU seconds spent by the server's threads other than the CBOR
offload thread (the I/O threads; the rest are idle) and by that thread, and the slowest
/health answer while four such bodies are in flight. Asserts nothing.
  python3 bench/ingest/cbor_cost.py --bin build/release/icestream"""

import argparse
import http.client
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "lib"))
import harness  # noqa: E402
from harness import Server  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--size", type=int, default=16_000_000)
args = ap.parse_args()
harness.BINARY = os.path.abspath(args.bin)
TICK = os.sysconf("SC_CLK_TCK")


def body(n):
    return b"\xa2\x6aStreamName\x61s\x64Junk\x9a" + n.to_bytes(4, "big") + b"\x00" * n


def thread_cpu(pid):
    """{thread name: CPU seconds} summed by name."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[name] = out.get(name, 0) + (int(fields[11]) + int(fields[12])) / TICK
    return out


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def post(port, data, out):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.time()
    c.request("POST", "/", data, {"Content-Type": "application/x-amz-cbor-1.1",
                                  "X-Amz-Target": "Kinesis_20131202.ListStreams"})
    r = c.getresponse()
    r.read()
    out.append((r.status, time.time() - t0))
    c.close()


def case(srv, n_bodies):
    pid = srv.proc.pid
    data = body(args.size)
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")
    base = status_kb(pid, "VmRSS")
    cpu0 = thread_cpu(pid)
    answers, health = [], []
    done = threading.Event()

    def poll_health():
        while not done.is_set():
            t0 = time.time()
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=600)
            c.request("GET", "/health")
            c.getresponse().read()
            c.close()
            health.append(time.time() - t0)
            time.sleep(0.01)

    hp = threading.Thread(target=poll_health)
    hp.start()
    ts = [threading.Thread(target=post, args=(srv.port, data, answers)) for _ in range(n_bodies)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    done.set()
    hp.join()
    cpu1 = thread_cpu(pid)
    grew = (status_kb(pid, "VmHWM") - base) / 1024
    offload = cpu1.get("cbor-offload", 0) - cpu0.get("cbor-offload", 0)
    other = sum(v for k, v in cpu1.items() if k != "cbor-offload") - sum(
        v for k, v in cpu0.items() if k != "cbor-offload")
    statuses = sorted({s for s, _ in answers})
    print(f"   {n_bodies} body(ies) of {args.size / 1e6:.0f} MB: answers {statuses} in "
          f"max {max(t for _, t in answers):.2f} s; peak RSS +{grew:.0f} MB; CPU on the I/O threads "
          f"{other:.2f} s, on the offload thread {offload:.2f} s; slowest /health {max(health) * 1000:.0f} ms "
          f"({len(health)} polls)")


srv = Server().start()
try:
    print(f"== one hostile CBOR body ({args.bin})")
    case(srv, 1)
    case(srv, 4)
finally:
    srv.stop()
    srv.cleanup()

"""bench/fanout, parts 3 and 4 (see run): what hostile or merely many clients cost the
server, measured on icestream and, with --vs-bin, on another build in the same run (the
build before a fix: ratios after/before). Prints figures; asserts nothing.

3. Memory and time a client can take (issue 19):
   - RSS growth with 48 HTTP/1.1 connections each announcing a 16 MB body and sending none;
   - one HTTP/2 connection: 48 GetRecords answers (~13 MB each) it never reads, 128
     uploads of 16 MiB it never finishes (bytes the server accepted), 128
     SubscribeToShard streams it never reads — peak RSS growth of each;
   - rapid reset: 2,700 PutRecord streams each reset right after its request (3
     connections of 900): server CPU seconds, handlers that ran.
4. Many subscriptions (issue 20): 1,000 SubscribeToShard subscriptions across 100
   streams (10 consumers each, over HTTP/2, 100 per connection): server threads and RSS
   with and without them; PutRecord p50 on a stream nobody subscribes to, and the server's
   cores used meanwhile, with and without the 1,000 idle subscriptions; then every
   subscribed stream written: MB pushed and server CPU ms per MB pushed.
"""

import base64
import json
import os
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "lib"))
import harness  # noqa: E402
from h2raw import CANCEL, H2Client  # noqa: E402

MIB = 1 << 20


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def threads(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def signed(srv, op, body):
    data = json.dumps(body).encode()
    return harness.sign_request(srv.endpoint + "/", body=data, headers={
        "Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Kinesis_20131202." + op}), data


def peak_rss_while(pid, seconds, base):
    peak = 0
    end = time.time() + seconds
    while time.time() < end:
        peak = max(peak, rss(pid) - base)
        time.sleep(0.2)
    return peak


def start(binary):
    harness.BINARY = binary
    return harness.Server().start()


# --- part 3 ------------------------------------------------------------------------

def announced_bodies(binary):
    srv = start(binary)
    socks = []
    try:
        base = rss(srv.proc.pid)
        head = ("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.1\r\n"
                "X-Amz-Target: Kinesis_20131202.PutRecord\r\nContent-Length: 16000000\r\n\r\n{").encode()
        for _ in range(48):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(head)
            socks.append(s)
        return peak_rss_while(srv.proc.pid, 3, base)
    finally:
        for s in socks:
            s.close()
        srv.stop()
        srv.cleanup()


def fresh(binary, fill):
    """A fresh server per attack (freed memory of one would hide the next one's growth)."""
    srv = start(binary)
    try:
        return fill(srv)
    finally:
        srv.stop()
        srv.cleanup()


def unread_get_records(srv):
    k = srv.client()
    k.create_stream(StreamName="big", ShardCount=1)
    blob = os.urandom(1000 * 1000)
    for _ in range(10):
        k.put_record(StreamName="big", PartitionKey="p", Data=blob)
    it = k.get_shard_iterator(StreamName="big", ShardId="shardId-000000000000",
                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    base = rss(srv.proc.pid)
    c = H2Client(srv.port, window=0, keep_data=False)
    for _ in range(48):
        h, d = signed(srv, "GetRecords", {"ShardIterator": it})
        c.request("/", h, d)
    peak = peak_rss_while(srv.proc.pid, 12, base)
    c.close()
    return peak


def unfinished_uploads(srv):
    base = rss(srv.proc.pid)
    c = H2Client(srv.port)
    sids = []
    for _ in range(128):
        h, _ = signed(srv, "PutRecord", {})
        sid = c.new_stream()
        c.send_raw(c.headers_frame(sid, c.request_headers("/", h, 16 * MIB), False))
        sids.append(sid)
    result = {}
    t = threading.Thread(target=lambda: result.update(sent=c.push_bodies(sids, 16 * MIB, quiet=3)))
    t.start()
    peak = 0
    while t.is_alive():
        peak = max(peak, rss(srv.proc.pid) - base)
        time.sleep(0.2)
    c.close()
    return max(peak, 0), result.get("sent", 0)


def unread_subscriptions(srv):
    k = srv.client()
    blob = os.urandom(1000 * 1000)
    k.create_stream(StreamName="fan", ShardCount=8)
    arn = k.describe_stream_summary(StreamName="fan")["StreamDescriptionSummary"]["StreamARN"]
    for shard in range(8):
        for _ in range(5):
            k.put_record(StreamName="fan", PartitionKey="p", ExplicitHashKey=str(shard * ((1 << 128) // 8)),
                         Data=blob)
    consumers = [k.register_stream_consumer(StreamARN=arn, ConsumerName=f"c{i}")["Consumer"]["ConsumerARN"]
                 for i in range(16)]
    time.sleep(1)
    base = rss(srv.proc.pid)
    c = H2Client(srv.port, window=0, keep_data=False)
    for consumer in consumers:
        for shard in range(8):
            h, d = signed(srv, "SubscribeToShard", {"ConsumerARN": consumer, "ShardId": f"shardId-{shard:012d}",
                                                    "StartingPosition": {"Type": "TRIM_HORIZON"}})
            c.request("/", h, d)
    peak = peak_rss_while(srv.proc.pid, 12, base)
    c.close()
    return peak


def h2_attacks(binary):
    out = {"unread GetRecords (48)": fresh(binary, unread_get_records)}
    peak, sent = fresh(binary, unfinished_uploads)
    out["unfinished uploads (128 x 16 MiB)"] = peak
    out["unfinished uploads: bytes accepted"] = sent
    out["unread subscriptions (128)"] = fresh(binary, unread_subscriptions)
    return out


def rapid_reset(binary):
    srv = start(binary)
    try:
        k = srv.client()
        k.create_stream(StreamName="rr", ShardCount=1)
        cpu0 = cpu_seconds(srv.proc.pid)
        sent = 0
        for _ in range(3):
            c = H2Client(srv.port)
            frames = []
            for _ in range(900):
                h, d = signed(srv, "PutRecord", {"StreamName": "rr", "PartitionKey": "p",
                                                 "Data": base64.b64encode(b"r").decode()})
                sid = c.new_stream()
                frames.append(c.headers_frame(sid, c.request_headers("/", h, len(d)), False) +
                              c.data_frames(sid, d, True) + c.rst_frame(sid, CANCEL))
                sent += 1
            c.send_raw(b"".join(frames))
            time.sleep(1)
            c.close()
        time.sleep(2)
        cpu = cpu_seconds(srv.proc.pid) - cpu0
        it = k.get_shard_iterator(StreamName="rr", ShardId="shardId-000000000000",
                                  ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        ran = len(k.get_records(ShardIterator=it, Limit=10000)["Records"])
        return {"cpu_s": cpu, "ran": ran, "sent": sent}
    finally:
        srv.stop()
        srv.cleanup()


def part3(bins):
    """bins: [(label, binary)]; the first is this build."""
    rows = {}
    for label, binary in bins:
        print(f"\n[{label}] announced bodies, HTTP/2 attacks, rapid reset ({binary})", flush=True)
        r = {"announced 16 MB bodies (48 conns)": announced_bodies(binary)}
        r.update(h2_attacks(binary))
        rr = rapid_reset(binary)
        r["rapid reset: server CPU s"] = rr["cpu_s"]
        r["rapid reset: handlers run"] = rr["ran"]
        for name, v in r.items():
            shown = f"{v / MIB:8.1f} MiB" if "CPU" not in name and "handlers" not in name else f"{v:8.2f}"
            print(f"  {name:42} {shown}", flush=True)
        rows[label] = r
    lines = []
    if len(bins) > 1:
        new, old = rows[bins[0][0]], rows[bins[1][0]]
        for name in new:
            ratio = new[name] / old[name] if old[name] else float("nan")
            unit = "MiB" if "CPU" not in name and "handlers" not in name else ""
            nv = new[name] / MIB if unit else new[name]
            ov = old[name] / MIB if unit else old[name]
            lines.append(f"{name}: {nv:.1f}{unit} vs {ov:.1f}{unit} before = {ratio:.2f}x")
    lines.append("Goals: every figure bounded (an HTTP/2 connection holds at most its 64 MiB budget plus one "
                 "16 MiB window of bodies; announced bodies cost nothing until sent; reset streams run no "
                 "handler).")
    return lines


# --- part 4 ------------------------------------------------------------------------

def put_p50(k, stream, seconds):
    lat = []
    end = time.time() + seconds
    while time.time() < end:
        t = time.perf_counter()
        k.put_record(StreamName=stream, PartitionKey="p", Data=b"x" * 100)
        lat.append((time.perf_counter() - t) * 1000)
    return statistics.median(lat), len(lat)


def many_subscriptions(binary, seconds, streams=100, consumers=10):
    srv = start(binary)
    clients = []
    try:
        k = srv.client()
        k.create_stream(StreamName="quiet", ShardCount=1)
        arns = {}
        for i in range(streams):
            k.create_stream(StreamName=f"m{i}", ShardCount=1)
        for i in range(streams):
            arns[f"m{i}"] = k.describe_stream_summary(StreamName=f"m{i}")["StreamDescriptionSummary"]["StreamARN"]
        subs = [(name, k.register_stream_consumer(StreamARN=arn, ConsumerName=f"c{j}")["Consumer"]["ConsumerARN"])
                for name, arn in arns.items() for j in range(consumers)]
        time.sleep(1)
        r = {"threads_idle": threads(srv.proc.pid), "rss_idle": rss(srv.proc.pid)}
        cpu0 = cpu_seconds(srv.proc.pid)
        t0 = time.time()
        r["p50_alone"], r["puts_alone"] = put_p50(k, "quiet", seconds)
        r["cores_alone"] = (cpu_seconds(srv.proc.pid) - cpu0) / (time.time() - t0)
        sids = []
        for n, (name, consumer) in enumerate(subs):
            if n % 100 == 0:
                c = H2Client(srv.port, window=1 << 24, keep_data=False)
                c.send_raw(c._frame(8, 0, 0, (1 << 30).to_bytes(4, "big")))
                clients.append(c)
            h, d = signed(srv, "SubscribeToShard", {"ConsumerARN": consumer, "ShardId": "shardId-000000000000",
                                                    "StartingPosition": {"Type": "LATEST"}})
            sids.append((c, c.request("/", h, d)))
        time.sleep(3)
        r["threads_subscribed"] = threads(srv.proc.pid)
        r["rss_subscribed"] = rss(srv.proc.pid)
        cpu0 = cpu_seconds(srv.proc.pid)
        t0 = time.time()
        r["p50_subscribed"], r["puts_subscribed"] = put_p50(k, "quiet", seconds)
        r["cores_subscribed"] = (cpu_seconds(srv.proc.pid) - cpu0) / (time.time() - t0)
        # Push: every subscribed stream written.
        received0 = sum(cl.streams[sid].data_bytes for cl, sid in sids)
        cpu0 = cpu_seconds(srv.proc.pid)
        payload = 0
        end = time.time() + seconds
        rec = os.urandom(1024)
        while time.time() < end:
            for name in arns:
                k.put_records(StreamName=name, Records=[{"PartitionKey": str(i), "Data": rec} for i in range(10)])
                payload += 10 * 1024 * consumers
        time.sleep(2)
        pushed = sum(cl.streams[sid].data_bytes for cl, sid in sids) - received0
        cpu = cpu_seconds(srv.proc.pid) - cpu0
        r["pushed_mb"] = pushed / 1e6
        r["payload_mb"] = payload / 1e6
        r["cpu_ms_per_mb"] = cpu * 1000 / max(pushed / 1e6, 1e-9)
        r["rss_push"] = rss(srv.proc.pid)
        r["threads_push"] = threads(srv.proc.pid)
        return r
    finally:
        for cl in clients:
            cl.close()
        srv.stop()
        srv.cleanup()


def part4(bins, seconds):
    rows = {}
    for label, binary in bins:
        print(f"\n[{label}] 1,000 subscriptions across 100 streams ({binary})", flush=True)
        r = many_subscriptions(binary, seconds)
        rows[label] = r
        print(f"  server threads: {r['threads_idle']} without subscriptions, {r['threads_subscribed']} with 1,000 "
              f"idle, {r['threads_push']} while pushing", flush=True)
        print(f"  RSS: {r['rss_idle'] / MIB:.0f} MiB without, {r['rss_subscribed'] / MIB:.0f} MiB with 1,000 idle, "
              f"{r['rss_push'] / MIB:.0f} MiB while pushing", flush=True)
        print(f"  PutRecord p50 on an unsubscribed stream: {r['p50_alone']:.2f} ms without subscriptions "
              f"(server {r['cores_alone']:.2f} cores), {r['p50_subscribed']:.2f} ms beside 1,000 idle ones "
              f"(server {r['cores_subscribed']:.2f} cores)", flush=True)
        print(f"  pushed {r['pushed_mb']:.1f} MB of events (records written x subscribers: "
              f"{r['payload_mb']:.1f} MB): server CPU {r['cpu_ms_per_mb']:.1f} ms per MB pushed", flush=True)
    lines = []
    new = rows[bins[0][0]]
    ratio = new["p50_subscribed"] / max(new["p50_alone"], 1e-9)
    lines.append(f"1,000 subscriptions: PutRecord p50 on an unsubscribed stream {new['p50_subscribed']:.2f} ms vs "
                 f"{new['p50_alone']:.2f} ms without subscriptions = {ratio:.2f}x (goal <= 1.2x) -> "
                 f"{'met' if ratio <= 1.2 else 'NOT met'}; server threads {new['threads_subscribed']} "
                 f"(+{new['threads_subscribed'] - new['threads_idle']}; goal bounded: +0), RSS "
                 f"+{(new['rss_subscribed'] - new['rss_idle']) / MIB:.0f} MiB, {new['cpu_ms_per_mb']:.1f} CPU ms "
                 "per MB pushed")
    if len(bins) > 1:
        old = rows[bins[1][0]]
        lines.append(f"  vs {bins[1][0]}: threads {new['threads_subscribed']} vs {old['threads_subscribed']}, "
                     f"p50 {new['p50_subscribed']:.2f} vs {old['p50_subscribed']:.2f} ms, server cores beside "
                     f"idle subscriptions {new['cores_subscribed']:.2f} vs {old['cores_subscribed']:.2f}, CPU ms per "
                     f"MB pushed {new['cpu_ms_per_mb']:.1f} vs {old['cpu_ms_per_mb']:.1f} "
                     f"({new['cpu_ms_per_mb'] / max(old['cpu_ms_per_mb'], 1e-9):.2f}x)")
    return lines

"""Driver of bench/s3-delivery (see run). Prints figures; asserts nothing."""

import argparse
import gzip
import json
import os
import re
import shutil
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

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--loadgen", required=True)
ap.add_argument("--records", type=int, default=400000)          # 1 KiB each: ~410 MB
ap.add_argument("--latency-seconds", type=int, default=60)
ap.add_argument("--backlog-mb", type=int, default=1200)          # 10 min at 2 MB/s
args = ap.parse_args()
harness.BINARY = os.path.abspath(args.bin)


def metric(server, name, channel):
    with urllib.request.urlopen(server.endpoint + "/metrics", timeout=5) as r:
        text = r.read().decode()
    m = re.search(rf'^DeliveryToS3_{name}\{{channel_name="{channel}",[^}}]*\}} ([0-9.e+]+)$', text, re.M)
    return float(m.group(1)) if m else 0.0


def loadgen(server, stream, records, connections=4):
    out = subprocess.run([args.loadgen, "--port", str(server.port), "--stream", stream, "--json", "1",
                          "--record-size", "1024", "--total-records", str(records), "--bodies", "64",
                          "--connections", str(connections)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def rss_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def create_channel(server, name, stream, compression, freshness, start="TRIM_HORIZON", template=None):
    req = channel_request(name, stream, bucket="bench", compression=compression, freshness=freshness,
                          template=template)
    req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": start}
    st, body = kinesis_call(server, "CreateChannel", req)
    assert st == 200, body
    return wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)


def throughput(codec):
    server = Server(extra_args=[], config_text="[delivery]\nworkers = 2\n").start()
    try:
        k = server.client()
        k.create_stream(StreamName="tp")
        lg = loadgen(server, "tp", args.records)
        total = int(lg["records"])
        payload_mb = total * 1024 / 1e6
        t0 = time.time()
        create_channel(server, "tp-" + codec.lower(), "tp", codec, 1,
                       template="tp/!{channel-name}/!{mm}/o!{extension}")
        while metric(server, "SuccessfulRecordCount", "tp-" + codec.lower()) < total:
            time.sleep(0.05)
        secs = time.time() - t0
        # The same bytes for the command-line compressors: the delivered objects, decompressed.
        root = os.path.join(server.data_dir, "buckets", "bench")
        raw = os.path.join(server.data_dir, "..", os.path.basename(server.data_dir) + ".raw")
        with open(raw, "wb") as out:
            for d, _, files in os.walk(root):
                for f in sorted(files):
                    data = open(os.path.join(d, f), "rb").read()
                    if f.endswith(".gz"):
                        data = gzip.decompress(data)
                    elif f.endswith(".zst"):
                        data = subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=True).stdout
                    out.write(data)
        delivered = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
        cmd = ["zstd", "-3", "-c", "-q", raw] if codec == "ZSTD" else ["gzip", "-6", "-c", raw]
        c0 = time.time()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        csecs = time.time() - c0
        raw_mb = os.path.getsize(raw) / 1e6
        os.remove(raw)
        return {"codec": codec, "records": total, "payload_mb": payload_mb, "seconds": secs,
                "mb_s": payload_mb / secs, "tool": " ".join(cmd[:2]), "tool_mb_s": raw_mb / csecs,
                "ratio": (payload_mb / secs) / (raw_mb / csecs), "compressed_mb": delivered / 1e6}
    finally:
        server.stop()
        server.cleanup()


def latency():
    server = Server().start()
    try:
        k = server.client()
        k.create_stream(StreamName="lat")
        create_channel(server, "lat-ch", "lat", "GZIP", 5, start="LATEST",
                       template="lat/!{mm}/o!{extension}")
        root = os.path.join(server.data_dir, "buckets", "bench", "lat")
        seen = {}
        stop = threading.Event()

        def watch():
            while not stop.is_set():
                if os.path.isdir(root):
                    for d, _, files in os.walk(root):
                        for f in files:
                            if ".tmp-" not in f and f not in seen:
                                seen[f] = (time.time(), os.path.join(d, f))
                time.sleep(0.02)

        w = threading.Thread(target=watch)
        w.start()
        sent = 0
        end = time.time() + args.latency_seconds
        while time.time() < end:   # ~1 MB/s steady: 100 records of 1 KiB every 0.1 s
            now = time.time()
            recs = [{"Data": json.dumps({"t": now, "i": sent + j, "pad": "p" * 980}).encode(),
                     "PartitionKey": f"k{sent + j}"} for j in range(100)]
            k.put_records(StreamName="lat", Records=recs)
            sent += 100
            time.sleep(max(0, 0.1 - (time.time() - now)))
        deadline = time.time() + 30
        while time.time() < deadline and metric(server, "SuccessfulRecordCount", "lat-ch") < sent:
            time.sleep(0.1)
        time.sleep(0.3)
        stop.set()
        w.join()
        lat = []
        for f, (t_seen, path) in seen.items():
            for line in gzip.decompress(open(path, "rb").read()).splitlines():
                lat.append(t_seen - json.loads(line)["t"])
        lat.sort()
        return {"records": len(lat), "sent": sent, "p50": lat[len(lat) // 2], "p99": lat[int(len(lat) * 0.99)],
                "max": lat[-1]}
    finally:
        server.stop()
        server.cleanup()


def peak_rss():
    server = Server().start()
    try:
        k = server.client()
        k.create_stream(StreamName="rss", ShardCount=16)
        k.update_stream_mode(StreamARN=f"arn:aws:kinesis:us-east-1:{harness.ACCOUNT}:stream/rss",
                             StreamModeDetails={"StreamMode": "ON_DEMAND"})
        records = args.backlog_mb * 1000 * 1000 // 1024
        loadgen(server, "rss", records, connections=8)
        pid = server.proc.pid
        before = rss_kb(pid, "VmRSS")
        create_channel(server, "rss-ch", "rss", "ZSTD", 1, template="rss/!{mm}/o!{extension}")
        t0 = time.time()
        while metric(server, "SuccessfulRecordCount", "rss-ch") < records * 0.999:
            time.sleep(0.1)
        secs = time.time() - t0
        return {"backlog_mb": args.backlog_mb, "shards": 16, "rss_before_mb": before / 1024,
                "peak_rss_mb": rss_kb(pid, "VmHWM") / 1024, "catch_up_s": secs}
    finally:
        server.stop()
        server.cleanup()


print("== throughput: 1 KiB JSON records already in the stream, one channel (StartingPosition TRIM_HORIZON)")
rows = [throughput("ZSTD"), throughput("GZIP")]
print(f"{'codec':6}{'records':>10}{'MB':>8}{'s':>8}{'MB/s':>9}   {'tool':10}{'tool MB/s':>10}{'ratio':>8}{'out MB':>9}")
for r in rows:
    print(f"{r['codec']:6}{r['records']:>10}{r['payload_mb']:>8.0f}{r['seconds']:>8.2f}{r['mb_s']:>9.1f}   "
          f"{r['tool']:10}{r['tool_mb_s']:>10.1f}{r['ratio']:>8.2f}{r['compressed_mb']:>9.1f}")
print("   (goal: ratio >= 0.8 — the compressor is the limit)")
print(f"\n== latency: DataFreshnessInSeconds 5, ~1 MB/s steady for {args.latency_seconds} s")
l = latency()
print(f"   {l['records']} of {l['sent']} records: object visible - record sent: p50 {l['p50']:.2f} s, "
      f"p99 {l['p99']:.2f} s, max {l['max']:.2f} s   (goal: p99 <= 6 s)")
print(f"\n== memory: 16 shards, {args.backlog_mb} MB backlog (10 min at 2 MB/s), ZSTD, catching up")
m = peak_rss()
print(f"   RSS before {m['rss_before_mb']:.0f} MB; peak RSS (VmHWM) {m['peak_rss_mb']:.0f} MB; caught up in "
      f"{m['catch_up_s']:.1f} s")

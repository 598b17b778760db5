"""One failing destination never stalls the others (issue 17), black-box against a real S3
server (radosgw) behind the fault proxy:

- two S3 channels on one server, each with its own stream and bucket, freshness 1 s,
  producers writing to both all the time; the S3 client settings are the defaults;
- after a baseline, the proxy blackholes every request for one channel's bucket (it reads
  them and never answers, as a dead endpoint behind a live load balancer does);
- the healthy channel's DataFreshness p99 during the outage stays within 20 % of its
  baseline p99 (the metric is sampled every 100 ms from /metrics);
- the failing channel says so within a bounded time: IcestreamStatus.LastError with
  LastErrorTimestamp and LastErrorAttempts, /health "degraded" naming it, the state
  and failing-since gauges in /metrics, and warnings at most once per 30 s in the log;
- once the blackhole is lifted the failing channel catches up, every record of both
  streams is delivered exactly once, and the degraded status clears.
"""

import os
import re
import sys
import threading
import time
import unittest
import urllib.request
import json

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import S3Bucket, produce, verify_exactly_once, wait_delivered  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from harness import Rgw, Server, channel_request, kinesis_call, wait_channel  # noqa: E402

BASELINE_S = float(os.environ.get("ISOLATION_BASELINE_S", "40"))
OUTAGE_S = float(os.environ.get("ISOLATION_OUTAGE_S", "75"))


def metrics(server):
    with urllib.request.urlopen(server.endpoint + "/metrics", timeout=5) as r:
        return r.read().decode()


def gauge(text, name, channel, extra=""):
    m = re.search(r'^' + re.escape(name) + r'\{channel_name="' + re.escape(channel) + r'",[^}]*' + extra +
                  r'[^}]*\} ([0-9.e+-]+)$', text, re.M)
    return float(m.group(1)) if m else None


def health(server):
    with urllib.request.urlopen(server.endpoint + "/health", timeout=5) as r:
        return json.loads(r.read())


def p99(samples):
    s = sorted(samples)
    return s[min(len(s) - 1, int(0.99 * len(s)))]


class Producer(threading.Thread):
    """Writes a small batch to its stream every 100 ms; keeps what was acknowledged."""

    def __init__(self, server, stream):
        super().__init__(daemon=True)
        self.k = server.client()
        self.stream = stream
        self.acked = []
        self.stop = threading.Event()
        self.error = None

    def run(self):
        i = 0
        try:
            while not self.stop.is_set():
                self.acked += produce(self.k, self.stream,
                                      [(f"k{i}-{j}", f'{{"s": "{self.stream}", "i": {i}, "j": {j}}}'.encode())
                                       for j in range(20)])
                i += 1
                time.sleep(0.1)
        except Exception as e:  # reported by the test
            self.error = e


class ChannelIsolation(unittest.TestCase):
    def test_blackholed_destination_does_not_stall_the_other_channel(self):
        rgw = Rgw().start()
        proxy = server = None
        producers = []
        try:
            s3 = rgw.s3()
            s3.create_bucket(Bucket="iso-ok")
            s3.create_bucket(Bucket="iso-dead")
            proxy = FaultProxy(rgw.port, fault_rate=0.0).start()
            os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = rgw.access_key, rgw.secret_key
            # Default S3 client settings and delivery workers: what a user runs.
            server = Server(extra_args=["--s3-endpoint", proxy.endpoint], log_level="info").start()
            k = server.client()
            arns = {}
            for name in ("ok", "dead"):
                k.create_stream(StreamName=f"iso-{name}")
                st, body = kinesis_call(server, "CreateChannel", channel_request(
                    f"iso-{name}", f"iso-{name}", bucket=f"iso-{name}", compression="NONE", freshness=1,
                    template="o/!{mm}/x!{extension}"))
                self.assertEqual(st, 200, body)
                arns[name] = body["ChannelDescription"]["ChannelARN"]
            for arn in arns.values():
                wait_channel(server, arn, timeout=60)
            producers = [Producer(server, "iso-ok"), Producer(server, "iso-dead")]
            for p in producers:
                p.start()

            def sample(seconds, during=None):
                out = []
                end = time.time() + seconds
                while time.time() < end:
                    v = gauge(metrics(server), "DeliveryToS3_DataFreshness", "iso-ok")
                    if v is not None:
                        out.append(v)
                    if during:
                        during()
                    time.sleep(0.1)
                return out

            base = sample(BASELINE_S)
            self.assertEqual(health(server)["status"], "ok")

            # The outage: every request for the dead channel's bucket is held unanswered.
            proxy.blackhole(["iso-dead"])
            outage_start = time.time()
            seen = {}

            def watch():
                if "error" in seen and "health" in seen:
                    return
                st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arns["dead"]})
                d = body["ChannelDescription"]
                status = d.get("IcestreamStatus", {})
                if status.get("LastError") and "error" not in seen:
                    seen["error"] = (time.time() - outage_start, status, d["ChannelStatus"])
                h = health(server)
                if h["status"] == "degraded" and "health" not in seen:
                    seen["health"] = (time.time() - outage_start, h)

            during = sample(OUTAGE_S, watch)
            text = metrics(server)
            print(f"healthy channel DataFreshness p99: baseline {p99(base):.2f} s ({len(base)} samples), "
                  f"during the outage {p99(during):.2f} s ({len(during)} samples); max {max(during):.2f} s")
            self.assertLessEqual(p99(during), 1.2 * p99(base),
                                 "the healthy channel's freshness suffered from the other's outage")

            # The failing channel said why, soon enough (one stalled request, not a stack of them).
            self.assertIn("error", seen, "LastError was never set during the outage")
            after, status, state = seen["error"]
            print(f"LastError after {after:.1f} s: {status['LastError']} ({status.get('LastErrorAttempts')} attempts)")
            self.assertLess(after, 45, status)
            self.assertEqual(state, "ACTIVE")
            self.assertIn("LastErrorTimestamp", status)
            self.assertGreaterEqual(status.get("LastErrorAttempts", 0), 1)
            self.assertIn("health", seen, "/health never reported the failing channel")
            self.assertIn("iso-dead", [c["channel"] for c in seen["health"][1].get("channels", [])])
            self.assertNotIn("iso-ok", [c["channel"] for c in seen["health"][1].get("channels", [])])
            self.assertGreater(gauge(text, "icestream_channel_failing_since_seconds", "iso-dead"), 0)
            self.assertEqual(gauge(text, "icestream_channel_failing_since_seconds", "iso-ok"), 0)
            self.assertEqual(gauge(text, "icestream_channel_state", "iso-dead", 'state="ACTIVE"'), 1)
            self.assertGreaterEqual(gauge(text, "icestream_channel_delivery_failures_total", "iso-dead"), 1)
            # At most one warning per channel per 30 s (plus the first).
            with open(server.log_path, errors="replace") as f:
                log = f.read()
            warns = re.findall(r"^\S+ W \[\d+\] channel iso-dead: delivery failed.*$", log, re.M)
            self.assertGreaterEqual(len(warns), 1, log[-3000:])
            self.assertLessEqual(len(warns), int(OUTAGE_S // 30) + 2, "\n".join(warns))

            # The endpoint is back: the dead channel catches up, both exactly once.
            proxy.lift()
            for p in producers:
                p.stop.set()
            for p in producers:
                p.join(30)
                self.assertIsNone(p.error)
            for name, p in zip(("ok", "dead"), producers):
                objs = wait_delivered(S3Bucket(s3, f"iso-{name}"), "o/", len(p.acked), "JSON", timeout=240)
                verify_exactly_once(self, objs, p.acked, "JSON")
            deadline = time.time() + 60
            while time.time() < deadline and health(server)["status"] != "ok":
                time.sleep(0.5)
            self.assertEqual(health(server)["status"], "ok")
            st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arns["dead"]})
            self.assertNotIn("LastError", body["ChannelDescription"].get("IcestreamStatus", {}))
            with open(server.log_path, errors="replace") as f:
                self.assertRegex(f.read(), r"\sI \[\d+\] channel iso-dead: delivering again after")
        finally:
            for p in producers:
                p.stop.set()
            if server:
                server.stop()
                server.cleanup()
            if proxy:
                proxy.lift()
                proxy.stop()
            rgw.stop()

    def test_stop_does_not_wait_for_a_dead_endpoint(self):
        """SIGTERM while a delivery waits on a blackholed endpoint: the server stops at once
        (the batch replays after the restart) and nothing is lost."""
        rgw = Rgw().start()
        proxy = server = None
        try:
            s3 = rgw.s3()
            s3.create_bucket(Bucket="stop-dead")
            proxy = FaultProxy(rgw.port, fault_rate=0.0).start()
            os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = rgw.access_key, rgw.secret_key
            server = Server(extra_args=["--s3-endpoint", proxy.endpoint]).start()
            k = server.client()
            k.create_stream(StreamName="stop-dead")
            st, body = kinesis_call(server, "CreateChannel", channel_request(
                "stop-dead", "stop-dead", bucket="stop-dead", compression="NONE", freshness=1,
                template="o/!{mm}/x!{extension}"))
            self.assertEqual(st, 200, body)
            wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)
            proxy.blackhole(["stop-dead"])
            acked = produce(k, "stop-dead", [(f"k{i}", f'{{"i": {i}}}'.encode()) for i in range(200)])
            deadline = time.time() + 30
            while proxy.held == 0 and time.time() < deadline:
                time.sleep(0.1)
            self.assertGreater(proxy.held, 0, "no upload reached the blackhole")
            started = time.time()
            server.stop(timeout=30)
            took = time.time() - started
            print(f"stopped {took:.1f} s after SIGTERM with an upload held by the blackhole")
            self.assertLess(took, 10)
            proxy.lift()
            server.start()
            objs = wait_delivered(S3Bucket(s3, "stop-dead"), "o/", len(acked), "JSON", timeout=120)
            verify_exactly_once(self, objs, acked, "JSON")
        finally:
            if server:
                server.stop()
                server.cleanup()
            if proxy:
                proxy.lift()
                proxy.stop()
            rgw.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)

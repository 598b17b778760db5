"""Fault test for S3 delivery: a fault-injecting proxy in front of a real S3 server fails
a share of requests (500, 503 SlowDown, connection resets before and after the upstream
write, stalls). Delivery still lands every record exactly once, in per-shard order, and
the DeliveryToS3_DataFreshness metric shows the delay while faults slow it down."""

import os
import re
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from delivery_check import S3Bucket, produce, verify_exactly_once, wait_delivered  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from harness import Rgw, Server, channel_request, kinesis_call, wait_channel  # noqa: E402


def freshness(server):
    with urllib.request.urlopen(server.endpoint + "/metrics", timeout=5) as r:
        text = r.read().decode()
    m = re.search(r'^DeliveryToS3_DataFreshness\{channel_name="fault-ch",[^}]*\} ([0-9.e+]+)$', text, re.M)
    return float(m.group(1)) if m else None


class FaultDelivery(unittest.TestCase):
    def test_exactly_once_through_faults(self):
        upstream = Rgw()
        upstream.start()
        proxy = None
        server = None
        try:
            upstream.s3().create_bucket(Bucket="fault-bucket")
            proxy = FaultProxy(upstream.port, fault_rate=0.4, stall_seconds=3).start()
            os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = upstream.access_key, upstream.secret_key
            server = Server(extra_args=["--s3-endpoint", proxy.endpoint],
                            config_text="[s3]\nrequest_timeout_ms = 1500\nmax_attempts = 2\n").start()
            k = server.client()
            k.create_stream(StreamName="fault-src")
            st, body = kinesis_call(server, "CreateChannel",
                                    channel_request("fault-ch", "fault-src", bucket="fault-bucket",
                                                    compression="ZSTD", freshness=1, template="f/!{mm}/o!{extension}"))
            self.assertEqual(st, 200, body)
            wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)
            acked = []
            worst = 0.0
            for i in range(16):
                acked += produce(k, "fault-src", [(f"k{j}", f'{{"round": {i}, "j": {j}}}'.encode()) for j in range(400)])
                f = freshness(server)
                worst = max(worst, f or 0)
                time.sleep(0.4)
            objs = wait_delivered(S3Bucket(upstream.s3(), "fault-bucket"), "f/", len(acked), "JSON", timeout=240)
            verify_exactly_once(self, objs, acked, "JSON")
            # Freshness rose above the 1 s interval while requests failed, and is back to 0.
            deadline = time.time() + 30
            while time.time() < deadline and freshness(server) not in (0.0,):
                worst = max(worst, freshness(server) or 0)
                time.sleep(0.2)
            self.assertGreater(worst, 1.5, "DataFreshness never showed the delay")
            self.assertEqual(freshness(server), 0.0)
            # Every retried S3 request left a warning that says so.
            with open(server.log_path, errors="replace") as f:
                self.assertRegex(f.read(), r"W .* s3 (PUT|POST|GET|HEAD) .*\(attempt 1 of \d+, retrying\)")
            faults = {k2: v for k2, v in proxy.counts.items() if k2 != "ok"}
            self.assertGreater(sum(faults.values()), 5, proxy.counts)
            print(f"proxy: {proxy.counts}; worst DataFreshness {worst:.1f} s; {len(acked)} records exactly once")
        finally:
            if server:
                server.stop()
                server.cleanup()
            if proxy:
                proxy.stop()
            upstream.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)

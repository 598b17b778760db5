"""HTTP/2 on the plain port, with the clients' defaults (issue 11): the AWS SDK for
JavaScript v3 with no request handler given (its NodeHttp2Handler speaks h2c with prior
knowledge) for the control and data planes and for enhanced fan-out across a shard split;
curl --http2 (Upgrade: h2c) and --http2-prior-knowledge with SigV4-signed requests; 100
streams open at once on one Node http2 session; flow control both ways; GOAWAY to a
connected session when the server stops, with the request in flight still answered.
curl and Node's raw requests go to a server that checks signatures (credentials in its
config), so SigV4 over HTTP/2 (Host as :authority) is checked too; the SDK's own suites go
to one that does not, and one more runs the SDK against the checking one. Node drivers: js_sdk_test.cjs, http2_driver.cjs."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, sign_request  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_MODULES = os.path.abspath(os.path.join(HERE, "..", "..", ".cache", "npm", "node_modules"))
AK, SK = "AKIDHTTP2", "http2-secret"
os.environ["TEST_AK"], os.environ["TEST_SK"] = AK, SK  # harness Server.client() signs with these
CONFIG = f"""
[[credentials]]
access_key_id = "{AK}"
secret_access_key = "{SK}"
"""


def node_env():
    return dict(os.environ, NODE_PATH=NODE_MODULES)


def node(*args, timeout=120):
    return subprocess.run(["node", "--no-warnings", *args], capture_output=True, text=True,
                          env=node_env(), timeout=timeout)


def curl_kinesis(endpoint, mode, op, payload, extra=(), secret=SK):
    """A SigV4-signed Kinesis JSON 1.1 request by curl. Returns (HTTP version, status,
    parsed body, verbose trace)."""
    body = json.dumps(payload).encode()
    headers = sign_request(endpoint + "/", "POST", body, {
        "Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Kinesis_20131202." + op},
        access_key=AK, secret_key=secret)
    with tempfile.NamedTemporaryFile() as out:
        cmd = ["curl", "-sS", "-v", mode, "-o", out.name, "-w", "%{http_version} %{http_code}",
               "--data-binary", "@-", *extra]
        for k, v in headers.items():
            cmd += ["-H", f"{k}: {v}"]
        p = subprocess.run(cmd + [endpoint + "/"], input=body, capture_output=True, timeout=30)
        if p.returncode != 0:
            raise AssertionError(f"curl {mode} failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
        version, status = p.stdout.decode().split()
        with open(out.name, "rb") as f:
            raw = f.read()
    return version, int(status), json.loads(raw) if raw else None, p.stderr.decode(errors="replace")


class Http2(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(os.path.join(NODE_MODULES, "@aws-sdk", "client-kinesis")):
            raise AssertionError("@aws-sdk/client-kinesis is missing: run scripts/install-deps first")
        # `auth` checks signatures (credentials configured); `srv` takes any well-formed one,
        # so that a signing problem fails only the test meant for it.
        cls.auth = Server(config_text=CONFIG).start()
        cls.srv = Server().start()

    @classmethod
    def tearDownClass(cls):
        for s in (cls.srv, cls.auth):
            s.stop()
            s.cleanup()

    def driver(self, *args, timeout=120):
        p = node(os.path.join(HERE, "http2_driver.cjs"), *args, timeout=timeout)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr + self.srv.read_log() + self.auth.read_log())
        print(p.stdout.strip(), file=sys.stderr)
        return p.stdout

    def js_sdk(self, handler, srv=None):
        srv = srv or self.srv
        p = node(os.path.join(HERE, "js_sdk_test.cjs"), srv.endpoint, handler, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr + srv.read_log())
        self.assertIn("all checks passed", p.stdout)
        self.assertIn('["h2c"]', p.stdout)
        print(p.stdout.strip(), file=sys.stderr)

    def test_js_sdk_default_handler(self):
        """No requestHandler given: the Kinesis client's NodeHttp2Handler, one session per request."""
        self.js_sdk("default")

    def test_js_sdk_shared_http2_session(self):
        """new NodeHttp2Handler(): requests share pooled sessions."""
        self.js_sdk("shared")

    def test_js_sdk_default_handler_signature_verified(self):
        """With credentials configured the server verifies the SDK's HTTP/2 signatures:
        its host middleware replaces Host by :authority, which it then signs
        (SignedHeaders=:authority;...)."""
        self.js_sdk("default", self.auth)

    def test_js_sdk_subscribe_to_shard_across_a_split(self):
        out = self.driver("subscribe", self.srv.endpoint, "default")
        self.assertIn("400 records once and in order across the split", out)
        self.assertIn('["h2c"]', out)

    def test_curl_prior_knowledge(self):
        version, status, body, _ = curl_kinesis(self.auth.endpoint, "--http2-prior-knowledge", "CreateStream",
                                                {"StreamName": "curl-pk", "ShardCount": 1})
        self.assertEqual((version, status), ("2", 200), body)
        version, status, body, _ = curl_kinesis(self.auth.endpoint, "--http2-prior-knowledge", "PutRecord",
                                                {"StreamName": "curl-pk", "PartitionKey": "k", "Data": "aGk="})
        self.assertEqual((version, status), ("2", 200), body)
        self.assertEqual(body["ShardId"], "shardId-000000000000")
        # A bad signature is refused over HTTP/2 as over HTTP/1.1.
        version, status, body, _ = curl_kinesis(self.auth.endpoint, "--http2-prior-knowledge", "ListStreams", {},
                                                secret="wrong-secret")
        self.assertEqual((version, status), ("2", 400), body)
        self.assertEqual(body["__type"], "InvalidSignatureException")

    def test_curl_upgrade(self):
        p = subprocess.run(["curl", "-V"], capture_output=True, text=True)
        self.assertIn("HTTP2", p.stdout.split("Features:")[-1], "this curl has no HTTP/2")
        version, status, body, trace = curl_kinesis(self.auth.endpoint, "--http2", "CreateStream",
                                                    {"StreamName": "curl-up", "ShardCount": 1})
        self.assertIn("Upgrade: h2c", trace)
        self.assertIn("101", trace)
        self.assertEqual((version, status), ("2", 200), body)
        version, status, body, _ = curl_kinesis(self.auth.endpoint, "--http2", "DescribeStreamSummary",
                                                {"StreamName": "curl-up"})
        self.assertEqual((version, status), ("2", 200), body)
        self.assertEqual(body["StreamDescriptionSummary"]["StreamName"], "curl-up")

    def test_100_concurrent_streams_on_one_session(self):
        self.assertIn("100 streams on one session answered", self.driver("concurrent", self.auth.endpoint))

    def test_flow_control(self):
        self.assertIn("through 16 KiB windows", self.driver("flow", self.auth.endpoint))

    def goaway(self, mode):
        """Starts a server, runs `http2_driver.cjs goaway MODE` against it, stops the server
        (SIGTERM) once the driver is READY; returns the driver's JSON line after checking
        the server's exit and that every answered PutRecord is there after a restart."""
        srv = Server(config_text=CONFIG).start()
        drv = None
        try:
            srv.client().create_stream(StreamName="ga", ShardCount=1)
            env = dict(node_env(), GOAWAY_STREAM="ga")
            drv = subprocess.Popen(["node", "--no-warnings", os.path.join(HERE, "http2_driver.cjs"), "goaway",
                                    srv.endpoint, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=env)
            ready = drv.stdout.readline()
            if not ready.startswith("READY"):
                drv.kill()
                self.fail("driver not ready: " + ready + drv.communicate()[1])
            stopped = {}
            t = threading.Thread(target=lambda: stopped.setdefault("rc", srv.stop()))
            t.start()
            out, err = drv.communicate(timeout=60)
            t.join(60)
            try:
                result = json.loads(out.strip().splitlines()[-1])
                summary = json.dumps({k: (len(v) if k == "answered" else v) for k, v in result.items()})
            except (ValueError, IndexError):
                result, summary = {}, out[-2000:]
            print(summary, file=sys.stderr)
            self.assertEqual(drv.returncode, 0, summary + err + srv.read_log())
            self.assertEqual(stopped.get("rc"), 0, srv.read_log())
            # What was acknowledged during the shutdown is there after a restart.
            srv2 = Server(data_dir=srv.data_dir, config_text=CONFIG).start()
            try:
                k = srv2.client()
                it = k.get_shard_iterator(StreamName="ga", ShardId="shardId-000000000000",
                                          ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
                stored = {r["Data"].decode() for r in k.get_records(ShardIterator=it, Limit=10000)["Records"]}
                want = set(result.get("answered", [])) | ({"upload"} if result.get("upload") == 200 else set())
                self.assertEqual(want - stored, set())
            finally:
                srv2.stop()
            return result
        finally:
            if drv and drv.poll() is None:
                drv.kill()
                drv.wait()
            srv.cleanup()

    def test_goaway_on_stop_answers_the_requests_in_flight(self):
        r = self.goaway("busy")
        self.assertGreater(len(r["answered"]), 0)
        self.assertEqual(r["unanswered"], [])

    def test_goaway_on_stop_answers_a_request_still_uploading(self):
        """A stream the GOAWAY covers (id <= last stream id) whose body is still coming
        when the server stops is answered once the body is complete (RFC 9113 6.8)."""
        self.assertEqual(self.goaway("upload")["upload"], 200)

if __name__ == "__main__":
    unittest.main(verbosity=2)

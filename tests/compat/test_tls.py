"""TLS on the API port (issue 11): `icestream serve --tls-cert CERT --tls-key KEY` (or
`[server] tls_cert` / `tls_key` in the config file) with a self-signed certificate the
openssl CLI makes at test time. The AWS CLI (--no-verify-ssl), boto3 (verify=False, and
verify=CERT, which checks that the configured certificate is the one served), the AWS
SDK for JavaScript v3 with its default handler (HTTP/2 over TLS, ALPN h2) including
enhanced fan-out, curl over HTTP/1.1 and HTTP/2; ALPN selects h2 when offered and
http/1.1 when only it is offered (openssl s_client and Node's tls); plain HTTP/1.1 and
h2c still answer on the same port; a missing or bad certificate or key stops `serve`
with a message that names the file."""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import harness  # noqa: E402
from harness import Server, free_port  # noqa: E402
import urllib3  # noqa: E402

# verify=False is the point of these tests; its warning on every request is noise.
urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_MODULES = os.path.abspath(os.path.join(HERE, "..", "..", ".cache", "npm", "node_modules"))


def make_cert(directory):
    """A self-signed certificate for 127.0.0.1 and localhost and its key, by the openssl
    CLI. Returns (cert path, key path)."""
    if shutil.which("openssl") is None:
        raise AssertionError("the openssl CLI is not installed: run scripts/install-deps")
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("openssl req failed: " + p.stderr)
    return cert, key


def node(*args, env=None, timeout=120):
    e = dict(os.environ, NODE_PATH=NODE_MODULES, **(env or {}))
    return subprocess.run(["node", "--no-warnings", *args], capture_output=True, text=True, env=e, timeout=timeout)


def s_client_alpn(port, offer):
    """The ALPN protocol openssl s_client reports for an offer ('No ALPN negotiated' when
    none)."""
    p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-alpn", offer,
                        "-servername", "localhost"], input=b"", capture_output=True, timeout=30)
    out = p.stdout.decode(errors="replace")  # with h2, the server's SETTINGS frame is printed too
    for line in out.splitlines():
        if line.startswith("ALPN protocol:"):
            return line.split(":", 1)[1].strip()
        if line.startswith("No ALPN negotiated"):
            return None
    raise AssertionError("no ALPN line from s_client: " + out + p.stderr.decode(errors="replace"))


def curl(url, *opts, body=None):
    """curl -k; returns (HTTP version, status, body)."""
    with tempfile.NamedTemporaryFile() as out:
        cmd = ["curl", "-sS", "-k", "-o", out.name, "-w", "%{http_version} %{http_code}", *opts, url]
        p = subprocess.run(cmd, input=body, capture_output=True, timeout=30)
        if p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
        version, status = p.stdout.decode().split()
        with open(out.name, "rb") as f:
            return version, int(status), f.read()


class Tls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="icestream-tls-")
        cls.cert, cls.key = make_cert(cls.dir)
        cls.srv = Server(extra_args=["--tls-cert", cls.cert, "--tls-key", cls.key]).start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_aws_cli_no_verify_ssl(self):
        def cli(*args):
            cmd = ["aws", "--endpoint-url", self.srv.tls_endpoint, "--no-verify-ssl", "--output", "json",
                   "kinesis", *args]
            p = subprocess.run(cmd, capture_output=True, text=True, env=self.srv.cli_env(), timeout=120)
            self.assertEqual(p.returncode, 0, f"{' '.join(cmd)}: {p.stderr}")
            return json.loads(p.stdout) if p.stdout.strip() else None

        cli("create-stream", "--stream-name", "cli-tls", "--shard-count", "1")
        # CLI v1 base64-encodes --data itself.
        put = cli("put-record", "--stream-name", "cli-tls", "--partition-key", "k", "--data", "over-tls")
        self.assertEqual(put["ShardId"], "shardId-000000000000")
        it = cli("get-shard-iterator", "--stream-name", "cli-tls", "--shard-id", "shardId-000000000000",
                 "--shard-iterator-type", "TRIM_HORIZON")["ShardIterator"]
        recs = cli("get-records", "--shard-iterator", it)["Records"]
        self.assertEqual([base64.b64decode(r["Data"]) for r in recs], [b"over-tls"])
        self.assertEqual(cli("describe-stream-summary", "--stream-name", "cli-tls")
                         ["StreamDescriptionSummary"]["StreamStatus"], "ACTIVE")

    def boto3_round_trip(self, k, name):
        k.create_stream(StreamName=name, ShardCount=2)
        r = k.put_records(StreamName=name, Records=[{"Data": f"b{i}".encode(), "PartitionKey": f"p{i}"}
                                                    for i in range(50)])
        self.assertEqual(r["FailedRecordCount"], 0)
        got = sorted(d for d, _, _ in harness.read_stream(k, name))
        self.assertEqual(got, sorted(f"b{i}".encode() for i in range(50)))

    def test_boto3_verify_false(self):
        self.boto3_round_trip(self.srv.client(endpoint=self.srv.tls_endpoint, verify=False), "boto-tls")

    def test_boto3_verifies_the_configured_certificate(self):
        self.boto3_round_trip(self.srv.client(endpoint=self.srv.tls_endpoint, verify=self.cert), "boto-ca")

    def test_js_sdk_default_handler_http2_over_tls(self):
        p = node(os.path.join(HERE, "js_sdk_test.cjs"), self.srv.tls_endpoint, "default",
                 env={"NODE_TLS_REJECT_UNAUTHORIZED": "0"}, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr + self.srv.read_log())
        self.assertIn("all checks passed", p.stdout)
        self.assertIn('["h2"]', p.stdout)  # ALPN chose HTTP/2

    def test_js_sdk_subscribe_to_shard_over_tls(self):
        p = node(os.path.join(HERE, "http2_driver.cjs"), "subscribe", self.srv.tls_endpoint, "default",
                 env={"NODE_TLS_REJECT_UNAUTHORIZED": "0"})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr + self.srv.read_log())
        self.assertIn("400 records once and in order across the split", p.stdout)
        self.assertIn('["h2"]', p.stdout)

    def test_alpn_openssl_s_client(self):
        self.assertEqual(s_client_alpn(self.srv.port, "h2"), "h2")
        self.assertEqual(s_client_alpn(self.srv.port, "h2,http/1.1"), "h2")
        self.assertEqual(s_client_alpn(self.srv.port, "http/1.1"), "http/1.1")

    def test_alpn_node_tls(self):
        p = node(os.path.join(HERE, "http2_driver.cjs"), "alpn", self.srv.tls_endpoint)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        got = json.loads(p.stdout)
        self.assertEqual(got["h2,http/1.1"], "h2")
        self.assertEqual(got["h2"], "h2")
        self.assertEqual(got["http/1.1"], "http/1.1")
        self.assertEqual(got["http/1.1 answer"], "HTTP/1.1 200 OK")

    def test_curl_over_tls(self):
        self.assertEqual(curl(self.srv.tls_endpoint + "/health", "--http1.1")[:2], ("1.1", 200))
        self.assertEqual(curl(self.srv.tls_endpoint + "/health", "--http2")[:2], ("2", 200))

    def test_plain_http_on_the_same_port(self):
        self.assertEqual(curl(self.srv.endpoint + "/health", "--http1.1")[:2], ("1.1", 200))
        self.assertEqual(curl(self.srv.endpoint + "/health", "--http2-prior-knowledge")[:2], ("2", 200))
        k = self.srv.client()
        k.create_stream(StreamName="plain", ShardCount=1)
        k.put_record(StreamName="plain", Data=b"clear", PartitionKey="k")
        # What plain HTTP wrote, TLS reads, and the other way round.
        t = self.srv.client(endpoint=self.srv.tls_endpoint, verify=False)
        t.put_record(StreamName="plain", Data=b"secret", PartitionKey="k")
        self.assertEqual([d for d, _, _ in harness.read_stream(k, "plain")], [b"clear", b"secret"])
        self.assertEqual([d for d, _, _ in harness.read_stream(t, "plain")], [b"clear", b"secret"])

    def test_config_file_keys(self):
        srv = Server(config_text=f'[server]\ntls_cert = "{self.cert}"\ntls_key = "{self.key}"\n').start()
        try:
            self.assertEqual(s_client_alpn(srv.port, "h2,http/1.1"), "h2")
            self.boto3_round_trip(srv.client(endpoint=srv.tls_endpoint, verify=self.cert), "from-config")
        finally:
            srv.stop()
            srv.cleanup()

    def refused(self, cert, key, name):
        """`serve` with this certificate and key must exit non-zero and name `name`."""
        data = tempfile.mkdtemp(prefix="icestream-tls-data-")
        try:
            p = subprocess.run([harness.BINARY, "serve", "--data-dir", data, "--listen", f"127.0.0.1:{free_port()}",
                                "--tls-cert", cert, "--tls-key", key], capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:  # subprocess.run has killed it
            self.fail(f"serve kept running with --tls-cert {cert} --tls-key {key}")
        finally:
            shutil.rmtree(data, ignore_errors=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(name, p.stdout + p.stderr)
        return p.stdout + p.stderr

    def test_missing_or_bad_files_stop_serve(self):
        missing = os.path.join(self.dir, "no-such-key.pem")
        self.refused(self.cert, missing, missing)
        missing_cert = os.path.join(self.dir, "no-such-cert.pem")
        self.refused(missing_cert, self.key, missing_cert)
        garbage = os.path.join(self.dir, "garbage.pem")
        with open(garbage, "w") as f:
            f.write("not a PEM file\n")
        self.refused(self.cert, garbage, garbage)
        self.refused(garbage, self.key, garbage)
        # A key that does not belong to the certificate.
        other_dir = os.path.join(self.dir, "other")
        os.mkdir(other_dir)
        _, other_key = make_cert(other_dir)
        self.refused(self.cert, other_key, other_key)


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""Test harness: starts a real icestream server on 127.0.0.1 with a temporary data dir and
stops it afterwards. Used by the black-box suites (compat/, chaos/, interop/)."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import boto3
from botocore.config import Config

BINARY = os.environ.get("ICESTREAM_BIN", "")
REGION = "us-east-1"
ACCOUNT = "000000000000"


def read_stream(k, stream):
    """Every record of every shard of `stream` from TRIM_HORIZON through GetRecords, as
    (Data, ShardId, SequenceNumber) tuples."""
    out = []
    for s in k.list_shards(StreamName=stream)["Shards"]:
        it = k.get_shard_iterator(StreamName=stream, ShardId=s["ShardId"], ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while True:
            r = k.get_records(ShardIterator=it, Limit=10000)
            out += [(x["Data"], s["ShardId"], x["SequenceNumber"]) for x in r["Records"]]
            if not r["Records"]:
                break
            it = r["NextShardIterator"]
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class busy_port:
    """A 127.0.0.1 port held by a listening socket for the `with` block (yields the port)."""

    def __enter__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.sock.close()


class Server:
    """One icestream process. `start()` waits for /health; `stop()` sends SIGTERM and
    waits; `kill()` sends SIGKILL (crash tests). The data dir survives restarts and is
    removed by `cleanup()`."""

    def __init__(self, data_dir=None, config_text=None, extra_args=None, log_level="warn"):
        if not BINARY:
            raise RuntimeError("set ICESTREAM_BIN to the icestream binary")
        self.own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="icestream-test-")
        self.port = free_port()
        self.proc = None
        self.extra_args = list(extra_args or [])
        self.log_level = log_level
        self.config_path = None
        if config_text is not None:
            self.config_path = self.data_dir.rstrip("/") + ".toml"  # beside, not inside, the data dir
            with open(self.config_path, "w") as f:
                f.write(config_text)
        self.log_path = self.data_dir.rstrip("/") + ".log"

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def tls_endpoint(self):
        """The same port over TLS (a server started with --tls-cert/--tls-key)."""
        return f"https://127.0.0.1:{self.port}"

    def start(self, timeout=20):
        args = [BINARY, "serve", "--data-dir", self.data_dir, "--listen", f"127.0.0.1:{self.port}",
                "--log-level", self.log_level] + self.extra_args
        if self.config_path:
            args += ["--config", self.config_path]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.read_log()}")
            try:
                with urllib.request.urlopen(self.endpoint + "/health", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not become healthy: " + self.read_log())

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self, timeout=30):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("server did not stop on SIGTERM")
        if self.proc:
            self.log.close()
        return self.proc.returncode if self.proc else None

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.log.close()

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.kill()
        if self.own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        for p in (self.log_path, self.config_path):
            if p and os.path.exists(p):
                os.remove(p)

    def client(self, service="kinesis", validate=False, retries=0, endpoint=None, verify=None, **kw):
        """A boto3 client. Client-side parameter validation is off by default so that the
        server's own validation is what the tests see. `endpoint` and `verify` (TLS) go to
        boto3 as endpoint_url and verify."""
        opts = {"connect_timeout": 5, "read_timeout": 60}
        opts.update(kw)
        cfg = Config(parameter_validation=validate, retries={"max_attempts": retries, "mode": "standard"},
                     **opts)
        return boto3.client(service, endpoint_url=endpoint or self.endpoint, region_name=REGION,
                            aws_access_key_id=os.environ.get("TEST_AK", "test"),
                            aws_secret_access_key=os.environ.get("TEST_SK", "test"), config=cfg,
                            verify=verify)

    def cli_env(self):
        env = dict(os.environ)
        env.update({"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                    "AWS_DEFAULT_REGION": REGION, "AWS_PAGER": ""})
        return env

    def cli(self, *args, check=True):
        """Runs the AWS CLI against the server; returns (returncode, stdout, stderr)."""
        cmd = ["aws", "--endpoint-url", self.endpoint, "--output", "json"] + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, env=self.cli_env(), timeout=120)
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}")
        return p.returncode, p.stdout, p.stderr


def error_code(exc):
    return exc.response["Error"]["Code"]


def raw_call(server, target, body, content_type="application/x-amz-json-1.1", sign=True,
             method="POST", extra_headers=None):
    """Sends a hand-made JSON 1.1 request, signed with botocore's SigV4 signer (an
    independent implementation). Returns (status, headers, parsed-or-raw body)."""
    import json
    import urllib.error
    import urllib.request
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    data = body if isinstance(body, bytes) else body.encode()
    headers = {"Content-Type": content_type}
    if target:
        headers["X-Amz-Target"] = target
    headers.update(extra_headers or {})
    req = AWSRequest(method=method, url=server.endpoint + "/", data=data, headers=headers)
    if sign:
        service = "glue" if target and target.startswith("AWSGlue") else "kinesis"
        SigV4Auth(Credentials("test", "test"), service, REGION).add_auth(req)
    prepared = urllib.request.Request(server.endpoint + "/", data=data if method == "POST" else None,
                                      headers=dict(req.headers.items()), method=method)
    try:
        with urllib.request.urlopen(prepared, timeout=30) as r:
            raw = r.read()
            status, hdrs = r.status, dict(r.headers.items())
    except urllib.error.HTTPError as e:
        raw = e.read()
        status, hdrs = e.code, dict(e.headers.items())
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw
    return status, hdrs, parsed


def sign_request(url, method="POST", body=b"", headers=None, service="kinesis", region=REGION,
                 access_key="test", secret_key="test", when=None, signer=None):
    """Headers of a request signed by botocore's SigV4 signer (an independent
    implementation). `when` (a datetime in UTC) signs as of another time; `signer` is a
    SigV4Auth subclass for deliberately odd signatures. Returns a dict of headers."""
    import datetime
    from unittest import mock

    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    data = body if isinstance(body, bytes) else body.encode()
    req = AWSRequest(method=method, url=url, data=data, headers=dict(headers or {}))
    cls = signer or botocore.auth.SigV4Auth
    auth = cls(Credentials(access_key, secret_key), service, region)
    if when is None:
        auth.add_auth(req)
    else:
        naive = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        with mock.patch.object(botocore.auth, "get_current_datetime", return_value=naive):
            auth.add_auth(req)
    return dict(req.headers.items())


def http_send(server, method, target, headers, body=b""):
    """Sends exactly these headers and body (http.client adds Host only when it is not
    among them). Returns (status, headers, parsed JSON or raw body)."""
    import http.client
    import json

    data = body if isinstance(body, bytes) else body.encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        names = {k.lower() for k in headers}
        conn.putrequest(method, target, skip_host="host" in names, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        if "content-length" not in names and (data or method in ("POST", "PUT")):
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data if data else None)
        r = conn.getresponse()
        raw = r.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw
        return r.status, dict(r.getheaders()), parsed
    finally:
        conn.close()


LIB_DIR = os.path.dirname(os.path.abspath(__file__))


class Rgw:
    """A real S3 server: one-node Ceph radosgw on 127.0.0.1 (tests/lib/start-rgw.sh).
    Credentials AKTEST/SKTEST; SSE-KMS test keys testkey-1/testkey-2. The S3 suites need
    it: when radosgw is not installed, start() fails (scripts/install-deps --with-rgw
    installs it; scripts/test does) — a suite never skips for want of it."""

    access_key, secret_key = "AKTEST", "SKTEST"

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="icestream-rgw-")
        self.port = free_port()
        self.mon_port = free_port()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        if shutil.which("radosgw") is None:
            self.stop()
            raise RuntimeError("radosgw is not installed: run scripts/install-deps --with-rgw")
        p = subprocess.run(["bash", os.path.join(LIB_DIR, "start-rgw.sh"), self.dir, str(self.port),
                            str(self.mon_port)], capture_output=True, text=True, timeout=180)
        if p.returncode != 0 or "ready" not in p.stdout:
            self.stop()
            raise RuntimeError("radosgw did not start: " + p.stdout + p.stderr)
        return self

    def _pids(self):
        pids = []
        run = os.path.join(self.dir, "run")
        for name in os.listdir(run) if os.path.isdir(run) else []:
            if name.endswith(".pid"):
                try:
                    with open(os.path.join(run, name)) as f:
                        pids.append((name, int(f.read().strip())))
                except (OSError, ValueError):
                    pass
        return pids

    def stop(self):
        # radosgw first, the monitor last; radosgw can hang in its shutdown once the
        # monitor is gone, so whatever is still alive after a grace period is killed and
        # no daemon outlives the test.
        pids = self._pids()
        order = {"client": 0, "osd": 1, "mon": 2}
        pids.sort(key=lambda np: order.get(np[0].split(".")[0], 3))
        for _, pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.time() + 10
        for _, pid in pids:
            alive = True
            while alive and time.time() < deadline:
                try:
                    os.kill(pid, 0)
                    time.sleep(0.1)
                except OSError:
                    alive = False
            if alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def s3(self):
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key)


class Moto:
    """moto's S3 (and more) on 127.0.0.1 — where radosgw cannot serve."""

    access_key, secret_key = "test", "test"

    def __init__(self):
        self.port = free_port()
        self.proc = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen(["python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("moto did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def s3(self):
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key)


def kinesis_call(server, op, body):
    """A Kinesis JSON 1.1 call by hand (the channel operations are newer than this
    botocore). Returns (status, parsed body)."""
    import json
    status, _, parsed = raw_call(server, "Kinesis_20131202." + op, json.dumps(body))
    return status, parsed


def channel_request(name, stream, bucket="my-bucket", compression="GZIP", freshness=None, fmt="JSON",
                    template=None, dlq=None, account=ACCOUNT, **extra):
    """A CreateChannel request for an S3 destination."""
    storage = {"BucketARN": f"arn:aws:s3:::{bucket}", "CompressionType": compression,
               "ExpectedBucketOwner": account}
    if template is not None:
        storage["OutputKeyTemplate"] = template
    dest = {"StorageConfiguration": storage}
    if freshness is not None:
        dest["DataFreshnessInSeconds"] = freshness
    if dlq is not None:
        dest["DeadLetterQueueS3Configuration"] = dlq
    req = {"ChannelName": name,
           "ServiceExecutionRoleARN": f"arn:aws:iam::{account}:role/delivery-role",
           "StreamConfigurationList": [{"StreamARN": f"arn:aws:kinesis:{REGION}:{account}:stream/{stream}",
                                        "RecordConfiguration": {"RecordFormatType": fmt}}],
           "S3DestinationConfiguration": dest}
    req.update(extra)
    return req


def wait_channel(server, arn, status="ACTIVE", timeout=20):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arn})
        if st == 200:
            last = body["ChannelDescription"]
            if last["ChannelStatus"] == status:
                return last
        elif status == "GONE" and body.get("__type") == "ResourceNotFoundException":
            return None
        time.sleep(0.05)
    raise AssertionError(f"channel {arn} did not reach {status}: {last}")


class Kinesalite:
    """kinesalite (npm, installed by scripts/install-deps into .cache/npm) on 127.0.0.1: the
    peer whose validation texts were recorded against AWS by its own test suite. Missing
    kinesalite fails start() loudly."""

    def __init__(self, npm_dir=None):
        root = os.path.abspath(os.path.join(LIB_DIR, "..", ".."))
        self.npm = npm_dir or os.environ.get("ICESTREAM_NPM_DIR") or os.path.join(root, ".cache", "npm")
        self.port = free_port()
        self.proc = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        modules = os.path.join(self.npm, "node_modules")
        if not os.path.isdir(os.path.join(modules, "kinesalite")):
            raise RuntimeError(f"kinesalite is not installed under {modules}: run scripts/install-deps")
        env = dict(os.environ, NODE_PATH=modules)
        self.proc = subprocess.Popen(
            ["node", "-e", 'require("kinesalite")({createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0})'
             '.listen(Number(process.argv[1]), "127.0.0.1")', str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("kinesalite did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

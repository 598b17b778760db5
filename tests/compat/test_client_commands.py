"""The client subcommands (issue 18): `icestream channels` honours --endpoint-url and
AWS_ENDPOINT_URL, takes --channel-name where it took an ARN, filters `list` by stream
(ListChannels' StreamFilter) and prints the server's error body; `icestream status`
shows health, streams, channels (state, lag, last error) and tables on one screen —
checked against a real server, with and without [[credentials]]."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import BINARY, Server, channel_request, kinesis_call, wait_channel  # noqa: E402


def run(*args, env=None, stdin=None):
    e = dict(os.environ)
    for k in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_KINESIS"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([BINARY, *args], capture_output=True, text=True, env=e, input=stdin, timeout=60)


class ClientCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().start()
        k = cls.srv.client()
        for s in ("alpha", "beta"):
            k.create_stream(StreamName=s)
            k.get_waiter("stream_exists").wait(StreamName=s)
        os.makedirs(os.path.join(cls.srv.data_dir, "buckets", "cli-bucket"), exist_ok=True)
        cls.arns = {}
        for name, stream in (("to-s3-alpha", "alpha"), ("to-s3-beta", "beta")):
            st, body = kinesis_call(cls.srv, "CreateChannel", channel_request(name, stream, bucket="cli-bucket", freshness=1))
            assert st == 200, body
            cls.arns[name] = body["ChannelDescription"]["ChannelARN"]
            wait_channel(cls.srv, cls.arns[name])

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()

    def test_channel_name_endpoint_url_and_env(self):
        p = run("channels", "describe", "--channel-name", "to-s3-beta", "--endpoint-url", self.srv.endpoint)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["ChannelDescription"]["ChannelARN"], self.arns["to-s3-beta"])
        p = run("channels", "describe", "--channel-name", "to-s3-alpha", env={"AWS_ENDPOINT_URL": self.srv.endpoint})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["ChannelDescription"]["ChannelName"], "to-s3-alpha")
        # The old spelling still works, and the flag beats the environment.
        p = run("channels", "list", "--endpoint", self.srv.endpoint, env={"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(json.loads(p.stdout)["ChannelSummaries"]), 2)
        p = run("channels", "list", "--stream-name", "alpha", env={"AWS_ENDPOINT_URL": self.srv.endpoint})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([c["ChannelName"] for c in json.loads(p.stdout)["ChannelSummaries"]], ["to-s3-alpha"])
        p = run("channels", "update", "-", "--channel-name", "to-s3-alpha", "--endpoint-url", self.srv.endpoint,
                stdin='{"S3DestinationConfiguration": {"DataFreshnessInSeconds": 30}}')
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_errors_print_the_servers_body(self):
        arn = self.arns["to-s3-alpha"].replace(self.arns["to-s3-alpha"].split("/")[-1], "0" * 36)
        p = run("channels", "describe", "--channel-arn", arn, "--endpoint-url", self.srv.endpoint)
        self.assertEqual(p.returncode, 1)
        body = json.loads(p.stderr)
        self.assertEqual(body["__type"], "ResourceNotFoundException")
        self.assertIn("message", body)
        p = run("channels", "describe", "--channel-name", "nope", "--endpoint-url", self.srv.endpoint)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no channel named nope", p.stderr)
        p = run("channels", "create", "-", "--endpoint-url", self.srv.endpoint, stdin='{"ChannelName": "x"}')
        self.assertEqual(p.returncode, 1)
        self.assertIn("ValidationException", json.loads(p.stderr)["__type"])
        p = run("channels", "list", "--endpoint-url", "http://127.0.0.1:9")
        self.assertEqual(p.returncode, 1)
        self.assertIn("127.0.0.1:9", p.stderr)

    def test_status(self):
        p = run("status", "--endpoint-url", self.srv.endpoint)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        out = p.stdout
        self.assertIn(f"icestream at {self.srv.endpoint}: ok", out)
        for word in ("STREAMS", "alpha", "beta", "CHANNELS", "to-s3-alpha", "ACTIVE", "TABLES"):
            self.assertIn(word, out)
        line = next(x for x in out.splitlines() if "to-s3-beta" in x)
        self.assertIn("beta", line)
        self.assertIn("S3", line)


class WithCredentials(unittest.TestCase):
    def test_credentials_come_from_the_environment(self):
        srv = Server(config_text='[[credentials]]\naccess_key_id = "AKCLI"\nsecret_access_key = "cli-secret"\n').start()
        try:
            good = {"AWS_ENDPOINT_URL": srv.endpoint, "AWS_ACCESS_KEY_ID": "AKCLI", "AWS_SECRET_ACCESS_KEY": "cli-secret"}
            p = run("channels", "list", env=good)
            self.assertEqual(p.returncode, 0, p.stderr)
            p = run("channels", "list", env={**good, "AWS_SECRET_ACCESS_KEY": "wrong"})
            self.assertEqual(p.returncode, 1)
            err = json.loads(p.stderr)  # the server's own error body, printed as is
            self.assertIn(err["__type"], ("InvalidSignatureException", "UnrecognizedClientException"))
            self.assertIn("signature", err["message"].lower())
            p = run("status", env=good)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)  # the catalog signed for s3tables
        finally:
            srv.stop()
            srv.cleanup()



class DocsBoto3Helper(unittest.TestCase):
    """The boto3 channel helper of docs/channels.md, run as printed (only the address is
    substituted) against a server with [[credentials]]: it signs with the session's
    credentials and raises the server's error body."""

    def test_helper_as_printed(self):
        import re
        import tempfile
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "channels.md")) as f:
            doc = f.read()
        at = doc.index("<!-- tested: boto3-channels -->")
        snippet = re.search(r"```python\n(.*?)```", doc[at:], re.S).group(1)
        self.assertIn("http://127.0.0.1:4567", snippet)
        srv = Server(config_text='[[credentials]]\naccess_key_id = "AKDOC"\nsecret_access_key = "doc-secret"\n').start()
        try:
            env = dict(os.environ, AWS_ACCESS_KEY_ID="AKDOC", AWS_SECRET_ACCESS_KEY="doc-secret",
                       AWS_DEFAULT_REGION="us-east-1")
            with tempfile.TemporaryDirectory() as d:
                os.makedirs(os.path.join(srv.data_dir, "buckets", "doc-bucket"), exist_ok=True)
                # The stream the channel reads, created with the same credentials.
                check = r'''
import boto3
k = boto3.client("kinesis", endpoint_url=ENDPOINT)
k.create_stream(StreamName="doc-stream")
k.get_waiter("stream_exists").wait(StreamName="doc-stream")
'''
                with open(os.path.join(d, "channel.json"), "w") as f:
                    json.dump(channel_request("doc-channel", "doc-stream", bucket="doc-bucket"), f)
                after = r'''
assert desc["ChannelName"] == "doc-channel", desc
try:
    kinesis_call("DescribeChannel", {"ChannelARN": desc["ChannelARN"][:-8] + "00000000"})
    raise SystemExit("no error raised")
except KinesisError as e:
    assert e.code == "ResourceNotFoundException" and e.status == 400 and "message" in e.body, (e.code, e.body)
bad = boto3.Session(aws_access_key_id="AKDOC", aws_secret_access_key="wrong", region_name="us-east-1")
try:
    kinesis_call("ListChannels", {}, session=bad)
    raise SystemExit("a wrong secret was accepted")
except KinesisError as e:
    assert e.status in (400, 403) and "ignature" in str(e), str(e)
print("ok")
'''
                script = (f"ENDPOINT = {srv.endpoint!r}\n" + check +
                          snippet.replace("http://127.0.0.1:4567", srv.endpoint) + after)
                with open(os.path.join(d, "run.py"), "w") as f:
                    f.write(script)
                p = subprocess.run([sys.executable, "run.py"], cwd=d, capture_output=True, text=True, env=env, timeout=60)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertEqual(p.stdout.strip(), "ok")
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main()

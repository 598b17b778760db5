"""What the server says and refuses at start-up: a strict configuration file (a typo, an
unknown key, a wrong type, `[credentials]` instead of `[[credentials]]` stop it with the
line named), an invalid --log-level, a busy port with its reason, the start-up line
(version, address, data dir, region, auth, strict mode, S3 endpoint), and the optional
access log."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import BINARY, Server, busy_port, free_port  # noqa: E402


def run_serve(args, config_text=None, timeout=10):
    """Runs `icestream serve` expecting it to exit by itself; returns (rc, output)."""
    work = tempfile.mkdtemp(prefix="icestream-startup-")
    try:
        cmd = [BINARY, "serve", "--data-dir", os.path.join(work, "data"),
               "--listen", f"127.0.0.1:{free_port()}"] + list(args)
        if config_text is not None:
            path = os.path.join(work, "icestream.toml")
            with open(path, "w") as f:
                f.write(config_text)
            cmd += ["--config", path]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"server kept running: {e.stdout} {e.stderr}")
        return p.returncode, p.stdout + p.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)


class StrictConfig(unittest.TestCase):
    def assertRefused(self, text, *needles):
        rc, out = run_serve([], text)
        self.assertNotEqual(rc, 0, out)
        for n in needles:
            self.assertIn(n, out)

    def test_single_bracket_credentials(self):
        self.assertRefused('region = "us-east-1"\n[credentials]\naccess_key_id = "AK"\nsecret_access_key = "SK"\n',
                           "line 2", "[[credentials]]")

    def test_unknown_keys_and_sections(self):
        self.assertRefused('[storage]\nfsync = true\nsegmnet_bytes = 1048576\n', "line 3", "segmnet_bytes")
        self.assertRefused('regoin = "us-east-1"\n', "line 1", "regoin")
        self.assertRefused('[stroage]\nfsync = true\n', "line 1", "stroage")
        self.assertRefused('[[credentials]]\naccess_key_id = "AK"\nsecret_key = "SK"\n', "line 3", "secret_key")

    def test_wrong_types_and_ranges(self):
        self.assertRefused('aws_strict = "yes"\n', "line 1", "aws_strict", "true or false")
        self.assertRefused('[storage]\nsegment_bytes = "128MB"\n', "line 2", "integer")
        self.assertRefused('[storage]\ncommit_threads = 0\n', "line 2", "commit_threads")
        self.assertRefused('[auth]\nbearer_tokens = "t"\n', "line 2", "bearer_tokens")
        self.assertRefused('data_dir = \n', "line 1")

    def test_a_good_file_starts(self):
        srv = Server(config_text='region = "us-east-1"\n[storage]\nfsync = true\n[server]\nio_threads = 2\n'
                                 '[[credentials]]\naccess_key_id = "AK"\nsecret_access_key = "SK"\n')
        try:
            srv.start()
        finally:
            srv.stop()
            srv.cleanup()


class Logging(unittest.TestCase):
    def test_invalid_log_level_is_an_error(self):
        rc, out = run_serve(["--log-level", "verbose"])
        self.assertNotEqual(rc, 0)
        self.assertIn("verbose", out)
        rc, out = run_serve([], 'log_level = "loud"\n')
        self.assertNotEqual(rc, 0)
        self.assertIn("loud", out)

    def test_busy_port_names_the_reason(self):
        with busy_port() as port:
            work = tempfile.mkdtemp(prefix="icestream-startup-")
            try:
                p = subprocess.run([BINARY, "serve", "--data-dir", work, "--listen", f"127.0.0.1:{port}"],
                                   capture_output=True, text=True, timeout=20)
            finally:
                shutil.rmtree(work, ignore_errors=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"127.0.0.1:{port}", p.stderr)
        self.assertIn("Address already in use", p.stderr)

    def test_startup_line(self):
        srv = Server(config_text='[[credentials]]\naccess_key_id = "AK"\nsecret_access_key = "SK"\n',
                     extra_args=["--aws-strict"], log_level="info")
        try:
            srv.start()
            log = srv.read_log()
            line = next((ln for ln in log.splitlines() if "icestream " in ln and "listening on" in ln), None)
            self.assertIsNotNone(line, log)
            self.assertRegex(line, r"icestream \d+\.\d+")
            self.assertIn(srv.endpoint, line)
            self.assertIn(srv.data_dir, line)
            self.assertIn("region us-east-1", line)
            self.assertIn("signatures verified", line)
            self.assertIn("aws-strict on", line)
            self.assertIn("S3: local folders", line)
        finally:
            srv.stop()
            srv.cleanup()
        srv = Server(extra_args=["--s3-endpoint", "http://127.0.0.1:9"], log_level="info")
        try:
            srv.start()
            line = next(ln for ln in srv.read_log().splitlines() if "listening on" in ln)
            self.assertIn("any signature accepted", line)
            self.assertIn("aws-strict off", line)
            self.assertIn("S3: http://127.0.0.1:9", line)
        finally:
            srv.stop()
            srv.cleanup()

    def test_lifecycle_and_access_log(self):
        srv = Server(config_text="[server]\naccess_log = true\n", log_level="info")
        try:
            srv.start()
            k = srv.client()
            k.create_stream(StreamName="logged", ShardCount=2)
            k.split_shard(StreamName="logged", ShardToSplit="shardId-000000000000",
                          NewStartingHashKey=str(2 ** 126))
            k.delete_stream(StreamName="logged")
            urllib.request.urlopen(srv.endpoint + "/health").read()
            time.sleep(0.2)
            log = srv.read_log()
            self.assertRegex(log, r"stream logged created .*2 shards")
            self.assertRegex(log, r"stream logged: split shardId-000000000000 into shardId-000000000002 and "
                                  r"shardId-000000000003")
            self.assertIn("stream logged deleted", log)
            self.assertRegex(log, r'access 127\.0\.0\.1 POST / Kinesis_20131202\.CreateStream 200 \d+ B \d+(\.\d+)? ms')
            self.assertRegex(log, r"access 127\.0\.0\.1 GET /health - 200")
        finally:
            srv.stop()
            srv.cleanup()
        # Off by default.
        srv = Server(log_level="info")
        try:
            srv.start()
            srv.client().list_streams()
            self.assertNotIn("access 127.0.0.1", srv.read_log())
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

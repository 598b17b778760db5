"""scripts/demo end to end, with the server binary under test (ICESTREAM_BIN): it refuses
a busy port instead of demonstrating against another server, prints a line per phase, and
runs its whole story (stream, records read back, a channel delivering to a bucket folder,
metrics) until Ctrl-C stops it cleanly."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import BINARY, busy_port, free_port  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEMO = os.path.join(ROOT, "scripts", "demo")


def demo_env(port, data_dir):
    # TMPDIR: the demo's phase logs go under the test's folder, removed afterwards.
    return dict(os.environ, ICESTREAM_BIN=BINARY, ICESTREAM_LISTEN=f"127.0.0.1:{port}", ICESTREAM_DATA_DIR=data_dir,
                TMPDIR=os.path.dirname(data_dir.rstrip("/")) if data_dir.endswith("data") else data_dir)


class Demo(unittest.TestCase):
    def test_busy_port_is_refused(self):
        with busy_port() as port:
            work = tempfile.mkdtemp(prefix="icestream-demo-")
            try:
                p = subprocess.run([DEMO], env=demo_env(port, work), capture_output=True, text=True, timeout=60)
            finally:
                shutil.rmtree(work, ignore_errors=True)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("already in use", p.stderr)
        self.assertNotIn("== starting the server", p.stdout)

    def test_the_whole_demo(self):
        work = tempfile.mkdtemp(prefix="icestream-demo-")
        port = free_port()
        proc = subprocess.Popen([DEMO], env=demo_env(port, os.path.join(work, "data")), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        out = []
        try:
            deadline = time.time() + 300
            while time.time() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                out.append(line)
                if "Press Ctrl-C to stop" in line:
                    break
            text = "".join(out)
            self.assertIn("Press Ctrl-C to stop", text)
            self.assertIn("== installing what the demo needs", text)
            self.assertIn("listening on", text)  # the server's own start-up line
            self.assertIn("== reading every shard back", text)
            self.assertRegex(text, r"alice\s+\{\"user\":\"alice\"")
            self.assertIn("== objects delivered so far", text)
            self.assertIn("DeliveryToS3_SuccessfulRecordCount", text)
            # The streaming table: three rows (the records with a ts), three DLQ lines.
            self.assertIn("3 rows in", text)
            self.assertEqual(len(re.findall(r'^   \{"user":"(alice|bob|carol)","action":"login","ts":"[^"]*\+00:00"', text, re.M)), 3, text)
            self.assertEqual(text.count("MISSING_REQUIRED_FIELD"), 3, text)
            # It ends by pointing at the console and `icestream table cat`, and both answer.
            self.assertIn("/console", text)
            self.assertIn("table cat --endpoint-url", text)
            import urllib.request
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:  # follows / -> /console/
                self.assertEqual(r.status, 200)
                self.assertTrue(r.geturl().endswith("/console/"), r.geturl())
                self.assertIn(b"/console/assets/app.js", r.read())
            os.killpg(proc.pid, signal.SIGINT)
            rest, _ = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 0, text + rest)
            self.assertIn("stopping the server", rest)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)

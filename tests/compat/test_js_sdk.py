"""Runs js_sdk_test.cjs (AWS SDK for JavaScript v3) against a real server."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_MODULES = os.path.join(HERE, "..", "..", ".cache", "npm", "node_modules")


class JsSdk(unittest.TestCase):
    def test_js_sdk_v3(self):
        self.assertTrue(os.path.isdir(os.path.join(NODE_MODULES, "@aws-sdk", "client-kinesis")),
                        "run scripts/install-deps first")
        server = Server().start()
        try:
            env = dict(os.environ, NODE_PATH=os.path.abspath(NODE_MODULES))
            p = subprocess.run(["node", "--no-warnings", os.path.join(HERE, "js_sdk_test.cjs"),
                                server.endpoint], capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("all checks passed", p.stdout)
        finally:
            server.stop()
            server.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

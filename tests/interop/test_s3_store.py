"""S3ObjectStore (our SigV4 + REST client) against real S3 servers: radosgw (SigV4 is
verified there, multipart, If-None-Match, SSE-KMS) and moto (expected bucket owner)."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Moto, Rgw  # noqa: E402

CHECK = os.environ.get("S3_STORE_CHECK", "")


def run_check(endpoint, ak, sk, bucket, *extra):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk)
    return subprocess.run([CHECK, endpoint, bucket, *extra], capture_output=True, text=True, env=env, timeout=600)


class S3Store(unittest.TestCase):
    def test_against_radosgw(self):
        rgw = Rgw().start()
        try:
            rgw.s3().create_bucket(Bucket="store-check")
            p = run_check(rgw.endpoint, rgw.access_key, rgw.secret_key, "store-check", "testkey-1")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            # A wrong secret must be refused by the server (our signature is really checked).
            p = run_check(rgw.endpoint, rgw.access_key, "wrong-secret", "store-check")
            self.assertNotEqual(p.returncode, 0)
        finally:
            rgw.stop()

    def test_against_moto(self):
        moto = Moto().start()
        try:
            moto.s3().create_bucket(Bucket="store-check")
            p = run_check(moto.endpoint, moto.access_key, moto.secret_key, "store-check", "", "123456789012")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        finally:
            moto.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)

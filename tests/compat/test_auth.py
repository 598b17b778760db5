"""SigV4 verification against botocore's signer: with credentials in the config the
server accepts only requests signed with a known key and the right secret
(InvalidSignatureException / UnrecognizedClientException otherwise); without, any
well-formed signature passes and an unsigned request is refused."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, error_code, raw_call  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

CONFIG = """
[[credentials]]
access_key_id = "AKIDGOOD"
secret_access_key = "good-secret"
"""


class Auth(unittest.TestCase):
    def test_configured_credentials_are_verified(self):
        srv = Server(config_text=CONFIG).start()
        try:
            os.environ["TEST_AK"], os.environ["TEST_SK"] = "AKIDGOOD", "good-secret"
            good = srv.client()
            good.create_stream(StreamName="auth", ShardCount=1)
            good.put_records(StreamName="auth", Records=[{"Data": b"x" * 5000, "PartitionKey": "k"}] * 20)
            self.assertEqual(good.describe_stream(StreamName="auth")["StreamDescription"]["StreamName"], "auth")
            os.environ["TEST_SK"] = "wrong-secret"
            with self.assertRaises(ClientError) as cm:
                srv.client().list_streams()
            self.assertEqual(error_code(cm.exception), "InvalidSignatureException")
            os.environ["TEST_AK"], os.environ["TEST_SK"] = "AKIDOTHER", "good-secret"
            with self.assertRaises(ClientError) as cm:
                srv.client().list_streams()
            self.assertEqual(error_code(cm.exception), "UnrecognizedClientException")
            # The AWS CLI signs the same way.
            env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDGOOD", AWS_SECRET_ACCESS_KEY="good-secret",
                       AWS_DEFAULT_REGION="us-east-1")
            p = subprocess.run(["aws", "--endpoint-url", srv.endpoint, "kinesis", "list-streams"],
                               capture_output=True, text=True, env=env, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("auth", p.stdout)
        finally:
            os.environ.pop("TEST_AK", None)
            os.environ.pop("TEST_SK", None)
            srv.stop()
            srv.cleanup()

    def test_default_accepts_any_signature_but_not_none(self):
        srv = Server().start()
        try:
            os.environ["TEST_AK"], os.environ["TEST_SK"] = "anything", "whatever"
            srv.client().list_streams()
            st, _, body = raw_call(srv, "Kinesis_20131202.ListStreams", "{}", sign=False)
            self.assertEqual((st, body["__type"]), (400, "MissingAuthenticationTokenException"))
        finally:
            os.environ.pop("TEST_AK", None)
            os.environ.pop("TEST_SK", None)
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

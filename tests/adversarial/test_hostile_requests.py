"""One request that must not take the server down (issue 19, "Crashes"): ARN members of
~30,000 characters (StreamARN, ResourceARN, ConsumerARN, ServiceExecutionRoleARN and the
channel's bucket and stream ARNs) overflowed an I/O thread's stack in std::regex before
authentication; a Glue JSON Schema whose `pattern` or `patternProperties` key nests
50,000 groups crashed the regex compiler. Each is sent to a server without credentials
and to one with credentials (unsigned: the model is checked before authentication), and
must get AWS's 400 answer while the server keeps serving every stream."""

import json
import os
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import ACCOUNT, REGION, Server, raw_call  # noqa: E402

OPEN = None
LOCKED = None
LOCKED_CONFIG = """
[[credentials]]
access_key_id = "AKIDHOSTILE"
secret_access_key = "hostile-secret"
"""
LONG = 30000


def setUpModule():
    global OPEN, LOCKED
    OPEN = Server().start()
    LOCKED = Server(config_text=LOCKED_CONFIG).start()
    status, _, body = raw_call(OPEN, "Kinesis_20131202.CreateStream",
                               json.dumps({"StreamName": "alive", "ShardCount": 1}))
    assert status == 200, body


def tearDownModule():
    for s in (OPEN, LOCKED):
        s.stop()
        s.cleanup()


def alive(server):
    with urllib.request.urlopen(server.endpoint + "/health", timeout=5) as r:
        return r.status == 200


def long_stream_arn():
    return f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/" + "s" * LONG


def nested_groups(n):
    return "(" * n + "a" + ")" * n


class LongArns(unittest.TestCase):
    def cases(self):
        stream_arn = long_stream_arn()
        channel = {
            "ChannelName": "c",
            "ServiceExecutionRoleARN": f"arn:aws:iam::{ACCOUNT}:role/" + "r" * LONG,
            "StreamConfigurationList": [{"StreamARN": stream_arn,
                                         "RecordConfiguration": {"RecordFormatType": "JSON"}}],
            "S3DestinationConfiguration": {"StorageConfiguration": {
                "BucketARN": "arn:aws:s3:::" + "b" * LONG, "CompressionType": "GZIP",
                "ExpectedBucketOwner": ACCOUNT}},
        }
        return [
            ("DescribeStreamSummary", {"StreamARN": stream_arn}),
            ("PutRecord", {"StreamARN": stream_arn, "PartitionKey": "k", "Data": "AA=="}),
            ("ListTagsForResource", {"ResourceARN": stream_arn}),
            ("ListTagsForResource", {"ResourceARN": "arn:aws:kinesis:" + ":" * LONG}),
            ("DescribeStreamConsumer", {"ConsumerARN": stream_arn + "/consumer/c:1"}),
            ("DescribeStreamConsumer", {"ConsumerARN": "arn:aws" + ":" * LONG + "kinesis"}),
            ("CreateChannel", channel),
            ("DescribeChannel", {"ChannelARN": f"arn:aws:kinesis:{REGION}:{ACCOUNT}:channel/"
                                 + "x" * LONG}),
        ]

    def check(self, server, sign):
        for op, body in self.cases():
            with self.subTest(op=op, sign=sign):
                status, _, parsed = raw_call(server, "Kinesis_20131202." + op, json.dumps(body),
                                             sign=sign)
                self.assertEqual(status, 400, (op, str(parsed)[:300]))
                if parsed["__type"] == "MissingAuthenticationTokenException" and not sign:
                    # Operations outside the Kinesis model (the channel API) are
                    # authenticated first; what matters is the answer, not a crash.
                    self.assertTrue(alive(server))
                    continue
                self.assertEqual(parsed["__type"], "ValidationException", str(parsed)[:300])
                self.assertIn("failed to satisfy constraint", parsed["message"])
                self.assertTrue(alive(server))

    def test_open_server(self):
        self.check(OPEN, sign=True)
        # Every stream still serves.
        status, _, body = raw_call(OPEN, "Kinesis_20131202.PutRecord", json.dumps(
            {"StreamName": "alive", "PartitionKey": "k", "Data": "AA=="}))
        self.assertEqual(status, 200, body)

    def test_server_with_credentials_unsigned(self):
        # The model is checked before authentication, as AWS does: the answer is the
        # ValidationException, and nothing crashes on the way.
        self.check(LOCKED, sign=False)


class GluePatterns(unittest.TestCase):
    def create_schema(self, server, name, definition, sign=True):
        body = {"SchemaName": name, "DataFormat": "JSON", "Compatibility": "NONE",
                "SchemaDefinition": definition}
        return raw_call(server, "AWSGlue.CreateSchema", json.dumps(body), sign=sign)

    def test_nested_pattern_and_pattern_properties(self):
        deep = nested_groups(50000)
        for i, definition in enumerate([
                json.dumps({"type": "string", "pattern": deep}),
                json.dumps({"type": "object", "patternProperties": {deep: {"type": "string"}}}),
                json.dumps({"type": "string", "pattern": "a" * 20000}),
                json.dumps({"type": "string", "pattern": "(a"}),
        ]):
            with self.subTest(i=i):
                status, _, parsed = self.create_schema(OPEN, f"hostile{i}", definition)
                self.assertEqual(status, 400, str(parsed)[:300])
                self.assertEqual(parsed["__type"], "InvalidInputException", str(parsed)[:300])
                message = parsed.get("message", parsed.get("Message", ""))
                self.assertIn("Schema definition of JSON data format is invalid", message)
                self.assertTrue(alive(OPEN))
        # A sensible pattern is still accepted.
        status, _, parsed = self.create_schema(
            OPEN, "fine", json.dumps({"type": "string", "pattern": "^(?:[a-z]{2}-)?\\d+$"}))
        self.assertEqual(status, 200, parsed)

    def test_unsigned_on_server_with_credentials(self):
        status, _, parsed = self.create_schema(
            LOCKED, "hostile", json.dumps({"type": "string", "pattern": nested_groups(50000)}),
            sign=False)
        self.assertEqual(status // 100, 4, str(parsed)[:300])
        self.assertTrue(alive(LOCKED))


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""Enhanced fan-out control plane with boto3: RegisterStreamConsumer,
DescribeStreamConsumer, ListStreamConsumers, DeregisterStreamConsumer — AWS's shapes,
states (CREATING → ACTIVE, DELETING → gone), ARN format, the 20-per-stream limit,
ConsumerCount in DescribeStreamSummary, DeleteStream's EnforceConsumerDeletion, and the
same answers over CBOR (test_cbor.py). SubscribeToShard: test_subscribe.py."""

import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, error_code  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

ARN_RE = r"^arn:aws:kinesis:us-east-1:000000000000:stream/efo/consumer/c1:[0-9]+$"


class Consumers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().start()
        cls.k = cls.srv.client()
        cls.k.create_stream(StreamName="efo", ShardCount=1)
        cls.arn = cls.k.describe_stream_summary(StreamName="efo")["StreamDescriptionSummary"]["StreamARN"]

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()

    def wait_status(self, arn, status, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            d = self.k.describe_stream_consumer(ConsumerARN=arn)["ConsumerDescription"]
            if d["ConsumerStatus"] == status:
                return d
            time.sleep(0.1)
        self.fail(f"{arn} never became {status}")

    def test_lifecycle(self):
        before = time.time()
        c = self.k.register_stream_consumer(StreamARN=self.arn, ConsumerName="c1")["Consumer"]
        self.assertEqual(c["ConsumerName"], "c1")
        self.assertEqual(c["ConsumerStatus"], "CREATING")
        self.assertRegex(c["ConsumerARN"], ARN_RE)
        self.assertEqual(int(c["ConsumerARN"].rsplit(":", 1)[1]), int(c["ConsumerCreationTimestamp"].timestamp()))
        self.assertLess(abs(c["ConsumerCreationTimestamp"].timestamp() - before), 60)
        d = self.wait_status(c["ConsumerARN"], "ACTIVE")
        self.assertEqual(d["StreamARN"], self.arn)
        self.assertEqual(d["ConsumerARN"], c["ConsumerARN"])
        by_name = self.k.describe_stream_consumer(StreamARN=self.arn, ConsumerName="c1")["ConsumerDescription"]
        self.assertEqual(by_name, d)
        listed = self.k.list_stream_consumers(StreamARN=self.arn)["Consumers"]
        self.assertEqual([x["ConsumerARN"] for x in listed], [c["ConsumerARN"]])
        self.assertEqual(set(listed[0]), {"ConsumerName", "ConsumerARN", "ConsumerStatus",
                                          "ConsumerCreationTimestamp"})
        self.assertEqual(self.k.describe_stream_summary(StreamName="efo")["StreamDescriptionSummary"]
                         ["ConsumerCount"], 1)
        with self.assertRaises(ClientError) as cm:
            self.k.register_stream_consumer(StreamARN=self.arn, ConsumerName="c1")
        self.assertEqual(error_code(cm.exception), "ResourceInUseException")
        # A stream with consumers is deleted only with EnforceConsumerDeletion.
        with self.assertRaises(ClientError) as cm:
            self.k.delete_stream(StreamName="efo")
        self.assertEqual(error_code(cm.exception), "ResourceInUseException")
        # Deregistration: DELETING, then gone.
        self.k.deregister_stream_consumer(ConsumerARN=c["ConsumerARN"])
        deadline = time.time() + 10
        seen = []
        while time.time() < deadline:
            try:
                seen.append(self.k.describe_stream_consumer(ConsumerARN=c["ConsumerARN"])
                            ["ConsumerDescription"]["ConsumerStatus"])
            except ClientError as e:
                self.assertEqual(error_code(e), "ResourceNotFoundException")
                break
            time.sleep(0.05)
        else:
            self.fail("the consumer was never removed")
        self.assertTrue(all(s == "DELETING" for s in seen), seen)
        self.assertEqual(self.k.list_stream_consumers(StreamARN=self.arn)["Consumers"], [])
        self.assertEqual(self.k.describe_stream_summary(StreamName="efo")["StreamDescriptionSummary"]
                         ["ConsumerCount"], 0)
        with self.assertRaises(ClientError) as cm:
            self.k.deregister_stream_consumer(StreamARN=self.arn, ConsumerName="c1")
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")

    def test_limit_pagination_and_enforced_delete(self):
        self.k.create_stream(StreamName="efo20", ShardCount=1)
        arn = self.k.describe_stream_summary(StreamName="efo20")["StreamDescriptionSummary"]["StreamARN"]
        for i in range(20):
            self.k.register_stream_consumer(StreamARN=arn, ConsumerName=f"c{i:02d}")
        with self.assertRaises(ClientError) as cm:
            self.k.register_stream_consumer(StreamARN=arn, ConsumerName="one-too-many")
        self.assertEqual(error_code(cm.exception), "LimitExceededException")
        names = []
        for page in self.k.get_paginator("list_stream_consumers").paginate(
                StreamARN=arn, PaginationConfig={"PageSize": 7}):
            self.assertLessEqual(len(page["Consumers"]), 7)
            names += [c["ConsumerName"] for c in page["Consumers"]]
        self.assertEqual(names, [f"c{i:02d}" for i in range(20)])
        self.k.delete_stream(StreamName="efo20", EnforceConsumerDeletion=True)

    def test_validation_and_not_found(self):
        with self.assertRaises(ClientError) as cm:
            self.k.register_stream_consumer(StreamARN=self.arn, ConsumerName="bad name")
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            self.k.register_stream_consumer(StreamARN="not-an-arn", ConsumerName="x")
        self.assertEqual(error_code(cm.exception), "ValidationException")
        self.assertIn("streamARN", cm.exception.response["Error"]["Message"])
        with self.assertRaises(ClientError) as cm:
            self.k.describe_stream_consumer(ConsumerARN="arn:aws:kinesis:us-east-1:000000000000:"
                                                        "stream/efo/consumer/none:1")
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")
        with self.assertRaises(ClientError) as cm:
            self.k.describe_stream_consumer(ConsumerName="x")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        with self.assertRaises(ClientError) as cm:
            self.k.register_stream_consumer(
                StreamARN="arn:aws:kinesis:us-east-1:000000000000:stream/nope", ConsumerName="x")
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")
        with self.assertRaises(ClientError) as cm:
            self.k.subscribe_to_shard(ConsumerARN="arn:aws:kinesis:us-east-1:000000000000:stream/efo/"
                                                  "consumer/c:1", ShardId="shardId-000000000000",
                                      StartingPosition={"Type": "LATEST"})
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")

    def test_consumers_survive_a_restart(self):
        self.k.create_stream(StreamName="efo-restart", ShardCount=1)
        arn = self.k.describe_stream_summary(StreamName="efo-restart")["StreamDescriptionSummary"]["StreamARN"]
        c = self.k.register_stream_consumer(StreamARN=arn, ConsumerName="durable")["Consumer"]
        self.srv.stop()
        self.srv.start()
        k = self.srv.client()
        d = k.describe_stream_consumer(ConsumerARN=c["ConsumerARN"])["ConsumerDescription"]
        self.assertEqual(d["ConsumerName"], "durable")
        k.deregister_stream_consumer(ConsumerARN=c["ConsumerARN"])
        type(self).k = k


if __name__ == "__main__":
    unittest.main(verbosity=2)

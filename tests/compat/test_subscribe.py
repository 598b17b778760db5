"""SubscribeToShard with boto3's subscribe_to_shard over HTTP/1.1 (botocore parses the
vnd.amazon.eventstream framing, CRCs included, independently): every record once and in
order, records appended after the subscription pushed within milliseconds, the
continuation sequence number resumes where the stream left off, ChildShards at the end
of a split shard, every starting position type, take-over rules, a clean server stop
while subscribed."""

import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, error_code  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402


def active_consumer(k, stream_arn, name):
    c = k.register_stream_consumer(StreamARN=stream_arn, ConsumerName=name)["Consumer"]
    deadline = time.time() + 10
    while time.time() < deadline:
        if k.describe_stream_consumer(ConsumerARN=c["ConsumerARN"])["ConsumerDescription"][
                "ConsumerStatus"] == "ACTIVE":
            return c["ConsumerARN"]
        time.sleep(0.1)
    raise AssertionError("consumer never ACTIVE")


class Subscribe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().start()
        cls.k = cls.srv.client(read_timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()

    def stream(self, name, shards=1):
        self.k.create_stream(StreamName=name, ShardCount=shards)
        return self.k.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]

    def events(self, consumer, shard="shardId-000000000000", **pos):
        r = self.k.subscribe_to_shard(ConsumerARN=consumer, ShardId=shard, StartingPosition=pos)
        return r["EventStream"]

    def collect(self, stream, want, timeout=20):
        got, last = [], None
        deadline = time.time() + timeout
        for ev in stream:
            e = ev["SubscribeToShardEvent"]
            got += e["Records"]
            last = e
            if len(got) >= want or time.time() > deadline or "ChildShards" in e:
                break
        return got, last

    def test_records_in_order_then_pushed(self):
        arn = self.stream("sub1")
        for i in range(50):
            self.k.put_record(StreamName="sub1", Data=f"r{i}".encode(), PartitionKey="k")
        consumer = active_consumer(self.k, arn, "c")
        es = self.events(consumer, Type="TRIM_HORIZON")
        got, last = self.collect(es, 50)
        self.assertEqual([r["Data"] for r in got], [f"r{i}".encode() for i in range(50)])
        self.assertEqual(last["ContinuationSequenceNumber"], got[-1]["SequenceNumber"])
        self.assertIn("MillisBehindLatest", last)
        # Records appended now are pushed to the open subscription.
        latencies = []
        for i in range(20):
            self.k.put_record(StreamName="sub1", Data=f"p{i}".encode(), PartitionKey="k")
            acked = time.time()
            pushed, _ = self.collect(es, 1)
            latencies.append(time.time() - acked)
            self.assertEqual([r["Data"] for r in pushed], [f"p{i}".encode()])
        es.close()
        latencies.sort()
        print(f"push latency after PutRecord ack: p50 {latencies[10]*1000:.1f} ms, "
              f"max {latencies[-1]*1000:.1f} ms", file=sys.stderr)
        self.assertLess(latencies[10], 0.5)
        self.k.put_record(StreamName="sub1", Data=b"after", PartitionKey="k")
        # A new subscription for the same consumer and shard within 5 s is refused.
        with self.assertRaises(ClientError) as cm:
            self.events(consumer, Type="LATEST")
        self.assertEqual(error_code(cm.exception), "ResourceInUseException")
        time.sleep(5.1)
        # AFTER_SEQUENCE_NUMBER of the last record seen resumes right after it.
        es2 = self.events(consumer, Type="AFTER_SEQUENCE_NUMBER", SequenceNumber=pushed[-1]["SequenceNumber"])
        got2, _ = self.collect(es2, 1)
        es2.close()
        self.assertEqual([r["Data"] for r in got2], [b"after"])

    def test_many_consumers_of_one_shard_each_get_every_record(self):
        # Consumers at the same tip share encoded events (the server encodes once); each
        # must still see every record once, in order, from its own starting point.
        arn = self.stream("fan")
        for i in range(30):
            self.k.put_record(StreamName="fan", Data=f"early{i}".encode(), PartitionKey="k")
        consumers = [active_consumer(self.k, arn, f"f{j}") for j in range(4)]
        streams = [self.events(c, Type="TRIM_HORIZON") for c in consumers[:2]]
        streams += [self.events(c, Type="AT_SEQUENCE_NUMBER", SequenceNumber=self.k.get_records(
            ShardIterator=self.k.get_shard_iterator(StreamName="fan", ShardId="shardId-000000000000",
                                                    ShardIteratorType="TRIM_HORIZON")["ShardIterator"],
            Limit=11)["Records"][10]["SequenceNumber"]) for c in consumers[2:]]
        results = [None] * len(streams)

        def read(i):
            want = 30 + 600 - (20 if i >= 2 else 0)
            results[i] = self.collect(streams[i], want, timeout=30)[0]

        readers = [threading.Thread(target=read, args=(i,)) for i in range(len(streams))]
        for t in readers:
            t.start()
        for b in range(20):
            self.k.put_records(StreamName="fan", Records=[
                {"Data": f"late{b * 30 + i}".encode(), "PartitionKey": f"k{i}"} for i in range(30)])
        for t in readers:
            t.join(60)
        for es in streams:
            es.close()
        everything = [f"early{i}".encode() for i in range(30)] + [f"late{i}".encode() for i in range(600)]
        for i, got in enumerate(results):
            self.assertEqual([r["Data"] for r in got], everything[10:] if i >= 2 else everything, f"consumer {i}")

    def test_starting_positions(self):
        arn = self.stream("sub2")
        seqs = [self.k.put_record(StreamName="sub2", Data=f"{i}".encode(), PartitionKey="k")["SequenceNumber"]
                for i in range(5)]
        consumers = [active_consumer(self.k, arn, f"c{i}") for i in range(4)]
        cases = [
            (consumers[0], {"Type": "AT_SEQUENCE_NUMBER", "SequenceNumber": seqs[2]}, [b"2", b"3", b"4"]),
            (consumers[1], {"Type": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": seqs[2]}, [b"3", b"4"]),
            (consumers[2], {"Type": "AT_TIMESTAMP", "Timestamp": time.time() - 3600}, [b"0", b"1", b"2", b"3", b"4"]),
        ]
        for consumer, pos, want in cases:
            es = self.events(consumer, **pos)
            got, _ = self.collect(es, len(want))
            es.close()
            self.assertEqual([r["Data"] for r in got], want, pos)
        es = self.events(consumers[3], Type="LATEST")
        first = next(iter(es))["SubscribeToShardEvent"]  # a heartbeat: nothing new yet
        self.assertEqual(first["Records"], [])
        self.k.put_record(StreamName="sub2", Data=b"new", PartitionKey="k")
        got, _ = self.collect(es, 1)
        es.close()
        self.assertEqual([r["Data"] for r in got], [b"new"])

    def test_child_shards_at_the_end_of_a_split_shard(self):
        arn = self.stream("sub3")
        self.k.put_record(StreamName="sub3", Data=b"before", PartitionKey="k")
        self.k.split_shard(StreamName="sub3", ShardToSplit="shardId-000000000000",
                           NewStartingHashKey=str(2 ** 127))
        consumer = active_consumer(self.k, arn, "c")
        es = self.events(consumer, Type="TRIM_HORIZON")
        got, last = self.collect(es, 100)
        es.close()
        self.assertEqual([r["Data"] for r in got], [b"before"])
        self.assertEqual(sorted(c["ShardId"] for c in last["ChildShards"]),
                         ["shardId-000000000001", "shardId-000000000002"])
        self.assertEqual(last["ChildShards"][0]["ParentShards"], ["shardId-000000000000"])

    def test_take_over_and_deregistration_end_a_subscription(self):
        from botocore.exceptions import EventStreamError
        arn = self.stream("sub5")
        consumer = active_consumer(self.k, arn, "c")
        first = self.events(consumer, Type="LATEST")
        it = iter(first)
        next(it)  # the first (empty) event
        time.sleep(5.1)
        second = self.events(consumer, Type="LATEST")
        with self.assertRaises(EventStreamError) as cm:
            for _ in it:
                pass
        self.assertEqual(cm.exception.response["Error"]["Code"], "ResourceInUseException")
        it2 = iter(second)
        next(it2)
        self.k.deregister_stream_consumer(ConsumerARN=consumer)
        with self.assertRaises(EventStreamError) as cm:
            for _ in it2:
                pass
        self.assertEqual(cm.exception.response["Error"]["Code"], "ResourceNotFoundException")

    def test_errors_before_the_stream(self):
        arn = self.stream("sub4")
        with self.assertRaises(ClientError) as cm:
            self.events(arn + "/consumer/none:1", Type="LATEST")
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")
        consumer = active_consumer(self.k, arn, "c")
        with self.assertRaises(ClientError) as cm:
            self.events(consumer, shard="shardId-000000000009", Type="LATEST")
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")
        with self.assertRaises(ClientError) as cm:
            self.events(consumer, Type="AT_SEQUENCE_NUMBER")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        with self.assertRaises(ClientError) as cm:
            self.events(consumer, Type="SOMETIMES")
        self.assertEqual(error_code(cm.exception), "ValidationException")

    def test_stop_while_subscribed(self):
        srv = Server().start()
        try:
            k = srv.client(read_timeout=30)
            k.create_stream(StreamName="s", ShardCount=1)
            arn = k.describe_stream_summary(StreamName="s")["StreamDescriptionSummary"]["StreamARN"]
            consumer = active_consumer(k, arn, "c")
            es = k.subscribe_to_shard(ConsumerARN=consumer, ShardId="shardId-000000000000",
                                      StartingPosition={"Type": "LATEST"})["EventStream"]
            reader_done = threading.Event()

            def read():
                try:
                    for _ in es:
                        pass
                except Exception:
                    pass
                reader_done.set()

            t = threading.Thread(target=read)
            t.start()
            time.sleep(0.3)
            t0 = time.time()
            self.assertEqual(srv.stop(), 0)
            self.assertLess(time.time() - t0, 10)
            self.assertTrue(reader_done.wait(10))
            t.join()
        finally:
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

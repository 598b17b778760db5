"""Stream metrics at /metrics (issue 17, "Stream metrics"), black-box with boto3: AWS's
CloudWatch stream-level metrics under their CloudWatch names (docs/metrics.md), the
enhanced shard-level ones only behind the stream's EnableEnhancedMonitoring flags, the
enhanced fan-out ones by consumer, throttling counts under --aws-strict, and API call
counts and latency histograms by operation and error code. Every figure is checked
against what the test itself did."""

import os
import re
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, error_code  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$')


def scrape(server):
    """{(family, frozenset(labels)): value} and the set of families with a TYPE line."""
    with urllib.request.urlopen(server.endpoint + "/metrics", timeout=10) as r:
        text = r.read().decode()
    values, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a Prometheus sample: {line!r}"
        labels = frozenset(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        values[(m.group(1), labels)] = float(m.group(3))
    return values, types


def value(values, family, **labels):
    return values.get((family, frozenset(labels.items())))


class StreamMetrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().start()
        cls.k = cls.srv.client()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()

    def test_puts_and_reads_counted_per_stream(self):
        self.k.create_stream(StreamName="m1", ShardCount=2)
        values, types = scrape(self.srv)
        self.assertEqual(value(values, "IncomingRecords", stream_name="m1"), 0)  # listed before traffic
        for family, kind in [("IncomingBytes", "counter"), ("PutRecords_Latency_seconds", "histogram"),
                             ("GetRecords_IteratorAgeMilliseconds", "gauge"),
                             ("SubscribeToShardEvent_MillisBehindLatest", "gauge"),
                             ("Shard_IncomingBytes", "counter"), ("icestream_api_requests_total", "counter")]:
            self.assertEqual(types.get(family), kind, family)

        data = [b"x" * (10 + i) for i in range(30)]
        r = self.k.put_records(StreamName="m1", Records=[{"Data": d, "PartitionKey": f"k{i}"} for i, d in enumerate(data)])
        self.assertEqual(r["FailedRecordCount"], 0)
        self.k.put_record(StreamName="m1", Data=b"single", PartitionKey="one")
        values, _ = scrape(self.srv)
        total_bytes = sum(len(d) for d in data) + len(b"single")
        self.assertEqual(value(values, "IncomingRecords", stream_name="m1"), 31)
        self.assertEqual(value(values, "IncomingBytes", stream_name="m1"), total_bytes)
        self.assertEqual(value(values, "PutRecords_TotalRecords", stream_name="m1"), 30)
        self.assertEqual(value(values, "PutRecords_SuccessfulRecords", stream_name="m1"), 30)
        self.assertEqual(value(values, "PutRecords_Bytes", stream_name="m1"), sum(len(d) for d in data))
        self.assertEqual(value(values, "PutRecords_Success", stream_name="m1"), 1)
        self.assertEqual(value(values, "PutRecord_Success", stream_name="m1"), 1)
        self.assertEqual(value(values, "PutRecord_Bytes", stream_name="m1"), 6)
        self.assertEqual(value(values, "PutRecords_Latency_seconds_count", stream_name="m1"), 1)
        self.assertEqual(value(values, "PutRecords_Latency_seconds_bucket", stream_name="m1", le="+Inf"), 1)
        self.assertGreater(value(values, "PutRecords_Latency_seconds_sum", stream_name="m1"), 0)

        # Read one shard to its end: records and bytes as returned, the iterator age gauge.
        got = []
        for s in self.k.list_shards(StreamName="m1")["Shards"]:
            it = self.k.get_shard_iterator(StreamName="m1", ShardId=s["ShardId"],
                                           ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            r = self.k.get_records(ShardIterator=it)
            got += r["Records"]
        values, _ = scrape(self.srv)
        self.assertEqual(len(got), 31)
        self.assertEqual(value(values, "GetRecords_Records", stream_name="m1"), 31)
        self.assertEqual(value(values, "GetRecords_Bytes", stream_name="m1"), total_bytes)
        self.assertEqual(value(values, "GetRecords_Success", stream_name="m1"), 2)
        self.assertEqual(value(values, "GetRecords_Latency_seconds_count", stream_name="m1"), 2)
        self.assertIsNotNone(value(values, "GetRecords_IteratorAgeMilliseconds", stream_name="m1"))
        # No enhanced monitoring: no shard-level samples.
        self.assertFalse([k for k in values if k[0].startswith("Shard_") and ("stream_name", "m1") in k[1]])

    def test_shard_level_metrics_follow_enhanced_monitoring(self):
        self.k.create_stream(StreamName="m2", ShardCount=2)
        shards = [s["ShardId"] for s in self.k.list_shards(StreamName="m2")["Shards"]]
        self.k.enable_enhanced_monitoring(StreamName="m2", ShardLevelMetrics=["IncomingRecords", "OutgoingBytes"])
        r = self.k.put_record(StreamName="m2", Data=b"abc", PartitionKey="p")
        values, _ = scrape(self.srv)
        for s in shards:
            want = 1 if s == r["ShardId"] else 0
            self.assertEqual(value(values, "Shard_IncomingRecords", stream_name="m2", shard_id=s), want, s)
            self.assertEqual(value(values, "Shard_OutgoingBytes", stream_name="m2", shard_id=s), 0, s)
            self.assertIsNone(value(values, "Shard_IncomingBytes", stream_name="m2", shard_id=s))
        it = self.k.get_shard_iterator(StreamName="m2", ShardId=r["ShardId"], ShardIteratorType="TRIM_HORIZON")
        self.k.get_records(ShardIterator=it["ShardIterator"])
        values, _ = scrape(self.srv)
        self.assertEqual(value(values, "Shard_OutgoingBytes", stream_name="m2", shard_id=r["ShardId"]), 3)
        self.k.enable_enhanced_monitoring(StreamName="m2", ShardLevelMetrics=["ALL"])
        values, _ = scrape(self.srv)
        self.assertEqual(value(values, "Shard_IncomingBytes", stream_name="m2", shard_id=r["ShardId"]), 3)
        self.assertIsNotNone(value(values, "Shard_IteratorAgeMilliseconds", stream_name="m2", shard_id=r["ShardId"]))
        self.k.disable_enhanced_monitoring(StreamName="m2", ShardLevelMetrics=["ALL"])
        values, _ = scrape(self.srv)
        self.assertFalse([k for k in values if k[0].startswith("Shard_") and ("stream_name", "m2") in k[1]])

    def test_deleted_streams_leave_and_recreated_ones_start_over(self):
        self.k.create_stream(StreamName="m3", ShardCount=1)
        self.k.put_record(StreamName="m3", Data=b"abc", PartitionKey="p")
        self.assertEqual(value(scrape(self.srv)[0], "IncomingRecords", stream_name="m3"), 1)
        self.k.delete_stream(StreamName="m3")
        deadline = time.time() + 10
        while time.time() < deadline and value(scrape(self.srv)[0], "IncomingRecords", stream_name="m3") is not None:
            time.sleep(0.1)
        self.assertIsNone(value(scrape(self.srv)[0], "IncomingRecords", stream_name="m3"))
        self.k.create_stream(StreamName="m3", ShardCount=1)
        self.assertEqual(value(scrape(self.srv)[0], "IncomingRecords", stream_name="m3"), 0)

    def test_enhanced_fan_out_by_consumer(self):
        self.k.create_stream(StreamName="m4", ShardCount=1)
        arn = self.k.describe_stream_summary(StreamName="m4")["StreamDescriptionSummary"]["StreamARN"]
        for i in range(5):
            self.k.put_record(StreamName="m4", Data=f"r{i}".encode(), PartitionKey="k")
        c = self.k.register_stream_consumer(StreamARN=arn, ConsumerName="app")["Consumer"]["ConsumerARN"]
        deadline = time.time() + 10
        while self.k.describe_stream_consumer(ConsumerARN=c)["ConsumerDescription"]["ConsumerStatus"] != "ACTIVE":
            self.assertLess(time.time(), deadline)
            time.sleep(0.1)
        es = self.k.subscribe_to_shard(ConsumerARN=c, ShardId="shardId-000000000000",
                                       StartingPosition={"Type": "TRIM_HORIZON"})["EventStream"]
        got = []
        for ev in es:
            got += ev["SubscribeToShardEvent"]["Records"]
            if len(got) >= 5:
                break
        # A second subscription within 5 s is refused: RateExceeded.
        with self.assertRaises(ClientError) as e:
            self.k.subscribe_to_shard(ConsumerARN=c, ShardId="shardId-000000000000",
                                      StartingPosition={"Type": "LATEST"})
        self.assertEqual(error_code(e.exception), "ResourceInUseException")
        values, _ = scrape(self.srv)
        lab = {"stream_name": "m4", "consumer_name": "app"}
        self.assertEqual(value(values, "SubscribeToShard_Success", **lab), 1)
        self.assertEqual(value(values, "SubscribeToShard_RateExceeded", **lab), 1)
        self.assertEqual(value(values, "SubscribeToShardEvent_Records", **lab), 5)
        self.assertEqual(value(values, "SubscribeToShardEvent_Bytes", **lab), sum(len(f"r{i}") for i in range(5)))
        self.assertGreaterEqual(value(values, "SubscribeToShardEvent_Success", **lab), 1)
        self.assertIsNotNone(value(values, "SubscribeToShardEvent_MillisBehindLatest", **lab))
        es._raw_stream.close()

    def test_api_calls_by_operation_and_error_code(self):
        before, _ = scrape(self.srv)
        with self.assertRaises(ClientError):
            self.k.describe_stream_summary(StreamName="no-such-stream")
        self.k.list_streams()
        values, _ = scrape(self.srv)
        lab = {"service": "kinesis", "operation": "DescribeStreamSummary", "error_code": "ResourceNotFoundException"}
        self.assertEqual(value(values, "icestream_api_requests_total", **lab) - (value(before, "icestream_api_requests_total", **lab) or 0), 1)
        self.assertGreaterEqual(value(values, "icestream_api_request_duration_seconds_count", **lab), 1)
        ok = {"service": "kinesis", "operation": "ListStreams", "error_code": "none"}
        self.assertGreaterEqual(value(values, "icestream_api_requests_total", **ok), 1)
        glue = self.srv.client("glue")
        with self.assertRaises(ClientError):
            glue.get_registry(RegistryId={"RegistryName": "nope"})
        values, _ = scrape(self.srv)
        self.assertEqual(value(values, "icestream_api_requests_total", service="glue", operation="GetRegistry",
                               error_code="EntityNotFoundException"), 1)
        # The Iceberg REST catalog, by the spec's operation ids and error types.
        import urllib.error
        base = self.srv.endpoint + "/iceberg/v1/default"
        urllib.request.urlopen(base + "/namespaces", timeout=10).read()
        with self.assertRaises(urllib.error.HTTPError):
            urllib.request.urlopen(base + "/namespaces/nope/tables/nothing", timeout=10)
        with self.assertRaises(urllib.error.HTTPError):
            urllib.request.urlopen(urllib.request.Request(base + "/namespaces/nope", method="HEAD"), timeout=10)
        values, _ = scrape(self.srv)
        self.assertGreaterEqual(value(values, "icestream_api_requests_total", service="iceberg",
                                      operation="ListNamespaces", error_code="none"), 1)
        self.assertEqual(value(values, "icestream_api_requests_total", service="iceberg", operation="LoadTable",
                               error_code="NoSuchTableException"), 1)
        self.assertEqual(value(values, "icestream_api_requests_total", service="iceberg",
                               operation="NamespaceExists", error_code="HTTP404"), 1)
        self.assertEqual(value(values, "icestream_api_request_duration_seconds_count", service="iceberg",
                               operation="LoadTable", error_code="NoSuchTableException"), 1)


class Throttling(unittest.TestCase):
    """--aws-strict: AWS's per-shard write and read rates."""

    def test_throttled_writes_and_reads_are_counted(self):
        srv = Server(extra_args=["--aws-strict"]).start()
        try:
            k = srv.client()
            k.create_stream(StreamName="t", ShardCount=1)
            k.enable_enhanced_monitoring(StreamName="t", ShardLevelMetrics=["ALL"])
            throttled = 0
            for _ in range(4):  # 2,000 records at once on one shard: over 1,000/s
                r = k.put_records(StreamName="t", Records=[{"Data": b"d", "PartitionKey": "p"} for _ in range(500)])
                throttled += sum(1 for x in r["Records"] if x.get("ErrorCode") == "ProvisionedThroughputExceededException")
            self.assertGreater(throttled, 0)
            it = k.get_shard_iterator(StreamName="t", ShardId="shardId-000000000000",
                                      ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            read_throttles = 0
            for _ in range(12):  # over 5 GetRecords/s
                try:
                    it = k.get_records(ShardIterator=it, Limit=1)["NextShardIterator"]
                except ClientError as e:
                    self.assertEqual(error_code(e), "ProvisionedThroughputExceededException")
                    read_throttles += 1
            self.assertGreater(read_throttles, 0)
            values, _ = scrape(srv)
            self.assertEqual(value(values, "PutRecords_ThrottledRecords", stream_name="t"), throttled)
            self.assertEqual(value(values, "WriteProvisionedThroughputExceeded", stream_name="t"), throttled)
            self.assertEqual(value(values, "PutRecords_SuccessfulRecords", stream_name="t"), 2000 - throttled)
            self.assertEqual(value(values, "ReadProvisionedThroughputExceeded", stream_name="t"), read_throttles)
            shard = {"stream_name": "t", "shard_id": "shardId-000000000000"}
            self.assertEqual(value(values, "Shard_WriteProvisionedThroughputExceeded", **shard), throttled)
            self.assertEqual(value(values, "Shard_ReadProvisionedThroughputExceeded", **shard), read_throttles)
            self.assertEqual(value(values, "icestream_api_requests_total", service="kinesis", operation="GetRecords",
                                   error_code="ProvisionedThroughputExceededException"), read_throttles)
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main()

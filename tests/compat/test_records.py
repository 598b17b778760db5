"""Data plane through boto3 against a real server: PutRecord, PutRecords, GetShardIterator,
GetRecords — routing by MD5 exactly as AWS, ordering, limits, iterators (expired,
forged, foreign), and the protocol envelope (content type, auth, bad JSON/base64)."""

import base64
import datetime
import hashlib
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import ACCOUNT, Server, error_code, kinesis_call, raw_call  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

SERVER = None
K = None
TTL_MS = 1500


def setUpModule():
    global SERVER, K
    SERVER = Server(config_text=f"[kinesis]\niterator_ttl_ms = {TTL_MS}\n").start()
    K = SERVER.client()


def tearDownModule():
    SERVER.stop()
    SERVER.cleanup()


def md5_hash(key):
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest(), "big")


def shard_for(shards, h):
    for s in shards:
        if "EndingSequenceNumber" in s["SequenceNumberRange"]:
            continue
        if int(s["HashKeyRange"]["StartingHashKey"]) <= h <= int(s["HashKeyRange"]["EndingHashKey"]):
            return s["ShardId"]
    raise AssertionError("no shard covers hash")


def read_all(stream, shard_id, iterator_type="TRIM_HORIZON", limit=None, **kw):
    it = K.get_shard_iterator(StreamName=stream, ShardId=shard_id, ShardIteratorType=iterator_type,
                              **kw)["ShardIterator"]
    out = []
    while True:
        args = {"ShardIterator": it}
        if limit:
            args["Limit"] = limit
        r = K.get_records(**args)
        out += r["Records"]
        if not r["Records"] or "NextShardIterator" not in r:
            return out, r
        it = r["NextShardIterator"]


class Routing(unittest.TestCase):
    def test_partition_keys_land_where_aws_puts_them(self):
        K.create_stream(StreamName="route", ShardCount=4)
        shards = K.list_shards(StreamName="route")["Shards"]
        keys = ["a", "pk1", "é", "", "user-42", "日本語", "x" * 256] [0:2] + ["é", "user-42", "日本語", "x" * 256]
        for k in keys:
            r = K.put_record(StreamName="route", Data=k.encode() or b"-", PartitionKey=k)
            self.assertEqual(r["ShardId"], shard_for(shards, md5_hash(k)), k)
            self.assertEqual(len(r["SequenceNumber"]), 56)
        # Vectors from the spec: 'a' and 'pk1'.
        self.assertEqual(md5_hash("a"), 16955237001963240173058271559858726497)
        self.assertEqual(md5_hash("pk1"), 329398341438914906102347661116985167824)

    def test_explicit_hash_key(self):
        K.create_stream(StreamName="ehk", ShardCount=4)
        shards = K.list_shards(StreamName="ehk")["Shards"]
        for h in [0, 2**126, 2**127 + 5, 2**128 - 1]:
            r = K.put_record(StreamName="ehk", Data=b"d", PartitionKey="ignored", ExplicitHashKey=str(h))
            self.assertEqual(r["ShardId"], shard_for(shards, h))
        with self.assertRaises(ClientError) as cm:
            K.put_record(StreamName="ehk", Data=b"d", PartitionKey="k", ExplicitHashKey=str(2**128))
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        with self.assertRaises(ClientError) as cm:
            K.put_record(StreamName="ehk", Data=b"d", PartitionKey="k", ExplicitHashKey="-1")
        self.assertEqual(error_code(cm.exception), "ValidationException")
        r = K.put_records(StreamName="ehk", Records=[
            {"Data": b"1", "PartitionKey": "k", "ExplicitHashKey": "0"},
            {"Data": b"2", "PartitionKey": "k", "ExplicitHashKey": str(2**128 - 1)}])
        self.assertEqual([x["ShardId"] for x in r["Records"]],
                         ["shardId-000000000000", "shardId-000000000003"])


class PutAndGet(unittest.TestCase):
    def test_round_trip_order_and_sequence_numbers(self):
        K.create_stream(StreamName="rt", ShardCount=1)
        sent = []
        for i in range(30):
            data = os.urandom(i * 37)
            r = K.put_record(StreamName="rt", Data=data, PartitionKey=f"k{i}")
            sent.append((r["SequenceNumber"], data, f"k{i}"))
        seqs = [s for s, _, _ in sent]
        self.assertEqual(seqs, sorted(seqs, key=int))
        got, last = read_all("rt", "shardId-000000000000")
        self.assertEqual([(r["SequenceNumber"], r["Data"], r["PartitionKey"]) for r in got], sent)
        self.assertEqual(last["MillisBehindLatest"], 0)
        now = datetime.datetime.now(datetime.timezone.utc)
        for r in got:
            self.assertLess(abs((r["ApproximateArrivalTimestamp"] - now).total_seconds()), 60)

    def test_put_records_results_and_limits(self):
        K.create_stream(StreamName="batch", ShardCount=3)
        recs = [{"Data": f"r{i}".encode(), "PartitionKey": f"p{i}"} for i in range(500)]
        r = K.put_records(StreamName="batch", Records=recs)
        self.assertEqual(r["FailedRecordCount"], 0)
        self.assertEqual(len(r["Records"]), 500)
        shards = K.list_shards(StreamName="batch")["Shards"]
        for i, res in enumerate(r["Records"]):
            self.assertEqual(res["ShardId"], shard_for(shards, md5_hash(f"p{i}")))
        total = sum(len(read_all("batch", s["ShardId"])[0]) for s in shards)
        self.assertEqual(total, 500)
        with self.assertRaises(ClientError) as cm:
            K.put_records(StreamName="batch", Records=recs + [recs[0]])
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.put_records(StreamName="batch", Records=[])
        self.assertEqual(error_code(cm.exception), "ValidationException")
        big = [{"Data": b"x" * (1024 * 1024 - 10), "PartitionKey": "k"} for _ in range(6)]
        with self.assertRaises(ClientError) as cm:
            K.put_records(StreamName="batch", Records=big)
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        self.assertIn("5 MB", cm.exception.response["Error"]["Message"])
        with self.assertRaises(ClientError) as cm:
            K.put_records(StreamName="batch", Records=[{"Data": b"x", "PartitionKey": ""}])
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.put_records(StreamName="nope", Records=recs[:1])
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")

    def test_record_size_limits(self):
        K.create_stream(StreamName="sizes", ShardCount=1)
        # The record size is data plus partition key: exactly 1 MiB together is accepted.
        K.put_record(StreamName="sizes", Data=b"a" * (1024 * 1024 - 1), PartitionKey="k")
        K.put_records(StreamName="sizes", Records=[{"Data": b"a" * (1024 * 1024 - 256),
                                                     "PartitionKey": "q" * 256}])
        for data, key in ((1024 * 1024, "k"), (1024 * 1024 - 255, "q" * 256), (1024 * 1024 + 1, "k")):
            with self.assertRaises(ClientError) as cm:
                K.put_record(StreamName="sizes", Data=b"a" * data, PartitionKey=key)
            self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
            self.assertIn("maximum record size", cm.exception.response["Error"]["Message"])
            with self.assertRaises(ClientError) as cm:
                K.put_records(StreamName="sizes", Records=[{"Data": b"a" * data, "PartitionKey": key}])
            self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        K.put_record(StreamName="sizes", Data=b"", PartitionKey="e")
        K.put_record(StreamName="sizes", Data=b"x", PartitionKey="p" * 256)
        # 256 characters of two bytes each: over 256 bytes, still a valid key (the limit
        # counts characters), in PutRecord and in PutRecords alike.
        K.put_record(StreamName="sizes", Data=b"x", PartitionKey="\u00e9" * 256)
        r = K.put_records(StreamName="sizes", Records=[{"Data": b"x", "PartitionKey": "\u00e9" * 256}])
        self.assertEqual(r["FailedRecordCount"], 0)
        with self.assertRaises(ClientError) as cm:
            K.put_records(StreamName="sizes", Records=[{"Data": b"x", "PartitionKey": "\u00e9" * 257}])
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.put_record(StreamName="sizes", Data=b"x", PartitionKey="p" * 257)
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.put_record(StreamName="sizes", Data=b"x", PartitionKey="")
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.put_record(StreamName="sizes", Data=b"x")
        self.assertEqual(error_code(cm.exception), "ValidationException")
        got, _ = read_all("sizes", "shardId-000000000000")
        self.assertEqual([len(r["Data"]) for r in got], [1024 * 1024 - 1, 1024 * 1024 - 256, 0, 1, 1, 1])
        # Larger records after UpdateMaxRecordSize.
        K.update_max_record_size(StreamARN=f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/sizes",
                                 MaxRecordSizeInKiB=2048)
        K.put_record(StreamName="sizes", Data=b"b" * (1024 * 1024 + 100), PartitionKey="k")

    def test_sequence_number_for_ordering(self):
        K.create_stream(StreamName="ord", ShardCount=1)
        first = K.put_record(StreamName="ord", Data=b"1", PartitionKey="k")["SequenceNumber"]
        second = K.put_record(StreamName="ord", Data=b"2", PartitionKey="k",
                              SequenceNumberForOrdering=first)["SequenceNumber"]
        self.assertGreater(int(second), int(first))
        with self.assertRaises(ClientError) as cm:
            K.put_record(StreamName="ord", Data=b"3", PartitionKey="k", SequenceNumberForOrdering="12345")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")

    def test_get_records_limit_and_paging(self):
        K.create_stream(StreamName="page", ShardCount=1)
        K.put_records(StreamName="page", Records=[{"Data": str(i).encode(), "PartitionKey": "k"} for i in range(25)])
        got, _ = read_all("page", "shardId-000000000000", limit=7)
        self.assertEqual([int(r["Data"]) for r in got], list(range(25)))
        it = K.get_shard_iterator(StreamName="page", ShardId="shardId-000000000000",
                                  ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        r = K.get_records(ShardIterator=it, Limit=5)
        self.assertEqual(len(r["Records"]), 5)
        self.assertGreater(r["MillisBehindLatest"], -1)
        with self.assertRaises(ClientError) as cm:
            K.get_records(ShardIterator=it, Limit=10001)
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.get_records(ShardIterator=it, Limit=0)
        self.assertEqual(error_code(cm.exception), "ValidationException")

    def test_ten_mib_response_cap(self):
        K.create_stream(StreamName="cap", ShardCount=1)
        blob = b"z" * (1000 * 1000)
        for _ in range(3):
            K.put_records(StreamName="cap", Records=[{"Data": blob, "PartitionKey": "k"}] * 4)
        it = K.get_shard_iterator(StreamName="cap", ShardId="shardId-000000000000",
                                  ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        r = K.get_records(ShardIterator=it)
        self.assertEqual(len(r["Records"]), 10)  # 10 x 1 MB fits in 10 MiB, the 11th does not
        r2 = K.get_records(ShardIterator=r["NextShardIterator"])
        self.assertEqual(len(r2["Records"]), 2)


class Iterators(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        K.create_stream(StreamName="its", ShardCount=1)
        cls.seqs = [K.put_record(StreamName="its", Data=str(i).encode(), PartitionKey="k")["SequenceNumber"]
                    for i in range(10)]

    def first_data(self, **kw):
        it = K.get_shard_iterator(StreamName="its", ShardId="shardId-000000000000", **kw)["ShardIterator"]
        r = K.get_records(ShardIterator=it)
        return [int(x["Data"]) for x in r["Records"]]

    def test_iterator_types(self):
        self.assertEqual(self.first_data(ShardIteratorType="TRIM_HORIZON"), list(range(10)))
        self.assertEqual(self.first_data(ShardIteratorType="AT_SEQUENCE_NUMBER",
                                         StartingSequenceNumber=self.seqs[4]), list(range(4, 10)))
        self.assertEqual(self.first_data(ShardIteratorType="AFTER_SEQUENCE_NUMBER",
                                         StartingSequenceNumber=self.seqs[4]), list(range(5, 10)))
        it = K.get_shard_iterator(StreamName="its", ShardId="shardId-000000000000",
                                  ShardIteratorType="LATEST")["ShardIterator"]
        self.assertEqual(K.get_records(ShardIterator=it)["Records"], [])
        K.put_record(StreamName="its", Data=b"99", PartitionKey="k")
        self.assertEqual([x["Data"] for x in K.get_records(ShardIterator=it)["Records"]], [b"99"])
        start = K.describe_stream(StreamName="its")["StreamDescription"]["Shards"][0]["SequenceNumberRange"]["StartingSequenceNumber"]
        self.assertEqual(self.first_data(ShardIteratorType="AT_SEQUENCE_NUMBER", StartingSequenceNumber=start)[:3], [0, 1, 2])

    def test_at_timestamp(self):
        K.create_stream(StreamName="ts", ShardCount=1)
        K.put_record(StreamName="ts", Data=b"old", PartitionKey="k")
        time.sleep(1.1)
        mid = datetime.datetime.now(datetime.timezone.utc)
        time.sleep(0.05)
        K.put_record(StreamName="ts", Data=b"new", PartitionKey="k")
        it = K.get_shard_iterator(StreamName="ts", ShardId="shardId-000000000000",
                                  ShardIteratorType="AT_TIMESTAMP", Timestamp=mid)["ShardIterator"]
        self.assertEqual([r["Data"] for r in K.get_records(ShardIterator=it)["Records"]], [b"new"])
        it = K.get_shard_iterator(StreamName="ts", ShardId="shardId-000000000000",
                                  ShardIteratorType="AT_TIMESTAMP",
                                  Timestamp=datetime.datetime(2000, 1, 1))["ShardIterator"]
        self.assertEqual(len(K.get_records(ShardIterator=it)["Records"]), 2)
        future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        with self.assertRaises(ClientError) as cm:
            K.get_shard_iterator(StreamName="ts", ShardId="shardId-000000000000",
                                 ShardIteratorType="AT_TIMESTAMP", Timestamp=future)
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        with self.assertRaises(ClientError) as cm:
            K.get_shard_iterator(StreamName="ts", ShardId="shardId-000000000000",
                                 ShardIteratorType="AT_TIMESTAMP")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")

    def test_get_shard_iterator_errors(self):
        def err(**kw):
            with self.assertRaises(ClientError) as cm:
                K.get_shard_iterator(**kw)
            return error_code(cm.exception)
        base = {"StreamName": "its", "ShardId": "shardId-000000000000"}
        self.assertEqual(err(**base, ShardIteratorType="AT_SEQUENCE_NUMBER"), "InvalidArgumentException")
        self.assertEqual(err(**base, ShardIteratorType="LATEST", StartingSequenceNumber=self.seqs[0]),
                         "InvalidArgumentException")
        self.assertEqual(err(**base, ShardIteratorType="SOMEWHERE"), "ValidationException")
        self.assertEqual(err(StreamName="its", ShardId="shardId-000000000007", ShardIteratorType="LATEST"),
                         "ResourceNotFoundException")
        self.assertEqual(err(StreamName="nope", ShardId="shardId-000000000000", ShardIteratorType="LATEST"),
                         "ResourceNotFoundException")
        self.assertEqual(err(**base, ShardIteratorType="AT_SEQUENCE_NUMBER", StartingSequenceNumber="123"),
                         "InvalidArgumentException")
        # A sequence number from another stream.
        K.create_stream(StreamName="its-other", ShardCount=2)
        other = K.put_record(StreamName="its-other", Data=b"x", PartitionKey="k", ExplicitHashKey="0")["SequenceNumber"]
        self.assertEqual(err(**base, ShardIteratorType="AT_SEQUENCE_NUMBER", StartingSequenceNumber=other),
                         "InvalidArgumentException")
        # One from another shard of the same stream.
        with self.assertRaises(ClientError) as cm:
            K.get_shard_iterator(StreamName="its-other", ShardId="shardId-000000000001",
                                 ShardIteratorType="AT_SEQUENCE_NUMBER", StartingSequenceNumber=other)
        self.assertIn("shardId-000000000000", cm.exception.response["Error"]["Message"])
        # AWS resolves "shard-0" style ids by their number.
        it = K.get_shard_iterator(StreamName="its", ShardId="shard-0", ShardIteratorType="TRIM_HORIZON")
        self.assertIn("ShardIterator", it)

    def test_forged_foreign_and_expired_iterators(self):
        it = K.get_shard_iterator(StreamName="its", ShardId="shardId-000000000000",
                                  ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        raw = bytearray(base64.b64decode(it))
        raw[14] ^= 1
        for bad in (base64.b64encode(bytes(raw)).decode(), "not-an-iterator", "AAAA"):
            with self.assertRaises(ClientError) as cm:
                K.get_records(ShardIterator=bad)
            self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        K.create_stream(StreamName="its-foreign", ShardCount=1)
        with self.assertRaises(ClientError) as cm:
            K.get_records(ShardIterator=it,
                          StreamARN=f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/its-foreign")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        K.get_records(ShardIterator=it, StreamARN=f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/its")
        time.sleep(TTL_MS / 1000 + 0.3)
        with self.assertRaises(ClientError) as cm:
            K.get_records(ShardIterator=it)
        self.assertEqual(error_code(cm.exception), "ExpiredIteratorException")
        self.assertIn("Iterator expired", cm.exception.response["Error"]["Message"])

    def test_iterator_of_deleted_stream(self):
        K.create_stream(StreamName="its-del", ShardCount=1)
        it = K.get_shard_iterator(StreamName="its-del", ShardId="shardId-000000000000",
                                  ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        K.delete_stream(StreamName="its-del")
        K.create_stream(StreamName="its-del", ShardCount=1)
        with self.assertRaises(ClientError) as cm:
            K.get_records(ShardIterator=it)
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")


class Envelope(unittest.TestCase):
    def test_protocol_errors(self):
        K.create_stream(StreamName="env", ShardCount=1)
        T = "Kinesis_20131202."
        st, hdrs, body = raw_call(SERVER, T + "DescribeStream", '{"StreamName": "env"}')
        self.assertEqual(st, 200)
        self.assertTrue(hdrs.get("x-amzn-RequestId"))
        self.assertEqual(body["StreamDescription"]["StreamName"], "env")
        st, hdrs, body = raw_call(SERVER, T + "NoSuchOp", "{}")
        self.assertEqual((st, body["__type"]), (400, "UnknownOperationException"))
        st, _, body = raw_call(SERVER, T + "DescribeStream", "{not json")
        self.assertEqual((st, body["__type"]), (400, "SerializationException"))
        st, _, body = raw_call(SERVER, T + "DescribeStream", "")
        self.assertEqual((st, body["__type"]), (400, "SerializationException"))
        # AWS answers another content type with a bare XML-ish 404 (kinesalite's suite).
        st, _, body = raw_call(SERVER, T + "DescribeStream", '{"StreamName": "env"}', content_type="text/plain")
        self.assertEqual((st, body), (404, b"<UnknownOperationException/>\n"))
        st, hdrs, body = raw_call(SERVER, T + "DescribeStream", '{"StreamName": "env"}', sign=False)
        self.assertEqual((st, body["__type"]), (400, "MissingAuthenticationTokenException"))
        self.assertEqual(hdrs.get("x-amzn-ErrorType"), "MissingAuthenticationTokenException")
        st, _, body = raw_call(SERVER, T + "DescribeStream", '{"StreamName": 5}')
        self.assertEqual((st, body["__type"]), (400, "SerializationException"))
        st, _, body = raw_call(SERVER, T + "PutRecord",
                               json.dumps({"StreamName": "env", "Data": "!!!!", "PartitionKey": "k"}))
        self.assertEqual((st, body["__type"]), (400, "SerializationException"))
        st, _, body = raw_call(SERVER, T + "PutRecords",
                               json.dumps({"StreamName": "env", "Records": [{"Data": "abc", "PartitionKey": "k"}]}))
        self.assertEqual((st, body["__type"]), (400, "SerializationException"))
        st, _, body = raw_call(SERVER, T + "PutRecords", json.dumps({"StreamName": "env", "Records": "x"}))
        self.assertEqual((st, body["__type"]), (400, "SerializationException"))
        st, _, body = raw_call(SERVER, T + "PutRecords", json.dumps({"StreamName": "env"}))
        self.assertEqual((st, body["__type"]), (400, "ValidationException"))
        st, _, body = raw_call(SERVER, T + "DescribeStream", '{"StreamName": "env"}', method="GET")
        self.assertEqual(st, 403)
        # Unknown members are ignored; null members count as absent.
        st, _, body = raw_call(SERVER, T + "DescribeStream", '{"StreamName": "env", "Whatever": 1, "Limit": null}')
        self.assertEqual(st, 200)

    def test_oversized_body(self):
        st, _, _ = raw_call(SERVER, "Kinesis_20131202.PutRecords", b"x" * (17 * 1024 * 1024))
        self.assertEqual(st, 413)

    def test_health(self):
        import urllib.request
        with urllib.request.urlopen(SERVER.endpoint + "/health") as r:
            self.assertEqual(json.loads(r.read())["status"], "ok")


class StrictShardLimits(unittest.TestCase):
    """--aws-strict: 1 MiB/s and 1,000 records/s of writes, 5 GetRecords/s per shard."""

    def test_writes_and_reads_over_the_shard_rate_are_throttled(self):
        srv = Server(extra_args=["--aws-strict"]).start()
        try:
            k = srv.client()
            k.create_stream(StreamName="strict", ShardCount=2)
            k.get_waiter("stream_exists").wait(StreamName="strict", WaiterConfig={"Delay": 1})
            shards = k.list_shards(StreamName="strict")["Shards"]
            lo = shards[0]["HashKeyRange"]["StartingHashKey"]
            # 400 x 4 KiB to one shard (1.6 MB): the shard takes about 1 MiB, the rest fail
            # one by one with AWS's per-entry error; other shards are untouched.
            recs = [{"Data": b"%06d" % i + b"x" * 4090, "PartitionKey": "p", "ExplicitHashKey": lo}
                    for i in range(400)]
            r = k.put_records(StreamName="strict", Records=recs)
            ok = [e for e in r["Records"] if "SequenceNumber" in e]
            failed = [e for e in r["Records"] if "ErrorCode" in e]
            self.assertEqual(r["FailedRecordCount"], len(failed))
            self.assertTrue(200 <= len(ok) <= 300, len(ok))
            self.assertEqual(len(ok) + len(failed), 400)
            self.assertEqual({e["ErrorCode"] for e in failed}, {"ProvisionedThroughputExceededException"})
            self.assertIn("Rate exceeded for shard shardId-000000000000 in stream strict", failed[0]["ErrorMessage"])
            other = k.put_record(StreamName="strict", Data=b"x", PartitionKey="p",
                                 ExplicitHashKey=shards[1]["HashKeyRange"]["StartingHashKey"])
            self.assertEqual(other["ShardId"], "shardId-000000000001")
            # PutRecord over the rate fails as a whole: 512 KiB records, far above 1 MiB/s.
            half = base64.b64encode(b"y" * (512 * 1024)).decode()
            codes = []
            for _ in range(4):
                st, body = kinesis_call(srv, "PutRecord", {"StreamName": "strict", "Data": half,
                                                            "PartitionKey": "p", "ExplicitHashKey": lo})
                codes.append(body.get("__type", st))
            self.assertIn("ProvisionedThroughputExceededException", codes)
            put_ok = codes.count(200)
            # Reads: five GetRecords per second per shard.
            time.sleep(1.2)
            it = k.get_shard_iterator(StreamName="strict", ShardId="shardId-000000000001",
                                      ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            codes = []
            for _ in range(8):
                st, body = kinesis_call(srv, "GetRecords", {"ShardIterator": it, "Limit": 1})
                codes.append(body.get("__type", st))
            self.assertEqual(codes[:5], [200] * 5)
            self.assertIn("ProvisionedThroughputExceededException", codes[5:])
            # The accepted records read back in order; nothing throttled was stored.
            time.sleep(1.2)
            it = k.get_shard_iterator(StreamName="strict", ShardId="shardId-000000000000",
                                      ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            got = k.get_records(ShardIterator=it, Limit=1000)["Records"]
            self.assertEqual([g["SequenceNumber"] for g in got][:len(ok)], [e["SequenceNumber"] for e in ok])
            self.assertEqual(len(got), len(ok) + put_ok)
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

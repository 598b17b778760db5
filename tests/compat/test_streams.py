"""Stream control plane through boto3 against a real server: CreateStream, DeleteStream,
DescribeStream(Summary), ListStreams, ListShards, DescribeLimits, retention, tags,
resharding, stream mode — happy paths and AWS's error types."""

import hashlib
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import ACCOUNT, Server, error_code  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

SERVER = None
K = None


def setUpModule():
    global SERVER, K
    SERVER = Server().start()
    K = SERVER.client()


def tearDownModule():
    SERVER.stop()
    SERVER.cleanup()


def arn(name):
    return f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/{name}"


class CreateDescribeDelete(unittest.TestCase):
    def assertError(self, code, fn, *args, **kw):
        with self.assertRaises(ClientError) as cm:
            fn(*args, **kw)
        self.assertEqual(error_code(cm.exception), code, cm.exception.response)
        return cm.exception

    def test_on_demand_is_default_with_four_shards(self):
        K.create_stream(StreamName="od-default")
        d = K.describe_stream(StreamName="od-default")["StreamDescription"]
        self.assertEqual(d["StreamStatus"], "ACTIVE")
        self.assertEqual(d["StreamModeDetails"]["StreamMode"], "ON_DEMAND")
        self.assertEqual(len(d["Shards"]), 4)
        self.assertEqual(d["StreamARN"], arn("od-default"))
        self.assertEqual(d["RetentionPeriodHours"], 24)
        self.assertEqual(d["Shards"][3]["HashKeyRange"]["EndingHashKey"], str(2**128 - 1))
        self.assertEqual(d["EnhancedMonitoring"], [{"ShardLevelMetrics": []}])
        K.get_waiter("stream_exists").wait(StreamName="od-default", WaiterConfig={"Delay": 1})

    def test_provisioned_with_shard_count_and_even_split(self):
        K.create_stream(StreamName="prov3", ShardCount=3)
        d = K.describe_stream(StreamName="prov3")["StreamDescription"]
        self.assertEqual(d["StreamModeDetails"]["StreamMode"], "PROVISIONED")
        ends = [s["HashKeyRange"]["EndingHashKey"] for s in d["Shards"]]
        self.assertEqual(ends, ["113427455640312821154458202477256070484",
                                "226854911280625642308916404954512140969", str(2**128 - 1)])
        self.assertEqual([s["ShardId"] for s in d["Shards"]],
                         ["shardId-000000000000", "shardId-000000000001", "shardId-000000000002"])
        for s in d["Shards"]:
            self.assertNotIn("EndingSequenceNumber", s["SequenceNumberRange"])
            self.assertEqual(len(s["SequenceNumberRange"]["StartingSequenceNumber"]), 56)

    def test_explicit_modes(self):
        K.create_stream(StreamName="od2", StreamModeDetails={"StreamMode": "ON_DEMAND"})
        self.assertEqual(K.describe_stream_summary(StreamName="od2")["StreamDescriptionSummary"]
                         ["OpenShardCount"], 4)
        K.create_stream(StreamName="prov1", ShardCount=1, StreamModeDetails={"StreamMode": "PROVISIONED"})
        self.assertError("InvalidArgumentException", K.create_stream, StreamName="prov-no-count",
                         StreamModeDetails={"StreamMode": "PROVISIONED"})
        self.assertError("InvalidArgumentException", K.create_stream, StreamName="od-with-count",
                         ShardCount=2, StreamModeDetails={"StreamMode": "ON_DEMAND"})
        self.assertError("ValidationException", K.create_stream, StreamName="bad-mode",
                         StreamModeDetails={"StreamMode": "SOMETIMES"})

    def test_create_errors(self):
        K.create_stream(StreamName="dup", ShardCount=1)
        e = self.assertError("ResourceInUseException", K.create_stream, StreamName="dup", ShardCount=1)
        self.assertIn("already exists", e.response["Error"]["Message"])
        self.assertError("ValidationException", K.create_stream, StreamName="", ShardCount=1)
        self.assertError("ValidationException", K.create_stream, StreamName="a" * 129, ShardCount=1)
        self.assertError("ValidationException", K.create_stream, StreamName="bad name!", ShardCount=1)
        self.assertError("ValidationException", K.create_stream, StreamName="zero", ShardCount=0)
        self.assertError("ValidationException", K.create_stream, ShardCount=1)
        self.assertError("LimitExceededException", K.create_stream, StreamName="huge", ShardCount=20001)
        K.create_stream(StreamName="a" * 128, ShardCount=1)
        K.create_stream(StreamName="Ab_.-9", ShardCount=1)

    def test_delete_and_not_found(self):
        K.create_stream(StreamName="gone", ShardCount=1)
        K.delete_stream(StreamName="gone")
        self.assertError("ResourceNotFoundException", K.describe_stream, StreamName="gone")
        self.assertError("ResourceNotFoundException", K.delete_stream, StreamName="gone")
        K.get_waiter("stream_not_exists").wait(StreamName="gone", WaiterConfig={"Delay": 1})
        # The name can be used again; the new stream starts empty.
        K.create_stream(StreamName="gone", ShardCount=1)
        it = K.get_shard_iterator(StreamName="gone", ShardId="shardId-000000000000",
                                  ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        self.assertEqual(K.get_records(ShardIterator=it)["Records"], [])

    def test_stream_arn_instead_of_name(self):
        K.create_stream(StreamName="by-arn", ShardCount=2)
        d = K.describe_stream(StreamARN=arn("by-arn"))["StreamDescription"]
        self.assertEqual(d["StreamName"], "by-arn")
        s = K.describe_stream_summary(StreamARN=arn("by-arn"))["StreamDescriptionSummary"]
        self.assertEqual(s["OpenShardCount"], 2)
        self.assertEqual(s["ConsumerCount"], 0)
        self.assertError("ResourceNotFoundException", K.describe_stream,
                         StreamARN=f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/nope")
        self.assertError("ValidationException", K.describe_stream, StreamARN="not-an-arn")
        # Same name in another region or account: not this stream, and the message names
        # the ARN's stream and account.
        for other in ("arn:aws:kinesis:eu-west-1:%s:stream/by-arn" % ACCOUNT,
                      "arn:aws:kinesis:us-east-1:123456789012:stream/by-arn"):
            for call in (K.describe_stream_summary, K.list_shards):
                e = self.assertError("ResourceNotFoundException", call, StreamARN=other)
                acct = other.split(":")[4]
                self.assertEqual(e.response["Error"]["Message"],
                                 f"Stream by-arn under account {acct} not found.")
            self.assertError("ResourceNotFoundException", K.put_record, StreamARN=other,
                             Data=b"x", PartitionKey="k")
        self.assertError("InvalidArgumentException", K.describe_stream)
        self.assertError("InvalidArgumentException", K.describe_stream, StreamName="other",
                         StreamARN=arn("by-arn"))
        r = K.put_record(StreamARN=arn("by-arn"), Data=b"x", PartitionKey="k")
        self.assertIn("SequenceNumber", r)

    def test_describe_stream_pages_shards(self):
        K.create_stream(StreamName="many", ShardCount=7)
        d = K.describe_stream(StreamName="many", Limit=3)["StreamDescription"]
        self.assertEqual(len(d["Shards"]), 3)
        self.assertTrue(d["HasMoreShards"])
        d2 = K.describe_stream(StreamName="many", Limit=3,
                               ExclusiveStartShardId=d["Shards"][-1]["ShardId"])["StreamDescription"]
        self.assertEqual(d2["Shards"][0]["ShardId"], "shardId-000000000003")
        pages = list(K.get_paginator("describe_stream").paginate(StreamName="many",
                                                               PaginationConfig={"PageSize": 2}))
        ids = [s["ShardId"] for p in pages for s in p["StreamDescription"]["Shards"]]
        self.assertEqual(len(ids), 7)
        self.assertEqual(len(set(ids)), 7)
        self.assertError("ValidationException", K.describe_stream, StreamName="many", Limit=0)
        self.assertError("ValidationException", K.describe_stream, StreamName="many", Limit=10001)

    def test_list_streams_paging(self):
        names = [f"ls-{i:02d}" for i in range(12)]
        for n in names:
            K.create_stream(StreamName=n, ShardCount=1)
        r = K.list_streams(Limit=5, ExclusiveStartStreamName="ls-")
        self.assertEqual(r["StreamNames"], names[:5])
        self.assertTrue(r["HasMoreStreams"])
        self.assertEqual([s["StreamName"] for s in r["StreamSummaries"]], names[:5])
        self.assertEqual(r["StreamSummaries"][0]["StreamARN"], arn("ls-00"))
        r2 = K.list_streams(NextToken=r["NextToken"], Limit=5)
        self.assertEqual(r2["StreamNames"], names[5:10])
        all_names = []
        for page in K.get_paginator("list_streams").paginate(PaginationConfig={"PageSize": 4}):
            all_names += page["StreamNames"]
        for n in names:
            self.assertIn(n, all_names)
        self.assertEqual(len(all_names), len(set(all_names)))
        self.assertError("InvalidArgumentException", K.list_streams, NextToken="garbage")

    def test_describe_limits(self):
        before = K.describe_limits()
        K.create_stream(StreamName="lim", ShardCount=5)
        after = K.describe_limits()
        self.assertEqual(after["ShardLimit"], 20000)
        self.assertEqual(after["OpenShardCount"], before["OpenShardCount"] + 5)
        self.assertEqual(after["OnDemandStreamCountLimit"], 50)
        self.assertGreaterEqual(after["OnDemandStreamCount"], 0)

    def test_retention(self):
        K.create_stream(StreamName="ret", ShardCount=1)
        K.increase_stream_retention_period(StreamName="ret", RetentionPeriodHours=48)
        self.assertEqual(K.describe_stream(StreamName="ret")["StreamDescription"]["RetentionPeriodHours"], 48)
        K.increase_stream_retention_period(StreamName="ret", RetentionPeriodHours=48)  # equal is fine
        self.assertError("InvalidArgumentException", K.increase_stream_retention_period,
                         StreamName="ret", RetentionPeriodHours=30)
        K.decrease_stream_retention_period(StreamName="ret", RetentionPeriodHours=24)
        self.assertError("InvalidArgumentException", K.decrease_stream_retention_period,
                         StreamName="ret", RetentionPeriodHours=23)
        self.assertError("InvalidArgumentException", K.decrease_stream_retention_period,
                         StreamName="ret", RetentionPeriodHours=100)
        self.assertError("InvalidArgumentException", K.increase_stream_retention_period,
                         StreamName="ret", RetentionPeriodHours=8761)
        K.increase_stream_retention_period(StreamName="ret", RetentionPeriodHours=8760)
        self.assertError("ResourceNotFoundException", K.increase_stream_retention_period,
                         StreamName="nope", RetentionPeriodHours=48)
        self.assertError("ValidationException", K.increase_stream_retention_period, StreamName="ret")


class Tags(unittest.TestCase):
    def test_stream_tags(self):
        K.create_stream(StreamName="tagged", ShardCount=1, Tags={"team": "data", "env": "dev"})
        self.assertEqual(K.list_tags_for_stream(StreamName="tagged")["Tags"],
                         [{"Key": "env", "Value": "dev"}, {"Key": "team", "Value": "data"}])
        K.add_tags_to_stream(StreamName="tagged", Tags={"env": "prod", "a": ""})
        r = K.list_tags_for_stream(StreamName="tagged", Limit=2)
        self.assertEqual(r["Tags"], [{"Key": "a", "Value": ""}, {"Key": "env", "Value": "prod"}])
        self.assertTrue(r["HasMoreTags"])
        r = K.list_tags_for_stream(StreamName="tagged", ExclusiveStartTagKey="env")
        self.assertEqual(r["Tags"], [{"Key": "team", "Value": "data"}])
        self.assertFalse(r["HasMoreTags"])
        K.remove_tags_from_stream(StreamName="tagged", TagKeys=["a", "missing"])
        self.assertEqual(len(K.list_tags_for_stream(StreamName="tagged")["Tags"]), 2)
        with self.assertRaises(ClientError) as cm:
            K.add_tags_to_stream(StreamName="tagged", Tags={f"k{i}": "v" for i in range(49)})
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        self.assertEqual(len(K.list_tags_for_stream(StreamName="tagged")["Tags"]), 2)
        with self.assertRaises(ClientError) as cm:
            K.add_tags_to_stream(StreamName="tagged", Tags={"aws:reserved": "x"})
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        with self.assertRaises(ClientError) as cm:
            K.add_tags_to_stream(StreamName="tagged", Tags={"": "x"})
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.remove_tags_from_stream(StreamName="tagged", TagKeys=[])
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.list_tags_for_stream(StreamName="nope")
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")

    def test_resource_tags(self):
        K.create_stream(StreamName="rtag", ShardCount=1)
        K.tag_resource(ResourceARN=arn("rtag"), Tags={"x": "1", "y": "2"})
        self.assertEqual(K.list_tags_for_resource(ResourceARN=arn("rtag"))["Tags"],
                         [{"Key": "x", "Value": "1"}, {"Key": "y", "Value": "2"}])
        K.untag_resource(ResourceARN=arn("rtag"), TagKeys=["x"])
        self.assertEqual(K.list_tags_for_stream(StreamName="rtag")["Tags"], [{"Key": "y", "Value": "2"}])
        with self.assertRaises(ClientError) as cm:
            K.list_tags_for_resource(ResourceARN=arn("missing"))
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")


def hash_of(key):
    return int.from_bytes(hashlib.md5(key.encode()).digest(), "big")


class Resharding(unittest.TestCase):
    def test_split_shard(self):
        K.create_stream(StreamName="split", ShardCount=2)
        K.put_record(StreamName="split", Data=b"before", PartitionKey="a")
        shard0 = K.describe_stream(StreamName="split")["StreamDescription"]["Shards"][0]
        end = int(shard0["HashKeyRange"]["EndingHashKey"])
        mid = end // 2
        K.split_shard(StreamName="split", ShardToSplit="shardId-000000000000", NewStartingHashKey=str(mid))
        shards = K.list_shards(StreamName="split")["Shards"]
        self.assertEqual(len(shards), 4)
        by_id = {s["ShardId"]: s for s in shards}
        parent = by_id["shardId-000000000000"]
        self.assertIn("EndingSequenceNumber", parent["SequenceNumberRange"])
        left, right = by_id["shardId-000000000002"], by_id["shardId-000000000003"]
        self.assertEqual(left["ParentShardId"], "shardId-000000000000")
        self.assertEqual(right["ParentShardId"], "shardId-000000000000")
        self.assertEqual(left["HashKeyRange"], {"StartingHashKey": "0", "EndingHashKey": str(mid - 1)})
        self.assertEqual(right["HashKeyRange"]["StartingHashKey"], str(mid))
        open_ids = [s["ShardId"] for s in K.list_shards(StreamName="split",
                                                        ShardFilter={"Type": "AT_LATEST"})["Shards"]]
        self.assertEqual(open_ids, ["shardId-000000000001", "shardId-000000000002", "shardId-000000000003"])
        # Errors: closed parent, key outside the range, unknown shard.
        with self.assertRaises(ClientError) as cm:
            K.split_shard(StreamName="split", ShardToSplit="shardId-000000000000", NewStartingHashKey=str(mid))
        self.assertEqual(error_code(cm.exception), "ResourceInUseException")
        with self.assertRaises(ClientError) as cm:
            K.split_shard(StreamName="split", ShardToSplit="shardId-000000000002", NewStartingHashKey="1")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        with self.assertRaises(ClientError) as cm:
            K.split_shard(StreamName="split", ShardToSplit="shardId-000000000099", NewStartingHashKey="5")
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")
        # The closed parent keeps its record and ends with ChildShards.
        it = K.get_shard_iterator(StreamName="split", ShardId="shardId-000000000000",
                                  ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        recs = []
        while it:
            r = K.get_records(ShardIterator=it)
            recs += r["Records"]
            if "NextShardIterator" not in r:
                self.assertEqual(sorted(c["ShardId"] for c in r["ChildShards"]),
                                 ["shardId-000000000002", "shardId-000000000003"])
                self.assertEqual(r["ChildShards"][0]["ParentShards"], ["shardId-000000000000"])
                break
            it = r["NextShardIterator"]
        expect = 1 if hash_of("a") <= end else 0
        self.assertEqual(len(recs), expect)

    def test_merge_shards(self):
        K.create_stream(StreamName="merge", ShardCount=3)
        with self.assertRaises(ClientError) as cm:
            K.merge_shards(StreamName="merge", ShardToMerge="shardId-000000000000",
                           AdjacentShardToMerge="shardId-000000000002")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        # An adjacent pair given upper shard first is refused, as AWS does: ShardToMerge
        # must be the lower-range shard.
        with self.assertRaises(ClientError) as cm:
            K.merge_shards(StreamName="merge", ShardToMerge="shardId-000000000002",
                           AdjacentShardToMerge="shardId-000000000001")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        self.assertIn("are not an adjacent pair of shards eligible for merging",
                      cm.exception.response["Error"]["Message"])
        self.assertEqual(len(K.list_shards(StreamName="merge")["Shards"]), 3)
        K.merge_shards(StreamName="merge", ShardToMerge="shardId-000000000001",
                       AdjacentShardToMerge="shardId-000000000002")
        shards = {s["ShardId"]: s for s in K.list_shards(StreamName="merge")["Shards"]}
        child = shards["shardId-000000000003"]
        self.assertEqual(child["ParentShardId"], "shardId-000000000001")
        self.assertEqual(child["AdjacentParentShardId"], "shardId-000000000002")
        self.assertEqual(child["HashKeyRange"]["EndingHashKey"], str(2**128 - 1))
        self.assertEqual(K.describe_stream_summary(StreamName="merge")["StreamDescriptionSummary"]
                         ["OpenShardCount"], 2)

    def test_update_shard_count(self):
        K.create_stream(StreamName="usc", ShardCount=2)
        r = K.update_shard_count(StreamName="usc", TargetShardCount=4, ScalingType="UNIFORM_SCALING")
        self.assertEqual((r["CurrentShardCount"], r["TargetShardCount"]), (2, 4))
        open_shards = K.list_shards(StreamName="usc", ShardFilter={"Type": "AT_LATEST"})["Shards"]
        self.assertEqual(len(open_shards), 4)
        ranges = sorted((int(s["HashKeyRange"]["StartingHashKey"]), int(s["HashKeyRange"]["EndingHashKey"]))
                        for s in open_shards)
        self.assertEqual(ranges[0][0], 0)
        self.assertEqual(ranges[-1][1], 2**128 - 1)
        for a, b in zip(ranges, ranges[1:]):
            self.assertEqual(a[1] + 1, b[0])
        K.update_shard_count(StreamName="usc", TargetShardCount=3, ScalingType="UNIFORM_SCALING")
        self.assertEqual(K.describe_stream_summary(StreamName="usc")["StreamDescriptionSummary"]
                         ["OpenShardCount"], 3)
        with self.assertRaises(ClientError) as cm:
            K.update_shard_count(StreamName="usc", TargetShardCount=7, ScalingType="UNIFORM_SCALING")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        with self.assertRaises(ClientError) as cm:
            K.update_shard_count(StreamName="usc", TargetShardCount=4, ScalingType="WEIRD")
        self.assertEqual(error_code(cm.exception), "ValidationException")
        # Records keep flowing to the right shards after resharding.
        for i in range(20):
            r = K.put_record(StreamName="usc", Data=b"x", PartitionKey=f"k{i}")
            shard = next(s for s in K.list_shards(StreamName="usc", ShardFilter={"Type": "AT_LATEST"})["Shards"]
                         if int(s["HashKeyRange"]["StartingHashKey"]) <= hash_of(f"k{i}") <= int(s["HashKeyRange"]["EndingHashKey"]))
            self.assertEqual(r["ShardId"], shard["ShardId"])

    def test_on_demand_rejects_resharding_and_mode_switch(self):
        K.create_stream(StreamName="odr")
        with self.assertRaises(ClientError) as cm:
            K.update_shard_count(StreamName="odr", TargetShardCount=8, ScalingType="UNIFORM_SCALING")
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.split_shard(StreamName="odr", ShardToSplit="shardId-000000000000", NewStartingHashKey="12345")
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:  # warm throughput is an ON_DEMAND setting
            K.update_stream_mode(StreamARN=arn("odr"), StreamModeDetails={"StreamMode": "PROVISIONED"},
                                 WarmThroughputMiBps=10)
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        K.update_stream_mode(StreamARN=arn("odr"), StreamModeDetails={"StreamMode": "PROVISIONED"})
        self.assertEqual(K.describe_stream_summary(StreamName="odr")["StreamDescriptionSummary"]
                         ["StreamModeDetails"]["StreamMode"], "PROVISIONED")
        K.update_shard_count(StreamName="odr", TargetShardCount=8, ScalingType="UNIFORM_SCALING")
        K.update_stream_mode(StreamARN=arn("odr"), StreamModeDetails={"StreamMode": "ON_DEMAND"})
        with self.assertRaises(ClientError) as cm:
            K.update_stream_mode(StreamARN=arn("missing"), StreamModeDetails={"StreamMode": "ON_DEMAND"})
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")


class ListShardsApi(unittest.TestCase):
    def test_paging_and_filters(self):
        K.create_stream(StreamName="lsh", ShardCount=5)
        r = K.list_shards(StreamName="lsh", MaxResults=2)
        self.assertEqual(len(r["Shards"]), 2)
        r2 = K.list_shards(NextToken=r["NextToken"])
        self.assertEqual(r2["Shards"][0]["ShardId"], "shardId-000000000002")
        self.assertEqual(len(r2["Shards"]), 2)  # page size carried in the token
        r3 = K.list_shards(NextToken=r2["NextToken"], MaxResults=10)
        self.assertEqual(len(r3["Shards"]), 1)
        self.assertNotIn("NextToken", r3)
        # (botocore's list_shards paginator resends StreamName with NextToken, which AWS
        # itself refuses — boto/botocore#2009 — so it is not used here.)
        r = K.list_shards(StreamName="lsh", ExclusiveStartShardId="shardId-000000000003")
        self.assertEqual([s["ShardId"] for s in r["Shards"]], ["shardId-000000000004"])
        r = K.list_shards(StreamName="lsh", ShardFilter={"Type": "AFTER_SHARD_ID", "ShardId": "shardId-000000000001"})
        self.assertEqual(len(r["Shards"]), 3)
        for t in ("AT_TRIM_HORIZON", "FROM_TRIM_HORIZON", "AT_LATEST"):
            self.assertEqual(len(K.list_shards(StreamName="lsh", ShardFilter={"Type": t})["Shards"]), 5, t)
        import datetime
        now = datetime.datetime.now(datetime.timezone.utc)
        self.assertEqual(len(K.list_shards(StreamName="lsh", ShardFilter={"Type": "AT_TIMESTAMP", "Timestamp": now})["Shards"]), 5)
        self.assertEqual(len(K.list_shards(StreamName="lsh", ShardFilter={"Type": "FROM_TIMESTAMP", "Timestamp": now})["Shards"]), 5)

    def test_errors(self):
        K.create_stream(StreamName="lse", ShardCount=2)
        tok = K.list_shards(StreamName="lse", MaxResults=1)["NextToken"]
        for kwargs in ({}, {"StreamName": "lse", "NextToken": tok}):
            with self.assertRaises(ClientError) as cm:
                K.list_shards(**kwargs)
            self.assertEqual(error_code(cm.exception), "InvalidArgumentException", kwargs)
        with self.assertRaises(ClientError) as cm:
            K.list_shards(StreamName="lse", ShardFilter={"Type": "AFTER_SHARD_ID"})
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")
        with self.assertRaises(ClientError) as cm:
            K.list_shards(StreamName="lse", ShardFilter={"Type": "NOPE"})
        self.assertEqual(error_code(cm.exception), "ValidationException")
        with self.assertRaises(ClientError) as cm:
            K.list_shards(StreamName="nope")
        self.assertEqual(error_code(cm.exception), "ResourceNotFoundException")
        with self.assertRaises(ClientError) as cm:
            K.list_shards(NextToken="AAAA")
        self.assertEqual(error_code(cm.exception), "InvalidArgumentException")


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""The stock AWS CLI (v1, on the image) against a real server: the everyday flows of
create/describe/list/put/get/delete and the CLI's view of errors."""

import base64
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server  # noqa: E402

SERVER = None


def setUpModule():
    global SERVER
    SERVER = Server().start()


def tearDownModule():
    SERVER.stop()
    SERVER.cleanup()


def cli(*args, check=True):
    return SERVER.cli("kinesis", *args, check=check)


def cli_json(*args):
    out = cli(*args)[1]
    return json.loads(out) if out.strip() else None


class Cli(unittest.TestCase):
    def test_full_flow(self):
        cli("create-stream", "--stream-name", "c1", "--shard-count", "2")
        cli("wait", "stream-exists", "--stream-name", "c1")
        d = cli_json("describe-stream", "--stream-name", "c1")["StreamDescription"]
        self.assertEqual(len(d["Shards"]), 2)
        self.assertIn("c1", cli_json("list-streams")["StreamNames"])
        # CLI v1 base64-encodes --data itself.
        r = cli_json("put-record", "--stream-name", "c1", "--partition-key", "pk1", "--data", "hello")
        self.assertEqual(r["ShardId"], "shardId-000000000001")  # MD5("pk1") is in the upper half
        r = cli_json("put-records", "--stream-name", "c1", "--records",
                     "Data=a,PartitionKey=k1", "Data=b,PartitionKey=k2")
        self.assertEqual(r["FailedRecordCount"], 0)
        got = []
        for shard in ("shardId-000000000000", "shardId-000000000001"):
            it = cli("get-shard-iterator", "--stream-name", "c1", "--shard-id", shard,
                     "--shard-iterator-type", "TRIM_HORIZON", "--query", "ShardIterator",
                     "--output", "text")[1].strip()
            recs = cli_json("get-records", "--shard-iterator", it)["Records"]
            got += [base64.b64decode(x["Data"]) for x in recs]
        self.assertEqual(sorted(got), [b"a", b"b", b"hello"])
        shards = cli_json("list-shards", "--stream-name", "c1")["Shards"]
        self.assertEqual(len(shards), 2)
        cli("add-tags-to-stream", "--stream-name", "c1", "--tags", "team=data")
        self.assertEqual(cli_json("list-tags-for-stream", "--stream-name", "c1")["Tags"],
                         [{"Key": "team", "Value": "data"}])
        cli("increase-stream-retention-period", "--stream-name", "c1", "--retention-period-hours", "72")
        s = cli_json("describe-stream-summary", "--stream-name", "c1")["StreamDescriptionSummary"]
        self.assertEqual(s["RetentionPeriodHours"], 72)
        lim = cli_json("describe-limits")
        self.assertGreaterEqual(lim["OpenShardCount"], 2)
        cli("delete-stream", "--stream-name", "c1")
        cli("wait", "stream-not-exists", "--stream-name", "c1")

    def test_on_demand_default_and_errors(self):
        cli("create-stream", "--stream-name", "c2")
        s = cli_json("describe-stream-summary", "--stream-name", "c2")["StreamDescriptionSummary"]
        self.assertEqual(s["StreamModeDetails"]["StreamMode"], "ON_DEMAND")
        self.assertEqual(s["OpenShardCount"], 4)
        rc, _, err = cli("describe-stream", "--stream-name", "missing", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("ResourceNotFoundException", err)
        rc, _, err = cli("create-stream", "--stream-name", "c2", check=False)
        self.assertIn("ResourceInUseException", err)

    def test_split_merge_update(self):
        cli("create-stream", "--stream-name", "c3", "--shard-count", "2")
        cli("split-shard", "--stream-name", "c3", "--shard-to-split", "shardId-000000000000",
            "--new-starting-hash-key", str(2**126))
        cli("merge-shards", "--stream-name", "c3", "--shard-to-merge", "shardId-000000000002",
            "--adjacent-shard-to-merge", "shardId-000000000003")
        r = cli_json("update-shard-count", "--stream-name", "c3", "--target-shard-count", "4",
                     "--scaling-type", "UNIFORM_SCALING")
        self.assertEqual(r["TargetShardCount"], 4)
        open_shards = cli_json("list-shards", "--stream-name", "c3", "--shard-filter", "Type=AT_LATEST")["Shards"]
        self.assertEqual(len(open_shards), 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)

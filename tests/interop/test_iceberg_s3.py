"""Iceberg tables on S3: the server started with --s3-endpoint keeps table buckets in
the S3 store (moto, and radosgw when installed). The REST catalog creates, commits to,
reads and purges tables whose metadata files are real S3 objects (written with
If-None-Match), checked with boto3's own S3 client."""

import json
import os
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Moto, Rgw, Server  # noqa: E402


def call(server, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.endpoint + "/iceberg/v1" + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, json.loads(text) if text else None


SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}]}


class IcebergOnS3:
    """Mixin: `store` (Moto or Rgw) is started with a bucket, then icestream with
    --s3-endpoint pointing at it."""

    store = None

    @classmethod
    def setUpClass(cls):
        cls.s3server = cls.store().start()
        cls.s3 = cls.s3server.s3()
        cls.s3.create_bucket(Bucket="lakehouse")
        os.environ["AWS_ACCESS_KEY_ID"] = cls.store.access_key
        os.environ["AWS_SECRET_ACCESS_KEY"] = cls.store.secret_key
        cls.server = Server(extra_args=["--s3-endpoint", cls.s3server.endpoint]).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()
        cls.s3server.stop()

    def test_tables_live_in_s3(self):
        bucket = "lakehouse"
        status, cfg = call(self.server, "GET", "/config?warehouse=arn:aws:s3tables:us-east-1:000000000000:bucket/" + bucket)
        self.assertEqual(status, 200, cfg)
        self.assertEqual(cfg["overrides"]["prefix"], bucket)
        status, body = call(self.server, "GET", "/config?warehouse=no-such-bucket")
        self.assertEqual((status, body["error"]["type"]), (404, "NoSuchWarehouseException"))
        p = "/" + bucket
        self.assertEqual(call(self.server, "POST", p + "/namespaces", {"namespace": ["db"]})[0], 200)
        status, t = call(self.server, "POST", p + "/namespaces/db/tables", {"name": "events", "schema": SCHEMA})
        self.assertEqual(status, 200, t)
        loc = t["metadata-location"]
        self.assertTrue(loc.startswith(f"s3://{bucket}/db/events-"), loc)
        key = loc[len(f"s3://{bucket}/"):]
        obj = json.loads(self.s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        self.assertEqual(obj["table-uuid"], t["metadata"]["table-uuid"])
        self.assertEqual(obj["location"], t["metadata"]["location"])
        status, c = call(self.server, "POST", p + "/namespaces/db/tables/events",
                         {"requirements": [{"type": "assert-table-uuid", "uuid": obj["table-uuid"]}],
                          "updates": [{"action": "set-properties", "updates": {"on": "s3"}}]})
        self.assertEqual(status, 200, c)
        key2 = c["metadata-location"][len(f"s3://{bucket}/"):]
        self.assertIn("/metadata/00001-", key2)
        obj2 = json.loads(self.s3.get_object(Bucket=bucket, Key=key2)["Body"].read())
        self.assertEqual(obj2["properties"]["on"], "s3")
        self.assertEqual(obj2["metadata-log"][0]["metadata-file"], loc)
        keys = [o["Key"] for o in self.s3.list_objects_v2(Bucket=bucket)["Contents"]]
        self.assertIn(key, keys)
        self.assertIn(key2, keys)
        self.assertEqual(call(self.server, "DELETE", p + "/namespaces/db/tables/events?purgeRequested=true")[0], 204)
        left = self.s3.list_objects_v2(Bucket=bucket).get("Contents", [])
        self.assertEqual([o["Key"] for o in left if o["Key"].startswith("db/events-")], [])


class MotoIceberg(IcebergOnS3, unittest.TestCase):
    store = Moto


class RgwIceberg(IcebergOnS3, unittest.TestCase):
    store = Rgw


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""End to end streaming-table delivery (stream -> Iceberg table through a channel with an
S3TablesDestinationConfiguration), black-box, against the embedded warehouse and against
a real S3 server (radosgw):

- a JSON Schema in the built-in Glue registry with every column type of spec §2.5; the
  table the channel creates has that schema mapped per §2.5, format v2, partition spec
  hour(event_time), the channel's ARN and write settings as properties;
- valid and invalid records over 4 shards and >= 3 partition hours: the independent
  reader (tests/lib/read_table.mjs: REST catalog, icebird, avsc, DuckDB) returns exactly
  the valid rows with equal values and nulls; every file's partition value matches its
  rows; the Parquet codec is the CompressionType (NONE/ZSTD/SNAPPY across cases);
- the DLQ holds exactly the invalid records, one JSON line each with stream ARN, shard id,
  sequence number, arrival and attempt times, channel ARN and the error code of the case;
- GSR_JSON records framed by a test-side encoder, with and without zlib, and both
  mismatch cases (plain JSON -> INVALID_SCHEMA, a version of another schema ->
  INVALID_SCHEMA; framed bytes into a JSON channel -> DESERIALIZATION_ERROR);
- create-time errors with AWS's types; a table that exists and is not the channel's ->
  FAILED; deleting the channel leaves the table; snapshot checkpoints, IcestreamStatus
  and the DeliveryToIceberg_* metrics agree with what was written;
- iceberg-js lists and loads the table while it is written;
- split and merge during delivery: every record once, children after their parents;
- StartingPosition TRIM_HORIZON backfills, LATEST does not."""

import base64
import json
import os
import random
import subprocess
import sys
import threading
import time
import unittest
import urllib.request
import uuid
from decimal import Decimal

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import gsr  # noqa: E402
from delivery_check import LocalBucket, S3Bucket, produce  # noqa: E402
import harness  # noqa: E402
from harness import ACCOUNT, REGION, Rgw, Server, kinesis_call, wait_channel  # noqa: E402
from table_check import (assert_children_after_parents, assert_rows, create_channel, describe,  # noqa: E402
                         dlq_lines, expected_row, iso_micros, last_sequence_by_shard, metric, metrics,
                         npm_dir, read_table, register_schema, rest_metadata, schema_arn,
                         table_channel_request, ts_micros, wait_dlq, wait_records)

HERE = os.path.dirname(os.path.abspath(__file__))
BASE_TS = ts_micros("2025-06-01T08:00:00Z")
HOUR = 3_600_000_000

ALL_TYPES = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["id", "name"],  # event_time is the partition column: required without being listed
    "properties": {
        "id": {"type": "integer"},
        "event_time": {"type": "string", "format": "date-time"},
        "name": {"type": "string"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "time"},
        "uid": {"type": "string", "format": "uuid"},
        "blob": {"type": "string", "contentEncoding": "base64"},
        "small": {"type": "integer", "minimum": -1000, "maximum": 1000},
        "big": {"type": "integer"},
        "ratio": {"type": "number"},
        "price": {"type": "number", "multipleOf": 0.01},
        "flag": {"type": "boolean"},
        "kind": {"enum": ["a", "b", "c"]},
        "address": {"type": "object", "required": ["city"],
                    "properties": {"city": {"type": "string"}, "zip": {"type": "integer", "minimum": 0, "maximum": 99999},
                                   "geo": {"type": "object", "properties": {"lat": {"type": "number"},
                                                                            "lon": {"type": "number"}}}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "scores": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"},
                                                                               "v": {"type": "number"}}}},
        "attrs": {"type": "object", "additionalProperties": {"type": "string"}},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "note": {"type": "string"},
    },
}
# §2.5, as the table must carry it (name -> (type, required)).
ALL_TYPES_ICEBERG = {
    "id": ("long", True), "event_time": ("timestamptz", True), "name": ("string", True), "day": ("date", False),
    "at": ("time", False), "uid": ("uuid", False), "blob": ("binary", False), "small": ("int", False),
    "big": ("long", False), "ratio": ("double", False), "price": ("decimal(38, 2)", False),
    "flag": ("boolean", False), "kind": ("string", False), "address": ("struct", False), "tags": ("list", False),
    "scores": ("list", False), "attrs": ("map", False), "counts": ("map", False), "note": ("string", False),
}


def type_name(t):
    if isinstance(t, dict):
        return t["type"]
    return t.replace(" ", "").replace(",", ", ")


def event_time(rng, hours=4):
    """An RFC 3339 text within `hours` hours of BASE_TS, in several spellings (offsets,
    0-6 fraction digits), and its micros."""
    micros = BASE_TS + rng.randrange(hours * HOUR)
    style = rng.randrange(4)
    if style == 0:
        return iso_micros(micros), micros
    if style == 1:
        micros -= micros % 1_000_000
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(micros // 1_000_000)), micros
    if style == 2:
        micros -= micros % 1000
        secs, us = divmod(micros + 2 * HOUR, 1_000_000)  # the same instant at +02:00
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{us // 1000:03d}+02:00", micros
    secs, us = divmod(micros - 5 * HOUR - 30 * 60_000_000, 1_000_000)  # -05:30
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{us:06d}-05:30", micros


def valid_record(i, rng):
    """A valid all-types record with id i; optional members left out or null at random."""
    ts, _ = event_time(rng)
    r = {"id": i, "event_time": ts, "name": f"n{i}-{rng.choice(['é', 'ü', '✓', 'x'])}"}
    opt = {
        "day": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "at": f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.randrange(10**6):06d}",
        "uid": str(uuid.UUID(int=rng.getrandbits(128))).upper() if rng.random() < 0.3 else str(uuid.UUID(int=rng.getrandbits(128))),
        "blob": base64.b64encode(bytes(rng.randrange(256) for _ in range(rng.randrange(12)))).decode(),
        "small": rng.randint(-1000, 1000),
        "big": rng.randint(-2**63, 2**63 - 1),
        "ratio": rng.choice([0.1, -2.5e-7, 1e300, 3.141592653589793, 0.0, 42.0]) * rng.randint(1, 9),
        "price": Decimal(rng.randint(-10**7, 10**7)).scaleb(-2),
        "flag": rng.random() < 0.5,
        "kind": rng.choice("abc"),
        "address": {"city": rng.choice(["Köln", "Paris", ""]), "zip": rng.randint(0, 99999),
                    "geo": {"lat": rng.uniform(-90, 90), "lon": rng.uniform(-180, 180)} if rng.random() < 0.7 else None},
        "tags": [rng.choice(["x", "y", "ζ"]) for _ in range(rng.randrange(4))],
        "scores": [{"k": f"k{j}", "v": rng.uniform(0, 1)} for j in range(rng.randrange(3))],
        "attrs": {f"a{j}": f"v{rng.randrange(100)}" for j in range(rng.randrange(3))},
        "counts": {f"c{j}": rng.randint(-5, 10**12) for j in range(rng.randrange(3))},
        "note": "n" * rng.randrange(5),
    }
    for k, v in opt.items():
        p = rng.random()
        if p < 0.15:
            continue            # missing -> null
        r[k] = None if p < 0.25 else v
    if rng.random() < 0.2:
        r["extra_member"] = {"dropped": [1, 2, 3]}  # extra fields are dropped
    if rng.random() < 0.1 and r.get("address"):
        r["address"]["unknown"] = 1
    return r


def _dumps(r):
    """JSON text of a record; Decimal prices as JSON numbers with their exact digits."""
    def enc(o):
        if isinstance(o, Decimal):
            return "@@" + str(o) + "@@"
        raise TypeError(o)
    text = json.dumps(r, default=enc, ensure_ascii=False)
    return text.replace('"@@', "").replace('@@"', "")


def invalid_records(base_id, vid_other=None):
    """(bytes, expected DLQ error code) for each kind of invalid record of ALL_TYPES."""
    ts = iso_micros(BASE_TS + HOUR)
    deep = 1
    for _ in range(20):
        deep = [deep]
    cases = [
        (b'{"id": 1, "name": "x", ', "DESERIALIZATION_ERROR"),                         # not JSON
        (b"\xff\xfe not utf-8 at all", "DESERIALIZATION_ERROR"),
        (json.dumps({"id": base_id, "event_time": ts}).encode(), "MISSING_REQUIRED_FIELD"),       # no name
        (json.dumps({"id": base_id + 1, "name": "no time"}).encode(), "MISSING_REQUIRED_FIELD"),  # no partition value
        (json.dumps({"id": base_id + 2, "name": "x", "event_time": ts, "address": {"zip": 5}}).encode(),
         "MISSING_REQUIRED_FIELD"),                                                     # nested required
        (json.dumps({"id": "seven", "name": "x", "event_time": ts}).encode(), "TYPE_MISMATCH"),
        (json.dumps({"id": base_id + 3, "name": 5, "event_time": ts}).encode(), "TYPE_MISMATCH"),
        (json.dumps({"id": base_id + 4, "name": "x", "event_time": ts, "tags": "not-a-list"}).encode(), "TYPE_MISMATCH"),
        (json.dumps({"id": base_id + 5, "name": "x", "event_time": ts, "small": 1001}).encode(), "VALUE_OUT_OF_RANGE"),
        (json.dumps({"id": base_id + 6, "name": "x", "event_time": ts, "deep": deep}).encode(), "NESTING_TOO_DEEP"),
    ]
    if vid_other:
        cases.append((gsr.encode(vid_other, {"id": base_id + 7, "name": "x", "event_time": ts}), "DESERIALIZATION_ERROR"))
    return cases


class TableDelivery:
    """Mixin: scenarios against self.server, self.bucket(name) and self.s3_creds()."""

    warehouse_bucket = "table-bucket"
    dlq_bucket_name = "dlq"

    def read(self, namespace, table, **kw):
        return read_table(catalog=self.server.endpoint + "/iceberg", warehouse=self.warehouse_arn(),
                          namespace=namespace, table=table, s3=self.s3_creds(), **kw)

    def warehouse_arn(self):
        return f"arn:aws:s3tables:{REGION}:{ACCOUNT}:bucket/{self.warehouse_bucket}"

    def new_stream(self, name):
        """An ON_DEMAND stream (no ShardCount): 4 shards."""
        k = self.server.client()
        k.create_stream(StreamName=name)
        return k

    def all_types_scenario(self, tag, compression, codec, n_valid=1200, rounds=3, dlq_prefix=None, logging=False):
        """Valid + invalid JSON records in rounds; returns what the checks need."""
        k = self.new_stream(f"s-{tag}")
        g = self.server.client("glue")
        arn, vid = register_schema(g, f"reg-{tag}", "events", ALL_TYPES)
        _, vid_other = register_schema(g, f"reg-{tag}", "other", {"type": "object", "properties": {"x": {"type": "string"}}})
        ns, table = f"ns_{tag}", "events"
        d = create_channel(self, self.server, table_channel_request(
            f"ch-{tag}", f"s-{tag}", arn, self.warehouse_bucket, ns, table, self.dlq_bucket_name,
            compression=compression, freshness=1, dlq_prefix=dlq_prefix,
            **({"LoggingConfiguration": {"CloudWatchLogs": {"Enabled": True}}} if logging else {})))
        self.assertEqual(d["S3TablesDestinationConfiguration"]["DataFreshnessInSeconds"], 1)
        rng = random.Random(tag)  # deterministic data per case
        valid, bad = {}, {}
        acked_all = []
        next_id = 1
        for rnd in range(rounds):
            batch = []
            for _ in range(n_valid // rounds):
                rec = valid_record(next_id, rng)
                text = _dumps(rec).encode()
                valid[next_id] = text
                batch.append((f"pk-{rng.randrange(10**6)}", text, None))
                next_id += 1
            for data, code in invalid_records(10**9 + rnd * 100, vid_other):
                batch.append((f"pk-{rng.randrange(10**6)}", data, code))
            rng.shuffle(batch)
            acked = produce(k, f"s-{tag}", [(pk, data) for pk, data, _ in batch])
            codes = {data: code for _, data, code in batch if code}
            for data, shard, seq in acked:
                acked_all.append((data, shard, seq))
                if data in codes:
                    bad[(shard, seq)] = codes[data]
            time.sleep(1.2)  # several commits
        self.assertEqual(len({s for _, s, _ in acked_all}), 4, "records over all 4 shards")
        return dict(k=k, arn=d["ChannelARN"], cid=d["ChannelId"], channel=f"ch-{tag}", stream=f"s-{tag}", ns=ns,
                    table=table, valid=valid, bad=bad, acked=acked_all, vid=vid, logging=logging)

    def check_all_types(self, sc, codec, dlq_prefix=None):
        total_valid = len(sc["valid"])
        wait_records(self.server, self.warehouse_arn(), sc["ns"], sc["table"], total_valid)
        prefix = dlq_prefix or f"kinesis-channel/errors/{sc['channel']}/{sc['cid']}/"
        lines = wait_dlq(self.bucket(self.dlq_bucket_name), prefix, len(sc["bad"]))
        t = self.read(sc["ns"], sc["table"])
        # The table: v2, schema per §2.5, hour(event_time), properties.
        self.assertEqual(t["format_version"], 2)
        fields = {f["name"]: f for f in t["schema"]["fields"]}
        self.assertEqual(set(fields), set(ALL_TYPES_ICEBERG))
        for name, (typ, required) in ALL_TYPES_ICEBERG.items():
            self.assertEqual(type_name(fields[name]["type"]), typ, name)
            self.assertEqual(fields[name]["required"], required, name)
        addr = {f["name"]: f for f in fields["address"]["type"]["fields"]}
        self.assertEqual((addr["city"]["type"], addr["city"]["required"]), ("string", True))
        self.assertEqual((addr["zip"]["type"], addr["zip"]["required"]), ("int", False))
        self.assertEqual([f["name"] for f in addr["geo"]["type"]["fields"]], ["lat", "lon"])
        self.assertEqual(fields["tags"]["type"]["element"], "string")
        self.assertEqual(fields["attrs"]["type"]["key"], "string")
        self.assertEqual(fields["attrs"]["type"]["value"], "string")
        self.assertEqual(fields["counts"]["type"]["value"], "long")
        self.assertEqual(type_name(fields["scores"]["type"]["element"]), "struct")
        spec = [s for s in t["partition_specs"] if s["spec-id"] == t["default_spec_id"]][0]
        self.assertEqual([(f["source-id"], f["transform"]) for f in spec["fields"]], [(fields["event_time"]["id"], "hour")])
        self.assertEqual(t["properties"].get("icestream.channel-arn"), sc["arn"])
        self.assertEqual(t["properties"].get("write.parquet.compression-codec"), codec.lower() if codec != "UNCOMPRESSED" else "uncompressed")
        self.assertIn("write.target-file-size-bytes", t["properties"])
        # Rows: exactly the valid records.
        want = [expected_row(text, t["schema"]) for text in sc["valid"].values()]
        assert_rows(self, t["rows"], want, "id")
        self.assertEqual(t["icebird_rows"], len(want))
        self.assertEqual(t["delete_files"], 0)
        # Files: codec, partitions over >= 3 hours.
        hours = {f["partition"][spec["fields"][0]["name"]] for f in t["files"]}
        self.assertGreaterEqual(len(hours), 3, hours)
        for f in t["files"]:
            self.assertEqual(f["codecs"], [codec], f["file_path"])
            self.assertEqual(f["file_format"].upper(), "PARQUET")
        # DLQ: exactly the invalid records, with their codes.
        self.assertEqual(len(lines), len(sc["bad"]), "DLQ lines")
        got = {}
        for key, e in lines:
            self.assertTrue(key.startswith(prefix), key)
            self.assertRegex(key[len(prefix):], r"^\d{4}/\d\d/\d\d/\d\d/")
            got[(e["shardId"], e["sequenceNumber"])] = e
        self.assertEqual(set(got), set(sc["bad"]))
        for (shard, seq), e in got.items():
            self.assertEqual(e["errorCode"], sc["bad"][(shard, seq)], f"{shard} {seq}: {e}")
            self.assertEqual(e["streamARN"], f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{sc['stream']}")
            self.assertEqual(e["channelARN"], sc["arn"])
            self.assertTrue(e.get("errorMessage"), e)
            self.assertNotIn("data", e)
            self.assertNotIn("rawData", e)
            arrived = e["approximateArrivalTimestamp"]
            attempted = e["attemptTimestamp"]
            self.assertLessEqual(ts_micros(arrived) if isinstance(arrived, str) else arrived * 1e6,
                                 ts_micros(attempted) if isinstance(attempted, str) else attempted * 1e6)
        # Checkpoints: the current snapshot's summary has every shard's last sequence number.
        cur = [s for s in t["snapshots"] if s["snapshot_id"] == t["current_snapshot_id"]][0]
        last = last_sequence_by_shard(sc["acked"])
        for shard, seq in last.items():
            self.assertEqual(cur["summary"].get(f"icestream.checkpoint.{shard}"), seq, f"checkpoint of {shard}")
        # Status and metrics.
        self.check_status_and_metrics(sc, t)
        if sc["logging"]:
            self.check_delivery_log(sc, t)
        return t

    def check_delivery_log(self, sc, t):
        """The delivery log (docs/channels.md): TableCreated once, one CommitSucceeded per
        commit of the channel with its snapshot id, records of commits and DLQ writes."""
        path = os.path.join(self.server.data_dir, "delivery-logs", sc["cid"], "DestinationDelivery.jsonl")
        deadline = time.time() + 10
        while True:
            with open(path) as f:
                events = [json.loads(line) for line in f if line.strip()]
            commits = [e for e in events if e.get("eventType") == "CommitSucceeded"]
            ours = {s["snapshot_id"] for s in t["snapshots"]
                    if any(k.startswith("icestream.checkpoint.") for k in s["summary"])}
            if {str(e["snapshotId"]) for e in commits} >= ours or time.time() > deadline:
                break
            time.sleep(0.3)
        self.assertEqual([e["eventType"] for e in events].count("TableCreated"), 1, events[:5])
        self.assertEqual({str(e["snapshotId"]) for e in commits}, ours)
        self.assertEqual(sum(e["records"] for e in commits), len(sc["valid"]))
        self.assertEqual(sum(e["records"] for e in events if e.get("eventType") == "DLQWrite"), len(sc["bad"]))

    def check_status_and_metrics(self, sc, t):
        last = last_sequence_by_shard(sc["acked"])
        deadline = time.time() + 20
        while True:
            d = describe(self.server, sc["arn"])
            st = d.get("IcestreamStatus")
            self.assertIsNotNone(st, d)
            shards = {s["ShardId"]: s for s in st["Shards"]}
            ok = all(shards.get(sh, {}).get("LastCommittedSequenceNumber") == seq for sh, seq in last.items())
            if ok or time.time() > deadline:
                break
            time.sleep(0.3)
        for sh, seq in last.items():
            self.assertEqual(shards[sh]["LastCommittedSequenceNumber"], seq, sh)
            self.assertEqual(shards[sh]["LagRecords"], 0, sh)
            self.assertLess(shards[sh]["LagSeconds"], 5, sh)
        self.assertEqual(st["LiveDataFiles"], len(t["files"]))
        self.assertEqual(st["DLQRecordCount"], len(sc["bad"]))
        # The same status through `icestream channels describe`.
        p = subprocess.run([harness.BINARY, "channels", "describe", "--endpoint", self.server.endpoint,
                            "--channel-arn", sc["arn"]], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test"))
        self.assertEqual(p.returncode, 0, p.stderr)
        cli = json.loads(p.stdout)
        cli = cli.get("ChannelDescription", cli)["IcestreamStatus"]
        self.assertEqual({s["ShardId"]: s["LastCommittedSequenceNumber"] for s in cli["Shards"] if s["ShardId"] in last},
                         last)
        self.assertEqual(cli["DLQRecordCount"], len(sc["bad"]))
        text = metrics(self.server)
        n_valid, n_bad = len(sc["valid"]), len(sc["bad"])
        channel = sc["channel"]
        for name, want in [("TotalRowCount", n_valid + n_bad), ("SuccessfulRowCount", n_valid),
                           ("FailedRowCount", n_bad), ("DLQDeliverySuccess", n_bad)]:
            got = metric(text, name, channel)
            self.assertIsNotNone(got, f"DeliveryToIceberg_{name} missing")
            self.assertEqual(got[0], want, name)
            self.assertEqual(got[1].get("channel_id"), sc["cid"])
            self.assertEqual(got[1].get("stream_name"), sc["stream"])
        commits = metric(text, "CommitSuccess", channel)[0]
        ours = [s for s in t["snapshots"] if any(k.startswith("icestream.checkpoint.") for k in s["summary"])]
        self.assertEqual(commits, len(ours), "CommitSuccess = snapshots the channel committed")
        self.assertGreater(commits, 1)
        payload = sum(len(d) for d, _, _ in sc["acked"])
        self.assertEqual(metric(text, "BytesIn", channel)[0], payload)
        self.assertGreater(metric(text, "BytesProcessed", channel)[0], 0)
        self.assertGreaterEqual(metric(text, "BytesOut", channel)[0], sum(f["file_size_in_bytes"] for f in t["files"]))
        self.assertEqual(metric(text, "DataFreshness", channel)[0], 0)


class LocalTables(unittest.TestCase, TableDelivery):
    @classmethod
    def setUpClass(cls):
        npm_dir()
        # A missing table bucket or a dropped table FAILS the channel after a short grace.
        cls.server = Server(config_text="[delivery]\ndestination_grace_ms = 3000\n").start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    def s3_creds(self):
        return None

    def bucket(self, name):
        return LocalBucket(os.path.join(self.server.data_dir, "buckets", name))

    def test_all_types_zstd_with_dlq_status_and_metrics(self):
        sc = self.all_types_scenario("zstd", "ZSTD", "ZSTD")
        t = self.check_all_types(sc, "ZSTD")
        root = os.path.join(self.server.data_dir, "table-buckets", self.warehouse_bucket)
        self.assertTrue(t["metadata_location"].startswith("file://" + root + "/"), t["metadata_location"])
        for f in t["files"]:
            self.assertTrue(f["file_path"].startswith("file://" + root + "/"), f["file_path"])

    def test_all_types_snappy_custom_dlq_prefix(self):
        sc = self.all_types_scenario("snappy", "SNAPPY", "SNAPPY", n_valid=300, rounds=2, dlq_prefix="bad/records/",
                                     logging=True)
        self.check_all_types(sc, "SNAPPY", dlq_prefix="bad/records/")

    def test_gsr_json(self):
        k = self.new_stream("s-gsr")
        g = self.server.client("glue")
        arn, vid = register_schema(g, "reg-gsr", "events", ALL_TYPES)
        _, vid_other = register_schema(g, "reg-gsr", "other", {"type": "object", "properties": {"x": {"type": "string"}}})
        d = create_channel(self, self.server, table_channel_request(
            "ch-gsr", "s-gsr", arn, self.warehouse_bucket, "ns_gsr", "events", self.dlq_bucket_name,
            compression="NONE", fmt="GSR_JSON"))
        rng = random.Random(5)
        batch, valid, codes = [], {}, {}
        for i in range(1, 401):
            rec = valid_record(i, rng)
            text = _dumps(rec).encode()
            valid[i] = text
            batch.append(gsr.encode(vid, text, compress=i % 2 == 0))
        ts = iso_micros(BASE_TS)
        plain = json.dumps({"id": 7777, "name": "plain", "event_time": ts}).encode()
        other = gsr.encode(vid_other, {"id": 7778, "name": "other", "event_time": ts})
        other_z = gsr.encode(vid_other, {"id": 7779, "name": "other", "event_time": ts}, compress=True)
        unknown = gsr.encode(str(uuid.uuid4()), {"id": 7780, "name": "unknown version", "event_time": ts})
        # A second version of the channel's own schema with another definition, one the
        # table cannot take (id retyped to string), is not the table's schema.
        v2 = g.register_schema_version(SchemaId={"SchemaArn": arn}, SchemaDefinition=json.dumps(
            dict(ALL_TYPES, properties=dict(ALL_TYPES["properties"], id={"type": "string"}))))["SchemaVersionId"]
        newer = gsr.encode(v2, {"id": "7782", "name": "v2", "event_time": ts})
        missing = gsr.encode(vid, {"id": 7781, "event_time": ts}, compress=True)  # converter rejection inside a frame
        for data, code in [(plain, "INVALID_SCHEMA"), (other, "INVALID_SCHEMA"), (other_z, "INVALID_SCHEMA"),
                           (newer, "INVALID_SCHEMA"), (missing, "MISSING_REQUIRED_FIELD"),
                           (b"\x03\x05" + uuid.UUID(vid).bytes + b"not zlib", "DESERIALIZATION_ERROR"),
                           (b"\x03\x09" + uuid.UUID(vid).bytes + b"{}", "DESERIALIZATION_ERROR")]:
            batch.append(data)
            codes[data] = code
        batch.append(unknown)  # an unknown schema version id: to the DLQ (code not fixed by the spec)
        rng.shuffle(batch)
        acked = produce(k, "s-gsr", [(f"pk{rng.randrange(10**6)}", b) for b in batch])
        wait_records(self.server, self.warehouse_arn(), "ns_gsr", "events", len(valid))
        lines = wait_dlq(self.bucket(self.dlq_bucket_name), f"kinesis-channel/errors/ch-gsr/{d['ChannelId']}/", len(codes) + 1)
        t = self.read("ns_gsr", "events")
        assert_rows(self, t["rows"], [expected_row(x, t["schema"]) for x in valid.values()], "id")
        for f in t["files"]:
            self.assertEqual(f["codecs"], ["UNCOMPRESSED"])
        self.assertEqual(t["properties"].get("write.parquet.compression-codec"), "uncompressed")
        by_seq = {e["sequenceNumber"]: e for _, e in lines}
        self.assertEqual(len(by_seq), len(codes) + 1)
        for data, shard, seq in acked:
            if data in codes:
                self.assertEqual(by_seq[seq]["errorCode"], codes[data], data[:40])
                self.assertEqual(by_seq[seq]["shardId"], shard)
            elif data == unknown:
                self.assertIn(seq, by_seq)
            else:
                self.assertNotIn(seq, by_seq)

    def test_warehouse_prefixes_that_look_like_routes(self):
        # Table bucket names such as "tables" or "transactions" are valid; their tables
        # must be reachable through the REST catalog like any other.
        k = self.new_stream("s-route")
        arn, _ = register_schema(self.server.client("glue"), "reg-route", "events", ALL_TYPES)
        for i, bucket in enumerate(["tables", "transactions"]):
            d = create_channel(self, self.server, table_channel_request(
                f"ch-route-{i}", "s-route", arn, bucket, "ns_route", "events", self.dlq_bucket_name))
            produce(k, "s-route", [("a", _dumps(valid_record(1, random.Random(1))).encode())])
            wh = f"arn:aws:s3tables:{REGION}:{ACCOUNT}:bucket/{bucket}"
            deadline = time.time() + 30
            while describe(self.server, d["ChannelARN"]).get("IcestreamStatus", {}).get("CommitCount", 0) < 1:
                self.assertLess(time.time(), deadline, "the channel never committed")
                time.sleep(0.2)
            with self.subTest(bucket=bucket):
                t = read_table(catalog=self.server.endpoint + "/iceberg", warehouse=wh, namespace="ns_route",
                               table="events", s3=self.s3_creds(), skip_icebird=True)
                self.assertTrue(t["exists"], t)
                self.assertEqual(len(t["rows"]), 1)
            kinesis_call(self.server, "DeleteChannel", {"ChannelARN": d["ChannelARN"]})
            wait_channel(self.server, d["ChannelARN"], status="GONE")

    def test_create_answers_creating(self):
        arn, _ = register_schema(self.server.client("glue"), "reg-creating", "events", ALL_TYPES)
        # CreateChannel is asynchronous: its answer always says CREATING (spec §1.3).
        statuses = []
        for i in range(12):
            self.server.client().create_stream(StreamName=f"s-creating-{i}")
            st, body = kinesis_call(self.server, "CreateChannel", table_channel_request(
                f"ch-creating-{i}", f"s-creating-{i}", arn, self.warehouse_bucket, "ns_creating", f"t{i}",
                self.dlq_bucket_name))
            self.assertEqual(st, 200, body)
            statuses.append(body["ChannelDescription"]["ChannelStatus"])
            kinesis_call(self.server, "DeleteChannel", {"ChannelARN": body["ChannelDescription"]["ChannelARN"]})
        self.assertEqual(statuses, ["CREATING"] * 12)

    def test_create_time_errors(self):
        k = self.new_stream("s-err")
        k.create_stream(StreamName="s-err-prov", ShardCount=1)
        g = self.server.client("glue")
        arn, _ = register_schema(g, "reg-err", "events", ALL_TYPES)
        deep = {"type": "string"}
        for _ in range(17):
            deep = {"type": "object", "properties": {"x": deep}}
        deep_arn, _ = register_schema(g, "reg-err", "deep", {"type": "object", "properties": {
            "event_time": {"type": "string", "format": "date-time"}, "d": deep}})
        ok16 = {"type": "string"}
        for _ in range(14):
            ok16 = {"type": "object", "properties": {"x": ok16}}
        ok16_arn, _ = register_schema(g, "reg-err", "deep16", {"type": "object", "properties": {
            "event_time": {"type": "string", "format": "date-time"}, "d": ok16}})
        avro_arn, _ = register_schema(g, "reg-err", "avro", json.dumps({"type": "record", "name": "r", "fields": [
            {"name": "event_time", "type": "string"}]}), data_format="AVRO")

        def req(**kw):
            r = table_channel_request("ch-err", "s-err", kw.pop("schema", arn), self.warehouse_bucket, "ns_err", "t",
                                      self.dlq_bucket_name, **kw)
            return r

        def tconf(r):
            return r["S3TablesDestinationConfiguration"]["S3TablesConfigurationList"][0]

        def with_(r, fn):
            fn(r)
            return r

        cases = [
            ("ResourceNotFoundException", req(schema=schema_arn("reg-err", "no-such-schema"))),
            ("ResourceNotFoundException", req(schema=schema_arn("no-such-registry", "events"))),
            ("InvalidArgumentException", req(schema=avro_arn)),
            ("InvalidArgumentException", req(schema=deep_arn)),
            ("InvalidArgumentException", req(partition="name")),          # a plain string
            ("InvalidArgumentException", req(partition="day")),           # format date, not date-time
            ("InvalidArgumentException", req(partition="id")),            # an integer
            ("InvalidArgumentException", req(partition="no_such_column")),
            ("InvalidArgumentException", req(partition=None)),            # no PartitionSpec
            ("InvalidArgumentException", with_(req(), lambda r: tconf(r)["PartitionSpec"]["PartitionFields"].append(
                {"SourceName": "event_time", "Transform": "TIME_HOUR"}))),
            # The DLQ block is a required member of the model: a shape error.
            ("ValidationException", with_(req(), lambda r: r["S3TablesDestinationConfiguration"].pop(
                "DeadLetterQueueS3Configuration"))),
            ("InvalidArgumentException", with_(req(), lambda r: r["StreamConfigurationList"][0]["RecordConfiguration"].pop(
                "GSRSchemaARN"))),
            ("InvalidArgumentException", req(fmt="STRING")),
            ("InvalidArgumentException", req(fmt="BYTE_ARRAY")),
            ("ValidationException", with_(req(), lambda r: tconf(r).__setitem__("Namespace", "Bad-Name"))),
            ("ValidationException", with_(req(), lambda r: tconf(r).__setitem__("TableName", "t" * 256))),
            ("ValidationException", with_(req(), lambda r: tconf(r).__setitem__("CompressionType", "GZIP"))),
            ("ValidationException", with_(req(), lambda r: tconf(r).__setitem__("TableBucketARN", "arn:aws:s3:::plain"))),
            ("ValidationException", req(freshness=0)),
            ("ValidationException", req(freshness=901)),
            ("ValidationException", with_(req(), lambda r: r["StreamConfigurationList"][0].__setitem__(
                "StreamARN", f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/s-err-prov"))),
        ]
        for i, (want, body) in enumerate(cases):
            with self.subTest(case=i, want=want):
                st, resp = kinesis_call(self.server, "CreateChannel", body)
                self.assertEqual(st, 400, resp)
                self.assertEqual(resp.get("__type"), want, resp)
        # Depth 16 is allowed; the accepted channel is described with its table block and
        # listed as S3_TABLES; the default freshness is 300.
        r = req(schema=ok16_arn, freshness=None)
        d = create_channel(self, self.server, r)
        tdest = d["S3TablesDestinationConfiguration"]
        self.assertEqual(tdest["DataFreshnessInSeconds"], 300)
        self.assertEqual(tdest["S3TablesConfigurationList"][0]["Namespace"], "ns_err")
        self.assertEqual(tdest["S3TablesConfigurationList"][0]["PartitionSpec"]["PartitionFields"],
                         [{"SourceName": "event_time", "Transform": "TIME_HOUR"}])
        self.assertEqual(tdest["DeadLetterQueueS3Configuration"]["BucketARN"], f"arn:aws:s3:::{self.dlq_bucket_name}")
        self.assertEqual(d["StreamConfigurationList"][0]["RecordConfiguration"]["GSRSchemaARN"], ok16_arn)
        st, lst = kinesis_call(self.server, "ListChannels", {})
        mine = [c for c in lst["ChannelSummaries"] if c["ChannelARN"] == d["ChannelARN"]]
        self.assertEqual(mine[0]["ChannelDestinationType"], "S3_TABLES")
        # UpdateChannel takes the table block's freshness, not the S3 one.
        st, body = kinesis_call(self.server, "UpdateChannel", {"ChannelARN": d["ChannelARN"],
                                                               "S3TablesDestinationConfiguration": {"DataFreshnessInSeconds": 2}})
        self.assertEqual(st, 200, body)
        d = wait_channel(self.server, d["ChannelARN"])
        self.assertEqual(d["S3TablesDestinationConfiguration"]["DataFreshnessInSeconds"], 2)
        st, body = kinesis_call(self.server, "UpdateChannel", {"ChannelARN": d["ChannelARN"],
                                                               "S3DestinationConfiguration": {"DataFreshnessInSeconds": 2}})
        self.assertEqual(body.get("__type"), "InvalidArgumentException", body)
        # A second table channel on the same stream is over the quota (one per type).
        st, body = kinesis_call(self.server, "CreateChannel", dict(req(), ChannelName="ch-err-2"))
        self.assertEqual(body.get("__type"), "LimitExceededException", body)
        kinesis_call(self.server, "DeleteChannel", {"ChannelARN": d["ChannelARN"]})
        wait_channel(self.server, d["ChannelARN"], status="GONE")

    def test_table_not_ours_fails_the_channel_and_delete_leaves_the_table(self):
        k = self.new_stream("s-own")
        g = self.server.client("glue")
        arn, _ = register_schema(g, "reg-own", "events", ALL_TYPES)
        # 1. A table created by someone else (through the REST catalog) is never written.
        base = self.server.endpoint + "/iceberg"
        with urllib.request.urlopen(f"{base}/v1/config?warehouse={self.warehouse_arn()}") as r:
            prefix = json.loads(r.read())["overrides"]["prefix"]

        def post(path, body):
            req = urllib.request.Request(f"{base}/v1/{prefix}/{path}", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(req) as r:
                return json.loads(r.read())
        post("namespaces", {"namespace": ["ns_own"]})
        post("namespaces/ns_own/tables", {"name": "theirs", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"}]}})
        before = rest_metadata(self.server, self.warehouse_arn(), "ns_own", "theirs")
        st, body = kinesis_call(self.server, "CreateChannel", table_channel_request(
            "ch-theirs", "s-own", arn, self.warehouse_bucket, "ns_own", "theirs", self.dlq_bucket_name))
        self.assertEqual(st, 200, body)
        d = body["ChannelDescription"]
        # FAILED when the channel checks its table (at activation or first delivery).
        produce(k, "s-own", [("a", _dumps(valid_record(i, random.Random(i))).encode()) for i in range(1, 50)])
        failed = wait_channel(self.server, d["ChannelARN"], status="FAILED", timeout=30)
        self.assertTrue(failed.get("ChannelStatusReason"), failed)
        self.assertIn("theirs", failed["ChannelStatusReason"])
        after = rest_metadata(self.server, self.warehouse_arn(), "ns_own", "theirs")
        self.assertEqual(after["metadata-location"], before["metadata-location"], "a foreign table was written")
        kinesis_call(self.server, "DeleteChannel", {"ChannelARN": d["ChannelARN"]})
        wait_channel(self.server, d["ChannelARN"], status="GONE")
        # 2. The channel's own table outlives the channel.
        d = create_channel(self, self.server, table_channel_request(
            "ch-own", "s-own", arn, self.warehouse_bucket, "ns_own", "mine", self.dlq_bucket_name))
        recs = [_dumps(valid_record(i, random.Random(i))).encode() for i in range(100, 300)]
        produce(k, "s-own", [(f"p{i}", r) for i, r in enumerate(recs)])
        wait_records(self.server, self.warehouse_arn(), "ns_own", "mine", len(recs))
        st, _ = kinesis_call(self.server, "DeleteChannel", {"ChannelARN": d["ChannelARN"]})
        self.assertEqual(st, 200)
        wait_channel(self.server, d["ChannelARN"], status="GONE")
        t = self.read("ns_own", "mine")
        assert_rows(self, t["rows"], [expected_row(r, t["schema"]) for r in recs], "id")
        self.assertEqual(t["properties"]["icestream.channel-arn"], d["ChannelARN"])
        # 3. A new channel onto that table (now another channel's) fails too.
        st, body = kinesis_call(self.server, "CreateChannel", table_channel_request(
            "ch-own-2", "s-own", arn, self.warehouse_bucket, "ns_own", "mine", self.dlq_bucket_name))
        self.assertEqual(st, 200, body)
        d2 = body["ChannelDescription"]
        produce(k, "s-own", [("a", _dumps(valid_record(999, random.Random(1))).encode())])
        wait_channel(self.server, d2["ChannelARN"], status="FAILED", timeout=30)
        self.assertEqual(len(self.read("ns_own", "mine", skip_icebird=True)["rows"]), len(recs))
        kinesis_call(self.server, "DeleteChannel", {"ChannelARN": d2["ChannelARN"]})

    def test_external_schema_change_fails_the_channel(self):
        k = self.new_stream("s-evolve")
        arn, _ = register_schema(self.server.client("glue"), "reg-evolve", "events", ALL_TYPES)
        d = create_channel(self, self.server, table_channel_request(
            "ch-evolve", "s-evolve", arn, self.warehouse_bucket, "ns_evolve", "events", self.dlq_bucket_name))
        rng = random.Random(21)
        first = [_dumps(valid_record(i, rng)).encode() for i in range(1, 101)]
        produce(k, "s-evolve", [(f"p{i}", r) for i, r in enumerate(first)])
        wait_records(self.server, self.warehouse_arn(), "ns_evolve", "events", len(first))
        # Another engine adds a column through the REST catalog.
        t = rest_metadata(self.server, self.warehouse_arn(), "ns_evolve", "events")
        md = t["metadata"]
        schema = [s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"]][0]
        new = dict(schema, **{"schema-id": schema["schema-id"] + 1,
                              "fields": schema["fields"] + [{"id": md["last-column-id"] + 1, "name": "added_by_them",
                                                             "required": False, "type": "string"}]})
        base = self.server.endpoint + "/iceberg"
        with urllib.request.urlopen(f"{base}/v1/config?warehouse={self.warehouse_arn()}") as r:
            prefix = json.loads(r.read())["overrides"]["prefix"]
        body = {"requirements": [{"type": "assert-table-uuid", "uuid": md["table-uuid"]},
                                 {"type": "assert-current-schema-id", "current-schema-id": md["current-schema-id"]}],
                "updates": [{"action": "add-schema", "schema": new}, {"action": "set-current-schema", "schema-id": -1}]}
        req = urllib.request.Request(f"{base}/v1/{prefix}/namespaces/ns_evolve/tables/events", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req) as r:
            self.assertEqual(r.status, 200)
        after = rest_metadata(self.server, self.warehouse_arn(), "ns_evolve", "events")["metadata-location"]
        produce(k, "s-evolve", [(f"q{i}", _dumps(valid_record(1000 + i, rng)).encode()) for i in range(50)])
        failed = wait_channel(self.server, d["ChannelARN"], status="FAILED", timeout=30)
        self.assertIn("schema", failed.get("ChannelStatusReason", "").lower(), failed)
        time.sleep(2)
        self.assertEqual(rest_metadata(self.server, self.warehouse_arn(), "ns_evolve", "events")["metadata-location"],
                         after, "the channel wrote after the schema changed")
        kinesis_call(self.server, "DeleteChannel", {"ChannelARN": d["ChannelARN"]})

    def test_table_dropped_or_repartitioned_outside_fails_the_channel(self):
        k = self.new_stream("s-outside")
        arn, _ = register_schema(self.server.client("glue"), "reg-outside", "events", ALL_TYPES)
        base = self.server.endpoint + "/iceberg"
        with urllib.request.urlopen(f"{base}/v1/config?warehouse={self.warehouse_arn()}") as r:
            prefix = json.loads(r.read())["overrides"]["prefix"]
        rng = random.Random(31)
        for name, change in [("dropped", "drop"), ("respec", "spec")]:
            with self.subTest(change=change):
                d = create_channel(self, self.server, table_channel_request(
                    f"ch-{name}", "s-outside", arn, self.warehouse_bucket, "ns_outside", name, self.dlq_bucket_name))
                produce(k, "s-outside", [(f"p{i}", _dumps(valid_record(i, rng)).encode()) for i in range(1, 51)])
                wait_records(self.server, self.warehouse_arn(), "ns_outside", name, 50)
                url = f"{base}/v1/{prefix}/namespaces/ns_outside/tables/{name}"
                if change == "drop":
                    req = urllib.request.Request(url, method="DELETE")
                else:
                    md = rest_metadata(self.server, self.warehouse_arn(), "ns_outside", name)["metadata"]
                    ts_id = [f["id"] for f in md["schemas"][-1]["fields"] if f["name"] == "event_time"][0]
                    body = {"requirements": [{"type": "assert-default-spec-id", "default-spec-id": md["default-spec-id"]}],
                            "updates": [{"action": "add-spec", "spec": {"spec-id": 1, "fields": [
                                {"source-id": ts_id, "field-id": md["last-partition-id"] + 1, "name": "event_time_day",
                                 "transform": "day"}]}}, {"action": "set-default-spec", "spec-id": -1}]}
                    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req) as r:
                    self.assertIn(r.status, (200, 204))
                produce(k, "s-outside", [(f"q{i}", _dumps(valid_record(100 + i, rng)).encode()) for i in range(50)])
                failed = wait_channel(self.server, d["ChannelARN"], status="FAILED", timeout=30)
                self.assertTrue(failed.get("ChannelStatusReason"), failed)
                if change == "drop":
                    self.assertIsNone(rest_metadata(self.server, self.warehouse_arn(), "ns_outside", name),
                                      "the channel re-created a table that was dropped under it")
                kinesis_call(self.server, "DeleteChannel", {"ChannelARN": d["ChannelARN"]})
                wait_channel(self.server, d["ChannelARN"], status="GONE")

    def test_iceberg_js_reads_while_written(self):
        k = self.new_stream("s-js")
        g = self.server.client("glue")
        arn, _ = register_schema(g, "reg-js", "events", ALL_TYPES)
        create_channel(self, self.server, table_channel_request(
            "ch-js", "s-js", arn, self.warehouse_bucket, "ns_js", "events", self.dlq_bucket_name, compression="SNAPPY"))
        stop = threading.Event()
        sent = []

        def producer():
            rng = random.Random(3)
            i = 1
            while not stop.is_set():
                recs = []
                for _ in range(50):
                    recs.append(_dumps(valid_record(i, rng)).encode())
                    i += 1
                produce(k, "s-js", [(f"p{j}", r) for j, r in enumerate(recs)])
                sent.extend(recs)
                time.sleep(0.2)
        th = threading.Thread(target=producer, daemon=True)
        th.start()
        try:
            p = subprocess.run(["node", os.path.join(HERE, "table_rest_js.mjs"), npm_dir(), self.server.endpoint + "/iceberg",
                                self.warehouse_arn(), "ns_js", "events", "12", "4"],
                               capture_output=True, text=True, timeout=120)
        finally:
            stop.set()
            th.join(30)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        seen = json.loads(p.stdout)
        self.assertGreater(seen["metadata_locations"], 3)
        wait_records(self.server, self.warehouse_arn(), "ns_js", "events", len(sent))
        t = self.read("ns_js", "events")
        assert_rows(self, t["rows"], [expected_row(r, t["schema"]) for r in sent], "id")

    def test_starting_position(self):
        k = self.new_stream("s-start")
        g = self.server.client("glue")
        arn, _ = register_schema(g, "reg-start", "events", ALL_TYPES)
        rng = random.Random(9)
        before = [_dumps(valid_record(i, rng)).encode() for i in range(1, 101)]
        produce(k, "s-start", [(f"p{i}", r) for i, r in enumerate(before)])
        d1 = create_channel(self, self.server, table_channel_request(
            "ch-latest", "s-start", arn, self.warehouse_bucket, "ns_start", "latest", self.dlq_bucket_name))
        after = [_dumps(valid_record(i, rng)).encode() for i in range(101, 201)]
        produce(k, "s-start", [(f"p{i}", r) for i, r in enumerate(after)])
        wait_records(self.server, self.warehouse_arn(), "ns_start", "latest", len(after))
        time.sleep(2)
        t = self.read("ns_start", "latest", skip_icebird=True)
        assert_rows(self, t["rows"], [expected_row(r, t["schema"]) for r in after], "id")
        kinesis_call(self.server, "DeleteChannel", {"ChannelARN": d1["ChannelARN"]})
        wait_channel(self.server, d1["ChannelARN"], status="GONE")
        create_channel(self, self.server, table_channel_request(
            "ch-trim", "s-start", arn, self.warehouse_bucket, "ns_start", "trim", self.dlq_bucket_name,
            start="TRIM_HORIZON"))
        wait_records(self.server, self.warehouse_arn(), "ns_start", "trim", len(before) + len(after))
        t = self.read("ns_start", "trim", skip_icebird=True)
        assert_rows(self, t["rows"], [expected_row(r, t["schema"]) for r in before + after], "id")

    def test_resharding_during_delivery(self):
        k = self.new_stream("s-reshard")
        g = self.server.client("glue")
        arn, _ = register_schema(g, "reg-reshard", "events", ALL_TYPES)
        d = create_channel(self, self.server, table_channel_request(
            "ch-reshard", "s-reshard", arn, self.warehouse_bucket, "ns_reshard", "events", self.dlq_bucket_name,
            compression="ZSTD"))
        rng = random.Random(11)
        sent, acked = [], []
        next_id = [1]

        def burst(n=300):
            recs = []
            for _ in range(n):
                recs.append(_dumps(valid_record(next_id[0], rng)).encode())
                next_id[0] += 1
            acked.extend(produce(k, "s-reshard", [(f"pk{rng.randrange(10**6)}", r) for r in recs]))
            sent.extend(recs)

        def open_shards():
            return [s for s in k.list_shards(StreamName="s-reshard")["Shards"]
                    if "EndingSequenceNumber" not in s["SequenceNumberRange"]]
        # Split and merge are for PROVISIONED streams (as on AWS): the stream is switched
        # to PROVISIONED around each reshard and back to ON_DEMAND, while the channel runs.
        sarn = f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/s-reshard"

        def mode(m):
            k.update_stream_mode(StreamARN=sarn, StreamModeDetails={"StreamMode": m})
        burst()
        mode("PROVISIONED")
        # Split the first open shard at the middle of its range.
        s0 = open_shards()[0]
        lo, hi = int(s0["HashKeyRange"]["StartingHashKey"]), int(s0["HashKeyRange"]["EndingHashKey"])
        k.split_shard(StreamName="s-reshard", ShardToSplit=s0["ShardId"], NewStartingHashKey=str((lo + hi) // 2))
        mode("ON_DEMAND")
        burst()
        time.sleep(0.5)
        burst()
        mode("PROVISIONED")
        # Merge two adjacent open shards.
        shards = sorted(open_shards(), key=lambda s: int(s["HashKeyRange"]["StartingHashKey"]))
        for a, b in zip(shards, shards[1:]):
            if int(a["HashKeyRange"]["EndingHashKey"]) + 1 == int(b["HashKeyRange"]["StartingHashKey"]):
                k.merge_shards(StreamName="s-reshard", ShardToMerge=a["ShardId"], AdjacentShardToMerge=b["ShardId"])
                break
        mode("ON_DEMAND")
        burst()
        time.sleep(0.5)
        burst()
        wait_records(self.server, self.warehouse_arn(), "ns_reshard", "events", len(sent))
        t = self.read("ns_reshard", "events")
        assert_rows(self, t["rows"], [expected_row(r, t["schema"]) for r in sent], "id")
        last = assert_children_after_parents(self, k.list_shards(StreamName="s-reshard")["Shards"], acked,
                                             t["snapshots"])
        cur = [s for s in t["snapshots"] if s["snapshot_id"] == t["current_snapshot_id"]][0]
        for shard, seq in last.items():
            self.assertEqual(cur["summary"].get(f"icestream.checkpoint.{shard}"), seq, shard)
        self.assertIsNotNone(d)


class RgwTables(unittest.TestCase, TableDelivery):
    """The same scenario with the table bucket and the DLQ bucket in radosgw."""

    @classmethod
    def setUpClass(cls):
        npm_dir()
        cls.rgw = Rgw().start()
        try:
            s3 = cls.rgw.s3()
            s3.create_bucket(Bucket=cls.warehouse_bucket)
            s3.create_bucket(Bucket=cls.dlq_bucket_name)
            os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = Rgw.access_key, Rgw.secret_key
            cls.server = Server(extra_args=["--s3-endpoint", cls.rgw.endpoint],
                                config_text="[delivery]\ndestination_grace_ms = 3000\n").start()
        except Exception:
            cls.rgw.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()
        cls.rgw.stop()

    def s3_creds(self):
        return (self.rgw.endpoint, Rgw.access_key, Rgw.secret_key)

    def bucket(self, name):
        return S3Bucket(self.rgw.s3(), name)

    def test_all_types_none_with_dlq(self):
        sc = self.all_types_scenario("rgw", "NONE", "UNCOMPRESSED", n_valid=600, rounds=3)
        t = self.check_all_types(sc, "UNCOMPRESSED")
        self.assertTrue(t["metadata_location"].startswith(f"s3://{self.warehouse_bucket}/"), t["metadata_location"])
        keys = {o["Key"] for o in self.rgw.s3().list_objects_v2(Bucket=self.warehouse_bucket)["Contents"]}
        for f in t["files"]:
            self.assertTrue(f["file_path"].startswith(f"s3://{self.warehouse_bucket}/"), f["file_path"])
            self.assertIn(f["file_path"][len(f"s3://{self.warehouse_bucket}/"):], keys)

    def test_missing_table_bucket_fails_the_channel(self):
        k = self.new_stream("s-nobucket")
        arn, _ = register_schema(self.server.client("glue"), "reg-nb", "events", ALL_TYPES)
        st, body = kinesis_call(self.server, "CreateChannel", table_channel_request(
            "ch-nobucket", "s-nobucket", arn, "no-such-table-bucket", "ns", "t", self.dlq_bucket_name))
        self.assertEqual(st, 200, body)
        produce(k, "s-nobucket", [("a", _dumps(valid_record(1, random.Random(1))).encode())])
        d = wait_channel(self.server, body["ChannelDescription"]["ChannelARN"], status="FAILED", timeout=60)
        self.assertIn("no-such-table-bucket", d["ChannelStatusReason"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

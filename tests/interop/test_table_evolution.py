"""Schema evolution, KPL de-aggregation and the compaction figures of streaming-table
channels (issue 10), black-box, against the embedded warehouse. Every table is read by
the independent reader (tests/lib/read_table.mjs: REST catalog, avsc manifests, icebird
and DuckDB, which must agree).

- JSON channel: a compatible registry version registered mid-stream (new optional
  columns at the top and inside a struct, an integer widened from int to long) -> the
  table's schema evolves with new field ids (existing ids kept), the table property
  icestream.schema-version-id names the version; rows written before read with nulls in
  the new columns (from files that lack them), rows after with values; value bounds of
  the followed version apply. A newer incompatible version (a new required property) is
  not followed: the schema stays, IcestreamStatus.IgnoredSchemaVersion names it, the
  delivery log has SchemaVersionIgnored, and records go on being checked against the
  followed version. A compatible version after it is followed again. Compaction then
  merges files of both schemas into files of the current one. (float -> double and a
  wider decimal precision cannot arise from a JSON Schema: number maps to double, or to
  decimal(38, s) whatever the multipleOf, so int -> long is the widening tested.)
- GSR_JSON channel: records name their version; a compatible newer one evolves the
  table, older compatible ones are written as they are, incompatible ones (new required
  property, retyped property, required made optional, required removed) go to the DLQ
  as INVALID_SCHEMA.
- KPL aggregates (test-side aggregator, tests/lib/kpl.py) into S3 channels (JSON/GZIP
  and BYTE_ARRAY) and a table channel: each user record exactly once, in order per
  shard; a user record that fails validation is a DLQ line with the aggregate's
  sequence number and its subSequenceNumber; an aggregate that does not decode (bad
  MD5, broken protobuf, key index outside its table) is one DLQ line,
  DESERIALIZATION_ERROR, and none of its user records is delivered.
- Status and metrics: IcestreamStatus (LiveDataFiles, MeanDataFileBytes, Compaction
  {FilesMerged, FilesWritten, BytesRewritten, Commits, WriteAmplification},
  SnapshotsExpired, OrphanFilesRemoved, SchemaVersion, CommitCount) and the
  icestream_table_* metrics agree with each other and with the snapshots of the table
  (append snapshots carry icestream.channel-arn, replace snapshots
  icestream.compacted-by; merged files are named <channel-id>-m-<attempt>-<n>.parquet)."""

import json
import os
import random
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import gsr  # noqa: E402
import kpl  # noqa: E402
from delivery_check import LocalBucket, decompress, produce, split_records, verify_exactly_once  # noqa: E402
from harness import Server, channel_request, kinesis_call, wait_channel  # noqa: E402
from table_check import (assert_rows, create_channel, describe, dlq_lines, expected_row, iso_micros,  # noqa: E402
                         metrics, npm_dir, read_table, register_schema, table_bucket_arn,
                         table_channel_request, ts_micros, wait_dlq, wait_records)

WAREHOUSE = "evolve-tables"
DLQ = "evolve-dlq"
TARGET = 32 * 1024
COLD_MS = 3000
CONFIG = f"""[delivery]
table_target_file_bytes = {TARGET}
table_compaction_cold_after_ms = {COLD_MS}
"""
HOUR = 3_600_000_000
BASE = ts_micros("2025-06-01T08:00:00Z")

V1 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["id", "name"],
    "properties": {
        "id": {"type": "integer"},
        "event_time": {"type": "string", "format": "date-time"},
        "name": {"type": "string"},
        "small": {"type": "integer", "minimum": -1000, "maximum": 1000},
        # No required member inside the struct: icebird 0.3.1's hyparquet (1.19) misreads
        # a required string inside an optional struct in a page without nulls (it drops
        # the all-max definition levels and then compares string lengths with list
        # lengths: "parquet struct parsing error"); hyparquet 1.33 and DuckDB read such
        # files. Required nested members are covered by test_table_delivery.py.
        "address": {"type": "object",
                    "properties": {"city": {"type": "string"}, "zip": {"type": "integer", "minimum": 0, "maximum": 99999}}},
    },
}


def version(base, add=None, drop=(), required=None, address_add=None, **retype):
    """A copy of schema `base` with properties added/dropped/retyped, `required` replaced,
    and properties added inside `address`."""
    s = json.loads(json.dumps(base))
    for k in drop:
        s["properties"].pop(k)
    s["properties"].update(add or {})
    for k, v in retype.items():
        s["properties"][k] = v
    if required is not None:
        s["required"] = required
    if address_add:
        s["properties"]["address"]["properties"].update(address_add)
    return s


# Compatible with V1: optional columns added at the top and inside the struct, `small`
# widened to bounds beyond 32 bits (int -> long).
V2 = version(V1, add={"color": {"type": "string"}}, address_add={"floor": {"type": "integer", "minimum": -5, "maximum": 200}},
             small={"type": "integer", "minimum": -2**40, "maximum": 2**40})
V2_PLUS_SIZE = version(V2, add={"size": {"type": "integer", "minimum": 0, "maximum": 100}})
INCOMPATIBLE = {
    "new required property": version(V2, add={"must": {"type": "string"}}, required=["id", "name", "must"]),
    "retyped property": version(V2, name={"type": "integer"}),
    "required made optional": version(V2, required=["id"]),
    "required removed": version(V2, drop=["name"], required=["id"]),
}


def ts(micros):
    return iso_micros(micros)


def rec(i, hour=0, **extra):
    r = {"id": i, "event_time": ts(BASE + hour * HOUR + (i * 7919) % HOUR), "name": f"name-{i}", "small": (i % 2001) - 1000,
         "address": {"city": f"c{i % 7}", "zip": i % 99999}}
    r.update(extra)
    return json.dumps(r).encode()


def field(schema, name):
    return next(f for f in schema["fields"] if f["name"] == name)


def field_ids(schema):
    out = {}

    def walk(t, path):
        if isinstance(t, dict) and t.get("type") == "struct":
            for f in t["fields"]:
                out[path + f["name"]] = f["id"]
                walk(f["type"], path + f["name"] + ".")
    walk(schema, "")
    return out


def wait_until(fn, timeout, what):
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def table_metrics(text, channel):
    """{name: value} of the icestream_table_* metrics of `channel`, with their labels checked."""
    out = {}
    for m in re.finditer(r'^icestream_table_(\w+)\{([^}]*)\} ([0-9.eE+-]+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if labels.get("channel_name") == channel:
            out[m.group(1)] = (float(m.group(3)), labels)
    return out


class Evolution(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        npm_dir()
        cls.server = Server(config_text=CONFIG).start()
        os.makedirs(os.path.join(cls.server.data_dir, "buckets", DLQ), exist_ok=True)
        os.makedirs(os.path.join(cls.server.data_dir, "buckets", "kpl-bucket"), exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    # ---------------------------------------------------------------- helpers
    def read(self, ns, table, **kw):
        return read_table(catalog=self.server.endpoint + "/iceberg", warehouse=table_bucket_arn(WAREHOUSE),
                          namespace=ns, table=table, **kw)

    def bucket(self, name):
        return LocalBucket(os.path.join(self.server.data_dir, "buckets", name))

    def table_channel(self, tag, schema, fmt="JSON", logging=False, freshness=1):
        k = self.server.client()
        k.create_stream(StreamName=f"s-{tag}")
        g = self.server.client("glue")
        arn, vid = register_schema(g, f"reg-{tag}", "events", schema)
        extra = {"LoggingConfiguration": {"CloudWatchLogs": {"Enabled": True}}} if logging else {}
        d = create_channel(self, self.server, table_channel_request(
            f"ch-{tag}", f"s-{tag}", arn, WAREHOUSE, f"ns_{tag}", "events", DLQ, fmt=fmt, freshness=freshness, **extra))
        return k, g, arn, vid, d

    def register(self, g, arn, definition):
        r = g.register_schema_version(SchemaId={"SchemaArn": arn}, SchemaDefinition=json.dumps(definition))
        return r["SchemaVersionId"], r["VersionNumber"]

    def deliver(self, k, tag, records, total):
        acked = produce(k, f"s-{tag}", [(f"pk{i}", r) for i, r in enumerate(records)])
        wait_records(self.server, table_bucket_arn(WAREHOUSE), f"ns_{tag}", "events", total)
        return acked

    def delivery_log(self, cid):
        path = os.path.join(self.server.data_dir, "delivery-logs", cid, "DestinationDelivery.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def check_evolved(self, before, after, added):
        """`after` keeps every field id of `before` and adds `added` (dotted names) with
        new ids above before's highest."""
        b, a = field_ids(before), field_ids(after)
        for name, fid in b.items():
            self.assertEqual(a.get(name), fid, f"field {name} changed its id")
        top = max(b.values())
        for name in added:
            self.assertIn(name, a, f"column {name} not added")
            self.assertGreater(a[name], top, f"column {name} did not get a new id")
        self.assertEqual(set(a) - set(b), set(added))

    # ---------------------------------------------------------------- JSON
    def test_json_channel_follows_compatible_versions_and_ignores_incompatible(self):
        tag = "json"
        k, g, arn, vid1, d = self.table_channel(tag, V1, logging=True)
        cid = d["ChannelId"]
        dlq_prefix = f"kinesis-channel/errors/ch-{tag}/{cid}/"
        # A: version 1 (one record out of v1's bounds for `small`).
        a = [rec(i) for i in range(1, 61)]
        acked = self.deliver(k, tag, a + [rec(9001, small=5000)], len(a))
        t1 = self.read(f"ns_{tag}", "events")
        self.assertEqual(field(t1["schema"], "small")["type"], "int")
        self.assertEqual(t1["properties"].get("icestream.schema-version-id"), vid1)
        # B: version 2 registered mid-stream; records with the new columns and wide values.
        vid2, n2 = self.register(g, arn, V2)
        b = [rec(i, color=f"col{i}", small=2**33 + i, address={"city": "x", "zip": 1, "floor": i % 50})
             for i in range(61, 121)]
        b.append(rec(121))  # a v2 record without the new members
        acked += self.deliver(k, tag, b + [rec(9002, small=2**41)], len(a) + len(b))
        t2 = self.read(f"ns_{tag}", "events")
        self.check_evolved(t1["schema"], t2["schema"], ["color", "address.floor"])
        self.assertEqual(field(t2["schema"], "small")["type"], "long", "int -> long not widened")
        self.assertEqual(field(t2["schema"], "small")["id"], field(t1["schema"], "small")["id"])
        self.assertFalse(field(t2["schema"], "color")["required"])
        self.assertEqual(t2["properties"].get("icestream.schema-version-id"), vid2)
        self.assertEqual(describe(self.server, d["ChannelARN"])["IcestreamStatus"].get("SchemaVersion"), n2)
        assert_rows(self, t2["rows"], [expected_row(r, t2["schema"]) for r in a + b], "id")
        color_id = field(t2["schema"], "color")["id"]
        old = [f for f in t2["files"] if color_id not in f["field_ids"]]
        new = [f for f in t2["files"] if color_id in f["field_ids"]]
        self.assertTrue(old, "no live file of version 1 left to read the new column as null from")
        self.assertTrue(new, "no file written with the new column")
        by_id = {r["id"]: r for r in t2["rows"]}
        self.assertIsNone(by_id[1]["color"])
        self.assertIsNone(by_id[1]["address"]["floor"])
        self.assertEqual(by_id[61]["color"], "col61")
        self.assertEqual(by_id[61]["address"]["floor"], 11)
        self.assertEqual(by_id[62]["small"], 2**33 + 62)
        # C: an incompatible version 3 (a new required property) is not followed.
        schema_id_before = t2["schema"]["schema-id"]
        vid3, _ = self.register(g, arn, INCOMPATIBLE["new required property"])
        c = [rec(i, color="c") for i in range(122, 152)]
        c += [rec(152, must="present")]          # an extra member under v2: dropped
        c_bad = [rec(9003, color=5)]             # v2 says string
        acked += self.deliver(k, tag, c + c_bad, len(a) + len(b) + len(c))
        t3 = self.read(f"ns_{tag}", "events")
        self.assertEqual(t3["schema"]["schema-id"], schema_id_before, "the table followed an incompatible version")
        self.assertNotIn("must", field_ids(t3["schema"]))
        self.assertEqual(t3["properties"].get("icestream.schema-version-id"), vid2)
        st = describe(self.server, d["ChannelARN"])["IcestreamStatus"]
        self.assertEqual(st.get("IgnoredSchemaVersion"), vid3, st)
        self.assertEqual(st.get("SchemaVersion"), n2, st)
        ignored = [e for e in self.delivery_log(cid) if e.get("eventType") == "SchemaVersionIgnored"]
        self.assertEqual(len(ignored), 1, ignored)
        assert_rows(self, t3["rows"], [expected_row(r, t3["schema"]) for r in a + b + c], "id")
        # D: a compatible version after the ignored one is followed again; records in the
        # next hour, after hour 0 has been quiet for longer than the cold delay, so the
        # files of both schemas in hour 0 are merged into files of the current schema.
        vid4, n4 = self.register(g, arn, V2_PLUS_SIZE)
        time.sleep(COLD_MS / 1000 + 1.5)
        dd = [rec(i, hour=1, color="d", size=i % 100) for i in range(200, 230)]
        acked += self.deliver(k, tag, dd, len(a) + len(b) + len(c) + len(dd))
        t4 = self.read(f"ns_{tag}", "events")
        self.check_evolved(t2["schema"], t4["schema"], ["size"])
        self.assertEqual(t4["properties"].get("icestream.schema-version-id"), vid4)
        self.assertEqual(describe(self.server, d["ChannelARN"])["IcestreamStatus"].get("SchemaVersion"), n4)
        want = a + b + c + dd
        assert_rows(self, t4["rows"], [expected_row(r, t4["schema"]) for r in want], "id")
        # Hour 0 was finished off: its rows of all versions are in merged files. Upkeep runs on
        # its own schedule, so a merge may predate the last version: a merged file holds
        # columns of the table's schema (never others), and the rows below prove that no
        # value was lost.
        part = [p["name"] for p in t4["partition_specs"][0]["fields"]][0]
        hour0 = BASE // HOUR

        def hour0_merged():
            t = self.read(f"ns_{tag}", "events")
            files = [f for f in t["files"] if f["partition"][part] == hour0]
            return t if files and all("-m-" in f["file_path"] for f in files) else None
        t5 = wait_until(hour0_merged, 30, "hour 0 to be merged")
        ids5 = set(field_ids(t5["schema"]).values())
        for f in t5["files"]:
            if f["partition"][part] == hour0:
                self.assertLessEqual(set(f["field_ids"]), ids5, f"{f['file_path']} is not in the current schema")
        assert_rows(self, t5["rows"], [expected_row(r, t5["schema"]) for r in want], "id")
        by_id = {r["id"]: r for r in t5["rows"]}
        self.assertIsNone(by_id[1]["size"])
        self.assertIsNone(by_id[1]["color"])
        self.assertEqual(by_id[205]["size"], 5)
        # The DLQ: v1's bound, v2's bound, v2's type.
        lines = wait_dlq(self.bucket(DLQ), dlq_prefix, 3)
        want_codes = {b"9001": "VALUE_OUT_OF_RANGE", b"9002": "VALUE_OUT_OF_RANGE", b"9003": "TYPE_MISMATCH"}
        seq_code = {seq: want_codes[key] for data, _, seq in acked for key in want_codes if b'"id": ' + key + b"," in data}
        self.assertEqual({e["sequenceNumber"]: e["errorCode"] for _, e in lines}, seq_code)

    # ---------------------------------------------------------------- GSR_JSON
    def test_gsr_json_records_name_their_version(self):
        tag = "gsr"
        k, g, arn, vid1, d = self.table_channel(tag, V1, fmt="GSR_JSON")
        a = [rec(i) for i in range(1, 41)]
        self.deliver(k, tag, [gsr.encode(vid1, r, compress=i % 2 == 0) for i, r in enumerate(a)], len(a))
        t1 = self.read(f"ns_{tag}", "events")
        # Version 2 (compatible): its records evolve the table; v1 records in the same
        # batch are written as they are.
        vid2, _ = self.register(g, arn, V2)
        b2 = [rec(i, color=f"g{i}", small=-(2**35) - i, address={"city": "y", "floor": 3}) for i in range(41, 81)]
        b1 = [rec(i) for i in range(81, 91)]
        batch = [gsr.encode(vid2, r, compress=i % 3 == 0) for i, r in enumerate(b2)] + [gsr.encode(vid1, r) for r in b1]
        random.Random(3).shuffle(batch)
        self.deliver(k, tag, batch, len(a) + len(b2) + len(b1))
        t2 = self.read(f"ns_{tag}", "events")
        self.check_evolved(t1["schema"], t2["schema"], ["color", "address.floor"])
        self.assertEqual(field(t2["schema"], "small")["type"], "long")
        self.assertEqual(t2["properties"].get("icestream.schema-version-id"), vid2)
        assert_rows(self, t2["rows"], [expected_row(r, t2["schema"]) for r in a + b2 + b1], "id")
        by_id = {r["id"]: r for r in t2["rows"]}
        self.assertIsNone(by_id[1]["color"])
        self.assertIsNone(by_id[85]["color"])
        self.assertEqual(by_id[50]["color"], "g50")
        self.assertEqual(by_id[50]["small"], -(2**35) - 50)
        # Incompatible versions -> INVALID_SCHEMA; a later compatible one evolves again.
        bad = {}
        n = 1000
        for why, definition in INCOMPATIBLE.items():
            vid, _ = self.register(g, arn, definition)
            for j in range(3):
                n += 1
                r = rec(n, must="m") if "must" in definition["properties"] else rec(n)
                if why == "retyped property":
                    r = json.dumps(dict(json.loads(r), name=n)).encode()
                bad[gsr.encode(vid, r, compress=j == 1)] = why
        vid7, _ = self.register(g, arn, V2_PLUS_SIZE)
        c7 = [rec(i, size=i % 90, color="seven") for i in range(91, 121)]
        c2 = [rec(i, color="two") for i in range(121, 131)]
        batch = ([gsr.encode(vid7, r) for r in c7] + [gsr.encode(vid2, r, compress=True) for r in c2] + list(bad))
        random.Random(4).shuffle(batch)
        acked = produce(k, f"s-{tag}", [(f"q{i}", r) for i, r in enumerate(batch)])
        total = len(a) + len(b2) + len(b1) + len(c7) + len(c2)
        wait_records(self.server, table_bucket_arn(WAREHOUSE), f"ns_{tag}", "events", total)
        lines = wait_dlq(self.bucket(DLQ), f"kinesis-channel/errors/ch-{tag}/{d['ChannelId']}/", len(bad))
        t3 = self.read(f"ns_{tag}", "events")
        self.check_evolved(t2["schema"], t3["schema"], ["size"])
        self.assertEqual(t3["properties"].get("icestream.schema-version-id"), vid7)
        assert_rows(self, t3["rows"], [expected_row(r, t3["schema"]) for r in a + b2 + b1 + c7 + c2], "id")
        got = {e["sequenceNumber"]: e for _, e in lines}
        self.assertEqual(len(got), len(lines), "a record in the DLQ twice")
        for data, shard, seq in acked:
            if data in bad:
                self.assertIn(seq, got, f"{bad[data]}: not in the DLQ")
                self.assertEqual(got[seq]["errorCode"], "INVALID_SCHEMA", f"{bad[data]}: {got[seq]}")
                self.assertEqual(got[seq]["shardId"], shard)
            else:
                self.assertNotIn(seq, got)

    # ---------------------------------------------------------------- KPL
    def aggregates(self, rng, make, n_aggs, corrupt=True):
        """[(kinesis record bytes, [user record bytes] or None for an aggregate that must
        go to the DLQ whole)]; user records from make(i)."""
        out = []
        i = 0
        for a in range(n_aggs):
            users = []
            for _ in range(rng.randint(1, 40)):
                tags = [("k", f"v{i}")] if rng.random() < 0.3 else []
                ehk = str(rng.randrange(2**128)) if rng.random() < 0.3 else None
                users.append(kpl.UserRecord(make(i), partition_key=f"pk{rng.randrange(8)}", explicit_hash_key=ehk, tags=tags))
                i += 1
            out.append((kpl.aggregate(users), [u.data for u in users]))
            if a % 5 == 2:
                out.append((make(i), [make(i)]))   # a plain record between aggregates
                i += 1
        if corrupt:
            good = kpl.encode_protobuf([kpl.UserRecord(make(i), "x"), kpl.UserRecord(make(i + 1), "y")])
            i += 2
            broken = good[:-3]
            out.append((kpl.frame(good, md5=bytes(16)), None))                      # bad MD5
            out.append((kpl.frame(good, md5=bytes(15) + b"\x01"), None))
            out.append((kpl.frame(broken), None))                                    # truncated protobuf, right MD5
            # A partition key index outside the key table (the record's key is not in it).
            out.append((kpl.frame(kpl.encode_protobuf([kpl.UserRecord(make(i), "z")], pk_table=["other"])), None))
            i += 1
        return out

    def expand(self, acked, plan):
        """acked (record, shard, seq) -> [(user data, shard, seq, index)] in order."""
        users = {rec: u for rec, u in plan}
        out = []
        for data, shard, seq in sorted(acked, key=lambda x: (x[1], int(x[2]))):
            if users[data] is None:
                continue
            if data.startswith(kpl.MAGIC):
                out += [(u, shard, seq, j) for j, u in enumerate(users[data])]
            else:
                out.append((data, shard, seq, None))
        return out

    def s3_channel(self, tag, fmt, compression):
        k = self.server.client()
        k.create_stream(StreamName=f"s-{tag}")
        st, body = kinesis_call(self.server, "CreateChannel", channel_request(
            f"ch-{tag}", f"s-{tag}", bucket="kpl-bucket", compression=compression, freshness=1, fmt=fmt))
        self.assertEqual(st, 200, body)
        return k, wait_channel(self.server, body["ChannelDescription"]["ChannelARN"])

    def test_kpl_into_s3_channels(self):
        for fmt, compression in (("JSON", "GZIP"), ("BYTE_ARRAY", "NONE")):
            with self.subTest(fmt=fmt):
                tag = f"kpl-s3-{fmt.lower().replace('_', '')}"
                k, d = self.s3_channel(tag, fmt, compression)
                rng = random.Random(fmt)
                plan = self.aggregates(rng, lambda i: json.dumps({"u": i, "pad": "p" * (i % 50)}).encode(), 60)
                # One aggregate with user records that are not JSON (index 0 and 3).
                users = [b"not json", b'{"u": -1}', b'{"u": -2}', b"{broken", b'{"u": -3}']
                plan.append((kpl.aggregate([kpl.UserRecord(u, f"b{j}") for j, u in enumerate(users)]), users))
                rng.shuffle(plan)
                acked = produce(k, f"s-{tag}", [(f"p{rng.randrange(1000)}", r) for r, _ in plan])
                expanded = self.expand(acked, plan)
                invalid = [(u, s, q, j) for u, s, q, j in expanded if fmt == "JSON" and not u.startswith(b"{\"")]
                valid = [(u, s, q) for u, s, q, j in expanded if (u, s, q, j) not in invalid]
                prefix = f"kinesis-channel/ch-{tag}/"
                deadline = time.time() + 60
                while True:
                    objs = self.bucket("kpl-bucket").objects(prefix)
                    n = sum(len(decompress(key, v)) if fmt == "BYTE_ARRAY" else len(split_records(fmt, decompress(key, v)))
                            for key, v in objs.items())
                    want = sum(len(u) for u, _, _ in valid) if fmt == "BYTE_ARRAY" else len(valid)
                    if n >= want or time.time() > deadline:
                        break
                    time.sleep(0.3)
                verify_exactly_once(self, objs, valid, fmt)
                # The DLQ: undecodable aggregates whole, invalid user records one by one.
                whole = {(s, q) for r, s, q in acked if dict(plan)[r] is None}
                err_prefix = f"kinesis-channel/errors/ch-{tag}/{d['ChannelId']}/"
                lines = [e for _, e in wait_dlq(self.bucket("kpl-bucket"), err_prefix, len(whole) + len(invalid))]
                self.assertEqual(len(lines), len(whole) + len(invalid), lines)
                got_whole = {(e["shardId"], e["sequenceNumber"]) for e in lines if "subSequenceNumber" not in e}
                self.assertEqual(got_whole, whole)
                for e in lines:
                    self.assertEqual(e["errorCode"], "DESERIALIZATION_ERROR", e)
                got_users = {(e["shardId"], e["sequenceNumber"], int(e["subSequenceNumber"]))
                             for e in lines if "subSequenceNumber" in e}
                self.assertEqual(got_users, {(s, q, j) for _, s, q, j in invalid})
                if fmt == "JSON":
                    self.assertEqual(sorted(j for _, _, _, j in invalid), [0, 3])

    def test_kpl_into_table_channel(self):
        tag = "kpl"
        k, g, arn, vid, d = self.table_channel(tag, V1)
        rng = random.Random(17)

        def make(i):
            if i % 37 == 5:
                return json.dumps({"id": 10**6 + i, "name": i, "event_time": ts(BASE)}).encode()  # TYPE_MISMATCH
            return rec(i, hour=i % 2)
        plan = self.aggregates(rng, make, 80)
        rng.shuffle(plan)
        acked = produce(k, f"s-{tag}", [(f"p{rng.randrange(1000)}", r) for r, _ in plan])
        expanded = self.expand(acked, plan)
        invalid = {(s, q, j) for u, s, q, j in expanded if b'"name": "' not in u}
        valid = [u for u, s, q, j in expanded if (s, q, j) not in invalid]
        self.assertGreater(len(valid), 500)
        self.assertGreater(len([1 for _, _, j in invalid if j is not None]), 5)
        wait_records(self.server, table_bucket_arn(WAREHOUSE), f"ns_{tag}", "events", len(valid))
        whole = {(s, q) for r, s, q in acked if dict(plan)[r] is None}
        lines = [e for _, e in wait_dlq(self.bucket(DLQ), f"kinesis-channel/errors/ch-{tag}/{d['ChannelId']}/",
                                        len(invalid) + len(whole))]
        t = self.read(f"ns_{tag}", "events")
        assert_rows(self, t["rows"], [expected_row(u, t["schema"]) for u in valid], "id")
        self.assertEqual(len(lines), len(invalid) + len(whole))
        # Lines without subSequenceNumber: the undecodable aggregates and the invalid plain records.
        got_whole = {(e["shardId"], e["sequenceNumber"]) for e in lines if "subSequenceNumber" not in e}
        self.assertEqual(got_whole, whole | {(s, q) for s, q, j in invalid if j is None})
        for e in lines:
            if (e["shardId"], e["sequenceNumber"]) in whole:
                self.assertEqual(e["errorCode"], "DESERIALIZATION_ERROR", e)
            else:
                self.assertEqual(e["errorCode"], "TYPE_MISMATCH", e)
        got = {(e["shardId"], e["sequenceNumber"], int(e["subSequenceNumber"]) if "subSequenceNumber" in e else None)
               for e in lines if "subSequenceNumber" in e or (e["shardId"], e["sequenceNumber"]) not in whole}
        self.assertEqual(got, invalid)
        st = describe(self.server, d["ChannelARN"])["IcestreamStatus"]
        self.assertEqual(st["DLQRecordCount"], len(lines))

    # ---------------------------------------------------------------- status and metrics
    def test_compaction_status_and_metrics_agree_with_the_table(self):
        tag = "stat"
        k, g, arn, vid, d = self.table_channel(tag, V1)
        rng = random.Random(5)
        sent = []
        i = 0
        t0 = time.time()
        while time.time() - t0 < 20:   # ~1 small file per second in one hour
            batch = [rec(i + j, pad="x" * rng.randrange(200)) for j in range(40)]
            i += 40
            produce(k, f"s-{tag}", [(f"p{j}", r) for j, r in enumerate(batch)])
            sent += batch
            time.sleep(0.5)
        wait_records(self.server, table_bucket_arn(WAREHOUSE), f"ns_{tag}", "events", len(sent))
        time.sleep(2)  # compaction runs after the last commit
        t = self.read(f"ns_{tag}", "events")
        st = describe(self.server, d["ChannelARN"])["IcestreamStatus"]
        m = table_metrics(metrics(self.server), f"ch-{tag}")
        assert_rows(self, t["rows"], [expected_row(r, t["schema"]) for r in sent], "id")
        chan_arn = d["ChannelARN"]
        appends = [s for s in t["snapshots"] if s["summary"].get("icestream.channel-arn") == chan_arn]
        replaces = [s for s in t["snapshots"] if s["summary"].get("icestream.compacted-by") == chan_arn]
        self.assertEqual(len(appends) + len(replaces), len(t["snapshots"]), "a snapshot of neither kind")
        for s in appends:
            self.assertEqual(s["summary"]["operation"], "append")
            self.assertTrue(any(key.startswith("icestream.checkpoint.") for key in s["summary"]), s["summary"])
        for s in replaces:
            self.assertEqual(s["summary"]["operation"], "replace")
            self.assertFalse(any(key.startswith("icestream.checkpoint.") for key in s["summary"]), s["summary"])
        self.assertGreater(len(replaces), 2, "compaction never ran")
        # Merged files: <channel-id>-m-<attempt>-<n>.parquet.
        merged = [f for f in t["files"] if "-m-" in f["file_path"]]
        self.assertTrue(merged)
        for f in merged:
            self.assertRegex(os.path.basename(f["file_path"]), "^" + re.escape(d["ChannelId"]) + r"-m-[^/]+-\d+\.parquet$")
        summed = lambda snaps, key: sum(int(s["summary"].get(key, 0)) for s in snaps)  # noqa: E731
        comp = st["Compaction"]
        self.assertEqual(comp["Commits"], len(replaces))
        self.assertEqual(comp["FilesMerged"], summed(replaces, "deleted-data-files"))
        self.assertEqual(comp["FilesWritten"], summed(replaces, "added-data-files"))
        self.assertEqual(comp["BytesRewritten"], summed(replaces, "added-files-size"))
        appended = summed(appends, "added-files-size")
        wa = (appended + comp["BytesRewritten"]) / appended
        self.assertAlmostEqual(comp["WriteAmplification"], wa, places=6)
        self.assertLessEqual(wa, 3.0)
        self.assertGreater(wa, 1.0)
        self.assertEqual(st["CommitCount"], len(appends))
        self.assertEqual(st["LiveDataFiles"], len(t["files"]))
        live_bytes = sum(f["file_size_in_bytes"] for f in t["files"])
        self.assertEqual(st["MeanDataFileBytes"], live_bytes // len(t["files"]))
        self.assertEqual(st["SnapshotsExpired"], 0)
        self.assertEqual(st["OrphanFilesRemoved"], 0)
        self.assertEqual(st["SchemaVersion"], 1)
        self.assertNotIn("IgnoredSchemaVersion", st)
        self.assertLess(len(t["files"]), len(appends) / 2, "compaction did not reduce the files")
        want = {"live_data_files": len(t["files"]), "live_data_bytes": live_bytes,
                "compaction_files_merged_total": comp["FilesMerged"], "compaction_files_written_total": comp["FilesWritten"],
                "compaction_bytes_rewritten_total": comp["BytesRewritten"], "compaction_commits_total": comp["Commits"],
                "snapshots_expired_total": 0, "orphan_files_removed_total": 0}
        for name, value in want.items():
            self.assertIn(name, m, f"icestream_table_{name} missing")
            self.assertEqual(m[name][0], value, name)
            self.assertEqual(m[name][1].get("channel_id"), d["ChannelId"])
            self.assertEqual(m[name][1].get("stream_name"), f"s-{tag}")
        self.assertAlmostEqual(m["write_amplification"][0], wa, places=4)


class WithoutCompaction(unittest.TestCase):
    """[delivery] table_compaction = false: nothing is merged, and the table figures of
    the status and /metrics still describe the table (live files and their mean size)."""

    def test_status_and_metrics_without_compaction(self):
        npm_dir()
        server = Server(config_text="[delivery]\ntable_compaction = false\ntable_target_file_bytes = 32768\n").start()
        self.addCleanup(server.cleanup)
        self.addCleanup(server.stop)
        k = server.client()
        k.create_stream(StreamName="s-off")
        arn, _ = register_schema(server.client("glue"), "reg-off", "events", V1)
        d = create_channel(self, server, table_channel_request("ch-off", "s-off", arn, WAREHOUSE, "ns_off", "events", DLQ))
        sent = []
        for r in range(8):
            batch = [rec(r * 50 + j) for j in range(50)]
            produce(k, "s-off", [(f"p{j}", x) for j, x in enumerate(batch)])
            sent += batch
            time.sleep(1.2)
        wait_records(server, table_bucket_arn(WAREHOUSE), "ns_off", "events", len(sent))
        time.sleep(1)
        t = read_table(catalog=server.endpoint + "/iceberg", warehouse=table_bucket_arn(WAREHOUSE), namespace="ns_off",
                       table="events")
        assert_rows(self, t["rows"], [expected_row(x, t["schema"]) for x in sent], "id")
        self.assertFalse([f for f in t["files"] if "-m-" in f["file_path"]], "files merged with compaction off")
        self.assertGreaterEqual(len(t["files"]), 6)
        st = describe(server, d["ChannelARN"])["IcestreamStatus"]
        self.assertEqual(st["Compaction"]["Commits"], 0)
        self.assertEqual(st["Compaction"]["FilesMerged"], 0)
        self.assertEqual(st["LiveDataFiles"], len(t["files"]))
        live_bytes = sum(f["file_size_in_bytes"] for f in t["files"])
        m = table_metrics(metrics(server), "ch-off")
        self.assertEqual(m["live_data_files"][0], len(t["files"]))
        self.assertEqual(m["compaction_commits_total"][0], 0)
        self.assertEqual(m["live_data_bytes"][0], live_bytes, "icestream_table_live_data_bytes with compaction off")
        self.assertEqual(st.get("MeanDataFileBytes"), live_bytes // len(t["files"]), f"MeanDataFileBytes: {st}")


if __name__ == "__main__":
    unittest.main(verbosity=2)

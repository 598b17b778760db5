"""The web console (issue 18) in a real browser: Debian's Chromium, headless, driven by
puppeteer-core (tests/browser/drive.mjs), against a real server holding two streams (one
resharded), a streaming-table channel with DLQ lines, a table compacted and evolved to a
second schema version, and a registry. Every page must load without a console error or
a failed request, and show what the APIs (and the independent table reader,
tests/lib/read_table.mjs) say:

- overview: every stream, the channel with its state, the table;
- stream: the record browser shows every record the test put on a shard (sequence
  numbers, payloads), the per-shard rate chart adds up to the records put, the lineage
  shows the closed parent of a split;
- channel: lag per shard as DescribeChannel has it, the counts per error code and the
  DLQ lines of the DLQ bucket, each with the payload the test put;
- table: the sample rows equal the independent reader's rows, every snapshot (appends
  and the compaction's replace) and both schemas are listed;
- registry: the schema and the diff between its versions.

With [[credentials]] and a bearer token configured: the page shows only the sign-in form
until a sign-in, a wrong token is refused, the console's endpoints answer nothing without
the session cookie, the cookie is HttpOnly and SameSite=Strict, and a mutating call with
the cookie but without the CSRF token is refused (and does nothing).

Screenshots of every page go to $ICESTREAM_SCREENSHOTS (docs/images for the docs) or a
temporary folder."""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kpl  # noqa: E402
from delivery_check import LocalBucket  # noqa: E402
from harness import Server, channel_request, kinesis_call, wait_channel  # noqa: E402
from table_check import (describe, npm_dir, read_table, register_schema, rest_metadata,  # noqa: E402
                         table_channel_request, ts_micros, wait_records)

DRIVER = os.path.join(HERE, "drive.mjs")
CHROMIUM = "/usr/bin/chromium"
WAREHOUSE, NS, TABLE, DLQ = "shop-tables", "sales", "orders", "shop-dlq"
ARCHIVE = "click-archive"
CONFIG = """[delivery]
table_target_file_bytes = 16384
table_compaction_cold_after_ms = 2000
"""
V1 = {"type": "object", "required": ["id", "event_time"],
      "properties": {"id": {"type": "integer"}, "event_time": {"type": "string", "format": "date-time"},
                     "name": {"type": "string"}, "total": {"type": "number"}}}
V2 = json.loads(json.dumps(V1))
V2["properties"]["coupon"] = {"type": "string"}


def require_browser():
    if not os.path.exists(CHROMIUM):
        raise RuntimeError(f"{CHROMIUM} is missing: run scripts/install-deps (it installs Debian's chromium)")
    if not os.path.isdir(os.path.join(npm_dir(), "node_modules", "puppeteer-core")):
        raise RuntimeError("puppeteer-core is missing from .cache/npm: run scripts/install-deps")


def screenshot_dir():
    d = os.environ.get("ICESTREAM_SCREENSHOTS")
    if d:
        os.makedirs(d, exist_ok=True)
        return d, False
    return tempfile.mkdtemp(prefix="console-shots-"), True


def drive(endpoint, steps, out_dir, login=None, timeout=600):
    with tempfile.TemporaryDirectory(prefix="console-plan-") as tmp:
        plan = {"endpoint": endpoint, "out_dir": out_dir, "chromium": CHROMIUM, "steps": steps,
                "result": os.path.join(tmp, "result.json"), "login": login}
        path = os.path.join(tmp, "plan.json")
        with open(path, "w") as f:
            json.dump(plan, f)
        p = subprocess.run(["node", DRIVER, npm_dir(), path], capture_output=True, text=True, timeout=timeout)
        if not os.path.exists(plan["result"]):
            raise AssertionError(f"drive.mjs failed ({p.returncode}): {p.stderr[-3000:]}")
        with open(plan["result"]) as f:
            out = json.load(f)
        if out.get("error"):
            raise AssertionError(f"drive.mjs: {out['error']}\n{p.stderr[-2000:]}")
        return out


def elements(step, key, value=None):
    """Elements of a page with data-<key> (kebab case, as in the markup) [= value]."""
    parts = key.split("-")
    key = parts[0] + "".join(p.title() for p in parts[1:])  # dataset names are camel case
    return [e for e in step["elements"] if key in e["data"] and (value is None or e["data"][key] == value)]


def normal(text):
    """A payload as shown (pretty JSON or text) or as put, in one comparable form."""
    if isinstance(text, bytes):
        text = text.decode()
    try:
        return json.dumps(json.loads(text, parse_int=float), sort_keys=True)  # 15 and 15.0 alike
    except ValueError:
        return text


def from_hex_dump(text):
    """The bytes of a console hex dump (offset, 16 hex pairs, ASCII per line)."""
    out = bytearray()
    for line in text.splitlines():
        if line.startswith("…"):
            continue
        out += bytes.fromhex(line[10:57].strip())
    return bytes(out)


def iso(i, hour):
    return f"2025-06-01T{hour:02d}:{i % 60:02d}:{(i * 7) % 60:02d}.{i:03d}Z"


def canonical_console_row(row, schema):
    """A console sample row (json_rows.h forms) in read_table.mjs's canonical form."""
    out = {}
    for f in schema["fields"]:
        v = row.get(f["name"])
        if v is not None and f["type"] in ("timestamptz", "timestamp"):
            v = ts_micros(v.replace("+00:00", "Z"))
        out[f["name"]] = v
    return out


class PageChecks:
    """Shared asserts on drive.mjs's step results."""

    def assertClean(self, step):
        self.assertFalse(step.get("timeout"), f"{step['name']}: {step.get('timeout')}\n{step.get('text', '')[:2000]}")
        self.assertEqual(step["console_errors"], [], f"{step['name']}: console errors")
        self.assertEqual(step["failed_requests"], [], f"{step['name']}: failed requests")


class ConsolePages(unittest.TestCase, PageChecks):
    @classmethod
    def setUpClass(cls):
        require_browser()
        cls.srv = Server(config_text=CONFIG).start()
        cls.k = cls.srv.client()
        cls.glue = cls.srv.client("glue")
        cls.shots, cls.own_shots = screenshot_dir()
        cls.populate()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()
        if cls.own_shots:
            print(f"screenshots in {cls.shots}")

    @classmethod
    def put(cls, stream, records):
        r = cls.k.put_records(StreamName=stream, Records=[{"Data": d, "PartitionKey": pk} for d, pk in records])
        assert r["FailedRecordCount"] == 0, r
        for (d, pk), x in zip(records, r["Records"]):
            cls.records.append({"stream": stream, "data": d, "pk": pk, "shard": x["ShardId"], "seq": x["SequenceNumber"]})

    @classmethod
    def populate(cls):
        cls.records = []
        cls.k.create_stream(StreamName="orders")  # ON_DEMAND, 4 shards
        cls.k.create_stream(StreamName="clicks", ShardCount=2)
        for name in ("orders", "clicks"):
            cls.k.get_waiter("stream_exists").wait(StreamName=name)
        # A split, so that the lineage has a closed parent and two children.
        s0 = cls.k.list_shards(StreamName="clicks")["Shards"][0]
        start, end = int(s0["HashKeyRange"]["StartingHashKey"]), int(s0["HashKeyRange"]["EndingHashKey"])
        cls.k.split_shard(StreamName="clicks", ShardToSplit=s0["ShardId"], NewStartingHashKey=str((start + end) // 2))
        cls.put("clicks", [(f"click {i}".encode(), f"u{i}") for i in range(8)])
        # An S3 channel (no DeadLetterQueueS3Configuration: it is optional there).
        os.makedirs(os.path.join(cls.srv.data_dir, "buckets", ARCHIVE), exist_ok=True)
        cls.k.create_stream(StreamName="visits")
        cls.k.get_waiter("stream_exists").wait(StreamName="visits")
        cls.put("visits", [(json.dumps({"page": f"/p/{i}"}).encode(), f"v{i}") for i in range(8)])
        # A KPL aggregate: the record browser splits it into its user records.
        cls.kpl_users = [kpl.UserRecord(json.dumps({"page": f"/kpl/{i}"}), partition_key=f"k{i}") for i in range(3)]
        cls.put("visits", [(kpl.aggregate(cls.kpl_users), "kpl-batch")])
        req = channel_request("visits-to-s3", "visits", bucket=ARCHIVE, freshness=1)
        req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
        st, body = kinesis_call(cls.srv, "CreateChannel", req)
        assert st == 200, body
        cls.s3_channel_arn = wait_channel(cls.srv, body["ChannelDescription"]["ChannelARN"], timeout=30)["ChannelARN"]

        cls.schema_arn, _ = register_schema(cls.glue, "shop", "orders", V1)
        os.makedirs(os.path.join(cls.srv.data_dir, "buckets", DLQ), exist_ok=True)
        st, body = kinesis_call(cls.srv, "CreateChannel", table_channel_request(
            "orders-to-table", "orders", cls.schema_arn, WAREHOUSE, NS, TABLE, DLQ, freshness=1, start="TRIM_HORIZON"))
        assert st == 200, body
        cls.channel = wait_channel(cls.srv, body["ChannelDescription"]["ChannelARN"], timeout=30)
        cls.channel_arn = cls.channel["ChannelARN"]
        cls.valid = []
        n = 0
        for batch in range(3):  # three appends into one past hour
            recs = []
            for _ in range(10):
                rec = {"id": n, "event_time": iso(n, 8), "name": f"order {n}", "total": n * 1.25}
                cls.valid.append(rec)
                recs.append((json.dumps(rec).encode(), f"customer-{n % 7}"))
                n += 1
            if batch == 0:
                recs += [(json.dumps({"event_time": iso(90, 8), "name": "no id"}).encode(), "bad-1"),
                         (json.dumps({"event_time": iso(91, 8), "name": "no id either"}).encode(), "bad-2"),
                         (b"this is not JSON", "bad-3")]
            cls.put("orders", recs)
            wait_records(cls.srv, WAREHOUSE, NS, TABLE, n, timeout=60)
            time.sleep(1.2)
        # A compatible second version (a new optional column): the table follows it.
        cls.glue.register_schema_version(SchemaId={"RegistryName": "shop", "SchemaName": "orders"},
                                         SchemaDefinition=json.dumps(V2))
        time.sleep(3)  # the first hour goes cold: the next commit finishes it off (compaction)
        recs = []
        for _ in range(10):
            rec = {"id": n, "event_time": iso(n, 9), "name": f"order {n}", "total": n * 1.25, "coupon": f"C{n}"}
            cls.valid.append(rec)
            recs.append((json.dumps(rec).encode(), f"customer-{n % 7}"))
            n += 1
        cls.put("orders", recs)
        wait_records(cls.srv, WAREHOUSE, NS, TABLE, n, timeout=60)
        deadline = time.time() + 60
        while True:
            md = rest_metadata(cls.srv, WAREHOUSE, NS, TABLE)["metadata"]
            ops = {s["summary"]["operation"] for s in md["snapshots"]}
            if "replace" in ops and len(md["schemas"]) >= 2:
                break
            assert time.time() < deadline, f"no compaction or no second schema: {ops}, {len(md['schemas'])} schemas"
            time.sleep(0.5)
        # Every record delivered (lag 0) before the pages are read.
        deadline = time.time() + 30
        while True:
            st = describe(cls.srv, cls.channel_arn)["IcestreamStatus"]
            if sum(s["LagRecords"] for s in st["Shards"]) == 0 and st.get("DLQRecordCount", 0) >= 3:
                break
            assert time.time() < deadline, st
            time.sleep(0.3)
        deadline = time.time() + 30
        while describe(cls.srv, cls.s3_channel_arn)["IcestreamStatus"].get("DeliveredRecordCount", 0) < 8:
            assert time.time() < deadline, describe(cls.srv, cls.s3_channel_arn)
            time.sleep(0.3)
        cls.dlq = []
        for body in LocalBucket(os.path.join(cls.srv.data_dir, "buckets", DLQ)).objects().values():
            cls.dlq += [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        assert len(cls.dlq) == 3, cls.dlq

    def test_pages(self):
        orders = [r for r in self.records if r["stream"] == "orders"]
        by_shard = {}
        for r in orders:
            by_shard.setdefault(r["shard"], []).append(r)
        shard = max(by_shard, key=lambda s: len(by_shard[s]))
        arn_q = urllib.parse.quote(self.channel_arn, safe="")
        kpl_rec = next(r for r in self.records if r["pk"] == "kpl-batch")
        # The shard as GetRecords has it (arrival times), for the sequence and time positions.
        it = self.k.get_shard_iterator(StreamName="orders", ShardId=shard, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        on_shard = self.k.get_records(ShardIterator=it, Limit=10000)["Records"]
        self.assertEqual(len(on_shard), len(by_shard[shard]))
        after = on_shard[2]["SequenceNumber"]
        # A time between two of the test's appends (they are more than a second apart).
        gaps = [(b["ApproximateArrivalTimestamp"].timestamp() - a["ApproximateArrivalTimestamp"].timestamp(), i)
                for i, (a, b) in enumerate(zip(on_shard, on_shard[1:]))]
        gap, gi = max(gaps)
        self.assertGreater(gap, 0.5)
        at_time = (on_shard[gi]["ApproximateArrivalTimestamp"].timestamp() + gap / 2)
        since = on_shard[gi + 1:]
        steps = [
            {"name": "overview", "hash": "/", "wait": "#tables [data-table]", "screenshot": True},
            {"name": "stream", "hash": f"/streams/orders?shard={shard}&from=TRIM_HORIZON",
             "wait": "#records tr[data-sequence]", "wait_count": len(by_shard[shard]),
             "screenshot": [{"name": "stream"}, {"name": "stream-records", "scroll_to": "#rates"}]},
            {"name": "stream-after", "hash": f"/streams/orders?shard={shard}&from=AFTER_SEQUENCE_NUMBER&sequence={after}&limit=1000",
             "wait": "#records tr[data-sequence]", "wait_count": len(on_shard) - 3,
             "click": "#record-browser button[data-view=hex]", "then_wait": "#records pre.payload[data-view=hex]"},
            {"name": "stream-at-time", "hash": f"/streams/orders?shard={shard}&from=AT_TIMESTAMP&timestamp={at_time:.3f}&limit=1000",
             "wait": "#records tr[data-sequence]", "wait_count": len(since)},
            {"name": "stream-kpl", "hash": f"/streams/visits?shard={kpl_rec['shard']}&from=TRIM_HORIZON",
             "wait": "#records [data-user-record]", "wait_count": len(self.kpl_users)},
            {"name": "stream-resharded", "hash": "/streams/clicks", "wait": "#rates [data-records]",
             "screenshot": [{"name": "lineage", "scroll_to": "#page svg[aria-label^='shard lineage']"}]},
            {"name": "channel", "hash": f"/channels/{arn_q}", "wait": "#dlq pre.payload", "wait_count": 3,
             "screenshot": [{"name": "channel"}, {"name": "channel-dlq", "scroll_to": "#dlq"}]},
            {"name": "s3-channel", "hash": f"/channels/{urllib.parse.quote(self.s3_channel_arn, safe='')}",
             "wait": "#lag tr[data-shard]", "wait_count": 4},
            {"name": "table", "hash": f"/tables/{WAREHOUSE}/{NS}/{TABLE}", "wait": "#sample-rows tr[data-row]",
             "wait_count": len(self.valid),
             "screenshot": [{"name": "table"}, {"name": "table-snapshots", "scroll_to": "#page svg[aria-label$='snapshots']"},
                            {"name": "table-rows", "scroll_to": "#sample-rows"}]},
            {"name": "registry", "hash": "/registry", "wait": "[data-schema]", "screenshot": True},
            {"name": "schema", "hash": "/registry/shop/orders", "wait": "#diff [data-op]",
             "screenshot": [{"name": "schema-diff"}]},
        ]
        # An API error for the overview's recent errors.
        with self.assertRaises(self.k.exceptions.ResourceNotFoundException):
            self.k.describe_stream_summary(StreamName="no-such-stream")
        out = drive(self.srv.endpoint, steps, self.shots)
        got = {s["name"]: s for s in out["steps"]}
        for s in out["steps"]:
            self.assertClean(s)

        # Overview: every stream, the channel and its state, the table.
        ov = got["overview"]
        self.assertEqual({e["data"]["stream"] for e in elements(ov, "stream")}, {"orders", "clicks", "visits"})
        ch = elements(ov, "channel", "orders-to-table")
        self.assertEqual(len(ch), 1)
        self.assertIn("ACTIVE", ch[0]["text"])
        self.assertEqual(elements(ov, "lag-records")[0]["data"]["lagRecords"], "0")
        self.assertTrue(elements(ov, "table", f"{NS}.{TABLE}"))
        self.assertIn("open", ov["auth_mode"])
        self.assertIn("no [[credentials]]", ov["notice"])
        errs = elements(ov, "api-error", "ResourceNotFoundException")
        self.assertTrue(any(e["data"]["operation"] == "kinesis DescribeStreamSummary" and "no-such-stream" in e["text"]
                            for e in errs), errs)

        # Stream: the record browser shows every record put on that shard, payload and all.
        st = got["stream"]
        rows = {e["data"]["sequence"]: e for e in elements(st, "sequence") if e["tag"] == "tr"}
        want = {r["seq"]: r for r in by_shard[shard]}
        self.assertEqual(set(rows), set(want))
        shown = {normal(p) for p in st["payloads"]}
        for seq, r in want.items():
            self.assertEqual(rows[seq]["data"]["partitionKey"], r["pk"])
            self.assertIn(normal(r["data"]), shown, f"payload of {seq}")
        # AFTER_SEQUENCE_NUMBER: the records after the third, payloads as hex dumps of the bytes.
        sa = got["stream-after"]
        self.assertEqual([e["data"]["sequence"] for e in elements(sa, "sequence") if e["tag"] == "tr"],
                         [r["SequenceNumber"] for r in on_shard[3:]])
        self.assertEqual([from_hex_dump(p) for p in sa["payloads"]], [r["Data"] for r in on_shard[3:]])
        # AT_TIMESTAMP: the records that arrived after a time between two appends.
        self.assertEqual([e["data"]["sequence"] for e in elements(got["stream-at-time"], "sequence") if e["tag"] == "tr"],
                         [r["SequenceNumber"] for r in since])
        # A KPL aggregate: its user records with their own partition keys and payloads.
        users = elements(got["stream-kpl"], "user-record")
        self.assertEqual([(e["data"]["partitionKey"], normal(e["text"].split("\n", 1)[1])) for e in users],
                         [(u.partition_key, normal(u.data)) for u in self.kpl_users])
        # The rate chart adds up to what the test put, shard by shard.
        rates = {e["data"]["shard"]: int(e["data"]["records"]) for e in elements(st, "records")}
        self.assertEqual(rates, {s: len(v) for s, v in by_shard.items()})
        # The split: one closed parent and two children in the lineage picture.
        clicks = got["stream-resharded"]
        nodes = [e for e in elements(clicks, "shard") if e["tag"] == "g"]
        self.assertEqual(len(nodes), 4)
        self.assertEqual(sum("(closed)" in e["text"] for e in nodes), 1)

        # Channel: lag per shard as DescribeChannel has it, counts per code, DLQ lines with payloads.
        cp = got["channel"]
        d = describe(self.srv, self.channel_arn)
        lag_rows = [e for e in elements(cp, "shard") if e["tag"] == "tr"]
        self.assertEqual({e["data"]["shard"] for e in lag_rows}, {s["ShardId"] for s in d["IcestreamStatus"]["Shards"]})
        for e in lag_rows:
            want_lag = next(s for s in d["IcestreamStatus"]["Shards"] if s["ShardId"] == e["data"]["shard"])["LagRecords"]
            self.assertEqual(e["text"].split("\t")[1].strip(), str(want_lag))
        delivered = next(e for e in elements(cp, "stat") if e["data"]["stat"] == "delivered")
        fresh = next(e for e in elements(cp, "stat") if e["data"]["stat"] == "freshness")
        self.assertNotIn("—", fresh["text"])  # DeliveryToIceberg_DataFreshness is in /metrics
        self.assertIn(f"{d['IcestreamStatus']['DeliveredRecordCount']:,}", delivered["text"])
        counts = {e["data"]["errorCode"]: e["text"] for e in elements(cp, "error-code") if "sequence" not in e["data"]}
        self.assertEqual(set(counts), {"MISSING_REQUIRED_FIELD", "DESERIALIZATION_ERROR"})
        self.assertTrue(counts["MISSING_REQUIRED_FIELD"].endswith("2"))
        lines = {e["data"]["sequence"]: e for e in elements(cp, "sequence")}
        self.assertEqual(set(lines), {x["sequenceNumber"] for x in self.dlq})
        bad = {r["seq"]: r for r in orders if r["pk"].startswith("bad-")}
        dlq_payloads = {normal(p) for p in cp["payloads"]}
        for seq, r in bad.items():
            self.assertIn(lines[seq]["data"]["errorCode"], ("MISSING_REQUIRED_FIELD", "DESERIALIZATION_ERROR"))
            self.assertIn(normal(r["data"]), dlq_payloads, f"payload of DLQ line {seq}")
        # The last rejected record and the counts per code: from IcestreamStatus where the
        # server reports them (docs/channels.md), otherwise from the DLQ objects, labelled so.
        st = d["IcestreamStatus"]
        last = elements(cp, "last-rejected")
        self.assertEqual(len(last), 1)
        if "LastRejected" in st:
            self.assertEqual(last[0]["data"]["lastRejected"], "status")
            self.assertIn(st["LastRejected"]["ErrorCode"], last[0]["text"])
            self.assertIn(st["LastRejected"]["SequenceNumber"], last[0]["text"])
        else:
            self.assertEqual(last[0]["data"]["lastRejected"], "dlq")
            self.assertIn("the newest DLQ line", last[0]["text"])
            self.assertTrue(any(x["errorCode"] in last[0]["text"] and x["shardId"] in last[0]["text"] for x in self.dlq),
                            last[0]["text"])
        source = elements(cp, "counts-source")[0]["data"]["countsSource"]
        self.assertEqual(source, "status" if "RejectedRecordCounts" in st else "dlq")
        if "RejectedRecordCounts" in st:
            self.assertEqual({k: v for k, v in st["RejectedRecordCounts"].items() if v},
                             {k: int(v.split()[-1].replace(",", "")) for k, v in counts.items()})

        # An S3 channel: its destination, lag, counts and measured freshness.
        sp = got["s3-channel"]
        d3 = describe(self.srv, self.s3_channel_arn)
        self.assertEqual({e["data"]["shard"] for e in elements(sp, "shard") if e["tag"] == "tr"},
                         {s["ShardId"] for s in d3["IcestreamStatus"]["Shards"]})
        delivered = next(e for e in elements(sp, "stat") if e["data"]["stat"] == "delivered")
        self.assertIn(f"{d3['IcestreamStatus']['DeliveredRecordCount']:,}", delivered["text"])
        self.assertIn(f"arn:aws:s3:::{ARCHIVE} (GZIP)", sp["text"])
        # Without DeadLetterQueueS3Configuration the DLQ is the destination bucket's
        # kinesis-channel/errors/ folder (docs/channels.md), and it is empty.
        # (shown as the API describes it: the bucket's ARN and the channel's error prefix)
        self.assertIn(f"arn:aws:s3:::{ARCHIVE} kinesis-channel/errors/visits-to-s3/", sp["text"])
        self.assertIn("The DLQ is empty.", sp["text"])
        fresh = next(e for e in elements(sp, "stat") if e["data"]["stat"] == "freshness")
        self.assertNotIn("—", fresh["text"])  # DeliveryToS3_DataFreshness is in /metrics

        # Table: sample rows = the independent reader's rows; every snapshot and schema listed.
        tp = got["table"]
        t = read_table(catalog=self.srv.endpoint + "/iceberg", warehouse=WAREHOUSE, namespace=NS, table=TABLE)
        schema = t["schema"]
        shown = sorted((canonical_console_row(json.loads(e["data"]["row"]), schema) for e in elements(tp, "row")),
                       key=lambda r: r["id"])
        self.assertEqual(shown, sorted(t["rows"], key=lambda r: r["id"]))
        self.assertEqual(len(shown), len(self.valid))
        snaps = {e["data"]["snapshot"]: e["data"]["operation"] for e in elements(tp, "snapshot") if e["tag"] == "tr"}
        self.assertEqual(set(snaps), {s["snapshot_id"] for s in t["snapshots"]})
        self.assertIn("replace", snaps.values())
        self.assertIn("append", snaps.values())
        self.assertEqual(len({e["data"]["schemaId"] for e in elements(tp, "schema-id")}), t["schemas"])
        self.assertTrue(any("added coupon string" in e["text"] for e in elements(tp, "schema-id")))
        parts = {e["data"]["partition"]: int(e["data"]["files"]) for e in elements(tp, "partition")}
        by_part = {}
        for f in t["files"]:
            key = "/".join(f"{k}={v}" for k, v in f["partition"].items())
            by_part[key] = by_part.get(key, 0) + 1
        self.assertEqual(sum(parts.values()), len(t["files"]))
        self.assertEqual(len(parts), len(by_part))
        wa = next(e for e in elements(tp, "stat") if e["data"]["stat"] == "write-amplification")
        self.assertGreater(float(wa["text"].split("\n")[-1]), 1.0)  # the compaction rewrote bytes

        # Registry: the schema, and the diff between v1 and v2 adds "coupon".
        self.assertTrue(elements(got["registry"], "schema", "orders"))
        added = [e["text"] for e in elements(got["schema"], "op", "+")]
        self.assertTrue(any('"coupon"' in a for a in added), added)
        removed = [e["text"] for e in elements(got["schema"], "op", "-")]
        self.assertLessEqual(len(removed), 2)  # a brace or comma moves at most


class ConsoleSignIn(unittest.TestCase, PageChecks):
    TOKEN = "console-token-7c1f"

    @classmethod
    def setUpClass(cls):
        require_browser()
        config = ('[[credentials]]\naccess_key_id = "test"\nsecret_access_key = "test"\n\n'
                  f'[auth]\nbearer_tokens = ["{cls.TOKEN}"]\n')
        cls.srv = Server(config_text=config).start()
        cls.k = cls.srv.client()
        cls.k.create_stream(StreamName="secret-stream", ShardCount=1)
        cls.k.put_record(StreamName="secret-stream", Data=b"classified", PartitionKey="p")
        cls.shots, cls.own_shots = screenshot_dir()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()

    def request(self, method, path, body=None, headers=None):
        req = urllib.request.Request(self.srv.endpoint + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, dict(r.headers.items()), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers.items()), e.read().decode()

    def test_nothing_without_a_session(self):
        st, _, body = self.request("GET", "/console/")
        self.assertEqual(st, 200)
        self.assertNotIn("secret-stream", body)
        for path in ("/console/api/info", "/console/api/errors", "/console/api/metrics", "/console/api/health",
                     "/console/api/iceberg/v1/config", "/console/api/streams/secret-stream/rates",
                     "/console/api/tables/rows?warehouse=default&namespace=a&table=b"):
            st, _, body = self.request("GET", path)
            self.assertEqual(st, 401, path)
            self.assertNotIn("secret-stream", body)
        st, _, body = self.request("POST", "/console/api/aws", b"{}", {"X-Amz-Target": "Kinesis_20131202.ListStreams",
                                                                       "Content-Type": "application/x-amz-json-1.1"})
        self.assertEqual(st, 401)
        self.assertNotIn("secret-stream", body)
        # A forged session cookie is no session.
        st, _, _ = self.request("GET", "/console/api/info", headers={"Cookie": "icestream_console=" + "ab" * 32})
        self.assertEqual(st, 401)
        st, _, body = self.request("GET", "/console/api/session")
        self.assertEqual(json.loads(body), {"login_required": True, "authenticated": False,
                                            "methods": ["bearer_token", "access_key"]})

    def test_sign_in_in_the_browser_then_csrf(self):
        out = drive(self.srv.endpoint, [{"name": "signed-in", "hash": "/", "wait": "#streams [data-stream]"}],
                    self.shots, login={"wrong": "not-the-token", "bearer_token": self.TOKEN})
        login = out["login"]
        self.assertEqual(login["page"], "login")
        self.assertNotIn("secret-stream", login["text"])
        self.assertIn("NotAuthorizedException", login["wrong_login_error"])
        self.assertClean(login)
        self.assertIn("signed in (bearer token)", login["after"]["auth_mode"])
        step = out["steps"][0]
        self.assertClean(step)
        self.assertTrue(elements(step, "stream", "secret-stream"))
        cookie = next(c for c in out["cookies"] if c["name"] == "icestream_console")
        self.assertTrue(cookie["httpOnly"])
        self.assertEqual(cookie["sameSite"], "Strict")
        self.assertEqual(cookie["path"], "/console")
        self.assertGreater(cookie["expires"], time.time() + 3600)

        jar = {"Cookie": f"icestream_console={cookie['value']}"}
        st, _, body = self.request("GET", "/console/api/info", headers=jar)
        self.assertEqual(st, 200, body)
        create = {"X-Amz-Target": "Kinesis_20131202.CreateStream", "Content-Type": "application/x-amz-json-1.1", **jar}
        st, _, body = self.request("POST", "/console/api/aws", b'{"StreamName": "csrf-victim", "ShardCount": 1}', create)
        self.assertEqual(st, 403, body)
        st, _, body = self.request("POST", "/console/api/aws", b'{"StreamName": "csrf-victim", "ShardCount": 1}',
                                   {**create, "X-CSRF-Token": "0" * 64})
        self.assertEqual(st, 403, body)
        self.assertNotIn("csrf-victim", self.k.list_streams()["StreamNames"])
        csrf = json.loads(self.request("GET", "/console/api/session", headers=jar)[2])["csrf_token"]
        st, _, body = self.request("POST", "/console/api/aws", b'{"StreamName": "csrf-victim", "ShardCount": 1}',
                                   {**create, "X-CSRF-Token": csrf})
        self.assertEqual(st, 200, body)
        self.assertIn("csrf-victim", self.k.list_streams()["StreamNames"])
        # Signing out ends the session on the server.
        st, _, _ = self.request("POST", "/console/api/logout", b"{}", {**jar, "X-CSRF-Token": csrf,
                                                                        "Content-Type": "application/json"})
        self.assertEqual(st, 200)
        self.assertEqual(self.request("GET", "/console/api/info", headers=jar)[0], 401)

    def test_access_key_sign_in(self):
        body = json.dumps({"access_key_id": "test", "secret_access_key": "wrong"}).encode()
        st, _, _ = self.request("POST", "/console/api/login", body, {"Content-Type": "application/json"})
        self.assertEqual(st, 401)
        body = json.dumps({"access_key_id": "test", "secret_access_key": "test"}).encode()
        st, headers, text = self.request("POST", "/console/api/login", body, {"Content-Type": "application/json"})
        self.assertEqual(st, 200, text)
        cookie = headers["Set-Cookie"]
        for flag in ("HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age="):
            self.assertIn(flag, cookie)
        self.assertEqual(json.loads(text)["principal"], "test")



class ConsoleDisabled(unittest.TestCase):
    def test_enabled_false_serves_no_console(self):
        srv = Server(config_text="[console]\nenabled = false\n").start()
        try:
            for path in ("/console/", "/console/api/session"):
                with self.assertRaises(urllib.error.HTTPError) as e:
                    urllib.request.urlopen(srv.endpoint + path, timeout=10)
                self.assertEqual(e.exception.code, 404, path)
            # `/` is then only the AWS endpoint: a GET there gets AWS's own answer.
            with self.assertRaises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(srv.endpoint + "/", timeout=10)
            self.assertEqual(e.exception.code, 403)
            self.assertIn(b"AccessDeniedException", e.exception.read())
        finally:
            srv.stop()
            srv.cleanup()
        bad = Server(config_text="[console]\nsession_seconds = 5\n")
        try:
            with self.assertRaises(RuntimeError) as e:
                bad.start()
            self.assertIn("console.session_seconds must be between 60", str(e.exception))
        finally:
            bad.cleanup()


if __name__ == "__main__":
    unittest.main()

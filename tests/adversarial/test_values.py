"""Values are never silently changed (issue 19, item 3): a number that its column cannot
hold exactly is a DLQ line (VALUE_OUT_OF_RANGE / TYPE_MISMATCH), never a rounded value.

- Through a real streaming-table channel (embedded warehouse): records with integers at
  and beyond the long range, integers a double cannot hold (2^53 + 1), a fraction in the
  17th digit (12345678901234567.5, which a double rounds to an integer), doubles beyond
  the double range or below its smallest value, decimals finer than the column's scale.
  The independent reader (tests/lib/read_table.mjs: icebird and DuckDB) must find the
  accepted values exactly as sent (longs compared as exact integers), and every refused
  record must be a DLQ line with its error code.
- Through `icestream convert` with an Iceberg schema (float, int, long, double, decimal):
  the rejected lines and their codes, and DuckDB reading the file's values exactly."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from decimal import Decimal

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import harness  # noqa: E402
from delivery_check import LocalBucket, produce  # noqa: E402
from harness import Server  # noqa: E402
from table_check import (create_channel, npm_dir, read_table, register_schema, table_bucket_arn,  # noqa: E402
                         table_channel_request, wait_dlq, wait_records)

WAREHOUSE = "value-tables"
DLQ = "value-dlq"
SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": {"type": "integer"},
        "event_time": {"type": "string", "format": "date-time"},
        "l": {"type": "integer"},
        "i": {"type": "integer", "minimum": -2147483648, "maximum": 2147483647},
        "d": {"type": "number"},
        "amount": {"type": "number", "multipleOf": 0.01},
    },
}
T = "2025-06-01T08:00:00Z"
# (text of the record, expected outcome: None = delivered as sent, else the DLQ error code)
CASES = [
    ('{"id":1,"event_time":"%s","l":-9223372036854775808}' % T, None),
    ('{"id":2,"event_time":"%s","l":9223372036854775807}' % T, None),
    ('{"id":3,"event_time":"%s","l":9007199254740993}' % T, None),
    ('{"id":4,"event_time":"%s","l":1.0e3,"i":-2147483648}' % T, None),
    ('{"id":5,"event_time":"%s","d":1.7976931348623157e308,"amount":12345678901234567.50}' % T, None),
    ('{"id":6,"event_time":"%s","l":-9223372036854775809}' % T, "VALUE_OUT_OF_RANGE"),
    ('{"id":7,"event_time":"%s","l":9223372036854775808}' % T, "VALUE_OUT_OF_RANGE"),
    ('{"id":8,"event_time":"%s","l":12345678901234567.5}' % T, "TYPE_MISMATCH"),
    ('{"id":9,"event_time":"%s","i":2147483648}' % T, "VALUE_OUT_OF_RANGE"),
    ('{"id":10,"event_time":"%s","d":1e400}' % T, "VALUE_OUT_OF_RANGE"),
    ('{"id":11,"event_time":"%s","d":1e-400}' % T, "VALUE_OUT_OF_RANGE"),
    ('{"id":12,"event_time":"%s","amount":0.001}' % T, "VALUE_OUT_OF_RANGE"),
    ('{"id":13,"event_time":"%s","id2":1,"l":9.223372036854775808e18}' % T, "VALUE_OUT_OF_RANGE"),
    ('{"id":14.5,"event_time":"%s"}' % T, "TYPE_MISMATCH"),
]


def exact(text):
    """The record's values as the reader's canonical rows show them (exact ints)."""
    r = json.loads(text, parse_float=Decimal)
    row = {"id": int(r["id"]), "l": None, "i": None, "d": None, "amount": None}
    if "l" in r:
        row["l"] = int(r["l"])
    if "i" in r:
        row["i"] = int(r["i"])
    if "d" in r:
        row["d"] = float(r["d"])
    if "amount" in r:
        row["amount"] = str(Decimal(r["amount"]).quantize(Decimal("0.01")))
    return row


class ChannelValues(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        npm_dir()
        cls.server = Server().start()
        os.makedirs(os.path.join(cls.server.data_dir, "buckets", DLQ), exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    def test_numbers_are_exact_or_dead_lettered(self):
        k = self.server.client()
        k.create_stream(StreamName="vals")  # ON_DEMAND: channels need it
        arn, _ = register_schema(self.server.client("glue"), "reg-vals", "vals", SCHEMA)
        d = create_channel(self, self.server, table_channel_request(
            "ch-vals", "vals", arn, WAREHOUSE, "ns_vals", "events", DLQ))
        acked = produce(k, "vals", [(f"pk{i}", text.encode()) for i, (text, _) in enumerate(CASES)])
        self.assertEqual(len(acked), len(CASES))
        good = [text for text, bad in CASES if bad is None]
        bad = {text: code for text, code in CASES if code is not None}
        wait_records(self.server, table_bucket_arn(WAREHOUSE), "ns_vals", "events", len(good))
        prefix = f"kinesis-channel/errors/ch-vals/{d['ChannelId']}/"
        lines = wait_dlq(LocalBucket(os.path.join(self.server.data_dir, "buckets", DLQ)), prefix, len(bad))
        seq_of = {data.decode(): seq for data, _, seq in acked}
        got_codes = {e["sequenceNumber"]: e["errorCode"] for _, e in lines}
        for text, code in bad.items():
            self.assertEqual(got_codes.get(seq_of[text]), code, f"{text}: {got_codes.get(seq_of[text])}")
        self.assertEqual(len(lines), len(bad), lines)
        t = read_table(catalog=self.server.endpoint + "/iceberg", warehouse=table_bucket_arn(WAREHOUSE),
                       namespace="ns_vals", table="events")
        rows = {r["id"]: {c: r[c] for c in ("id", "l", "i", "d", "amount")} for r in t["rows"]}
        self.assertEqual(len(rows), len(good), t["rows"])
        for text in good:
            want = exact(text)
            self.assertEqual(rows.get(want["id"]), want, text)


ICEBERG_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "n", "required": True, "type": "int"},
    {"id": 2, "name": "f", "required": False, "type": "float"},
    {"id": 3, "name": "l", "required": False, "type": "long"},
    {"id": 4, "name": "d", "required": False, "type": "double"},
    {"id": 5, "name": "dec", "required": False, "type": "decimal(9,2)"},
]}
CONVERT_LINES = [
    ('{"n":1,"f":3.4028234e38,"l":9007199254740993,"dec":9999999.99}', None),
    # Half way between two floats once rounded to a double: the nearest float of the text
    # is the upper one (no double rounding).
    ('{"n":2,"f":1.000000059604644775390626,"l":-9223372036854775808}', None),
    ('{"n":3,"f":3.5e38}', "VALUE_OUT_OF_RANGE"),
    ('{"n":4,"f":1e-50}', "VALUE_OUT_OF_RANGE"),
    ('{"n":5,"l":12345678901234567.5}', "TYPE_MISMATCH"),
    ('{"n":6,"l":-9223372036854775809}', "VALUE_OUT_OF_RANGE"),
    ('{"n":7,"d":-1e309}', "VALUE_OUT_OF_RANGE"),
    ('{"n":8,"dec":10000000.00}', "VALUE_OUT_OF_RANGE"),
    ('{"n":9,"dec":1.005}', "VALUE_OUT_OF_RANGE"),
    ('{"n":2147483648}', "VALUE_OUT_OF_RANGE"),
]

DUCKDB_READ = r"""
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
const [npmDir, file] = process.argv.slice(2);
const require = createRequire(join(resolve(npmDir), 'package.json'));
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);
const c = await (await DuckDBInstance.create(':memory:')).connect();
const r = await c.runAndReadAll(`SELECT n, CAST(f AS DOUBLE)::VARCHAR AS f, l::VARCHAR AS l, d, dec::VARCHAR AS dec
                                 FROM read_parquet('${file}') ORDER BY n`);
console.log(JSON.stringify(r.getRowObjectsJson()));
"""


class ConvertValues(unittest.TestCase):
    def test_convert_refuses_what_a_column_cannot_hold(self):
        with tempfile.TemporaryDirectory() as d:
            schema = os.path.join(d, "s.json")
            inp = os.path.join(d, "in.jsonl")
            out = os.path.join(d, "out.parquet")
            with open(schema, "w") as f:
                json.dump(ICEBERG_SCHEMA, f)
            with open(inp, "w") as f:
                f.write("\n".join(t for t, _ in CONVERT_LINES) + "\n")
            p = subprocess.run([harness.BINARY, "convert", "--schema", schema, "--input", inp, "--output", out],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("rows written: 2", p.stdout)
            codes = {}
            for line in p.stderr.splitlines():
                if line.startswith("line "):
                    num, code = line[5:].split(": ")[:2]
                    codes[int(num)] = code
            want = {i + 1: c for i, (_, c) in enumerate(CONVERT_LINES) if c}
            self.assertEqual(codes, want, p.stderr)
            script = os.path.join(d, "read.mjs")
            with open(script, "w") as f:
                f.write(DUCKDB_READ)
            r = subprocess.run(["node", script, npm_dir(), out], capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = json.loads(r.stdout)
            self.assertEqual([row["l"] for row in rows], ["9007199254740993", "-9223372036854775808"])
            self.assertEqual([row["dec"] for row in rows], ["9999999.99", None])
            self.assertEqual(float(rows[0]["f"]), 3.4028234663852886e38)
            self.assertEqual(float(rows[1]["f"]), 1.0000001192092896)  # not 1.0


if __name__ == "__main__":
    unittest.main(verbosity=2)

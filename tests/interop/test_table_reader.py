"""Self-check of the independent table reader (tests/lib/read_table.mjs) used by the
streaming-table suites, on tables it did not write and we know the content of:

- a partitioned v2 table written by the test tool `iceberg_tool write` (four appends, a
  compaction, one more append): icebird and DuckDB agree, and the rows, live files,
  partition values and record counts equal what the tool reports it wrote;
- the same table with one data file removed, and with two data files swapped: the
  reader fails loudly instead of returning wrong rows;
- a metadata location that does not exist fails too.

Usage: ICEBERG_TOOL=build/ci/tests/iceberg_tool python3 test_table_reader.py"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from decimal import Decimal

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from table_check import ReadError, assert_rows, read_table, ts_micros  # noqa: E402

TOOL = os.environ.get("ICEBERG_TOOL", "")


class Reader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not TOOL:
            raise RuntimeError("set ICEBERG_TOOL to the iceberg_tool binary")
        cls.dir = tempfile.mkdtemp(prefix="table-reader-")
        p = subprocess.run([TOOL, "write", os.path.join(cls.dir, "t"), "29"], capture_output=True, text=True, check=True)
        cls.info = json.loads(p.stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_rows_files_and_partitions_match_the_writer(self):
        t = read_table(metadata_location=self.info["metadata_location"])
        self.assertEqual(t["format_version"], 2)
        self.assertEqual(t["current_snapshot_id"], self.info["current_snapshot_id"])
        self.assertEqual(len(t["snapshots"]), len(self.info["commits"]))
        self.assertEqual(t["icebird_rows"], len(self.info["rows"]))
        want = [{"id": r["id"], "ts": ts_micros(r["ts"]), "kind": r["kind"],
                 "amount": str(Decimal(repr(r["amount"])).quantize(Decimal("0.01"))), "tags": r["tags"]}
                for r in self.info["rows"]]
        assert_rows(self, t["rows"], want, "id")
        live = {f["file_path"]: f for f in self.info["live_files"]}
        self.assertEqual({f["file_path"] for f in t["files"]}, set(live))
        for f in t["files"]:
            x = live[f["file_path"]]
            self.assertEqual(f["record_count"], x["record_count"])
            self.assertEqual(f["file_size_in_bytes"], x["file_size_in_bytes"])
            self.assertEqual([f["partition"]["ts_day"], f["partition"]["kind"]], x["partition"])
            self.assertEqual(f["sequence_number"], x["added_sequence_number"])
            self.assertEqual(len(f["codecs"]), 1)

    def test_missing_data_file_fails(self):
        victim = self.info["live_files"][0]["file_path"][len("file://"):]
        saved = victim + ".saved"
        os.rename(victim, saved)
        try:
            with self.assertRaises(ReadError) as cm:
                read_table(metadata_location=self.info["metadata_location"])
            self.assertIn(os.path.basename(victim), str(cm.exception))
        finally:
            os.rename(saved, victim)

    def test_swapped_data_files_fail(self):
        a, b = [f["file_path"][len("file://"):] for f in self.info["live_files"][:2]]
        tmp = a + ".swap"
        os.rename(a, tmp)
        os.rename(b, a)
        os.rename(tmp, b)
        try:
            with self.assertRaises(ReadError):
                read_table(metadata_location=self.info["metadata_location"], skip_icebird=True)
        finally:
            os.rename(a, tmp)
            os.rename(b, a)
            os.rename(tmp, b)
        read_table(metadata_location=self.info["metadata_location"], skip_icebird=True)

    def test_missing_metadata_fails(self):
        with self.assertRaises(ReadError):
            read_table(metadata_location=self.info["metadata_location"].replace(".metadata.json", "-x.metadata.json"))


if __name__ == "__main__":
    unittest.main(verbosity=2)

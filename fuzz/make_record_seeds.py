#!/usr/bin/env python3
"""Writes the seed corpora of the producer-record fuzz targets (gsr_frame_fuzzer,
kpl_fuzzer) into fuzz/corpus/{gsr_frame,kpl}/ with the project's own test-side encoders
(tests/lib/gsr.py, tests/lib/kpl.py), which were written from the format descriptions and
not from the server's parsers. Deterministic: rerunning it rewrites the same files.

    python3 fuzz/make_record_seeds.py"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))

import gsr  # noqa: E402
import kpl  # noqa: E402

VID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


def write(corpus, name, data):
    d = os.path.join(HERE, "corpus", corpus)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    doc = {"id": 7, "name": "h\u00e9llo", "tags": ["a", "b"], "nested": {"x": 1.5, "y": None}}
    write("gsr_frame", "plain_json", gsr.encode(VID, doc))
    write("gsr_frame", "zlib_json", gsr.encode(VID, doc, compress=True))
    write("gsr_frame", "zlib_large", gsr.encode(VID, {"pad": "x" * 70000}, compress=True))
    write("gsr_frame", "empty_payload", gsr.encode(VID, b""))

    write("kpl", "one_record", kpl.aggregate([kpl.UserRecord(b'{"a":1}', partition_key="user-1")]))
    write("kpl", "three_records_shared_keys", kpl.aggregate([
        kpl.UserRecord(b"first", partition_key="k1"),
        kpl.UserRecord(b"second", partition_key="k2", explicit_hash_key="170141183460469231731687303715884105728"),
        kpl.UserRecord(b"third", partition_key="k1", tags=[("t", "v"), ("bare", None)]),
    ]))
    write("kpl", "index_out_of_table",
          kpl.frame(kpl.encode_protobuf([kpl.UserRecord(b"x", partition_key="missing")], pk_table=["other"])))
    write("kpl", "bad_md5", kpl.frame(kpl.encode_protobuf([kpl.UserRecord(b"x")]), md5=bytes(16)))
    write("kpl", "plain_record", b'{"not":"aggregated"}')


if __name__ == "__main__":
    main()

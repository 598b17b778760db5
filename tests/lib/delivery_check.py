"""Shared checks for S3 delivery tests: produce records, wait until they are delivered,
and verify exactly-once, per-shard order, key layout and the DLQ."""

import gzip
import json
import os
import re
import time

import zstandard_shim as zshim


def decompress(key, body):
    if key.endswith(".gz") or body[:2] == b"\x1f\x8b":
        return gzip.decompress(body)
    if key.endswith(".zst") or body[:4] == b"\x28\xb5\x2f\xfd":
        return zshim.decompress(body)
    return body


SUFFIX = re.compile(r"-(\d{18})-(\d{6})-([0-9a-f]{11})")


def parse_suffix(key):
    m = None
    for m in SUFFIX.finditer(key):
        pass
    if not m:
        raise AssertionError(f"no 38-character suffix in {key}")
    return int(m.group(1)), int(m.group(2)), m


class LocalBucket:
    def __init__(self, root):
        self.root = root

    def objects(self, prefix=""):
        out = {}
        if not os.path.isdir(self.root):
            return out
        for d, _, files in os.walk(self.root):
            for f in files:
                if ".tmp-" in f:
                    continue
                path = os.path.join(d, f)
                key = os.path.relpath(path, self.root)
                if key.startswith(prefix):
                    with open(path, "rb") as fh:
                        out[key] = fh.read()
        return out


class S3Bucket:
    def __init__(self, s3, bucket):
        self.s3, self.bucket = s3, bucket

    def objects(self, prefix=""):
        out = {}
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for o in page.get("Contents", []):
                out[o["Key"]] = self.s3.get_object(Bucket=self.bucket, Key=o["Key"])["Body"].read()
        return out


def produce(kinesis, stream, records, batch=400):
    """records: list of (partition_key, data bytes). Returns list of (data, shard, seq) for
    acknowledged records (retrying failed entries)."""
    acked = []
    pending = list(records)
    while pending:
        chunk, pending = pending[:batch], pending[batch:]
        r = kinesis.put_records(StreamName=stream, Records=[{"Data": d, "PartitionKey": k} for k, d in chunk])
        retry = []
        for (k, d), res in zip(chunk, r["Records"]):
            if "SequenceNumber" in res:
                acked.append((d, res["ShardId"], res["SequenceNumber"]))
            else:
                retry.append((k, d))
        pending = retry + pending
    return acked


def split_records(fmt, body):
    if fmt == "BYTE_ARRAY":
        return [body]
    lines = body.split(b"\n")
    assert lines[-1] == b"", "every record ends with a newline"
    return lines[:-1]


def wait_delivered(bucket, prefix, expected, fmt, timeout=60):
    """Waits until `expected` records (for BYTE_ARRAY: bytes) are in objects under prefix."""
    deadline = time.time() + timeout
    n = 0
    while time.time() < deadline:
        objs = bucket.objects(prefix)
        if fmt == "BYTE_ARRAY":
            n = sum(len(decompress(k, v)) for k, v in objs.items())
        else:
            n = sum(len(split_records(fmt, decompress(k, v))) for k, v in objs.items())
        if n >= expected:
            return objs
        time.sleep(0.25)
    expected_count = expected
    raise AssertionError(f"only {n} of {expected_count} records delivered under {prefix}")


def verify_exactly_once(tc, objs, acked_valid, fmt, template_regex=None):
    """Every acknowledged valid record exactly once, per-shard order, key shapes."""
    by_shard = {}
    for key, body in objs.items():
        first, shard, _ = parse_suffix(key)
        if template_regex is not None:
            tc.assertRegex(key, template_regex)
        recs = split_records(fmt, decompress(key, body))
        by_shard.setdefault(shard, []).append((first, key, recs))
    got_by_shard = {}
    for shard, items in by_shard.items():
        items.sort()
        firsts = [f for f, _, _ in items]
        tc.assertEqual(len(firsts), len(set(firsts)), f"two objects start at the same record in shard {shard}")
        got_by_shard[shard] = [r for _, _, recs in items for r in recs]
    want_by_shard = {}
    for data, shard_id, seq in sorted(acked_valid, key=lambda x: (x[1], int(x[2]))):
        want_by_shard.setdefault(int(shard_id.split("-")[1]), []).append(data)
    if fmt == "BYTE_ARRAY":
        # Objects hold raw concatenations: compare the bytes per shard.
        for shard in set(want_by_shard) | set(got_by_shard):
            tc.assertEqual(b"".join(got_by_shard.get(shard, [])), b"".join(want_by_shard.get(shard, [])), f"shard {shard}")
        return
    tc.assertEqual(sorted(got_by_shard), sorted(want_by_shard))
    for shard in want_by_shard:
        tc.assertEqual(got_by_shard[shard], want_by_shard[shard], f"shard {shard}: records missing, duplicated or out of order")


def dlq_entries(objs):
    out = []
    for key, body in objs.items():
        for line in body.decode().splitlines():
            out.append(json.loads(line))
    return out

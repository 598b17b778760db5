"""Checks for streaming-table channels (stream -> Iceberg table), black-box:

- `read_table(...)` runs tests/lib/read_table.mjs, the independent reader (REST catalog
  over plain HTTP, icebird for every row, avsc for the manifests, DuckDB for every live
  data file; both readers must agree) and returns its JSON: metadata, snapshots, live
  files with partition values and codecs, and the rows in canonical form.
- `canonical(value, iceberg_type)` turns a value of an input JSON record into the same
  canonical form, computed here in Python from the record text, so rows can be compared
  exactly: longs/timestamps as exact ints (micros), decimals as strings with the
  column's scale, dates as "YYYY-MM-DD", time as micros, uuids lower case, binary as
  hex, structs/maps as dicts (missing optional members -> None), lists as lists.
- registry and channel helpers, a DLQ reader, /metrics parsing.
"""

import base64
import calendar
import json
import os
import re
import subprocess
import time
import urllib.request
from decimal import Decimal

from harness import ACCOUNT, REGION, kinesis_call

HERE = os.path.dirname(os.path.abspath(__file__))
READER = os.path.join(HERE, "read_table.mjs")


def npm_dir():
    d = os.environ.get("ICESTREAM_NPM_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".cache", "npm"))
    for pkg in ("icebird", "avsc", "@duckdb/node-api", "iceberg-js"):
        if not os.path.isdir(os.path.join(d, "node_modules", pkg)):
            raise RuntimeError(f"npm package {pkg} missing under {d}: run scripts/install-deps")
    return d


class ReadError(AssertionError):
    pass


def read_table(catalog=None, warehouse=None, namespace=None, table=None, metadata_location=None, s3=None,
               snapshot_id=None, skip_icebird=False, file_keys=None, timeout=300):
    """The table as the independent reader sees it (see read_table.mjs). catalog is the
    REST base URL (<server>/iceberg). s3 = (endpoint, access_key, secret_key) for s3://
    locations. file_keys: a column whose values each file of "files" lists ("keys").
    Returns {"exists": False} when the catalog answers 404."""
    cmd = ["node", READER, npm_dir()]
    if metadata_location:
        cmd += ["--metadata-location", metadata_location]
    else:
        cmd += ["--catalog", catalog, "--warehouse", warehouse, "--namespace", namespace, "--table", table]
    if s3:
        cmd += ["--s3-endpoint", s3[0], "--access-key", s3[1], "--secret-key", s3[2]]
    if snapshot_id:
        cmd += ["--snapshot-id", str(snapshot_id)]
    if skip_icebird:
        cmd += ["--skip-icebird"]
    if file_keys:
        cmd += ["--file-keys", file_keys]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise ReadError(f"read_table.mjs failed ({p.returncode}): {p.stderr.strip()[-3000:]}")
    return json.loads(p.stdout)


# ------------------------------------------------------------------ canonical values

_TS = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)?$")
_TIME = re.compile(r"^(\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)?$")


def _offset_seconds(off):
    if not off or off in "Zz":
        return 0
    sign = -1 if off[0] == "-" else 1
    return sign * (int(off[1:3]) * 3600 + int(off[4:6]) * 60)


def ts_micros(text):
    """RFC 3339 date-time -> microseconds since the epoch (fraction truncated to 6 digits)."""
    m = _TS.match(text)
    if not m:
        raise ValueError(f"not a date-time: {text}")
    y, mo, d, h, mi, s, frac, off = m.groups()
    secs = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(s))) - _offset_seconds(off)
    return secs * 1_000_000 + int(((frac or "") + "000000")[:6])


def time_micros(text):
    m = _TIME.match(text)
    if not m:
        raise ValueError(f"not a time: {text}")
    h, mi, s, frac, off = m.groups()
    secs = (int(h) * 3600 + int(mi) * 60 + int(s) - _offset_seconds(off)) % 86400
    return secs * 1_000_000 + int(((frac or "") + "000000")[:6])


def iso_micros(micros):
    """Microseconds since the epoch -> RFC 3339 UTC text with 6 fraction digits."""
    secs, us = divmod(micros, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{us:06d}Z"


def _decimal_scale(t):
    m = re.match(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$", t)
    return int(m.group(2)) if m else None


def canonical(v, t):
    """Value of an input JSON record (parsed with parse_float=Decimal) -> canonical form
    of Iceberg type t."""
    if v is None:
        return None
    if isinstance(t, dict):
        if t["type"] == "struct":
            return {f["name"]: canonical(v.get(f["name"]), f["type"]) for f in t["fields"]}
        if t["type"] == "list":
            return [canonical(x, t["element"]) for x in v]
        if t["type"] == "map":
            return {k: canonical(x, t["value"]) for k, x in v.items()}
        raise ValueError(t)
    scale = _decimal_scale(t)
    if scale is not None:
        return str(Decimal(v).quantize(Decimal(1).scaleb(-scale)))
    if t in ("int", "long"):
        return int(v)
    if t in ("double", "float"):
        return float(v)
    if t in ("timestamptz", "timestamp"):
        return ts_micros(v)
    if t == "time":
        return time_micros(v)
    if t == "uuid":
        return v.lower()
    if t == "binary":
        return base64.b64decode(v).hex()
    return v  # string, date, boolean


def expected_row(record, schema):
    """The row a valid record becomes: every top-level column, extra members dropped,
    missing optional ones null. record: dict (parse_float=Decimal) or JSON text."""
    if isinstance(record, (bytes, str)):
        record = json.loads(record, parse_float=Decimal)
    return {f["name"]: canonical(record.get(f["name"]), f["type"]) for f in schema["fields"]}


def assert_rows(tc, got, want, key):
    """Rows equal as multisets, compared by `key` (a unique column) with a readable diff."""
    got_by = {}
    for r in got:
        got_by.setdefault(r[key], []).append(r)
    dups = {k: len(v) for k, v in got_by.items() if len(v) > 1}
    tc.assertFalse(dups, f"rows delivered more than once: {list(dups.items())[:10]}")
    want_by = {r[key]: r for r in want}
    missing = sorted(set(want_by) - set(got_by), key=str)
    extra = sorted(set(got_by) - set(want_by), key=str)
    tc.assertFalse(missing, f"{len(missing)} rows missing, e.g. {missing[:10]}")
    tc.assertFalse(extra, f"{len(extra)} unexpected rows, e.g. {extra[:10]}")
    for k, w in want_by.items():
        tc.assertEqual(got_by[k][0], w, f"row {key}={k}")


def last_sequence_by_shard(records):
    """{shard: its highest sequence number} of (data, shard, sequence) triples."""
    out = {}
    for _, shard, seq in records:
        if shard not in out or int(seq) > int(out[shard]):
            out[shard] = seq
    return out


def assert_children_after_parents(tc, shards, records, snapshots, min_children=3):
    """Children after parents: the first snapshot that checkpoints a child shard holds each
    parent at its last record. shards: ListShards' Shards (with at least `min_children`
    children: the stream was resharded); records: every (data, shard, sequence) of the stream."""
    parents = {s["ShardId"]: [p for p in (s.get("ParentShardId"), s.get("AdjacentParentShardId")) if p]
               for s in shards}
    tc.assertGreaterEqual(sum(1 for p in parents.values() if p), min_children, parents)
    last = last_sequence_by_shard(records)
    snaps = sorted(snapshots, key=lambda s: s["sequence_number"])
    for child, ps in parents.items():
        if not ps or child not in last:
            continue
        first = next((s for s in snaps if f"icestream.checkpoint.{child}" in s["summary"]), None)
        tc.assertIsNotNone(first, f"no snapshot checkpoints {child}, which holds records")
        for p in ps:
            if p in last:
                tc.assertEqual(first["summary"].get(f"icestream.checkpoint.{p}"), last[p],
                               f"{child} committed before its parent {p} was complete")
    return last


# ------------------------------------------------------------------ registry, channel

def schema_arn(registry, name):
    return f"arn:aws:glue:{REGION}:{ACCOUNT}:schema/{registry}/{name}"


def register_schema(glue, registry, name, definition, data_format="JSON"):
    """Creates the registry if needed and the schema; returns (schema ARN, version id)."""
    try:
        glue.create_registry(RegistryName=registry)
    except glue.exceptions.AlreadyExistsException:
        pass
    r = glue.create_schema(RegistryId={"RegistryName": registry}, SchemaName=name, DataFormat=data_format,
                           Compatibility="NONE",
                           SchemaDefinition=definition if isinstance(definition, str) else json.dumps(definition))
    return r["SchemaArn"], r["SchemaVersionId"]


def table_bucket_arn(bucket):
    return f"arn:aws:s3tables:{REGION}:{ACCOUNT}:bucket/{bucket}"


def table_channel_request(name, stream, schema, table_bucket, namespace, table, dlq_bucket,
                          compression="ZSTD", freshness=1, partition="event_time", fmt="JSON",
                          start=None, dlq_prefix=None, **extra):
    dlq = {"BucketARN": f"arn:aws:s3:::{dlq_bucket}", "ExpectedBucketOwner": ACCOUNT}
    if dlq_prefix:
        dlq["ErrorOutputPrefix"] = dlq_prefix
    tconf = {"TableBucketARN": table_bucket_arn(table_bucket), "Namespace": namespace, "TableName": table,
             "CompressionType": compression}
    if partition is not None:
        tconf["PartitionSpec"] = {"PartitionFields": [{"SourceName": partition, "Transform": "TIME_HOUR"}]}
    dest = {"DeadLetterQueueS3Configuration": dlq, "S3TablesConfigurationList": [tconf]}
    if freshness is not None:
        dest["DataFreshnessInSeconds"] = freshness
    sc = {"StreamARN": f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{stream}",
          "RecordConfiguration": {"RecordFormatType": fmt, "GSRSchemaARN": schema}}
    if start:
        sc["StartingPosition"] = {"Type": start} if isinstance(start, str) else start
    req = {"ChannelName": name, "ServiceExecutionRoleARN": f"arn:aws:iam::{ACCOUNT}:role/delivery-role",
           "StreamConfigurationList": [sc], "S3TablesDestinationConfiguration": dest}
    req.update(extra)
    return req


def create_channel(tc, server, req, status="ACTIVE", timeout=30):
    from harness import wait_channel
    st, body = kinesis_call(server, "CreateChannel", req)
    tc.assertEqual(st, 200, body)
    return wait_channel(server, body["ChannelDescription"]["ChannelARN"], status=status, timeout=timeout)


def describe(server, arn):
    st, body = kinesis_call(server, "DescribeChannel", {"ChannelARN": arn})
    if st != 200:
        raise AssertionError(f"DescribeChannel: {st} {body}")
    return body["ChannelDescription"]


# ------------------------------------------------------------------ waiting

def wait_table_rows(read, count, timeout=90, what="rows"):
    """Calls read() (-> read_table result) until it has >= count rows; returns it."""
    deadline = time.time() + timeout
    last = None
    while True:
        last = read()
        n = len(last.get("rows", [])) if last.get("exists") else 0
        if n >= count or time.time() > deadline:
            if n < count:
                raise AssertionError(f"only {n} of {count} {what} in the table after {timeout} s")
            return last
        time.sleep(0.5)


# ------------------------------------------------------------------ DLQ, metrics

def dlq_lines(bucket, prefix=""):
    """Every JSON line of every DLQ object under prefix: [(key, dict)]."""
    out = []
    for key, body in bucket.objects(prefix).items():
        for line in body.decode().splitlines():
            if line.strip():
                out.append((key, json.loads(line)))
    return out



def wait_dlq(bucket, prefix, count, timeout=60):
    deadline = time.time() + timeout
    lines = []
    while time.time() < deadline:
        lines = dlq_lines(bucket, prefix)
        if len(lines) >= count:
            return lines
        time.sleep(0.3)
    raise AssertionError(f"{len(lines)} of {count} DLQ lines under {prefix}")

def metrics(server):
    with urllib.request.urlopen(server.endpoint + "/metrics", timeout=5) as r:
        return r.read().decode()


def metric(text, name, channel):
    """Value of DeliveryToIceberg_<name>{channel_name="<channel>",...}, or None."""
    for m in re.finditer(r'^DeliveryToIceberg_' + re.escape(name) + r'\{([^}]*)\} ([0-9.eE+-]+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if labels.get("channel_name") == channel:
            return float(m.group(2)), labels
    return None


def rows_by_file(t):
    """{file_path: [rows]} of a read_table result (rows come file by file, in order)."""
    out, i = {}, 0
    for f in t["files"]:
        out[f["file_path"]] = t["rows"][i:i + f["record_count"]]
        i += f["record_count"]
    if i != len(t["rows"]):
        raise AssertionError(f"{len(t['rows'])} rows but the files hold {i}")
    return out


def rest_metadata(server, warehouse, namespace, table):
    """{"metadata-location", "metadata"} through the REST catalog over plain HTTP, or None."""
    import urllib.error
    base = server.endpoint + "/iceberg"
    with urllib.request.urlopen(f"{base}/v1/config?warehouse={warehouse}", timeout=10) as r:
        prefix = json.loads(r.read())["overrides"]["prefix"]
    try:
        with urllib.request.urlopen(f"{base}/v1/{prefix}/namespaces/{namespace}/tables/{table}", timeout=10) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def total_records(server, warehouse, namespace, table):
    """total-records of the table's current snapshot (0 when there is none)."""
    t = rest_metadata(server, warehouse, namespace, table)
    if not t:
        return 0
    md = t["metadata"]
    cur = md.get("current-snapshot-id")
    for s in md.get("snapshots", []):
        if s["snapshot-id"] == cur:
            return int(s["summary"].get("total-records", 0))
    return 0


def wait_records(server, warehouse, namespace, table, count, timeout=90):
    """Waits until the current snapshot holds >= count rows."""
    deadline = time.time() + timeout
    n = 0
    while time.time() < deadline:
        try:
            n = total_records(server, warehouse, namespace, table)
        except OSError:
            n = n  # the server may be restarting
        if n >= count:
            return n
        time.sleep(0.3)
    raise AssertionError(f"table {namespace}.{table} has {n} of {count} rows after {timeout} s")

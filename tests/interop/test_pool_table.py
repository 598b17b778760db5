"""One streaming table written by a whole pool, black-box: `icestream serve --pg` and an
`icestream worker` share two table channels of 4-shard streams (one GSR_JSON, one JSON).
Each process holds some of each table's shards, converts them and stages the files; the
first writer with a valid record creates the table, and the holder of the channel's
control unit commits and evolves the schema when a shard writer asks for it:

- the table is created by the first valid record, wherever its shard is converted;
- a GSR_JSON record of a newer compatible version, converted by either process, evolves
  the table once (the writer asks the owner, then writes with the evolved schema);
- a JSON channel follows a newer compatible registry version the same way;
- every record is a row exactly once (the independent reader: icebird + DuckDB through
  the REST catalog), rows before the evolution read with nulls in the new column;
- every table commit was made under a control lease that was granted, and nothing is
  left staged.

PostgreSQL comes from tests/lib/pg.py, which fails the test when it cannot start one."""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import gsr  # noqa: E402
import harness  # noqa: E402
from delivery_check import produce  # noqa: E402
from harness import Server, kinesis_call, wait_channel  # noqa: E402
from pg import PgCluster  # noqa: E402
from table_check import (assert_rows, expected_row, read_table, register_schema, table_bucket_arn,  # noqa: E402
                         table_channel_request, ts_micros, iso_micros, wait_records)

WAREHOUSE = "pool-tables"
V1 = {"type": "object", "required": ["id", "t"],
      "properties": {"id": {"type": "integer"}, "t": {"type": "string", "format": "date-time"},
                     "name": {"type": "string"}}}
V2 = json.loads(json.dumps(V1))
V2["properties"]["color"] = {"type": "string"}
BASE = ts_micros("2026-06-01T08:00:00Z")


def rec(i, **extra):
    r = {"id": i, "t": iso_micros(BASE + (i * 7919) % 3_600_000_000), "name": f"n{i}"}
    r.update(extra)
    return r


class PoolTable(unittest.TestCase):
    def read(self, server, ns):
        return read_table(catalog=server.endpoint + "/iceberg", warehouse=table_bucket_arn(WAREHOUSE),
                          namespace=ns, table="events")

    def shard_owners(self, pg, db, channel_id):
        out = pg.psql(f"SELECT count(DISTINCT owner) FROM icestream_lease WHERE channel_id = '{channel_id}' "
                      "AND unit LIKE 'shard:%' AND owner IS NOT NULL AND expires_at > clock_timestamp()", db)
        return int(out or 0)

    def test_one_table_converted_by_two_processes_and_evolved_by_its_owner(self):
        tmp = tempfile.mkdtemp(prefix="icestream-ptable-")
        config = os.path.join(tmp, "pool.toml")
        with open(config, "w") as f:
            f.write("[scaleout]\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n")
        procs = []
        with PgCluster() as pg:
            conninfo = pg.create_database("ptable")
            server = Server(extra_args=["--pg", conninfo, "--config", config]).start()
            try:
                k = server.client()
                g = server.client("glue")
                channels = {}
                for fmt in ("GSR_JSON", "JSON"):
                    tag = fmt.lower().replace("_", "")
                    k.create_stream(StreamName=f"s-{tag}", StreamModeDetails={"StreamMode": "ON_DEMAND"})  # 4 shards
                    arn, vid = register_schema(g, f"reg-{tag}", "events", V1)
                    st, body = kinesis_call(server, "CreateChannel", table_channel_request(
                        f"ch-{tag}", f"s-{tag}", arn, WAREHOUSE, f"ns_{tag}", "events", "pool-dlq",
                        fmt=fmt, freshness=1, partition="t"))
                    self.assertEqual(st, 200, body)
                    d = body["ChannelDescription"]
                    wait_channel(server, d["ChannelARN"], timeout=60)
                    channels[tag] = (arn, vid, d["ChannelId"])

                port = harness.free_port()
                wlog = open(os.path.join(tmp, "worker.log"), "ab")
                w = subprocess.Popen([harness.BINARY, "worker", "--pg", conninfo, "--source", server.endpoint,
                                      "--data-dir", server.data_dir, "--listen", f"127.0.0.1:{port}",
                                      "--config", config, "--log-level", "info"],
                                     stdout=wlog, stderr=subprocess.STDOUT)
                procs.append(w)
                # Both processes hold shards of each table before anything is written.
                deadline = time.time() + 60
                while not all(self.shard_owners(pg, "ptable", cid) == 2 for _, _, cid in channels.values()):
                    self.assertLess(time.time(), deadline, pg.psql(
                        "SELECT channel_id, unit, owner FROM icestream_lease ORDER BY 1, 2", "ptable"))
                    time.sleep(0.3)

                rng = random.Random(16)
                # Version 1 everywhere: the tables are created by the first writer with a row.
                first = [rec(i) for i in range(1, 201)]
                produce(k, "s-gsrjson", [(f"pk{i}", gsr.encode(channels["gsrjson"][1], r)) for i, r in enumerate(first)])
                produce(k, "s-json", [(f"pk{i}", json.dumps(r).encode()) for i, r in enumerate(first)])
                for tag in channels:
                    wait_records(server, table_bucket_arn(WAREHOUSE), f"ns_{tag}", "events", len(first), timeout=120)

                # Version 2: GSR records name it (mixed with version 1 ones on every shard); the
                # JSON channel follows it from the registry.
                vids = {}
                for tag, (arn, _, _) in channels.items():
                    r = g.register_schema_version(SchemaId={"SchemaArn": arn}, SchemaDefinition=json.dumps(V2))
                    vids[tag] = r["SchemaVersionId"]
                second = [rec(i, color=f"c{i}") if i % 2 else rec(i) for i in range(201, 601)]
                gsr_batch = [(f"q{i}", gsr.encode(vids["gsrjson"] if "color" in r else channels["gsrjson"][1], r))
                             for i, r in enumerate(second)]
                rng.shuffle(gsr_batch)
                produce(k, "s-gsrjson", gsr_batch)
                # The JSON channel follows the new version at its next batch; until then a
                # record with the new member is written without it (extra members dropped),
                # so its records go after the version is seen: wait for the evolution first.
                deadline = time.time() + 120
                while "color" not in [f["name"] for f in self.read(server, "ns_json")["schema"]["fields"]]:
                    produce(k, "s-json", [("tick", json.dumps(rec(10_000 + int(time.time() * 1000) % 1_000_000)).encode())])
                    self.assertLess(time.time(), deadline, "the JSON channel's table never evolved")
                    time.sleep(1)
                ticks = [r for r in self.read(server, "ns_json")["rows"] if r["id"] >= 10_000]
                produce(k, "s-json", [(f"q{i}", json.dumps(r).encode()) for i, r in enumerate(second)])

                for tag in channels:
                    extra = len(ticks) if tag == "json" else 0
                    total = len(first) + len(second) + extra
                    wait_records(server, table_bucket_arn(WAREHOUSE), f"ns_{tag}", "events", total, timeout=120)
                    t = self.read(server, f"ns_{tag}")
                    names = [f["name"] for f in t["schema"]["fields"]]
                    self.assertEqual(names, ["id", "t", "name", "color"], f"{tag}: {t['schema']}")
                    self.assertEqual(t["properties"].get("icestream.schema-version-id"), vids[tag])
                    want = [expected_row(json.dumps(r), t["schema"]) for r in first + second]
                    if tag == "json":
                        want += [r for r in t["rows"] if r["id"] >= 10_000]  # the ticks, checked for count below
                    assert_rows(self, t["rows"], want, "id")
                    by_id = {r["id"]: r for r in t["rows"]}
                    self.assertIsNone(by_id[1]["color"])
                    self.assertEqual(by_id[201]["color"], "c201")
                    self.assertIsNone(by_id[202]["color"])

                    cid = channels[tag][2]
                    granted = {tuple(line.split("|")) for line in pg.psql(
                        f"SELECT owner, epoch FROM icestream_lease_history WHERE channel_id = '{cid}' "
                        "AND unit = 'control'", "ptable").splitlines() if line}
                    commits = [tuple(line.split("|")) for line in pg.psql(
                        f"SELECT owner, epoch FROM icestream_commit_log WHERE channel_id = '{cid}'",
                        "ptable").splitlines() if line]
                    self.assertGreater(len(commits), 1)
                    for c in commits:
                        self.assertIn(c, granted, f"{tag}: a commit under a lease that was never granted")
                    deadline = time.time() + 15
                    while pg.psql(f"SELECT count(*) FROM icestream_staged WHERE channel_id = '{cid}'",
                                  "ptable").strip() != "0":
                        self.assertLess(time.time(), deadline, f"{tag}: staged batches left uncommitted")
                        time.sleep(0.5)
                    # The owner's evolution: one schema change, made once.
                    self.assertEqual(t["schemas"], 2, f"{tag}: the table's schemas")
                w.terminate()
                self.assertEqual(w.wait(30), 0)
                wlog.close()
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
                server.stop()
                server.cleanup()
                shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()

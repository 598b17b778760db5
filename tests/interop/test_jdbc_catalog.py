"""The PostgreSQL catalog as Java engines see it, black-box: `icestream serve --pg` delivers
a stream into a streaming table (catalog rows in PostgreSQL's Iceberg JDBC-catalog tables)
while tests/interop/JdbcCatalogCheck.java — Apache Iceberg's JdbcUtil statements through
Debian's PostgreSQL JDBC driver on the installed JDK — detects the schema version, lists
and loads the table, and commits new metadata files with the V1 and the V0 pointer swap,
concurrently with the channel's commits. Afterwards:

- Java detected V1 (the iceberg_type column) and the namespace table, and listed the table;
- Java's commits landed (the table's properties carry its last one) and icestream's
  commits that lost the race to Java's reloaded the table and committed on top of it;
- every record of the stream is a row exactly once (icebird + DuckDB through the REST
  catalog, which serves the same rows);
- the REST catalog and the JDBC rows name the same metadata file.
Java, the driver and PostgreSQL come from Debian (scripts/install-deps); a missing one
fails the test."""

import json
import os
import random
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, kinesis_call, read_stream, wait_channel  # noqa: E402
from pg import PgCluster  # noqa: E402
from table_check import (assert_rows, expected_row, read_table, register_schema, rest_metadata,  # noqa: E402
                         table_bucket_arn, table_channel_request, wait_records)

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "JdbcCatalogCheck.java")
DRIVER = "/usr/share/java/postgresql.jar"
STREAM, NS, TABLE, BUCKET = "jdbc-src", "jdbc", "events", "jdbc-tables"
SCHEMA = {"type": "object", "required": ["id"],
          "properties": {"id": {"type": "string"}, "n": {"type": "integer"}, "p": {"type": "string"},
                         "t": {"type": "string", "format": "date-time"}}}


class JdbcCatalog(unittest.TestCase):
    def test_java_engines_statements_share_the_catalog_with_the_channel(self):
        for need in ("java", DRIVER):
            if not (os.path.exists(need) or subprocess.run(["which", need], capture_output=True).returncode == 0):
                self.fail(f"{need} is missing: run scripts/install-deps (openjdk-17-jdk-headless, "
                          "libpostgresql-jdbc-java)")
        with PgCluster() as pg:
            conninfo = pg.create_database("catalog")
            server = Server(config_text="[scaleout]\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n",
                            extra_args=["--pg", conninfo]).start()
            try:
                k = server.client()
                k.create_stream(StreamName=STREAM, StreamModeDetails={"StreamMode": "ON_DEMAND"})
                arn, _ = register_schema(server.client("glue"), "jdbc", "events", SCHEMA)
                st, body = kinesis_call(server, "CreateChannel", table_channel_request(
                    "jdbc-ch", STREAM, arn, BUCKET, NS, TABLE, "jdbc-dlq", freshness=1, partition="t"))
                self.assertEqual(st, 200, body)
                wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)
                rng = random.Random(3)
                stop = threading.Event()

                def produce():
                    n = 0
                    while not stop.is_set():
                        recs = [{"Data": json.dumps({"id": f"r{n + i}", "n": n + i, "p": "x" * rng.randint(0, 200),
                                                        "t": "2026-12-01T10:00:00Z"}).encode(),
                                 "PartitionKey": f"k{rng.randint(0, 99)}"} for i in range(100)]
                        k.put_records(StreamName=STREAM, Records=recs)
                        n += 100
                        time.sleep(0.1)

                producer = threading.Thread(target=produce, daemon=True)
                producer.start()
                wait_records(server, table_bucket_arn(BUCKET), NS, TABLE, 1, timeout=60)
                url = f"jdbc:postgresql://127.0.0.1:{pg.port}/catalog?user=postgres"
                java = subprocess.run(["java", "-cp", DRIVER, CHECK, url, BUCKET, NS, TABLE, "20"],
                                      capture_output=True, text=True, timeout=300)
                stop.set()
                producer.join(30)
                self.assertEqual(java.returncode, 0, java.stderr[-3000:])
                got = json.loads(java.stdout.strip().splitlines()[-1])
                self.assertTrue(got["v1"], got)
                self.assertTrue(got["namespace_table"], got)
                self.assertEqual(got["listed"], 1, got)
                self.assertTrue(got["namespace_listed"], got)
                self.assertTrue(got["namespace_properties"], got)
                self.assertEqual(got["commits"], 20, got)
                self.assertGreater(got["v0_commits"], 0, got)

                everything = read_stream(k, STREAM)
                wh = table_bucket_arn(BUCKET)
                wait_records(server, wh, NS, TABLE, len(everything), timeout=120)
                t = read_table(catalog=server.endpoint + "/iceberg", warehouse=wh, namespace=NS, table=TABLE)
                assert_rows(self, t["rows"], [expected_row(d, t["schema"]) for d, _, _ in everything], "id")
                # Java's last property survived the channel's later commits.
                self.assertEqual(t["properties"].get("jdbc.java.commit"), "19", t["properties"])
                # The REST catalog and the JDBC rows agree on the current metadata file.
                rest = rest_metadata(server, wh, NS, TABLE)
                row = pg.psql(f"SELECT metadata_location FROM iceberg_tables WHERE catalog_name = '{BUCKET}' "
                              f"AND table_namespace = '{NS}' AND table_name = '{TABLE}'", "catalog")
                self.assertEqual(rest["metadata-location"], row)
                ours = [s for s in t["snapshots"] if any(x.startswith("icestream.checkpoint.") for x in s["summary"])]
                # The channel committed after Java's last commit, on top of it (Java's property
                # is still there), and its metadata log names a file Java wrote.
                self.assertNotEqual(rest["metadata-location"], got["last"], "no channel commit after Java's")
                logged = {e["metadata-file"] for e in rest["metadata"].get("metadata-log", [])}
                self.assertIn(got["last"], logged)
                print(f"Java: V1 detected, {got['commits']} commits ({got['v0_commits']} with the V0 statement, "
                      f"{got['conflicts']} lost races); channel: {len(ours)} commits; {len(everything)} records "
                      "exactly once")
            finally:
                server.stop()
                server.cleanup()


if __name__ == "__main__":
    unittest.main()

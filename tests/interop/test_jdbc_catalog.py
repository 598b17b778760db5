"""The PostgreSQL catalog as Java engines see it, black-box: `icestream serve --pg` delivers
a stream into a streaming table (catalog rows in PostgreSQL's Iceberg JDBC-catalog tables)
while tests/interop/JdbcCatalogCheck.java — Apache Iceberg's JdbcUtil statements (V0 and
V1, verbatim) through Debian's PostgreSQL JDBC driver on the installed JDK — detects the
schema version, lists and loads the table, and commits new metadata files as a V1 engine
(V1 get, V1 swap) and as a V0 engine (V0 get, V0 swap), concurrently with the channel's
commits. Then, with the channel still committing, the rest of JdbcCatalog's statements run
against the same tables, each checked through icestream's REST catalog (/iceberg/v1/…):

- V0 get and list find the channel's table; the namespace statements (GET_NAMESPACE, the
  LIKE listings, GET_NAMESPACE_PROPERTIES) see its namespace;
- a namespace made by Java's createNamespace (its properties plus `exists`) is loadable
  through REST with its properties (`exists` hidden); Java's property update and removal
  show there; a namespace made through REST is seen by Java's statements;
- tables created by Java with the V1 and the V0 create statement (the V0 row has no
  iceberg_type) are loadable through REST at the metadata file Java inserted, and listed;
  a second create of the same name is refused (23505, Iceberg's AlreadyExistsException);
- a table renamed by Java (V1 and V0 rename, across namespaces) is gone under its old name
  and loadable under the new one; one renamed onto an existing table is refused;
- a table dropped by Java (V1 and V0 drop) is gone from REST; the namespace Java drops is
  gone.
Afterwards:

- Java detected V1 (the iceberg_type column) and the namespace table, and listed the table;
- Java's commits landed (the table's properties carry its last one) and icestream's
  commits that lost the race to Java's reloaded the table and committed on top of it;
- the channel committed while Java's statements ran;
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
import urllib.error
import urllib.request
import uuid

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


def rest(server, method, path, body=None):
    """(status, JSON answer) of icestream's REST catalog: path is below /iceberg/v1/."""
    req = urllib.request.Request(f"{server.endpoint}/iceberg/v1/{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


class JavaStatements:
    """JdbcCatalogCheck.java in `statements` mode: one command a call, one JSON answer."""

    def __init__(self, url, catalog):
        self.proc = subprocess.Popen(["java", "-cp", DRIVER, CHECK, "statements", url, catalog],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)

    def __call__(self, *words):
        self.proc.stdin.write("\t".join(words) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise AssertionError(f"JdbcCatalogCheck statements exited: {self.proc.stderr.read()[-3000:]}")
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode


def new_table_metadata(template, location):
    """A new, empty table's metadata (what an engine writes before its create commit): the
    channel table's schema and spec, a new uuid and location, no snapshot."""
    md = dict(template)
    md.update({"table-uuid": str(uuid.uuid4()), "location": location, "last-sequence-number": 0,
               "last-updated-ms": int(time.time() * 1000), "properties": {"created-by": "jdbc-check"},
               "current-snapshot-id": -1, "snapshots": [], "snapshot-log": [], "metadata-log": [], "refs": {}})
    for k in ("statistics", "partition-statistics"):
        md.pop(k, None)
    return md


def write_table(template_location, template, name):
    """Writes a new table's first metadata file beside the channel's table (file:// in this
    test); returns (its location, the metadata)."""
    assert template_location.startswith("file://"), template_location
    parent = template_location[len("file://"):].rsplit("/", 1)[0]
    table_dir = f"{parent}/{name}-{uuid.uuid4().hex[:8]}"
    md = new_table_metadata(template, "file://" + table_dir)
    os.makedirs(f"{table_dir}/metadata")
    path = f"{table_dir}/metadata/00000-{uuid.uuid4()}.metadata.json"
    with open(path, "w") as f:
        json.dump(md, f)
    return "file://" + path, md


class JdbcCatalog(unittest.TestCase):
    def java_statements(self, server, url):
        """The rest of JdbcUtil's statements against the tables icestream created, each
        effect checked through icestream's REST catalog. Returns a summary."""
        wh = table_bucket_arn(BUCKET)
        st, cfg = rest(server, "GET", f"config?warehouse={wh}")
        self.assertEqual(st, 200, cfg)
        prefix = cfg["overrides"]["prefix"]

        def load(ns, name):
            return rest(server, "GET", f"{prefix}/namespaces/{ns}/tables/{name}")

        def listed(ns):
            st, body = rest(server, "GET", f"{prefix}/namespaces/{ns}/tables")
            self.assertEqual(st, 200, body)
            return {t["name"] for t in body["identifiers"]}

        def namespace(ns):
            return rest(server, "GET", f"{prefix}/namespaces/{ns}")

        java = JavaStatements(url, BUCKET)
        try:
            # The channel's table through the V0 statements, its namespace through the
            # namespace statements.
            got = java("get_v0", NS, TABLE)
            self.assertEqual(len(got["rows"]), 1, got)
            self.assertEqual(got["rows"][0]["iceberg_type"], "TABLE", got)
            self.assertIn(TABLE, {r["table_name"] for r in java("list_v0", NS)["rows"]})
            self.assertEqual(java("namespace_exists", NS)["tables"], True)
            self.assertIn(NS, java("list_namespaces")["tables"])
            self.assertIn(NS, java("list_namespaces", NS[:2])["tables"])
            self.assertEqual(java("namespace_exists", "no-such-ns"), {"tables": False, "properties": False})

            # A namespace made by Java's createNamespace, changed by setProperties and
            # removeProperties, seen through REST.
            self.assertEqual(namespace("javans")[0], 404)
            self.assertEqual(java("insert_properties", "javans", "owner", "java", "comment", "x", "exists", "true"),
                             {"updated": 3})
            st, body = namespace("javans")
            self.assertEqual((st, body["properties"]), (200, {"owner": "java", "comment": "x"}), body)
            self.assertEqual(java("update_properties", "javans", "owner", "spark"), {"updated": 1})
            self.assertEqual(java("delete_properties", "javans", "comment"), {"updated": 1})
            self.assertEqual(namespace("javans")[1]["properties"], {"owner": "spark"})
            st, body = rest(server, "GET", f"{prefix}/namespaces")
            self.assertIn(["javans"], body["namespaces"])
            # A namespace made through REST, seen by Java.
            st, body = rest(server, "POST", f"{prefix}/namespaces",
                            {"namespace": ["restns"], "properties": {"made-by": "rest"}})
            self.assertEqual(st, 200, body)
            self.assertEqual(java("namespace_exists", "restns")["properties"], True)
            self.assertEqual({(r["property_key"], r["property_value"]) for r in java("properties", "restns")["rows"]},
                             {("made-by", "rest")})
            self.assertIn("restns", java("list_namespaces", "rest")["properties"])
            self.assertIn("javans", java("list_namespaces")["properties"])

            # Tables created by Java: the V1 create (iceberg_type 'TABLE') and the V0 create
            # (iceberg_type NULL), each loadable and listed through REST.
            current = load(NS, TABLE)[1]
            made = {}
            for how, ns, name in (("create_v1", "javans", "made_v1"), ("create_v0", NS, "made_v0")):
                location, md = write_table(current["metadata-location"], current["metadata"], name)
                self.assertEqual(java(how, ns, name, location), {"updated": 1})
                st, body = load(ns, name)
                self.assertEqual(st, 200, f"a table Java created ({how}) is not loadable through REST: {body}")
                self.assertEqual(body["metadata-location"], location)
                self.assertEqual(body["metadata"]["table-uuid"], md["table-uuid"])
                self.assertIn(name, listed(ns))
                made[name] = (location, md["table-uuid"])
            self.assertIsNone(java("get_v1", NS, "made_v0")["rows"][0]["iceberg_type"])
            again = java("create_v1", "javans", "made_v1", made["made_v1"][0])
            self.assertEqual(again.get("sqlstate"), "23505", again)

            # Renames, across namespaces, with each statement.
            self.assertEqual(java("rename_v1", "javans", "made_v1", NS, "renamed_v1"), {"updated": 1})
            self.assertEqual(java("rename_v0", NS, "made_v0", "javans", "renamed_v0"), {"updated": 1})
            for old_ns, old, ns, name, src in (("javans", "made_v1", NS, "renamed_v1", "made_v1"),
                                               (NS, "made_v0", "javans", "renamed_v0", "made_v0")):
                self.assertEqual(load(old_ns, old)[0], 404, f"{old_ns}.{old} is still loadable after its rename")
                self.assertNotIn(old, listed(old_ns))
                st, body = load(ns, name)
                self.assertEqual((st, body.get("metadata-location")), (200, made[src][0]), body)
                self.assertEqual(body["metadata"]["table-uuid"], made[src][1])
                self.assertIn(name, listed(ns))
            clash = java("rename_v1", NS, "renamed_v1", NS, TABLE)
            self.assertEqual(clash.get("sqlstate"), "23505", clash)
            self.assertEqual(load(NS, "renamed_v1")[0], 200)

            # Drops, and the dropped namespace.
            self.assertEqual(java("drop_v1", NS, "renamed_v1"), {"updated": 1})
            self.assertEqual(java("drop_v0", "javans", "renamed_v0"), {"updated": 1})
            self.assertEqual(java("drop_v1", NS, "renamed_v1"), {"updated": 0})
            for ns, name in ((NS, "renamed_v1"), ("javans", "renamed_v0")):
                self.assertEqual(load(ns, name)[0], 404, f"{ns}.{name} is still loadable after its drop")
                self.assertNotIn(name, listed(ns))
            self.assertEqual(java("drop_namespace", "javans"), {"updated": 2})  # owner, exists
            self.assertEqual(namespace("javans")[0], 404)
            self.assertEqual(load(NS, TABLE)[0], 200, "the channel's table is gone")
        finally:
            code = java.close()
        self.assertEqual(code, 0, "JdbcCatalogCheck statements failed")
        return made

    def test_java_engines_statements_share_the_catalog_with_the_channel(self):
        for need in ("java", DRIVER):
            if not (os.path.exists(need) or subprocess.run(["which", need], capture_output=True).returncode == 0):
                self.fail(f"{need} is missing: run scripts/install-deps (openjdk-17-jdk-headless, "
                          "libpostgresql-jdbc-java)")
        with PgCluster() as pg:
            conninfo = pg.create_database("catalog")
            server = Server(config_text="[scaleout]\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n",
                            extra_args=["--pg", conninfo]).start()
            stop = threading.Event()
            try:
                k = server.client()
                k.create_stream(StreamName=STREAM, StreamModeDetails={"StreamMode": "ON_DEMAND"})
                arn, _ = register_schema(server.client("glue"), "jdbc", "events", SCHEMA)
                st, body = kinesis_call(server, "CreateChannel", table_channel_request(
                    "jdbc-ch", STREAM, arn, BUCKET, NS, TABLE, "jdbc-dlq", freshness=1, partition="t"))
                self.assertEqual(st, 200, body)
                wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)
                rng = random.Random(3)

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
                java = subprocess.run(["java", "-cp", DRIVER, CHECK, "commits", url, BUCKET, NS, TABLE, "20"],
                                      capture_output=True, text=True, timeout=300)
                self.assertEqual(java.returncode, 0, java.stderr[-3000:])
                got = json.loads(java.stdout.strip().splitlines()[-1])
                # The other statements, while the channel keeps committing.
                before = rest_metadata(server, table_bucket_arn(BUCKET), NS, TABLE)["metadata-location"]
                made = self.java_statements(server, url)
                deadline = time.time() + 30
                while rest_metadata(server, table_bucket_arn(BUCKET), NS, TABLE)["metadata-location"] == before:
                    self.assertLess(time.time(), deadline, "the channel did not commit beside Java's statements")
                    time.sleep(0.2)
                stop.set()
                producer.join(30)
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
                print(f"Java: V1 detected, {got['commits']} commits ({got['v0_commits']} with the V0 statements, "
                      f"{got['conflicts']} lost races); {len(made)} tables created, renamed and dropped and a "
                      f"namespace made, changed and dropped through JdbcUtil's statements, seen through REST; "
                      f"channel: {len(ours)} commits; {len(everything)} records exactly once")
            finally:
                stop.set()
                server.stop()
                server.cleanup()


if __name__ == "__main__":
    unittest.main()

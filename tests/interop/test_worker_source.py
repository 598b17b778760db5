"""A worker's record source against a locked-down server, black-box: `icestream serve --pg`
with `[[credentials]]` (signatures verified) and TLS on its port, and an `icestream worker`
reading it over https with the server's certificate as its CA (`--source-ca-file`) and
SigV4-signed calls (ListShards, GetShardIterator, GetRecords in CBOR, and the Glue API's
GetSchemaVersion for a table channel). While a producer writes, the worker is stopped
with SIGTERM and started again, so its shards are handed over and taken back.
Afterwards every record is in the bucket exactly once and a row of the table exactly
once, and the worker held leases (it did deliver). A worker signing with a wrong secret
gets the server's authentication error in its log and delivers nothing.

A worker started with the server's own configuration file (top-level `listen` and
`data_dir` are the server's; `[scaleout]` names the pool and the source) and no flags but
--config comes up on its own address (`[worker] listen`, or 127.0.0.1:4568 without it),
never the server's port, and its /health and /metrics answer: /metrics is Prometheus text
whose `icestream_worker_leases` gauge counts the units /health lists, beside the delivery
metrics of the channel it delivers.

A worker paused (SIGSTOP) longer than its source's shard iterators live (a server with
`[kinesis] iterator_ttl_ms = 3000`), but not longer than its lease, is resumed while a
producer writes: its next GetRecords meets ExpiredIteratorException, it takes a new
iterator from the last record it read (and says so), and every record is in the bucket
exactly once."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "compat"))
import harness  # noqa: E402
from delivery_check import LocalBucket, decompress  # noqa: E402
from harness import Server, channel_request, kinesis_call, read_stream, wait_channel  # noqa: E402
from pg import PgCluster  # noqa: E402
from table_check import assert_rows, expected_row, read_table, register_schema, table_channel_request  # noqa: E402
from test_tls import make_cert  # noqa: E402

# raw_call (harness) signs with test/test: the server verifies signatures against this key.
KEY, SECRET = "test", "test"
STREAM = "src-tls"
SCHEMA = {"type": "object", "required": ["id"],
          "properties": {"id": {"type": "string"}, "t": {"type": "string", "format": "date-time"}}}


def worker_cmd(conninfo, source, ca, data_dir, port, config):
    return [harness.BINARY, "worker", "--pg", conninfo, "--source", source, "--source-ca-file", ca,
            "--data-dir", data_dir, "--listen", f"127.0.0.1:{port}", "--config", config, "--log-level", "info"]


def health(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return json.loads(r.read())
    except OSError:
        return None


SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$')


def scrape(port):
    """A worker's /metrics: ({(family, frozenset(labels)): value}, {family: type}, content type).
    Every line must be a comment or a Prometheus sample."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text, ctype = r.read().decode(), r.headers.get("Content-Type", "")
    values, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a Prometheus sample: {line!r}"
        labels = frozenset(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        values[(m.group(1), labels)] = float(m.group(3))
    return values, types, ctype


def listening_port(log_path, timeout=30):
    """The port a worker logs that it serves /metrics and /health on."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(log_path, "rb") as f:
            m = re.search(rb"/metrics and /health on http://127\.0\.0\.1:(\d+)", f.read())
        if m:
            return int(m.group(1))
        time.sleep(0.2)
    with open(log_path, "rb") as f:
        raise AssertionError("the worker never said where it listens:\n" + f.read().decode(errors="replace"))


class WorkerSource(unittest.TestCase):
    def test_a_worker_reads_over_tls_with_signatures_verified(self):
        tmp = tempfile.mkdtemp(prefix="icestream-wsrc-")
        cert, key = make_cert(tmp)
        config = os.path.join(tmp, "server.toml")
        with open(config, "w") as f:
            f.write(f'[[credentials]]\naccess_key_id = "{KEY}"\nsecret_access_key = "{SECRET}"\n'
                    f'[server]\ntls_cert = "{cert}"\ntls_key = "{key}"\n'
                    "[scaleout]\nlease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n")
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = KEY, SECRET
        procs = []
        with PgCluster() as pg:
            conninfo = pg.create_database("pool")
            server = Server(extra_args=["--pg", conninfo, "--config", config]).start()
            try:
                k = server.client()  # signs with TEST_AK/TEST_SK or test/test
                k.create_stream(StreamName=STREAM, StreamModeDetails={"StreamMode": "ON_DEMAND"})
                glue = server.client("glue")
                schema, _ = register_schema(glue, "wsrc", "events", SCHEMA)
                st, body = kinesis_call(server, "CreateChannel",
                                        channel_request("tls-s3", STREAM, bucket="out", compression="NONE", freshness=1))
                self.assertEqual(st, 200, body)
                s3_arn = body["ChannelDescription"]["ChannelARN"]
                st, body = kinesis_call(server, "CreateChannel", table_channel_request(
                    "tls-table", STREAM, schema, "tables", "ns", "t", "dlq", freshness=1, partition="t"))
                self.assertEqual(st, 200, body)
                wait_channel(server, s3_arn, timeout=60)
                table_arn = body["ChannelDescription"]["ChannelARN"]
                wait_channel(server, table_arn, timeout=60)

                port = harness.free_port()
                wlog = open(os.path.join(tmp, "worker.log"), "ab")
                cmd = worker_cmd(conninfo, server.tls_endpoint, cert, server.data_dir, port, config)
                w = subprocess.Popen(cmd, stdout=wlog, stderr=subprocess.STDOUT)
                procs.append(w)
                stop = threading.Event()
                n = [0]

                def produce():
                    while not stop.is_set():
                        recs = [{"Data": json.dumps({"id": f"r{n[0] + i}", "t": "2026-12-01T10:00:00Z"}).encode(),
                                 "PartitionKey": f"k{n[0] + i}"} for i in range(50)]
                        k.put_records(StreamName=STREAM, Records=recs)
                        n[0] += 50
                        time.sleep(0.1)

                producer = threading.Thread(target=produce, daemon=True)
                producer.start()
                held = 0
                deadline = time.time() + 30
                while time.time() < deadline and not held:
                    h = health(port)
                    held = sum(len(u) for u in (h or {}).get("leases", {}).values())
                    time.sleep(0.3)
                self.assertGreater(held, 0, "the worker took no lease")
                time.sleep(3)
                w.terminate()
                self.assertEqual(w.wait(30), 0)
                time.sleep(1)
                w = subprocess.Popen(cmd, stdout=wlog, stderr=subprocess.STDOUT)
                procs.append(w)
                time.sleep(5)
                stop.set()
                producer.join(30)

                everything = read_stream(k, STREAM)
                want = sorted(json.loads(d)["id"] for d, _, _ in everything)
                bucket = LocalBucket(os.path.join(server.data_dir, "buckets", "out"))
                deadline = time.time() + 60
                while True:
                    got = [json.loads(line)["id"] for key, raw in bucket.objects("").items()
                           for line in decompress(key, raw).splitlines() if line.strip()]
                    if len(got) >= len(want) or time.time() > deadline:
                        break
                    time.sleep(0.5)
                self.assertEqual(sorted(got), want, "the bucket does not hold every record exactly once")
                # The table, read independently from the metadata file the JDBC row names (the REST
                # catalog wants signatures here).
                deadline = time.time() + 60
                while True:
                    loc = pg.psql("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = 'tables'", "pool")
                    t = read_table(metadata_location=loc) if loc else {"rows": []}
                    if len(t["rows"]) >= len(everything) or time.time() > deadline:
                        break
                    time.sleep(1)
                assert_rows(self, t["rows"], [expected_row(d, t["schema"]) for d, _, _ in everything], "id")
                owners = pg.psql("SELECT count(DISTINCT owner) FROM icestream_lease_history", "pool")
                self.assertGreaterEqual(int(owners), 2, "the worker never delivered")
                w.terminate()
                self.assertEqual(w.wait(30), 0)
                wlog.close()
                with open(os.path.join(tmp, "worker.log"), "rb") as f:
                    text = f.read().decode(errors="replace")
                self.assertIn("worker", text)
                # The records came as CBOR (raw bytes, no base64), signed and over TLS like the rest.
                self.assertIn("answers GetRecords in CBOR", text)
                self.assertNotIn("reading in JSON", text)
                self.assertNotIn("certificate", text.lower().replace("--source-ca-file", ""))

                # A wrong secret: the server refuses the worker's calls, and it says so.
                os.environ["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
                bad_log = os.path.join(tmp, "bad.log")
                with open(bad_log, "ab") as blog:
                    bad = subprocess.Popen(worker_cmd(conninfo, server.tls_endpoint, cert, tempfile.mkdtemp(dir=tmp),
                                                      harness.free_port(), config),
                                           stdout=blog, stderr=subprocess.STDOUT)
                    procs.append(bad)
                    k.put_records(StreamName=STREAM, Records=[{"Data": b'{"id": "late"}', "PartitionKey": "z"}])
                    deadline = time.time() + 30
                    found = False
                    while time.time() < deadline and not found:
                        time.sleep(0.5)
                        with open(bad_log, "rb") as f:
                            found = b"InvalidSignatureException" in f.read()
                    bad.terminate()
                    bad.wait(30)
                with open(bad_log, "rb") as f:
                    text = f.read()
                    self.assertIn(b"InvalidSignatureException", text)
                    self.assertNotIn(b"FAILED", text, "a worker's own credentials failed a channel of the pool")
                for arn in (s3_arn, table_arn):
                    self.assertEqual(wait_channel(server, arn, timeout=10)["ChannelStatus"], "ACTIVE")
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
                server.stop()
                server.cleanup()
                shutil.rmtree(tmp, ignore_errors=True)

    def test_b_a_worker_on_the_servers_own_configuration_file(self):
        tmp = tempfile.mkdtemp(prefix="icestream-wcfg-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = "test", "test"
        procs = []

        def stop_all():
            for p in procs:
                if p.poll() is None:
                    p.terminate()
                    try:
                        p.wait(30)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
        self.addCleanup(stop_all)
        with PgCluster() as pg:
            conninfo = pg.create_database("pool")
            server = Server(config_text="")
            self.addCleanup(server.cleanup)
            self.addCleanup(server.stop)
            shared = (f'listen = "127.0.0.1:{server.port}"\ndata_dir = "{server.data_dir}"\n'
                      f'[scaleout]\npg = "{conninfo}"\nsource = "{server.endpoint}"\n'
                      "lease_ms = 2000\nrenew_ms = 400\ntake_ms = 400\n")
            with open(server.config_path, "w") as f:
                f.write(shared + f'[worker]\nlisten = "127.0.0.1:0"\ndata_dir = "{tmp}/worker"\n')
            server.start()  # --pg from the file's [scaleout] pg
            k = server.client()
            k.create_stream(StreamName="cfg", StreamModeDetails={"StreamMode": "ON_DEMAND"})
            st, body = kinesis_call(server, "CreateChannel",
                                    channel_request("cfg-s3", "cfg", bucket="out", compression="NONE", freshness=1))
            self.assertEqual(st, 200, body)
            wait_channel(server, body["ChannelDescription"]["ChannelARN"], timeout=60)

            # Only --config: the pool, the source and the worker's own address come from it.
            log_path = os.path.join(tmp, "worker.log")
            with open(log_path, "ab") as log:
                w = subprocess.Popen([harness.BINARY, "worker", "--config", server.config_path, "--log-level", "info"],
                                     stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
            procs.append(w)
            port = listening_port(log_path)
            self.assertNotEqual(port, server.port)
            self.assertIsNone(w.poll(), "the worker exited")
            for i in range(0, 400, 50):
                k.put_records(StreamName="cfg", Records=[{"Data": json.dumps({"id": f"c{j}"}).encode(),
                                                          "PartitionKey": f"k{j}"} for j in range(i, i + 50)])
            # The worker takes its share of the channel's units, then delivers its shards.
            deadline, h = time.time() + 60, None
            while time.time() < deadline:
                h = health(port)
                if h and sum(len(u) for u in h.get("leases", {}).values()) > 0:
                    break
                time.sleep(0.3)
            self.assertEqual(h["status"], "ok", h)
            held = sum(len(u) for u in h["leases"].values())
            self.assertGreater(held, 0, h)
            deadline, values, types, ctype = time.time() + 60, {}, {}, ""
            while time.time() < deadline:
                values, types, ctype = scrape(port)
                held = sum(len(u) for u in (health(port) or {}).get("leases", {}).values())
                records = [v for (fam, labels), v in values.items()
                           if fam == "DeliveryToS3_RecordCount" and ("channel_name", "cfg-s3") in labels]
                if values.get(("icestream_worker_leases", frozenset())) == held and records and records[0] > 0:
                    break
                time.sleep(0.5)
            self.assertTrue(ctype.startswith("text/plain"), ctype)
            self.assertEqual(types.get("icestream_worker_leases"), "gauge", types)
            self.assertEqual(values.get(("icestream_worker_leases", frozenset())), held, values)
            self.assertGreater(records[0] if records else 0, 0,
                               "the worker's /metrics shows no record it delivered for cfg-s3")
            self.assertTrue(os.path.isdir(os.path.join(tmp, "worker")), "the worker did not make [worker] data_dir")

            # Without [worker]: the worker's default address, never the server's.
            bare = os.path.join(tmp, "bare.toml")
            with open(bare, "w") as f:
                f.write(shared)
            bare_log = os.path.join(tmp, "bare.log")
            with open(bare_log, "ab") as log:
                b = subprocess.Popen([harness.BINARY, "worker", "--config", bare, "--log-level", "info"],
                                     stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
            procs.append(b)
            # (4568 may be taken on a busy machine: then it says it cannot listen there.)
            default = re.compile(r"(/health on http://|cannot listen on )127\.0\.0\.1:4568\b")
            deadline, text = time.time() + 30, ""
            while time.time() < deadline and not default.search(text):
                time.sleep(0.2)
                with open(bare_log, "rb") as f:
                    text = f.read().decode(errors="replace")
            self.assertRegex(text, default)
            self.assertNotRegex(text, rf"(/health on http://|cannot listen on )127\.0\.0\.1:{server.port}\b")
            stop_all()
            self.assertEqual(w.returncode, 0)

    def test_c_a_paused_worker_reads_on_after_its_iterators_expired(self):
        tmp = tempfile.mkdtemp(prefix="icestream-wexp-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = "test", "test"
        with PgCluster() as pg:
            conninfo = pg.create_database("pool")
            # The source only (not in the pool); its iterators live 3 s.
            server = Server(config_text="[kinesis]\niterator_ttl_ms = 3000\n").start()
            self.addCleanup(server.cleanup)
            self.addCleanup(server.stop)
            k = server.client()
            k.create_stream(StreamName="exp", StreamModeDetails={"StreamMode": "ON_DEMAND"})
            k.get_waiter("stream_exists").wait(StreamName="exp", WaiterConfig={"Delay": 0.2})
            # A lease far longer than the pause: the worker keeps its shards and must read on
            # from where it was.
            config = os.path.join(tmp, "pool.toml")
            with open(config, "w") as f:
                f.write(f'[scaleout]\npg = "{conninfo}"\nsource = "{server.endpoint}"\n'
                        "lease_ms = 60000\nrenew_ms = 1000\ntake_ms = 500\n")
            req = channel_request("exp-s3", "exp", bucket="out", compression="NONE", freshness=1)
            req["StreamConfigurationList"][0]["StartingPosition"] = {"Type": "TRIM_HORIZON"}
            p = subprocess.run([harness.BINARY, "channels", "create", "--config", config], input=json.dumps(req),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            data = os.path.join(tmp, "worker")
            log_path = os.path.join(tmp, "worker.log")
            log = open(log_path, "ab")
            self.addCleanup(log.close)
            port = harness.free_port()
            w = subprocess.Popen([harness.BINARY, "worker", "--config", config, "--data-dir", data,
                                  "--listen", f"127.0.0.1:{port}", "--log-level", "info"],
                                 stdout=log, stderr=subprocess.STDOUT)

            def stop_worker():
                if w.poll() is None:
                    w.send_signal(signal.SIGCONT)
                    w.terminate()
                    w.wait(30)
            self.addCleanup(stop_worker)

            stop, sent = threading.Event(), []

            def produce():
                n = 0
                while not stop.is_set():
                    recs = [{"Data": json.dumps({"id": f"e{n + i}"}).encode(), "PartitionKey": f"k{n + i}"}
                            for i in range(20)]
                    r = k.put_records(StreamName="exp", Records=recs)
                    sent.extend(json.loads(x["Data"])["id"] for x, res in zip(recs, r["Records"])
                                if "ErrorCode" not in res)
                    n += 20
                    time.sleep(0.1)

            producer = threading.Thread(target=produce, daemon=True)
            producer.start()
            self.addCleanup(stop.set)
            bucket = LocalBucket(os.path.join(data, "buckets", "out"))

            def delivered():
                return [json.loads(line)["id"] for key, raw in bucket.objects("").items()
                        for line in decompress(key, raw).splitlines() if line.strip()]

            deadline = time.time() + 60
            while time.time() < deadline and len(delivered()) < 100:
                time.sleep(0.3)
            self.assertGreaterEqual(len(delivered()), 100, "the worker did not deliver before the pause")
            w.send_signal(signal.SIGSTOP)
            time.sleep(8)  # well past the iterators' 3 s
            w.send_signal(signal.SIGCONT)
            time.sleep(4)
            stop.set()
            producer.join(30)
            deadline, got = time.time() + 60, []
            while time.time() < deadline:
                got = delivered()
                if len(got) >= len(sent):
                    break
                time.sleep(0.5)
            time.sleep(2)  # nothing more arrives
            got = delivered()
            with open(log_path, "rb") as f:
                text = f.read().decode(errors="replace")
            self.assertEqual(sorted(got), sorted(sent), "not every record exactly once after the pause:\n" + text[-4000:])
            self.assertIn("expired; a new one from", text, "no iterator expired: the test proved nothing")
            self.assertNotIn("FAILED", text)
            stop_worker()
            self.assertEqual(w.returncode, 0)


if __name__ == "__main__":
    unittest.main()

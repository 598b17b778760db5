"""Answers that were wrong (issue 19, items 11 and 12).

- Iceberg REST CreateTable (and set-location, registerTable) refuses a location that is
  not strictly inside a fresh folder of the warehouse, or that overlaps a live table's
  location: tables that overlap would have an engine's orphan cleanup on one delete the
  other's files.
- `--listen` with an out-of-range port is refused with a message (it aborted); a host name
  such as localhost is accepted; a region with '/' is refused; `icestream fsck` reports a
  stray or misnamed file in a shard folder as such, not as millions of dropped records,
  and the server starts beside one."""

import json
import os
import time
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import BINARY, Server, free_port, http_send  # noqa: E402

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "a", "required": False, "type": "int"}]}


class TableLocations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().start()
        assert cls.catalog("POST", "/namespaces", {"namespace": ["loc"]})[0] == 200

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()

    @classmethod
    def catalog(cls, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        headers = {"Content-Type": "application/json"} if body is not None else {}
        return http_send(cls.srv, method, "/iceberg/v1" + path, headers, data)

    def create(self, name, location=None):
        body = {"name": name, "schema": SCHEMA}
        if location is not None:
            body["location"] = location
        return self.catalog("POST", "/namespaces/loc/tables", body)

    def test_locations_must_be_fresh_folders_inside_the_warehouse(self):
        st, _, first = self.create("first")
        self.assertEqual(st, 200, first)
        loc = first["metadata"]["location"]
        root = loc.rsplit("/", 2)[0]  # <warehouse>/loc/first-<id>
        for bad, why in ((root, "the warehouse root"), (root + "/", "the warehouse root with a slash"),
                         (loc, "another table's location"), (loc + "/", "another table's location + /"),
                         (loc + "/inner", "inside another table"), (root + "/loc", "around another table"),
                         (root + "/../elsewhere", "a dot-dot segment"), (root + "/a//b", "an empty segment"),
                         ("file:///tmp/outside", "outside the warehouse")):
            st, _, out = self.create("t" + str(abs(hash(bad)) % 100000), bad)
            self.assertEqual(st, 400, f"{why}: {bad} -> {out}")
            self.assertEqual(out["error"]["type"], "BadRequestException", out)
        st, _, ok = self.create("second", root + "/custom/second")
        self.assertEqual(st, 200, ok)
        self.assertEqual(ok["metadata"]["location"], root + "/custom/second")
        # Moving a table onto another one's files is refused the same way.
        commit = {"requirements": [], "updates": [{"action": "set-location", "location": loc}]}
        st, _, out = self.catalog("POST", "/namespaces/loc/tables/second", commit)
        self.assertEqual(st, 400, out)
        commit["updates"][0]["location"] = root + "/custom/second-moved"
        st, _, out = self.catalog("POST", "/namespaces/loc/tables/second", commit)
        self.assertEqual(st, 200, out)
        # Registering metadata whose table lies on a live table's location is refused too.
        st, _, loaded = self.catalog("GET", "/namespaces/loc/tables/first")
        st, _, out = self.catalog("POST", "/namespaces/loc/register",
                                  {"name": "copy", "metadata-location": loaded["metadata-location"]})
        self.assertEqual(st, 400, out)
        self.assertEqual(self.catalog("GET", "/namespaces/loc/tables/copy")[0], 404)
        # A dropped table's location is free again.
        self.assertEqual(self.catalog("DELETE", "/namespaces/loc/tables/first")[0], 204)
        st, _, out = self.create("again", loc)
        self.assertEqual(st, 200, out)


class StartupArguments(unittest.TestCase):
    def run_bin(self, *args, timeout=10):
        return subprocess.run([BINARY] + list(args), capture_output=True, text=True, timeout=timeout)

    def test_listen_ports_and_hosts(self):
        tmp = tempfile.mkdtemp(prefix="icestream-args-")
        try:
            for bad in ("127.0.0.1:99999999999999999999", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:",
                        "127.0.0.1:4567x"):
                p = self.run_bin("serve", "--data-dir", tmp, "--listen", bad)
                self.assertGreater(p.returncode, 0, (bad, p.returncode, p.stderr))
                self.assertLess(p.returncode, 128, f"{bad}: died of a signal")
                self.assertIn("listen", (p.stderr + p.stdout).lower(), bad)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        port = free_port()
        # localhost resolves; the server listens on it.
        tmp2 = tempfile.mkdtemp(prefix="icestream-args-")
        proc = subprocess.Popen([BINARY, "serve", "--data-dir", tmp2, "--listen", f"localhost:{port}",
                                 "--log-level", "warn"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 20
            ok = False
            while time.time() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                        ok = r.status == 200
                        break
                except OSError:
                    time.sleep(0.1)
            self.assertTrue(ok, proc.stdout.read().decode() if proc.poll() is not None else "no answer")
        finally:
            proc.terminate()
            proc.wait(30)
            shutil.rmtree(tmp2, ignore_errors=True)

    def test_region_must_be_a_region_name(self):
        tmp = tempfile.mkdtemp(prefix="icestream-args-")
        try:
            for bad in ("us/east-1", "us-east-1/../x", "US-EAST-1", "us east 1", "-us-east-1", "a:b"):
                cfg = os.path.join(tmp, "c.toml")
                with open(cfg, "w") as f:
                    f.write(f'region = "{bad}"\n')
                p = self.run_bin("serve", "--data-dir", tmp, "--listen", f"127.0.0.1:{free_port()}",
                                 "--config", cfg)
                self.assertGreater(p.returncode, 0, (bad, p.stderr))
                self.assertIn("region", p.stderr + p.stdout, bad)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class StrayFiles(unittest.TestCase):
    def test_fsck_names_stray_and_misnamed_files(self):
        srv = Server().start()
        try:
            k = srv.client()
            k.create_stream(StreamName="stray", ShardCount=1)
            for i in range(20):
                k.put_record(StreamName="stray", PartitionKey="p", Data=f"r{i}".encode())
        finally:
            srv.stop()
        streams = os.path.join(srv.data_dir, "streams")
        uid = os.listdir(streams)[0]
        shard_dir = os.path.join(streams, uid, "000000000000")
        segment = sorted(n for n in os.listdir(shard_dir) if n.endswith(".log"))[0]
        # A copy under another segment's name (its header says offset 0), and junk.
        shutil.copy(os.path.join(shard_dir, segment), os.path.join(shard_dir, "00000000000009999999.log"))
        with open(os.path.join(shard_dir, "notasegmentname.log.log"), "w") as f:
            f.write("junk")
        with open(os.path.join(shard_dir, "abcdefghijklmnopqrst.log"), "w") as f:
            f.write("junk")
        try:
            p = subprocess.run([BINARY, "fsck", "--data-dir", srv.data_dir], capture_output=True, text=True,
                               timeout=60)
            out = p.stdout + p.stderr
            self.assertIn("00000000000009999999.log", out)
            self.assertIn("abcdefghijklmnopqrst.log", out)
            self.assertIn("0 record(s) would be dropped", out)
            self.assertIn("stray", out)
            # The server starts beside them and serves every record.
            srv.start()
            k = srv.client()
            it = k.get_shard_iterator(StreamName="stray", ShardId="shardId-000000000000",
                                      ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            got = k.get_records(ShardIterator=it)["Records"]
            self.assertEqual([r["Data"] for r in got], [f"r{i}".encode() for i in range(20)])
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

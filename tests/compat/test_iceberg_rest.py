"""The Iceberg REST catalog over plain HTTP, for what iceberg-js does not cover:
multi-level namespaces in paths (%1F), pagination, staged create + assert-create,
multi-table transactions, snapshots=refs, metrics, the error model for malformed
requests (400/404/405/406/409/422), purge, restart durability, and two writers
committing to one table concurrently with reload-and-retry on 409."""

import json
import os
import sys
import threading
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server  # noqa: E402

SERVER = None


def setUpModule():
    global SERVER
    SERVER = Server().start()


def tearDownModule():
    SERVER.stop()
    SERVER.cleanup()


def call(method, path, body=None, headers=None, raw=None):
    """Returns (status, headers, parsed JSON body or None)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(SERVER.endpoint + "/iceberg/v1" + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
            return r.status, dict(r.headers.items()), json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, dict(e.headers.items()), json.loads(text) if text else None


SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "required": True, "type": "long"},
                                       {"id": 2, "name": "v", "required": False, "type": "string"}]}


def snapshot(sid, parent, seq, location):
    s = {"snapshot-id": sid, "sequence-number": seq, "timestamp-ms": 1700000000000 + seq,
         "manifest-list": f"{location}/metadata/snap-{sid}.avro", "summary": {"operation": "append"}}
    if parent is not None:
        s["parent-snapshot-id"] = parent
    return s


class RestCatalog(unittest.TestCase):
    def assertError(self, result, code, type_=None):
        status, headers, body = result
        self.assertEqual(status, code, body)
        if body is not None:
            self.assertEqual(body["error"]["code"], code)
            self.assertTrue(body["error"]["message"])
            if type_:
                self.assertEqual(body["error"]["type"], type_, body)
        self.assertIn("application/json", headers.get("Content-Type", ""))

    def test_multilevel_namespaces_and_pagination(self):
        for ns in (["p"], ["p", "a"], ["p", "b"], ["p", "c"], ["p", "a", "deep"]):
            status, _, body = call("POST", "/namespaces", {"namespace": ns})
            self.assertEqual(status, 200, body)
            self.assertEqual(body["namespace"], ns)
        status, _, body = call("GET", "/namespaces?parent=p")
        self.assertEqual(body["namespaces"], [["p", "a"], ["p", "b"], ["p", "c"]])
        self.assertNotIn("next-page-token", body)  # no pageToken asked: no pagination
        status, _, body = call("GET", "/namespaces?parent=p%1Fa")
        self.assertEqual(body["namespaces"], [["p", "a", "deep"]])
        status, _, body = call("GET", "/namespaces/p%1Fa%1Fdeep")
        self.assertEqual((status, body["namespace"]), (200, ["p", "a", "deep"]))
        pages, token = [], ""
        while True:
            status, _, body = call("GET", f"/namespaces?parent=p&pageToken={token}&pageSize=2")
            self.assertEqual(status, 200, body)
            pages.append(body["namespaces"])
            token = body["next-page-token"]
            if token is None:
                break
        self.assertEqual(pages, [[["p", "a"], ["p", "b"]], [["p", "c"]]])
        self.assertError(call("GET", "/namespaces?parent=zz"), 404, "NoSuchNamespaceException")
        self.assertError(call("GET", "/namespaces?pageToken=x"), 400, "BadRequestException")
        for q in ("pageSize=0", "pageSize=abc", "pageToken=&pageSize=-1"):
            self.assertError(call("GET", "/namespaces?" + q), 400, "BadRequestException")
        for ns in (["p", "a", "deep"], ["p", "a"], ["p", "b"], ["p", "c"], ["p"]):
            self.assertEqual(call("DELETE", "/namespaces/" + "%1F".join(ns))[0], 204)

    def test_error_model(self):
        call("POST", "/namespaces", {"namespace": ["err"]})
        self.assertError(call("POST", "/namespaces", raw=b"{not json"), 400, "BadRequestException")
        self.assertError(call("POST", "/namespaces", {"properties": {}}), 400, "BadRequestException")
        self.assertError(call("POST", "/namespaces", {"namespace": ["err"]}), 409, "AlreadyExistsException")
        self.assertError(call("POST", "/namespaces/err/properties", {"removals": ["a"], "updates": {"a": "1"}}),
                         422, "UnprocessableEntityException")
        self.assertError(call("GET", "/namespaces/err/tables/none"), 404, "NoSuchTableException")
        self.assertError(call("GET", "/namespaces/none/tables"), 404, "NoSuchNamespaceException")
        self.assertError(call("PUT", "/namespaces/err"), 405)
        self.assertError(call("GET", "/namespaces/err/views"), 406, "UnsupportedOperationException")
        self.assertError(call("GET", "/nothing-here/at/all"), 404)
        self.assertError(call("POST", "/namespaces/err/tables", {"name": "t"}), 400, "BadRequestException")
        # format-version is reserved: it picks the table format and is not stored.
        for v in ("1", "3", "abc"):
            self.assertError(call("POST", "/namespaces/err/tables", {"name": "fv", "schema": SCHEMA,
                                                                   "properties": {"format-version": v}}),
                             400, "BadRequestException")
        status, _, body = call("POST", "/namespaces/err/tables", {"name": "fv", "schema": SCHEMA,
                                                                  "properties": {"format-version": "2", "k": "v"}})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["metadata"]["format-version"], 2)
        self.assertNotIn("format-version", body["metadata"]["properties"])
        self.assertEqual(body["metadata"]["properties"]["k"], "v")
        self.assertEqual(call("DELETE", "/namespaces/err/tables/fv")[0], 204)
        self.assertError(call("POST", "/namespaces/err/register", {"name": "r", "metadata-location": "s3://x/y.json"}),
                         400, "BadRequestException")
        self.assertError(call("GET", "/config?warehouse=Not_A_Bucket"), 400, "BadRequestException")
        status, headers, body = call("HEAD", "/namespaces/none")
        self.assertEqual((status, body), (404, None))
        self.assertError(call("DELETE", "/namespaces/err/tables/none?purgeRequested=maybe"), 400)

    def test_staged_create_transactions_refs_and_metrics(self):
        call("POST", "/namespaces", {"namespace": ["tx"]})
        status, _, staged = call("POST", "/namespaces/tx/tables", {"name": "s", "schema": SCHEMA, "stage-create": True})
        self.assertEqual(status, 200, staged)
        self.assertIsNone(staged["metadata-location"])
        self.assertEqual(call("HEAD", "/namespaces/tx/tables/s")[0], 404)
        m = staged["metadata"]
        creation = [{"action": "assign-uuid", "uuid": m["table-uuid"]},
                    {"action": "upgrade-format-version", "format-version": 2},
                    {"action": "add-schema", "schema": m["schemas"][0]},
                    {"action": "set-current-schema", "schema-id": -1},
                    {"action": "add-spec", "spec": {"fields": []}},
                    {"action": "set-default-spec", "spec-id": -1},
                    {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                    {"action": "set-default-sort-order", "sort-order-id": -1},
                    {"action": "set-location", "location": m["location"]}]
        status, _, body = call("POST", "/namespaces/tx/tables/s",
                               {"requirements": [{"type": "assert-create"}], "updates": creation})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["metadata"]["table-uuid"], m["table-uuid"])
        self.assertError(call("POST", "/namespaces/tx/tables/s", {"requirements": [{"type": "assert-create"}],
                                                                  "updates": creation}), 409, "CommitFailedException")
        _, _, t2 = call("POST", "/namespaces/tx/tables", {"name": "t2", "schema": SCHEMA})
        loc_s, loc_t2 = body["metadata"]["location"], t2["metadata"]["location"]

        # All or nothing: the second change's requirement fails, the first is not applied.
        changes = [{"identifier": {"namespace": ["tx"], "name": "s"}, "requirements": [],
                    "updates": [{"action": "add-snapshot", "snapshot": snapshot(11, None, 1, loc_s)},
                                {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 11}]},
                   {"identifier": {"namespace": ["tx"], "name": "t2"},
                    "requirements": [{"type": "assert-table-uuid", "uuid": "wrong"}],
                    "updates": [{"action": "set-properties", "updates": {"x": "1"}}]}]
        self.assertError(call("POST", "/transactions/commit", {"table-changes": changes}), 409, "CommitFailedException")
        self.assertEqual(call("GET", "/namespaces/tx/tables/s")[2]["metadata"]["current-snapshot-id"], -1)
        changes[1]["requirements"] = [{"type": "assert-table-uuid", "uuid": t2["metadata"]["table-uuid"]}]
        status, _, _ = call("POST", "/transactions/commit", {"table-changes": changes})
        self.assertEqual(status, 204)
        self.assertEqual(call("GET", "/namespaces/tx/tables/s")[2]["metadata"]["current-snapshot-id"], 11)
        self.assertEqual(call("GET", "/namespaces/tx/tables/t2")[2]["metadata"]["properties"]["x"], "1")
        self.assertError(call("POST", "/transactions/commit", {"table-changes": [{"requirements": [], "updates": []}]}),
                         400, "BadRequestException")

        # snapshots=refs leaves out snapshots no ref points at.
        call("POST", "/namespaces/tx/tables/s", {"requirements": [], "updates": [
            {"action": "add-snapshot", "snapshot": snapshot(12, 11, 2, loc_s)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 12}]})
        all_snaps = call("GET", "/namespaces/tx/tables/s?snapshots=all")[2]["metadata"]["snapshots"]
        refs_snaps = call("GET", "/namespaces/tx/tables/s?snapshots=refs")[2]["metadata"]["snapshots"]
        self.assertEqual(sorted(s["snapshot-id"] for s in all_snaps), [11, 12])
        self.assertEqual([s["snapshot-id"] for s in refs_snaps], [12])
        # The two representations have distinct ETags; each revalidates only itself.
        _, h_all, _ = call("GET", "/namespaces/tx/tables/s?snapshots=all")
        _, h_refs, _ = call("GET", "/namespaces/tx/tables/s?snapshots=refs")
        self.assertNotEqual(h_all["ETag"], h_refs["ETag"])
        self.assertEqual(call("GET", "/namespaces/tx/tables/s", headers={"If-None-Match": h_all["ETag"]})[0], 304)
        self.assertEqual(call("GET", "/namespaces/tx/tables/s?snapshots=all",
                              headers={"If-None-Match": h_refs["ETag"]})[0], 200)
        # A new snapshot needs its summary and a known operation.
        for summary in (None, {}, {"operation": "bogus"}):
            bad = snapshot(13, 12, 3, loc_s)
            if summary is None:
                del bad["summary"]
            else:
                bad["summary"] = summary
            self.assertError(call("POST", "/namespaces/tx/tables/s", {"requirements": [], "updates": [
                {"action": "add-snapshot", "snapshot": bad}]}), 400, "BadRequestException")
        self.assertEqual(call("POST", "/namespaces/tx/tables/s/metrics",
                              {"report-type": "commit-report", "table-name": "tx.s"})[0], 204)
        self.assertError(call("POST", "/namespaces/tx/tables/none/metrics", {}), 404, "NoSuchTableException")
        self.assertTrue(loc_t2)

    def test_concurrent_writers_reload_and_retry(self):
        call("POST", "/namespaces", {"namespace": ["cc"]})
        _, _, created = call("POST", "/namespaces/cc/tables", {"name": "t", "schema": SCHEMA})
        location = created["metadata"]["location"]
        per_writer = 12
        conflicts = [0, 0]
        errors = []

        def writer(w):
            try:
                for i in range(per_writer):
                    sid = (w + 1) * 1000 + i
                    while True:
                        _, _, cur = call("GET", "/namespaces/cc/tables/t")
                        md = cur["metadata"]
                        parent = md.get("current-snapshot-id")
                        parent = None if parent in (None, -1) else parent
                        body = {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
                                "updates": [{"action": "add-snapshot",
                                             "snapshot": snapshot(sid, parent, md["last-sequence-number"] + 1, location)},
                                            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                                             "snapshot-id": sid}]}
                        status, _, resp = call("POST", "/namespaces/cc/tables/t", body)
                        if status == 200:
                            break
                        if status != 409 or resp["error"]["type"] != "CommitFailedException":
                            raise AssertionError(f"unexpected {status}: {resp}")
                        conflicts[w] += 1
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        md = call("GET", "/namespaces/cc/tables/t")[2]["metadata"]
        ids = sorted(s["snapshot-id"] for s in md["snapshots"])
        self.assertEqual(ids, sorted([1000 + i for i in range(per_writer)] + [2000 + i for i in range(per_writer)]))
        self.assertEqual(md["last-sequence-number"], 2 * per_writer)
        # One linear history: every snapshot's parent is the one committed before it.
        by_id = {s["snapshot-id"]: s for s in md["snapshots"]}
        chain, cur = 0, md["current-snapshot-id"]
        while cur is not None:
            chain += 1
            cur = by_id[cur].get("parent-snapshot-id")
        self.assertEqual(chain, 2 * per_writer)
        print(f"conflicts seen: {conflicts}", file=sys.stderr)

    def test_purge_and_restart(self):
        call("POST", "/namespaces", {"namespace": ["pg"]})
        _, _, keep = call("POST", "/namespaces/pg/tables", {"name": "keep", "schema": SCHEMA,
                                                            "properties": {"k": "v"}})
        _, _, gone = call("POST", "/namespaces/pg/tables", {"name": "gone", "schema": SCHEMA})
        path = gone["metadata-location"][len("file://"):]
        self.assertTrue(os.path.exists(path))
        self.assertEqual(call("DELETE", "/namespaces/pg/tables/gone?purgeRequested=true")[0], 204)
        self.assertFalse(os.path.exists(path))
        SERVER.stop()
        SERVER.start()
        status, _, body = call("GET", "/namespaces/pg/tables/keep")
        self.assertEqual(status, 200, body)
        self.assertEqual(body["metadata-location"], keep["metadata-location"])
        self.assertEqual(body["metadata"]["properties"]["k"], "v")
        self.assertEqual(call("GET", "/namespaces/pg/tables")[2]["identifiers"], [{"namespace": ["pg"], "name": "keep"}])


if __name__ == "__main__":
    unittest.main(verbosity=2)

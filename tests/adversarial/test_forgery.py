"""Request forgery and replay against a server with credentials, with requests signed by
botocore's SigV4 signer and then tampered with: a captured request resent with another
body (with and without a forged x-amz-content-sha256), UNSIGNED-PAYLOAD, an old or future
X-Amz-Date, a scope for another service or region, SignedHeaders without host or
x-amz-target, presigned query strings — on Kinesis, Glue and the Iceberg REST catalog
(service s3tables, or a bearer token) — and /metrics behind its switch."""

import datetime
import hashlib
import json
import os
import sys
import unittest

import botocore.auth

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, http_send, sign_request  # noqa: E402

AK, SK = "AKIDFORGERY", "forgery-secret"
TOKEN = "catalog-token-0123456789"
CONFIG = f"""
[[credentials]]
access_key_id = "{AK}"
secret_access_key = "{SK}"

[auth]
bearer_tokens = ["{TOKEN}"]
"""
KINESIS = "Kinesis_20131202."
JSON11 = "application/x-amz-json-1.1"
SERVER = None


def setUpModule():
    global SERVER
    SERVER = Server(config_text=CONFIG).start()


def tearDownModule():
    SERVER.stop()
    SERVER.cleanup()


def kinesis_headers(op, body, **kw):
    headers = {"Content-Type": JSON11, "X-Amz-Target": KINESIS + op}
    kw.setdefault("access_key", AK)
    kw.setdefault("secret_key", SK)
    return sign_request(SERVER.endpoint + "/", "POST", body, headers, **kw)


def send(headers, body, target="/", method="POST"):
    return http_send(SERVER, method, target, headers, body)


class UnsignedPayloadSigner(botocore.auth.SigV4Auth):
    """Signs with the UNSIGNED-PAYLOAD placeholder instead of the body's hash (what S3
    clients do over TLS)."""

    def payload(self, request):
        return "UNSIGNED-PAYLOAD"

    def _modify_request_before_signing(self, request):
        super()._modify_request_before_signing(request)
        request.headers["X-Amz-Content-SHA256"] = "UNSIGNED-PAYLOAD"


class NoHostSigner(botocore.auth.SigV4Auth):
    def headers_to_sign(self, request):
        h = super().headers_to_sign(request)
        del h["host"]
        return h


class NoTargetSigner(botocore.auth.SigV4Auth):
    def headers_to_sign(self, request):
        h = super().headers_to_sign(request)
        del h["x-amz-target"]
        return h


def create_stream(name):
    body = json.dumps({"StreamName": name, "ShardCount": 1})
    st, _, parsed = send(kinesis_headers("CreateStream", body), body)
    assert st == 200, parsed


def stream_names():
    st, _, parsed = send(kinesis_headers("ListStreams", "{}"), "{}")
    assert st == 200, parsed
    return parsed["StreamNames"]


class KinesisForgery(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        create_stream("victim")
        create_stream("bystander")

    def assertRefused(self, result, type_, text=None):
        st, _, body = result
        self.assertEqual(st, 400, body)
        self.assertEqual(body["__type"], type_, body)
        if text:
            self.assertIn(text, body["message"])

    def test_good_request_passes(self):
        body = json.dumps({"StreamName": "victim", "PartitionKey": "k", "Data": "aGVsbG8="})
        st, _, parsed = send(kinesis_headers("PutRecord", body), body)
        self.assertEqual(st, 200, parsed)

    def test_replay_with_another_body_is_refused(self):
        body = json.dumps({"StreamName": "victim", "PartitionKey": "k", "Data": "aGVsbG8="})
        headers = kinesis_headers("PutRecord", body)
        forged = json.dumps({"StreamName": "victim", "PartitionKey": "k", "Data": "Zm9yZ2Vk"})
        self.assertRefused(send(headers, forged), "InvalidSignatureException")
        # The same, with the original body's hash in an (unsigned) x-amz-content-sha256.
        h = dict(headers, **{"X-Amz-Content-Sha256": hashlib.sha256(body.encode()).hexdigest()})
        self.assertRefused(send(h, forged), "InvalidSignatureException")

    def test_captured_delete_cannot_delete_another_stream(self):
        create_stream("captured")
        body = json.dumps({"StreamName": "captured"})
        headers = kinesis_headers("DeleteStream", body)
        headers["X-Amz-Content-Sha256"] = hashlib.sha256(body.encode()).hexdigest()
        other = json.dumps({"StreamName": "bystander"})
        self.assertRefused(send(headers, other), "InvalidSignatureException")
        self.assertIn("bystander", stream_names())
        st, _, parsed = send(headers, body)  # the genuine request still works
        self.assertEqual(st, 200, parsed)
        self.assertNotIn("captured", stream_names())

    def test_unsigned_payload_is_refused(self):
        body = json.dumps({"StreamName": "victim", "PartitionKey": "k", "Data": "aGVsbG8="})
        headers = kinesis_headers("PutRecord", body, signer=UnsignedPayloadSigner)
        self.assertRefused(send(headers, body), "InvalidSignatureException", "UNSIGNED-PAYLOAD")

    def test_old_and_future_dates_are_refused(self):
        now = datetime.datetime.now(datetime.timezone.utc)
        body = "{}"
        old = kinesis_headers("ListStreams", body, when=now - datetime.timedelta(minutes=16))
        self.assertRefused(send(old, body), "InvalidSignatureException", "Signature expired")
        future = kinesis_headers("ListStreams", body, when=now + datetime.timedelta(minutes=16))
        self.assertRefused(send(future, body), "InvalidSignatureException", "Signature not yet current")
        recent = kinesis_headers("ListStreams", body, when=now - datetime.timedelta(minutes=10))
        self.assertEqual(send(recent, body)[0], 200)

    def test_scope_of_another_service_or_region_is_refused(self):
        body = "{}"
        self.assertRefused(send(kinesis_headers("ListStreams", body, service="glue"), body),
                           "InvalidSignatureException", "'kinesis'")
        st, _, parsed = send(kinesis_headers("ListStreams", body, region="eu-west-1"), body)
        self.assertEqual(st, 400, parsed)
        self.assertEqual(parsed["__type"], "InvalidSignatureException")
        self.assertIn("'eu-west-1'", parsed["message"])
        self.assertIn("us-east-1", parsed["message"])

    def test_host_and_target_must_be_signed(self):
        body = "{}"
        self.assertRefused(send(kinesis_headers("ListStreams", body, signer=NoHostSigner), body),
                           "InvalidSignatureException", "'Host'")
        self.assertRefused(send(kinesis_headers("ListStreams", body, signer=NoTargetSigner), body),
                           "InvalidSignatureException", "'X-Amz-Target'")

    def test_target_swap_is_refused(self):
        body = json.dumps({"StreamName": "bystander"})
        headers = kinesis_headers("DescribeStreamSummary", body)
        headers["X-Amz-Target"] = KINESIS + "DeleteStream"
        self.assertRefused(send(headers, body), "InvalidSignatureException")
        self.assertIn("bystander", stream_names())

    def test_presigned_query_is_refused(self):
        body = "{}"
        q = ("/?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + AK +
             "%2F20260101%2Fus-east-1%2Fkinesis%2Faws4_request&X-Amz-Date=20260101T000000Z"
             "&X-Amz-SignedHeaders=host&X-Amz-Signature=" + "0" * 64)
        st, _, parsed = send({"Content-Type": JSON11, "X-Amz-Target": KINESIS + "ListStreams"}, body, target=q)
        self.assertEqual((st, parsed["__type"]), (400, "InvalidSignatureException"), parsed)


class GlueForgery(unittest.TestCase):
    def glue(self, op, body, **kw):
        headers = {"Content-Type": JSON11, "X-Amz-Target": "AWSGlue." + op}
        kw.setdefault("service", "glue")
        return sign_request(SERVER.endpoint + "/", "POST", body, headers, access_key=AK, secret_key=SK, **kw)

    def test_replay_and_scope(self):
        body = json.dumps({"RegistryName": "reg-a"})
        headers = self.glue("CreateRegistry", body)
        st, _, parsed = send(headers, body)
        self.assertEqual(st, 200, parsed)
        forged = json.dumps({"RegistryName": "reg-b"})
        h = dict(headers, **{"X-Amz-Content-Sha256": hashlib.sha256(body.encode()).hexdigest()})
        st, _, parsed = send(h, forged)
        self.assertEqual((st, parsed["__type"]), (400, "InvalidSignatureException"), parsed)
        body = json.dumps({"RegistryId": {"RegistryName": "reg-a"}})
        st, _, parsed = send(self.glue("GetRegistry", body, service="kinesis"), body)
        self.assertEqual((st, parsed["__type"]), (400, "InvalidSignatureException"), parsed)
        self.assertIn("'glue'", parsed["Message"])
        st, _, parsed = send(self.glue("GetRegistry", body), body)
        self.assertEqual(st, 200, parsed)


class IcebergAuth(unittest.TestCase):
    def catalog(self, method, path, body=None, headers=None, sign=True, service="s3tables", **kw):
        data = json.dumps(body).encode() if body is not None else b""
        h = {"Content-Type": "application/json"} if body is not None else {}
        h.update(headers or {})
        url = SERVER.endpoint + "/iceberg/v1" + path
        if sign:
            h = sign_request(url, method, data, h, service=service, access_key=AK, secret_key=SK, **kw)
        return send(h, data, target="/iceberg/v1" + path, method=method)

    def test_anonymous_requests_are_refused(self):
        for method, path, body in (("GET", "/config", None), ("GET", "/namespaces", None),
                                   ("POST", "/namespaces", {"namespace": ["anon"]}),
                                   ("DELETE", "/namespaces/anon/tables/t?purgeRequested=true", None)):
            st, _, parsed = self.catalog(method, path, body, sign=False)
            self.assertEqual(st, 401, (method, path, parsed))
            self.assertEqual(parsed["error"]["type"], "NotAuthorizedException")
        st, _, parsed = self.catalog("GET", "/namespaces", headers={"Authorization": "Bearer wrong"}, sign=False)
        self.assertEqual(st, 401, parsed)

    def test_sigv4_s3tables_and_bearer_are_accepted(self):
        st, _, parsed = self.catalog("POST", "/namespaces", {"namespace": ["signed"]})
        self.assertEqual(st, 200, parsed)
        st, _, parsed = self.catalog("POST", "/namespaces", {"namespace": ["signed", "inner"]})
        self.assertEqual(st, 200, parsed)
        # A %1F in the path: the canonical URI is encoded once more (non-S3 services).
        st, _, parsed = self.catalog("GET", "/namespaces/signed%1Finner")
        self.assertEqual((st, parsed["namespace"]), (200, ["signed", "inner"]), parsed)
        st, _, parsed = self.catalog("GET", "/namespaces?parent=signed")
        self.assertEqual((st, parsed["namespaces"]), (200, [["signed", "inner"]]), parsed)
        st, _, parsed = self.catalog("GET", "/namespaces/signed", headers={"Authorization": "Bearer " + TOKEN},
                                     sign=False)
        self.assertEqual(st, 200, parsed)

    def test_forged_catalog_requests_are_refused(self):
        st, _, parsed = self.catalog("GET", "/namespaces", service="kinesis")
        self.assertEqual(st, 403, parsed)
        self.assertEqual(parsed["error"]["type"], "ForbiddenException")
        body = json.dumps({"namespace": ["genuine"]}).encode()
        url = SERVER.endpoint + "/iceberg/v1/namespaces"
        h = sign_request(url, "POST", body, {"Content-Type": "application/json"}, service="s3tables",
                         access_key=AK, secret_key=SK)
        forged = json.dumps({"namespace": ["forged"]}).encode()
        h["X-Amz-Content-Sha256"] = hashlib.sha256(body).hexdigest()
        st, _, parsed = send(h, forged, target="/iceberg/v1/namespaces")
        self.assertEqual(st, 403, parsed)
        # Path swap: a signature for one table cannot drop another.
        self.catalog("POST", "/namespaces", {"namespace": ["keep"]})
        h = sign_request(SERVER.endpoint + "/iceberg/v1/namespaces/other", "DELETE", b"", {}, service="s3tables",
                         access_key=AK, secret_key=SK)
        st, _, parsed = send(h, b"", target="/iceberg/v1/namespaces/keep", method="DELETE")
        self.assertEqual(st, 403, parsed)
        st, _, parsed = self.catalog("GET", "/namespaces/keep")
        self.assertEqual(st, 200, parsed)


class Metrics(unittest.TestCase):
    def test_metrics_need_the_token_unless_public(self):
        st, _, _ = send({}, b"", target="/metrics", method="GET")
        self.assertEqual(st, 401)
        st, _, body = send({"Authorization": "Bearer " + TOKEN}, b"", target="/metrics", method="GET")
        self.assertEqual(st, 200)
        st, _, _ = send({}, b"", target="/health", method="GET")
        self.assertEqual(st, 200)
        srv = Server(config_text=CONFIG + "public_metrics = true\n").start()
        try:
            st, _, _ = http_send(srv, "GET", "/metrics", {})
            self.assertEqual(st, 200)
        finally:
            srv.stop()
            srv.cleanup()


class DefaultMode(unittest.TestCase):
    """Without credentials any signature is accepted, but it must still be well formed and
    scoped to this server's region and to the service called; UNSIGNED-PAYLOAD is refused."""

    def test_default_mode(self):
        srv = Server().start()
        try:
            def h(op, body, **kw):
                return sign_request(srv.endpoint + "/", "POST", body,
                                    {"Content-Type": JSON11, "X-Amz-Target": KINESIS + op}, **kw)
            st, _, parsed = http_send(srv, "POST", "/", h("ListStreams", "{}", access_key="any", secret_key="x"), "{}")
            self.assertEqual(st, 200, parsed)
            st, _, parsed = http_send(srv, "POST", "/", h("ListStreams", "{}", region="ap-south-1"), "{}")
            self.assertEqual((st, parsed["__type"]), (400, "InvalidSignatureException"), parsed)
            st, _, parsed = http_send(srv, "POST", "/", h("ListStreams", "{}", signer=UnsignedPayloadSigner), "{}")
            self.assertEqual((st, parsed["__type"]), (400, "InvalidSignatureException"), parsed)
            st, _, parsed = http_send(srv, "GET", "/iceberg/v1/namespaces", {})  # the catalog stays open
            self.assertEqual(st, 200, parsed)
            st, _, _ = http_send(srv, "GET", "/metrics", {})
            self.assertEqual(st, 200)
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

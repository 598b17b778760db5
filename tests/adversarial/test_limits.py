"""Inputs built to hurt: schemas 10,000 levels deep (Iceberg create and add-schema, Glue
JSON and Avro definitions, Kinesis and Glue bodies), names far beyond the limits (Iceberg
namespaces and tables as S3 Tables limits them, channel names '.' and '..', a DLQ prefix
'../errs/'), and HTTP edge cases (headers over 64 KiB, Content-Length: -1, both
Content-Length and Transfer-Encoding). Each gets a 4xx answer; the server keeps serving
and no answer shows a server path."""

import json
import os
import socket
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, channel_request, http_send, kinesis_call, raw_call  # noqa: E402

SERVER = None
DEEP = 10000


def setUpModule():
    global SERVER
    SERVER = Server().start()


def tearDownModule():
    SERVER.stop()
    SERVER.cleanup()


def alive():
    with urllib.request.urlopen(SERVER.endpoint + "/health", timeout=5) as r:
        return r.status == 200


def catalog(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else b""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    return http_send(SERVER, method, "/iceberg/v1" + path, headers, data)


def deep_struct(levels):
    """An Iceberg struct type nested `levels` deep, built as text (json.dumps would recurse)."""
    head = '{"type":"struct","fields":[{"id":%d,"name":"f","required":false,"type":'
    text = "".join(head % (i + 1) for i in range(levels)) + '"int"' + "}]}" * levels
    return text


def raw_http(payload, timeout=10):
    """Sends raw bytes; returns the status line's code (or None if the connection closed)."""
    with socket.create_connection(("127.0.0.1", SERVER.port), timeout=timeout) as s:
        s.sendall(payload)
        data = b""
        try:
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    if not data.startswith(b"HTTP/1."):
        return None
    return int(data.split(b" ", 2)[1])


class DeepInputs(unittest.TestCase):
    def test_iceberg_create_and_add_schema(self):
        self.assertEqual(catalog("POST", "/namespaces", {"namespace": ["deep"]})[0], 200)
        body = '{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":false,' \
               '"type":' + deep_struct(DEEP) + '}]}}'
        st, _, parsed = http_send(SERVER, "POST", "/iceberg/v1/namespaces/deep/tables",
                                  {"Content-Type": "application/json"}, body)
        self.assertEqual(st, 400, parsed)
        self.assertEqual(parsed["error"]["type"], "BadRequestException")
        # Deep, but below the JSON guard: the type walker's own limit answers.
        body = '{"name":"t2","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":false,' \
               '"type":' + deep_struct(150) + '}]}}'
        st, _, parsed = http_send(SERVER, "POST", "/iceberg/v1/namespaces/deep/tables",
                                  {"Content-Type": "application/json"}, body)
        self.assertEqual(st, 400, parsed)
        self.assertIn("deeper than", parsed["error"]["message"])
        self.assertTrue(alive())
        st, _, parsed = catalog("POST", "/namespaces/deep/tables",
                                {"name": "ok", "schema": {"type": "struct", "fields": [
                                    {"id": 1, "name": "a", "required": False, "type": "int"}]}})
        self.assertEqual(st, 200, parsed)
        commit = '{"requirements":[],"updates":[{"action":"add-schema","schema":{"type":"struct","schema-id":1,' \
                 '"fields":[{"id":2,"name":"x","required":false,"type":' + deep_struct(DEEP) + '}]}}]}'
        st, _, parsed = http_send(SERVER, "POST", "/iceberg/v1/namespaces/deep/tables/ok",
                                  {"Content-Type": "application/json"}, commit)
        self.assertEqual(st, 400, parsed)
        commit = '{"requirements":[],"updates":[{"action":"add-schema","schema":{"type":"struct","schema-id":1,' \
                 '"fields":[{"id":2,"name":"x","required":false,"type":' + deep_struct(150) + '}]}}]}'
        st, _, parsed = http_send(SERVER, "POST", "/iceberg/v1/namespaces/deep/tables/ok",
                                  {"Content-Type": "application/json"}, commit)
        self.assertEqual(st, 400, parsed)
        self.assertTrue(alive())

    def test_glue_definitions(self):
        glue = SERVER.client("glue")
        glue.create_registry(RegistryName="deep")
        deep_json = '{"type":"object","properties":{"a":' * 3000 + '{"type":"string"}' + "}}" * 3000
        deep_avro = '{"type":"array","items":' * 5000 + '"int"' + "}" * 5000
        for fmt, definition in (("JSON", deep_json), ("AVRO", deep_avro)):
            with self.assertRaises(Exception) as cm:
                glue.create_schema(RegistryId={"RegistryName": "deep"}, SchemaName="s" + fmt, DataFormat=fmt,
                                   Compatibility="NONE", SchemaDefinition=definition)
            self.assertEqual(cm.exception.response["Error"]["Code"], "InvalidInputException")
            with self.assertRaises(Exception) as cm:
                glue.get_schema_by_definition(SchemaId={"RegistryName": "deep", "SchemaName": "s" + fmt},
                                              SchemaDefinition=definition)
            self.assertLess(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 500)
        self.assertTrue(alive())

    def test_deep_request_bodies(self):
        body = '{"StreamName":"s","Tags":{"a":' + "[" * 1000000 + "]" * 1000000 + "}}"
        st, _, parsed = raw_call(SERVER, "Kinesis_20131202.AddTagsToStream", body)
        self.assertEqual((st, parsed["__type"]), (400, "SerializationException"), parsed)
        st, _, parsed = raw_call(SERVER, "AWSGlue.CreateRegistry", '{"RegistryName":' + "[" * 100000 + "]" * 100000 + "}")
        self.assertEqual((st, parsed["__type"]), (400, "SerializationException"), parsed)
        st, _, parsed = http_send(SERVER, "POST", "/iceberg/v1/namespaces", {"Content-Type": "application/json"},
                                  '{"namespace":' + "[" * 1000000 + "]" * 1000000 + "}")
        self.assertEqual(st, 400, parsed)
        self.assertTrue(alive())


class Names(unittest.TestCase):
    def test_iceberg_names_follow_s3_tables(self):
        st, _, parsed = catalog("POST", "/namespaces", {"namespace": ["n" * 5000]})
        self.assertEqual(st, 400, parsed)
        self.assertLess(len(parsed["error"]["message"]), 400)
        for bad in (["Upper"], ["has-dash"], ["_lead"], ["trail_"], ["aws_reserved"], [""], ["a.b"]):
            st, _, parsed = catalog("POST", "/namespaces", {"namespace": bad})
            self.assertEqual(st, 400, (bad, parsed))
        self.assertEqual(catalog("POST", "/namespaces", {"namespace": ["n" * 255]})[0], 200)
        self.assertEqual(catalog("POST", "/namespaces", {"namespace": ["names"]})[0], 200)
        schema = {"type": "struct", "fields": [{"id": 1, "name": "a", "required": False, "type": "int"}]}
        st, _, parsed = catalog("POST", "/namespaces/names/tables", {"name": "t" * 300, "schema": schema})
        self.assertEqual(st, 400, parsed)
        self.assertNotIn(SERVER.data_dir, json.dumps(parsed))
        # The longest valid name works (the table folder stays within NAME_MAX).
        st, _, parsed = catalog("POST", "/namespaces/names/tables", {"name": "t" * 255, "schema": schema})
        self.assertEqual(st, 200, parsed)
        st, _, parsed = catalog("POST", f"/namespaces/{'n' * 255}/tables", {"name": "t" * 255, "schema": schema})
        self.assertEqual(st, 200, parsed)
        st, _, parsed = catalog("POST", "/namespaces/names/tables", {"name": "Bad-Name", "schema": schema})
        self.assertEqual(st, 400, parsed)

    def test_channel_names_and_prefixes(self):
        k = SERVER.client()
        k.create_stream(StreamName="chan", StreamModeDetails={"StreamMode": "ON_DEMAND"})
        for name in (".", ".."):
            st, body = kinesis_call(SERVER, "CreateChannel", channel_request(name, "chan"))
            self.assertEqual((st, body["__type"]), (400, "ValidationException"), body)
        dlq = {"BucketARN": "arn:aws:s3:::dlq-bucket", "ExpectedBucketOwner": "000000000000",
               "ErrorOutputPrefix": "../errs/"}
        st, body = kinesis_call(SERVER, "CreateChannel", channel_request("dlq", "chan", dlq=dlq))
        self.assertEqual((st, body["__type"]), (400, "ValidationException"), body)
        self.assertIn("errorOutputPrefix", body["message"])
        dlq["ErrorOutputPrefix"] = "errs/./x/"
        st, body = kinesis_call(SERVER, "CreateChannel", channel_request("dlq", "chan", dlq=dlq))
        self.assertEqual(st, 400, body)
        dlq["ErrorOutputPrefix"] = "errs/..x/"  # a dot inside a segment is a name, not a traversal
        st, body = kinesis_call(SERVER, "CreateChannel", channel_request("dlq", "chan", dlq=dlq))
        self.assertEqual(st, 200, body)


class HttpEdges(unittest.TestCase):
    def test_oversized_header_is_431(self):
        req = (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (70 * 1024) + b"\r\n\r\n")
        self.assertEqual(raw_http(req), 431)
        self.assertTrue(alive())

    def test_negative_content_length_is_400(self):
        req = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: -1\r\n\r\n"
        self.assertEqual(raw_http(req), 400)

    def test_content_length_with_transfer_encoding_is_400(self):
        req = (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: 4\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
        self.assertEqual(raw_http(req), 400)
        self.assertTrue(alive())

    def test_garbage_request_line_is_400(self):
        self.assertEqual(raw_http(b"\x00\x01\x02 nonsense\r\n\r\n"), 400)
        self.assertTrue(alive())


if __name__ == "__main__":
    unittest.main(verbosity=2)

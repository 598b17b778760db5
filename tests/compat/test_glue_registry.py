"""The Glue Schema Registry API through boto3's glue client and the AWS CLI against the
real server: registries, schemas, versions (numbering, idempotent registration,
compatibility checks with FAILURE versions, checkpoints, DISABLED), lookups by id,
number, latest and definition, deletes, paging, ARNs, timestamps and Glue's error
shapes (capital Message) for bad input."""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import ACCOUNT, Server, error_code, raw_call  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

SERVER = None
G = None
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def setUpModule():
    global SERVER, G
    SERVER = Server().start()
    G = SERVER.client("glue")


def tearDownModule():
    SERVER.stop()
    SERVER.cleanup()


def obj(props, required=()):
    return json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                       "properties": props, "required": list(required)})


V1 = obj({"id": {"type": "integer"}, "name": {"type": "string"}}, ["id"])


class Glue(unittest.TestCase):
    def assertError(self, code, fn, *args, message=None, **kw):
        with self.assertRaises(ClientError) as cm:
            fn(*args, **kw)
        self.assertEqual(error_code(cm.exception), code, cm.exception.response)
        if message is not None:
            self.assertEqual(cm.exception.response["Error"]["Message"], message)
        return cm.exception

    def test_registries(self):
        r = G.create_registry(RegistryName="reg-a", Description="first", Tags={"team": "data"})
        self.assertEqual(r["RegistryArn"], f"arn:aws:glue:us-east-1:{ACCOUNT}:registry/reg-a")
        self.assertEqual(r["Tags"], {"team": "data"})
        self.assertError("AlreadyExistsException", G.create_registry, RegistryName="reg-a",
                         message="Registry already exists. RegistryName: reg-a")
        got = G.get_registry(RegistryId={"RegistryArn": r["RegistryArn"]})
        self.assertEqual((got["RegistryName"], got["Description"], got["Status"]), ("reg-a", "first", "AVAILABLE"))
        self.assertRegex(got["CreatedTime"], ISO)
        self.assertRegex(got["UpdatedTime"], ISO)
        G.update_registry(RegistryId={"RegistryName": "reg-a"}, Description="second")
        self.assertEqual(G.get_registry(RegistryId={"RegistryName": "reg-a"})["Description"], "second")
        self.assertError("EntityNotFoundException", G.get_registry, RegistryId={"RegistryName": "nope"},
                         message="Registry is not found. RegistryName: nope")
        self.assertError("InvalidInputException", G.get_registry,
                         RegistryId={"RegistryName": "reg-a", "RegistryArn": r["RegistryArn"]},
                         message="One of registryName or registryArn has to be provided, both cannot be provided.")
        self.assertError("InvalidInputException", G.create_registry, RegistryName="bad name!",
                         message="The parameter value contains one or more characters that are not valid. "
                                 "Parameter Name: registryName")
        self.assertError("InvalidInputException", G.create_registry, RegistryName="x" * 256,
                         message="The resource name contains too many or too few characters. Parameter Name: registryName")
        self.assertError("EntityNotFoundException", G.get_registry,
                         RegistryId={"RegistryArn": "arn:aws:glue:eu-west-1:111111111111:registry/reg-a"})
        for i in range(5):
            G.create_registry(RegistryName=f"page-{i}")
        names = []
        for page in G.get_paginator("list_registries").paginate(PaginationConfig={"PageSize": 2}):
            self.assertLessEqual(len(page["Registries"]), 2)
            names += [x["RegistryName"] for x in page["Registries"]]
        self.assertEqual(sorted(n for n in names if n.startswith("page-")), [f"page-{i}" for i in range(5)])
        self.assertEqual(len(names), len(set(names)))
        d = G.delete_registry(RegistryId={"RegistryName": "page-0"})
        self.assertEqual(d["Status"], "DELETING")
        self.assertError("EntityNotFoundException", G.get_registry, RegistryId={"RegistryName": "page-0"})
        self.assertError("InvalidInputException", G.list_registries, MaxResults=500)
        self.assertError("InvalidInputException", G.list_registries, NextToken="garbage")

    def test_schema_lifecycle_and_versions(self):
        G.create_registry(RegistryName="reg-s")
        c = G.create_schema(RegistryId={"RegistryName": "reg-s"}, SchemaName="orders", DataFormat="JSON",
                            Compatibility="BACKWARD", Description="orders", SchemaDefinition=V1, Tags={"a": "b"})
        arn = f"arn:aws:glue:us-east-1:{ACCOUNT}:schema/reg-s/orders"
        self.assertEqual(c["SchemaArn"], arn)
        self.assertEqual((c["LatestSchemaVersion"], c["NextSchemaVersion"], c["SchemaCheckpoint"]), (1, 2, 1))
        self.assertEqual((c["SchemaStatus"], c["SchemaVersionStatus"], c["DataFormat"]), ("AVAILABLE", "AVAILABLE", "JSON"))
        self.assertRegex(c["SchemaVersionId"], UUID)
        self.assertError("AlreadyExistsException", G.create_schema, RegistryId={"RegistryName": "reg-s"},
                         SchemaName="orders", DataFormat="JSON", SchemaDefinition=V1,
                         message="Schema already exists. SchemaName: orders")
        sid = {"SchemaArn": arn}
        # Same definition, different spelling: the existing version.
        again = G.register_schema_version(SchemaId={"SchemaName": "orders", "RegistryName": "reg-s"},
                                          SchemaDefinition=json.dumps(json.loads(V1), indent=2))
        self.assertEqual((again["SchemaVersionId"], again["VersionNumber"]), (c["SchemaVersionId"], 1))
        v2 = G.register_schema_version(SchemaId=sid, SchemaDefinition=obj(
            {"id": {"type": "integer"}, "name": {"type": "string"}, "qty": {"type": "integer"}}, ["id"]))
        self.assertEqual((v2["VersionNumber"], v2["Status"]), (2, "AVAILABLE"))
        # Incompatible under BACKWARD (new required field): a FAILURE version, not an error.
        bad = G.register_schema_version(SchemaId=sid, SchemaDefinition=obj(
            {"id": {"type": "integer"}, "name": {"type": "string"}}, ["id", "name"]))
        self.assertEqual((bad["VersionNumber"], bad["Status"]), (3, "FAILURE"))
        s = G.get_schema(SchemaId=sid)
        self.assertEqual((s["LatestSchemaVersion"], s["NextSchemaVersion"], s["Compatibility"]), (2, 4, "BACKWARD"))
        self.assertEqual(s["Description"], "orders")
        self.assertRegex(s["CreatedTime"], ISO)
        # Malformed definitions are InvalidInput.
        self.assertError("InvalidInputException", G.register_schema_version, SchemaId=sid,
                         SchemaDefinition='{"type": "strnig"}')
        e = self.assertError("InvalidInputException", G.register_schema_version, SchemaId=sid, SchemaDefinition="{")
        self.assertTrue(e.response["Error"]["Message"].startswith("Schema definition of JSON data format is invalid"))

        latest = G.get_schema_version(SchemaId=sid, SchemaVersionNumber={"LatestVersion": True})
        self.assertEqual((latest["VersionNumber"], latest["SchemaVersionId"]), (2, v2["SchemaVersionId"]))
        self.assertEqual(latest["SchemaArn"], arn)
        self.assertRegex(latest["CreatedTime"], ISO)
        by_id = G.get_schema_version(SchemaVersionId=bad["SchemaVersionId"])
        self.assertEqual((by_id["VersionNumber"], by_id["Status"], by_id["DataFormat"]), (3, "FAILURE", "JSON"))
        self.assertEqual(json.loads(G.get_schema_version(SchemaId=sid, SchemaVersionNumber={"VersionNumber": 1})
                                    ["SchemaDefinition"]), json.loads(V1))
        self.assertError("InvalidInputException", G.get_schema_version, SchemaVersionId=v2["SchemaVersionId"],
                         SchemaId=sid, message="No other input parameters can be specified when fetching by SchemaVersionId.")
        self.assertError("InvalidInputException", G.get_schema_version, SchemaId=sid,
                         SchemaVersionNumber={"LatestVersion": True, "VersionNumber": 1},
                         message="Only one of VersionNumber or LatestVersion is required.")
        self.assertError("EntityNotFoundException", G.get_schema_version, SchemaId=sid,
                         SchemaVersionNumber={"VersionNumber": 9})
        self.assertError("EntityNotFoundException", G.get_schema_version,
                         SchemaVersionId="00000000-0000-4000-8000-000000000000",
                         message="Schema version is not found. SchemaVersionId: 00000000-0000-4000-8000-000000000000")
        found = G.get_schema_by_definition(SchemaId=sid, SchemaDefinition=V1)
        self.assertEqual((found["SchemaVersionId"], found["Status"]), (c["SchemaVersionId"], "AVAILABLE"))
        self.assertError("EntityNotFoundException", G.get_schema_by_definition, SchemaId=sid,
                         SchemaDefinition=obj({"other": {"type": "string"}}))
        listed = G.list_schema_versions(SchemaId=sid)["Schemas"]
        self.assertEqual([(x["VersionNumber"], x["Status"]) for x in listed],
                         [(1, "AVAILABLE"), (2, "AVAILABLE"), (3, "FAILURE")])
        pages = list(G.get_paginator("list_schema_versions").paginate(SchemaId=sid, PaginationConfig={"PageSize": 2}))
        self.assertEqual([len(p["Schemas"]) for p in pages], [2, 1])

        # Compatibility changes need a checkpoint; FORWARD_ALL from v2 on.
        self.assertError("InvalidInputException", G.update_schema, SchemaId=sid, Compatibility="FORWARD")
        u = G.update_schema(SchemaId=sid, Compatibility="FORWARD_ALL", SchemaVersionNumber={"VersionNumber": 2},
                            Description="now forward")
        self.assertEqual((u["SchemaName"], u["RegistryName"]), ("orders", "reg-s"))
        s = G.get_schema(SchemaId=sid)
        self.assertEqual((s["Compatibility"], s["SchemaCheckpoint"], s["Description"]), ("FORWARD_ALL", 2, "now forward"))
        # Dropping the required id breaks FORWARD.
        self.assertEqual(G.register_schema_version(SchemaId=sid, SchemaDefinition=obj({"name": {"type": "string"}}))
                         ["Status"], "FAILURE")
        self.assertEqual(G.register_schema_version(SchemaId=sid, SchemaDefinition=obj(
            {"id": {"type": "integer"}, "name": {"type": "string"}, "qty": {"type": "integer"}, "x": {"type": "string"}},
            ["id", "x"]))["Status"], "AVAILABLE")

        # Deleting versions: not the checkpoint; missing ones are reported per version.
        self.assertError("InvalidInputException", G.delete_schema_versions, SchemaId=sid, Versions="2-3")
        d = G.delete_schema_versions(SchemaId=sid, Versions="3-6")
        self.assertEqual([e["VersionNumber"] for e in d["SchemaVersionErrors"]], [6])
        self.assertEqual(d["SchemaVersionErrors"][0]["ErrorDetails"]["ErrorCode"], "EntityNotFoundException")
        self.assertError("InvalidInputException", G.delete_schema_versions, SchemaId=sid, Versions="x")
        self.assertError("InvalidInputException", G.delete_schema_versions, SchemaId=sid, Versions="3-40")
        self.assertEqual(G.get_schema(SchemaId=sid)["LatestSchemaVersion"], 2)

        listed = G.list_schemas(RegistryId={"RegistryName": "reg-s"})["Schemas"]
        self.assertEqual([(x["SchemaName"], x["SchemaArn"], x["SchemaStatus"]) for x in listed],
                         [("orders", arn, "AVAILABLE")])
        dl = G.delete_schema(SchemaId=sid)
        self.assertEqual((dl["SchemaArn"], dl["Status"]), (arn, "DELETING"))
        self.assertError("EntityNotFoundException", G.get_schema, SchemaId=sid,
                         message="Schema is not found. RegistryName: reg-s, SchemaName: orders, SchemaArn: null")

    def test_default_registry_formats_and_ids(self):
        avro1 = json.dumps({"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}]})
        c = G.create_schema(SchemaName="users", DataFormat="AVRO", SchemaDefinition=avro1)
        self.assertEqual(c["RegistryName"], "default-registry")
        self.assertEqual(c["Compatibility"], "BACKWARD")
        self.assertEqual(G.get_registry(RegistryId={"RegistryName": "default-registry"})["RegistryName"], "default-registry")
        sid = {"SchemaName": "users"}  # no RegistryName: the default registry
        ok = G.register_schema_version(SchemaId=sid, SchemaDefinition=json.dumps(
            {"type": "record", "name": "User", "fields": [{"name": "id", "type": "long"},
                                                          {"name": "e", "type": ["null", "string"], "default": None}]}))
        self.assertEqual(ok["Status"], "AVAILABLE")
        nok = G.register_schema_version(SchemaId=sid, SchemaDefinition=json.dumps(
            {"type": "record", "name": "User", "fields": [{"name": "id", "type": "long"}, {"name": "z", "type": "string"}]}))
        self.assertEqual(nok["Status"], "FAILURE")
        self.assertError("InvalidInputException", G.register_schema_version, SchemaId=sid,
                         SchemaDefinition='{"type":"nonsense"}')
        G.create_schema(SchemaName="protos", DataFormat="PROTOBUF", Compatibility="DISABLED",
                        SchemaDefinition='syntax = "proto3";\nmessage A { int32 x = 1; }')
        self.assertError("InvalidInputException", G.register_schema_version, SchemaId={"SchemaName": "protos"},
                         SchemaDefinition="message B { string y = 1; }",
                         message="Compatibility DISABLED does not allow versioning. SchemaId: SchemaId(schemaArn=null, "
                                 "schemaName=protos, registryName=default-registry)")
        self.assertError("InvalidInputException", G.create_schema, SchemaName="x", DataFormat="XML", SchemaDefinition="{}")
        self.assertError("InvalidInputException", G.create_schema, SchemaName="x", DataFormat="JSON",
                         Compatibility="SOMETIMES", SchemaDefinition="{}")
        self.assertError("EntityNotFoundException", G.create_schema, RegistryId={"RegistryName": "missing"},
                         SchemaName="x", DataFormat="JSON", SchemaDefinition="{}")
        self.assertError("InvalidInputException", G.get_schema, SchemaId={},
                         message="At least one of (registryName and schemaName) or schemaArn has to be provided.")
        self.assertError("InvalidInputException", G.get_schema,
                         SchemaId={"SchemaArn": f"arn:aws:glue:us-east-1:{ACCOUNT}:schema/default-registry/users",
                                   "SchemaName": "users"},
                         message="One of (registryName and schemaName) or schemaArn has to be provided, both cannot be "
                                 "provided.")
        self.assertError("InvalidInputException", G.get_schema, SchemaId={"SchemaArn": "arn:aws:kinesis:x"})
        valid = G.check_schema_version_validity(DataFormat="JSON", SchemaDefinition='{"type":"object"}')
        self.assertEqual(valid, {**valid, "Valid": True})
        invalid = G.check_schema_version_validity(DataFormat="AVRO", SchemaDefinition='{"type":"nope"}')
        self.assertFalse(invalid["Valid"])
        self.assertIn("AVRO data format is invalid", invalid["Error"])
        all_schemas = [s["SchemaName"] for s in G.list_schemas()["Schemas"]]
        self.assertIn("users", all_schemas)
        self.assertIn("protos", all_schemas)

    def test_wire_errors(self):
        status, headers, body = raw_call(SERVER, "AWSGlue.GetRegistry", '{"RegistryId": "not-a-struct"}')
        self.assertEqual(status, 400)
        self.assertEqual(body["__type"], "SerializationException")
        status, headers, body = raw_call(SERVER, "AWSGlue.CreateRegistry", '{"RegistryName": ""}')
        self.assertEqual(status, 400)
        self.assertEqual(body["__type"], "InvalidInputException")
        self.assertIn("Message", body)
        self.assertNotIn("message", body)
        self.assertEqual(headers.get("x-amzn-ErrorType"), "InvalidInputException")
        status, _, body = raw_call(SERVER, "AWSGlue.NoSuchOperation", "{}")
        self.assertEqual((status, body["__type"]), (400, "UnknownOperationException"))

    def test_cli(self):
        SERVER.cli("glue", "create-registry", "--registry-name", "cli-reg")
        _, out, _ = SERVER.cli("glue", "create-schema", "--registry-id", "RegistryName=cli-reg", "--schema-name", "s",
                               "--data-format", "JSON", "--compatibility", "FULL", "--schema-definition", V1)
        created = json.loads(out)
        self.assertEqual(created["LatestSchemaVersion"], 1)
        _, out, _ = SERVER.cli("glue", "register-schema-version", "--schema-id", "RegistryName=cli-reg,SchemaName=s",
                               "--schema-definition", obj({"id": {"type": "integer"}, "name": {"type": "string"},
                                                           "note": {"type": "string"}}, ["id"]))
        self.assertEqual(json.loads(out)["VersionNumber"], 2)
        _, out, _ = SERVER.cli("glue", "get-schema-version", "--schema-id", "RegistryName=cli-reg,SchemaName=s",
                               "--schema-version-number", "LatestVersion=true")
        self.assertEqual(json.loads(out)["VersionNumber"], 2)
        _, out, _ = SERVER.cli("glue", "list-schema-versions", "--schema-id", "RegistryName=cli-reg,SchemaName=s")
        self.assertEqual([v["VersionNumber"] for v in json.loads(out)["Schemas"]], [1, 2])
        _, out, _ = SERVER.cli("glue", "get-schema-by-definition", "--schema-id", "RegistryName=cli-reg,SchemaName=s",
                               "--schema-definition", V1)
        self.assertEqual(json.loads(out)["SchemaVersionId"], created["SchemaVersionId"])
        rc, _, err = SERVER.cli("glue", "get-schema", "--schema-id", "RegistryName=cli-reg,SchemaName=none", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("EntityNotFoundException", err)
        SERVER.cli("glue", "delete-schema", "--schema-id", "RegistryName=cli-reg,SchemaName=s")
        SERVER.cli("glue", "delete-registry", "--registry-id", "RegistryName=cli-reg")

    def test_restart_keeps_everything(self):
        global G
        G.create_registry(RegistryName="durable")
        c = G.create_schema(RegistryId={"RegistryName": "durable"}, SchemaName="d", DataFormat="JSON", SchemaDefinition=V1)
        SERVER.stop()
        SERVER.start()
        G = SERVER.client("glue")
        got = G.get_schema_version(SchemaVersionId=c["SchemaVersionId"])
        self.assertEqual(json.loads(got["SchemaDefinition"]), json.loads(V1))


if __name__ == "__main__":
    unittest.main(verbosity=2)

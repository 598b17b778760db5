"""CBOR (application/x-amz-cbor-1.1, the Java SDK's and KCL's default): every Kinesis
operation round-trips through a test-side CBOR client — cbor2 (Debian's python3-cbor2)
encodes the requests and decodes the answers, botocore's SigV4 signer signs them — and
the answers equal the JSON 1.1 answers of the same server. Blobs travel as CBOR byte
strings, timestamps as tag 1 + epoch milliseconds (what the AWS SDK for Java writes and
reads), errors as CBOR maps with the JSON error's type, message and status."""

import base64
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, http_send, raw_call, sign_request  # noqa: E402

try:
    import cbor2
except ImportError:
    # Debian's python3-cbor2 (scripts/install-deps) lives in the system Python's
    # dist-packages; reach it from another Python of the same version. Missing → the
    # import below fails the suite (never a silent skip).
    sys.path.append("/usr/lib/python3/dist-packages")
    import cbor2
from cbor2 import decoder as cbor_decoder  # noqa: E402

CBOR = "application/x-amz-cbor-1.1"
TARGET = "Kinesis_20131202."


class Millis:
    """A tag-1 value as sent (the Java SDKs put epoch milliseconds there)."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Millis({self.value})"


def _decode_epoch(dec):
    return dec.set_shareable(Millis(dec._decode()))


# cbor2 reads tag 1 as RFC 8949 seconds; read it as the raw value instead (pure-Python
# decoder only, this process only).
cbor_decoder.semantic_decoders[1] = _decode_epoch


def cbor_loads(data):
    import io
    return cbor_decoder.CBORDecoder(io.BytesIO(data)).decode()


def to_json_model(v):
    """A decoded CBOR answer in the JSON 1.1 model: bytes → base64, tag 1 → seconds."""
    if isinstance(v, dict):
        return {k: to_json_model(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json_model(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, Millis):
        return round(v.value / 1000.0, 3)
    return v


def round_timestamps(v, keys=("StreamCreationTimestamp", "ApproximateArrivalTimestamp",
                                "ConsumerCreationTimestamp")):
    if isinstance(v, dict):
        return {k: (round(x, 3) if k in keys and isinstance(x, (int, float)) else round_timestamps(x))
                for k, x in v.items()}
    if isinstance(v, list):
        return [round_timestamps(x) for x in v]
    return v


class Fixture:
    srv = None


def cbor_call(op, body, raw=None, sign=True, content_type=CBOR):
    """(status, headers, decoded CBOR body or None) of one CBOR call."""
    data = raw if raw is not None else cbor2.dumps(body)
    headers = {"Content-Type": content_type, "X-Amz-Target": TARGET + op}
    if sign:
        headers = sign_request(Fixture.srv.endpoint + "/", "POST", data, headers)
    st, hdrs, out = http_send(Fixture.srv, "POST", "/", headers, data)
    if out is None:
        return st, hdrs, None
    if not isinstance(out, (bytes, bytearray)):
        raise AssertionError(f"{op}: the CBOR answer parsed as JSON: {out!r}")
    return st, hdrs, cbor_loads(bytes(out))


def json_call(op, body):
    st, _, out = raw_call(Fixture.srv, TARGET + op, json.dumps(body))
    return st, out


def both(test, op, cbor_body, json_body=None):
    """Calls `op` in both wire formats; asserts the same status; returns both answers in
    the JSON model (CBOR one converted)."""
    st_c, hdrs, out_c = cbor_call(op, cbor_body)
    st_j, out_j = json_call(op, json_body if json_body is not None else cbor_body)
    test.assertEqual(st_c, st_j, f"{op}: CBOR {out_c!r} vs JSON {out_j!r}")
    if out_c is not None:
        test.assertEqual(hdrs.get("Content-Type"), CBOR, op)
    return (to_json_model(out_c) if out_c is not None else None), out_j


class CborCompat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        Fixture.srv = Server().start()

    @classmethod
    def tearDownClass(cls):
        Fixture.srv.stop()
        Fixture.srv.cleanup()

    def same(self, op, body, json_body=None, drop=()):
        c, j = both(self, op, body, json_body)
        for k in drop:
            if isinstance(c, dict):
                c.pop(k, None)
            if isinstance(j, dict):
                j.pop(k, None)
        self.assertEqual(round_timestamps(c), round_timestamps(j), op)
        return c

    def ok(self, op, body):
        st, _, out = cbor_call(op, body)
        self.assertEqual(st, 200, f"{op}: {out!r}")
        return to_json_model(out) if out is not None else None

    def test_every_operation_round_trips(self):
        # Control plane: create through CBOR, read both ways.
        self.assertIsNone(self.ok("CreateStream", {"StreamName": "cb", "ShardCount": 2,
                                                    "Tags": {"team": "a"}}))
        st, _ = json_call("CreateStream", {"StreamName": "js", "ShardCount": 2, "Tags": {"team": "a"}})
        self.assertEqual(st, 200)
        s = {"StreamName": "cb"}
        arn = self.same("DescribeStreamSummary", s)["StreamDescriptionSummary"]["StreamARN"]
        self.same("DescribeStream", s)
        self.same("DescribeStream", {"StreamName": "cb", "Limit": 1})
        self.same("ListStreams", {})
        self.same("ListShards", s)
        self.same("DescribeLimits", {})
        self.same("DescribeAccountSettings", {})
        self.same("ListTagsForStream", s)
        self.same("ListTagsForResource", {"ResourceARN": arn})

        # Data plane: binary data that is not UTF-8, and an empty blob.
        payloads = [bytes(range(256)), b"", b"\xff\xfe\x00", "h\u00e9llo".encode()]
        put = self.ok("PutRecord", {"StreamName": "cb", "Data": payloads[0], "PartitionKey": "k0"})
        self.assertEqual(set(put), {"ShardId", "SequenceNumber", "EncryptionType"})
        pr = self.ok("PutRecords", {"StreamName": "cb", "Records": [
            {"Data": d, "PartitionKey": "k0"} for d in payloads[1:]]})
        self.assertEqual(pr["FailedRecordCount"], 0)
        self.assertEqual([r["ShardId"] for r in pr["Records"]], [put["ShardId"]] * 3)
        _, pj = json_call("PutRecords", {"StreamName": "js", "Records": [
            {"Data": base64.b64encode(d).decode(), "PartitionKey": "k0"} for d in payloads[1:]]})
        self.assertEqual(set(pj), set(pr))

        it_c = self.ok("GetShardIterator", {"StreamName": "cb", "ShardId": put["ShardId"],
                                            "ShardIteratorType": "TRIM_HORIZON"})["ShardIterator"]
        st, _, raw = cbor_call("GetRecords", {"ShardIterator": it_c})
        self.assertEqual(st, 200, raw)
        recs = raw["Records"]
        self.assertEqual([bytes(r["Data"]) for r in recs], payloads)
        for r in recs:
            self.assertIsInstance(r["Data"], bytes)
            ts = r["ApproximateArrivalTimestamp"]
            self.assertIsInstance(ts, Millis)
            self.assertIsInstance(ts.value, int)  # epoch milliseconds, as the Java SDK reads them
            self.assertLess(abs(ts.value - time.time() * 1000), 120_000)
        # The same iterator read as JSON gives the same records.
        st, gj = json_call("GetRecords", {"ShardIterator": it_c})
        self.assertEqual(st, 200)
        gc = to_json_model(raw)
        for g in (gc, gj):
            g.pop("NextShardIterator")
        self.assertEqual(round_timestamps(gc), round_timestamps(gj))
        self.assertEqual(set(raw), {"Records", "MillisBehindLatest", "NextShardIterator"})

        # AT_TIMESTAMP with a tag-1 millisecond timestamp: a time after the first record
        # skips it; a second-valued tag (RFC 8949 style) is understood too.
        first_ms = recs[0]["ApproximateArrivalTimestamp"].value
        time.sleep(0.05)
        it2 = self.ok("GetShardIterator", {"StreamName": "cb", "ShardId": put["ShardId"],
                                           "ShardIteratorType": "AT_TIMESTAMP",
                                           "Timestamp": cbor2.CBORTag(1, first_ms - 5000)})["ShardIterator"]
        self.assertEqual(len(cbor_call("GetRecords", {"ShardIterator": it2})[2]["Records"]), 4)
        it3 = self.ok("GetShardIterator", {"StreamName": "cb", "ShardId": put["ShardId"],
                                           "ShardIteratorType": "AT_TIMESTAMP",
                                           "Timestamp": cbor2.CBORTag(1, int(time.time() * 1000))})["ShardIterator"]
        self.assertEqual(cbor_call("GetRecords", {"ShardIterator": it3})[2]["Records"], [])
        it4 = self.ok("GetShardIterator", {"StreamName": "cb", "ShardId": put["ShardId"],
                                           "ShardIteratorType": "AT_TIMESTAMP",
                                           "Timestamp": cbor2.CBORTag(1, first_ms / 1000.0 - 5)})["ShardIterator"]
        self.assertEqual(len(cbor_call("GetRecords", {"ShardIterator": it4})[2]["Records"]), 4)
        self.same("ListShards", {"StreamName": "cb", "ShardFilter": {
            "Type": "AT_TIMESTAMP", "Timestamp": cbor2.CBORTag(1, int(time.time() * 1000))}},
            json_body={"StreamName": "cb", "ShardFilter": {"Type": "AT_TIMESTAMP",
                                                           "Timestamp": int(time.time())}})

        # Mutations through CBOR, checked through JSON; answers compared with the JSON
        # answer of the same operation on the twin stream.
        self.assertIsNone(self.ok("AddTagsToStream", {"StreamName": "cb", "Tags": {"x": "1", "y": "2"}}))
        self.assertIsNone(self.ok("RemoveTagsFromStream", {"StreamName": "cb", "TagKeys": ["y"]}))
        self.assertIsNone(self.ok("TagResource", {"ResourceARN": arn, "Tags": {"z": "3"}}))
        self.assertIsNone(self.ok("UntagResource", {"ResourceARN": arn, "TagKeys": ["team"]}))
        tags = json_call("ListTagsForStream", s)[1]["Tags"]
        self.assertEqual({t["Key"]: t["Value"] for t in tags}, {"x": "1", "z": "3"})
        self.assertIsNone(self.ok("IncreaseStreamRetentionPeriod", {"StreamName": "cb", "RetentionPeriodHours": 48}))
        self.assertIsNone(self.ok("DecreaseStreamRetentionPeriod", {"StreamName": "cb", "RetentionPeriodHours": 36}))
        self.assertEqual(json_call("DescribeStreamSummary", s)[1]["StreamDescriptionSummary"]
                         ["RetentionPeriodHours"], 36)
        for op in ("EnableEnhancedMonitoring", "DisableEnhancedMonitoring"):
            c = self.ok(op, {"StreamName": "cb", "ShardLevelMetrics": ["IncomingBytes"]})
            _, j = json_call(op, {"StreamName": "js", "ShardLevelMetrics": ["IncomingBytes"]})
            self.assertEqual(c["CurrentShardLevelMetrics"], j["CurrentShardLevelMetrics"], op)
            self.assertEqual(c["DesiredShardLevelMetrics"], j["DesiredShardLevelMetrics"], op)
        self.assertIsNone(self.ok("StartStreamEncryption", {"StreamName": "cb", "EncryptionType": "KMS",
                                                            "KeyId": "alias/k"}))
        self.assertEqual(json_call("DescribeStreamSummary", s)[1]["StreamDescriptionSummary"]["KeyId"], "alias/k")
        self.assertIsNone(self.ok("StopStreamEncryption", {"StreamName": "cb", "EncryptionType": "KMS",
                                                           "KeyId": "alias/k"}))
        policy = json.dumps({"Version": "2012-10-17", "Statement": []})
        self.assertIsNone(self.ok("PutResourcePolicy", {"ResourceARN": arn, "Policy": policy}))
        self.same("GetResourcePolicy", {"ResourceARN": arn})
        self.assertIsNone(self.ok("DeleteResourcePolicy", {"ResourceARN": arn}))
        self.assertIsNone(self.ok("UpdateMaxRecordSize", {"StreamARN": arn, "MaxRecordSizeInKiB": 2048}))
        self.assertEqual(json_call("DescribeStreamSummary", s)[1]["StreamDescriptionSummary"]
                         ["MaxRecordSizeInKiB"], 2048)
        self.assertIsNone(self.ok("SplitShard", {"StreamName": "cb", "ShardToSplit": "shardId-000000000000",
                                                 "NewStartingHashKey": str(2 ** 126)}))
        self.assertIsNone(self.ok("MergeShards", {"StreamName": "cb", "ShardToMerge": "shardId-000000000002",
                                                  "AdjacentShardToMerge": "shardId-000000000003"}))
        usc = self.ok("UpdateShardCount", {"StreamName": "cb", "TargetShardCount": 4,
                                           "ScalingType": "UNIFORM_SCALING"})
        self.assertEqual((usc["StreamName"], usc["TargetShardCount"]), ("cb", 4))
        self.same("ListShards", {"StreamName": "cb", "ShardFilter": {"Type": "AT_LATEST"}})
        self.assertIsNone(self.ok("UpdateStreamMode", {"StreamARN": arn,
                                                       "StreamModeDetails": {"StreamMode": "ON_DEMAND"}}))
        w = self.ok("UpdateStreamWarmThroughput", {"StreamName": "cb", "WarmThroughputMiBps": 10})
        self.assertEqual(w["WarmThroughput"]["TargetMiBps"], 10)
        self.same("DescribeStreamSummary", s)
        self.same("UpdateAccountSettings", {"MinimumThroughputBillingCommitment": {"Status": "DISABLED"}})
        self.same("ListChannels", {})
        # Enhanced fan-out consumers: ConsumerCreationTimestamp is a tag-1 timestamp too.
        st, _, reg = cbor_call("RegisterStreamConsumer", {"StreamARN": arn, "ConsumerName": "kcl"})
        self.assertEqual(st, 200, reg)
        self.assertIsInstance(reg["Consumer"]["ConsumerCreationTimestamp"], Millis)
        self.assertIsInstance(reg["Consumer"]["ConsumerCreationTimestamp"].value, int)
        time.sleep(0.6)  # past CREATING, so that both answers see ACTIVE
        carn = reg["Consumer"]["ConsumerARN"]
        self.assertEqual(self.same("DescribeStreamConsumer", {"ConsumerARN": carn})
                         ["ConsumerDescription"]["ConsumerStatus"], "ACTIVE")
        self.same("ListStreamConsumers", {"StreamARN": arn})
        self.assertIsNone(self.ok("DeregisterStreamConsumer", {"ConsumerARN": carn}))
        self.assertIsNone(self.ok("DeleteStream", {"StreamName": "cb", "EnforceConsumerDeletion": True}))
        self.assertEqual(json_call("DescribeStreamSummary", s)[0], 400)

    def test_errors_are_cbor_maps_like_the_json_errors(self):
        for op, body in [("DescribeStreamSummary", {"StreamName": "missing"}),
                         ("DescribeStream", {"StreamName": "bad name!", "Limit": 0}),
                         ("CreateStream", {"StreamName": 5}),
                         ("GetRecords", {"ShardIterator": "nonsense"}),
                         ("ListShards", {})]:
            st_c, hdrs, c = cbor_call(op, body)
            st_j, j = json_call(op, body)
            self.assertEqual(st_c, st_j, op)
            self.assertEqual(st_c, 400, op)
            self.assertEqual(hdrs["Content-Type"], CBOR, op)
            self.assertEqual(c, j, op)  # same members: __type and message (or Message)
            self.assertEqual(hdrs.get("x-amzn-ErrorType"), c["__type"], op)

    def test_blob_and_timestamp_types_are_checked(self):
        st, _, c = cbor_call("PutRecord", {"StreamName": "x", "Data": "aGk=", "PartitionKey": "k"})
        self.assertEqual((st, c["__type"]), (400, "SerializationException"), c)
        st, _, c = cbor_call("PutRecord", {"StreamName": b"x", "Data": b"hi", "PartitionKey": "k"})
        self.assertEqual((st, c["__type"]), (400, "SerializationException"), c)
        st, _, c = cbor_call("GetShardIterator", {"StreamName": "x", "ShardId": "shardId-000000000000",
                                                  "ShardIteratorType": "AT_TIMESTAMP", "Timestamp": "now"})
        self.assertEqual((st, c["__type"]), (400, "SerializationException"), c)

    def test_malformed_cbor_is_a_serialization_exception(self):
        cases = [b"\xa1\x64Da", b"\xa1\x61\x41\x01\x00", b"\x81\x01", b"\xff", b"{}",
                 b"\xa1\x61\x41" + b"\x81" * 5000 + b"\x00",
                 b"\xa1\x61\x41\x5b\x7f\xff\xff\xff\xff\xff\xff\xff"]
        for raw in cases:
            for sign in (True, False):  # even unauthenticated: the body is read first
                st, hdrs, c = cbor_call("ListStreams", None, raw=raw, sign=sign)
                self.assertEqual(st, 400, raw)
                self.assertEqual(c["__type"], "SerializationException", (raw, c))
                self.assertEqual(hdrs["Content-Type"], CBOR)
        # A well-formed body without authentication is refused as such.
        st, _, c = cbor_call("ListStreams", {}, sign=False)
        self.assertEqual((st, c["__type"]), (400, "MissingAuthenticationTokenException"))

    def test_indefinite_lengths_are_accepted(self):
        # {_ "StreamName": (_ "c", "b2"), "ShardCount": 1} as the Jackson generator writes.
        raw = (b"\xbf\x6aStreamName\x7f\x61c\x62b2\xff\x6aShardCount\x01\xff")
        st, _, c = cbor_call("CreateStream", None, raw=raw)
        self.assertEqual(st, 200, c)
        self.assertEqual(json_call("DescribeStreamSummary", {"StreamName": "cb2"})[0], 200)

    # PutRecords and GetRecords take direct paths (no JSON in between): the same records
    # and the same answers as through JSON, in both length styles, with every record's
    # bytes intact; and the same refusals, in the same order of checks.
    def test_put_records_and_get_records_direct_paths(self):
        import random
        rng = random.Random(7)
        st, _ = json_call("CreateStream", {"StreamName": "direct", "ShardCount": 3})
        self.assertEqual(st, 200)
        time.sleep(0.2)
        records = []
        for i in range(500):
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 3000)))
            rec = {"Data": data, "PartitionKey": f"k{i}\u00e9"}
            if i % 7 == 0:
                rec["ExplicitHashKey"] = str(rng.randrange(2 ** 128))
            records.append(rec)
        pr = self.ok("PutRecords", {"StreamName": "direct", "Records": records})
        self.assertEqual(pr["FailedRecordCount"], 0)
        self.assertEqual(len(pr["Records"]), 500)
        self.assertEqual(pr["EncryptionType"], "NONE")
        # Jackson's style: indefinite maps, arrays and chunked strings.
        def text(s):
            b = s.encode()
            return bytes([0x60 + len(b)]) + b if len(b) < 24 else cbor2.dumps(s)
        jackson = (b"\xbf" + text("StreamName") + b"\x7f" + text("dir") + text("ect") + b"\xff" +
                   text("Records") + b"\x9f" +
                   b"\xbf" + text("Data") + b"\x5f\x42\x00\xff\x41\x7f\xff" + text("PartitionKey") +
                   b"\x7f" + text("chun") + text("ked") + b"\xff" + text("Extra") + b"\x9f\x01\xff\xff" +
                   b"\xbf" + text("PartitionKey") + text("p2") + text("Data") + b"\x40\xff" +
                   b"\xff\xff")
        st, _, jr = cbor_call("PutRecords", None, raw=jackson)
        self.assertEqual(st, 200, jr)
        self.assertEqual(jr["FailedRecordCount"], 0)
        want = sorted([(bytes(r["Data"]), r["PartitionKey"]) for r in records] +
                      [(b"\x00\xff\x7f", "chunked"), (b"", "p2")])
        shards = [s["ShardId"] for s in json_call("ListShards", {"StreamName": "direct"})[1]["Shards"]]
        got_c, got_j = [], []
        for shard in shards:
            it = self.ok("GetShardIterator", {"StreamName": "direct", "ShardId": shard,
                                              "ShardIteratorType": "TRIM_HORIZON"})["ShardIterator"]
            st, hdrs, c = cbor_call("GetRecords", {"ShardIterator": it, "Limit": 10000})
            self.assertEqual(st, 200, c)
            self.assertEqual(hdrs["Content-Type"], CBOR)
            self.assertEqual(set(c), {"Records", "MillisBehindLatest", "NextShardIterator"})
            st, j = json_call("GetRecords", {"ShardIterator": it, "Limit": 10000})
            self.assertEqual(st, 200)
            for r in c["Records"]:
                self.assertIsInstance(r["Data"], bytes)
                self.assertIsInstance(r["ApproximateArrivalTimestamp"], Millis)
            cm = to_json_model(c)
            cm.pop("NextShardIterator")
            j.pop("NextShardIterator")
            self.assertEqual(round_timestamps(cm), round_timestamps(j), shard)
            got_c += [(bytes(r["Data"]), r["PartitionKey"]) for r in c["Records"]]
            got_j += [(base64.b64decode(r["Data"]), r["PartitionKey"]) for r in j["Records"]]
        self.assertEqual(sorted(got_c), want)
        self.assertEqual(sorted(got_j), want)
        # Sequence numbers and shards of the answer name where each record went.
        by_seq = {r["SequenceNumber"]: r["ShardId"] for r in pr["Records"]}
        self.assertEqual(len(by_seq), 500)

        # Refusals: the same type (and, for the model's checks, the same text) as JSON.
        def same_refusal(cbor_body, json_body, same_message=True):
            st_c, _, c = cbor_call("PutRecords", cbor_body)
            st_j, j = json_call("PutRecords", json_body)
            self.assertEqual((st_c, c["__type"]), (st_j, j["__type"]), (c, j))
            if same_message:
                self.assertEqual(c.get("message"), j.get("message"))
            return c
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        same_refusal({"StreamName": "direct", "Records": [{"Data": b"x"}]},
                     {"StreamName": "direct", "Records": [{"Data": b64(b"x")}]})
        same_refusal({"StreamName": "direct", "Records": [{"Data": b"x", "PartitionKey": "k"}] * 501},
                     {"StreamName": "direct", "Records": [{"Data": b64(b"x"), "PartitionKey": "k"}] * 501})
        same_refusal({"StreamName": "direct", "Records": []}, {"StreamName": "direct", "Records": []})
        same_refusal({"Records": [{"Data": b"x", "PartitionKey": "k"}]},
                     {"Records": [{"Data": b64(b"x"), "PartitionKey": "k"}]})
        same_refusal({"StreamName": "direct", "Records": [{"Data": b"x", "PartitionKey": "k",
                                                           "ExplicitHashKey": "-1"}]},
                     {"StreamName": "direct", "Records": [{"Data": b64(b"x"), "PartitionKey": "k",
                                                           "ExplicitHashKey": "-1"}]})
        same_refusal({"StreamName": "nope", "Records": [{"Data": b"x", "PartitionKey": "k"}]},
                     {"StreamName": "nope", "Records": [{"Data": b64(b"x"), "PartitionKey": "k"}]})
        same_refusal({"StreamName": "direct", "Records": [{"Data": b"x", "PartitionKey": 5}]},
                     {"StreamName": "direct", "Records": [{"Data": b64(b"x"), "PartitionKey": 5}]})
        same_refusal({"StreamName": "direct", "Records": {"a": 1}}, {"StreamName": "direct", "Records": {"a": 1}})
        same_refusal({"StreamName": "direct", "Records": [5]}, {"StreamName": "direct", "Records": [5]})
        for bad in ({"StreamName": "direct", "Records": [{"Data": "eA==", "PartitionKey": "k"}]},
                    {"StreamName": b"direct", "Records": [{"Data": b"x", "PartitionKey": "k"}]},
                    {"StreamName": "direct", "Records": [{"Data": b"x", "PartitionKey": b"k"}]},
                    {"StreamName": "direct", "Other": b"bytes", "Records": [{"Data": b"x", "PartitionKey": "k"}]},
                    {"StreamName": "direct", "Records": [{"Data": b"x", "PartitionKey": "k", "N": float("nan")}]}):
            st, _, c = cbor_call("PutRecords", bad)
            self.assertEqual((st, c["__type"]), (400, "SerializationException"), (bad, c))
        # Invalid UTF-8 in a partition key, and a truncated body.
        raw = cbor2.dumps({"StreamName": "direct", "Records": [{"Data": b"x", "PartitionKey": "k"}]})
        for broken in (raw.replace(b"\x61k", b"\x61\xff"), raw[:-1]):
            st, _, c = cbor_call("PutRecords", None, raw=broken)
            self.assertEqual((st, c["__type"]), (400, "SerializationException"), c)
        # Unauthenticated: refused after the body checks, as AWS orders them.
        st, _, c = cbor_call("PutRecords", {"StreamName": "direct", "Records": [{"Data": b"x", "PartitionKey": "k"}]},
                             sign=False)
        self.assertEqual((st, c["__type"]), (400, "MissingAuthenticationTokenException"), c)


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""A test-side encoder (and decoder) of the Glue Schema Registry wire format that the
GSR serializer library writes into Kinesis records (aws-api.md §D.6, spec §2.3):

    byte 0      header version 0x03
    byte 1      compression: 0x00 none, 0x05 zlib (RFC 1950, Java's Deflater)
    bytes 2..17 the schema version id, a UUID as 16 big-endian bytes
    bytes 18..  the payload (for JSON: the UTF-8 document), zlib-compressed under 0x05

Written from the format description, independent of the server's parser."""

import json
import uuid
import zlib

HEADER_VERSION = 0x03
COMPRESSION_NONE = 0x00
COMPRESSION_ZLIB = 0x05


def encode(schema_version_id, payload, compress=False):
    """Frames `payload` (bytes, str, or a JSON-able object) for the schema version
    `schema_version_id` (a UUID string such as boto3's SchemaVersionId, or uuid.UUID)."""
    if not isinstance(payload, (bytes, bytearray, str)):
        payload = json.dumps(payload, separators=(",", ":"))
    if isinstance(payload, str):
        payload = payload.encode()
    vid = schema_version_id if isinstance(schema_version_id, uuid.UUID) else uuid.UUID(schema_version_id)
    body = zlib.compress(bytes(payload)) if compress else bytes(payload)
    return bytes([HEADER_VERSION, COMPRESSION_ZLIB if compress else COMPRESSION_NONE]) + vid.bytes + body


def decode(record):
    """(schema version id string, payload bytes) of a framed record; raises ValueError."""
    if len(record) < 18 or record[0] != HEADER_VERSION:
        raise ValueError("not a GSR record")
    if record[1] == COMPRESSION_NONE:
        payload = bytes(record[18:])
    elif record[1] == COMPRESSION_ZLIB:
        payload = zlib.decompress(bytes(record[18:]))
    else:
        raise ValueError(f"unknown compression byte {record[1]:#x}")
    return str(uuid.UUID(bytes=bytes(record[2:18]))), payload


if __name__ == "__main__":
    # Self-check: the layout byte by byte, both compressions, and a round trip.
    vid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    doc = {"id": 1, "name": "héllo"}
    plain = encode(vid, doc)
    assert plain[:2] == b"\x03\x00", plain[:2]
    assert plain[2:18].hex() == vid.replace("-", ""), plain[2:18].hex()
    assert plain[18:] == json.dumps(doc, separators=(",", ":")).encode()
    packed = encode(vid, doc, compress=True)
    assert packed[:2] == b"\x03\x05"
    assert packed[2:18] == plain[2:18]
    assert packed[18:20] in (b"\x78\x9c", b"\x78\x01", b"\x78\xda"), packed[18:20]  # zlib header
    assert zlib.decompress(packed[18:]) == plain[18:]
    assert decode(plain) == (vid, plain[18:])
    assert decode(packed) == (vid, plain[18:])
    for bad in (b"", b"{}", b"\x02\x00" + bytes(16) + b"{}", b"\x03\x07" + bytes(16) + b"{}"):
        try:
            decode(bad)
        except ValueError:
            continue
        raise AssertionError(f"decoded {bad!r}")
    print("gsr encoder self-check passed")

"""A test-side aggregator (and de-aggregator) of the Kinesis Producer Library's aggregated
record format, written from its published description, independent of the server:

    bytes 0..3   magic F3 89 9A C2
    bytes 4..n-17  a protobuf AggregatedRecord
                     1: repeated string partition_key_table
                     2: repeated string explicit_hash_key_table
                     3: repeated Record
                          1: uint64 partition_key_index      (required)
                          2: uint64 explicit_hash_key_index  (optional)
                          3: bytes data                      (required)
                          4: repeated Tag { 1: string key (required); 2: string value (optional) }
    last 16 bytes  MD5 of the protobuf bytes

Protobuf is encoded by hand (varints, tags of wire type 0 and 2); no library."""

import hashlib

MAGIC = b"\xf3\x89\x9a\xc2"


def varint(n):
    if n < 0:
        raise ValueError("negative varint")
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return varint((field << 3) | wire)


def _bytes_field(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _key(field, 2) + varint(len(data)) + bytes(data)


def _uint_field(field, n):
    return _key(field, 0) + varint(n)


class UserRecord:
    def __init__(self, data, partition_key="pk", explicit_hash_key=None, tags=()):
        self.data = data if isinstance(data, bytes) else data.encode()
        self.partition_key = partition_key
        self.explicit_hash_key = explicit_hash_key
        self.tags = list(tags)  # [(key, value or None)]


def encode_protobuf(records, pk_table=None, ehk_table=None):
    """The AggregatedRecord message of `records` (UserRecord). The key tables are built
    from the records unless given (a test may pass its own to make indexes point outside
    them)."""
    if pk_table is None:
        pk_table = []
        for r in records:
            if r.partition_key not in pk_table:
                pk_table.append(r.partition_key)
    if ehk_table is None:
        ehk_table = []
        for r in records:
            if r.explicit_hash_key is not None and r.explicit_hash_key not in ehk_table:
                ehk_table.append(r.explicit_hash_key)
    out = bytearray()
    for k in pk_table:
        out += _bytes_field(1, k)
    for k in ehk_table:
        out += _bytes_field(2, k)
    for r in records:
        body = bytearray()
        body += _uint_field(1, pk_table.index(r.partition_key) if r.partition_key in pk_table else len(pk_table) + 5)
        if r.explicit_hash_key is not None:
            body += _uint_field(2, ehk_table.index(r.explicit_hash_key))
        body += _bytes_field(3, r.data)
        for key, value in r.tags:
            tag = _bytes_field(1, key) + (_bytes_field(2, value) if value is not None else b"")
            body += _bytes_field(4, tag)
        out += _bytes_field(3, bytes(body))
    return bytes(out)


def frame(protobuf, md5=None):
    """magic + protobuf + MD5 (or the given 16 bytes)."""
    return MAGIC + protobuf + (md5 if md5 is not None else hashlib.md5(protobuf).digest())


def aggregate(records, **kw):
    """An aggregated Kinesis record holding `records` (UserRecord, bytes or str)."""
    recs = [r if isinstance(r, UserRecord) else UserRecord(r) for r in records]
    return frame(encode_protobuf(recs, **kw))


# ------------------------------------------------------------------ decoding (self-check)

def _read_varint(buf, i):
    n = shift = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def _fields(buf):
    i = 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _read_varint(buf, i)
        elif wire == 2:
            ln, i = _read_varint(buf, i)
            if i + ln > len(buf):
                raise ValueError("truncated field")
            v, i = bytes(buf[i:i + ln]), i + ln
        else:
            raise ValueError(f"wire type {wire}")
        yield field, v


def deaggregate(record):
    """[(partition_key, explicit_hash_key, data, tags)] of an aggregate; ValueError if it
    is not one."""
    if not record.startswith(MAGIC) or len(record) < len(MAGIC) + 16:
        raise ValueError("not an aggregate")
    pb, digest = record[4:-16], record[-16:]
    if hashlib.md5(pb).digest() != digest:
        raise ValueError("MD5 mismatch")
    pks, ehks, recs = [], [], []
    for f, v in _fields(pb):
        if f == 1:
            pks.append(v.decode())
        elif f == 2:
            ehks.append(v.decode())
        elif f == 3:
            rec = {"tags": []}
            for g, w in _fields(v):
                if g == 1:
                    rec["pk"] = w
                elif g == 2:
                    rec["ehk"] = w
                elif g == 3:
                    rec["data"] = w
                elif g == 4:
                    t = dict(_fields(w))
                    rec["tags"].append((t[1].decode(), t[2].decode() if 2 in t else None))
            recs.append(rec)
    out = []
    for r in recs:
        if r.get("pk", len(pks)) >= len(pks) or "data" not in r:
            raise ValueError("bad record")
        ehk = ehks[r["ehk"]] if "ehk" in r else None
        out.append((pks[r["pk"]], ehk, r["data"], r["tags"]))
    return out


if __name__ == "__main__":
    # Self-check: varints, one aggregate byte by byte (computed by hand from the protobuf
    # encoding rules), and round trips.
    assert varint(0) == b"\x00" and varint(1) == b"\x01" and varint(127) == b"\x7f"
    assert varint(128) == b"\x80\x01" and varint(300) == b"\xac\x02"
    assert varint(2**64 - 1) == b"\xff" * 9 + b"\x01"
    pb = encode_protobuf([UserRecord(b"hi", "a"), UserRecord(b"yo", "b", "17", [("k", "v"), ("t", None)])])
    want = bytes.fromhex(
        "0a0161"        # 1: "a"
        "0a0162"        # 1: "b"
        "12023137"      # 2: "17"
        "1a06" "0800" "1a026869"                       # 3: {1: 0, 3: "hi"}
        "1a15" "0801" "1000" "1a02796f"                # 3: {1: 1, 2: 0, 3: "yo",
        "2206" "0a016b" "120176" "2203" "0a0174")      #     4: {k, v}, 4: {t}}
    assert pb == want, pb.hex()
    agg = frame(pb)
    assert agg[:4] == bytes([0xF3, 0x89, 0x9A, 0xC2])
    assert agg[-16:] == hashlib.md5(pb).digest() and len(agg) == 4 + len(pb) + 16
    assert deaggregate(agg) == [("a", None, b"hi", []), ("b", "17", b"yo", [("k", "v"), ("t", None)])]
    big = [UserRecord(bytes([i % 256]) * (i * 37), f"pk{i % 3}") for i in range(200)]
    assert [d for _, _, d, _ in deaggregate(aggregate(big))] == [r.data for r in big]
    for bad in (frame(pb, md5=bytes(16)), MAGIC + b"\x1a\x05\x08", b"{}"):
        try:
            deaggregate(bad)
        except ValueError:
            continue
        raise AssertionError(f"decoded {bad!r}")
    print("kpl aggregator self-check passed")

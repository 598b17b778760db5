"""CBOR bodies built to cost (issue 19, item 7): 16 MB of one-byte items, sent without
credentials, used to cost ~800 MB of memory and seconds of an I/O thread each (a tree
per item, dumped to JSON and parsed again). Now a body is walked once, only as far as
its item bound, and refused as SerializationException; the server's peak RSS grows by
little more than the bodies themselves, and the server keeps answering.

Cases: a control-plane operation (transcoded to JSON for its handler), PutRecords (read
in place) with 16 million empty records, and four such bodies at once. Peak RSS is the
server's VmHWM, reset through /proc/<pid>/clear_refs before each case."""

import os
import sys
import threading
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server, http_send  # noqa: E402

try:
    import cbor2
except ImportError:
    # Debian's python3-cbor2 (scripts/install-deps), reached from another Python of the
    # same version; missing -> the suite fails, it never skips.
    sys.path.append("/usr/lib/python3/dist-packages")
    import cbor2

CBOR = "application/x-amz-cbor-1.1"
SIZE = 16_000_000


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    raise AssertionError(field)


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS


def items_body(n, records=False):
    """A map whose one member is an array of n one-byte items (0 or an empty map)."""
    key = b"\x67Records" if records else b"\x64Junk"
    head = b"\xa2\x6aStreamName\x61s" + key + b"\x9a" + n.to_bytes(4, "big")
    return head + (b"\xa0" if records else b"\x00") * n


class CborBodies(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    def send(self, op, body, out):
        st, _, c = http_send(self.server, "POST", "/", {"Content-Type": CBOR, "X-Amz-Target": "Kinesis_20131202." + op},
                             body)
        out.append((st, cbor2.loads(c) if isinstance(c, (bytes, bytearray)) else c))

    def peak_growth_mb(self, op, bodies, limit_mb):
        pid = self.server.proc.pid
        reset_peak(pid)
        base = status_kb(pid, "VmRSS")
        answers = []
        threads = [threading.Thread(target=self.send, args=(op, b, answers)) for b in bodies]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        grew = (status_kb(pid, "VmHWM") - base) / 1024
        self.assertLess(grew, limit_mb, f"peak RSS grew by {grew:.0f} MB for {len(bodies)} body(ies) of 16 MB")
        for st, c in answers:
            self.assertEqual(st, 400, c)
            self.assertEqual(c["__type"], "SerializationException", c)
        with urllib.request.urlopen(self.server.endpoint + "/health", timeout=10) as r:
            self.assertEqual(r.status, 200)

    def test_a_body_of_tiny_items_costs_about_its_size(self):
        # The body is held while it is read (16 MB); before, the tree took ~800 MB.
        self.peak_growth_mb("ListStreams", [items_body(SIZE)], 80)

    def test_put_records_with_millions_of_empty_records(self):
        self.peak_growth_mb("PutRecords", [items_body(SIZE, records=True)], 80)

    def test_four_bodies_at_once(self):
        self.peak_growth_mb("DescribeStreamSummary", [items_body(SIZE)] * 4, 200)


if __name__ == "__main__":
    unittest.main(verbosity=2)

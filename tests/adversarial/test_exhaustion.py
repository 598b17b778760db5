"""Memory and time a client must not be able to take (issue 19, items 4, 5, 6 and 10).

- Announced bodies: a Content-Length of 16 MB with no body costs nothing until bytes
  arrive; bodies really being sent are bounded server-wide (server.max_request_bytes_in_flight).
- HTTP/2, one connection: answers it never reads (GetRecords, SubscribeToShard) and uploads
  it never finishes are bounded by the connection's budget (server.http2_connection_budget_bytes);
  other connections are served meanwhile.
- HTTP/2 rapid reset (CVE-2023-44487): streams reset right after their request do not run
  their handlers.
- Connection slots: silent sockets and stalled TLS handshakes are closed after
  server.first_byte_timeout_seconds, and at the connection cap the oldest idle connection
  makes room for a new client.

Memory is read from /proc/<pid>/status (VmRSS) with wide margins: the figures before and
after the fixes differ by an order of magnitude (bench/fanout prints the exact ones)."""

import base64
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from h2raw import CANCEL, H2Client  # noqa: E402
from harness import Server, sign_request  # noqa: E402

MIB = 1 << 20


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def alive(srv, timeout=5):
    with urllib.request.urlopen(srv.endpoint + "/health", timeout=timeout) as r:
        return r.status == 200


def signed(srv, op, body):
    """Headers of a signed Kinesis JSON 1.1 call (botocore's signer)."""
    data = json.dumps(body).encode()
    headers = sign_request(srv.endpoint + "/", body=data, headers={
        "Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Kinesis_20131202." + op})
    return headers, data


def h2_call(srv, op, body, timeout=30):
    """One whole HTTP/2 request on a fresh connection; returns the parsed answer body."""
    c = H2Client(srv.port, window=16 * MIB)
    try:
        headers, data = signed(srv, op, body)
        sid = c.request("/", headers, data)
        c.grant(sid, 64 * MIB)  # one stream: within the connection's 2^31-1
        c.wait(lambda cl: cl.done(sid), timeout)
        st = c.streams[sid]
        assert st.ended, f"no answer to {op} (reset {st.reset})"
        return json.loads(bytes(st.data)) if st.data else None
    finally:
        c.close()


class AnnouncedBodies(unittest.TestCase):
    def test_announced_length_costs_nothing_until_sent(self):
        srv = Server().start()
        socks = []
        try:
            base = rss(srv.proc.pid)
            head = ("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.1\r\n"
                    "X-Amz-Target: Kinesis_20131202.PutRecord\r\nContent-Length: 16000000\r\n\r\n").encode()
            for _ in range(48):
                s = socket.create_connection(("127.0.0.1", srv.port))
                s.sendall(head + b"{")
                socks.append(s)
            time.sleep(1.5)
            grew = rss(srv.proc.pid) - base
            self.assertLess(grew, 64 * MIB, f"48 announced 16 MB bodies took {grew / MIB:.0f} MiB")
            self.assertTrue(alive(srv))
        finally:
            for s in socks:
                s.close()
            srv.stop()
            srv.cleanup()

    def test_bodies_in_flight_are_bounded_server_wide(self):
        # 24 connections each sending 8 MB of a 16 MB body, then stalling: 192 MB sent in
        # all, against a bound of 48 MiB of request bodies in flight.
        srv = Server(config_text="[server]\nmax_request_bytes_in_flight = 50331648\n").start()
        socks = []
        try:
            base = rss(srv.proc.pid)
            head = ("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.1\r\n"
                    "X-Amz-Target: Kinesis_20131202.PutRecord\r\nContent-Length: 16000000\r\n\r\n").encode()
            chunk = b"x" * (1 << 16)

            def push(s):
                s.settimeout(3)
                try:
                    s.sendall(head)
                    for _ in range(128):  # 8 MiB
                        s.sendall(chunk)
                except OSError:
                    pass  # the server stopped reading: the bound holds this one back

            threads = []
            for _ in range(24):
                s = socket.create_connection(("127.0.0.1", srv.port))
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
                socks.append(s)
                t = threading.Thread(target=push, args=(s,))
                t.start()
                threads.append(t)
            for t in threads:
                t.join()
            time.sleep(0.5)
            grew = rss(srv.proc.pid) - base
            self.assertLess(grew, 120 * MIB, f"192 MB of unfinished bodies took {grew / MIB:.0f} MiB")
            self.assertTrue(alive(srv))
            # A small call is not held hostage by the big ones.
            k = srv.client()
            k.create_stream(StreamName="small", ShardCount=1)
            self.assertEqual(k.describe_stream_summary(StreamName="small")["StreamDescriptionSummary"]["StreamStatus"],
                             "ACTIVE")
            # Bodies that cannot go on are answered 503 (retryable) rather than held forever.
            answers = []
            for s in socks:
                s.settimeout(30)
                try:
                    answers.append(s.recv(64).split(b" ")[1])
                except (OSError, IndexError):
                    answers.append(b"closed")
            self.assertIn(b"503", answers, answers)
        finally:
            for s in socks:
                s.close()
            srv.stop()
            srv.cleanup()


class AmplifiedBodies(unittest.TestCase):
    def test_small_values_do_not_multiply_before_authentication(self):
        # 14 MB of tiny JSON values, unsigned: a JSON tree of them costs ~7x the body.
        srv = Server().start()
        try:
            body = '{"StreamName":"x","Tags":{"a":[' + ",".join(["0"] * 7_000_000) + "]}}"
            base = rss(srv.proc.pid)
            peak = [0]
            done = threading.Event()

            def watch():
                while not done.is_set():
                    peak[0] = max(peak[0], rss(srv.proc.pid) - base)
                    time.sleep(0.05)

            w = threading.Thread(target=watch)
            w.start()
            answers = []

            def call():
                from harness import raw_call
                answers.append(raw_call(srv, "Kinesis_20131202.AddTagsToStream", body, sign=False))

            calls = [threading.Thread(target=call) for _ in range(6)]
            for t in calls:
                t.start()
            for t in calls:
                t.join()
            done.set()
            w.join()
            self.assertLess(peak[0], 150 * MIB, f"6 bodies of 14 MB took {peak[0] / MIB:.0f} MiB before authentication")
            for st, _, out in answers:
                self.assertEqual((st, out["__type"]), (400, "SerializationException"), out)
            self.assertTrue(alive(srv))
        finally:
            srv.stop()
            srv.cleanup()


class Http2Budget(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().start()
        try:
            cls.fill()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def fill(cls):
        k = cls.srv.client()
        k.create_stream(StreamName="big", ShardCount=1)
        big = os.urandom(1000 * 1000)
        for _ in range(10):  # ~10 MB: one GetRecords answer of ~13 MB (base64)
            k.put_record(StreamName="big", PartitionKey="p", Data=big)
        cls.iterator = k.get_shard_iterator(StreamName="big", ShardId="shardId-000000000000",
                                            ShardIteratorType="TRIM_HORIZON")["ShardIterator"]

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.cleanup()

    def test_unread_get_records_answers(self):
        srv = self.srv
        base = rss(srv.proc.pid)
        c = H2Client(srv.port, window=0, keep_data=False)  # the server may send no DATA
        try:
            sids = []
            for _ in range(48):
                headers, data = signed(srv, "GetRecords", {"ShardIterator": self.iterator})
                sids.append(c.request("/", headers, data))
            # Until the server stops answering (every answer is made, or the rest wait).
            c.settle(lambda cl: (sum(cl.streams[s].headers for s in sids), rss(srv.proc.pid) // (8 * MIB)))
            answered = sum(c.streams[s].headers for s in sids)
            grew = rss(srv.proc.pid) - base
            self.assertLess(grew, 200 * MIB, f"48 unread GetRecords answers ({answered} answered) took "
                                             f"{grew / MIB:.0f} MiB")
            # Another connection is served meanwhile, with the whole answer.
            out = h2_call(srv, "GetRecords", {"ShardIterator": self.iterator})
            self.assertEqual(len(out["Records"]), 10)
            # The hostile connection, once it reads, gets every answer (maybe in parts:
            # GetRecords may return fewer records than asked for).
            c.grant(sids[0], 1 << 30)
            for sid in sids:
                c.grant(sid, 64 * MIB, connection=False)
            c.wait(lambda cl: all(cl.done(s) for s in sids), 120)
            self.assertTrue(all(c.streams[s].ended for s in sids))
        finally:
            c.close()

    def test_unfinished_uploads(self):
        srv = self.srv
        base = rss(srv.proc.pid)
        c = H2Client(srv.port)
        try:
            sids = []
            for _ in range(128):
                headers, _ = signed(srv, "PutRecord", {})
                sid = c.new_stream()
                c.send_raw(c.headers_frame(sid, c.request_headers("/", headers, 16 * MIB), False))
                sids.append(sid)
            sent = c.push_bodies(sids, 16 * MIB)
            grew = rss(srv.proc.pid) - base
            # Budget 64 MiB + one connection window (16 MiB) at most.
            self.assertLessEqual(sent, 96 * MIB, f"one connection took {sent / MIB:.0f} MiB of unfinished bodies")
            self.assertLess(grew, 160 * MIB, f"unfinished uploads took {grew / MIB:.0f} MiB")
            out = h2_call(srv, "DescribeStreamSummary", {"StreamName": "big"})
            self.assertEqual(out["StreamDescriptionSummary"]["StreamName"], "big")
        finally:
            c.close()

    def test_unread_subscriptions(self):
        srv = self.srv
        k = srv.client()
        k.create_stream(StreamName="fan", ShardCount=8)
        arn = k.describe_stream_summary(StreamName="fan")["StreamDescriptionSummary"]["StreamARN"]
        blob = os.urandom(1000 * 1000)
        for shard in range(8):
            hash_key = str(shard * ((1 << 128) // 8))
            for _ in range(5):
                k.put_record(StreamName="fan", PartitionKey="p", ExplicitHashKey=hash_key, Data=blob)
        consumers = [k.register_stream_consumer(StreamARN=arn, ConsumerName=f"c{i}")["Consumer"]["ConsumerARN"]
                     for i in range(16)]
        deadline = time.time() + 30
        while time.time() < deadline and any(
                k.describe_stream_consumer(ConsumerARN=c)["ConsumerDescription"]["ConsumerStatus"] != "ACTIVE"
                for c in consumers):
            time.sleep(0.2)
        base = rss(srv.proc.pid)
        c = H2Client(srv.port, window=0, keep_data=False)
        try:
            for consumer in consumers:
                for shard in range(8):
                    headers, data = signed(srv, "SubscribeToShard", {
                        "ConsumerARN": consumer, "ShardId": f"shardId-{shard:012d}",
                        "StartingPosition": {"Type": "TRIM_HORIZON"}})
                    c.request("/", headers, data)
            c.settle(lambda cl: rss(srv.proc.pid) // (4 * MIB), quiet=3)
            grew = rss(srv.proc.pid) - base
            self.assertLess(grew, 160 * MIB, f"128 unread subscriptions took {grew / MIB:.0f} MiB")
            out = h2_call(srv, "DescribeStreamSummary", {"StreamName": "fan"})
            self.assertEqual(out["StreamDescriptionSummary"]["StreamName"], "fan")
        finally:
            c.close()


class RapidReset(unittest.TestCase):
    def test_reset_streams_do_not_run_their_handlers(self):
        srv = Server().start()
        try:
            k = srv.client()
            k.create_stream(StreamName="rr", ShardCount=1)
            sent = 0
            for _ in range(3):  # nghttp2 ends a connection after ~1000 resets: three of them
                c = H2Client(srv.port)
                frames = []
                for i in range(900):
                    headers, data = signed(srv, "PutRecord", {
                        "StreamName": "rr", "PartitionKey": "p", "Data": base64.b64encode(b"r").decode()})
                    sid = c.new_stream()
                    frames.append(c.headers_frame(sid, c.request_headers("/", headers, len(data)), False) +
                                  c.data_frames(sid, data, True) + c.rst_frame(sid, CANCEL))
                    sent += 1
                c.send_raw(b"".join(frames))
                time.sleep(1)
                c.close()
            time.sleep(1)
            it = k.get_shard_iterator(StreamName="rr", ShardId="shardId-000000000000",
                                      ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            ran = len(k.get_records(ShardIterator=it, Limit=10000)["Records"])
            self.assertLess(ran, sent // 10, f"{ran} of {sent} reset requests ran their handler")
            self.assertTrue(alive(srv))
        finally:
            srv.stop()
            srv.cleanup()


class ConnectionSlots(unittest.TestCase):
    def quick_call(self, srv, timeout=8):
        k = srv.client(connect_timeout=timeout, read_timeout=timeout)
        return k.list_streams()["StreamNames"]

    def test_silent_sockets_do_not_lock_out_clients(self):
        srv = Server(config_text="[server]\nmax_connections = 32\n").start()
        socks = []
        try:
            for _ in range(32):
                socks.append(socket.create_connection(("127.0.0.1", srv.port)))
            time.sleep(0.5)
            self.assertEqual(self.quick_call(srv), [])
        finally:
            for s in socks:
                s.close()
            srv.stop()
            srv.cleanup()

    def test_idle_keep_alives_make_room(self):
        srv = Server(config_text="[server]\nmax_connections = 32\n").start()
        socks = []
        try:
            for _ in range(32):
                s = socket.create_connection(("127.0.0.1", srv.port))
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertIn(b"200", s.recv(4096))
                socks.append(s)
            self.assertEqual(self.quick_call(srv), [])
        finally:
            for s in socks:
                s.close()
            srv.stop()
            srv.cleanup()

    def test_silent_socket_and_stalled_handshake_are_closed(self):
        tmp = tempfile.mkdtemp(prefix="icestream-tls-")
        cert, key = os.path.join(tmp, "c.pem"), os.path.join(tmp, "k.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
        srv = Server(extra_args=["--tls-cert", cert, "--tls-key", key],
                     config_text="[server]\nfirst_byte_timeout_seconds = 2\n").start()
        try:
            silent = socket.create_connection(("127.0.0.1", srv.port))
            stalled = socket.create_connection(("127.0.0.1", srv.port))
            stalled.sendall(b"\x16\x03\x01\x02\x00")  # a TLS record header, then nothing
            partial = socket.create_connection(("127.0.0.1", srv.port))
            partial.sendall(b"GET /health HTTP/1.1\r\nHost:")  # a header that never ends
            start = time.time()
            for s in (silent, stalled, partial):
                s.settimeout(20)
                try:
                    got = s.recv(4096)
                except OSError:
                    got = b""
                self.assertTrue(got == b"" or got.startswith(b"HTTP/1.1 408") or got[:1] == b"\x15", got[:40])
            self.assertLess(time.time() - start, 15, "idle sockets were held past the first-byte timeout")
            for s in (silent, stalled, partial):
                s.close()
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            with urllib.request.urlopen(srv.tls_endpoint + "/health", context=ctx, timeout=5) as r:
                self.assertEqual(r.status, 200)
        finally:
            srv.stop()
            srv.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)

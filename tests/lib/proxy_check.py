"""Checks of the tests' own TCP fault proxies (tcp_proxy.py, pg_fault_proxy.py), run directly:
their "reset" must reach both ends of a connection at once, also one that is idle.

A socket closed while the proxy's other thread is blocked in recv() on it stays open (the
pending call holds it), so a reset that only closed its sockets cut nothing: an idle
PostgreSQL session behind pg_fault_proxy kept its transaction, and the row locks of a
statement whose Sync the proxy still held, for as long as the test ran (chaos.scaleout_pool
once saw a lease row locked for minutes that way)."""

import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pg_fault_proxy import PgFaultProxy  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402


class Upstream:
    """A TCP server on 127.0.0.1 that accepts one connection and records how its first
    read ended (data, end of stream or reset) and when."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.ended = threading.Event()
        self.how = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn, _ = self.sock.accept()
        try:
            data = conn.recv(100)
            self.how = "eof" if data == b"" else data
        except OSError as e:
            self.how = type(e).__name__
        self.ended.set()
        conn.close()

    def close(self):
        self.sock.close()


class ProxyResets(unittest.TestCase):
    def check_reset_cuts_an_idle_connection(self, make):
        up = Upstream()
        proxy = make(up.port).start()
        try:
            client = socket.create_connection(("127.0.0.1", proxy.port))
            client.settimeout(5)
            time.sleep(0.3)  # the proxy has connected upstream; nothing flows
            self.assertFalse(up.ended.is_set())
            proxy.set_mode("reset")
            self.assertTrue(up.ended.wait(2), "the upstream end was not cut by the reset")
            self.assertIn(up.how, ("eof", "ConnectionResetError"))
            try:
                got = client.recv(100)
            except ConnectionResetError:
                got = b""
            self.assertEqual(got, b"", "the client end was not cut by the reset")
            client.close()
        finally:
            proxy.stop()
            up.close()

    def check_pass_forwards(self, make):
        up = Upstream()
        proxy = make(up.port).start()
        try:
            client = socket.create_connection(("127.0.0.1", proxy.port))
            # The PostgreSQL proxy forwards whole messages, the first being a startup packet
            # (length first, then a protocol code).
            client.sendall(b"\x00\x00\x00\x08\x00\x03\x00\x00")
            self.assertTrue(up.ended.wait(2))
            self.assertEqual(up.how, b"\x00\x00\x00\x08\x00\x03\x00\x00")
            client.close()
        finally:
            proxy.stop()
            up.close()

    def test_tcp_proxy_reset_cuts_an_idle_connection(self):
        self.check_reset_cuts_an_idle_connection(TcpProxy)

    def test_pg_fault_proxy_reset_cuts_an_idle_connection(self):
        self.check_reset_cuts_an_idle_connection(PgFaultProxy)

    def test_both_forward_in_pass_mode(self):
        self.check_pass_forwards(TcpProxy)
        self.check_pass_forwards(PgFaultProxy)


if __name__ == "__main__":
    unittest.main()

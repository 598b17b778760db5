"""A plain TCP proxy on 127.0.0.1 that a test can cut (tests only): in "pass" mode bytes flow
both ways unchanged; set_mode("reset") closes every connection with a reset at once and
resets new ones as they come (a process cut off from the endpoint behind it), and
set_mode("pass") lets them through again. For protocol-aware faults see fault_proxy.py
(S3 over HTTP) and pg_fault_proxy.py (PostgreSQL)."""

import socket
import struct
import threading


def reset(s):
    """Closes a proxied socket with a reset (SO_LINGER 0), also while another thread is blocked
    in recv() on it: close() alone resets nothing then (the pending call keeps the socket
    open), so the receiving side is shut down first, which wakes that thread, and the last
    close sends the reset."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass


class TcpProxy:
    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.mode = "pass"
        self.lock = threading.Lock()
        self.conns = set()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping = True
        self.set_mode("reset")
        try:
            self.sock.close()
        except OSError:
            pass

    def set_mode(self, mode):
        with self.lock:
            self.mode = mode
            if mode == "reset":
                for c in list(self.conns):
                    reset(c)
                self.conns.clear()

    def _accept(self):
        while not self.stopping:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                if self.mode == "reset" or self.stopping:
                    reset(client)
                    continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                reset(client)
                continue
            with self.lock:
                self.conns.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    def _pipe(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with self.lock:
                    self.conns.discard(s)
                reset(s)

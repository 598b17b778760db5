"""A fault-injecting TCP proxy for PostgreSQL's wire protocol (tests only), between one
process and the database, on 127.0.0.1. Modes, switchable at any time:

- "pass":       bytes flow both ways;
- "blackhole":  nothing is forwarded in either direction and new connections hang (a
                network partition: the client's statements time out);
- "reset":      every connection is closed at once, and new ones too;
- "commit_drop": a COMMIT (a simple-query 'Q' message whose text is COMMIT) is, at the
                given rate, either dropped with the connection before it reaches the
                server ("before": the transaction aborts) or forwarded and the connection
                closed before the answer comes back ("after": it committed, but the client
                cannot know) — the case a client must resolve by asking the database.
Counts what it did per fault."""

import random
import socket
import struct
import threading
import time

from tcp_proxy import reset


class PgFaultProxy:
    def __init__(self, upstream_port, seed=1):
        self.upstream_port = upstream_port
        self.mode = "pass"
        self.commit_drop_rate = 0.0
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.counts = {"connections": 0, "commit_before": 0, "commit_after": 0, "resets": 0}
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

    def set_mode(self, mode, commit_drop_rate=0.0):
        with self.lock:
            self.mode = mode
            self.commit_drop_rate = commit_drop_rate
            if mode == "reset":
                for c in list(self.conns):
                    reset(c)
                self.conns.clear()
                self.counts["resets"] += 1

    def _accept(self):
        while not self.stopping:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _wait_while_blackholed(self):
        while self.mode == "blackhole" and not self.stopping:
            time.sleep(0.05)

    def _serve(self, client):
        self._wait_while_blackholed()
        if self.mode == "reset" or self.stopping:
            reset(client)
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        except OSError:
            reset(client)
            return
        with self.lock:
            self.conns.update((client, upstream))
            self.counts["connections"] += 1
        state = {"drop_answer": False}
        threading.Thread(target=self._upstream_to_client, args=(upstream, client, state), daemon=True).start()
        self._client_to_upstream(client, upstream, state)

    def _client_to_upstream(self, client, upstream, state):
        """Forwards whole messages (the first, the startup packet, has no type byte)."""
        buf = b""
        started = False
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                buf += data
                while True:
                    if not started:
                        if len(buf) < 4:
                            break
                        n = struct.unpack("!I", buf[:4])[0]
                        if len(buf) < n:
                            break
                        msg, buf = buf[:n], buf[n:]
                        code = struct.unpack("!I", msg[4:8])[0] if n >= 8 else 0
                        if code != 80877103:  # an SSLRequest is answered, then the startup follows
                            started = True
                    else:
                        if len(buf) < 5:
                            break
                        n = struct.unpack("!I", buf[1:5])[0]
                        if len(buf) < 1 + n:
                            break
                        msg, buf = buf[:1 + n], buf[1 + n:]
                    self._wait_while_blackholed()
                    if self.mode == "reset":
                        raise OSError("reset")
                    if started and msg[:1] == b"Q" and msg[5:].rstrip(b"\0").strip().upper() == b"COMMIT":
                        with self.lock:
                            drop = self.mode == "commit_drop" and self.rng.random() < self.commit_drop_rate
                            before = drop and self.rng.random() < 0.5
                        if drop and before:
                            self.counts["commit_before"] += 1
                            raise OSError("dropped before COMMIT")
                        if drop:
                            self.counts["commit_after"] += 1
                            state["drop_answer"] = True
                    upstream.sendall(msg)
        except OSError:
            pass
        finally:
            reset(client)
            reset(upstream)

    def _upstream_to_client(self, upstream, client, state):
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                self._wait_while_blackholed()
                if self.mode == "reset":
                    break
                if state["drop_answer"]:
                    # The COMMIT went through; its answer never arrives.
                    time.sleep(0.05)
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            reset(client)
            reset(upstream)

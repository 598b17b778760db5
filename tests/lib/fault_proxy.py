"""A fault-injecting HTTP proxy for S3 traffic (tests only). It forwards requests to an
upstream S3 server and, for a configurable share of them, answers instead with a 500, a
503 SlowDown, a connection reset, or a stall — before or after forwarding, so that
"succeeded upstream but the client saw an error" happens too. It can also blackhole
requests (read them, never answer, as a dead endpoint behind a live load balancer does):
every request, or those of chosen buckets (path-style), until the blackhole is lifted;
it can drop chosen request headers (a store that ignores them);
and it can answer for chosen buckets as if they did not exist (404 NoSuchBucket), as a
store does that is still coming up or where the bucket is created a moment later.
Listens on 127.0.0.1."""

import http.client
import random
import socket
import struct
import threading
import time

FAULTS = ("500", "503", "reset", "stall", "reset_after")


class FaultProxy:
    def __init__(self, upstream_port, fault_rate=0.3, stall_seconds=4.0, seed=1, faults=FAULTS, methods=None,
                 strip_headers=(), resign=None):
        """`faults`: the kinds drawn from; `methods`: only requests of these methods get
        faults (default all); `strip_headers`: request headers (lower-case names) dropped
        before forwarding, as a store that does not know them ignores them (e.g.
        if-none-match: an S3 store without conditional PUT); a request that lost a signed
        header is signed again with `resign` = (access key, secret key, region) so the
        store still accepts it."""
        self.upstream_port = upstream_port
        self.fault_rate = fault_rate
        self.faults = tuple(faults)
        self.methods = set(methods) if methods else None
        self.strip_headers = {h.lower() for h in strip_headers}
        self.resign = resign
        self.stripped = 0  # requests that lost a header
        self.forwarded = []  # (method, path without the query, upstream status) of each forwarded request
        self.stall_seconds = stall_seconds
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.counts = {f: 0 for f in FAULTS}
        self.counts["ok"] = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        # Blackholes: requests held without an answer while they match (see blackhole()).
        self.blackhole_all = False
        self.blackhole_buckets = set()
        self.held = 0  # requests currently held
        self.missing_buckets = set()  # answered 404 NoSuchBucket
        self.thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping = True
        try:
            self.sock.close()
        except OSError:
            pass

    def blackhole(self, buckets=None, everything=False):
        """Holds matching requests unanswered from now on: the requests of `buckets`
        (bucket names, path-style requests) or, with everything=True, all of them. Held
        connections are closed (still unanswered) once the blackhole is lifted."""
        with self.lock:
            self.blackhole_all = everything
            self.blackhole_buckets = set(buckets or ())

    def lift(self):
        self.blackhole(None, False)

    def hide(self, buckets):
        """Answers every request for these buckets with 404 NoSuchBucket (empty: none)."""
        with self.lock:
            self.missing_buckets = set(buckets or ())

    @staticmethod
    def _bucket_of(target):
        return target.lstrip("/").split("/", 1)[0].split("?", 1)[0]

    def _blackholed(self, target):
        with self.lock:
            if self.blackhole_all:
                return True
            return self._bucket_of(target) in self.blackhole_buckets

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _pick(self, method):
        with self.lock:
            if (self.methods is None or method in self.methods) and self.rng.random() < self.fault_rate:
                f = self.rng.choice(self.faults)
            else:
                f = "ok"
            self.counts[f] += 1
            return f

    def _signed_again(self, method, target, headers, body):
        """SigV4 over the headers that are left (botocore's S3 signer)."""
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        drop = {"authorization", "x-amz-date", "x-amz-security-token"}
        rest = [(n, v) for n, v in headers if n.lower() not in drop]
        host = next((v for n, v in rest if n.lower() == "host"), f"127.0.0.1:{self.port}")
        req = AWSRequest(method=method, url=f"http://{host}{target}", data=body or b"",
                         headers={n: v for n, v in rest})
        ak, sk, region = self.resign
        S3SigV4Auth(Credentials(ak, sk), "s3", region).add_auth(req)
        return list(req.headers.items())

    @staticmethod
    def _read_request(f):
        line = f.readline()
        if not line:
            return None
        method, target, _ = line.decode().split(" ", 2)
        headers = []
        length = 0
        while True:
            h = f.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            name, value = h.decode().split(":", 1)
            headers.append((name.strip(), value.strip()))
            if name.strip().lower() == "content-length":
                length = int(value)
        body = f.read(length) if length else b""
        return method, target, headers, body

    @staticmethod
    def _reset(conn):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    def _serve(self, conn):
        f = conn.makefile("rb")
        try:
            while True:
                req = self._read_request(f)
                if req is None:
                    return
                method, target, headers, body = req
                if self._blackholed(target):
                    with self.lock:
                        self.held += 1
                        self.counts["blackholed"] = self.counts.get("blackholed", 0) + 1
                    try:
                        while self._blackholed(target) and not self.stopping:
                            time.sleep(0.05)
                    finally:
                        with self.lock:
                            self.held -= 1
                    return conn.close()
                with self.lock:
                    hidden = self._bucket_of(target) in self.missing_buckets
                    if hidden:
                        self.counts["missing"] = self.counts.get("missing", 0) + 1
                if hidden:
                    xml = (b"<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The specified "
                           b"bucket does not exist</Message></Error>")
                    head = method == "HEAD"
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Type: application/xml\r\n" +
                                 f"Content-Length: {0 if head else len(xml)}\r\n\r\n".encode() +
                                 (b"" if head else xml))
                    continue
                fault = self._pick(method)
                if fault == "reset":
                    return self._reset(conn)
                if fault == "stall":
                    time.sleep(self.stall_seconds)
                    return conn.close()
                if fault in ("500", "503"):
                    code = "InternalError" if fault == "500" else "SlowDown"
                    xml = f"<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>injected</Message></Error>".encode()
                    reason = "Internal Server Error" if fault == "500" else "Slow Down"
                    conn.sendall(f"HTTP/1.1 {fault} {reason}\r\nContent-Type: application/xml\r\n"
                                 f"Content-Length: {len(xml)}\r\n\r\n".encode() + xml)
                    continue
                up = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
                up.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                kept = [(n, v) for n, v in headers if n.lower() not in self.strip_headers]
                if len(kept) != len(headers):
                    with self.lock:
                        self.stripped += 1
                    if self.resign:
                        kept = self._signed_again(method, target, kept, body)
                for name, value in kept:
                    up.putheader(name, value)
                up.endheaders(body)
                resp = up.getresponse()
                data = resp.read()
                up.close()
                with self.lock:
                    self.forwarded.append((method, target.split("?", 1)[0], resp.status))
                if fault == "reset_after":  # the write happened; the client never hears
                    return self._reset(conn)
                out = [f"HTTP/1.1 {resp.status} {resp.reason}\r\n".encode()]
                for name, value in resp.getheaders():
                    if name.lower() in ("transfer-encoding", "connection", "content-length"):
                        continue
                    out.append(f"{name}: {value}\r\n".encode())
                if method != "HEAD":
                    out.append(f"Content-Length: {len(data)}\r\n".encode())
                else:
                    cl = resp.getheader("Content-Length")
                    if cl is not None:
                        out.append(f"Content-Length: {cl}\r\n".encode())
                out.append(b"\r\n")
                conn.sendall(b"".join(out) + (data if method != "HEAD" else b""))
        except (OSError, ValueError):
            try:
                conn.close()
            except OSError:
                pass

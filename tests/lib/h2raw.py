"""A deliberately small HTTP/2 client that writes frames by hand (RFC 9113), for the
adversarial suites: it sends what a hostile client sends (streams it never reads, uploads
it never finishes, resets right after the request) and counts what the server grants
(window credit, DATA, resets). Header blocks are HPACK literals without indexing
(RFC 7541 §6.2.2), so no encoder state is kept; the server's header blocks are not decoded
(only their arrival is noted), so nothing here depends on HPACK's dynamic table.

Not a general client: one socket, frames parsed by a reader thread into counters."""

import socket
import struct
import threading
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE = 4, 5
CANCEL, REFUSED_STREAM = 8, 7


def _int(value, prefix_bits, first=0):
    """An HPACK integer (RFC 7541 §5.1) with `first` in the bits above the prefix."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 127) | 128)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_headers(headers):
    """Literal header fields without indexing, new names, no Huffman coding."""
    out = b""
    for name, value in headers:
        n, v = name.encode(), value.encode()
        out += b"\x00" + _int(len(n), 7) + n + _int(len(v), 7) + v
    return out


class Stream:
    def __init__(self):
        self.headers = 0        # header blocks received (response, trailers)
        self.data = bytearray()
        self.data_bytes = 0
        self.ended = False
        self.reset = None       # RST_STREAM error code from the server
        self.window = 0         # send window the server granted (beyond the initial)


class H2Client:
    """One HTTP/2 connection. `window` is the client's SETTINGS_INITIAL_WINDOW_SIZE (0:
    the server may send no DATA at all until the client grants credit); `keep_data`
    False counts DATA without keeping it."""

    def __init__(self, port, window=65535, keep_data=True, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.authority = f"{host}:{port}"
        self.lock = threading.Condition()
        self.streams = {}
        self.next_id = 1
        self.keep_data = keep_data
        self.conn_window_granted = 0   # WINDOW_UPDATE increments on stream 0
        self.server_settings = {}
        self.goaway = None
        self.closed = False
        self.peer_initial_window = 65535
        self.send_lock = threading.Lock()
        settings = struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, window)
        self._send(PREFACE + self._frame(SETTINGS, 0, 0, settings))
        self.reader = threading.Thread(target=self._read_loop, daemon=True)
        self.reader.start()

    # -- frames out -------------------------------------------------------------------
    @staticmethod
    def _frame(ftype, flags, stream_id, payload=b""):
        return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream_id) + payload

    def _send(self, data):
        with self.send_lock:
            self.sock.sendall(data)

    def new_stream(self):
        with self.lock:
            sid = self.next_id
            self.next_id += 2
            self.streams[sid] = Stream()
        return sid

    def headers_frame(self, sid, headers, end_stream):
        return self._frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), sid,
                           encode_headers(headers))

    def data_frames(self, sid, data, end_stream, max_frame=16384):
        out = b""
        for i in range(0, max(len(data), 1), max_frame):
            chunk = data[i:i + max_frame]
            last = i + max_frame >= len(data)
            out += self._frame(DATA, END_STREAM if (end_stream and last) else 0, sid, chunk)
        return out

    def rst_frame(self, sid, code=CANCEL):
        return self._frame(RST_STREAM, 0, sid, struct.pack(">I", code))

    def send_raw(self, data):
        self._send(data)

    def request_headers(self, path, extra, content_length=None, method="POST"):
        h = [(":method", method), (":scheme", "http"), (":authority", self.authority), (":path", path)]
        h += [(k.lower(), v) for k, v in extra.items() if k.lower() not in ("host", "content-length")]
        if content_length is not None:
            h.append(("content-length", str(content_length)))
        return h

    def request(self, path, headers, body=b"", end_stream=True):
        """Opens a stream with a whole request (HEADERS, DATA). Returns the stream id."""
        sid = self.new_stream()
        frames = self.headers_frame(sid, self.request_headers(path, headers, len(body)), not body and end_stream)
        if body:
            frames += self.data_frames(sid, body, end_stream)
        self._send(frames)
        return sid

    def grant(self, sid, n, connection=True):
        """Gives the server `n` bytes of send window on stream `sid` (and, with
        `connection`, on the connection: its window may not exceed 2^31-1 in all)."""
        frames = self._frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", n))
        if connection:
            frames = self._frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", n)) + frames
        self._send(frames)

    def settle(self, value, quiet=3.0, timeout=60):
        """Waits until value(self) stops changing for `quiet` seconds; returns it."""
        deadline = time.time() + timeout
        last, since = value(self), time.time()
        while time.time() < deadline and not self.closed:
            time.sleep(0.2)
            v = value(self)
            if v != last:
                last, since = v, time.time()
            elif time.time() - since >= quiet:
                break
        return last

    def push_bodies(self, sids, per_stream, quiet=2.0, frame=16384):
        """Sends DATA (never END_STREAM) on `sids`, as much as the server's flow-control
        windows allow (RFC 9113 §6.9), up to `per_stream` bytes each, until no credit came
        for `quiet` seconds. Returns the bytes sent in all."""
        sent = {sid: 0 for sid in sids}
        total = 0
        chunk = b"x" * frame
        last_progress = time.time()
        while time.time() - last_progress < quiet:
            with self.lock:
                initial = self.server_settings.get(SETTINGS_INITIAL_WINDOW_SIZE, 65535)
                conn_room = 65535 + self.conn_window_granted - total
                plan = []
                for sid in sids:
                    st = self.streams[sid]
                    room = min(initial + st.window - sent[sid], per_stream - sent[sid], conn_room)
                    if room > 0 and st.reset is None:
                        n = min(room, frame)
                        plan.append((sid, n))
                        conn_room -= n
                        sent[sid] += n
                        total += n
            if not plan:
                time.sleep(0.02)
                if self.closed:
                    break
                continue
            self._send(b"".join(self._frame(DATA, 0, sid, chunk[:n]) for sid, n in plan))
            last_progress = time.time()
        return total

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    # -- frames in --------------------------------------------------------------------
    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def _read_loop(self):
        try:
            while True:
                head = self._recv_exact(9)
                length = int.from_bytes(head[:3], "big")
                ftype, flags = head[3], head[4]
                sid = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
                payload = self._recv_exact(length) if length else b""
                self._on_frame(ftype, flags, sid, payload)
        except (EOFError, OSError):
            pass
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def _on_frame(self, ftype, flags, sid, payload):
        with self.lock:
            st = self.streams.get(sid)
            if ftype == SETTINGS and not flags & ACK:
                for i in range(0, len(payload), 6):
                    key, val = struct.unpack(">HI", payload[i:i + 6])
                    self.server_settings[key] = val
                self._send(self._frame(SETTINGS, ACK, 0))
            elif ftype == PING and not flags & ACK:
                self._send(self._frame(PING, ACK, 0, payload))
            elif ftype == WINDOW_UPDATE:
                inc = struct.unpack(">I", payload)[0] & 0x7FFFFFFF
                if sid == 0:
                    self.conn_window_granted += inc
                elif st:
                    st.window += inc
            elif ftype == GOAWAY:
                self.goaway = struct.unpack(">II", payload[:8])
            elif st is not None:
                if ftype == HEADERS:
                    st.headers += 1
                elif ftype == DATA:
                    st.data_bytes += len(payload)
                    if self.keep_data:
                        st.data += payload
                elif ftype == RST_STREAM:
                    st.reset = struct.unpack(">I", payload)[0]
                if flags & END_STREAM and ftype in (HEADERS, DATA):
                    st.ended = True
            self.lock.notify_all()

    def wait(self, predicate, timeout=30):
        """Waits until predicate(self) holds (under the lock); returns its last value."""
        deadline = time.time() + timeout
        with self.lock:
            while True:
                v = predicate(self)
                if v or self.closed or time.time() >= deadline:
                    return v
                self.lock.wait(min(0.2, max(0.0, deadline - time.time())))

    def done(self, sid):
        st = self.streams[sid]
        return st.ended or st.reset is not None

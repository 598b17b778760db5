"""Descriptor exhaustion under a low `ulimit -n`: idle connections beyond what the
process may open must not make accept spin (CPU, log flood), idle ones are closed, the
connection cap holds new clients in the backlog, the soft limit is raised to the hard one
at start, and sealed segments do not keep descriptors (a shard with more segments than
the limit still opens and reads)."""

import os
import resource
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from harness import Server  # noqa: E402


def limit_files(soft, hard):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return apply


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class LimitedServer(Server):
    """A Server started with RLIMIT_NOFILE set for the child only."""

    def __init__(self, soft, hard, **kw):
        super().__init__(**kw)
        self.preexec = limit_files(soft, hard)

    def start(self, timeout=20):
        import subprocess
        real = subprocess.Popen

        def popen(*a, **k):
            k["preexec_fn"] = self.preexec
            return real(*a, **k)

        subprocess.Popen = popen
        try:
            return super().start(timeout)
        finally:
            subprocess.Popen = real


class Descriptors(unittest.TestCase):
    def test_idle_connections_beyond_the_limit(self):
        srv = LimitedServer(96, 96, config_text="[server]\nidle_timeout_seconds = 2\nio_threads = 2\n")
        socks = []
        try:
            srv.start()
            srv.client().create_stream(StreamName="fd", ShardCount=1)
            log_before = os.path.getsize(srv.log_path)
            cpu_before = cpu_seconds(srv.proc.pid)
            # Far more idle connections than the process may hold.
            for _ in range(300):
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex(("127.0.0.1", srv.port))
                socks.append(s)
            time.sleep(2)
            cpu = cpu_seconds(srv.proc.pid) - cpu_before
            grew = os.path.getsize(srv.log_path) - log_before
            self.assertLess(cpu, 0.8, f"accept spun: {cpu:.2f} CPU seconds in 2 s")
            self.assertLess(grew, 20000, f"the log grew by {grew} bytes in 2 s")
            self.assertLessEqual(open_fds(srv.proc.pid), 96)
            # The idle ones are closed after idle_timeout_seconds; the server serves again
            # while the rest of the crowd is still connected.
            deadline = time.time() + 20
            ok = False
            while time.time() < deadline and not ok:
                try:
                    srv.client(connect_timeout=2, read_timeout=5).list_streams()
                    ok = True
                except Exception:  # noqa: BLE001 - refused or timed out while exhausted
                    time.sleep(0.5)
            self.assertTrue(ok, "the server never served again")
        finally:
            for s in socks:
                s.close()
            srv.stop()
            srv.cleanup()

    def test_connection_cap(self):
        srv = Server(config_text="[server]\nmax_connections = 8\nidle_timeout_seconds = 1\n")
        socks = []
        try:
            srv.start()
            base = open_fds(srv.proc.pid)
            for _ in range(60):
                s = socket.create_connection(("127.0.0.1", srv.port))
                socks.append(s)
            time.sleep(0.3)
            # At most the cap is open on the server's side; the rest wait in the backlog.
            self.assertLessEqual(open_fds(srv.proc.pid) - base, 8)
            for s in socks:
                s.close()
            srv.client().list_streams()
        finally:
            for s in socks:
                s.close()
            srv.stop()
            srv.cleanup()

    def test_soft_limit_is_raised(self):
        srv = LimitedServer(64, 4096)
        try:
            srv.start()
            with open(f"/proc/{srv.proc.pid}/limits") as f:
                line = next(ln for ln in f if ln.startswith("Max open files"))
            self.assertEqual(line.split()[3:5], ["4096", "4096"], line)
        finally:
            srv.stop()
            srv.cleanup()

    def test_sealed_segments_hold_no_descriptors(self):
        config = "[storage]\nsegment_bytes = 8192\nmax_open_segment_files = 8\n"
        srv = Server(config_text=config)
        try:
            srv.start()
            k = srv.client()
            k.create_stream(StreamName="many", ShardCount=1)
            for b in range(80):
                k.put_records(StreamName="many", Records=[{"Data": b"s" * 1000, "PartitionKey": "p"}] * 10)
            srv.stop()
            shard = os.path.join(srv.data_dir, "streams", os.listdir(os.path.join(srv.data_dir, "streams"))[0],
                                 "000000000000")
            self.assertGreater(len([n for n in os.listdir(shard) if n.endswith(".log")]), 60)
            # Fewer descriptors than segments: it must still open and read them all.
            limited = LimitedServer(48, 48, data_dir=srv.data_dir, config_text=config)
            try:
                limited.start()
                k2 = limited.client()
                it = k2.get_shard_iterator(StreamName="many", ShardId="shardId-000000000000",
                                           ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
                n = 0
                for _ in range(100):
                    r = k2.get_records(ShardIterator=it, Limit=10000)
                    n += len(r["Records"])
                    if not r["Records"]:
                        break
                    it = r["NextShardIterator"]
                self.assertEqual(n, 800)
                self.assertLess(open_fds(limited.proc.pid), 40)
            finally:
                limited.stop()
                limited.cleanup()
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

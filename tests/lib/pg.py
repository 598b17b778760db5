"""A throw-away PostgreSQL 15 cluster on 127.0.0.1 for the scale-out tests (Debian's
postgresql-15, installed by scripts/install-deps). PostgreSQL refuses to run as root, so
the cluster belongs to the `postgres` user, in a temporary folder; its server listens on
127.0.0.1 only, on a free port, with trust authentication (loopback, tests only).

As a library:   with PgCluster() as pg: ... pg.conninfo("dbname") ... pg.restart(immediate=True)
As a wrapper:   python3 tests/lib/pg.py run -- CMD ARGS   (CMD sees PGHOST/PGPORT/PGUSER/
                PGDATABASE and ICESTREAM_PG=<conninfo>; the cluster is removed afterwards)

Fails loudly when the server binaries are missing: a scale-out test never skips."""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PG_BIN = "/usr/lib/postgresql/15/bin"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_postgres(args, **kw):
    if os.geteuid() == 0:
        args = ["runuser", "-u", "postgres", "--"] + args
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


class PgCluster:
    def __init__(self, settings=None):
        if not os.path.exists(os.path.join(PG_BIN, "postgres")):
            raise RuntimeError(f"PostgreSQL 15 is not installed ({PG_BIN}); run scripts/install-deps")
        self.settings = {
            "listen_addresses": "'127.0.0.1'",
            "max_connections": "100",
            "track_commit_timestamp": "on",
            "fsync": "on",
            "shared_buffers": "64MB",
            "log_min_messages": "warning",
        }
        self.settings.update(settings or {})
        self.port = _free_port()
        self.root = tempfile.mkdtemp(prefix="icestream-pg-")
        self.data = os.path.join(self.root, "data")
        self.sock = os.path.join(self.root, "sock")
        self.log = os.path.join(self.root, "server.log")
        os.makedirs(self.sock)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            os.chown(self.sock, pw.pw_uid, pw.pw_gid)
        os.chmod(self.root, 0o755)

    # -- lifecycle -----------------------------------------------------------------
    def start(self):
        _as_postgres([os.path.join(PG_BIN, "initdb"), "-D", self.data, "-U", "postgres",
                      "--auth=trust", "-E", "UTF8", "--locale=C"])
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(f"\nport = {self.port}\nunix_socket_directories = '{self.sock}'\n")
            for k, v in self.settings.items():
                f.write(f"{k} = {v}\n")
        self._ctl("start", "-w", "-l", self.log)
        return self

    def _ctl(self, *args):
        return _as_postgres([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data] + list(args))

    def stop(self, mode="fast"):
        try:
            self._ctl("stop", "-m", mode, "-w")
        except subprocess.CalledProcessError:
            pass

    def restart(self, immediate=False):
        """`-m immediate` is a crash: no checkpoint, recovery at start."""
        self._ctl("restart", "-w", "-m", "immediate" if immediate else "fast", "-l", self.log)

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline().strip())

    def cleanup(self):
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()

    # -- use -----------------------------------------------------------------------
    def conninfo(self, dbname="postgres", port=None):
        return f"host=127.0.0.1 port={port or self.port} user=postgres dbname={dbname}"

    def psql(self, sql, dbname="postgres"):
        p = subprocess.run(["psql", "-X", "-v", "ON_ERROR_STOP=1", "-At", "-h", "127.0.0.1",
                            "-p", str(self.port), "-U", "postgres", "-d", dbname, "-c", sql],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"psql failed: {p.stderr.strip()}")
        return p.stdout.strip()

    def create_database(self, name):
        self.psql(f'CREATE DATABASE "{name}"')
        return self.conninfo(name)

    def env(self, dbname="postgres"):
        e = dict(os.environ)
        e.update({"PGHOST": "127.0.0.1", "PGPORT": str(self.port), "PGUSER": "postgres",
                  "PGDATABASE": dbname, "ICESTREAM_PG": self.conninfo(dbname)})
        return e


def main():
    if len(sys.argv) < 3 or sys.argv[1] != "run" or "--" not in sys.argv:
        print("usage: pg.py run -- CMD ARGS", file=sys.stderr)
        return 2
    cmd = sys.argv[sys.argv.index("--") + 1:]
    with PgCluster() as pg:
        p = subprocess.run(cmd, env=pg.env())
        return p.returncode


if __name__ == "__main__":
    sys.exit(main())

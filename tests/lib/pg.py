"""A throw-away PostgreSQL 15 cluster on 127.0.0.1 for the scale-out tests, made by
`pg_virtualenv` (Debian's postgresql-common; postgresql-15 and postgresql-common are
installed by scripts/install-deps). pg_virtualenv runs a command beside a new cluster and
drops the cluster when the command ends; here that command is a small holder process that
waits for its stdin to close, so the cluster lives as long as this object (or, should the
test itself be killed, until the kernel closes the pipe: the holder then exits and
pg_virtualenv drops the cluster — nothing is left running).

- `-t`: the cluster's files in a temporary folder even as root (as root pg_virtualenv would
  otherwise make /etc/postgresql/15/regress and rewrite /etc/postgresql-common's service
  file: one cluster per machine, so two tests could not run side by side). The cluster
  belongs to `postgres` (PostgreSQL refuses to run as root).
- The port is chosen here (a free one, passed as PGPORT): tests build connection strings
  and fault proxies from it.
- The server listens on 127.0.0.1 only, with trust authentication (loopback, tests only):
  our settings (`listen_addresses`, `fsync = on` over pg_virtualenv's `fsync = off`, …) are
  a file of postgresql.conf lines that the cluster's configuration includes last.
- `restart(immediate=True)` is `pg_ctlcluster … stop -m immediate`, then `start`, on that cluster (a
  crash: no checkpoint, recovery at start), with PG_CLUSTER_CONF_ROOT pointing at it.

The price: pg_ctlcluster waits for a starting server in steps of 0.5 s, so a cluster is up
in about 3.5 s (initdb and `pg_ctl start -w`, which this file ran before, took about 1 s on
the same box) and a restart takes about 4 s; about 2.5 s more per scale-out suite. What it
buys: the cluster goes away with the test even when the test is killed (a timeout's
SIGKILL), where a server started with pg_ctl kept running.

As a library:   with PgCluster() as pg: ... pg.conninfo("dbname") ... pg.restart(immediate=True)
As a wrapper:   python3 tests/lib/pg.py run -- CMD ARGS   (CMD sees PGHOST/PGPORT/PGUSER/
                PGDATABASE and ICESTREAM_PG=<conninfo>; the cluster is removed afterwards)

Fails loudly when pg_virtualenv or the server binaries are missing: a scale-out test never
skips."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PG_VERSION = "15"
PG_BIN = f"/usr/lib/postgresql/{PG_VERSION}/bin"
PG_VIRTUALENV = "/usr/bin/pg_virtualenv"

# The command pg_virtualenv runs: writes where the cluster lives (its environment) to the
# file named by argv[1], waits until its stdin closes, then removes our folder argv[2] (the
# running server has read the settings in it), so a test killed outright leaves nothing.
_HOLDER = """
import json, os, shutil, sys
info = {k: os.environ.get(k) for k in ("PG_CLUSTER_CONF_ROOT", "PGPORT", "PGVERSION", "PGHOST")}
with open(sys.argv[1] + ".tmp", "w") as f:
    json.dump(info, f)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
sys.stdin.read()
shutil.rmtree(sys.argv[2], ignore_errors=True)
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgCluster:
    def __init__(self, settings=None):
        for need in (os.path.join(PG_BIN, "postgres"), PG_VIRTUALENV):
            if not os.path.exists(need):
                raise RuntimeError(f"{need} is missing (postgresql-{PG_VERSION}, postgresql-common); "
                                   "run scripts/install-deps")
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
        os.chmod(self.root, 0o755)  # the postgres user reads the settings file in it
        self.proc = None
        self.conf_root = None  # the cluster's PG_CLUSTER_CONF_ROOT (pg_virtualenv's folder)
        self.data = None
        self.log = None  # the server's log file

    # -- lifecycle -----------------------------------------------------------------
    def start(self, timeout=120):
        conf = os.path.join(self.root, "icestream.conf")
        with open(conf, "w") as f:
            for k, v in self.settings.items():
                f.write(f"{k} = {v}\n")
        os.chmod(conf, 0o644)
        info_path = os.path.join(self.root, "cluster.json")
        self.out_path = os.path.join(self.root, "pg_virtualenv.out")
        out = open(self.out_path, "wb")
        env = dict(os.environ, PGPORT=str(self.port))
        for k in ("PGHOST", "PGHOSTADDR", "PGDATABASE", "PGUSER", "PGCLUSTER", "PG_CLUSTER_CONF_ROOT"):
            env.pop(k, None)
        self.proc = subprocess.Popen(
            [PG_VIRTUALENV, "-t", "-v", PG_VERSION, "-i", "--auth=trust --locale=C -E UTF8",
             "-o", f"include={conf}", sys.executable, "-c", _HOLDER, info_path, self.root],
            stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, env=env, cwd="/")
        out.close()
        deadline = time.time() + timeout
        while not os.path.exists(info_path):
            if self.proc.poll() is not None or time.time() > deadline:
                output = self._output()
                self.cleanup()
                raise RuntimeError(f"pg_virtualenv did not start a cluster: {output}")
            time.sleep(0.05)
        with open(info_path) as f:
            info = json.load(f)
        if info["PGPORT"] != str(self.port):
            self.cleanup()
            raise RuntimeError(f"pg_virtualenv made its cluster on port {info['PGPORT']}, not {self.port}")
        self.conf_root = info["PG_CLUSTER_CONF_ROOT"]
        work = os.path.dirname(self.conf_root)
        self.data = os.path.join(work, "data", PG_VERSION, "regress")
        self.log = os.path.join(work, "log", f"postgresql-{PG_VERSION}-regress.log")
        return self

    def _output(self):
        try:
            with open(self.out_path, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def _ctl(self, *args):
        env = dict(os.environ, PG_CLUSTER_CONF_ROOT=self.conf_root)
        p = subprocess.run(["pg_ctlcluster"] + list(args[:-1]) + [PG_VERSION, "regress", args[-1]],
                           capture_output=True, text=True, env=env, cwd="/")
        if p.returncode != 0:
            log = ""
            try:
                with open(self.log, errors="replace") as f:
                    log = f.read()[-3000:]
            except (OSError, TypeError):
                pass
            raise RuntimeError(f"{' '.join(p.args)} failed ({p.returncode}): {p.stdout}{p.stderr}\n"
                               f"server log (end):\n{log}")
        return p

    def stop(self, mode="fast"):
        try:
            self._ctl("-m", mode, "stop")
        except RuntimeError:
            pass

    def restart(self, immediate=False):
        """`-m immediate` is a crash: no checkpoint, recovery at start. A stop, then a start
        once the old postmaster is gone: pg_ctlcluster's own `restart` may find the cluster
        "already running" when its start comes before the stopped postmaster has exited (seen
        on a loaded machine)."""
        old = self.postmaster_pid()
        self._ctl("-m", "immediate" if immediate else "fast", "stop")
        deadline = time.time() + 60
        while os.path.exists(f"/proc/{old}") and time.time() < deadline:
            time.sleep(0.05)
        for attempt in range(10):
            try:
                self._ctl("start")
                return
            except RuntimeError as e:
                if "already running" not in str(e) or attempt == 9:
                    raise
                time.sleep(0.5)

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline().strip())

    def cleanup(self):
        """Ends the holder: pg_virtualenv stops the cluster (immediate) and removes it."""
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                if self.conf_root:
                    self.stop("immediate")
            self.proc = None
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

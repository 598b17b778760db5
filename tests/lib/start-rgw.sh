#!/usr/bin/env bash
# Starts a one-node Ceph cluster with a radosgw S3 front end for the S3 test suites:
# one monitor, one OSD on memstore (RAM, 2 GiB, lost on stop) and radosgw, every daemon
# bound to 127.0.0.1, cephx off inside the cluster. radosgw itself verifies SigV4.
#
#   tests/lib/start-rgw.sh DIR RGW_PORT MON_PORT
#
# Prints "radosgw ready on http://127.0.0.1:RGW_PORT" when S3 answers. The daemons write
# their pids to DIR/run/*.pid; tests/lib/harness.py (Rgw.stop) stops them by those pids.
# S3 user: access key AKTEST, secret SKTEST. SSE-KMS keys (radosgw's "testing" KMS
# backend): testkey-1, testkey-2.
# Needs the Debian packages radosgw ceph-mon ceph-osd uuid-runtime
# (scripts/install-deps --with-rgw).
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: $0 DIR RGW_PORT MON_PORT" >&2
  exit 2
fi
DIR=$(realpath -m "$1")
RGW_PORT=$2
MON_PORT=$3
for tool in monmaptool ceph-mon ceph-osd ceph radosgw radosgw-admin uuidgen; do
  if ! command -v "$tool" >/dev/null; then
    echo "start-rgw: $tool is missing; run scripts/install-deps --with-rgw" >&2
    exit 1
  fi
done

mkdir -p "$DIR"
rm -rf "${DIR:?}"/{mon,osd,rgw,run,log,monmap}
mkdir -p "$DIR"/{mon,osd,rgw,run,log}
export CEPH_CONF="$DIR/ceph.conf"

# The secure/crc modes: with auth "none" the default messenger mode makes the daemons
# wait for an authentication that never comes; "crc" everywhere avoids that.
cat >"$CEPH_CONF" <<CONF
[global]
fsid = $(uuidgen)
mon host = 127.0.0.1:$MON_PORT
public network = 127.0.0.0/8
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms cluster mode = crc
run dir = $DIR/run
pid file = $DIR/run/\$name.pid
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon warn on pool no redundancy = false

[mon.a]
mon data = $DIR/mon

[osd.0]
osd data = $DIR/osd
osd objectstore = memstore
memstore device bytes = 2147483648
osd class dir = /usr/lib/x86_64-linux-gnu/rados-classes
osd max object name len = 460
osd max object namespace len = 64
public addr = 127.0.0.1
cluster addr = 127.0.0.1

[client.rgw.test]
rgw data = $DIR/rgw
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw crypt require ssl = false
rgw crypt s3 kms backend = testing
rgw crypt s3 kms encryption keys = testkey-1=$(head -c 32 /dev/urandom | base64 -w0) testkey-2=$(head -c 32 /dev/urandom | base64 -w0)
CONF

FSID=$(sed -n 's/^fsid = //p' "$CEPH_CONF")
monmaptool --create --add a "127.0.0.1:$MON_PORT" --fsid "$FSID" "$DIR/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$DIR/monmap" >/dev/null
ceph-mon -i a --public-addr "127.0.0.1:$MON_PORT"

OSD_ID=$(ceph osd create)
ceph-osd -i "$OSD_ID" --mkfs >/dev/null 2>&1
ceph osd crush add-bucket node0 host >/dev/null 2>&1
ceph osd crush move node0 root=default >/dev/null 2>&1
ceph osd crush add "osd.$OSD_ID" 1.0 host=node0 >/dev/null 2>&1
ceph-osd -i "$OSD_ID" >/dev/null 2>&1

radosgw -n client.rgw.test
for _ in $(seq 120); do
  if curl -s -o /dev/null "http://127.0.0.1:$RGW_PORT/"; then break; fi
  sleep 0.5
done
radosgw-admin user create --uid=tester --display-name=tester --access-key=AKTEST --secret=SKTEST >/dev/null
echo "radosgw ready on http://127.0.0.1:$RGW_PORT"

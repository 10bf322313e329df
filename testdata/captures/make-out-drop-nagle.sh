#!/usr/bin/env bash
# Makes candidates for out-drop-nagle-early.pcap.gz (see README.md): the look-alike of
# crates/netdoctor/tests/live/client_drop.rs by hand. A server writing each keep-alive
# response in two send()s with TCP_NODELAY on (a 256-byte header, a 615-byte body), 5 % of
# its packets dropped by an iptables `statistic` rule in its namespace's OUTPUT chain, and
# `netdoctor diagnose -c 8 -d 3s --pcap` from the client's namespace, RUNS times (default 15).
# A body lost there is resent right after the client's delayed ACK of its header: the packet
# shape of Nagle. The script prints each run's nagle_delayed_ack/delayed_ack_stall findings
# (by the binary BIN, default `netdoctor` on PATH) and keeps every capture in OUTDIR (default
# ./out-drop-runs): cut a connection with a stall by
#   tshark -r OUTDIR/runK.pcap -Y 'tcp.port==PORT && frame.time_relative < 0.1' -w cut.pcap
# The stall is random: the old analysis told it as Nagle in 4 of 29 runs. Namespaces
# ${NS_PREFIX:-nd-odn}-$$-{cli,srv} are removed on exit, also on failure; the server is
# stopped by its PID.
# Needs root, python3, iptables, tshark.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
BIN="${BIN:-netdoctor}"
RUNS="${RUNS:-15}"
OUTDIR="${OUTDIR:-$PWD/out-drop-runs}"
mkdir -p "$OUTDIR"
lab_begin netdoctor-outdrop
C="${NS_PREFIX:-nd-odn}-$$-cli"
S="${NS_PREFIX:-nd-odn}-$$-srv"
lab_netns "$C" "$S"
lab_veth "$C" "$S" odn-c odn-s 10.219.71.2 10.219.71.1
ip netns exec "$S" iptables -A OUTPUT -p tcp --sport 19710 \
    -m statistic --mode random --probability 0.05 -j DROP
cat >"$work/srv.py" <<'PY'
import socket, sys, threading
BODY = b"x" * 615
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 615\r\n"
HEAD += b"X-Pad: " + b"p" * (256 - len(HEAD) - 11) + b"\r\n\r\n"
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            buf = buf.split(b"\r\n\r\n", 1)[1]
            c.sendall(HEAD)  # two writes: header, then body
            c.sendall(BODY)
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(128)
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
PY
ip netns exec "$S" python3 "$work/srv.py" 10.219.71.1 19710 &
pids+=($!)
for _ in $(seq 1 100); do
    ip netns exec "$S" ss -Hltn 'sport = :19710' | grep -q . && break
    sleep 0.05
done
for k in $(seq 1 "$RUNS"); do
    "$BIN" diagnose http://10.219.71.1:19710/ --netns "$C" -c 8 -d 3s \
        --pcap "$OUTDIR/run$k.pcap" --json >"$OUTDIR/run$k.json" 2>/dev/null || true
    echo "run $k: $(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print([f["id"] + ": " + f["summary"] for f in r["findings"]
       if f["id"] in ("nagle_delayed_ack", "delayed_ack_stall")])' "$OUTDIR/run$k.json")"
done

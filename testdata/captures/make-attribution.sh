#!/usr/bin/env bash
# Makes setup-reset.pcap and server-close.pcap (see README.md), two captures of "who caused
# it" on the loopback of a namespace made here (its name carries this script's PID), removed
# on exit, also on failure; the servers are stopped by their PIDs. Needs root, tcpdump,
# python3, iproute2, iptables (a rule inside that namespace only).
#   setup-reset.pcap:  a server that accepts each connection and closes it at once with
#                      SO_LINGER 0 (a reset before any byte); the client connects 10 times
#                      and waits 50 ms before it would send its request.
#   server-close.pcap: a server that answers one request per connection and closes first
#                      (`Connection: close`); the client sends 10 requests, reconnecting when
#                      the server closed.
#   client-timeout.pcap: a server that reads each request and never answers; the client
#                      gives up after 300 ms and closes with SO_LINGER 0 (a reset), as
#                      netdoctor's load engine does when a request times out; 5 requests.
#   listen-full.pcap:  a server with listen(0) that never accepts. Client A's pure ACKs are
#                      dropped (iptables in the namespace), so the server has not completed
#                      its handshake when B's connection fills the accept queue; A's request
#                      then meets a full queue, is dropped (ListenOverflows) and resent on
#                      A's retransmission timer. The namespace's nstat deltas are printed.
#   ONLY="listen-full.pcap" ./make-attribution.sh makes just the named captures.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin netdoctor-attribution
N="nd-core2-$$-at"
lab_netns "$N"
ip -n "$N" link set lo up
# listen-full.pcap: drop the pure ACKs of source port 40001 (inside this namespace only).
ip netns exec "$N" iptables -A INPUT -p tcp --sport 40001 --tcp-flags SYN,ACK,FIN,RST,PSH ACK \
    -m length --length 0:64 -j DROP

cat >"$work/server.py" <<'PY'
import socket, struct, sys
mode, port = sys.argv[1], int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(0 if mode == "listenfull" else 64)
print("ready", flush=True)
if mode == "listenfull":
    import time
    time.sleep(30)  # never accepts; stopped by its PID
    sys.exit(0)
body = b"x" * 600
held = []
for _ in range(100):  # bounded
    c, _ = s.accept()
    if mode == "setupreset":
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        continue
    if mode == "clienttimeout":
        held.append(c)  # read by the kernel, never answered
        continue
    c.settimeout(5)
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(4096)
        if not d:
            break
        buf += d
    if buf:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    c.close()
PY

cat >"$work/client.py" <<'PY'
import socket, struct, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
req = b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n"
if mode == "listenfull":
    # A (source port 40001): its pure ACKs are dropped by the namespace's iptables, so its
    # handshake is not complete for the server; B connects and fills the queue (one
    # connection); A's request then meets a full queue and is dropped, and A resends it on
    # its retransmission timer.
    a = socket.socket()
    a.bind(("127.0.0.1", 40001))
    a.settimeout(3)
    a.connect(("127.0.0.1", port))
    b = socket.create_connection(("127.0.0.1", port), timeout=3)
    b.sendall(req)
    time.sleep(0.1)
    a.sendall(req)
    time.sleep(1.5)
    a.close()
    b.close()
    sys.exit(0)
if mode == "clienttimeout":
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(req)
        s.settimeout(0.3)
        try:
            s.recv(100)
        except socket.timeout:
            pass
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    sys.exit(0)
for _ in range(10):
    if mode == "setupreset":
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            continue  # reset before connect() returned
        time.sleep(0.05)
        try:
            s.sendall(req)
            s.recv(100)
        except OSError:
            pass
        s.close()
        continue
    # Keep-alive client: it would reuse the connection; the server closes it.
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(req)
    buf = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    s.close()
    time.sleep(0.005)
PY

capture() {
    local mode="$1" port="$2" file="$3"
    if [[ -n "${ONLY:-}" && " $ONLY " != *" $file "* ]]; then return; fi
    ip netns exec "$N" nstat -n >/dev/null 2>&1 || true
    ip netns exec "$N" python3 "$work/server.py" "$mode" "$port" >"$work/$mode.out" &
    local srv=$!
    pids+=("$srv")
    for _ in $(seq 1 200); do grep -q ready "$work/$mode.out" 2>/dev/null && break; sleep 0.05; done
    ip netns exec "$N" tcpdump -U --immediate-mode -i lo -s 96 -w "$out/$file" "tcp port $port" 2>"$work/$mode.td" &
    local td=$!
    pids+=("$td")
    for _ in $(seq 1 200); do grep -q "listening on" "$work/$mode.td" 2>/dev/null && break; sleep 0.05; done
    ip netns exec "$N" python3 "$work/client.py" "$mode" "$port"
    sleep 0.3
    kill -INT "$td" 2>/dev/null || true
    wait "$td" || true
    kill "$srv" 2>/dev/null || true
    echo "$file: $(tcpdump -r "$out/$file" 2>/dev/null | wc -l) packets"
    ip netns exec "$N" nstat 2>/dev/null | grep -E "Listen(Overflows|Drops)" || true
}
capture setupreset 18110 setup-reset.pcap
capture serverclose 18111 server-close.pcap
capture clienttimeout 18112 client-timeout.pcap
capture listenfull 18113 listen-full.pcap

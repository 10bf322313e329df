#!/usr/bin/env bash
# SYNs a server's host dropped, seen from each end (explore16, session 28): which side an
# unanswered SYN is told on when no counter of the server's host was read.
#   syn-lost-client.pcap.gz  captured in the client's namespace. The server (python3, listen
#                       backlog 1) accepts nothing for 2.5 s, so its host drops the SYNs of the
#                       connections behind the first two (a full accept queue); the clients
#                       repeat them every second until the server accepts. From the client
#                       nothing tells the server's host from the path: side network.
#   syn-lost-server.pcap.gz  the same run captured in the server's namespace: the repeated SYNs
#                       arrive and no SYN/ACK leaves. Its handshake legs are microseconds (a
#                       veth, no delay: netem is not in this kernel), so nothing places the
#                       capture at the server either: side network, said as not known.
# Needs root, iproute2, tcpdump and /usr/bin/python3. Creates namespaces
# ${ND_PREFIX:-ndsv<pid>}c and ...s joined by a veth pair and removes them (and stops every
# process it started, by PID) on exit. The root namespace is not touched.
# Usage: ./make-syn-vantage.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin ndsv-lab
P="${ND_PREFIX:-ndsv$$}"
C="${P}c"
S="${P}s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndsv-c ndsv-s 10.216.0.1 10.216.0.2

cat >"$work/srv.py" <<'PY'
import socket, threading, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 18401))
s.listen(1)
print("ready", flush=True)
time.sleep(2.5)  # accepts nothing: the accept queue is full after two connections
def serve(c):
    c.settimeout(5)
    try:
        c.recv(4096)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
    except OSError:
        pass
    c.close()
s.settimeout(1)
deadline = time.time() + 10
while time.time() < deadline:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
cat >"$work/cli.py" <<'PY'
import socket, threading, time
def client(i):
    time.sleep(0.05 * i)
    c = socket.create_connection(("10.216.0.2", 18401), timeout=10)
    c.sendall(b"GET / HTTP/1.0\r\n\r\n")
    while c.recv(4096):
        pass
    c.close()
ts = [threading.Thread(target=client, args=(i,)) for i in range(6)]
for t in ts: t.start()
for t in ts: t.join()
PY

fifo="$work/srv"
mkfifo "$fifo"
ip netns exec "$S" /usr/bin/python3 "$work/srv.py" >"$fifo" &
pids+=($!)
read -r _ <"$fifo"
tds=()
for side in client server; do
    if [[ $side == client ]]; then ns=$C dev=ndsv-c; else ns=$S dev=ndsv-s; fi
    ip netns exec "$ns" tcpdump -U --immediate-mode -i "$dev" -s 200 -c 400 \
        -w "$work/syn-lost-$side.pcap" "tcp port 18401" 2>"$work/td-$side.err" &
    pids+=($!)
    tds+=($!)
    for _ in $(seq 1 200); do grep -q "listening on" "$work/td-$side.err" 2>/dev/null && break; sleep 0.05; done
done
ip netns exec "$C" timeout 30 /usr/bin/python3 "$work/cli.py"
sleep 0.3
for td in "${tds[@]}"; do kill -INT "$td" 2>/dev/null || true; wait "$td" || true; done
for side in client server; do
    gzip -9n <"$work/syn-lost-$side.pcap" >"$out/syn-lost-$side.pcap.gz"
    echo "syn-lost-$side.pcap.gz: $(tcpdump -r "$work/syn-lost-$side.pcap" 2>/dev/null | wc -l) packets"
done

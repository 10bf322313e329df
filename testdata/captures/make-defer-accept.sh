#!/usr/bin/env bash
# Repeated SYN/ACKs nobody waited on, and their look-alike, on real traffic between two
# network namespaces (helper sweep, the ppa-sessionhijacking story):
#   defer-accept.pcap   a server with TCP_DEFER_ACCEPT (1 s); client A connects and stays idle
#                       for 4 s (a browser's preconnect), then sends a request; client B
#                       connects and sends its request at once. The server's kernel drops
#                       A's bare ACK and repeats its SYN/ACK about 1 s later; A answers it.
#   banner-ack-lost.pcap  the look-alike: a server that speaks first (a banner). Client B's
#                       first ACK is dropped inside the server's namespace (iptables, after the
#                       capture point), so the server repeats its SYN/ACK 1 s later and B,
#                       waiting for the banner, gets it only then: a delayed setup. Client A
#                       is served at once.
# Needs root, iproute2, iptables, tcpdump and /usr/bin/python3. Creates namespaces nds<pid>c and
# nds<pid>s joined by a veth pair, removes them (and stops every process it started, by PID)
# on exit. The root namespace is not touched. Usage: ./make-defer-accept.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin nds-lab
C="nds$$c"
S="nds$$s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" nds-c nds-s 10.79.0.1 10.79.0.2

cat >"$work/srv.py" <<'PY'
import socket, sys, time, threading
mode, port = sys.argv[1], int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port))
if mode == "defer":
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 1)
s.listen(16)
print("ready", flush=True)
deadline = time.time() + 20
def serve(c):
    c.settimeout(10)
    if mode == "banner":
        c.sendall(b"220 ready\r\n")
    try:
        c.recv(4096)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
    except OSError:
        pass
    c.close()
s.settimeout(1)
while time.time() < deadline:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
cat >"$work/cli.py" <<'PY'
import socket, sys, time, threading
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
def defer_client(idle, lport):
    c = socket.create_connection((host, port), timeout=10, source_address=("0.0.0.0", lport))
    time.sleep(idle)
    c.sendall(b"GET / HTTP/1.0\r\n\r\n")
    while c.recv(4096):
        pass
    c.close()
def banner_client(lport, delay):
    time.sleep(delay)
    c = socket.create_connection((host, port), timeout=10, source_address=("0.0.0.0", lport))
    c.recv(64)  # the banner
    c.sendall(b"GET / HTTP/1.0\r\n\r\n")
    while c.recv(4096):
        pass
    c.close()
if mode == "defer":
    ts = [threading.Thread(target=defer_client, args=(4.0, 41001)),
          threading.Thread(target=defer_client, args=(0.0, 41002))]
else:
    ts = [threading.Thread(target=banner_client, args=(41011, 0.0)),
          threading.Thread(target=banner_client, args=(41012, 0.1))]
for t in ts: t.start()
for t in ts: t.join()
PY

capture() { # mode port file
    fifo="$work/srv-$1"
    mkfifo "$fifo"
    ip netns exec "$S" /usr/bin/python3 "$work/srv.py" "$1" "$2" >"$fifo" &
    local srv=$!
    pids+=("$srv")
    read -r _ <"$fifo"
    ip netns exec "$C" tcpdump -U --immediate-mode -i nds-c -s 200 -c 200 \
        -w "$out/$3" "tcp port $2" 2>"$work/td-$1.err" &
    local td=$!
    pids+=("$td")
    for _ in $(seq 1 200); do grep -q "listening on" "$work/td-$1.err" 2>/dev/null && break; sleep 0.05; done
    ip netns exec "$C" timeout 30 /usr/bin/python3 "$work/cli.py" "$1" 10.79.0.2 "$2"
    sleep 0.3
    kill -INT "$td" 2>/dev/null || true
    wait "$td" || true
    kill "$srv" 2>/dev/null || true
    echo "$3: $(tcpdump -r "$out/$3" 2>/dev/null | wc -l) packets"
}
capture defer 18301 defer-accept.pcap
# The first pure ACK (IP length 52 with timestamps) from B's port, in the server's namespace.
ip netns exec "$S" iptables -A INPUT -p tcp --sport 41012 --tcp-flags ALL ACK -m length \
    --length 52 -m statistic --mode nth --every 1000 --packet 0 -j DROP
capture banner 18302 banner-ack-lost.pcap

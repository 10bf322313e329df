#!/usr/bin/env bash
# Makes websocket.pcap.gz (see README.md): a WebSocket over HTTP/1.1. A python3 client sends
# the upgrade request, the python3 server answers 101 Switching Protocols, then the client sends
# 6 masked text frames 250 ms apart (each echoed 20 ms later) while the server pushes a frame of
# its own every 300 ms (8 of them), and the client closes after ~2 s. Nothing after the 101 is
# an HTTP exchange: the server's pushes answer no request. (Session 29, s29d's hunt: they were
# read as turns, an answer "written slowly".) Namespaces joined by a veth pair with GSO one
# segment, captured in the client's namespace. Namespaces are removed on exit, also on failure;
# processes are stopped by their PIDs. Needs root, tcpdump, python3, iproute2, gzip.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin netdoctor-websocket
C="nd-ws-$$-c"
S="nd-ws-$$-s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndws-c ndws-s 10.129.7.1 10.129.7.2 gso1

cat >"$work/server.py" <<'PY'
import socket, threading, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("10.129.7.2", 18604))
l.listen(4)
l.settimeout(30)
c, _ = l.accept()
c.settimeout(30)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf = b""
while b"\r\n\r\n" not in buf:
    buf += c.recv(4096)
c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
def push():
    try:
        for i in range(8):
            time.sleep(0.3)
            msg = b"tick %d" % i
            c.sendall(bytes([0x81, len(msg)]) + msg)
    except OSError:
        pass
threading.Thread(target=push, daemon=True).start()
try:
    while True:
        d = c.recv(4096)
        if not d:
            break
        time.sleep(0.02)
        c.sendall(bytes([0x81, 4]) + b"echo")
except OSError:
    pass
PY
cat >"$work/client.py" <<'PY'
import socket, time
s = socket.create_connection(("10.129.7.2", 18604), timeout=10)
s.sendall(b"GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
s.recv(4096)
key = [1, 2, 3, 4]
for i in range(6):
    msg = b"hello %d" % i
    s.sendall(bytes([0x81, 0x80 | len(msg)] + key) + bytes(b ^ key[j % 4] for j, b in enumerate(msg)))
    time.sleep(0.25)
time.sleep(0.5)
s.close()
PY
ip netns exec "$S" python3 "$work/server.py" &
pids+=("$!")
for _ in $(seq 1 100); do ip netns exec "$S" ss -Hltn "sport = :18604" | grep -q . && break; sleep 0.05; done

tmp="$work/websocket.pcap"
ip netns exec "$C" tcpdump -U --immediate-mode -i ndws-c -s 0 -w "$tmp" "tcp port 18604" 2>"$work/td.err" &
td=$!
pids+=("$td")
for _ in $(seq 1 200); do grep -q "listening on" "$work/td.err" 2>/dev/null && break; sleep 0.05; done
ip netns exec "$C" python3 "$work/client.py"
sleep 1
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
gzip -9 -n -c "$tmp" >"$out/websocket.pcap.gz"
echo "websocket.pcap.gz: $(tcpdump -r "$tmp" 2>/dev/null | wc -l) packets, $(stat -c %s "$out/websocket.pcap.gz") bytes"

#!/usr/bin/env bash
# Makes syn-tail.pcap (see README.md): requests whose connection waited for a SYN
# retransmission, for the tail breakdown (the slowest band is the 1 s SYN retransmit). On the
# loopback of a namespace made here (its name carries this script's PID), removed on exit,
# also on failure; the server is stopped by its PID. Needs root, tcpdump, python3, iproute2.
#   syn-tail.pcap: a server with listen(1) that accepts one connection per 100 ms, answers
#                  its one request and closes; 8 clients at once, 2 requests each, one
#                  connection per request: SYNs that meet the full accept queue are dropped
#                  and repeated 1 s later.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin netdoctor-tail
N="ndtail$$"
lab_netns "$N"
ip -n "$N" link set lo up

cat >"$work/server.py" <<'PY'
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
print("ready", flush=True)
for _ in range(200):  # bounded
    time.sleep(0.1)
    c, _ = s.accept()
    c.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        d = c.recv(4096)
        if not d:
            break
        data += d
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
    c.close()
PY
cat >"$work/client.py" <<'PY'
import socket, sys, threading
port = int(sys.argv[1])
def one():
    for _ in range(2):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n")
        while s.recv(4096):
            pass
        s.close()
ts = [threading.Thread(target=one) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
PY

ip netns exec "$N" tcpdump -i lo -s 200 -w "$work/syn-tail.pcap" -U tcp port 18120 2>/dev/null &
pids+=($!)
sleep 1
ip netns exec "$N" /usr/bin/python3 "$work/server.py" 18120 >"$work/ready" &
pids+=($!)
for _ in $(seq 50); do grep -q ready "$work/ready" && break; sleep 0.1; done
timeout 60 ip netns exec "$N" /usr/bin/python3 "$work/client.py" 18120
sleep 1
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
cp "$work/syn-tail.pcap" "$out/syn-tail.pcap"
ls -l "$out/syn-tail.pcap"

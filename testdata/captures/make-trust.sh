#!/usr/bin/env bash
# Real traffic between two network namespaces for two stories that were told wrong:
#   client-think.pcap.gz  one request per connection (10 connections); the client connects, then spends 16 ms
#                         of its own before it writes the request (the server answers at once
#                         and closes). The 16 ms are the client's, not the handshake's.
#   slow-answer.pcap.gz   the look-alike: one request per connection written at once, the
#                         server waits 16 ms before it answers (setup is the handshake only).
#   slow-handshake.pcap.gz  the other look-alike: one request per connection written at once,
#                         behind a queue on the server's egress (tbf 4 Mbit/s, 150 ms of queue,
#                         kept full by a bulk download on another port that is not captured): the
#                         SYN/ACK waits in that queue, so the setup is the path's.
#   pipelined.pcap.gz     real HTTP/1.1 pipelining: on each of 5 kept connections the client
#                         writes 3 requests 2 ms apart (one segment each) before reading; the
#                         server answers each after 10 ms.
# Captured on the client's veth with tcpdump. Needs root, iproute2, tcpdump, gzip and
# /usr/bin/python3. Creates namespaces ndtr<pid>c and ndtr<pid>s joined by a veth pair, removes
# them (and stops every process it started, by PID) on exit. The root namespace is not touched.
# Usage: ./make-trust.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin ndtr-lab
C="ndtr$$c"
S="ndtr$$s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndtr-c ndtr-s 10.78.0.1 10.78.0.2

# An HTTP/1.1 server: answers each request after `delay` ms; `close` closes after one answer.
cat >"$work/srv.py" <<'PY'
import socket, sys, threading, time
port, delay, close = int(sys.argv[1]), float(sys.argv[2]) / 1000, sys.argv[3] == "close"
body = b"x" * 600
head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n"
        % (len(body), b"Connection: close\r\n" if close else b""))
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port))
s.listen(64)
def serve(c):
    buf = b""
    with c:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            _, buf = buf.split(b"\r\n\r\n", 1)
            time.sleep(delay)
            c.sendall(head + body)
            if close:
                return
while True:
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
# A bulk sender for the queue (port 19309): writes to each client until it goes away.
cat >"$work/bulk.py" <<'PY'
import socket, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 19309))
s.listen(4)
def feed(c):
    try:
        while True:
            c.sendall(b"b" * 65536)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=feed, args=(c,), daemon=True).start()
PY
# The clients: `think` waits before its one request; `pipeline` writes 3 requests, then reads.
cat >"$work/cli.py" <<'PY'
import socket, sys, time
mode, port, think = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000
req = b"GET /%d HTTP/1.1\r\nHost: 10.78.0.2\r\nUser-Agent: trust\r\n\r\n"
def read_all(c, n):
    got = b""
    while got.count(b"HTTP/1.1 200") < n or not got.endswith(b"x" * 600):
        d = c.recv(65536)
        if not d:
            break
        got += d
for k in range(10 if mode != "pipeline" else 5):
    c = socket.create_connection(("10.78.0.2", port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == "pipeline":
        for i in range(3):
            c.sendall(req % i)
            time.sleep(0.002)
        read_all(c, 3)
    else:
        time.sleep(think)
        c.sendall(req % k)
        read_all(c, 1)
    c.close()
    time.sleep(0.05)
PY

run() { # name port server-delay close|keep client-mode think-ms
    local name=$1 port=$2
    ip netns exec "$S" /usr/bin/python3 "$work/srv.py" "$port" "$3" "$4" &
    pids+=($!)
    ip netns exec "$C" tcpdump -U -s 256 -i ndtr-c -w "$work/$name.pcap" "tcp port $port" 2>/dev/null &
    local cap=$!
    pids+=($cap)
    for _ in $(seq 1 100); do
        ip netns exec "$S" ss -ltn | grep -q ":$port " && break
        sleep 0.02
    done
    for _ in $(seq 1 100); do
        [ -s "$work/$name.pcap" ] && break
        sleep 0.02
    done
    sleep 1
    timeout 20 ip netns exec "$C" /usr/bin/python3 "$work/cli.py" "$5" "$port" "$6"
    sleep 0.3
    kill -INT "$cap"
    wait "$cap" || true
    gzip -9n <"$work/$name.pcap" >"$out/$name.pcap.gz"
}
run client-think 19301 0 close think 16
run slow-answer 19302 16 close think 0
run pipelined 19303 10 keep pipeline 0
tc -n "$S" qdisc add dev ndtr-s root tbf rate 4mbit burst 8kb latency 150ms
ip netns exec "$S" /usr/bin/python3 "$work/bulk.py" &
pids+=($!)
sleep 0.3
ip netns exec "$C" timeout 30 /usr/bin/python3 -c '
import socket, time
c = socket.create_connection(("10.78.0.2", 19309))
while c.recv(1 << 20):
    pass' &
pids+=($!)
sleep 1
run slow-handshake 19304 0 close think 0
echo "wrote client-think slow-answer pipelined slow-handshake (.pcap.gz) in $out"

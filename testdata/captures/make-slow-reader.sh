#!/usr/bin/env bash
# Makes slow-reader.pcap (see README.md): nginx with `tcp_nodelay on` serving 24 KB responses
# to a client with SO_RCVBUF 4096 that reads 1 KB every 60 ms. The server's segments are
# smaller than the MSS and leave right after the client's (late) window updates: the packet
# shape of a Nagle stall, but Nagle is off and the held data did not fit in the advertised
# window. Runs on the loopback of a namespace made here (its name carries this script's PID;
# loopback's 64 KB MTU makes every window-limited segment smaller than the MSS, as in the
# reference case on `lo`); the namespace is removed on exit, also on failure, processes are
# stopped by their PIDs. Needs root, nginx-light, tcpdump, python3, iproute2.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin netdoctor-slowreader
N="nd-core-$$-sr"
lab_netns "$N"
ip -n "$N" link set lo up

chmod 755 "$work"
mkdir -p "$work/html" "$work/logs" "$work/tmp"
python3 -c 'import sys; sys.stdout.write("x" * 24576)' >"$work/html/index.html"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    sendfile on;
    default_type text/html;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { listen 127.0.0.1:18100; tcp_nodelay on; root $work/html; }
}
CONF
ip netns exec "$N" nginx -c "$work/nginx.conf" -p "$work"

cat >"$work/client.py" <<'PY'
import socket, sys, time
# 8 requests on one keep-alive connection; SO_RCVBUF 4096 (set before connect, so the
# window stays small), 1 KB read every 60 ms. Bounded: 8 requests, each at most 10 s.
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.settimeout(10)
s.connect(("127.0.0.1", 18100))
for _ in range(8):
    s.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n")
    buf = b""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        d = s.recv(1024)
        if not d:
            sys.exit("server closed")
        buf += d
        if b"\r\n\r\n" in buf:
            head, body = buf.split(b"\r\n\r\n", 1)
            n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
            if len(body) >= n:
                break
        time.sleep(0.06)
s.close()
PY
ip netns exec "$N" tcpdump -U --immediate-mode -i lo -s 96 -w "$out/slow-reader.pcap" 'tcp port 18100' 2>"$work/td.err" &
td=$!
pids+=("$td")
for _ in $(seq 1 200); do grep -q "listening on" "$work/td.err" 2>/dev/null && break; sleep 0.05; done
ip netns exec "$N" python3 "$work/client.py"
sleep 0.3
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
echo "slow-reader.pcap: $(tcpdump -r "$out/slow-reader.pcap" 2>/dev/null | wc -l) packets"

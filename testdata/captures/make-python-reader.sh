#!/usr/bin/env bash
# Makes python-reader-300ms.pcap.gz, python-reader-40ms.pcap.gz and python-writer-40ms.pcap.gz
# (see README.md): a python3 client that reads a 1 MB answer of nginx slowly, about 200 KB/s
# (64 KB per recv then 300 ms asleep; 8 KB per recv then 40 ms asleep), and the look-alike: a
# python3 server that writes its 1 MB answer slowly (8 KB every 40 ms) to a client that reads at
# once. Namespaces joined by a veth pair with GSO one segment (wire-size packets), captured in
# the client's namespace (snap length 96). Namespaces are removed on exit, also on failure;
# processes are stopped by their PIDs. Needs root, nginx-light, tcpdump, python3, iproute2, gzip.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin netdoctor-pyreader
C="nd-s29a-$$-prc"
S="nd-s29a-$$-prs"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndpr-c ndpr-s 10.79.6.1 10.79.6.2 gso1

chmod 755 "$work"
mkdir -p "$work/html" "$work/logs" "$work/tmp"
head -c 1048576 /dev/zero | tr '\0' x >"$work/html/big.bin"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    sendfile on;
    default_type application/octet-stream;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { listen 10.79.6.2:18120; root $work/html; }
}
CONF
ip netns exec "$S" nginx -c "$work/nginx.conf" -p "$work"

# The client: one GET, then CHUNK bytes per recv with PAUSE seconds asleep after each (0: at
# once). Bounded: 30 s. Prints the time it measured, from connect to the last byte.
cat >"$work/client.py" <<'PY'
import socket, sys, time
port, chunk, pause = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
t0 = time.monotonic()
s = socket.create_connection(("10.79.6.2", port), timeout=30)
s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")
n = 0
while time.monotonic() - t0 < 30:
    d = s.recv(chunk)
    if not d:
        break
    n += len(d)
    if pause:
        time.sleep(pause)
s.close()
print(f"client: {n} bytes in {time.monotonic() - t0:.3f} s")
PY
# The look-alike's server: reads the request, then writes 1 MB in 8 KB pieces, 40 ms apart.
cat >"$work/server.py" <<'PY'
import socket, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("10.79.6.2", 18121))
l.listen(4)
l.settimeout(60)
c, _ = l.accept()
c.settimeout(30)
buf = b""
while b"\r\n\r\n" not in buf:
    buf += c.recv(4096)
body = 1048576
c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % body)
for _ in range(body // 8192):
    c.sendall(b"x" * 8192)
    time.sleep(0.04)
c.close()
PY
ip netns exec "$S" python3 "$work/server.py" &
pids+=("$!")

capture() { # NAME PORT CHUNK PAUSE
    local tmp="$work/$1.pcap"
    ip netns exec "$C" tcpdump -U --immediate-mode -i ndpr-c -s 96 -w "$tmp" "tcp port $2" 2>"$work/td.err" &
    local td=$!
    pids+=("$td")
    for _ in $(seq 1 200); do grep -q "listening on" "$work/td.err" 2>/dev/null && break; sleep 0.05; done
    ip netns exec "$C" python3 "$work/client.py" "$2" "$3" "$4"
    sleep 1.5
    kill -INT "$td" 2>/dev/null || true
    wait "$td" || true
    gzip -9 -n -c "$tmp" >"$out/$1.pcap.gz"
    echo "$1.pcap.gz: $(tcpdump -r "$tmp" 2>/dev/null | wc -l) packets, $(stat -c %s "$out/$1.pcap.gz") bytes"
}
capture python-reader-300ms 18120 65536 0.3
capture python-reader-40ms 18120 8192 0.04
capture python-writer-40ms 18121 65536 0

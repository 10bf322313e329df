#!/usr/bin/env bash
# The keep-alive race on real traffic between two network namespaces (explore9):
#   keepalive-race.pcap.gz  nginx with `keepalive_timeout 1s`; a Python http.client client on
#                       one pooled connection sends a request every ~1.0 s (1.0 s ± 6 ms), so
#                       it reuses the connection just as nginx closes it: the request written
#                       right after nginx's FIN gets a reset (RemoteDisconnected in the
#                       client), which then retries on a new connection.
# Needs root, iproute2, nginx, tcpdump, gzip and /usr/bin/python3. Creates namespaces
# ndr<pid>c and ndr<pid>s joined by a veth pair, removes them (and stops every process it
# started, by PID) on exit. The root namespace is not touched. Usage: ./make-keepalive-race.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin ndr-lab
C="ndr$$c"
S="ndr$$s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndr-c ndr-s 10.79.3.1 10.79.3.2 gso1

mkdir -p "$work/www"
echo hello >"$work/www/index.html"
cat >"$work/nginx.conf" <<NGX
user root;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work;
  uwsgi_temp_path $work; scgi_temp_path $work;
  server { listen 10.79.3.2:18400; root $work/www; keepalive_timeout 1s; }
}
NGX
ip netns exec "$S" nginx -c "$work/nginx.conf"
for _ in $(seq 1 100); do [[ -s "$work/nginx.pid" ]] && break; sleep 0.05; done

cat >"$work/cli.py" <<'PY'
import http.client, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conn = http.client.HTTPConnection(host, port, timeout=5)
failed = 0
for i in range(n):
    for attempt in range(2):
        try:
            conn.request("GET", "/index.html")
            conn.getresponse().read()
            break
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            failed += 1
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=5)
    time.sleep(1.0 + (i % 5 - 2) * 0.003)
print("requests", n, "failed on a reused connection", failed)
PY

ip netns exec "$C" tcpdump -U --immediate-mode -i ndr-c -s 256 -w "$work/race.pcap" \
    "tcp port 18400" 2>"$work/td.err" &
td=$!
pids+=("$td")
for _ in $(seq 1 200); do grep -q "listening on" "$work/td.err" 2>/dev/null && break; sleep 0.05; done
ip netns exec "$C" timeout 60 /usr/bin/python3 "$work/cli.py" 10.79.3.2 18400 12
sleep 1.5 # tcpdump killed right after the last packet loses its last block
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
gzip -9 -n -c "$work/race.pcap" >"$out/keepalive-race.pcap.gz"
echo "keepalive-race.pcap.gz: $(tcpdump -r "$work/race.pcap" 2>/dev/null | wc -l) packets"

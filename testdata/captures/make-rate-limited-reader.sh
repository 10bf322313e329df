#!/usr/bin/env bash
# Makes rate-limited-reader.pcap.gz (see README.md): `curl --limit-rate 200k` fetching a 5 MB
# file from nginx over a veth pair between two namespaces made here (GSO one segment, so the
# capture sees wire-size packets), captured in the client's namespace (snap length 96). This
# curl (7.88.1) reads the first megabytes at full speed and then pauses for seconds to keep its
# average: the client's window shuts for most of the request (~23 s in all), and one ~36 ms
# delayed-ACK stall comes in the same request (session 26's one-event critical). A file of
# 1.5 MB was fetched at once (curl's allowance), so 5 MB: 5,100 frames, 70 KB gzip'd. The
# namespaces are removed on exit, also on failure; processes are stopped by their PIDs.
# Needs root, nginx-light, tcpdump, curl, iproute2, gzip.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin netdoctor-ratelimit
C="nd-core-$$-rlc"
S="nd-core-$$-rls"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndrl-c ndrl-s 10.79.5.1 10.79.5.2 gso1

chmod 755 "$work"
mkdir -p "$work/html" "$work/logs" "$work/tmp"
head -c 5242880 /dev/zero | tr '\0' x >"$work/html/big.bin"
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
    server { listen 10.79.5.2:18110; root $work/html; }
}
CONF
ip netns exec "$S" nginx -c "$work/nginx.conf" -p "$work"

tmp="$work/rate-limited-reader.pcap"
ip netns exec "$C" tcpdump -U --immediate-mode -i ndrl-c -s 96 -w "$tmp" 'tcp port 18110' 2>"$work/td.err" &
td=$!
pids+=("$td")
for _ in $(seq 1 200); do grep -q "listening on" "$work/td.err" 2>/dev/null && break; sleep 0.05; done
ip netns exec "$C" curl -sS --max-time 60 --limit-rate 200k -o /dev/null \
    -w 'curl: %{http_code} %{size_download} bytes in %{time_total} s\n' http://10.79.5.2:18110/big.bin
sleep 1.5
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
gzip -9 -n -c "$tmp" >"$out/rate-limited-reader.pcap.gz"
echo "rate-limited-reader.pcap.gz: $(tcpdump -r "$tmp" 2>/dev/null | wc -l) packets, $(stat -c %s "$out/rate-limited-reader.pcap.gz") bytes"

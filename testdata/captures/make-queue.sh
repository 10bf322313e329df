#!/usr/bin/env bash
# Makes shaper-queue.pcap.gz, slow-server-15ms.pcap.gz and slow-server-shaped.pcap.gz (see
# README.md): HTTP responses whose first byte waited in a token-bucket queue on the server's
# interface, against a server that really takes 15 ms, with and without that queue. Client and
# server namespaces joined by a veth (names carry this script's PID), removed on exit, also on
# failure; servers stopped by their PID. Needs root, nginx-light, tcpdump, python3, iproute2,
# and netdoctor (`ND`, default target/release/netdoctor) for the load.
#   shaper-queue:       nginx, a 50 KB file, tbf 20 Mbit/s (burst 32 KB, latency 200 ms) on
#                       the server's veth; 4 keep-alive connections for 1.5 s
#   slow-server-15ms:   python3 answering 50 KB after sleeping 15 ms, no shaper
#   slow-server-shaped: the same server behind the same tbf
# Captured at the client, 100 bytes per packet, gzip'd.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
ND="${ND:-$out/../../target/release/netdoctor}"
. "$out/lib.sh"
lab_begin netdoctor-queue
P="ndq$$"
head -c 50000 /dev/urandom >"$work/big.bin"
cat >"$work/nginx.conf" <<EOC
daemon off; master_process off; worker_processes 1; pid $work/nginx.pid; error_log $work/err.log;
events { worker_connections 1024; }
http { access_log off; server { listen 10.251.9.2:8080; root $work; } }
EOC
cat >"$work/slow.py" <<'PY'
import http.server, socketserver, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(0.015)
        body = b"x" * 50000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
S(("10.251.9.2", 8080), H).serve_forever()
PY
one() { # name shaped(0/1) server(nginx/slow)
    lab_netns "${P}c" "${P}s"
    ip link add "${P}a" netns "${P}c" type veth peer name "${P}b" netns "${P}s"
    ip -n "${P}c" addr add 10.251.9.1/24 dev "${P}a"
    ip -n "${P}s" addr add 10.251.9.2/24 dev "${P}b"
    for n in c s; do ip -n "$P$n" link set lo up; done
    ip -n "${P}c" link set "${P}a" up
    ip -n "${P}s" link set "${P}b" up
    if [ "$2" = 1 ]; then
        ip netns exec "${P}s" tc qdisc add dev "${P}b" root tbf rate 20mbit burst 32kb latency 200ms
    fi
    if [ "$3" = nginx ]; then
        ip netns exec "${P}s" nginx -c "$work/nginx.conf" -e "$work/err.log" &
    else
        ip netns exec "${P}s" /usr/bin/python3 "$work/slow.py" &
    fi
    local srv=$!
    pids+=("$srv")
    sleep 1
    ip netns exec "${P}c" tcpdump -i "${P}a" -s 100 -w "$work/$1.pcap" tcp port 8080 2>/dev/null &
    local cap=$!
    pids+=("$cap")
    sleep 0.5
    ip netns exec "${P}c" "$ND" load -c 4 -d 1500ms http://10.251.9.2:8080/big.bin >/dev/null
    sleep 0.3
    kill "$cap" "$srv"
    wait "$cap" "$srv" 2>/dev/null || true
    ip netns del "${P}c"
    ip netns del "${P}s"
    gzip -9 -f -c "$work/$1.pcap" >"$out/$1.pcap.gz"
}
one shaper-queue 1 nginx
one slow-server-15ms 0 slow
one slow-server-shaped 1 slow

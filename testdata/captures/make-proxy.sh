#!/usr/bin/env bash
# 5xx answers of a reverse proxy on real traffic (nginx proxy_pass) between two network
# namespaces, captured next to the client (explore11; session 26 explore9's setup 3):
#   proxy-504.pcap.gz    nginx `proxy_read_timeout 1s` in front of a python3 upstream that
#                        answers after 3 s: each request gets 504 Gateway Time-out after
#                        1.00 s (nginx gave up waiting for the upstream's answer).
#   proxy-502.pcap.gz    nginx in front of an upstream port where nothing listens: the
#                        connect is refused at once and each request gets 502 Bad Gateway in
#                        about a millisecond (upstream down).
#   app-504.pcap.gz      the look-alike: no proxy, a python3 application that answers 504
#                        itself after 0.2 to 1.6 s (varied): not a proxy's timeout.
# 12 requests each, one at a time, on keep-alive connections (python3 http.client).
# Needs root, iproute2, nginx, tcpdump, gzip and python3. Creates namespaces ndp<pid>c and
# ndp<pid>s joined by a veth pair, removes them (and stops every process it started, by PID)
# on exit. The root namespace is not touched. Usage: ./make-proxy.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin ndp-lab
C="ndp$$c"
S="ndp$$s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndp-c ndp-s 10.79.6.1 10.79.6.2 gso1
ip -n "$S" link set lo up

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
  server { listen 10.79.6.2:18500; location / { proxy_pass http://127.0.0.1:18501; proxy_read_timeout 1s; } }
  server { listen 10.79.6.2:18502; location / { proxy_pass http://127.0.0.1:18503; } }
}
NGX
ip netns exec "$S" nginx -c "$work/nginx.conf"
for _ in $(seq 1 100); do [[ -s "$work/nginx.pid" ]] && break; sleep 0.05; done

cat >"$work/upstream.py" <<'PY'
# A slow upstream (port 18501: answers 200 after 3 s) and an application answering 504 itself
# after a varied wait (port 18504 on the veth address). Threaded, so a request that nginx gave
# up on does not hold the next one.
import http.server, socketserver, sys, threading, time
class Slow(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(3)
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers()
        try:
            self.wfile.write(b"ok\n")
        except OSError:
            pass
    def log_message(self, *a):
        pass
waits = [0.2, 0.9, 1.6, 0.5, 1.3, 0.3, 1.1, 0.7, 1.5, 0.4, 1.0, 0.6]
class App(Slow):
    n = 0
    def do_GET(self):
        time.sleep(waits[App.n % len(waits)]); App.n += 1
        body = b"upstream service timed out\n"
        self.send_response(504); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
a = S(("127.0.0.1", 18501), Slow)
b = S(("10.79.6.2", 18504), App)
threading.Thread(target=a.serve_forever, daemon=True).start()
b.serve_forever()
PY
ip netns exec "$S" python3 "$work/upstream.py" &
pids+=("$!")

cat >"$work/cli.py" <<'PY'
import http.client, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conn = http.client.HTTPConnection(host, port, timeout=10)
codes = []
for i in range(n):
    try:
        conn.request("GET", "/api/items")
        r = conn.getresponse(); r.read(); codes.append(r.status)
        if r.getheader("Connection", "").lower() == "close":
            conn.close(); conn = http.client.HTTPConnection(host, port, timeout=10)
    except (http.client.HTTPException, OSError) as e:
        codes.append(type(e).__name__)
        conn.close(); conn = http.client.HTTPConnection(host, port, timeout=10)
    time.sleep(0.05)
print(port, codes)
PY
for _ in $(seq 1 100); do ip netns exec "$C" python3 -c 'import socket; socket.create_connection(("10.79.6.2", 18504), 1).close()' 2>/dev/null && break; sleep 0.05; done

record() { # record NAME PORT
    ip netns exec "$C" tcpdump -U --immediate-mode -i ndp-c -s 200 -w "$work/$1.pcap" \
        "tcp port $2" 2>"$work/td-$1.err" &
    local td=$!
    pids+=("$td")
    for _ in $(seq 1 200); do grep -q "listening on" "$work/td-$1.err" 2>/dev/null && break; sleep 0.05; done
    ip netns exec "$C" python3 "$work/cli.py" 10.79.6.2 "$2" 12
    sleep 1.5
    kill -INT "$td" 2>/dev/null || true
    wait "$td" || true
    gzip -9 -n -c "$work/$1.pcap" >"$out/$1.pcap.gz"
    echo "$1.pcap.gz: $(tcpdump -r "$work/$1.pcap" 2>/dev/null | wc -l) packets, $(stat -c %s "$out/$1.pcap.gz") bytes"
}
record proxy-504 18500
record proxy-502 18502
record app-504 18504

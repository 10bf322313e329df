#!/usr/bin/env bash
# Makes the protocol captures (see README.md in this folder): exchanges found from direction
# turns on TLS and on a non-HTTP line protocol, and connections that began before the capture.
# Needs root, nginx (Debian nginx-light), openssl, wrk, tcpdump, python3.
# Everything runs on 127.0.0.1 (ports 18443, 18444, 18450). Every process started here is
# stopped by its PID on exit (trap), and the temp dir is removed.
# Usage: ./make-proto.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin nd-proto-captures

wait_listening() {
    for _ in $(seq 1 200); do grep -q "listening on" "$1" 2>/dev/null && break; sleep 0.05; done
    grep -q "listening on" "$1"
}
wait_file() {
    for _ in $(seq 1 200); do [[ -e "$1" ]] && break; sleep 0.05; done
    [[ -e "$1" ]]
}

# capture FILE PORT CMD...: tcpdump on lo (snaplen 96: headers and the first payload bytes)
# while CMD runs, then stop it.
capture() {
    local file="$1" port="$2"; shift 2
    tcpdump -U -i lo -s 96 -c 1600 -w "$out/$file" "tcp port $port" 2>"$work/tcpdump.log" &
    local tp=$!; pids+=("$tp")
    wait_listening "$work/tcpdump.log"
    "$@"
    sleep 0.3
    kill -INT "$tp" 2>/dev/null || true
    wait "$tp" 2>/dev/null || true
}

# --- nginx with TLS: 18443 tcp_nodelay off, 18444 tcp_nodelay on; 4 KiB records, 8 KiB page ---
chmod 755 "$work"
mkdir -p "$work/html" "$work/logs" "$work/tmp"
python3 -c 'import sys; sys.stdout.write("x" * 8191 + "\n")' >"$work/html/index.html"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 256; }
http {
    access_log off;
    sendfile on; tcp_nopush off;
    default_type text/html;
    keepalive_requests 100000;
    ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
    ssl_buffer_size 4k;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { listen 127.0.0.1:18443 ssl; tcp_nodelay off; root $work/html; }
    server { listen 127.0.0.1:18444 ssl; tcp_nodelay on;  root $work/html; }
}
CONF
nginx -c "$work/nginx.conf" -p "$work"
wait_file "$work/nginx.pid"
capture tls-nagle.pcap 18443 wrk -c 4 -t 1 -d 1s https://127.0.0.1:18443/ >/dev/null
capture tls-healthy.pcap 18444 wrk -c 4 -t 1 -d 1s https://127.0.0.1:18444/ >/dev/null

# --- a line protocol, replies in two writes with Nagle on; clients connected before tcpdump ---
cat >"$work/line.py" <<'PY'
import socket, sys, threading, time, os
mode, port, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if mode == "server":
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port)); ls.listen(16); open(ready, "w").close()
    def serve(c):
        f = c.makefile("rb")
        for line in f:               # Nagle stays on (no TCP_NODELAY)
            c.sendall(b"+VALUE " + line.strip() + b"\r\n")
            c.sendall(b"y" * 200 + b"\r\n")
        c.close()
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
else:
    # 4 clients, connected and warmed up before the capture starts; bounded: 6 s at most.
    conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
    def run(s, k):
        f = s.makefile("rb"); n = 0; end = time.time() + 6
        while time.time() < end and n < 2000:
            s.sendall(b"get key%d:%d\r\n" % (k, n)); f.readline(); f.readline(); n += 1
            if n == 3 and k == 0: open(ready, "w").close()
        s.close()
    ts = [threading.Thread(target=run, args=(s, k)) for k, s in enumerate(conns)]
    for t in ts: t.start()
    for t in ts: t.join()
PY
python3 "$work/line.py" server 18450 "$work/srv.ready" & pids+=($!)
wait_file "$work/srv.ready"
python3 "$work/line.py" client 18450 "$work/cli.ready" & cli=$!; pids+=("$cli")
wait_file "$work/cli.ready"
capture line-midstream.pcap 18450 sleep 1.5
wait "$cli" || true

# --- redis (optional): redis-server under redis-benchmark, RESP found from turns ---
# REDIS_BIN=dir names a folder with redis-server and redis-benchmark (e.g. from
# `apt-get download redis-server redis-tools` + `dpkg -x`); default: PATH. Skipped if absent.
rbin="${REDIS_BIN:+$REDIS_BIN/}"
if command -v "${rbin}redis-server" >/dev/null && command -v "${rbin}redis-benchmark" >/dev/null; then
    "${rbin}redis-server" --port 18460 --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no --dir "$work" >"$work/redis.log" 2>&1 & pids+=($!)
    for _ in $(seq 1 200); do grep -q "Ready to accept" "$work/redis.log" && break; sleep 0.05; done
    grep -q "Ready to accept" "$work/redis.log"
    capture redis-healthy.pcap 18460 "${rbin}redis-benchmark" -h 127.0.0.1 -p 18460 -q \
        -n 20000 -P 1 -c 4 -t get,set >/dev/null
else
    echo "redis-server/redis-benchmark not found: redis-healthy.pcap not made" >&2
fi
ls -l "$out"/tls-*.pcap "$out"/line-midstream.pcap "$out"/redis-*.pcap 2>/dev/null || true

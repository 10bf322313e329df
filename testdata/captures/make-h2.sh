#!/usr/bin/env bash
# Makes the HTTP/2 captures (see README.md in this folder), in two network namespaces joined
# by a veth pair (client 10.248.0.1, server 10.248.0.2), named after this script's PID.
# Needs root, nginx (Debian nginx-light 1.22: `listen PORT http2;` on a plain port is h2c
# only), h2load (nghttp2-client), tcpdump, /usr/bin/python3 with python3-h2, iproute2,
# iptables and ethtool (both used only inside the namespaces made here).
# Every process started here is stopped by its PID on exit (trap); the namespaces and the
# temp dir are removed.
# Usage: ./make-h2.sh (the h2 servers: crates/netdoctor-lab/src/h2server.py)
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
# The python3-h2 server the lab cases run too (one copy).
h2server="$out/../../crates/netdoctor-lab/src/h2server.py"
. "$out/lib.sh"
lab_begin nd-h2-captures
cns="ndh2c$$"; sns="ndh2s$$"

lab_netns "$cns" "$sns"
ip link add "h2c$$" type veth peer name "h2s$$"
ip link set "h2c$$" netns "$cns"; ip link set "h2s$$" netns "$sns"
ip -n "$cns" addr add 10.248.0.1/24 dev "h2c$$"; ip -n "$sns" addr add 10.248.0.2/24 dev "h2s$$"
for ns in "$cns" "$sns"; do ip -n "$ns" link set lo up; done
ip -n "$cns" link set "h2c$$" up; ip -n "$sns" link set "h2s$$" up
# Wait for the link (a packet socket bound before the carrier is up captured nothing here).
for _ in $(seq 1 100); do [[ "$(ip netns exec "$sns" cat /sys/class/net/h2s$$/operstate)" == up ]] && break; sleep 0.05; done
sleep 0.5

wait_listening() {
    for _ in $(seq 1 200); do grep -q "listening on" "$1" 2>/dev/null && break; sleep 0.05; done
    grep -q "listening on" "$1"
}
wait_port() {
    for _ in $(seq 1 200); do
        ip netns exec "$sns" bash -c "exec 3<>/dev/tcp/10.248.0.2/$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# capture FILE PORT CMD...: tcpdump in the server namespace, full payload (HTTP/2 frames are
# read from it), while CMD runs in the client namespace. Immediate mode: otherwise the packets of
# a short run wait in a ring block that SIGINT never hands over. Filtered afterwards.
capture() {
    local file="$1" port="$2"; shift 2
    ip netns exec "$sns" tcpdump -U --immediate-mode -B 65536 -i "h2s$$" -s 0 -c 4000 -w "$work/raw.pcap" \
        2>"$work/tcpdump.log" &
    local tp=$!; pids+=("$tp")
    wait_listening "$work/tcpdump.log"
    ip netns exec "$cns" "$@"
    sleep 0.3
    kill -INT "$tp" 2>/dev/null || true
    wait "$tp" 2>/dev/null || true
    tcpdump -r "$work/raw.pcap" -w "$out/$file" "tcp port $port" 2>/dev/null
}

# --- nginx, h2c only (prior knowledge), a 300-byte page ---
chmod 755 "$work"
mkdir -p "$work/html" "$work/logs" "$work/tmp"
/usr/bin/python3 -c 'import sys; sys.stdout.write("x" * 299 + "\n")' >"$work/html/index.html"
# nginx.conf with the h2c-only server on 18480 and the server lines given as arguments.
write_nginx_conf() {
    {
        cat <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 256; }
http {
    access_log off;
    default_type text/html;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { listen 10.248.0.2:18480 http2; root $work/html; }
CONF
        printf '%s\n' "$@" "}"
    } >"$work/nginx.conf"
}
write_nginx_conf
ip netns exec "$sns" nginx -c "$work/nginx.conf" -p "$work"
wait_port 18480
# 200 requests over 4 connections, 10 streams each; every other one a 404.
capture h2c-nginx.pcap 18480 h2load -n 200 -c 4 -m 10 \
    http://10.248.0.2:18480/index.html http://10.248.0.2:18480/missing >"$work/h2load.log"
grep -E "requests:|status codes:" "$work/h2load.log"

# --- a Nagle-on h2 server (the lab's python3-h2 server): headers and body in two writes, no
# TCP_NODELAY ---
ip netns exec "$sns" /usr/bin/python3 "$h2server" 10.248.0.2 18481 --nagle --body 600 & pids+=($!)
wait_port 18481
capture h2c-nagle.pcap 18481 h2load -n 40 -c 1 -m 1 http://10.248.0.2:18481/ >"$work/h2load.log"
grep -E "requests:|status codes:" "$work/h2load.log"

# --- the same server refusing every third stream (RST_STREAM REFUSED_STREAM) ---
ip netns exec "$sns" /usr/bin/python3 "$h2server" 10.248.0.2 18482 --reset-every 3 --body 100 \
    & pids+=($!)
wait_port 18482
capture h2c-refused.pcap 18482 h2load -n 60 -c 2 -m 1 http://10.248.0.2:18482/ >"$work/h2load.log" || true
grep -E "requests:|status codes:" "$work/h2load.log"

# --- nginx with http2_max_concurrent_streams 4, 4 KiB pages sent at 50 KB/s each: h2load -m 16
# wants more streams than the limit, nghttp2 queues them and opens each as a stream ends ---
kill "$(cat "$work/nginx.pid")"; sleep 0.3
write_nginx_conf \
    'server { listen 10.248.0.2:18483 http2; root '"$work"'/html; http2_max_concurrent_streams 4;' \
    'location / { limit_rate 50k; } }' \
    'server { listen 10.248.0.2:18484 http2; root '"$work"'/html; }'
/usr/bin/python3 -c 'import sys; sys.stdout.write("w" * 4095 + "\n")' >"$work/html/4k.html"
/usr/bin/python3 -c 'import sys; sys.stdout.write("w" * 6143 + "\n")' >"$work/html/6k.html"
ip netns exec "$sns" nginx -c "$work/nginx.conf" -p "$work"
wait_port 18483
capture h2c-stream-limit.pcap 18483 h2load -n 40 -c 1 -m 16 http://10.248.0.2:18483/4k.html \
    >"$work/h2load.log"
grep -E "requests:|status codes:" "$work/h2load.log"

# --- loss under multiplexing: 5 % of the server's segments dropped on arrival in the client
# namespace (after the capture point, as on a lossy path), MTU-sized segments (no TSO/GSO on
# the server's veth), 6 KiB pages, 10 streams per connection ---
ip netns exec "$sns" ethtool -K "h2s$$" tso off gso off >/dev/null
ip netns exec "$cns" iptables -A INPUT -p tcp --sport 18484 -m statistic --mode random \
    --probability 0.05 -j DROP
capture h2c-hol.pcap 18484 h2load -n 24 -c 1 -m 10 http://10.248.0.2:18484/6k.html \
    >"$work/h2load.log"
grep -E "requests:|status codes:" "$work/h2load.log"

# --- a server's GOAWAY: nginx keepalive_requests 15 answers 15 streams of the connection, then
# sends GOAWAY (NO_ERROR, last stream 29) and leaves the client's later streams unanswered ---
iptables_off() { ip netns exec "$cns" iptables -F INPUT; }
iptables_off
kill "$(cat "$work/nginx.pid")"; sleep 0.3
write_nginx_conf 'server { listen 10.248.0.2:18485 http2; root '"$work"'/html; keepalive_requests 15; }'
ip netns exec "$sns" nginx -c "$work/nginx.conf" -p "$work"
wait_port 18485
capture h2c-goaway.pcap 18485 timeout 10 h2load -n 40 -c 1 -m 10 http://10.248.0.2:18485/index.html \
    >"$work/h2load.log" || true
grep -E "requests:|status codes:" "$work/h2load.log"
ls -l "$out"/h2c-*.pcap

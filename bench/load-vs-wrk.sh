#!/usr/bin/env bash
# Compares netdoctor's load engine (crates/netdoctor-load/examples/loadbench.rs) with wrk against
# Debian's nginx on loopback: throughput, client CPU per request, p50.
#
# Starts nginx from a temp dir (127.0.0.1:18090 tcp_nodelay on, 127.0.0.1:18091 tcp_nodelay off;
# worker_processes 1, access_log off, 615-byte index.html), stops it by PID on exit, runs ROUNDS
# alternating rounds of `wrk -c 100 -t 2 -d 5s` and `loadbench -c 100 -t 2 -d 5s`, and prints
# medians. Client CPU = user + sys of the client process (/usr/bin/time).
#
# Usage: bench/load-vs-wrk.sh            (env: ROUNDS=3 DURATION=5s CONNECTIONS=100 THREADS=2)
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-100}
THREADS=${THREADS:-2}
PORT_ON=18090
PORT_OFF=18091
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-netdoctor-load}

for tool in nginx wrk /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "load-vs-wrk: $tool not installed" >&2; exit 2; }
done
for port in $PORT_ON $PORT_OFF; do
    if ss -Hltn "sport = :$port" | grep -q .; then
        echo "load-vs-wrk: 127.0.0.1:$port is already in use" >&2
        exit 2
    fi
done

echo "building loadbench (release)..." >&2
(cd "$ROOT" && cargo build --quiet --release -p netdoctor-load --example loadbench)
LOADBENCH=$CARGO_TARGET_DIR/release/examples/loadbench

DIR=$(mktemp -d /tmp/load-vs-wrk.XXXXXX)
NGINX_PID=
cleanup() {
    if [[ -n $NGINX_PID ]]; then
        kill "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

chmod 755 "$DIR"   # nginx's worker (nobody) reads the page
mkdir -p "$DIR/html" "$DIR/tmp"
# 615 bytes, the size of Debian's default welcome page.
{ printf '<!DOCTYPE html>\n<html><head><title>netdoctor bench</title></head><body>\n'
  head -c 1000 /dev/zero | tr '\0' 'x' | fold -w 70
} | head -c 614 >"$DIR/html/index.html"
printf '\n' >>"$DIR/html/index.html"
[[ $(stat -c %s "$DIR/html/index.html") == 615 ]] || { echo "index.html is not 615 bytes" >&2; exit 2; }

cat >"$DIR/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $DIR/tmp/body;
    proxy_temp_path $DIR/tmp/proxy;
    fastcgi_temp_path $DIR/tmp/fastcgi;
    uwsgi_temp_path $DIR/tmp/uwsgi;
    scgi_temp_path $DIR/tmp/scgi;
    default_type text/html;
    sendfile on;
    keepalive_timeout 65;
    server { listen 127.0.0.1:$PORT_ON;  tcp_nodelay on;  root $DIR/html; index index.html; }
    server { listen 127.0.0.1:$PORT_OFF; tcp_nodelay off; root $DIR/html; index index.html; }
}
CONF

nginx -e "$DIR/error.log" -p "$DIR" -c "$DIR/nginx.conf" &
NGINX_PID=$!
# nginx writes its pid file after the listening sockets are open: that is the ready signal.
for _ in $(seq 100); do
    [[ -s $DIR/nginx.pid ]] && break
    kill -0 "$NGINX_PID" 2>/dev/null || { cat "$DIR/error.log" >&2; exit 2; }
    sleep 0.05
done
[[ -s $DIR/nginx.pid ]] || { echo "nginx did not start" >&2; exit 2; }
status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT_ON/" 2>/dev/null || true)
[[ -z $status || $status == 200 ]] || { echo "nginx answers $status" >&2; cat "$DIR/error.log" >&2; exit 2; }

# wrk prints "50%  2.01ms"; convert us/ms/s to ms.
to_ms() { awk '{ v=$1; if (v ~ /us$/) { sub(/us$/,"",v); print v/1000 } else if (v ~ /ms$/) { sub(/ms$/,"",v); print v+0 } else if (v ~ /s$/) { sub(/s$/,"",v); print v*1000 } else print v }'; }

# run_wrk PORT → "rps cpu_s p50_ms requests"
run_wrk() {
    local out=$DIR/wrk.out cpu
    /usr/bin/time -f '%U %S' -o "$DIR/time.out" wrk -c "$CONNECTIONS" -t "$THREADS" -d "$DURATION" --latency "http://127.0.0.1:$1/" >"$out"
    cpu=$(awk '{print $1+$2}' "$DIR/time.out")
    local rps p50 req
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
    p50=$(awk '$1=="50%" {print $2}' "$out" | to_ms)
    req=$(awk '/requests in/ {print $1}' "$out")
    echo "$rps $cpu $p50 $req"
}

# run_nd PORT → "rps cpu_s p50_ms requests"
run_nd() {
    local out=$DIR/nd.out cpu
    /usr/bin/time -f '%U %S' -o "$DIR/time.out" "$LOADBENCH" "http://127.0.0.1:$1/" -c "$CONNECTIONS" -t "$THREADS" -d "$DURATION" >"$out"
    cpu=$(awk '{print $1+$2}' "$DIR/time.out")
    sed -n 's/^RESULT rps=\([0-9.]*\) p50_ms=\([0-9.]*\) p99_ms=[0-9.]* requests=\([0-9]*\) errors=\([0-9]*\)$/\1 \2 \3 \4/p' "$out" |
        awk -v cpu="$cpu" '{ print $1, cpu, $2, $3; if ($4 > 0) print "loadbench errors: " $4 > "/dev/stderr" }'
}

median() { sort -g | awk '{a[NR]=$1} END { if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

: >"$DIR/wrk.rounds"; : >"$DIR/nd.rounds"
for r in $(seq "$ROUNDS"); do
    w=$(run_wrk $PORT_ON); echo "round $r wrk:       rps cpu_s p50_ms requests = $w" >&2; echo "$w" >>"$DIR/wrk.rounds"
    n=$(run_nd $PORT_ON);  echo "round $r netdoctor: rps cpu_s p50_ms requests = $n" >&2; echo "$n" >>"$DIR/nd.rounds"
done

col() { awk -v c="$2" '{print $c}' "$1" | median; }
# CPU seconds per 10k requests, per round, then the median.
per10k() { awk '{ if ($4 > 0) print $2 * 10000 / $4 }' "$1" | median; }

w_rps=$(col "$DIR/wrk.rounds" 1); n_rps=$(col "$DIR/nd.rounds" 1)
w_cpu=$(per10k "$DIR/wrk.rounds"); n_cpu=$(per10k "$DIR/nd.rounds")
w_p50=$(col "$DIR/wrk.rounds" 3); n_p50=$(col "$DIR/nd.rounds" 3)

echo
echo "tcp_nodelay on (127.0.0.1:$PORT_ON), -c $CONNECTIONS -t $THREADS -d $DURATION, medians of $ROUNDS rounds:"
printf '  %-28s %12s %12s %10s\n' "" wrk netdoctor "nd/wrk"
printf '  %-28s %12.0f %12.0f %10.3f\n' "requests/s" "$w_rps" "$n_rps" "$(echo "$n_rps $w_rps" | awk '{print $1/$2}')"
printf '  %-28s %12.4f %12.4f %10.3f\n' "client CPU s / 10k requests" "$w_cpu" "$n_cpu" "$(echo "$n_cpu $w_cpu" | awk '{print $1/$2}')"
printf '  %-28s %12.3f %12.3f\n' "p50 ms" "$w_p50" "$n_p50"

echo
echo "tcp_nodelay off (127.0.0.1:$PORT_OFF), one round each:"
w=$(run_wrk $PORT_OFF); n=$(run_nd $PORT_OFF)
printf '  %-28s %12s %12s\n' "" wrk netdoctor
printf '  %-28s %12.0f %12.0f\n' "requests/s" "$(echo "$w" | cut -d' ' -f1)" "$(echo "$n" | cut -d' ' -f1)"
printf '  %-28s %12.3f %12.3f\n' "p50 ms" "$(echo "$w" | cut -d' ' -f3)" "$(echo "$n" | cut -d' ' -f3)"

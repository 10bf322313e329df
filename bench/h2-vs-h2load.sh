#!/usr/bin/env bash
# netdoctor's HTTP/2 load against h2load (Debian's nghttp2-client) on the same Debian nginx.
#
# Starts nginx from a temp dir (worker_processes 1, access_log off, keepalive_requests 1000000,
# http2_max_concurrent_streams 128, a 615-byte page) with an h2c port (`listen ... http2`, prior
# knowledge) and an h2-over-TLS port (self-signed P-256 certificate from the openssl CLI), and
# stops it by PID on exit. Then ROUNDS alternating rounds of
#   h2load -c 100 -m 10 -t 2 -D SECONDS URL
#   netdoctor load --http2 -c 100 --streams 10 -t 2 -d SECONDS URL
# against h2c (and with TLS=1 against h2, `-k`): requests/s, client CPU (user + sys from
# /usr/bin/time) per 10k requests and peak RSS; prints medians and the ratios netdoctor/h2load.
# The machine is shared: the load average is printed before and after.
#
# Usage: bench/h2-vs-h2load.sh
#   env: ROUNDS=3 SECONDS_RUN=10 CONNECTIONS=100 STREAMS=10 THREADS=2 TLS=1 NETDOCTOR=path
#        PORT_H2C=18190 PORT_H2=18191 (other ports when those are taken)
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_RUN:-10}
CONNECTIONS=${CONNECTIONS:-100}
STREAMS=${STREAMS:-10}
THREADS=${THREADS:-2}
PORT_H2C=${PORT_H2C:-18190}
PORT_H2=${PORT_H2:-18191}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-netdoctor-load}

die() { echo "h2-vs-h2load: $*" >&2; exit 2; }
for tool in nginx h2load openssl /usr/bin/time; do
    command -v "$tool" >/dev/null || die "$tool not installed (apt-get install nginx-light nghttp2-client openssl time)"
done
for port in $PORT_H2C $PORT_H2; do
    if ss -Hltn "sport = :$port" | grep -q .; then die "127.0.0.1:$port is already in use"; fi
done
ulimit -n 65536 2>/dev/null || true

if [[ -n ${NETDOCTOR:-} ]]; then
    ND=$NETDOCTOR
else
    echo "building netdoctor (release)..." >&2
    (cd "$ROOT" && nice cargo build --quiet --release -p netdoctor)
    ND=$CARGO_TARGET_DIR/release/netdoctor
fi
[[ -x $ND ]] || die "no netdoctor binary at $ND"

DIR=$(mktemp -d /tmp/nd-h2bench.XXXXXX)
NGINX_PID=
cleanup() {
    [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$DIR/html"
head -c 615 /dev/zero | tr '\0' 'x' > "$DIR/html/index.html"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=netdoctor bench" -keyout "$DIR/key.pem" -out "$DIR/cert.pem" 2>/dev/null
cat > "$DIR/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $DIR/nginx.pid;
error_log $DIR/error.log warn;
events { worker_connections 4096; }
http {
    access_log off; keepalive_requests 1000000; http2_max_concurrent_streams 128;
    default_type text/html;
    client_body_temp_path $DIR/b; proxy_temp_path $DIR/p; fastcgi_temp_path $DIR/f;
    uwsgi_temp_path $DIR/u; scgi_temp_path $DIR/s;
    server { listen 127.0.0.1:$PORT_H2C http2; root $DIR/html; }
    server { listen 127.0.0.1:$PORT_H2 ssl http2; ssl_certificate $DIR/cert.pem;
             ssl_certificate_key $DIR/key.pem; root $DIR/html; }
}
CONF
nginx -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/error.log" &
NGINX_PID=$!
for _ in $(seq 100); do
    [[ -f $DIR/nginx.pid ]] && ss -Hltn "sport = :$PORT_H2C" | grep -q . && break
    sleep 0.05
done
[[ -f $DIR/nginx.pid ]] || die "nginx did not start: $(cat "$DIR/error.log")"

# run NAME URL -> prints "reqs_per_s cpu_s requests rss_kb"
run_h2load() {
    /usr/bin/time -f '%U %S %M' -o "$DIR/time" \
        h2load -c "$CONNECTIONS" -m "$STREAMS" -t "$THREADS" -D "$SECS" "$1" > "$DIR/out" 2>&1
    local rps req
    rps=$(awk '/^finished in/ {print $4}' "$DIR/out")
    req=$(awk '/^requests:/ {print $8}' "$DIR/out")
    read -r u s m < "$DIR/time"
    echo "$rps $(echo "$u + $s" | bc) $req $m"
}
run_nd() {
    /usr/bin/time -f '%U %S %M' -o "$DIR/time" \
        "$ND" load --http2 -k -c "$CONNECTIONS" --streams "$STREAMS" -t "$THREADS" \
        -d "${SECS}s" --json "$1" > "$DIR/out" 2>/dev/null
    local rps req
    rps=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["requests_per_s"])' < "$DIR/out")
    req=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])' < "$DIR/out")
    read -r u s m < "$DIR/time"
    echo "$rps $(echo "$u + $s" | bc) $req $m"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

bench() { # label url
    local label=$1 url=$2 r
    : > "$DIR/h2load.txt"; : > "$DIR/nd.txt"
    for i in $(seq "$ROUNDS"); do
        r=$(run_h2load "$url"); echo "  round $i h2load:    $r" >&2; echo "$r" >> "$DIR/h2load.txt"
        r=$(run_nd "$url"); echo "  round $i netdoctor: $r" >&2; echo "$r" >> "$DIR/nd.txt"
    done
    for t in h2load nd; do
        rps=$(awk '{print $1}' "$DIR/$t.txt" | median)
        cpu=$(awk '{printf "%.4f\n", $2 / $3 * 10000}' "$DIR/$t.txt" | median)
        rss=$(awk '{print $4}' "$DIR/$t.txt" | median)
        eval "${t}_rps=$rps ${t}_cpu=$cpu ${t}_rss=$rss"
    done
    printf '%-5s %-10s %12s %18s %12s\n' "$label" tool "req/s" "CPU s/10k req" "peak RSS KB"
    printf '%-5s %-10s %12.0f %18.3f %12s\n' "$label" h2load "$h2load_rps" "$h2load_cpu" "$h2load_rss"
    printf '%-5s %-10s %12.0f %18.3f %12s\n' "$label" netdoctor "$nd_rps" "$nd_cpu" "$nd_rss"
    printf '%-5s ratio netdoctor/h2load: req/s %.2f, CPU per request %.2f, RSS %.2f\n' "$label" \
        "$(echo "$nd_rps / $h2load_rps" | bc -l)" "$(echo "$nd_cpu / $h2load_cpu" | bc -l)" \
        "$(echo "$nd_rss / $h2load_rss" | bc -l)"
}

load_average before
echo "$CONNECTIONS connections x $STREAMS streams, $THREADS threads, ${SECS}s, $ROUNDS rounds (medians)"
bench h2c "http://127.0.0.1:$PORT_H2C/"
if [[ -n ${TLS:-} ]]; then bench h2 "https://127.0.0.1:$PORT_H2/"; fi
load_average after

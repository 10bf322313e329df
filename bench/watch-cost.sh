#!/usr/bin/env bash
# bench/watch-cost.sh [LOADED_S] [IDLE_S] [RATE]
#
# What `netdoctor watch` costs: CPU (% of one core) and RSS of the watch process while its port
# serves a steady RATE req/s (default 5000) for LOADED_S seconds (default 600), then while the
# port is idle for IDLE_S seconds (default 600). Budget (issue 14): ≤ 2 % of one core and
# ≤ 50 MB RSS loaded, near zero idle.
#
# BUSY_PORTS=N (default 1) watches and loads N ports (18195, 18197, …), each at RATE req/s.
# RING_MB=M passes `--ring-mb M` to watch (default: watch's own default).
#
# It starts its own nginx (temp dir, worker_processes 1, access_log off, tcp_nodelay on, a 615-byte
# page) on 127.0.0.1:18195 (and the other busy ports), `netdoctor watch -p 18195 --window 30s
# --listen 127.0.0.1:18196 --dir <tmp>`, and `netdoctor load -R RATE -c 50` against each port. Every 10 s it reads utime+stime
# from /proc/PID/stat and VmRSS from /proc/PID/status of the watch process; figures: CPU over
# the whole phase (Δticks / Δt), mean and max RSS. All traffic stays on 127.0.0.1; everything it
# started is stopped by PID on exit, also on failure or Ctrl-C. Needs root (packet capture).
#
# NETDOCTOR=/path/to/netdoctor skips the build (`cargo build --release -p netdoctor`).
set -euo pipefail
LOADED_S="${1:-600}"
IDLE_S="${2:-600}"
RATE="${3:-5000}"
BUSY_PORTS="${BUSY_PORTS:-1}"
PORT=18195
PORTS=()
for i in $(seq 0 $((BUSY_PORTS - 1))); do PORTS+=($((PORT + 2 * i))); done
PORT_LIST="$(IFS=,; echo "${PORTS[*]}")"
RING_ARGS=()
[[ -n "${RING_MB:-}" ]] && RING_ARGS=(--ring-mb "$RING_MB")
METRICS=127.0.0.1:18196
SAMPLE_S=10
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/bench/lib.sh"
netdoctor_binary "$here/target"
need nginx nginx-light
work="$(mktemp -d /tmp/netdoctor-watch-cost.XXXXXX)"
watch_pid=""
load_pids=()

cleanup() {
    for p in "${load_pids[@]}"; do stop_pid "$p"; done
    stop_pid "$watch_pid"
    [[ -f "$work/nginx.pid" ]] && stop_pid "$(cat "$work/nginx.pid")"
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

chmod 755 "$work"
mkdir -p "$work/html" "$work/logs" "$work/tmp" "$work/ring"
head -c 589 /dev/zero | tr '\0' x | sed 's/^/<html><body>/; s/$/<\/body><\/html>/' >"$work/html/index.html"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    default_type text/html;
    keepalive_requests 1000000;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { $(for p in "${PORTS[@]}"; do printf 'listen 127.0.0.1:%s; ' "$p"; done) tcp_nodelay on; root $work/html; }
}
CONF
nginx -c "$work/nginx.conf" -p "$work"

NETDOCTOR_QUIET=1 "$NETDOCTOR" watch -p "$PORT_LIST" --window 30s --listen "$METRICS" \
    --dir "$work/ring" --keep 5 "${RING_ARGS[@]}" >/dev/null 2>"$work/watch.err" &
watch_pid=$!
# ready: the metrics endpoint answers
for _ in $(seq 1 100); do
    curl -sf "http://$METRICS/metrics" >/dev/null 2>&1 && break
    kill -0 "$watch_pid" 2>/dev/null || { cat "$work/watch.err" >&2; exit 1; }
    sleep 0.1
done

tck="$(getconf CLK_TCK)"
ticks() { awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$watch_pid/stat"; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$watch_pid/status"; }

# phase NAME SECONDS: samples the watch process; prints one result line.
phase() {
    local name="$1" secs="$2"
    local t0 c0 n=0 sum=0 max=0 r
    t0="$(date +%s.%N)"; c0="$(ticks)"
    local end=$((SECONDS + secs))
    while ((SECONDS < end)); do
        sleep "$SAMPLE_S"
        r="$(rss_kb)"; n=$((n + 1)); sum=$((sum + r)); ((r > max)) && max=$r
    done
    local t1 c1
    t1="$(date +%s.%N)"; c1="$(ticks)"
    awk -v name="$name" -v c="$((c1 - c0))" -v t0="$t0" -v t1="$t1" -v tck="$tck" \
        -v sum="$sum" -v n="$n" -v max="$max" 'BEGIN {
        printf "%-7s %6.0f s  cpu %5.2f %% of one core  rss mean %5.1f MiB  max %5.1f MiB\n",
            name, t1 - t0, 100 * c / tck / (t1 - t0), sum / n / 1024, max / 1024 }'
}

echo "watch pid $watch_pid ${RING_ARGS[*]}, nginx 127.0.0.1:$PORT_LIST, load $RATE req/s per port for ${LOADED_S}s, then idle ${IDLE_S}s"
for p in "${PORTS[@]}"; do
    "$NETDOCTOR" load -R "$RATE" -c 50 -t 1 -d "$((LOADED_S + 5))s" "http://127.0.0.1:$p/" \
        --json >"$work/load-$p.json" 2>/dev/null &
    load_pids+=($!)
done
sleep 2
phase loaded "$LOADED_S"
for p in "${load_pids[@]}"; do wait "$p" || true; done
load_pids=()
for p in "${PORTS[@]}"; do
    awk -v port="$p" 'BEGIN{RS=","} /"requests_per_s"|"rps"|"requests":/ {gsub(/[{}\n ]/,""); print "  load :" port ": " $0}' "$work/load-$p.json" | head -3
done
sleep 5
phase idle "$IDLE_S"
curl -sf "http://$METRICS/metrics" | grep -E '^netdoctor_(requests_total|windows_total|capture_drops_total|tcp_open_connections|listen_queue_depth)' | sed 's/^/  /'

#!/usr/bin/env bash
# bench/watch-soak.sh [DURATION_S] [WINDOW_S]
#
# A soak of `netdoctor watch` (issue 24): DURATION_S seconds (default 600) of connection churn
# and hostile traffic to the watched port, windows of WINDOW_S seconds (default 10). It checks
# that memory stays flat, that no window is lost and that the agent does not crash:
#   - churn: `netdoctor load --no-keepalive --rate 1000 -c 50` (a new connection per request)
#     for the whole run;
#   - hostile, in turns of 20 s (hping3, bounded in packet rate and time): SYN floods (5k pps),
#     packets with odd flag sets (FIN, RST, NULL, XMAS, SYN+FIN, all flags), data segments at
#     random sequence numbers (out of window, overlapping the real streams' space), and clients
#     that request a 4 MiB file and never read it (the server's peer advertises a zero window
#     for as long as the client lives).
# Every 10 s it samples VmRSS of the agent and the 1-minute load average; at the end it scrapes
# /metrics: `netdoctor_windows_total` must equal the windows that elapsed, the agent must still
# be running and exit 0 on SIGTERM.
#
# Everything runs in a network namespace it creates (ndsoak<PID>): nginx on 127.0.0.1:80, the
# agent, the load and hping3 (on lo). The namespace and every process are removed by PID on
# exit, also on failure or Ctrl-C. Needs root, nginx and hping3.
#
# NETDOCTOR=/path/to/netdoctor skips the build (`cargo build --release -p netdoctor`).
set -euo pipefail
DURATION_S="${1:-600}"
WINDOW_S="${2:-10}"
NS="ndsoak$$"
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/bench/lib.sh"
netdoctor_binary "$here/target"
need nginx nginx-light
need hping3 hping3
PY=/usr/bin/python3
work="$(mktemp -d /tmp/netdoctor-watch-soak.XXXXXX)"
watch_pid=""
pids=()

cleanup() {
    for p in "${pids[@]}"; do stop_pid "$p"; done
    stop_pid "$watch_pid"
    [[ -f "$work/nginx.pid" ]] && stop_pid "$(cat "$work/nginx.pid")"
    netns_del_all
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

netns_add "$NS"
chmod 755 "$work"
mkdir -p "$work/html" "$work/logs" "$work/tmp" "$work/ring"
head -c 589 /dev/zero | tr '\0' x | sed 's/^/<html><body>/; s/$/<\/body><\/html>/' >"$work/html/index.html"
head -c $((4 << 20)) /dev/zero >"$work/html/big"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    default_type text/html;
    send_timeout 3600s;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { listen 127.0.0.1:80 backlog=4096; tcp_nodelay on; root $work/html; }
}
CONF
ip netns exec "$NS" nginx -c "$work/nginx.conf" -p "$work"

NETDOCTOR_QUIET=1 ip netns exec "$NS" "$NETDOCTOR" watch -p 80 --window "${WINDOW_S}s" \
    --listen 127.0.0.1:18197 --dir "$work/ring" --keep 5 --dir-max-mib 64 \
    >/dev/null 2>"$work/watch.err" &
watch_pid=$!
for _ in $(seq 1 100); do
    ip netns exec "$NS" "$PY" -c 'import socket; socket.create_connection(("127.0.0.1", 18197), 0.2)' \
        2>/dev/null && break
    sleep 0.1
done
t_start=$(date +%s.%N)

# Churn for the whole run.
ip netns exec "$NS" "$NETDOCTOR" load --no-keepalive --rate 1000 -c 50 -t 1 -d "${DURATION_S}s" \
    --json http://127.0.0.1:80/ >"$work/churn.json" 2>/dev/null &
pids+=($!)

# Hostile traffic in 20 s turns until the end.
hostile() {
    local end=$(( $(date +%s) + DURATION_S - 5 ))
    local turn=0
    local flags=("-S" "-F" "-R" "" "-F -P -U" "-S -F" "-S -A -R -F -P -U -X -Y")
    while (( $(date +%s) + 20 < end )); do
        case $((turn % 4)) in
            0) timeout 20 ip netns exec "$NS" hping3 -q -I lo -S -p 80 -i u200 127.0.0.1 >/dev/null 2>&1 || true ;;
            1) for f in "${flags[@]}"; do
                   # shellcheck disable=SC2086
                   timeout 3 ip netns exec "$NS" hping3 -q -I lo $f -p 80 -i u1000 127.0.0.1 >/dev/null 2>&1 || true
               done ;;
            2) timeout 20 ip netns exec "$NS" hping3 -q -I lo -A -P -d 200 -M "$RANDOM$RANDOM" -p 80 -i u1000 \
                   127.0.0.1 >/dev/null 2>&1 || true ;;
            3) timeout 20 ip netns exec "$NS" "$PY" - <<'PY' || true
import socket, time
held = []
for _ in range(20):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", 80))
    s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
    held.append(s)
time.sleep(19)
PY
               ;;
        esac
        turn=$((turn + 1))
    done
}
hostile &
pids+=($!)

# ring_MiB: resident pages of the AF_PACKET capture rings (mappings of the capture sockets),
# part of rss_MiB: a ring is resident whole from its setup; it starts at 2 MiB and doubles
# after a window with drops, up to --ring-mb.
printf '%8s %10s %9s %8s\n' t_s rss_MiB ring_MiB loadavg
rss_samples=()
while true; do
    now=$(date +%s.%N)
    el=$(echo "$now - $t_start" | bc -l)
    (( $(echo "$el >= $DURATION_S" | bc -l) )) && break
    kill -0 "$watch_pid" 2>/dev/null || { echo "FAIL: the agent died: $(tail -3 "$work/watch.err")"; exit 1; }
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$watch_pid/status")
    rss_samples+=("$rss")
    ring=$(awk '/socket:/ {on = 1; next} /^[0-9a-f]+-[0-9a-f]+ / {on = 0} on && /^Rss:/ {s += $2} END {print s + 0}' "/proc/$watch_pid/smaps")
    printf '%8.0f %10.1f %9.1f %8s\n' "$el" "$(echo "$rss / 1024" | bc -l)" "$(echo "$ring / 1024" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)"
    sleep 10
done
elapsed=$(echo "$(date +%s.%N) - $t_start" | bc -l)
metrics=$(ip netns exec "$NS" "$PY" -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:18197/metrics").read().decode())')
windows=$(echo "$metrics" | awk '/^netdoctor_windows_total/ {s += $2} END {print s + 0}')
drops=$(echo "$metrics" | awk '/^netdoctor_capture_drops_total/ {s += $2} END {print s + 0}')
reqs=$(echo "$metrics" | awk '/^netdoctor_requests_total/ {s += $2} END {print s + 0}')
half=$(echo "$metrics" | awk '/^netdoctor_tcp_half_open_evicted_total/ {s += $2} END {print s + 0}')
evicted=$(echo "$metrics" | awk '/^netdoctor_tcp_connections_evicted_total/ {s += $2} END {print s + 0}')
expected=$(echo "$elapsed / $WINDOW_S" | bc)
stop_pid "${pids[1]}"
wait "${pids[0]}" 2>/dev/null || true
kill -TERM "$watch_pid"
rc=0
wait "$watch_pid" || rc=$?
watch_pid=""
"$PY" - "${rss_samples[@]}" <<'PY'
import sys
r = [int(x) / 1024 for x in sys.argv[1:]]
q = max(1, len(r) // 4)
first, last = sum(r[:q]) / q, sum(r[-q:]) / q
print(f"RSS MiB: first quarter mean {first:.1f}, last quarter mean {last:.1f}, min {min(r):.1f}, max {max(r):.1f}")
tail = r[-18:]
print(f"RSS MiB: start {r[0]:.1f}, end {r[-1]:.1f}, peak {max(r):.1f}; last {len(tail) * 10} s: {min(tail):.1f}-{max(tail):.1f}")
PY
churn=$("$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(f\"{d['requests']} requests, {d['requests_per_s']:.0f}/s, p99 {d['latency_ms']['p99']:.1f} ms\")" "$work/churn.json" 2>/dev/null || echo "n/a")
echo "churn load: $churn"
echo "windows: $windows counted by the agent, $expected elapsed (${elapsed%.*} s / ${WINDOW_S} s)"
echo "exchanges analyzed: $reqs; capture drops: $drops; evicted: $evicted idle, $half half-open; exit status on SIGTERM: $rc"
echo "evidence dir: $(du -sh "$work/ring" | cut -f1)"
status=0
(( windows >= expected )) || { echo "FAIL: windows lost"; status=1; }
(( rc == 0 )) || { echo "FAIL: agent exit status $rc"; status=1; }
exit $status

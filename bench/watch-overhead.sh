#!/usr/bin/env bash
# bench/watch-overhead.sh [RATE_S] [IDLE_S] [AB_ROUNDS] [AB_S] [AB_RATE]
#
# What `netdoctor watch` costs, measured the way other agents publish it (issue 24):
#   1. CPU (% of one core) and RSS of the watch process at 1k, 5k and 10k req/s (RATE_S seconds
#      each, default 60) and idle (IDLE_S, default 60);
#   2. the latency the agent adds, coordinated-omission corrected: `netdoctor load --rate AB_RATE`
#      (default 5000) for AB_S seconds (default 20) without and with the agent, AB_ROUNDS times
#      (default 4), alternating A-B then B-A so a drift of the machine cancels; p50 and p99 of
#      each run and their mean deltas.
# The 1-minute load average is printed beside every figure: the machine may be shared.
# RATES="1000 5000 10000" (default) sets the cost phase's rates; SKIP_COST=1 runs only the A/B,
# SKIP_AB=1 only the cost phase.
# A rate the load generator does not reach (see req/s) makes that row's latency a backlog, not a
# service time: compare A/B rows only where both reached AB_RATE.
#
# Beside every cost row: the CPU the load generator and nginx used (% of one core) and how idle
# the whole machine was (% of both cores, from /proc/stat) over the phase. A rate not reached
# with an idle share near 0 was starved by other work on the machine, not limited by the
# generator or nginx (which then use far less than a core each).
#
# Everything runs in a network namespace it creates (ndwo<PID>): nginx (NGINX_WORKERS worker
# processes, default 2, access_log off, a 615-byte page) on 127.0.0.1:80 there, `netdoctor watch
# -p 80 --window 30s` there, `netdoctor load -c 50 -t LOAD_THREADS` (default 1) there. The namespace, nginx and the agent are removed or
# stopped by PID on exit, also on failure or Ctrl-C. Needs root.
#
# NETDOCTOR=/path/to/netdoctor skips the build (`cargo build --release -p netdoctor`).
# Every cost row runs on a fresh agent.
# COMPARE=/path/to/other/netdoctor measures that agent too, alternating with NETDOCTOR's in every
# cost row (other-this at one rate, this-other at the next): the CPU
# figures that do not depend on the reached rate are µs of agent CPU per request and per
# captured packet (µs per request ÷ the agent's captured packets per request over its completed
# windows: RATE_S ≥ 32 for one), printed beside each row.
set -euo pipefail
RATE_S="${1:-60}"
IDLE_S="${2:-60}"
AB_ROUNDS="${3:-4}"
AB_S="${4:-20}"
AB_RATE="${5:-5000}"
NS="ndwo$$"
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/bench/lib.sh"
netdoctor_binary "$here/target"
need nginx nginx-light
PY=/usr/bin/python3
work="$(mktemp -d /tmp/netdoctor-watch-overhead.XXXXXX)"
watch_pid=""
nginx_pid=""

cleanup() {
    stop_pid "$watch_pid"
    [[ -f "$work/nginx.pid" ]] && stop_pid "$(cat "$work/nginx.pid")"
    netns_del_all
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

netns_add "$NS"
chmod 755 "$work"
nginx_watched "$NS" "$work"

loadavg() { cut -d' ' -f1 /proc/loadavg; }
# idle and total jiffies of all CPUs
cpu_idle() { awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
nginx_ticks() {
    local s=0 p
    for p in $(pgrep -P "$(cat "$work/nginx.pid")"); do s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
    echo "$s"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

start_watch() { # [BINARY]
    # `ip netns exec` execs, so $! is the agent's own PID.
    NETDOCTOR_QUIET=1 ip netns exec "$NS" "${1:-$NETDOCTOR}" watch -p 80 --window 30s \
        --listen 127.0.0.1:18196 >/dev/null 2>"$work/watch.err" &
    watch_pid=$!
    for _ in $(seq 1 100); do
        ip netns exec "$NS" "$PY" -c 'import socket; socket.create_connection(("127.0.0.1", 18196), 0.2)' \
            2>/dev/null && return 0
        sleep 0.1
    done
    echo "watch did not start: $(cat "$work/watch.err")" >&2
    exit 1
}
stop_watch() { stop_pid "$watch_pid"; watch_pid=""; }
# load RATE SECONDS OUT.json
# The generator's CPU seconds (user+sys) go to OUT.json.cpu when /usr/bin/time is there.
load() {
    local timer=()
    [[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f "%U %S" -o "$3.cpu")
    "${timer[@]}" ip netns exec "$NS" "$NETDOCTOR" load --rate "$1" -c 50 -t "${LOAD_THREADS:-1}" \
        -d "${2}s" --json http://127.0.0.1:80/ >"$3" 2>/dev/null || true
}
gen_cpu() { [[ -f "$1.cpu" ]] && awk -v s="$2" 'NF == 2 {printf "%.1f", ($1 + $2) / s * 100}' "$1.cpu" || echo n/a; }
field() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
# Captured packets per HTTP request over the running agent's completed windows (its metrics
# endpoint; "-" before the first window ends).
pkts_per_req() {
    ip netns exec "$NS" "$PY" -c 'import urllib.request, re
t = urllib.request.urlopen("http://127.0.0.1:18196/metrics", timeout=5).read().decode()
v = lambda n: float((re.search(r"^" + n + r"\{[^}]*\} (\S+)", t, re.M) or [0, 0])[1])
p, r = v("netdoctor_capture_packets_total"), v("netdoctor_requests_total")
print(f"{p / r:.2f}" if r > 0 else "-")' 2>/dev/null || echo -
}

if [[ -z "${SKIP_COST:-}" ]]; then
echo "== cost: CPU of one core and RSS of the watch process (load average beside each) =="
printf '%-8s %-7s %8s %10s %12s %10s %8s %8s %8s %8s %9s %9s %8s\n' phase agent offered req/s \
    "cpu_%core" rss_MiB "gen_%" "nginx_%" "idle_%" loadavg "us/req" "us/pkt" "pkt/req"
bins=("$NETDOCTOR"); names=(this)
if [[ -n "${COMPARE:-}" ]]; then bins=("$COMPARE" "$NETDOCTOR"); names=(other this); fi
# cost_row PHASE RATE BINARY NAME: one phase on a fresh agent (idle when RATE is 0).
cost_row() {
    start_watch "$3"
    sleep 2
    local t0 s0 n0 i0 j0 t1 s1 n1 i1 j1 ppr wall rps reqs cpu
    t0=$(ticks "$watch_pid"); s0=$(date +%s.%N); n0=$(nginx_ticks); read -r i0 j0 < <(cpu_idle)
    if [[ "$2" == 0 ]]; then sleep "$IDLE_S"; else load "$2" "$RATE_S" "$work/cost-$2.json"; fi
    t1=$(ticks "$watch_pid"); s1=$(date +%s.%N); n1=$(nginx_ticks); read -r i1 j1 < <(cpu_idle)
    ppr=$(pkts_per_req)
    wall=$(echo "$s1 - $s0" | bc -l)
    cpu=$(echo "($t1 - $t0) / $hz" | bc -l)
    if [[ "$2" == 0 ]]; then rps=0; else rps=$(field "$work/cost-$2.json" "d['requests_per_s']"); fi
    reqs=$(echo "$rps * $RATE_S" | bc -l)
    local ureq=- upkt=-
    [[ "$2" != 0 ]] && ureq=$(printf '%.2f' "$(echo "$cpu * 1000000 / $reqs" | bc -l)")
    [[ "$ureq" != - && "$ppr" != - ]] && upkt=$(printf '%.3f' "$(echo "$ureq / $ppr" | bc -l)")
    printf '%-8s %-7s %8s %10.0f %12.2f %10.1f %8s %8.1f %8.0f %8s %9s %9s %8s\n' "$1" "$4" "$2" "$rps" \
        "$(echo "$cpu / $wall * 100" | bc -l)" \
        "$(echo "$(rss_kib "$watch_pid") / 1024" | bc -l)" \
        "$([[ "$2" == 0 ]] && echo - || gen_cpu "$work/cost-$2.json" "$wall")" \
        "$(echo "($n1 - $n0) / $hz / $wall * 100" | bc -l)" \
        "$(echo "($i1 - $i0) / ($j1 - $j0) * 100" | bc -l)" "$(loadavg)" "$ureq" "$upkt" "$ppr"
    stop_watch
}
k=0
for rate in 0 ${RATES:-1000 5000 10000}; do
    order=(0 1); (( k % 2 )) && order=(1 0); k=$((k + 1))
    for o in "${order[@]}"; do
        (( o < ${#bins[@]} )) || continue
        cost_row "$([[ $rate == 0 ]] && echo idle || echo load)" "$rate" "${bins[$o]}" "${names[$o]}"
    done
done
fi

[[ -n "${SKIP_AB:-}" ]] && exit 0
echo "== added latency at $AB_RATE req/s, CO-corrected (netdoctor load --rate), $AB_ROUNDS rounds of ${AB_S}s =="
printf '%-6s %-8s %10s %10s %10s %8s\n' round agent req/s p50_ms p99_ms loadavg
: >"$work/ab.tsv"
run_ab() { # round with_agent
    if [[ "$2" == 1 ]]; then start_watch; sleep 1; fi
    load "$AB_RATE" "$AB_S" "$work/ab-$1-$2.json"
    local la; la=$(loadavg)
    if [[ "$2" == 1 ]]; then stop_watch; fi
    local rps p50 p99
    rps=$(field "$work/ab-$1-$2.json" "d['requests_per_s']")
    p50=$(field "$work/ab-$1-$2.json" "d['latency_ms']['p50']")
    p99=$(field "$work/ab-$1-$2.json" "d['latency_ms']['p99']")
    printf '%-6s %-8s %10.0f %10.3f %10.3f %8s\n' "$1" "$([[ $2 == 1 ]] && echo on || echo off)" \
        "$rps" "$p50" "$p99" "$la"
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$p50" "$p99" >>"$work/ab.tsv"
}
# A discarded warm-up run: the first run after nginx starts is slower (seen: p50 0.7 vs 0.15 ms).
load "$AB_RATE" 5 "$work/warmup.json"
for r in $(seq 1 "$AB_ROUNDS"); do
    if (( r % 2 )); then run_ab "$r" 0; run_ab "$r" 1; else run_ab "$r" 1; run_ab "$r" 0; fi
done
"$PY" - "$work/ab.tsv" <<'PY'
import sys, statistics as st
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
on = [(float(a), float(b)) for _, w, a, b in rows if w == "1"]
off = [(float(a), float(b)) for _, w, a, b in rows if w == "0"]
for i, name in ((0, "p50"), (1, "p99")):
    a = [x[i] for x in off]; b = [x[i] for x in on]
    d = st.mean(b) - st.mean(a)
    spread = max(st.pstdev(a), st.pstdev(b))
    print(f"{name}: without {st.mean(a):.3f} ms, with {st.mean(b):.3f} ms, delta {d:+.3f} ms "
          f"(run-to-run spread ±{spread:.3f} ms); medians {st.median(a):.3f} / "
          f"{st.median(b):.3f} ms, delta {st.median(b) - st.median(a):+.3f} ms")
PY

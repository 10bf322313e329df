#!/usr/bin/env bash
# bench/watch-ab.sh: the CPU of two `netdoctor watch` binaries under ONE continuous load,
# alternating, so a ratio of a few percent can be resolved on a shared machine (issue 24).
#
#   PEER=/path/to/other/netdoctor [NETDOCTOR=/path/to/this] bench/watch-ab.sh [ROUNDS] [ROUND_S] [RATE]
#
# One nginx (NGINX_WORKERS, default 2, the page and config of watch-overhead.sh) and one
# `netdoctor load --rate RATE -c 50` (default 10000 req/s) run for the whole benchmark in a
# namespace it creates (AB_NS, default ndab<PID>). Meanwhile agent A (PEER) and agent B
# (NETDOCTOR) take turns: ROUNDS rounds (default 6), each running both, in the order A B, then
# B A, ... (a drift of the machine cancels). A turn starts the agent (`watch -p 80 --window 30s
# --listen 127.0.0.1:LISTEN_PORT`, default 19600), lets it settle SETTLE_S (default 3) so its
# start-up is not counted, measures ROUND_S seconds (default 15), then stops it.
#
# CPU of the agent process over a turn: the sum of its threads' on-CPU nanoseconds
# (/proc/PID/task/*/schedstat, exact) and utime+stime (/proc/PID/stat, in 10 ms ticks, which
# at 1 % of a core over 15 s is only ~7 % resolution: printed as a cross-check). The captured
# packets of the turn are the loopback's packet counter (rx) in the namespace, so ns per packet
# does not depend on the rate the load reached. Per round: B ÷ A of %core and of ns/packet;
# at the end the median and range of those ratios and the load average.
#
# CAPTURE=file.pcap also records 3 s of the same load (tcpdump -s 256) before the rounds, for
# callgrind (`valgrind --tool=callgrind netdoctor analyze -j 1 --json file.pcap`).
# Needs root, nginx (nginx-light); everything is stopped by PID and removed on exit.
set -euo pipefail
ROUNDS="${1:-6}"
ROUND_S="${2:-15}"
RATE="${3:-10000}"
SETTLE_S="${SETTLE_S:-3}"
LISTEN_PORT="${LISTEN_PORT:-19600}"
NS="${AB_NS:-ndab$$}"
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/bench/lib.sh"
[[ -n "${PEER:-}" && -x "${PEER:-}" ]] || { echo "PEER=/path/to/other/netdoctor is needed" >&2; exit 2; }
netdoctor_binary "$here/target"
need nginx nginx-light
PY=/usr/bin/python3
work="$(mktemp -d /tmp/netdoctor-watch-ab.XXXXXX)"
watch_pid=""
load_pid=""

cleanup() {
    stop_pid "$watch_pid"
    stop_pid "$load_pid"
    [[ -f "$work/nginx.pid" ]] && stop_pid "$(cat "$work/nginx.pid")"
    netns_del_all
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

netns_add "$NS"
chmod 755 "$work"
nginx_watched "$NS" "$work"

hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# on-CPU ns of every thread of PID (threads that ended are not counted: the agent's live for
# its whole run)
run_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
lo_pkts() { ip netns exec "$NS" cat /sys/class/net/lo/statistics/rx_packets; }
now() { date +%s.%N; }

total=$(( SETTLE_S + 5 + (ROUNDS * 2) * (ROUND_S + SETTLE_S + 3) + 30 ))
ip netns exec "$NS" "$NETDOCTOR" load --rate "$RATE" -c 50 -t "${LOAD_THREADS:-1}" -d "${total}s" \
    --json http://127.0.0.1:80/ >"$work/load.json" 2>/dev/null &
load_pid=$!
sleep "$SETTLE_S"
if [[ -n "${CAPTURE:-}" ]]; then
    need tcpdump tcpdump
    ip netns exec "$NS" timeout 3 tcpdump -i lo -s 256 -w "$CAPTURE" -q 'tcp port 80' 2>/dev/null || true
    echo "captured: $CAPTURE"
fi

start_watch() { # BINARY
    NETDOCTOR_QUIET=1 ip netns exec "$NS" "$1" watch -p 80 --window 30s \
        --listen "127.0.0.1:$LISTEN_PORT" >/dev/null 2>"$work/watch.err" &
    watch_pid=$!
    for _ in $(seq 1 100); do
        ip netns exec "$NS" "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $LISTEN_PORT), 0.2)" \
            2>/dev/null && return 0
        sleep 0.1
    done
    echo "watch did not start: $(cat "$work/watch.err")" >&2
    exit 1
}

# turn ROUND NAME BINARY: one measured turn; appends "round name pct_core ticks_pct ns_per_pkt pkts_per_s"
turn() {
    start_watch "$3"
    sleep "$SETTLE_S"
    local n0 t0 p0 w0 n1 t1 p1 w1
    n0=$(run_ns "$watch_pid"); t0=$(ticks "$watch_pid"); p0=$(lo_pkts); w0=$(now)
    sleep "$ROUND_S"
    n1=$(run_ns "$watch_pid"); t1=$(ticks "$watch_pid"); p1=$(lo_pkts); w1=$(now)
    kill -0 "$load_pid" 2>/dev/null || { echo "the load ended early" >&2; exit 1; }
    stop_pid "$watch_pid"; watch_pid=""
    "$PY" - "$1" "$2" "$n0" "$n1" "$t0" "$t1" "$p0" "$p1" "$w0" "$w1" "$hz" >>"$work/turns.tsv" <<'PY'
import sys
r, name, n0, n1, t0, t1, p0, p1, w0, w1, hz = sys.argv[1:]
wall = float(w1) - float(w0)
ns = int(n1) - int(n0)
pk = int(p1) - int(p0)
print(f"{r}\t{name}\t{ns / 1e9 / wall * 100:.4f}\t{(int(t1) - int(t0)) / int(hz) / wall * 100:.3f}"
      f"\t{ns / max(pk, 1):.1f}\t{pk / wall:.0f}")
PY
    tail -1 "$work/turns.tsv" | awk -F'\t' '{printf "%-6s %-3s %12s %12s %10s %10s %8s\n", $1, $2, $3, $4, $5, $6, "'"$(cut -d' ' -f1 /proc/loadavg)"'"}'
}

echo "== watch A/B under one continuous load: $RATE req/s offered, $ROUNDS rounds x ${ROUND_S}s per agent =="
echo "A = $PEER"
echo "B = $NETDOCTOR"
load_average before
printf '%-6s %-3s %12s %12s %10s %10s %8s\n' round ag "cpu_%core" "ticks_%core" "ns/pkt" "pkts/s" loadavg
: >"$work/turns.tsv"
for r in $(seq 1 "$ROUNDS"); do
    if (( r % 2 )); then turn "$r" A "$PEER"; turn "$r" B "$NETDOCTOR"
    else turn "$r" B "$NETDOCTOR"; turn "$r" A "$PEER"; fi
done
load_average after
stop_pid "$load_pid"; load_pid=""
"$PY" - "$work/turns.tsv" <<'PY'
import sys, statistics as st
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
by = {}
for r, name, pct, tk, nsp, pps in rows:
    by.setdefault(r, {})[name] = (float(pct), float(nsp))
print("round  B/A cpu   B/A ns/pkt")
rc, rn = [], []
for r in sorted(by, key=int):
    a, b = by[r]["A"], by[r]["B"]
    rc.append(b[0] / a[0]); rn.append(b[1] / a[1])
    print(f"{r:<6} {rc[-1]:8.3f} {rn[-1]:12.3f}")
for name, i in (("A", 0), ("B", 1)):
    v = [by[r][name] for r in by]
    print(f"{name}: median {st.median(x[0] for x in v):.3f} % of a core, "
          f"{st.median(x[1] for x in v):.0f} ns/packet")
print(f"median B/A: cpu {st.median(rc):.3f} (range {min(rc):.3f}-{max(rc):.3f}), "
      f"ns/packet {st.median(rn):.3f} (range {min(rn):.3f}-{max(rn):.3f})")
PY

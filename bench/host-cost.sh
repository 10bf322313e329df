#!/usr/bin/env bash
# bench/host-cost.sh [ROUNDS] [DURATION] [CONNECTIONS]
#
# What the host observers cost `diagnose` (issue 10's budget: ≤ 3 % of req/s and ≤ 20 MB of
# RSS): `netdoctor diagnose` against the lab's healthy nginx (tcp_nodelay on, :8080) with every
# host observer on (listener sampler, socket states, counters, conntrack, interfaces, sysctls,
# kernel log, eBPF) against `--no-host` (all of them off), alternating which goes first, ROUNDS
# rounds (default 5) of DURATION (default 5s) with CONNECTIONS (default 50). Per run: req/s
# from the report (`measurements.load.requests_per_s`) and the peak RSS of the netdoctor process
# (`/usr/bin/time -v`, "Maximum resident set size") and its CPU time (user + system); then the
# means, the req/s ratio (on ÷ off, of the means and per round), the CPU and RSS differences,
# and each against the budget.
#
# It starts its own lab (`netdoctor lab start --name ndcost<PID>`: two namespaces and nginx),
# sends traffic only into it, and removes it on exit, also on failure or Ctrl-C. Needs root
# and nginx. NETDOCTOR=/path/to/netdoctor skips the build (`cargo build --release -p netdoctor`).
set -euo pipefail
ROUNDS="${1:-5}"
DURATION="${2:-5s}"
CONNECTIONS="${3:-50}"
here="$(cd "$(dirname "$0")/.." && pwd)"
if [[ -z "${NETDOCTOR:-}" ]]; then
    (cd "$here" && cargo build --release -q -p netdoctor)
    NETDOCTOR="${CARGO_TARGET_DIR:-$here/target}/release/netdoctor"
fi
[[ $(id -u) -eq 0 ]] || { echo "needs root (lab namespaces, capture, eBPF)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "missing: /usr/bin/time (apt-get install -y time)" >&2; exit 2; }
lab="ndcost$$"
work="$(mktemp -d /tmp/netdoctor-host-cost.XXXXXX)"
cleanup() {
    "$NETDOCTOR" lab stop --name "$lab" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

"$NETDOCTOR" lab start --name "$lab" >/dev/null
url="http://10.213.0.1:8080/"

# one MODE ROUND: prints "req/s rss_kb" and keeps the report.
one() {
    local mode="$1" round="$2" extra=()
    [[ "$mode" == off ]] && extra=(--no-host)
    local out="$work/$mode-$round.json" tv="$work/$mode-$round.time"
    set +e
    NETDOCTOR_QUIET=1 /usr/bin/time -v -o "$tv" "$NETDOCTOR" diagnose --netns "$lab-cli" "$url" \
        -d "$DURATION" -c "$CONNECTIONS" --json "${extra[@]}" >"$out" 2>"$work/stderr"
    local rc=$?
    set -e
    if [[ $rc -ne 0 && $rc -ne 1 && $rc -ne 3 ]]; then
        echo "diagnose ($mode) failed with $rc:" >&2
        cat "$work/stderr" >&2
        exit 2
    fi
    local rps rss cpu
    rps=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["measurements"]["load"]["requests_per_s"]))' "$out")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tv")
    # CPU seconds (user + system) of the whole netdoctor process (the load generator included):
    # less at the mercy of a busy machine than req/s.
    cpu=$(python3 -c 'import sys,re
t = open(sys.argv[1]).read()
pat = r"(?:User|System) time \(seconds\): ([0-9.]+)"
print("%.2f" % sum(float(x) for x in re.findall(pat, t)))' "$tv")
    echo "$rps $rss $cpu"
}

printf '%-6s %-5s %10s %10s %14s  %s\n' round mode 'req/s' 'RSS MB' 'CPU s' checks
declare -a on_rps off_rps on_rss off_rss on_cpu off_cpu
for r in $(seq 1 "$ROUNDS"); do
    if (( r % 2 )); then order=(on off); else order=(off on); fi
    for mode in "${order[@]}"; do
        read -r rps rss cpu < <(one "$mode" "$r")
        checks=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(" ".join(c["name"] + "=" + c["status"] for c in r["checks"] if c["name"] in ("host", "bpf")))' "$work/$mode-$r.json")
        printf '%-6s %-5s %10s %10.1f %14s  %s\n' "$r" "$mode" "$rps" "$(echo "$rss / 1024" | bc -l)" "$cpu" "$checks"
        if [[ $mode == on ]]; then on_rps+=("$rps"); on_rss+=("$rss"); on_cpu+=("$cpu"); else off_rps+=("$rps"); off_rss+=("$rss"); off_cpu+=("$cpu"); fi
    done
done

uptime
python3 - "${on_rps[*]}" "${off_rps[*]}" "${on_rss[*]}" "${off_rss[*]}" "${on_cpu[*]}" "${off_cpu[*]}" <<'PY'
import statistics as st, sys
on_rps, off_rps, on_rss, off_rss, on_cpu, off_cpu = ([float(x) for x in a.split()] for a in sys.argv[1:7])
m = lambda v: st.mean(v)
ratio = m(on_rps) / m(off_rps)
drss = (max(on_rss) - max(off_rss)) / 1024
print()
print(f"req/s   on  mean {m(on_rps):9.0f} (min {min(on_rps):.0f}, max {max(on_rps):.0f})")
print(f"req/s   off mean {m(off_rps):9.0f} (min {min(off_rps):.0f}, max {max(off_rps):.0f})")
print(f"req/s ratio on/off {ratio:.3f}  -> cost {100 * (1 - ratio):+.1f} % (budget ≤ 3 %): {'ok' if ratio >= 0.97 else 'OVER'}")
paired = [a / b for a, b in zip(on_rps, off_rps)]
print(f"per-round ratios {' '.join(f'{p:.3f}' for p in paired)}; median {st.median(paired):.3f}")
print(f"CPU of the netdoctor process: on median {st.median(on_cpu):.2f} s, off median {st.median(off_cpu):.2f} s ({st.median(on_cpu) - st.median(off_cpu):+.2f} s per run)")
print(f"peak RSS on  {max(on_rss) / 1024:.1f} MB (mean {m(on_rss) / 1024:.1f}), off {max(off_rss) / 1024:.1f} MB (mean {m(off_rss) / 1024:.1f})")
print(f"RSS added by the host observers {drss:+.1f} MB (budget ≤ 20 MB): {'ok' if drss <= 20 else 'OVER'}")
PY

#!/usr/bin/env bash
# Packets/s that `netdoctor watch` takes without kernel drops on one capture ring and on N
# rings (PACKET_FANOUT), from trafgen in another network namespace; issue 25's live benchmark.
#
# Two namespaces made here (ndfanG<pid>, ndfanW<pid>) joined by a veth pair; trafgen in G sends
# TCP segments with 64 bytes of payload (118-byte frames) to 10.211.0.2:18099 from 4096 source
# ports (so the flow hash has flows to spread); in W an nf_tables rule drops them after the
# capture point (no resets back), and `netdoctor watch -p 18099 --capture-rings R --json` runs
# WINDOWS windows of 2 s.
#
# The rate steps: trafgen's own pacing (-b RATEpps) on GEN_CPUS CPUs; `max` in RATES runs it
# unpaced (its TX_RING fast path), as fast as trafgen and the veth go. Paced trafgen delivered
# what was asked up to 40k packets/s at load ~18 and stops near 0.1–0.17 M packets/s at load ~9.
# (A tbf shaper in front of an unpaced trafgen was tried: trafgen stalled behind the full
# qdisc, 80 packets/s arrived of 40k asked.)
# For each rate and ring count, one line: the rate asked, the packets/s that reached W's veth
# (its rx counter over the generator's run), the packets/s watch analysed (its two fullest
# windows), the kernel's capture drops over all windows, and their share. Then, per ring count,
# the highest arrived rate with no drop at it or at any slower step, and all drops.
#
# Needs root, trafgen (netsniff-ng), iptables, jq and a release build of netdoctor
# (NETDOCTOR, else built with cargo). Everything made here (namespaces and the veth in them,
# processes, temp dir) is removed on exit, also on failure or Ctrl-C.
#
# Usage: bench/watch-rings.sh [N]      (default N: nproc)
# Env: RATES (default "10000 20000 40000 80000 160000 max"), WINDOWS (default 3),
#      RING_MB (watch's --ring-mb, per ring; default 16: watch's default), GEN_CPUS (default 1),
#      EQUAL_MEMORY=1 (N rings get RING_MB / N MiB each, so both runs map the same memory;
#      RING_MB must then be a multiple of N).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
N="${1:-$(nproc)}"
RATES="${RATES:-10000 20000 40000 80000 160000 max}"
WINDOWS="${WINDOWS:-3}"
RING_MB="${RING_MB:-16}"
GEN_CPUS="${GEN_CPUS:-1}"
PORT=18099
G="ndfanG$$"
W="ndfanW$$"
work="$(mktemp -d /tmp/netdoctor-rings.XXXXXX)"
pids=()

cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    netns_del_all
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in trafgen iptables jq ip; do need "$tool"; done
if [[ -n ${EQUAL_MEMORY:-} ]] && ((RING_MB % N || RING_MB < N)); then
    echo "EQUAL_MEMORY: RING_MB ($RING_MB) must be a multiple of N ($N)" >&2; exit 2
fi
[[ "$(id -u)" == 0 ]] || { echo "needs root (namespaces, packet capture)" >&2; exit 2; }
netdoctor_binary /tmp/target-bench

netns_add "$G" "$W"
# Made inside G, so the pair never exists in the caller's namespace.
ip -n "$G" link add vg type veth peer name vw netns "$W"
ip -n "$G" addr add 10.211.0.1/24 dev vg
ip -n "$W" addr add 10.211.0.2/24 dev vw
ip -n "$G" link set vg up
ip -n "$W" link set vw up
# In W only: the segments are dropped after the capture point, so no reset answers them.
ip netns exec "$W" iptables -A INPUT -p tcp --dport "$PORT" -j DROP
mac="$(ip -n "$W" -j link show vw | jq -r '.[0].address')"

cat >"$work/tcp.cfg" <<CFG
{
  eth(da=$mac, type=0x0800),
  ipv4(saddr=10.211.0.1, daddr=10.211.0.2, ttl=64),
  tcp(sp=dinc(20000, 24095), dp=$PORT, seq=dinc(), ack, psh, win=65535),
  fill(0x61, 64)
}
CFG

rx() { ip netns exec "$W" cat /sys/class/net/vw/statistics/rx_packets; }
now() { date +%s.%N; }

echo "netdoctor: $NETDOCTOR; cores: $(nproc); rings compared: 1 and $N; windows of 2 s: $WINDOWS;" \
    "--ring-mb $RING_MB per ring${EQUAL_MEMORY:+ (/ rings: equal memory)}; trafgen CPUs: $GEN_CPUS"
load_average before
printf '%-6s %10s %12s %12s %10s %8s\n' rings "asked pps" "arrived pps" "watch pps" drops "drop %"
: >"$work/results"
for rate in $RATES; do
    for rings in 1 "$N"; do
        out="$work/watch-$rings-$rate.json"
        mb=$RING_MB
        [[ -n ${EQUAL_MEMORY:-} ]] && mb=$((RING_MB / rings))
        ip netns exec "$W" "$NETDOCTOR" watch -p "$PORT" --window 2s --windows "$WINDOWS" \
            --capture-rings "$rings" --ring-mb "$mb" --json >"$out" 2>"$work/watch.err" &
        wp=$!
        pids+=("$wp")
        sleep 0.5
        rx0=$(rx); t0=$(now)
        pace=(-b "${rate}pps"); [[ $rate == max ]] && pace=()
        ip netns exec "$G" timeout $((WINDOWS * 2 + 3)) trafgen -o vg -P "$GEN_CPUS" "${pace[@]}" \
            --no-sock-mem --notouch-irq -c "$work/tcp.cfg" --no-cpu-stats >/dev/null 2>&1 &
        tp=$!
        pids+=("$tp")
        wait "$wp" || true
        kill "$tp" 2>/dev/null || true
        wait "$tp" 2>/dev/null || true
        rx1=$(rx); t1=$(now)
        pids=()
        arrived=$(awk -v a="$rx0" -v b="$rx1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.0f", (b - a) / (e - s) }')
        # watch pps: the two fullest windows (the first may start before trafgen), over their
        # 2 s each (not first-to-last packet: with several rings packets of different
        # connections arrive slightly out of time order). Drops: every window.
        jq -r '.measurements.capture.stats | "\(.packets) \(.capture_drops)"' "$out" 2>/dev/null >"$work/w" || true
        [[ -s $work/w ]] || { echo "watch gave no window (rings $rings, rate $rate):" >&2; cat "$work/watch.err" >&2; }
        seen=$(sort -n "$work/w" | tail -2 | awk '{ p += $1; s += 2 } END { printf "%.0f", s ? p / s : 0 }')
        read -r packets drops < <(awk '{ p += $1; d += $2 } END { printf "%d %d\n", p, d }' "$work/w")
        pct=$(awk -v p="$packets" -v d="$drops" 'BEGIN { printf "%.2f", (p + d) ? 100 * d / (p + d) : 0 }')
        printf '%-6s %10s %12s %12s %10s %7s%%\n' "$rings" "$rate" "$arrived" "$seen" "$drops" "$pct"
        echo "$rings $rate $arrived $drops" >>"$work/results"
    done
done
load_average after
echo
# Drops on a shared machine come from the reader's stalls as much as from the rate, so a step
# can drop below one that did not: "clean up to" is the highest arrived rate with no drop at it
# or at any slower step.
for rings in 1 "$N"; do
    sort -k3,3n "$work/results" | awk -v r="$rings" '
        $1 != r { next }
        { n++; total += $4 }
        $4 > 0 && first == "" { first = $3 }
        $4 == 0 && first == "" { ok = $3 }
        END {
            printf "%s ring(s): clean up to %s packets/s", r, ok ? ok : "none"
            printf "%s; %d drops over %d steps\n", first == "" ? " (no step dropped)" : ", first drop at " first, total, n
        }'
done

#!/usr/bin/env bash
# Packets/s that `netdoctor watch` takes without kernel drops on one capture ring and on N
# rings (PACKET_FANOUT), from trafgen in another network namespace.
#
# Two namespaces made here (ndfanG<pid>, ndfanW<pid>) joined by a veth pair; trafgen in G sends
# TCP segments with 64 bytes of payload to 10.211.0.2:18099 from 4096 source ports (so the flow
# hash has flows to spread); in W an nf_tables rule drops them after the capture point (no
# resets back), and `netdoctor watch -p 18099 --capture-rings R --json` runs 2-second windows.
# For each rate of RATES and each ring count, one line: the rate asked of trafgen, the packets
# watch saw per second, and the kernel drops (netdoctor_capture_drops, from the windows' JSON).
#
# Needs root, trafgen (netsniff-ng), iptables, jq and a release build of netdoctor (NETDOCTOR,
# else built with cargo). Everything made here (namespaces, processes, temp dir) is removed on
# exit, also on failure or Ctrl-C.
#
# Usage: bench/watch-rings.sh [N]      (default N: nproc)
# Env: RATES (default "50000 100000 200000 400000 800000"), WINDOWS (default 3).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
N="${1:-$(nproc)}"
RATES="${RATES:-50000 100000 200000 400000 800000}"
WINDOWS="${WINDOWS:-3}"
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
trap cleanup EXIT INT TERM

for tool in trafgen iptables jq ip; do need "$tool"; done
[[ "$(id -u)" == 0 ]] || { echo "needs root (namespaces, packet capture)" >&2; exit 2; }
netdoctor_binary /tmp/target-bench

netns_add "$G" "$W"
ip link add vg type veth peer name vw
ip link set vg netns "$G"
ip link set vw netns "$W"
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

echo "netdoctor: $NETDOCTOR; cores: $(nproc); rings compared: 1 and $N; windows of 2 s: $WINDOWS"
load_average before
printf '%-8s %10s %14s %12s %10s\n' rings "asked pps" "watch pps" drops "drop %"
for rate in $RATES; do
    for rings in 1 "$N"; do
        out="$work/watch-$rings-$rate.json"
        ip netns exec "$W" "$NETDOCTOR" watch -p "$PORT" --window 2s --windows "$WINDOWS" \
            --capture-rings "$rings" --json >"$out" 2>"$work/watch.err" &
        wp=$!
        pids+=("$wp")
        sleep 0.5
        ip netns exec "$G" timeout $((WINDOWS * 2 + 3)) trafgen -o vg -P 1 -b "${rate}pps" \
            --no-sock-mem --notouch-irq -c "$work/tcp.cfg" -q >/dev/null 2>&1 &
        tp=$!
        pids+=("$tp")
        wait "$wp" || true
        kill "$tp" 2>/dev/null || true
        wait "$tp" 2>/dev/null || true
        pids=()
        # Whole windows only (the first may start before trafgen): the best two, over their
        # 2 s each (not first-to-last packet: with several rings packets of different
        # connections arrive slightly out of time order).
        jq -r '.measurements.capture.stats | "\(.packets) \(.capture_drops)"' "$out" 2>/dev/null |
            sort -n | tail -2 |
            awk -v r="$rings" -v rate="$rate" '
                { p += $1; d += $2; s += 2 }
                END {
                    if (s <= 0) s = 1
                    printf "%-8s %10s %14.0f %12d %9.2f%%\n", r, rate, p / s, d, (p + d) ? 100 * d / (p + d) : 0
                }'
    done
done
load_average after

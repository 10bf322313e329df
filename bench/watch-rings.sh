#!/usr/bin/env bash
# Packets/s that `netdoctor watch` takes without kernel drops on one capture ring, on N rings
# (PACKET_FANOUT) and with `--capture-rings auto` (its own choice), from trafgen in another
# network namespace, with the watcher's CPU per packet; issue 25's live benchmark.
#
# Two namespaces made here (ndfanG<pid>, ndfanW<pid>) joined by a veth pair. trafgen in G sends
# HTTP/1.1 exchanges that watch parses as such: per connection a 64-byte GET from
# 10.211.0.1:<port> to 10.211.0.2:18099, then a 64-byte "200 OK" back, with sequence and
# acknowledgement numbers that follow on (no gap, no retransmission, no duplicate), over 64
# connections per trafgen process. In W an nf_tables rule drops the requests after the capture
# point (no resets back); the answers, sent from W's own address, die as martians. watch picks
# the connections up mid-stream and counts one HTTP exchange per two packets.
#
# Generators (GENS, one word each): `pace:R` is one trafgen paced at R packets/s (`-b`, its
# sendto mode; it holds up to ~40k here); `max:1` one unpaced trafgen (TX_RING, qdisc bypass),
# `max:2` two of them (the second on its own 64 connections; not `-P 2`, which repeats the same
# packets on both CPUs, and watch drops copies as duplicate frames; with `cpu(N):` packet
# lists trafgen 0.6.8 sent nothing here). First each generator runs alone for 4 s (no
# watcher) to show the most it sends here.
#
# Then for each generator and each ring mode (MODES: 1, N, auto) the generator runs, and after
# 1 s `netdoctor watch -p 18099 --window 2s --windows WINDOWS --capture-rings MODE --json`
# runs inside W (under /usr/bin/time). One line per step: the packets/s trafgen put on the veth
# (vg's tx counter) and that reached W (vw's rx counter) during watch's run, what watch
# analysed (packets over its windows), HTTP exchanges/s, kernel drops: in all, per window and
# per ring (from watch's warnings), the rings watch moved to (count x size; rings start at
# 2 MiB and double after a window with drops, `auto` fans out on rate or on drops), watch's
# CPU (user + sys, % of one core over its run) and CPU µs per analysed packet, its peak RSS
# (MiB, /usr/bin/time's %M), and the 1-minute load average. The kernel's side of capture (the
# clone into the ring) runs in the sender's context, so it is in neither figure; the µs per
# packet is watch's own reading and analysis.
#
# Needs root, trafgen (netsniff-ng), iptables, jq, /usr/bin/time and a release build of
# netdoctor (NETDOCTOR, else built with cargo). Everything made here (namespaces and the veth
# in them, processes, temp dir) is removed on exit, also on failure or Ctrl-C.
#
# Usage: bench/watch-rings.sh [N]      (default N: nproc)
# Env: GENS (default "pace:20000 pace:40000 max:1 max:2"), MODES (default "1 N auto"),
#      WINDOWS (default 5), ROUNDS (default 1: the whole table again, for alternation),
#      RING_MB (watch's --ring-mb; default: watch's own, 16 MiB per port, rings start at 2 MiB
#      and double on drops).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
N="${1:-$(nproc)}"
GENS="${GENS:-pace:20000 pace:40000 max:1 max:2}"
MODES="${MODES:-1 N auto}"
MODES="${MODES//N/$N}"
WINDOWS="${WINDOWS:-5}"
ROUNDS="${ROUNDS:-1}"
PORT=18099
FLOWS=64 # connections per trafgen process; = the payload length (see mkcfg)
G="ndfanG$$"
W="ndfanW$$"
work="$(mktemp -d /tmp/netdoctor-rings.XXXXXX)"
groups=() # process groups of the running generators
wpid=""

cleanup() {
    for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
    if [[ -n $wpid ]]; then pkill -TERM -P "$wpid" 2>/dev/null || true; stop_pid "$wpid"; fi
    wait 2>/dev/null || true
    netns_del_all
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in trafgen iptables jq ip taskset; do need "$tool"; done
[[ -x /usr/bin/time ]] || { echo "missing: /usr/bin/time (apt-get install -y time)" >&2; exit 2; }
[[ "$(id -u)" == 0 ]] || { echo "needs root (namespaces, packet capture)" >&2; exit 2; }
netdoctor_binary /tmp/target-bench

netns_add "$G" "$W"
# Made inside G, so the pair never exists in the caller's namespace.
ip -n "$G" link add vg type veth peer name vw netns "$W"
ip -n "$G" addr add 10.211.0.1/24 dev vg
ip -n "$W" addr add 10.211.0.2/24 dev vw
ip -n "$G" link set vg up
ip -n "$W" link set vw up
ip netns exec "$W" iptables -A INPUT -p tcp --dport "$PORT" -j DROP
mac="$(ip -n "$W" -j link show vw | jq -r '.[0].address')"

# mkcfg K: trafgen packets for process K: connections from ports 20000+64K.., a GET and its
# answer in turn. trafgen's counters step once per packet and the ports cycle through 64
# values, so each connection's sequence numbers advance by 64 = the payload per packet.
mkcfg() {
    local lo=$((20000 + $1 * FLOWS)) hi=$((20000 + $1 * FLOWS + FLOWS - 1)) crlf='0x0d, 0x0a'
    cat <<CFG
{
  eth(da=$mac, type=0x0800),
  ipv4(saddr=10.211.0.1, daddr=10.211.0.2, ttl=64),
  tcp(sp=dinc($lo, $hi), dp=$PORT, seq=dinc(1000000, 4000000000, 1),
      aseq=dinc(2000000, 4000000000, 1), ack, psh, win=65535),
  "GET /x HTTP/1.1", $crlf, "Host: b", $crlf, "X-Pad: ", fill(0x61, 27), $crlf, $crlf
}
{
  eth(da=$mac, type=0x0800),
  ipv4(saddr=10.211.0.2, daddr=10.211.0.1, ttl=64),
  tcp(sp=$PORT, dp=dinc($lo, $hi), seq=dinc(2000000, 4000000000, 1),
      aseq=dinc($((1000000 + FLOWS)), 4000000000, 1), ack, psh, win=65535),
  "HTTP/1.1 200 OK", $crlf, "Content-Length: 0", $crlf, "X-Pad: ", fill(0x62, 17), $crlf, $crlf
}
CFG
}
mkcfg 0 >"$work/g0.cfg"
mkcfg 1 >"$work/g1.cfg"

# gen_start SPEC: starts the generator(s) of SPEC, each in a process group of its own.
gen_start() {
    local pace=() procs=1 k p
    case $1 in
        pace:*) pace=(-b "${1#pace:}pps") ;;
        max:1) ;;
        max:2) procs=2 ;;
        *) echo "GENS: '$1' is not pace:RATE, max:1 or max:2" >&2; exit 2 ;;
    esac
    groups=()
    for ((k = 0; k < procs; k++)); do
        setsid ip netns exec "$G" trafgen -o vg -P 1 "${pace[@]}" --no-sock-mem --notouch-irq \
            -c "$work/g$k.cfg" --no-cpu-stats >/dev/null 2>&1 &
        groups+=("$!")
    done
    # trafgen pins its worker to CPU 0; on a shared machine a busy CPU 0 starves it, so every
    # worker may run on any CPU (the scheduler spreads two of them).
    sleep 0.3
    for g in "${groups[@]}"; do
        for p in $(pgrep -s "$g" -x trafgen); do taskset -apc "0-$(($(nproc) - 1))" "$p" >/dev/null || true; done
    done
}
gen_stop() {
    local g
    for g in "${groups[@]}"; do kill -INT -- "-$g" 2>/dev/null || true; done
    sleep 0.3
    for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
    for g in "${groups[@]}"; do wait "$g" 2>/dev/null || true; done
    groups=()
}

tx() { ip netns exec "$G" cat /sys/class/net/vg/statistics/tx_packets; }
rx() { ip netns exec "$W" cat /sys/class/net/vw/statistics/rx_packets; }
now() { date +%s.%N; }
rate() { awk -v a="$1" -v b="$2" -v s="$3" -v e="$4" 'BEGIN { printf "%.0f", (b - a) / (e - s) }'; }
load1() { cut -d' ' -f1 /proc/loadavg; }

echo "netdoctor: $NETDOCTOR; cores: $(nproc); ring modes: $MODES; windows of 2 s: $WINDOWS;" \
    "--ring-mb: ${RING_MB:-default}; $FLOWS connections per trafgen"
load_average before
echo
echo "Generators alone (no watcher), 4 s each:"
for spec in $GENS; do
    t0=$(now); r0=$(rx)
    gen_start "$spec"
    sleep 4
    gen_stop
    t1=$(now); r1=$(rx)
    printf '  %-12s %9s packets/s  (load %s)\n' "$spec" "$(rate "$r0" "$r1" "$t0" "$t1")" "$(load1)"
done
echo
printf '%-11s %-5s %9s %9s %9s %8s %7s %-22s %-9s %-13s %6s %7s %6s %5s\n' generator rings \
    "sent pps" "veth pps" "watch pps" "exch/s" drops "per window" "per ring" "ended on" "CPU %" \
    "µs/pkt" "RSS MB" load
ringopt=()
[[ -n ${RING_MB:-} ]] && ringopt=(--ring-mb "$RING_MB")
: >"$work/results"
for ((round = 1; round <= ROUNDS; round++)); do
    for spec in $GENS; do
        for mode in $MODES; do
            out="$work/watch.json"
            gen_start "$spec"
            sleep 1
            t0=$(now); s0=$(tx); r0=$(rx)
            ip netns exec "$W" /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$NETDOCTOR" watch \
                -p "$PORT" --window 2s --windows "$WINDOWS" --capture-rings "$mode" \
                "${ringopt[@]}" --json >"$out" 2>"$work/watch.err" &
            wpid=$!
            wait "$wpid" || { echo "watch failed ($spec, rings $mode):" >&2; cat "$work/watch.err" >&2; }
            wpid=""
            t1=$(now); s1=$(tx); r1=$(rx)
            gen_stop
            read -r packets exch drops < <(jq -r '.measurements.capture
                | "\(.stats.packets) \(.exchanges.count // 0) \(.stats.capture_drops)"' "$out" |
                awk '{ p += $1; x += $2; d += $3 } END { printf "%d %d %d\n", p, x, d }')
            # Drops per window, and per ring: a window's warnings name each socket's drops in
            # that window ("ring k of n: the kernel dropped D packets ..."; one ring's line has
            # no prefix, a socket without drops no line).
            perwin=$(jq -r '.measurements.capture.stats.capture_drops' "$out" | paste -sd+)
            perring=$(jq -r '.measurements.capture.warnings[]?' "$out" | awk '
                match($0, /^(ring [0-9]+ of [0-9]+: )?the kernel dropped [0-9]+/) {
                    m = substr($0, 1, RLENGTH); k = 1
                    if (m ~ /^ring/) { split(m, w, " "); k = w[2]; if (w[4] > n) n = w[4] }
                    sub(/.* /, "", m); sum[k] += m; if (k > n) n = k
                }
                END { s = ""; for (k = 1; k <= n; k++) s = s (k > 1 ? "/" : "") sum[k] + 0; print n ? s : "-" }')
            moved=$(jq -r '.measurements.capture.warnings[]?' "$out" |
                sed -n 's/.*the capture moves to \([0-9]*\) ring(s) of \([0-9]*\) KiB.*/\1x\2K/p' | tr '\n' ' ')
            ended="${moved:-as started}"
            read -r el us sy rss < <(tail -1 "$work/time")
            rss=$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')
            cpu=$(awk -v e="$el" -v u="$us" -v s="$sy" 'BEGIN { printf "%.1f", (e > 0) ? 100 * (u + s) / e : 0 }')
            uspp=$(awk -v p="$packets" -v u="$us" -v s="$sy" 'BEGIN { printf "%.2f", p ? 1e6 * (u + s) / p : 0 }')
            secs=$((2 * WINDOWS))
            printf '%-11s %-5s %9s %9s %9s %8s %7s %-22s %-9s %-13s %6s %7s %6s %5s\n' "$spec" "$mode" \
                "$(rate "$s0" "$s1" "$t0" "$t1")" "$(rate "$r0" "$r1" "$t0" "$t1")" \
                $((packets / secs)) $((exch / secs)) "$drops" "$perwin" "$perring" "${ended% }" \
                "$cpu" "$uspp" "$rss" "$(load1)"
            echo "$mode $(rate "$r0" "$r1" "$t0" "$t1") $drops $uspp" >>"$work/results"
        done
    done
done
load_average after
echo
# Drops on a shared machine come from the reader's stalls as much as from the rate, so a step
# can drop below one that did not: "clean up to" is the highest arrived rate with no drop at it
# or at any slower step.
for mode in $MODES; do
    sort -k2,2n "$work/results" | awk -v r="$mode" '
        $1 != r { next }
        { n++; total += $3; us += $4 }
        $3 > 0 && first == "" { first = $2 }
        $3 == 0 && first == "" { ok = $2 }
        END {
            printf "rings %s: clean up to %s packets/s", r, ok ? ok : "none"
            printf "%s; %d drops over %d steps; mean %.2f µs CPU per packet\n",
                first == "" ? " (no step dropped)" : ", first drop at " first, total, n, n ? us / n : 0
        }'
done

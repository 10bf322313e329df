#!/usr/bin/env bash
# netdoctor analyze -j 1 vs -j N (N = cores), with tcptrace and tshark in the same run:
# packets/s, GB/s (capture file bytes / wall time), peak RSS, and whether the JSON reports of
# -j 1 and -j N are byte-identical (elapsed_s aside). Rounds alternate the tools; the median
# of ROUNDS runs is shown (tshark: one run). The load average is printed before and after (the machine may be
# shared: read the ratios with it). Each round also runs N copies of -j 1 at once: what the
# machine's cores do together at that moment bounds any -j N (the ceiling; on this 2-vCPU VM
# ~1.6x, not 2x, since the vCPUs slow each other down), and -j N is shown against it.
#
# Needs what bench/analyze-vs-tshark.sh needs (its cached captures are used; made by it when
# missing), /usr/bin/time and jq.
#
# Usage: bench/analyze-jobs.sh [N]      (default N: nproc)
# Env: ROUNDS (default 3), NETDOCTOR (a built binary; else built with cargo), CACHE, PERF=1 (also
# the per-thread CPU split of -j N from `perf record -e cpu-clock`), WAITS=1 (how often and how
# long each thread of -j N slept or was preempted, from perf's sched_switch), CALLGRIND=1 (also the
# instructions of -j 1 and, per thread, of -j N under valgrind: figures the load does not move).
set -euo pipefail
export NETDOCTOR_QUIET=1

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
CACHE="${CACHE:-/tmp/netdoctor-bench-cache}"
ROUNDS="${ROUNDS:-3}"
N="${1:-$(nproc)}"
work="$(mktemp -d /tmp/netdoctor-jobs.XXXXXX)"
trap 'rm -rf "$work"' EXIT

for tool in tshark tcptrace capinfos mergecap jq /usr/bin/time; do need "$tool"; done
big="$CACHE/healthy-big.pcap"
[[ -f "$big" ]] || CACHE="$CACHE" "$root/bench/analyze-vs-tshark.sh" captures
netdoctor_binary /tmp/target-bench

# timed CMD...: "elapsed_s max_rss_kib cpu_s" of one run (output discarded; cpu = user + sys,
# which a busy machine inflates less than the wall time).
timed() {
    /usr/bin/time -f '%e %M %U %S' -o "$work/time.out" "$@" >/dev/null 2>&1 || true
    tail -1 "$work/time.out" | awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "netdoctor: $NETDOCTOR ($("$NETDOCTOR" --version | head -1))"
echo "cores: $(nproc); -j $N; rounds: $ROUNDS"
load_average before

# A capture under MIN_PACKETS (made on a busy machine) is appended to itself up to it, each
# copy shifted past the end of the one before (editcap -t), so the file stays in time order:
# copies with the same stamps would put every copy's frames before the last copy's, and the
# analysis would measure its timestamp sorter instead (session 14: ~90 % of the CPU).
MIN_PACKETS="${MIN_PACKETS:-1000000}"
nbig="$(capinfos -M -c "$big" | awk -F': *' '/Number of packets/ {print $2}')"
if ((nbig < MIN_PACKETS)); then
    copies=$(((MIN_PACKETS + nbig - 1) / nbig))
    span="$(capinfos -M -u "$big" | awk -F': *' '/Capture duration/ {print int($2) + 1}')"
    args=()
    for k in $(seq 0 $((copies - 1))); do
        editcap -F pcap -t $((k * span)) "$big" "$work/copy$k.pcap"
        args+=("$work/copy$k.pcap")
    done
    mergecap -a -F pcap -w "$work/big-x$copies.pcap" "${args[@]}"
    big="$work/big-x$copies.pcap"
fi

for f in "$big" "$CACHE/nagle.pcap"; do
    [[ -f "$f" ]] || continue
    n="$(capinfos -M -c "$f" | awk -F': *' '/Number of packets/ {print $2}')"
    bytes="$(stat -L -c %s "$f")"
    printf '\n%s: %s packets, %s MB\n' "$(basename "$f")" "$n" "$((bytes / 1000000))"

    # identical reports
    "$NETDOCTOR" analyze -j 1 --json "$f" | jq -S 'del(.elapsed_s)' >"$work/j1.json" || true
    "$NETDOCTOR" analyze -j "$N" --json "$f" | jq -S 'del(.elapsed_s)' >"$work/jn.json" || true
    if cmp -s "$work/j1.json" "$work/jn.json"; then same=identical; else same=DIFFERENT; fi
    echo "  JSON of -j 1 and -j $N: $same"

    if [[ -n "${PEER:-}" ]]; then
        "$PEER" analyze -j 1 --json "$f" | jq -S 'del(.elapsed_s)' >"$work/p1.json" || true
        if cmp -s "$work/j1.json" "$work/p1.json"; then same=identical; else same=DIFFERENT; fi
        echo "  JSON of PEER -j 1 and NETDOCTOR -j 1: $same"
    fi
    tools=(j1 jn)
    [[ -n "${PEER:-}" ]] && tools+=(p1 pn)
    tools+=(tcptrace)
    [[ "${TSHARK:-1}" != 0 ]] && tools+=(tshark)
    declare -A secs=() rss=() cpu=()
    all_par="" ceil="" speed=""
    for round in $(seq 1 "$ROUNDS"); do
        for t in "${tools[@]}"; do
            # tshark is ~50x slower: one run of it (round 1) is enough for its ratio.
            [[ "$t" == tshark && "$round" -gt 1 ]] && continue
            case "$t" in
            j1) r="$(timed "$NETDOCTOR" analyze -j 1 --json "$f")" ;;
            jn) r="$(timed "$NETDOCTOR" analyze -j "$N" --json "$f")" ;;
            p1) r="$(timed "$PEER" analyze -j 1 --json "$f")" ;;
            pn) r="$(timed "$PEER" analyze -j "$N" --json "$f")" ;;
            tcptrace) r="$(timed tcptrace -l "$f")" ;;
            tshark) r="$(timed tshark -r "$f" -q -z conv,tcp)" ;;
            esac
            read -r s m c <<<"$r"
            secs[$t]+="$s "
            rss[$t]+="$m "
            cpu[$t]+="$c "
        done
        # The machine's parallel ceiling this round: N copies of -j 1 at once. Together they
        # do sum(1 / t_k) runs a second where one alone did 1 / t(-j 1), so no split of one
        # run over N threads can beat t(-j 1) * sum(1 / t_k) times -j 1's speed. On this VM
        # the two vCPUs often run at different speeds at the same moment (0.35 s and 0.59 s
        # for the same run, session 17), which is also why -j 1 alone looks bimodal.
        par=""
        for k in $(seq 1 "$N"); do
            /usr/bin/time -f '%e' -o "$work/par.$k" \
                "$NETDOCTOR" analyze -j 1 --json "$f" >/dev/null 2>&1 &
        done
        wait
        for k in $(seq 1 "$N"); do par+="$(tail -1 "$work/par.$k") "; done
        all_par+="[$par] "
        j1s="$(awk '{ print $NF }' <<<"${secs[j1]}")"
        jns="$(awk '{ print $NF }' <<<"${secs[jn]}")"
        ceil+="$(awk -v one="$j1s" -v p="$par" 'BEGIN {
            k = split(p, v, " "); r = 0; for (i = 1; i <= k; i++) r += 1 / (v[i] < 0.01 ? 0.01 : v[i])
            printf "%.3f", (one < 0.01 ? 0.01 : one) * r }') "
        speed+="$(awk -v a="$j1s" -v b="$jns" 'BEGIN { if (a < 0.01) a = 0.01; if (b < 0.01) b = 0.01; printf "%.3f", a / b }') "
    done
    printf '  %-30s %8s %12s %8s %9s %10s %7s\n' tool seconds packets/s GB/s "RSS MiB" "vs -j 1" "CPU s"
    declare -A med=() medcpu=()
    for t in "${tools[@]}"; do
        med[$t]="$(tr ' ' '\n' <<<"${secs[$t]}" | grep . | median)"
        medcpu[$t]="$(tr ' ' '\n' <<<"${cpu[$t]}" | grep . | median)"
    done
    for t in "${tools[@]}"; do
        case "$t" in
        j1) name="netdoctor analyze -j 1" ;;
        jn) name="netdoctor analyze -j $N" ;;
        p1) name="PEER analyze -j 1" ;;
        pn) name="PEER analyze -j $N" ;;
        tcptrace) name="tcptrace -l" ;;
        tshark) name="tshark -q -z conv,tcp" ;;
        esac
        s="${med[$t]}"
        m="$(tr ' ' '\n' <<<"${rss[$t]}" | grep . | sort -n | tail -1)"
        awk -v name="$name" -v n="$n" -v b="$bytes" -v s="$s" -v m="$m" -v base="${med[j1]}" -v c="${medcpu[$t]}" 'BEGIN {
            if (s < 0.01) s = 0.01
            printf "  %-30s %8.2f %12.0f %8.2f %9.1f %9.2fx %7.2f\n", name, s, n / s, b / s / 1e9, m / 1024, base / s, c
        }'
    done
    echo "  (all runs, seconds: -j 1: ${secs[j1]}; -j $N: ${secs[jn]})"
    echo "  (all runs, $N x -j 1 at once, seconds: $all_par)"
    eff="$(awk -v s="$speed" -v c="$ceil" 'BEGIN {
        k = split(s, a, " "); split(c, b, " "); for (i = 1; i <= k; i++) printf "%.3f\n", a[i] / b[i] }')"
    printf '  per round (median): -j %d speedup %.2fx; ceiling (%d x -j 1 at once) %.2fx; -j %d reaches %.0f %% of it\n' \
        "$N" "$(tr ' ' '\n' <<<"$speed" | grep . | median)" "$N" \
        "$(tr ' ' '\n' <<<"$ceil" | grep . | median)" "$N" \
        "$(median <<<"$eff" | awk '{ print 100 * $1 }')"
    echo "  (all runs, CPU seconds: -j 1: ${cpu[j1]}; -j $N: ${cpu[jn]})"
    if [[ -n "${PEER:-}" ]]; then
        echo "  (PEER all runs, seconds: -j 1: ${secs[p1]}; -j $N: ${secs[pn]}; CPU: ${cpu[p1]}; ${cpu[pn]})"
        awk -v a="${med[p1]}" -v b="${med[pn]}" -v c="${med[j1]}" -v d="${med[jn]}" -v n="$N" 'BEGIN {
            if (b > 0 && d > 0) printf "  -j %d speedup: NETDOCTOR %.2fx, PEER %.2fx\n", n, c / d, a / b
        }'
    fi
    # Total CPU of -j N over -j 1's: with N idle cores the speedup is at most N / this ratio
    # (and at most -j 1's time over the reader thread's), whatever the load during the run.
    awk -v a="${medcpu[j1]}" -v b="${medcpu[jn]}" -v n="$N" 'BEGIN {
        if (a > 0) printf "  CPU -j %d / -j 1: %.2fx (speedup on %d idle cores <= %.2fx)\n", n, b / a, n, n * a / b
    }'
    # Where -j N's CPU goes, per thread (the reader "netdoctor", also worker 0 and the merge;
    # the header walk's "walk"; workers "analyze-K"): on a busy machine the wall-time ratio says
    # little, this split says whether the reader still bounds the run.
    if [[ -n "${PERF:-}" ]] && command -v perf >/dev/null; then
        perf record -q -e cpu-clock -F 4000 -o "$work/perf.data" \
            "$NETDOCTOR" analyze -j "$N" --json "$f" >/dev/null 2>&1 || true
        echo "  -j $N CPU per thread (perf cpu-clock samples):"
        perf report -i "$work/perf.data" --sort comm --stdio -n 2>/dev/null | grep -v '^#' | grep . |
            sed 's/^/    /' || true
    fi
    # Round waits: how often and how long each thread of one -j N run slept (perf's
    # sched_switch over all CPUs, state S or D until it ran again: the reader in the batch
    # channel's send when a worker is DEPTH rounds behind, a worker in its recv when the reader
    # is behind, the end's joins) and was preempted (state R: other load on the machine).
    if [[ -n "${WAITS:-}" ]] && command -v perf >/dev/null; then
        # The run's process id, written before it execs (others may run netdoctor meanwhile).
        perf record -q -a -e sched:sched_switch -o "$work/sched.data" \
            bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$work/pid" \
            "$NETDOCTOR" analyze -j "$N" --json "$f" >/dev/null 2>&1 || true
        pid="$(cat "$work/pid" 2>/dev/null || true)"
        echo "  -j $N waits per thread (perf sched_switch; $(((n + 4095) / 4096)) rounds of 4096 frames):"
        perf script -i "$work/sched.data" -F pid,tid,time,trace 2>/dev/null | awk -v pid="$pid" '
            match($0, /prev_pid=[0-9]+/) {
                split($1, pt, "/"); t = $2 + 0
                prev = substr($0, RSTART + 9, RLENGTH - 9)
                match($0, /prev_state=[A-Z]/); st = substr($0, RSTART + 11, 1)
                match($0, /next_pid=[0-9]+/); nx = substr($0, RSTART + 9, RLENGTH - 9)
                if (pt[1] == pid && !(prev in ours)) { ours[prev] = 1; ids[++k] = prev }
                if (prev in ours) { out[prev] = t; how[prev] = st }
                if (nx in out) {
                    d = t - out[nx]
                    if (how[nx] == "R") { pre[nx] += d; npre[nx]++ } else { blk[nx] += d; nblk[nx]++ }
                    delete out[nx]
                }
            }
            END {
                for (i = 1; i <= k; i++) { p = ids[i]
                    printf "    %-9s slept %4d times, %6.1f ms; preempted %4d times, %6.1f ms\n",
                        p == pid ? "reader" : "worker", nblk[p], blk[p] * 1e3, npre[p], pre[p] * 1e3 }
            }' || true
    fi
    # Instructions (callgrind, ~1 min per run on the big capture): -j N's total over -j 1's is
    # the CPU overhead the load does not blur; the busiest thread bounds the speedup.
    if [[ -n "${CALLGRIND:-}" ]] && command -v valgrind >/dev/null; then
        valgrind --tool=callgrind --callgrind-out-file="$work/cg1.out" \
            "$NETDOCTOR" analyze -j 1 --json "$f" >/dev/null 2>&1 || true
        valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/cgn.out" \
            "$NETDOCTOR" analyze -j "$N" --json "$f" >/dev/null 2>&1 || true
        one="$(awk '/^summary:/ { print $2 }' "$work/cg1.out")"
        # Threads in start order: the reader (main, also worker 0 and the merge), the workers
        # analyze-1.. (the header walk's threads end before and may share their numbers).
        per=()
        for t in "$work"/cgn.out-*; do per+=("$(awk '/^summary:/ { print $2 }' "$t")"); done
        awk -v one="$one" -v n="$N" -v all="${per[*]}" 'BEGIN {
            k = split(all, v, " "); tot = 0; max = 0
            for (i = 1; i <= k; i++) { tot += v[i]; if (v[i] > max) max = v[i] }
            printf "  instructions (callgrind): -j 1 %.0f M; -j %d %.0f M = %.3fx\n", one / 1e6, n, tot / 1e6, tot / one
            printf "    reader (worker 0, merge) %.0f M, workers", v[1] / 1e6
            for (i = 2; i <= k; i++) printf " %.0f M", v[i] / 1e6
            printf " (bound -j 1 / busiest thread: %.2fx)\n", one / max
        }'
    fi
    unset secs rss med cpu medcpu
    all_par="" ceil="" speed=""
done
echo
load_average after

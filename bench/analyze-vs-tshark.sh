#!/usr/bin/env bash
# netdoctor analyze vs tshark / tcptrace: throughput, peak RSS, RSS scaling and agreement.
# See bench/README.md for what it measures and the last results.
#
# Needs root, nginx (Debian nginx-light), wrk, tcpdump, tshark, mergecap, capinfos, tcptrace,
# /usr/bin/time (apt install time), jq, and a release build of netdoctor (built here when
# NETDOCTOR is not set: `cargo build --release -p netdoctor` with CARGO_TARGET_DIR, default
# /tmp/target-bench).
#
# Usage: bench/analyze-vs-tshark.sh [captures]   ("captures": only make the cached captures)
# Captures are made once and cached in $CACHE (default /tmp/netdoctor-bench-cache); delete the
# folder to make them again. All traffic is on 127.0.0.1 (ports 18095, 18096). Every process
# started here is stopped by its PID on exit, also on failure; the temp dir and the big
# concatenated file are removed.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
CACHE="${CACHE:-/tmp/netdoctor-bench-cache}"
MIN_PACKETS="${MIN_PACKETS:-1000000}"
CONCAT_TARGET_BYTES="${CONCAT_TARGET_BYTES:-2200000000}"
mkdir -p "$CACHE"
work="$(mktemp -d /tmp/netdoctor-bench.XXXXXX)"
pids=()

stop_nginx() {
    if [[ -f "$work/nginx.pid" ]]; then
        local np
        np="$(cat "$work/nginx.pid")"
        kill "$np" 2>/dev/null || true
        # bounded wait for the master (and with it the worker) to exit
        for _ in $(seq 1 100); do kill -0 "$np" 2>/dev/null || break; sleep 0.05; done
        rm -f "$work/nginx.pid"
    fi
}

cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    stop_nginx
    rm -rf "$work"
    rm -f "$CACHE"/concat-*.pcap
}
trap cleanup EXIT

for tool in nginx wrk tcpdump tshark mergecap capinfos tcptrace jq /usr/bin/time; do need "$tool"; done


# ---------------------------------------------------------------------------------------------
# Captures (cached).

start_nginx() {
    chmod 755 "$work" # nginx workers run as nobody and must read html/
    mkdir -p "$work/html" "$work/logs" "$work/tmp"
    # 615-byte page
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
    server { listen 127.0.0.1:18095; tcp_nodelay on;  root $work/html; }
    server { listen 127.0.0.1:18096; tcp_nodelay off; root $work/html; }
}
CONF
    # returns once the listeners are bound and the pid file is written
    nginx -c "$work/nginx.conf" -p "$work"
}

# capture FILE PORT WRK_ARGS...: tcpdump on lo while wrk runs, then stop tcpdump by its PID.
capture() {
    local file="$1" port="$2"
    shift 2
    local log="$work/tcpdump-$port.log"
    tcpdump -i lo -s 200 -B 65536 -w "$file.tmp" "tcp port $port" 2>"$log" &
    local tp=$!
    pids+=("$tp")
    # tcpdump's "listening on" line is its ready signal (bounded wait)
    for _ in $(seq 1 200); do grep -q "listening on" "$log" && break; sleep 0.05; done
    grep -q "listening on" "$log"
    wrk "$@" "http://127.0.0.1:$port/" | grep -E "Requests/sec|Latency" | sed 's/^/    wrk: /'
    kill -INT "$tp"
    wait "$tp" || true
    pids=()
    grep -E "captured|dropped" "$log" | sed 's/^/    tcpdump: /' || true
    mv "$file.tmp" "$file"
}

packets() { capinfos -M -c "$1" | awk -F': *' '/Number of packets/ {print $2}'; }

big="$CACHE/healthy-big.pcap"
nagle="$CACHE/nagle.pcap"
if [[ ! -f "$big" || ! -f "$nagle" ]]; then
    echo "== making captures in $CACHE"
    start_nginx
    if [[ ! -f "$big" ]]; then
        for dur in 8 12 16; do
            echo "  healthy (tcp_nodelay on, port 18095), wrk -c 100 -t 2 -d ${dur}s"
            capture "$big" 18095 -c 100 -t 2 -d "${dur}s"
            n="$(packets "$big")"
            echo "    $n packets"
            ((n >= MIN_PACKETS)) && break
            rm -f "$big"
        done
        [[ -f "$big" ]] || { echo "could not capture $MIN_PACKETS packets" >&2; exit 1; }
    fi
    if [[ ! -f "$nagle" ]]; then
        echo "  nagle (tcp_nodelay off, port 18096), wrk -c 50 -d 5s"
        capture "$nagle" 18096 -c 50 -d 5s
    fi
    stop_nginx
fi
[[ "${1:-}" == captures ]] && exit 0

netdoctor_binary /tmp/target-bench
echo "netdoctor: $NETDOCTOR"

# ---------------------------------------------------------------------------------------------
# Throughput and peak RSS.

# timed NAME CMD...: prints "elapsed_s max_rss_kib" of one run (output discarded).
timed() {
    local out="$work/time.out"
    /usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null 2>&1 || true
    tail -1 "$out"
}

printf '\n== throughput (one run each; packets/s = packets / wall time)\n'
for f in "$big" "$nagle"; do
    n="$(packets "$f")"
    size="$(du -h "$f" | cut -f1)"
    printf '\n%s: %s packets, %s\n' "$(basename "$f")" "$n" "$size"
    printf '  %-34s %9s %12s %10s %12s\n' tool seconds packets/s "RSS MiB" "netdoctor x"
    declare -A pps=()
    for t in netdoctor expert conv tcptrace; do
        case "$t" in
        netdoctor) r="$(timed "$NETDOCTOR" analyze "$f" --json)"; name="netdoctor analyze --json" ;;
        expert) r="$(timed tshark -r "$f" -q -z expert)"; name="tshark -q -z expert" ;;
        conv) r="$(timed tshark -r "$f" -q -z conv,tcp)"; name="tshark -q -z conv,tcp" ;;
        tcptrace) r="$(timed tcptrace -l "$f")"; name="tcptrace -l" ;;
        esac
        read -r secs rss <<<"$r"
        p="$(awk -v n="$n" -v s="$secs" 'BEGIN { if (s < 0.01) s = 0.01; printf "%.0f", n / s }')"
        pps[$t]="$p"
        ratio="$(awk -v a="${pps[netdoctor]}" -v b="$p" 'BEGIN { printf "%.1f", a / b }')"
        printf '  %-34s %9s %12s %10s %12s\n' "$name" "$secs" "$p" "$((rss / 1024))" "$ratio"
    done
    unset pps
done

# ---------------------------------------------------------------------------------------------
# RSS scaling: the big capture appended to itself.

printf '\n== RSS scaling (netdoctor analyze on the big capture appended to itself)\n'
size="$(stat -c %s "$big")"
copies=$(((CONCAT_TARGET_BYTES + size - 1) / size))
avail="$(df --output=avail -B1 "$CACHE" | tail -1)"
if ((avail < 2 * copies * size)); then
    copies=$((avail / size / 3))
    echo "  (only $((avail / 1024 / 1024)) MiB free: $copies copies)"
fi
printf '  %-8s %10s %12s %9s %12s %10s\n' copies MiB packets seconds packets/s "RSS MiB"
n1="$(packets "$big")"
for k in 1 4 "$copies"; do
    ((k >= 1)) || continue
    if ((k == 1)); then
        f="$big"
    else
        f="$CACHE/concat-$k.pcap"
        args=()
        for _ in $(seq 1 "$k"); do args+=("$big"); done
        mergecap -a -F pcap -w "$f" "${args[@]}"
    fi
    read -r secs rss <<<"$(timed "$NETDOCTOR" analyze "$f" --json)"
    n=$((n1 * k))
    p="$(awk -v n="$n" -v s="$secs" 'BEGIN { if (s < 0.01) s = 0.01; printf "%.0f", n / s }')"
    printf '  %-8s %10s %12s %9s %12s %10s\n' "$k" "$(($(stat -c %s "$f") / 1024 / 1024))" "$n" "$secs" "$p" "$((rss / 1024))"
    [[ "$f" == "$big" ]] || rm -f "$f"
done

# ---------------------------------------------------------------------------------------------
# Agreement with tshark.

printf '\n== agreement with tshark (retransmissions, zero windows, resets)\n'
printf '  %-24s %8s %8s %8s | %8s  %s\n' capture "ts:retx" "ts:zwin" "ts:rst" "nd:retx" "netdoctor findings"
for f in "$root"/testdata/captures/*.pcap "$root"/testdata/captures/*.pcapng "$big" "$nagle"; do
    [[ -f "$f" ]] || continue
    read -r retx zwin rst <<<"$(tshark -r "$f" -q -z io,stat,0,"COUNT(tcp.analysis.retransmission)tcp.analysis.retransmission","COUNT(tcp.analysis.zero_window)tcp.analysis.zero_window","COUNT(tcp.flags.reset)tcp.flags.reset==1" 2>/dev/null |
        awk -F'|' '/<>/ { gsub(/ /, ""); r = $3 " " $4 " " $5 } END { print r }')"
    json="$("$NETDOCTOR" analyze "$f" --json 2>/dev/null || true)"
    nd_retx="$(jq -r '.measurements.capture.stats.retransmitted_segments // "?"' <<<"$json" 2>/dev/null || echo "?")"
    ids="$(jq -r '[.findings[] | .id] | join(",")' <<<"$json" 2>/dev/null || echo "?")"
    printf '  %-24s %8s %8s %8s | %8s  %s\n' "$(basename "$f")" "$retx" "$zwin" "$rst" "$nd_retx" "${ids:--}"
done

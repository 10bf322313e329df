#!/usr/bin/env bash
# Capture-quality classes on real traffic between two network namespaces (issue 19):
#   rst-after-fin-lab.pcap  the server closes (FIN) a connection idle 0.3 s after its response;
#                           the client does not close, sends another request 0.2 s after the
#                           FIN, and the server's kernel answers with a reset (3 connections).
# (Fast retransmit from iptables statistic drops is loss.pcap, made by make.sh; duplicated
# frames and capture gaps are made from the lab captures inside the tests, with mergecap and
# editcap.)
# Needs root, iproute2, tcpdump and /usr/bin/python3. Creates namespaces ndq<pid>c and
# ndq<pid>s joined by a veth pair, removes them (and stops every process it started, by PID)
# on exit. The root namespace is not touched. Usage: ./make-quality-lab.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d /tmp/ndq-lab.XXXXXX)"
C="ndq$$c"
S="ndq$$s"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    ip netns del "$C" 2>/dev/null || true
    ip netns del "$S" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

ip netns add "$C"
ip netns add "$S"
ip link add ndq-c netns "$C" type veth peer name ndq-s netns "$S"
ip -n "$C" addr add 10.78.0.1/24 dev ndq-c
ip -n "$S" addr add 10.78.0.2/24 dev ndq-s
for ns in "$C" "$S"; do
    for dev in $(ip netns exec "$ns" ls /sys/class/net); do
        ip -n "$ns" link set "$dev" gso_max_segs 1 2>/dev/null || true
        ip -n "$ns" link set "$dev" up
    done
done
for _ in $(seq 1 100); do
    ip -n "$C" link show ndq-c | grep -q LOWER_UP && break
    sleep 0.02
done

fifo="$work/srv"
mkfifo "$fifo"
ip netns exec "$S" /usr/bin/python3 "$out/lab.py" server 18200 closeidle 2000 >"$fifo" &
pids+=($!)
read -r _ <"$fifo"

ip netns exec "$C" tcpdump -U --immediate-mode -i ndq-c -s 200 -c 100 \
    -w "$out/rst-after-fin-lab.pcap" 'tcp port 18200' 2>"$work/td.err" &
td=$!
pids+=("$td")
for _ in $(seq 1 200); do grep -q "listening on" "$work/td.err" 2>/dev/null && break; sleep 0.05; done
ip netns exec "$C" /usr/bin/python3 "$out/lab.py" client afterfin 10.78.0.2 18200 3
sleep 0.3
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
echo "rst-after-fin-lab.pcap: $(tcpdump -r "$out/rst-after-fin-lab.pcap" 2>/dev/null | wc -l) packets"

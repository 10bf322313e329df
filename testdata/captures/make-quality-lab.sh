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
. "$out/lib.sh"
lab_begin ndq-lab
C="ndq$$c"
S="ndq$$s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndq-c ndq-s 10.78.0.1 10.78.0.2 gso1

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

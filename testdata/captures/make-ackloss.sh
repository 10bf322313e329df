#!/usr/bin/env bash
# Makes ack-path-loss.pcap.gz (see README.md): ACKs lost on the way back. Three namespaces,
# client — router — server; the router's FORWARD chain drops ${DROP:-0.25} of the
# client→server packets (iptables `statistic`, one direction only). The client downloads
# ${SIZE:-1500000} bytes over HTTP from a python server; tcpdump runs in the client's
# namespace (next to the receiver), snap length 128, `--immediate-mode -U`, stopped 1.5 s after
# the download. Repeated (at most RUNS, default 20) until BIN (default `netdoctor` on PATH)
# tells spurious_retransmission "ACKs lost on the way back": a stall needs a run of lost ACKs
# at the tail of a flight. Namespaces ${NS_PREFIX:-nd-ack}-$$-{cli,rtr,srv} are removed on
# exit, also on failure; the server and tcpdump are stopped by their PIDs.
# Needs root, python3, iptables, tcpdump, curl.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
BIN="${BIN:-netdoctor}"
RUNS="${RUNS:-20}"
lab_begin netdoctor-ackloss
C="${NS_PREFIX:-nd-ack}-$$-cli"
R="${NS_PREFIX:-nd-ack}-$$-rtr"
S="${NS_PREFIX:-nd-ack}-$$-srv"
lab_netns "$C" "$R" "$S"
lab_veth "$C" "$R" ack-c ack-rc 10.219.81.2 10.219.81.1
lab_veth "$S" "$R" ack-s ack-rs 10.219.82.2 10.219.82.1
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
ip -n "$C" route add default via 10.219.81.1
ip -n "$S" route add default via 10.219.82.1
ip netns exec "$R" iptables -A FORWARD -s 10.219.81.2 -d 10.219.82.2 \
    -m statistic --mode random --probability "${DROP:-0.25}" -j DROP
head -c "${SIZE:-1500000}" /dev/zero >"$work/blob"
(cd "$work" && exec ip netns exec "$S" python3 -m http.server --bind 10.219.82.2 8005 \
    >/dev/null 2>&1) &
pids+=($!)
sleep 0.5
for k in $(seq 1 "$RUNS"); do
    ip netns exec "$C" tcpdump -i ack-c -s 128 --immediate-mode -U -w "$work/run.pcap" \
        tcp port 8005 2>/dev/null &
    tp=$!
    pids+=("$tp")
    sleep 0.5
    ip netns exec "$C" curl -s -m 20 -o /dev/null http://10.219.82.2:8005/blob || true
    sleep 1.5
    kill "$tp"
    wait "$tp" 2>/dev/null || true
    if "$BIN" analyze "$work/run.pcap" 2>/dev/null | grep -q "ACKs lost on the way back"; then
        gzip -9 -c "$work/run.pcap" >"$out/ack-path-loss.pcap.gz"
        echo "run $k: ack-path-loss.pcap.gz ($(stat -c %s "$out/ack-path-loss.pcap.gz") bytes)"
        exit 0
    fi
    echo "run $k: no ACK-path stall"
done
echo "no run showed an ACK-path stall" >&2
exit 1

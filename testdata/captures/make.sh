#!/usr/bin/env bash
# Regenerates the committed test captures (see README.md in this folder).
# Needs root, nginx (Debian nginx-light 1.22), wrk, tcpdump, editcap and tshark
# (wireshark-common / tshark), python3, iproute2 and iptables.
# (slow-reader.pcap is made by ./make-slow-reader.sh, in a namespace of its own; the TLS,
# line-protocol and redis captures by ./make-proto.sh.)
# Usage: ./make.sh [all|loopback|lab]   (default all; "lab" = only the namespace captures)
#        ONLY="loss.pcap rto.pcap" ./make.sh lab   regenerates only the named lab captures
# Loopback captures stay on lo; the lab captures run between three network namespaces created
# here (nd-cap-cli, nd-cap-rtr, nd-cap-srv) and deleted on exit. The root namespace's sysctls, iptables
# and qdiscs are never touched. Every process started here is stopped by its PID on exit.
set -euo pipefail
what="${1:-all}"

out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin netdoctor-captures

# want NAME: whether this lab capture is to be made (all unless ONLY names some)
want() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }

# wait_listening FILE: bounded wait for tcpdump's "listening on" line (its ready signal)
wait_listening() {
    for _ in $(seq 1 200); do grep -q "listening on" "$1" 2>/dev/null && break; sleep 0.05; done
    grep -q "listening on" "$1"
}

if [[ "$what" == all || "$what" == loopback ]]; then

# --- nginx: 18080 tcp_nodelay on (healthy), 18081 tcp_nodelay off (the reference stall) ---
chmod 755 "$work"   # nginx workers run as nobody/www-data and must read html/
mkdir -p "$work/html" "$work/logs"
# 615-byte body, like Debian's default index page in the reference case.
python3 -c 'import sys; sys.stdout.write("<html><body>" + "x" * 589 + "</body></html>\n")' >"$work/html/index.html"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 256; }
http {
    access_log off;
    sendfile on;   # as in Debian's nginx.conf: headers by writev, body by sendfile = two writes
    default_type text/html;
    keepalive_requests 100000;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { listen 127.0.0.1:18080; listen [::1]:18080; tcp_nodelay on;  root $work/html; }
    server { listen 127.0.0.1:18081; listen [::1]:18081; tcp_nodelay off; root $work/html; }
}
CONF
mkdir -p "$work/tmp"
nginx -c "$work/nginx.conf" -p "$work"   # returns once the listeners are bound and the pid file is written

# --- slow server: answers every request after 25 ms of "think time", in one write ---
cat >"$work/slow.py" <<'PY'
import socket, sys, threading, time
BODY = b"x" * 100
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n\r\n%s" % (len(BODY), BODY)
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            buf += d
            while b"\r\n\r\n" in buf:
                _, buf = buf.split(b"\r\n\r\n", 1)
                time.sleep(0.025)
                c.sendall(RESP)
    except OSError:
        pass  # wrk resets its connections at the end
    c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 18082))
s.listen(64)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
mkfifo "$work/slow.ready"
python3 "$work/slow.py" >"$work/slow.ready" &
pids+=($!)
read -r _ <"$work/slow.ready"   # ready signal: the server printed "ready" after listen()

# capture NAME PACKETS FILTER URL [tcpdump options...]
capture() {
    local name="$1" count="$2" filter="$3" url="$4"
    shift 4
    rm -f "$work/td.err"
    tcpdump -U -c "$count" -w "$out/$name" "$@" "$filter" 2>"$work/td.err" &
    local td=$!
    pids+=("$td")
    # ready signal: tcpdump says "listening on" once the socket and filter are set
    wait_listening "$work/td.err"
    wrk -c 10 -t 1 -d 1s "$url" >"$work/wrk.out"
    kill -INT "$td" 2>/dev/null || true   # no-op when -c was reached first
    wait "$td" || true
    echo "$name: $(grep -E 'Latency|Requests/sec' "$work/wrk.out" | tr -s ' ' | tr '\n' ' ')"
}

# snaplen 200 keeps files small and exercises the "payload cut by snaplen" path;
# HTTP request/status lines still fit.
capture nagle-eth.pcap    1200 'tcp port 18081' http://127.0.0.1:18081/ -i lo -s 200
capture healthy-eth.pcap  1200 'tcp port 18080' http://127.0.0.1:18080/ -i lo -s 200
capture nagle-sll2.pcap   1200 'tcp port 18081' http://127.0.0.1:18081/ -i any -s 200
capture nagle-sll.pcap    1200 'tcp port 18081' http://127.0.0.1:18081/ -i any -y LINUX_SLL -s 200
capture nagle-ipv6.pcap   1200 'tcp port 18081' 'http://[::1]:18081/' -i lo -s 200
capture slow-eth.pcap      600 'tcp port 18082' http://127.0.0.1:18082/ -i lo -s 200
# full snaplen, written as pcapng by editcap (tcpdump 4.99 writes pcap only)
capture nagle-full.tmp.pcap 600 'tcp port 18081' http://127.0.0.1:18081/ -i lo -s 0
editcap -F pcapng "$out/nagle-full.tmp.pcap" "$out/nagle-full.pcapng"
rm -f "$out/nagle-full.tmp.pcap"

# healthy under load: wrk -c 100 against tcp_nodelay on. The 100 connections starve the client
# of CPU for a few ms at the start: the server retransmits ~5 ms after the original, the
# client reports the duplicates with D-SACKs (tshark: "suspected retransmission"). Snaplen 96,
# and only the connections with a retransmission (at most 20) plus 10 others are kept, to stay
# small. Whether the starvation happens depends on the machine: check the tshark line.
rm -f "$work/td.err"
tcpdump -U -i lo -s 96 -c 4000 -w "$work/c100.pcap" 'tcp port 18080' 2>"$work/td.err" &
td=$!
pids+=("$td")
wait_listening "$work/td.err"
wrk -c 100 -t 2 -d 1s http://127.0.0.1:18080/ >"$work/wrk.out"
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
streams=$(tshark -r "$work/c100.pcap" -Y tcp.analysis.retransmission -T fields -e tcp.stream 2>/dev/null | sort -un | head -20 | tr '\n' ',')
tshark -r "$work/c100.pcap" -Y "tcp.stream in {${streams}$(seq -s, 60 69)}" -w "$out/healthy-spurious.pcap" 2>/dev/null
echo "healthy-spurious.pcap: $(tshark -r "$out/healthy-spurious.pcap" -Y tcp.analysis.retransmission 2>/dev/null | wc -l) suspected retransmissions"

# raw IP (LINKTYPE_RAW = 101): tcpdump cannot capture raw IP on lo, so strip the 14-byte
# Ethernet header from every record of nagle-eth.pcap.
python3 - "$out/nagle-eth.pcap" "$out/nagle-raw.pcap" <<'PY'
import struct, sys
src, dst = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
magic = data[:4]
e = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
hdr = bytearray(data[:24])
struct.pack_into(e + "I", hdr, 20, 101)
out = [bytes(hdr)]
off = 24
while off + 16 <= len(data):
    ts_s, ts_f, incl, orig = struct.unpack_from(e + "IIII", data, off)
    rec = data[off + 16: off + 16 + incl]
    off += 16 + incl
    out.append(struct.pack(e + "IIII", ts_s, ts_f, incl - 14, orig - 14) + rec[14:])
open(dst, "wb").write(b"".join(out))
PY
fi

# ---------------------------------------------------------------------------------------
# Lab captures: client namespace nd-cap-cli (10.77.1.1, veth nd-c) → router namespace
# nd-cap-rtr (veths nd-rc / nd-rs, forwarding on inside it) → server namespace nd-cap-srv
# (10.77.2.2, veth nd-s); MTU 1500; servers and clients from lab.py. tcpdump runs in the client
# namespace on nd-c (snaplen 200). Loss is made with iptables rules inside these namespaces:
# in the router's FORWARD chain for network loss (the sender's TCP cannot tell), or in the
# client's INPUT chain (after tcpdump saw the packet: what a capture at the sender shows).
# Not in the sender's OUTPUT chain: a packet dropped there makes the sender's TCP see a local
# error and send it again later, so no loss ever shows on the wire.
# ---------------------------------------------------------------------------------------
if [[ "$what" == all || "$what" == lab ]]; then
CLI=(ip netns exec nd-cap-cli)
RTR=(ip netns exec nd-cap-rtr)
SRV=(ip netns exec nd-cap-srv)
lab_netns nd-cap-cli nd-cap-rtr nd-cap-srv
ip link add nd-c netns nd-cap-cli type veth peer name nd-rc netns nd-cap-rtr
ip link add nd-s netns nd-cap-srv type veth peer name nd-rs netns nd-cap-rtr
"${CLI[@]}" ip addr add 10.77.1.1/24 dev nd-c
"${RTR[@]}" ip addr add 10.77.1.254/24 dev nd-rc
"${RTR[@]}" ip addr add 10.77.2.254/24 dev nd-rs
"${SRV[@]}" ip addr add 10.77.2.2/24 dev nd-s
"${RTR[@]}" sysctl -qw net.ipv4.ip_forward=1   # inside the router namespace only
# veth offloads would hand tcpdump 64 KB super-segments; real NICs' captures show MTU-size
# segments on the wire, and so should ours (one segment per GSO skb; no ethtool needed).
for ns in CLI RTR SRV; do
    eval "cmd=(\"\${${ns}[@]}\")"
    for dev in $("${cmd[@]}" ls /sys/class/net); do
        "${cmd[@]}" ip link set "$dev" gso_max_segs 1 2>/dev/null || true
        "${cmd[@]}" ip link set "$dev" up
    done
done
"${CLI[@]}" ip route add default via 10.77.1.254
"${SRV[@]}" ip route add default via 10.77.2.254
# the links are up once they report LOWER_UP (bounded wait, ready signal)
for _ in $(seq 1 100); do
    "${CLI[@]}" ip link show nd-c | grep -q LOWER_UP && "${SRV[@]}" ip link show nd-s | grep -q LOWER_UP && break
    sleep 0.02
done
LAB="$out/lab.py"

# lab_server PORT MODE BODY: starts a lab.py server in the server namespace, waits for "ready"
lab_server() {
    local fifo="$work/srv.$1"
    mkfifo "$fifo"
    "${SRV[@]}" python3 "$LAB" server "$1" "$2" "$3" >"$fifo" &
    pids+=($!)
    read -r _ <"$fifo"
}

# lab_capture NAME COUNT FILTER CLIENT-ARGS...: tcpdump in the client namespace around one
# lab.py client run
lab_capture() {
    local name="$1" count="$2" filter="$3"
    shift 3
    want "$name" || return 0
    rm -f "$work/td.err"
    "${CLI[@]}" tcpdump -U --immediate-mode -i nd-c -s 200 -c "$count" -w "$out/$name" "$filter" 2>"$work/td.err" &
    local td=$!
    pids+=("$td")
    wait_listening "$work/td.err"
    "${CLI[@]}" python3 "$LAB" client "$@"
    sleep 0.3   # let the closing FIN/ACKs (or the last retransmissions) reach the capture
    kill -INT "$td" 2>/dev/null || true
    wait "$td" || true
    echo "$name: $(tcpdump -r "$out/$name" 2>/dev/null | wc -l) packets"
}

# healthy over veth: 64 KB responses, keep-alive, no loss
lab_server 18089 keepalive 65536
lab_capture lab-healthy.pcap 1000 'tcp port 18089' keepalive 10.77.2.2 18089 10

# loss: 64 KB responses, every 25th packet from the server dropped in the router (network loss,
# before the capture point): the capture at the client sees holes, duplicate ACKs with SACK
# blocks, and the retransmissions that fill the holes (fast retransmit)
lab_server 18090 keepalive 65536
"${RTR[@]}" iptables -A FORWARD -p tcp --sport 18090 -m length --length 1000:65535 -m statistic --mode nth --every 25 --packet 0 -j DROP
lab_capture loss.pcap 1000 'tcp port 18090' keepalive 10.77.2.2 18090 10

# RTO: one-segment responses, every 4th data packet of the server dropped at the client's
# INPUT (after tcpdump saw it, as a capture at the sender would show it): nothing follows the
# lost segment, so only a timer (tail loss probe / RTO, ≥ 200 ms for a single outstanding
# segment) repairs it
lab_server 18091 keepalive 100
"${CLI[@]}" iptables -A INPUT -p tcp --sport 18091 -m length --length 150:65535 -m statistic --mode nth --every 4 --packet 0 -j DROP
lab_capture rto.pcap 400 'tcp port 18091' keepalive 10.77.2.2 18091 12

# zero window: the client asks for 128 KB with SO_RCVBUF 4096 and does not read for 0.5 s
lab_server 18092 keepalive 131072
lab_capture zero-window.pcap 1200 'tcp port 18092' slowread 10.77.2.2 18092 1

# SYN retransmits: (1) a listener with backlog 0 that never accepts, 4 concurrent connects:
# the accept queue is full, the kernel drops the SYNs and the client repeats them; (2) a normal
# server, 2 connections held open silently, the router drops every other pure ACK from the
# client: the server's SYN/ACK is repeated after 1 s
lab_server 18093 noaccept 0
lab_server 18097 keepalive 100
"${RTR[@]}" iptables -A FORWARD -p tcp --dport 18097 --tcp-flags ALL ACK -m length --length 52 -m statistic --mode nth --every 2 --packet 0 -j DROP
if want syn-retransmit.pcap; then
rm -f "$work/td.err"
"${CLI[@]}" tcpdump -U --immediate-mode -i nd-c -s 200 -c 200 -w "$out/syn-retransmit.pcap" 'tcp port 18093 or tcp port 18097' 2>"$work/td.err" &
td=$!
pids+=("$td")
wait_listening "$work/td.err"
"${CLI[@]}" python3 "$LAB" client connect 10.77.2.2 18093 4
"${CLI[@]}" python3 "$LAB" client hold 10.77.2.2 18097 2
sleep 0.3
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
echo "syn-retransmit.pcap: $(tcpdump -r "$out/syn-retransmit.pcap" 2>/dev/null | wc -l) packets"
fi

# resets: a server that resets mid-response (SO_LINGER 0), then a closed port (RST, no handshake)
lab_server 18094 reset 20000
if want reset.pcap; then
rm -f "$work/td.err"
"${CLI[@]}" tcpdump -U --immediate-mode -i nd-c -s 200 -c 400 -w "$out/reset.pcap" 'tcp port 18094 or tcp port 18095' 2>"$work/td.err" &
td=$!
pids+=("$td")
wait_listening "$work/td.err"
"${CLI[@]}" python3 "$LAB" client reset 10.77.2.2 18094 3
"${CLI[@]}" python3 "$LAB" client refused 10.77.2.2 18095 2
sleep 0.3
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
echo "reset.pcap: $(tcpdump -r "$out/reset.pcap" 2>/dev/null | wc -l) packets"
fi

# short connections: 40 requests, one connection each
lab_server 18096 keepalive 100
lab_capture short-connections.pcap 600 'tcp port 18096' perconn 10.77.2.2 18096 40

# delayed-ACK stall without Nagle: every 25th large packet of the server dropped in the
# server's own OUTPUT chain. TCP sees the local error, keeps the segment queued, and retries
# only when something wakes it: the next ACK from the client. With one full-size segment
# unacknowledged, the client delays that ACK (40 ms): the sender stands still, waiting for a
# delayed ACK, though Nagle is off (TCP_NODELAY) and the held segments are full-size. When
# nothing is in flight at all, only the zero-window probe timer (~200 ms) wakes it.
lab_server 18098 keepalive 65536
"${SRV[@]}" iptables -A OUTPUT -p tcp --sport 18098 -m length --length 1000:65535 -m statistic --mode nth --every 25 --packet 0 -j DROP
lab_capture delack-stall.pcap 1000 'tcp port 18098' keepalive 10.77.2.2 18098 10
fi
ls -l "$out"

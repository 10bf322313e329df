#!/usr/bin/env bash
# Connections inside tunnels, captured on the underlay (helper sweep): the capture holds
# only the outer packets, as on an overlay network's node uplink.
#   tunnels.pcap  two HTTP/1.0 exchanges over VXLAN (UDP 4789, VNI 42) between two
#                 namespaces joined by a veth pair; captured on the veth (the underlay).
#                 Inner addresses 10.81.0.0/24. (GRE, Geneve and IP in IP are covered by the
#                 decoder's unit tests: the kernel this was made on has no ip_gre, geneve or
#                 ipip module.)
# Needs root, iproute2, tcpdump and /usr/bin/python3 (and the vxlan module).
# Creates namespaces ndsw<pid>c and ndsw<pid>s, removes them (and stops every process it
# started, by PID) on exit. The root namespace is not touched. Usage: ./make-tunnels.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin ndsw-lab
C="ndsw$$c"
S="ndsw$$s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndsw-c ndsw-s 10.80.0.1 10.80.0.2
# The VXLAN (VNI 42) over that veth, inner addresses 10.81.0.1 and 10.81.0.2.
n=1
for ns in "$C" "$S"; do
    peer=$((3 - n))
    dev=$([ "$ns" = "$C" ] && echo ndsw-c || echo ndsw-s)
    ip -n "$ns" link add vx42 type vxlan id 42 remote 10.80.0.$peer local 10.80.0.$n dstport 4789 dev "$dev"
    ip -n "$ns" addr add 10.81.0.$n/24 dev vx42
    ip -n "$ns" link set vx42 mtu 1400 up
    n=2
done

cat >"$work/srv.py" <<'PY'
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(8)
print("ready", flush=True)
s.settimeout(1)
end = time.time() + 20
while time.time() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.recv(4096)
    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.close()
PY
cat >"$work/cli.py" <<'PY'
import socket, sys
for host in sys.argv[2:]:
    c = socket.create_connection((host, int(sys.argv[1])), timeout=5)
    c.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    while c.recv(4096):
        pass
    c.close()
PY
fifo="$work/srv"
mkfifo "$fifo"
ip netns exec "$S" /usr/bin/python3 "$work/srv.py" 18400 >"$fifo" &
pids+=($!)
read -r _ <"$fifo"
ip netns exec "$C" tcpdump -U --immediate-mode -i ndsw-c -s 300 -c 100 \
    -w "$out/tunnels.pcap" 'udp port 4789' 2>"$work/td.err" &
td=$!
pids+=("$td")
for _ in $(seq 1 200); do grep -q "listening on" "$work/td.err" 2>/dev/null && break; sleep 0.05; done
ip netns exec "$C" timeout 20 /usr/bin/python3 "$work/cli.py" 18400 10.81.0.2 10.81.0.2
sleep 0.3
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
echo "tunnels.pcap: $(tcpdump -r "$out/tunnels.pcap" 2>/dev/null | wc -l) packets"

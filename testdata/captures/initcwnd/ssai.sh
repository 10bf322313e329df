# Look-alikes of slow start after idle (session 25, helper ssai). Needs a far-server lab named
# ssai: `netdoctor lab start --case far-server --name ssai` (+37 ms RTT); run as root from this
# folder: bash ssai.sh OUTDIR. nginx as in run.sh (its own, nginx.conf with /tmp/icw replaced
# by OUTDIR, OUTDIR/www/big.bin 300 KB), reno, tcp_slow_start_after_idle=1 in ssai-srv.
set -u
out=$1; here=$(pwd)
sed "s#/tmp/icw#$out#g" nginx.conf > "$out/nginx.conf"
ip netns exec ssai-srv nginx -c "$out/nginx.conf" -p "$out" & NG=$!
ip netns exec ssai-srv python3 "$here/slow-writer.py" 10.231.3.2 9091 & SW=$!
sleep 1
cap() { ip netns exec $2 tcpdump --immediate-mode -U -i $3 -s 96 -w "$out/$1.pcap" "tcp port $4" 2>/dev/null & CAP=$!; sleep 1; }
endcap() { sleep 1.5; kill $CAP; wait $CAP 2>/dev/null; }
ip netns exec ssai-srv sysctl -q net.ipv4.tcp_congestion_control=reno
ip netns exec ssai-srv sysctl -q net.ipv4.tcp_slow_start_after_idle=1
echo "== LAN: keep-alive from ssai-r2 (next to the server), idle 1 s"
cap idle-restart-lan ssai-r2 r2-srv 9090; ip netns exec ssai-r2 python3 ka.py 10.231.3.2 9090 3 1; endcap
echo "== far: a new connection per request, 1 s apart"
cap idle-reopen-reno ssai-cli cli-r1 9090
for i in 1 2 3; do ip netns exec ssai-cli curl -s -o /dev/null -w "%{time_total}\n" http://10.231.3.2:9090/big.bin; sleep 1; done; endcap
echo "== far: keep-alive, client SO_RCVBUF 16 KB, idle 1 s"
cap idle-restart-rcvbuf ssai-cli cli-r1 9090; ip netns exec ssai-cli python3 ka-rcvbuf.py 10.231.3.2 9090 3 1 16384; endcap
echo "== far: keep-alive, the router next to the server drops one of every 60 packets of the server (iptables nth in ssai-r2's FORWARD: lost on the wire, not locally)"
drop="FORWARD -p tcp --sport 9090 -m statistic --mode nth --every 60 --packet 30 -j DROP"
ip netns exec ssai-r2 iptables -A $drop
cap idle-restart-loss ssai-cli cli-r1 9090; ip netns exec ssai-cli python3 ka.py 10.231.3.2 9090 3 1; endcap
ip netns exec ssai-r2 iptables -D $drop
echo "== far: keep-alive, the first answer at once, the next ones written 8 KB every 50 ms"
cap idle-slow-writer ssai-cli cli-r1 9091
ip netns exec ssai-cli python3 -c '
import http.client, time
c = http.client.HTTPConnection("10.231.3.2", 9091)
for i in range(3):
    t = time.time(); c.request("GET", "/"); b = c.getresponse().read()
    print("slow-writer req %d: %d bytes %.1f ms" % (i, len(b), (time.time() - t) * 1000)); time.sleep(1)
'; endcap
ip netns exec ssai-srv sysctl -q net.ipv4.tcp_congestion_control=bbr
kill $SW $NG; wait $SW $NG 2>/dev/null
echo done

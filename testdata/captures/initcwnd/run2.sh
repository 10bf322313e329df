set -u
cd /tmp/icw
ip netns exec icw-srv nginx -c /tmp/icw/nginx.conf -p /tmp/icw & NG=$!
sleep 1
cap() { ip netns exec $2 tcpdump --immediate-mode -U -i $3 -s 96 -w /tmp/icw/$1.pcap "tcp port 9090" 2>/dev/null & CAP=$!; sleep 1; }
endcap() { sleep 1.5; kill $CAP; wait $CAP 2>/dev/null; }
ip netns exec icw-srv sysctl -q net.ipv4.tcp_congestion_control=reno
for s in 1 0; do
ip netns exec icw-srv sysctl -q net.ipv4.tcp_slow_start_after_idle=$s
echo "== reno far initcwnd 10 keepalive, idle 1s, ssai=$s"; cap ka-reno-ssai$s icw-cli cli-r1; ip netns exec icw-cli python3 ka.py 10.231.3.2 9090 3 1; endcap
done
ip netns exec icw-srv sysctl -q net.ipv4.tcp_slow_start_after_idle=1
for w in 1 10; do
  ip -n icw-srv route change 10.231.3.0/24 dev srv-r2 proto kernel scope link src 10.231.3.2 initcwnd $w
  echo "== reno LAN (from icw-r2) initcwnd $w"; cap lan-icw$w icw-r2 r2-srv
  for i in 1 2 3; do ip netns exec icw-r2 curl -s -o /dev/null -w "%{time_connect} %{time_starttransfer} %{time_total}\n" http://10.231.3.2:9090/big.bin; done; endcap
done
ip -n icw-srv route change 10.231.3.0/24 dev srv-r2 proto kernel scope link src 10.231.3.2
ip netns exec icw-srv sysctl -q net.ipv4.tcp_congestion_control=bbr
ip -n icw-srv route change default via 10.231.3.1 dev srv-r2 initcwnd 1
echo "== bbr far initcwnd 1 --no-keepalive diagnose"
ip netns exec icw-cli /work/nd-start22 diagnose --no-keepalive --json http://10.231.3.2:9090/big.bin > diag-icw1.json 2>diag-icw1.err; echo rc=$?
ip -n icw-srv route change default via 10.231.3.1 dev srv-r2
kill $NG; wait $NG 2>/dev/null
echo done

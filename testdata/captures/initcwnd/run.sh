set -u
cd /tmp/icw
ip netns exec icw-srv nginx -c /tmp/icw/nginx.conf -p /tmp/icw & NG=$!
sleep 1
cap() { ip netns exec icw-cli tcpdump --immediate-mode -U -i cli-r1 -s 96 -w /tmp/icw/$1.pcap "tcp port 9090" 2>/dev/null & CAP=$!; sleep 1; }
endcap() { sleep 1.5; kill $CAP; wait $CAP 2>/dev/null; }
curls() { for i in 1 2 3 4 5; do ip netns exec icw-cli curl -s -o /dev/null -w "%{time_connect} %{time_starttransfer} %{time_total}\n" http://10.231.3.2:9090/big.bin; done; }
for w in 1 10; do
  ip -n icw-srv route change default via 10.231.3.1 dev srv-r2 initcwnd $w
  echo "== far initcwnd $w (connect ttfb total, s)"; cap far-icw$w; curls; endcap
done
ip -n icw-srv route change default via 10.231.3.1 dev srv-r2 initcwnd 1
echo "== far initcwnd 1 keepalive, idle 1s, slow_start_after_idle=1"; cap ka-icw1-ssai1; ip netns exec icw-cli python3 ka.py 10.231.3.2 9090 3 1; endcap
ip -n icw-srv route change default via 10.231.3.1 dev srv-r2 initcwnd 10
echo "== far initcwnd 10 keepalive, idle 1s, ssai=1"; cap ka-icw10-ssai1; ip netns exec icw-cli python3 ka.py 10.231.3.2 9090 3 1; endcap
ip netns exec icw-srv sysctl -q net.ipv4.tcp_slow_start_after_idle=0
echo "== far initcwnd 10 keepalive, idle 1s, ssai=0"; cap ka-icw10-ssai0; ip netns exec icw-cli python3 ka.py 10.231.3.2 9090 3 1; endcap
ip netns exec icw-srv sysctl -q net.ipv4.tcp_slow_start_after_idle=1
kill $NG; wait $NG 2>/dev/null
ip -n icw-srv route change default via 10.231.3.1 dev srv-r2
echo done

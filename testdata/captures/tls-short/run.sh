#!/bin/bash
# Records tls12-short.pcap, tls13-short.pcap (8 curl, a new TLS connection per request) and
# keepalive-requests5.pcap (one curl asking 30 URLs on one kept connection of a server with
# keepalive_requests 5) over the far-server lab's +37 ms RTT. Needs root, nginx, openssl, curl,
# tcpdump, and `netdoctor lab start --case far-server --name tsh` running; stop it after.
# `run.sh tls` or `run.sh ka` records only those.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rm -rf /tmp/tsh && mkdir -p /tmp/tsh/www
cp "$here/nginx.conf" /tmp/tsh/
head -c 2000 /dev/zero | tr '\0' a > /tmp/tsh/www/page.html
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=srv.lab.test -keyout /tmp/tsh/key.pem -out /tmp/tsh/cert.pem 2>/dev/null
ip netns exec tsh-srv nginx -c /tmp/tsh/nginx.conf -p /tmp/tsh & NG=$!
CAP=
cleanup() { [ -n "$CAP" ] && kill "$CAP" 2>/dev/null; kill "$NG" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT
sleep 1
cap() { ip netns exec tsh-cli tcpdump --immediate-mode -U -i cli-r1 -s 200 -w "/tmp/tsh/$1.pcap" "tcp port $2" 2>/dev/null & CAP=$!; sleep 1; }
endcap() { sleep 0.5; kill "$CAP"; wait "$CAP" 2>/dev/null || true; CAP=; }
curls() { for _ in 1 2 3 4 5 6 7 8; do ip netns exec tsh-cli curl -sk -o /dev/null "$@" \
  -w "%{time_connect} %{time_appconnect} %{time_starttransfer} %{time_total}\n"; done; }
what=${1:-all}
made=()
if [ "$what" != ka ]; then
  echo "== TLS 1.2, a connection per request (connect tls ttfb total, s)"
  cap tls12-short 9412; curls https://10.231.3.2:9412/page.html; endcap
  echo "== TLS 1.3, a connection per request"
  cap tls13-short 9413; curls https://10.231.3.2:9413/page.html; endcap
  made+=(tls12-short tls13-short)
fi
if [ "$what" != tls ]; then
echo "== keepalive_requests 5: 30 requests on curl's kept connection (new connection? seconds)"
args=(); for i in $(seq 1 30); do args+=(-o /dev/null "http://10.231.3.2:9405/page.html?$i"); done
cap keepalive-requests5 9405
ip netns exec tsh-cli curl -s -w "%{num_connects} %{time_total}\n" "${args[@]}" | tr '\n' ' '; echo
endcap
made+=(keepalive-requests5)
fi
for f in "${made[@]}"; do gzip -9c "/tmp/tsh/$f.pcap" > "$here/../$f.pcap.gz"; ls -la "$here/../$f.pcap.gz"; done

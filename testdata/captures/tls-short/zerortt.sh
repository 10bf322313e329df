#!/bin/bash
# Records tls13-0rtt.pcap: TLS 1.3 early data (0-RTT). nginx (`ssl_early_data on`, an ECDSA
# P-256 key) on loopback in a namespace of its own; `openssl s_client` makes a first
# connection (a full handshake, then `GET /` with `Connection: close`) and keeps its session,
# then a second one that resumes it and sends the same request as early data with the
# ClientHello. nginx answers each and closes. Timing decides how the second ends; the
# committed takes are two where nginx reset it without a FIN (found in 12 runs: a server RST
# in a connection with no server FIN): tls13-0rtt.pcap.gz (the client's EndOfEarlyData +
# Finished flight unread when nginx closed) and tls13-0rtt-alert.pcap.gz (that flight before
# the response, then the client's close_notify unread). Needs root, nginx, openssl, tcpdump.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ns=ndtls0rtt$$
d=$(mktemp -d /tmp/tls0rtt.XXXXXX)
NG= CAP=
cleanup() {
  [ -n "$CAP" ] && kill "$CAP" 2>/dev/null
  [ -n "$NG" ] && kill "$NG" 2>/dev/null
  wait 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$d"
}
trap cleanup EXIT INT TERM
mkdir -p "$d/www"
chmod 755 "$d" # nginx's workers (nobody) read the page
echo hello > "$d/www/index.html"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=localhost -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
printf 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' > "$d/req.txt"
cat > "$d/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 64; }
http {
  access_log off;
  ssl_certificate $d/cert.pem;
  ssl_certificate_key $d/key.pem;
  ssl_protocols TLSv1.3;
  ssl_early_data on;
  ssl_session_cache shared:S:1m;
  server { listen 127.0.0.1:9447 ssl; root $d/www; }
}
CONF
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" nginx -c "$d/nginx.conf" -p "$d" & NG=$!
sleep 1
ip netns exec "$ns" tcpdump --immediate-mode -U -i lo -s 600 -w "$d/tls13-0rtt.pcap" \
  "tcp port 9447" 2>/dev/null & CAP=$!
sleep 1
(cat "$d/req.txt"; sleep 0.5) | ip netns exec "$ns" openssl s_client -connect 127.0.0.1:9447 \
  -tls1_3 -sess_out "$d/sess.pem" -ign_eof -quiet 2>/dev/null | head -1
ip netns exec "$ns" openssl s_client -connect 127.0.0.1:9447 -tls1_3 -sess_in "$d/sess.pem" \
  -early_data "$d/req.txt" -ign_eof < /dev/null 2>/dev/null | grep -E "^Early data|^HTTP/"
sleep 1.5; kill "$CAP"; wait "$CAP" 2>/dev/null || true; CAP=
gzip -9c "$d/tls13-0rtt.pcap" > "$here/../tls13-0rtt.pcap.gz"
ls -la "$here/../tls13-0rtt.pcap.gz"

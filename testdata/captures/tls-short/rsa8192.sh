#!/bin/bash
# Records tls-rsa8192.pcap: a server slow in the TLS handshake. nginx with an RSA-8192 key
# (each handshake signs with it: ~25-30 ms of the server's CPU on the session-24 VM) on
# loopback in a namespace of its own, 8 curl with a new TLS 1.2 connection each, then 8 with
# TLS 1.3. Needs root, nginx, openssl, curl, tcpdump. KEY=/path/key.pem + CERT=... reuse a key
# (generating an 8192-bit one takes a minute or more).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ns=ndtlsrsa$$
d=$(mktemp -d /tmp/tlsrsa.XXXXXX)
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
head -c 2000 /dev/zero | tr '\0' a > "$d/www/page.html"
if [ -n "${KEY:-}" ]; then
  cp "$KEY" "$d/key.pem"; cp "$CERT" "$d/cert.pem"
else
  openssl req -x509 -newkey rsa:8192 -nodes -days 2 -subj /CN=localhost \
    -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
fi
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
  ssl_session_cache off;
  ssl_session_tickets off;
  server { listen 127.0.0.1:9442 ssl; ssl_protocols TLSv1.2; root $d/www; }
  server { listen 127.0.0.1:9443 ssl; ssl_protocols TLSv1.3; root $d/www; }
}
CONF
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" nginx -c "$d/nginx.conf" -p "$d" & NG=$!
sleep 1
ip netns exec "$ns" tcpdump --immediate-mode -U -i lo -s 200 -w "$d/tls-rsa8192.pcap" "tcp port 9442 or tcp port 9443" 2>/dev/null & CAP=$!
sleep 1
for port in 9442 9443; do
  echo "== port $port (connect tls ttfb total, s)"
  for _ in 1 2 3 4 5 6 7 8; do
    ip netns exec "$ns" curl -sk -o /dev/null -w "%{time_connect} %{time_appconnect} %{time_starttransfer} %{time_total}\n" "https://127.0.0.1:$port/page.html"
  done
done
sleep 0.5; kill "$CAP"; wait "$CAP" 2>/dev/null || true; CAP=
gzip -9c "$d/tls-rsa8192.pcap" > "$here/../tls-rsa8192.pcap.gz"
ls -la "$here/../tls-rsa8192.pcap.gz"

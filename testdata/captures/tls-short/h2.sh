#!/bin/bash
# Records tls-h2.pcap: HTTP/2 over TLS, multiplexed. nginx (`listen ... ssl http2`, an ECDSA
# P-256 key) on loopback in a namespace of its own; curl fetches 20 files of 3-60 KB over one
# connection with `-Z` (parallel, multiplexed): twice over TLS 1.2 (the ServerHello names h2),
# twice over TLS 1.3 (the choice is encrypted; the ClientHello's offer is all a capture shows),
# then once over TLS 1.3 with `--http1.1` (3 files, one kept connection: HTTP/1.1, nothing to
# say), once over TLS 1.3 to a TLS 1.2-only server (the handshake fails), and h2 offered to a
# TLS 1.2 server without HTTP/2 (2 files; its ServerHello names http/1.1). Needs root, nginx, openssl, curl, tcpdump. Snap length 600: the ClientHello whole.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ns=ndtlsh2$$
d=$(mktemp -d /tmp/tlsh2.XXXXXX)
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
for i in $(seq 1 20); do head -c $((i * 3000)) /dev/zero | tr '\0' a > "$d/www/f$i.html"; done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=localhost -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
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
  ssl_protocols TLSv1.2 TLSv1.3;
  server { listen 127.0.0.1:9444 ssl http2; root $d/www; }
  server { listen 127.0.0.1:9445 ssl http2; ssl_protocols TLSv1.2; root $d/www; }
  server { listen 127.0.0.1:9446 ssl; ssl_protocols TLSv1.2; root $d/www; }
}
CONF
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" nginx -c "$d/nginx.conf" -p "$d" & NG=$!
sleep 1
ip netns exec "$ns" tcpdump --immediate-mode -U -i lo -s 600 -w "$d/tls-h2.pcap" "tcp portrange 9444-9446" 2>"$d/tcpdump.err" & CAP=$!
sleep 1
urls=() outs=()
for i in $(seq 1 20); do urls+=("https://127.0.0.1:9444/f$i.html"); outs+=(-o /dev/null); done
fetch() {
  ip netns exec "$ns" curl -sk "$@" -w "%{http_version} %{num_connects}\n" \
    | sort | uniq -c
}
for tls in "--tls-max 1.2" "--tls-max 1.2" "--tlsv1.3" "--tlsv1.3"; do
  # shellcheck disable=SC2086
  fetch --http2 $tls -Z "${outs[@]}" "${urls[@]}"
  sleep 0.3
done
fetch --http1.1 --tlsv1.3 -o /dev/null -o /dev/null -o /dev/null "${urls[@]:0:3}"
# A handshake that fails (TLS 1.3 asked of a TLS 1.2-only server): h2 offered, nothing chosen.
fetch --http2 --tlsv1.3 -o /dev/null "https://127.0.0.1:9445/f1.html" || true
# h2 offered over TLS 1.2 to a server without it: its ServerHello names http/1.1.
fetch --http2 --tls-max 1.2 -o /dev/null -o /dev/null https://127.0.0.1:9446/f1.html https://127.0.0.1:9446/f2.html
sleep 1.5; kill "$CAP"; wait "$CAP" 2>/dev/null || true; CAP=
cat "$d/tcpdump.err" >&2
gzip -9c "$d/tls-h2.pcap" > "$here/../tls-h2.pcap.gz"
ls -la "$here/../tls-h2.pcap.gz"

#!/usr/bin/env bash
# Regenerates the committed test captures (see README.md in this folder).
# Needs root, nginx (Debian nginx-light 1.22), wrk, tcpdump, editcap (wireshark-common), python3.
# All traffic stays on loopback; every process started here is stopped by its PID on exit.
set -euo pipefail

out="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d /tmp/netdoctor-captures.XXXXXX)"
pids=()

cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    if [[ -f "$work/nginx.pid" ]]; then kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

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
    # ready signal: tcpdump says "listening on" once the socket and filter are set (bounded wait)
    for _ in $(seq 1 200); do grep -q "listening on" "$work/td.err" 2>/dev/null && break; sleep 0.05; done
    grep -q "listening on" "$work/td.err"
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
ls -l "$out"

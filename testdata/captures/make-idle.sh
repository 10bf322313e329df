#!/usr/bin/env bash
# Real traffic between two network namespaces for a server's idle (keep-alive) timeout that
# is shorter than the client's wait before it reuses a connection, and its look-alikes:
#   idle-timeout.pcap.gz   nginx `keepalive_timeout 1s`; the client keeps a pool of 3
#                          connections and writes one request every 0.5 s round-robin (each
#                          connection idles 1.5 s between its requests): nginx closes each one
#                          1 s after its answer, and the client opens a new one.
#   idle-reuse-ok.pcap.gz  the same nginx, the client's gap 0.3 s (pool of 3, every 0.1 s):
#                          connections are reused, nothing to tell.
#   idle-client-close.pcap.gz  nginx keeps connections (75 s); the client closes each one
#                          itself after its answer (its FIN first).
#   idle-server-close.pcap.gz  nginx `keepalive_timeout 0` (it answers with
#                          `Connection: close` and closes at once); the pooled client.
#   idle-lb-reset.pcap.gz  a server that resets (SO_LINGER 0) a connection idle for 1 s, as a
#                          load balancer or NAT does; the pooled client as in idle-timeout.
#   idle-midway.pcap.gz    idle-timeout's capture without its first 60 packets (a capture
#                          that starts mid-way: its first connections have no handshake).
# Look-alikes of idle-lb-reset (resets that are not an idle timeout, and its harm):
#   idle-stall-reset.pcap.gz  a proxy that times out a stalled response: the server sends
#                          the header and 200 of 600 body bytes, then resets 1 s later.
#   idle-crash.pcap.gz     a server (one forked process per connection) that dies
#                          mid-response with the client's pipelined second request unread:
#                          its kernel resets.
#   idle-vary-reset.pcap.gz  resets after a silence drawn from 0.3-1.3 s (no timer).
#   idle-linger0.pcap.gz   a reset right after each answer (SO_LINGER 0 at close).
#   idle-client-linger0.pcap.gz  nginx keeps connections (75 s); the client resets each one
#                          (SO_LINGER 0 at close) right after reading its complete answer.
#   idle-noanswer.pcap.gz  a server that reads each request and resets (SO_LINGER 0) without
#                          answering it: a failed request, not an abortive close after one.
# Who asked for the close (short connections):
#   idle-conn-close.pcap.gz  nginx keeps connections (75 s); the client's requests carry
#                          `Connection: close`, so nginx closes (its FIN first) after each answer.
#   idle-http10.pcap.gz    the same with HTTP/1.0 requests without keep-alive.
#   idle-conn-close-snap.pcap.gz  idle-conn-close cut to 90 bytes a packet (a small snap
#                          length): the request header ends before its `Connection:` line.
# Answers complete by their framing other than `Content-Length` (RFC 9112 §6.3), reset by the
# same 1 s idle timer as idle-lb-reset, and their look-alikes:
#   idle-chunked-lb-reset.pcap.gz  chunked answers (two 200-byte chunks with the header,
#                          the third in its own segment, then the `0` chunk in its own);
#                          captured whole (snap length 0, as the two chunked ones below).
#   idle-head-lb-reset.pcap.gz  HEAD requests: the answer's header says `Content-Length:
#                          600` and no body follows.
#   idle-204-lb-reset.pcap.gz  `204 No Content` answers (every other one a `304 Not
#                          Modified` with a `Content-Length`), no body.
#   idle-chunked-stall.pcap.gz  a chunked answer that stalls after its first chunk, reset
#                          1 s later (a proxy timing out a stalled answer).
#   idle-chunked-snap.pcap.gz  idle-chunked-lb-reset cut to 256 bytes a packet (the other
#                          captures' snap length): the second chunk's size line is past it,
#                          the capture cannot tell the end.
# Abortive closes with a next request lost:
#   idle-linger0-pipe.pcap.gz  the client pipelines two requests in one segment; the
#                          server answers the first whole and resets (SO_LINGER 0 at close).
#   idle-linger0-next.pcap.gz  the server answers, resets 20 ms later (SO_LINGER 0); the
#                          client writes its next request at once after reading the answer.
#   idle-lb-drop.pcap.gz   as idle-lb-reset, but the idle reset (RST+ACK) towards the client is dropped in
#                          the server's namespace (a load balancer that forgets idle
#                          connections silently): the client's next request on the connection
#                          gets a reset with no ACK, and the client retries on a new one.
# Captured on the client's veth with tcpdump. Needs root, iproute2, tcpdump, editcap, nginx,
# gzip and /usr/bin/python3. Creates namespaces nd-idle-c<pid> and nd-idle-s<pid> joined by a
# veth pair, removes them (and stops every process it started, by PID) on exit. The root
# namespace is not touched. Ports 19701-19705, 19710-19718,
# 19720-19726.
# NS_PREFIX (default nd-idle) names the namespaces; nft is needed for idle-lb-drop.
# Usage: ./make-idle.sh [NAME...]   (only these captures, e.g. idle-crash; default: all)
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
C="${NS_PREFIX:-nd-idle}-c$$"
S="${NS_PREFIX:-nd-idle}-s$$"
lab_begin nd-idle-lab
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndidle-c ndidle-s 10.79.0.1 10.79.0.2

# nginx on `port` with `keepalive_timeout` `ka` (its process is started in the foreground
# and stopped by PID).
nginx_conf() { # port ka
    mkdir -p "$work/ngx$1"
    cat >"$work/ngx$1/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process off;
pid $work/ngx$1/nginx.pid;
error_log $work/ngx$1/error.log;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $work/ngx$1; proxy_temp_path $work/ngx$1;
    fastcgi_temp_path $work/ngx$1; uwsgi_temp_path $work/ngx$1; scgi_temp_path $work/ngx$1;
    keepalive_timeout $2;
    server { listen 10.79.0.2:$1; location / { return 200 "$(printf 'x%.0s' $(seq 1 600))"; } }
}
EOF
}

# A server that answers at once and resets a connection idle for `idle` s (SO_LINGER 0).
cat >"$work/rst.py" <<'PY'
import os, random, select, socket, struct, sys, threading, time
port, idle = int(sys.argv[1]), float(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "idle"
random.seed(7)
msg = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 600\r\n\r\n" + b"x" * 600
chunk = b"c8\r\n" + b"x" * 200 + b"\r\n"
chunked_head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
nocontent = [b"HTTP/1.1 204 No Content\r\nServer: idle\r\n\r\n",
             b"HTTP/1.1 304 Not Modified\r\nETag: \"7\"\r\nContent-Length: 600\r\n\r\n"]
answers = 0
def answer(c, req):
    # The answer of `mode` to one request (its header `req`).
    global answers
    answers += 1
    if mode == "chunkstall":
        c.sendall(chunked_head + chunk)
        time.sleep(idle)
        return rst(c)
    if mode == "chunked":
        c.sendall(chunked_head + chunk + chunk)
        time.sleep(0.002)
        c.sendall(chunk)
        time.sleep(0.002)
        c.sendall(b"0\r\n\r\n")
    elif mode == "head":
        c.sendall(msg[:msg.index(b"\r\n\r\n") + 4])
    elif mode == "nocontent":
        c.sendall(nocontent[answers % 2])
    else:
        c.sendall(msg)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.79.0.2", port))
s.listen(64)
def rst(c):
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()
def crash(c):
    # Reads the first request's header only (the pipelined one stays unread), answers part
    # of it and dies: the kernel resets a socket closed with unread data.
    got = b""
    while b"\r\n\r\n" not in got:
        got += c.recv(1)
    c.sendall(msg[:len(msg) - 400])
    time.sleep(0.02)
    os._exit(1)
def serve(c):
    if mode == "noanswer":
        # The request is read whole, then the connection is reset without an answer.
        got = b""
        while b"\r\n\r\n" not in got:
            got += c.recv(65536)
        return rst(c)
    if mode == "stall":
        c.recv(65536)
        c.sendall(msg[:len(msg) - 400])
        time.sleep(idle)
        return rst(c)
    buf = b""
    while True:
        wait = random.uniform(0.3, 1.3) if mode == "vary" else idle
        r, _, _ = select.select([c], [], [], wait)
        if not r:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
            return
        d = c.recv(65536)
        if not d:
            c.close()
            return
        buf += d
        while b"\r\n\r\n" in buf:
            req, buf = buf.split(b"\r\n\r\n", 1)
            if answer(c, req) is not None or mode == "chunkstall":
                return
            if mode == "linger0":
                return rst(c)
            if mode == "linger-late":
                time.sleep(0.02)
                return rst(c)

while True:
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == "crash":
        if os.fork() == 0:
            s.close()
            crash(c)
        c.close()
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pass
        continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
# The client: `n` requests, one every `interval` s round-robin over a pool of `pool`
# connections; a connection the server closed (readable before the request) is replaced by a
# new one. `close`: the client closes each connection itself after its answer.
cat >"$work/cli.py" <<'PY'
import select, socket, struct, sys, time
mode, port, pool, interval, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
req = b"GET /%d HTTP/1.1\r\nHost: 10.79.0.2\r\nUser-Agent: idle\r\n\r\n"
if mode == "cclose":
    req = b"GET /%d HTTP/1.1\r\nHost: 10.79.0.2\r\nUser-Agent: idle\r\nConnection: close\r\n\r\n"
if mode == "http10":
    req = b"GET /%d HTTP/1.0\r\nHost: 10.79.0.2\r\nUser-Agent: idle\r\n\r\n"
if mode == "head":
    req = b"HEAD /%d HTTP/1.1\r\nHost: 10.79.0.2\r\nUser-Agent: idle\r\n\r\n"
def read_resp(c):
    # True when the whole answer came.
    got = b""
    while b"\r\n\r\n" not in got:
        d = c.recv(65536)
        if not d:
            return False
        got += d
    head, body = got.split(b"\r\n\r\n", 1)
    if mode == "head" or head.split(b" ")[1] in (b"204", b"304"):
        return True
    if b"transfer-encoding: chunked" in head.lower():
        while not body.endswith(b"0\r\n\r\n"):
            d = c.recv(65536)
            if not d:
                return False
            body += d
        return True
    cl = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    want = int(cl[0].split(b":")[1]) if cl else 0
    while len(body) < want:
        d = c.recv(65536)
        if not d:
            return False
        body += d
    return True
def exchange(c, k):
    try:
        c.sendall(req % k if mode != "pipe" else (req % k) * 2)
        return read_resp(c)
    except OSError:
        return False
def connect():
    c = socket.create_connection(("10.79.0.2", port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c
conns = [None] * pool
for k in range(n):
    i = k % pool
    c = conns[i]
    if c is not None and select.select([c], [], [], 0)[0]:
        try:
            c.recv(1)
        except OSError:
            pass
        c.close()
        c = None
    if c is None:
        c = connect()
    if not exchange(c, k) and mode == "pool":
        # The pooled connection was dead: an error, then the request again on a new one.
        print("request %d failed on a reused connection; retried" % k, file=sys.stderr)
        c.close()
        c = connect()
        exchange(c, k)
    if mode == "next":
        # The next request at once: the server's reset (20 ms after its answer) meets it.
        exchange(c, k)
    if mode == "linger0":
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    if mode in ("close", "pipe", "linger0", "cclose", "http10", "next"):
        c.close()
        c = None
    conns[i] = c
    time.sleep(interval)
time.sleep(1.5)
for c in conns:
    if c is not None:
        c.close()
PY

only=("$@")
want() { # name: asked for on the command line (or nothing asked)
    local n
    [ "${#only[@]}" -eq 0 ] && return 0
    for n in "${only[@]}"; do [ "$n" = "$1" ] && return 0; done
    return 1
}

run() { # name port server-cmd... -- client-mode pool interval n
    local name=$1 port=$2
    want "$name" || return 0
    shift 2
    local srv=()
    while [ "$1" != "--" ]; do srv+=("$1"); shift; done
    shift
    ip netns exec "$S" "${srv[@]}" &
    local sp=$!
    pids+=($sp)
    ip netns exec "$C" tcpdump -U -s "${SNAP:-256}" -i ndidle-c -w "$work/$name.pcap" "tcp port $port" 2>/dev/null &
    local cap=$!
    pids+=($cap)
    for _ in $(seq 1 100); do
        ip netns exec "$S" ss -ltn | grep -q ":$port " && break
        sleep 0.02
    done
    for _ in $(seq 1 100); do
        [ -s "$work/$name.pcap" ] && break
        sleep 0.02
    done
    sleep 1
    timeout 60 ip netns exec "$C" /usr/bin/python3 "$work/cli.py" "$@"
    sleep 0.3
    kill -INT "$cap"
    wait "$cap" || true
    kill "$sp" 2>/dev/null || true
    wait "$sp" 2>/dev/null || true
    gzip -9n <"$work/$name.pcap" >"$out/$name.pcap.gz"
}
nginx_conf 19701 1s
nginx_conf 19702 1s
nginx_conf 19703 75s
nginx_conf 19704 0
nginx_conf 19715 75s
nginx_conf 19717 75s
nginx_conf 19718 75s
nft_drop_rst() { # port: the server's namespace drops the resets it sends from port
    ip netns exec "$S" nft add table inet ndidle
    ip netns exec "$S" nft add chain inet ndidle out '{ type filter hook output priority 0; }'
    ip netns exec "$S" nft add rule inet ndidle out tcp sport "$1" 'tcp flags & (rst | ack) == rst | ack' drop
}
run idle-timeout 19701 nginx -c "$work/ngx19701/nginx.conf" -- pool 19701 3 0.5 15
run idle-reuse-ok 19702 nginx -c "$work/ngx19702/nginx.conf" -- pool 19702 3 0.1 30
run idle-client-close 19703 nginx -c "$work/ngx19703/nginx.conf" -- close 19703 3 0.2 10
run idle-server-close 19704 nginx -c "$work/ngx19704/nginx.conf" -- pool 19704 3 0.2 10
run idle-lb-reset 19705 /usr/bin/python3 "$work/rst.py" 19705 1.0 -- pool 19705 3 0.5 15
run idle-stall-reset 19710 /usr/bin/python3 "$work/rst.py" 19710 1.0 stall -- close 19710 3 0.5 10
run idle-crash 19711 /usr/bin/python3 "$work/rst.py" 19711 1.0 crash -- pipe 19711 3 0.3 10
run idle-vary-reset 19712 /usr/bin/python3 "$work/rst.py" 19712 1.0 vary -- pool 19712 3 0.5 15
run idle-linger0 19713 /usr/bin/python3 "$work/rst.py" 19713 1.0 linger0 -- pool 19713 3 0.3 10
run idle-client-linger0 19715 nginx -c "$work/ngx19715/nginx.conf" -- linger0 19715 3 0.2 10
run idle-noanswer 19716 /usr/bin/python3 "$work/rst.py" 19716 1.0 noanswer -- close 19716 3 0.2 10
run idle-conn-close 19717 nginx -c "$work/ngx19717/nginx.conf" -- cclose 19717 3 0.2 10
run idle-http10 19718 nginx -c "$work/ngx19718/nginx.conf" -- http10 19718 3 0.2 10
SNAP=0 run idle-chunked-lb-reset 19720 /usr/bin/python3 "$work/rst.py" 19720 1.0 chunked -- pool 19720 3 0.5 15
run idle-head-lb-reset 19721 /usr/bin/python3 "$work/rst.py" 19721 1.0 head -- head 19721 3 0.5 15
run idle-204-lb-reset 19722 /usr/bin/python3 "$work/rst.py" 19722 1.0 nocontent -- pool 19722 3 0.5 15
SNAP=0 run idle-chunked-stall 19723 /usr/bin/python3 "$work/rst.py" 19723 1.0 chunkstall -- close 19723 3 0.5 10
run idle-linger0-pipe 19724 /usr/bin/python3 "$work/rst.py" 19724 1.0 linger0 -- pipe 19724 3 0.3 10
run idle-linger0-next 19725 /usr/bin/python3 "$work/rst.py" 19725 1.0 linger-late -- next 19725 3 0.3 10
if want idle-lb-drop; then nft_drop_rst 19714; fi
run idle-lb-drop 19714 /usr/bin/python3 "$work/rst.py" 19714 1.0 -- pool 19714 3 0.5 15
if want idle-conn-close-snap; then
    gunzip -c "$out/idle-conn-close.pcap.gz" >"$work/cc.pcap"
    editcap -s 90 "$work/cc.pcap" "$work/cc-snap.pcap"
    gzip -9n <"$work/cc-snap.pcap" >"$out/idle-conn-close-snap.pcap.gz"
fi
if want idle-chunked-snap; then
    gunzip -c "$out/idle-chunked-lb-reset.pcap.gz" >"$work/ch.pcap"
    editcap -s 256 "$work/ch.pcap" "$work/ch-snap.pcap"
    gzip -9n <"$work/ch-snap.pcap" >"$out/idle-chunked-snap.pcap.gz"
fi
if want idle-midway; then
    gunzip -c "$out/idle-timeout.pcap.gz" >"$work/full.pcap"
    editcap -r "$work/full.pcap" "$work/midway.pcap" 61-100000
    gzip -9n <"$work/midway.pcap" >"$out/idle-midway.pcap.gz"
fi
echo "wrote ${only[*]:-every capture} (.pcap.gz) in $out"

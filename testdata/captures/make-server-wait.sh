#!/usr/bin/env bash
# A server's wait that is not its work, and the client's wait that is not the server's (session
# 30, s30a; found by s29d), on real traffic between two network namespaces, captured next to
# the client:
#   longpoll.pcap.gz       a long poll: the server holds each GET 1.5 s on purpose (3 keep-alive
#                          connections, 2 GETs each): the same wait every time, a timer.
#   longpoll-two.pcap.gz   the same server, 2 GETs only: too few to call it a timer.
#   slow-varied.pcap.gz    the look-alike: a slow handler, 1.10-1.80 s, different every time
#                          (same connections and GETs as longpoll).
#   expect-ignored.pcap.gz curl POSTs 3000 bytes 5 times with `Expect: 100-continue` to a
#                          server that never answers 100: curl waits its 1 s expect timeout
#                          before it sends each body.
#   expect-100.pcap.gz     the look-alike: the server answers 100 Continue, curl sends at once.
# Needs root, iproute2, tcpdump, curl and /usr/bin/python3. Creates namespaces nds<pid>c and
# nds<pid>s joined by a veth pair, removes them (and stops every process it started, by PID)
# on exit. The root namespace is not touched. Usage: ./make-server-wait.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin nds-wait
C="nds$$c"
S="nds$$s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndw-c ndw-s 10.79.3.1 10.79.3.2 gso1

cat >"$work/srv.py" <<'PY'
import socket, sys, threading, time
port = int(sys.argv[1])
mode = sys.argv[2]
# The slow handler's times, one per request in arrival order: different every time.
varied = [1.10, 1.55, 1.25, 1.80, 1.35, 1.20]
served = [0]
lock = threading.Lock()
def head(c, buf):
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            return None, buf
        buf += d
    h, _, rest = buf.partition(b"\r\n\r\n")
    return h.decode("latin1").lower(), rest
def length(h):
    for l in h.split("\r\n")[1:]:
        k, _, v = l.partition(":")
        if k.strip() == "content-length":
            return int(v)
    return 0
def conn(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.settimeout(20)
    buf = b""
    try:
        while True:
            h, buf = head(c, buf)
            if h is None:
                return
            n = length(h)
            if mode == "expect-100" and "expect: 100-continue" in h:
                c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            while len(buf) < n:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            buf = buf[n:]
            if mode == "longpoll":
                time.sleep(1.5)
                body = b'{"events":[]}\n'
            elif mode == "varied":
                with lock:
                    k = served[0]
                    served[0] += 1
                time.sleep(varied[k % len(varied)])
                body = b'{"items":[1,2,3]}\n'
            else:
                body = b"stored\n"
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d"
                      b"\r\n\r\n%s" % (len(body), body))
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port))
s.listen(16)
s.settimeout(1)
print("ready", flush=True)
deadline = time.time() + 60
while time.time() < deadline:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    threading.Thread(target=conn, args=(c,), daemon=True).start()
PY
head -c 3000 /dev/zero | tr '\0' 'a' >"$work/body"

# capture FILE PORT MODE CMD...: the server in S, tcpdump at the client while CMD runs in C.
capture() {
    local file="$1" port="$2" mode="$3"
    shift 3
    local fifo="$work/srv-$port"
    mkfifo "$fifo"
    ip netns exec "$S" /usr/bin/python3 "$work/srv.py" "$port" "$mode" >"$fifo" &
    local srv=$!
    pids+=("$srv")
    read -r _ <"$fifo"
    ip netns exec "$C" tcpdump -U --immediate-mode -i ndw-c -s 400 -c 400 \
        -w "$work/$file" "tcp port $port" 2>"$work/td-$port.err" &
    local td=$!
    pids+=("$td")
    for _ in $(seq 1 200); do grep -q "listening on" "$work/td-$port.err" 2>/dev/null && break; sleep 0.05; done
    "$@"
    sleep 0.3
    kill -INT "$td" 2>/dev/null || true
    wait "$td" || true
    kill "$srv" 2>/dev/null || true
    gzip -9 -n -c "$work/$file" >"$out/$file.gz"
    echo "$file.gz: $(tcpdump -r "$work/$file" 2>/dev/null | wc -l) packets"
}
# GETS PORT N: N keep-alive connections at once, 2 GETs each.
gets() {
    local port=$1 n=$2 k cl=()
    for k in $(seq 1 "$n"); do
        ip netns exec "$C" timeout 20 curl -s -o /dev/null -o /dev/null \
            "http://10.79.3.2:$port/poll?k=$k" "http://10.79.3.2:$port/poll?k=$k" &
        cl+=($!)
        sleep 0.05
    done
    for k in "${cl[@]}"; do wait "$k"; done
}
posts() {
    local url="http://10.79.3.2:$1/upload"
    ip netns exec "$C" timeout 20 curl -s -H 'Expect: 100-continue' --expect100-timeout 1 \
        --data-binary @"$work/body" -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
        -o /dev/null "$url" "$url" "$url" "$url" "$url"
}
capture longpoll.pcap 18611 longpoll gets 18611 3
capture longpoll-two.pcap 18612 longpoll gets 18612 1
capture slow-varied.pcap 18613 varied gets 18613 3
capture expect-ignored.pcap 18614 expect-ignored posts 18614
capture expect-100.pcap 18615 expect-100 posts 18615

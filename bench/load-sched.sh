#!/usr/bin/env bash
# Where the load threads and the server wait: `perf sched record` (software tracepoints only)
# of one run of each tool against nginx on loopback (one worker, the page and settings of
# load-vs-peers), then, per thread: time running, runnable (woken or preempted, waiting for a
# CPU), sleeping, and the mean time from its wake-up to running; and the time share of each
# joint state of nginx and the client's two busiest threads (R = running, on CPU N; W =
# runnable, not running; S = sleeping). E.g. "nginx:S load-0:W load-1:R1" is the server
# starved of requests while a load thread that has responses to read waits for a CPU.
#
# Usage: bench/load-sched.sh
#   env: DURATION=3s CONNECTIONS=100 THREADS=2 PORT=18095 NETDOCTOR=/path/to/netdoctor
#        ND_ARGS="--no-pin-threads" (flags for `netdoctor load`) TOOLS="wrk nd" TOP=12
# The first and last 0.25 s of each trace (start-up, the drain) are left out. Needs root (perf
# sched record traces every CPU), perf (linux-perf), nginx, wrk, python3.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DURATION=${DURATION:-3s}
CONNECTIONS=${CONNECTIONS:-100}
THREADS=${THREADS:-2}
PORT=${PORT:-18095}
TOOLS=${TOOLS:-wrk nd}
TOP=${TOP:-12}
for t in perf nginx wrk python3; do need "$t"; done
netdoctor_binary /tmp/target-netdoctor-load
if ss -Hltn "sport = :$PORT" | grep -q .; then echo "127.0.0.1:$PORT is in use (PORT=...)" >&2; exit 2; fi

DIR=$(mktemp -d /tmp/load-sched.XXXXXX)
NGINX_PID=
cleanup() { stop_pid "$NGINX_PID"; rm -rf "$DIR"; }
trap cleanup EXIT INT TERM
chmod 755 "$DIR"
mkdir -p "$DIR/html" "$DIR/tmp"
if [[ -f /var/www/html/index.nginx-debian.html ]]; then
    cp /var/www/html/index.nginx-debian.html "$DIR/html/index.html"
else
    head -c 614 /dev/zero | tr '\0' 'x' >"$DIR/html/index.html"; echo >>"$DIR/html/index.html"
fi
chmod 644 "$DIR/html/index.html"
cat >"$DIR/nginx.conf" <<CONF
daemon off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid $DIR/nginx.pid;
error_log $DIR/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $DIR/tmp/body;
    proxy_temp_path $DIR/tmp/proxy;
    fastcgi_temp_path $DIR/tmp/fastcgi;
    uwsgi_temp_path $DIR/tmp/uwsgi;
    scgi_temp_path $DIR/tmp/scgi;
    default_type text/html;
    sendfile on;
    tcp_nopush off;
    keepalive_timeout 65;
    server { listen 127.0.0.1:$PORT backlog=4096; tcp_nodelay on; root $DIR/html; index index.html; }
}
CONF
nginx -e "$DIR/error.log" -p "$DIR" -c "$DIR/nginx.conf" &
NGINX_PID=$!
for _ in $(seq 100); do [[ -s $DIR/nginx.pid ]] && break; sleep 0.05; done
[[ -s $DIR/nginx.pid ]] || { cat "$DIR/error.log" >&2; echo "nginx did not start" >&2; exit 2; }
URL="http://127.0.0.1:$PORT/"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; -c $CONNECTIONS -t $THREADS -d $DURATION"

for t in $TOOLS; do
    case $t in
        wrk) cmd=(wrk -c "$CONNECTIONS" -t "$THREADS" -d "$DURATION" "$URL") ;;
        # shellcheck disable=SC2206 # ND_ARGS is a list of flags
        nd) cmd=("$NETDOCTOR" load ${ND_ARGS:-} -c "$CONNECTIONS" -t "$THREADS" -d "$DURATION" "$URL") ;;
        *) echo "unknown tool $t (wrk, nd)" >&2; exit 2 ;;
    esac
    perf sched record -o "$DIR/$t.data" -- "${cmd[@]}" >"$DIR/$t.out" 2>&1 || { cat "$DIR/$t.out" >&2; exit 1; }
    echo
    echo "== $t: ${cmd[*]}"
    grep -E '^Requests/sec|threads (pinned|left)' "$DIR/$t.out" || true
    perf script -i "$DIR/$t.data" 2>/dev/null | python3 -c '
import collections, re, sys
top = int(sys.argv[1])
rx = re.compile(r"\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)")
ev = [(float(m.group(2)), m.group(1), m.group(3), m.group(4)) for m in map(rx.search, sys.stdin) if m]
ev.sort(key=lambda e: e[0])
ours = lambda c: c.startswith(("load-", "wrk", "nginx"))
name = {}
for _, _, e, a in ev:
    if e == "sched_switch":
        for c, p in re.findall(r"(?:prev|next)_comm=(.*?) (?:prev|next)_pid=(\d+)", a):
            if ours(c):
                name[p] = c
switches = [t for t, _, e, _ in ev if e == "sched_switch"]
if not switches or not name:
    sys.exit("no scheduler events of nginx or the client in the trace")
t0, t1 = switches[0] + 0.25, switches[-1] - 0.25
state, since, woke, cpu = {}, {}, {}, {}
oncpu, cpu_since, cpu_time = {}, {}, collections.Counter()
run, runnable, sleep, wakes, wlat, ins = (collections.Counter() for _ in range(6))
joint = collections.Counter()
def key(order):
    return " ".join(f"{name[p]}:{state.get(p, chr(83))}{cpu.get(p, chr(63)) if state.get(p) == chr(82) else chr(32)}".rstrip() for p in order)
order = None
last = None
for t, c, e, a in ev:
    if order is None and t >= t0:
        busy = collections.Counter()
        for tt, _, ee, aa in ev:
            m = re.search(r"prev_pid=(\d+)", aa) if ee == "sched_switch" else None
            if m and m.group(1) in name:
                busy[m.group(1)] += 1
        nginx = [p for p in name if name[p].startswith("nginx")][:1]
        clients = [p for p, _ in busy.most_common() if not name[p].startswith("nginx")][:2]
        order = nginx + sorted(clients, key=lambda p: name[p])
    if last is not None and order is not None and t0 <= t <= t1:
        joint[key(order)] += t - max(last, t0)
    last = t
    def account(p, now):
        if p in since and t0 <= now <= t1:
            d = now - max(since[p], t0)
            {"R": run, "W": runnable, "S": sleep}[state[p]][p] += d
        since[p] = now
    if e == "sched_waking":
        p = re.search(r"pid=(\d+)", a).group(1)
        if p in name and state.get(p) == "S":
            account(p, t); state[p] = "W"; woke[p] = t
    elif e == "sched_switch":
        m = re.search(r"prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=.*? next_pid=(\d+)", a)
        pp, ps, np_ = m.groups()
        if c in cpu_since and t0 <= t <= t1:
            kind = "idle" if pp == "0" else "ours" if pp in name else "other"
            cpu_time[(c, kind)] += t - max(cpu_since[c], t0)
        cpu_since[c] = t
        if pp in name:
            account(pp, t); state[pp] = "W" if ps.startswith("R") else "S"
        if np_ in name:
            account(np_, t)
            if np_ in woke and t0 <= t <= t1:
                wakes[np_] += 1; wlat[np_] += t - woke.pop(np_)
            woke.pop(np_, None)
            state[np_] = "R"; cpu[np_] = c.lstrip("0") or "0"
            if t0 <= t <= t1:
                ins[np_] += 1
span = t1 - t0
print(f"  {span * 1000:.0f} ms traced; per thread, % of that time:")
print(f"  {chr(32) * 14} {chr(32)}running  runnable  sleeping  on-CPU spells  wake-ups  wake-up to running (mean us)")
for p in sorted(name, key=lambda p: (not name[p].startswith("nginx"), name[p], p)):
    if ins[p] == 0 and run[p] == 0:
        continue
    w = wakes[p]
    print(f"  {name[p] + chr(58) + p:14} {100 * run[p] / span:8.1f} {100 * runnable[p] / span:9.1f} {100 * sleep[p] / span:9.1f} {ins[p]:14d} {w:9d} {1e6 * wlat[p] / w if w else 0:10.1f}")
cpus = sorted({k[0] for k in cpu_time})
print("  per CPU, % idle / ours (nginx, client) / other tasks: " + ", ".join(
    f"CPU {c.lstrip(chr(48)) or chr(48)} {100 * cpu_time[(c, chr(105) + chr(100) + chr(108) + chr(101))] / span:.1f} / {100 * cpu_time[(c, chr(111) + chr(117) + chr(114) + chr(115))] / span:.1f} / {100 * cpu_time[(c, chr(111) + chr(116) + chr(104) + chr(101) + chr(114))] / span:.1f}"
    for c in cpus))
tot = sum(joint.values())
print(f"  joint states (nginx and the two busiest client threads), top {top}:")
for k, v in joint.most_common(top):
    print(f"  {100 * v / tot:6.1f} %  {k}")
' "$TOP"
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

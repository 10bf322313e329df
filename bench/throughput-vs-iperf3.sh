#!/usr/bin/env bash
# bench/throughput-vs-iperf3.sh: `netdoctor throughput` against iperf3 (and trafgen for packet
# rate), in the same run, on a veth pair between two namespaces this script makes and on
# loopback. Prints one line per measurement and the ratios.
#   TCP: Gbit/s and CPU seconds per GB (both ends, from each tool's own cpu_utilization_percent)
#        for 1 and 4 streams; the peers alternate which goes first. Each round also prints the
#        client's and server's share of that CPU, the host's ksoftirqd CPU per GB (softirq work
#        the transfer caused that neither tool's own figure counts), all CPUs' busy time per GB
#        (/proc/stat; the whole cost of the transfer, but only on a quiet machine) and the
#        sender's retransmits; after the rounds, each tool's figures round by round, so a tool
#        that gets slower from round to round shows. ALONE=1 runs each tool's rounds back to
#        back (all of one tool, then all of the other) instead of alternating. PIN=1 pins every
#        client to CPU 0 and every server to CPU 1 (taskset), the layout iperf3 3.12's one thread
#        per side gets on an idle 2-CPU machine, so a difference that comes from where our
#        threads run shows. netdoctor runs a thread per TCP stream by default; THREADS="1 2"
#        adds netdoctor -T 1 and -T 2 (the streams of a side sharing that many threads; -T 1 is
#        iperf3 3.12's layout) as tools of their own in every round, each with its own ratios
#        to iperf3 (PER_STREAM=1 adds -T P, which is now the default's layout). Each round's
#        line says how many CPUs the two processes kept busy (Gbit/s x CPU s/GB / 8): at the
#        machine's CPU count a tool is CPU-bound and its CPU per GB is the CPUs / its rate.
#   UDP packet rate, 64-byte payloads, one sending thread: our --pps max (GSO, and --no-gso) vs
#        iperf3 -u -l 64 -b 0 vs trafgen (veth only), packets/s counted at the receiving interface
#        (and by the tools). The sending veth has UDP segmentation offload turned off (as most
#        NICs lack it), so GSO messages cross it as separate datagrams.
#   More tools in every round, each with its own ratios to iperf3: BEFORE=path adds another
#        netdoctor binary (e.g. main's, to compare before and after in the same run); ZEROCOPY=1
#        adds netdoctor -Z (sendfile from a memfd instead of write); IPERF_Z=1 adds iperf3 -Z;
#        LOWAT=bytes (e.g. 256K) adds netdoctor --notsent-lowat bytes (the senders'
#        TCP_NOTSENT_LOWAT).
#   NS=prefix names the namespaces (default ndthru), PORT_BASE/PORT_SPAN the TCP ports drawn
#        (default 15500 + 0..399), so helpers sharing the machine do not collide.
# Needs root, iperf3, netsniff-ng (trafgen; run with --no-sock-mem --notouch-irq so it leaves
# the host's socket-memory sysctls and IRQ affinity alone). Removes its namespaces and
# processes on exit.
set -euo pipefail
ND=${ND:-$(dirname "$0")/../target/release/netdoctor}
T=${T:-5}
A=${NS:-ndthru}A$$ B=${NS:-ndthru}B$$
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -f /tmp/ndthru-time.$$
}
trap cleanup EXIT INT TERM
command -v iperf3 >/dev/null || { echo "skipped: needs iperf3 (apt-get install iperf3)"; exit 0; }
[ -x "$ND" ] || { echo "build first: cargo build --release -p netdoctor (or ND=path)"; exit 2; }

ip netns add "$A"; ip netns add "$B"
ip link add vA netns "$A" type veth peer name vB netns "$B"
ip -n "$A" addr add 10.77.0.1/24 dev vA; ip -n "$B" addr add 10.77.0.2/24 dev vB
# vA without UDP segmentation offload, like most NICs: netdoctor's GSO messages are cut into
# separate datagrams before the veth, so vB's rx_packets counts datagrams, not messages.
ip netns exec "$A" ethtool -K vA tx-udp-segmentation off >/dev/null 2>&1 ||
  echo "note: ethtool -K vA tx-udp-segmentation off failed: vB counts netdoctor's GSO messages, not datagrams" >&2
ip -n "$A" link set vA up; ip -n "$B" link set vB up
ip -n "$A" link set lo up; ip -n "$B" link set lo up

# cpu_ticks -> "ksoftirqd_ticks busy_ticks": CPU time of every ksoftirqd thread, and all CPUs'
# user+nice+system+irq+softirq time (/proc/stat), in clock ticks.
cpu_ticks() {
  local k=0 p
  for p in $(pgrep -x 'ksoftirqd/[0-9]+'); do k=$((k + $(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0))); done
  echo "$k $(awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat)"
}
HZ=$(getconf CLK_TCK)

# run_tcp WHERE TOOL STREAMS -> "gbps cpu_s_per_gb client_s_per_gb server_s_per_gb
#   ksoftirqd_s_per_gb host_busy_s_per_gb retransmits"
# Both tools' servers are started afresh for each run (-1: one test, then exit).
run_tcp() {
  local where=$1 tool=$2 p=$3 port=$((${PORT_BASE:-15500} + RANDOM % ${PORT_SPAN:-400})) srvns="" clins="" host=127.0.0.1
  if [ "$where" = veth ]; then srvns="ip netns exec $B"; clins="ip netns exec $A"; host=10.77.0.2; fi
  if [ -n "${PIN:-}" ]; then srvns="$srvns taskset -c 1"; clins="$clins taskset -c 0"; fi
  local out=/tmp/ndthru-bench.$$.json
  local nd=$ND z=()
  if [ "${tool%-Z}" = iperf3 ]; then
    [ "$tool" = iperf3-Z ] && z=(-Z)
    $srvns iperf3 -s -1 -p $port >/dev/null 2>&1 & PIDS+=($!)
  else
    local t=()
    case $tool in
      netdoctor-per-stream) t=(-T "$p") ;;
      netdoctor-T*) t=(-T "${tool#netdoctor-T}") ;;
      netdoctor-Z) t=(-Z) ;;
      netdoctor-L) t=(--notsent-lowat "$LOWAT") ;;
      netdoctor-before) nd=$BEFORE ;;
    esac
    $srvns "$nd" throughput --server -1 -p $port -i 0 "${t[@]}" >/dev/null 2>&1 & PIDS+=($!)
  fi
  sleep 0.5
  local t0 t1; t0=$(cpu_ticks)
  if [ "${tool%-Z}" = iperf3 ]; then
    $clins iperf3 -c $host -p $port -t "$T" -P "$p" "${z[@]}" --json > $out
  else
    $clins "$nd" throughput $host -p $port -t "$T" -P "$p" -i 0 "${t[@]}" --json > $out
  fi
  t1=$(cpu_ticks)
  wait "${PIDS[-1]}" 2>/dev/null || true
  python3 - "$out" "$t0" "$t1" "$HZ" <<'PY'
import json,sys
e=json.load(open(sys.argv[1]))["end"]
r=e["sum_received"]; c=e["cpu_utilization_percent"]
gb=r["bytes"]/1e9; secs=r["seconds"]
cli=c["host_total"]/100*secs; srv=c["remote_total"]/100*secs
(k0,b0),(k1,b1)=(map(int,sys.argv[2].split()),map(int,sys.argv[3].split()))
hz=float(sys.argv[4])
ret=e.get("sum_sent",{}).get("retransmits",-1)
print(f'{r["bits_per_second"]/1e9:.2f} {(cli+srv)/gb:.3f} {cli/gb:.3f} {srv/gb:.3f} {(k1-k0)/hz/gb:.3f} {(b1-b0)/hz/gb:.3f} {ret}')
PY
  rm -f $out
}

TIMED=(/usr/bin/time -f '%U %S' -o /tmp/ndthru-time.$$)
rx_packets() { ip netns exec "$B" cat /sys/class/net/vB/statistics/rx_packets; }

# run_pps TOOL -> "sent_pps arrived_pps arrived_per_sender_cpu_s" (veth: arrivals at vB; the
# sender's user+sys CPU seconds from /usr/bin/time, softirq work done in its context included:
# on a busy machine the rate follows the CPU share a tool gets, packets per CPU second less so)
run_pps() {
  local tool=$1 port=5299 before after secs
  ip netns exec "$B" "$ND" throughput --pps-server -p $port -t $((T + 4)) --json > /tmp/ndthru-pr.$$ 2>/dev/null & PIDS+=($!)
  sleep 0.5
  before=$(rx_packets)
  local start=$(date +%s.%N) sent=0
  case $tool in
    netdoctor|netdoctor-no-gso)
      local g=(); [ "$tool" = netdoctor-no-gso ] && g=(--no-gso)
      sent=$(ip netns exec "$A" "${TIMED[@]}" "$ND" throughput 10.77.0.2 -p $port --pps max -T 1 -l 64 -t "$T" "${g[@]}" --json | python3 -c 'import json,sys;print(json.load(sys.stdin)["packets"])') ;;
    iperf3)
      # iperf3 needs its own server: the UDP data goes to it; arrivals are counted at vB.
      ip netns exec "$B" iperf3 -s -1 -p 5298 >/dev/null 2>&1 & PIDS+=($!); sleep 0.5
      sent=$(ip netns exec "$A" "${TIMED[@]}" iperf3 -c 10.77.0.2 -p 5298 -u -l 64 -b 0 -t "$T" --json | python3 -c 'import json,sys;print(json.load(sys.stdin)["end"]["sum_sent"]["packets"])') ;;
    trafgen)
      local mac; mac=$(ip netns exec "$B" cat /sys/class/net/vB/address)
      printf '{ eth(da=%s), ipv4(saddr=10.77.0.1, daddr=10.77.0.2), udp(sport=40000, dport=%s), fill(0x41, 64) }\n' "$mac" $port > /tmp/ndthru-tg.$$
      sent=$(ip netns exec "$A" "${TIMED[@]}" timeout -s INT "$T" trafgen --dev vA --conf /tmp/ndthru-tg.$$ --cpus 1 --no-sock-mem --notouch-irq 2>&1 | awk '/packets outgoing/ {print $1; exit}' | tr -dc 0-9)
      rm -f /tmp/ndthru-tg.$$ ;;
  esac
  local end=$(date +%s.%N)
  after=$(rx_packets)
  wait "${PIDS[-1]}" 2>/dev/null || true
  sent=$(printf '%s' "$sent" | tr -dc 0-9)
  local cpu; cpu=$(tail -n 1 /tmp/ndthru-time.$$ 2>/dev/null | awk '{ print $1 + $2 }')
  python3 -c "s=$end-$start; c=${cpu:-0}; print(f'{${sent:-0}/s:.0f} {($after-$before)/s:.0f} {($after-$before)/c if c else 0:.0f}')"
}

echo "# throughput-vs-iperf3: T=${T}s per run, $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)${PIN:+, clients pinned to CPU 0 and servers to CPU 1}${ALONE:+, the rounds of each tool back to back}"
# PPS_ONLY=1: only the packet-rate part; NO_PPS=1: only TCP. WHERES="veth loopback" and
# STREAMS="1 4" choose the TCP cases.
# ROUNDS=N: N rounds per case, the order alternating each round; the medians of the per-round
# ratios are printed after them (on a shared machine one round is noise).
ROUNDS=${ROUNDS:-1}
for where in $([ -n "${PPS_ONLY:-}" ] || echo ${WHERES:-veth loopback}); do
  for p in ${STREAMS:-1 4}; do
    declare -A SERIES=() GR=() CR=()
    # Extra netdoctor layouts, each a tool of its own in every round with its own ratios.
    extra=""; [ -n "${PER_STREAM:-}" ] && extra=netdoctor-per-stream
    for k in ${THREADS:-}; do extra="$extra netdoctor-T$k"; done
    [ -n "${BEFORE:-}" ] && extra="$extra netdoctor-before"
    [ -n "${ZEROCOPY:-}" ] && extra="$extra netdoctor-Z"
    [ -n "${LOWAT:-}" ] && extra="$extra netdoctor-L"
    [ -n "${IPERF_Z:-}" ] && extra="$extra iperf3-Z"
    if [ -n "${ALONE:-}" ]; then
      plan=$(for tool in netdoctor iperf3 $extra; do for round in $(seq "$ROUNDS"); do echo "$round:$tool"; done; done)
    else
      plan=$(for round in $(seq "$ROUNDS"); do
        ex=$(for tool in $extra; do echo -n "$round:$tool "; done)
        if [ $(( (p + round) % 2 )) = 0 ]; then echo "$round:iperf3 $round:netdoctor $ex"; else echo "$ex $round:netdoctor $round:iperf3"; fi
      done)
    fi
    declare -A R=()
    for step in $plan; do
      round=${step%%:*} tool=${step#*:}
      R[$round:$tool]=$(run_tcp $where $tool $p)
      read -r g c cc sc k h rt <<<"${R[$round:$tool]}"
      # CPUs kept busy by the two processes: a tool at the machine's CPU count is CPU-bound,
      # and its Gbit/s is then the CPUs divided by its CPU per GB.
      echo "tcp $where P=$p round $round $tool: $g Gbit/s, $c CPU s/GB (client $cc, server $sc; $(python3 -c "print(f'{$g*$c/8:.2f}')") CPUs busy); ksoftirqd $k s/GB; all CPUs busy $h s/GB; retransmits $rt; load $(cut -d' ' -f1 /proc/loadavg)"
      SERIES[$tool]+="$g/$c "
    done
    for round in $(seq "$ROUNDS"); do
      read -r ig ic _ <<<"${R[$round:iperf3]}"
      for tool in netdoctor $extra; do
        read -r ng nc _ <<<"${R[$round:$tool]}"
        GR[$tool]+="$(python3 -c "print($ng/$ig)"),"; CR[$tool]+="$(python3 -c "print($nc/$ic)"),"
        python3 -c "print(f'tcp $where P=$p round $round ratio $tool/iperf3: Gbit/s {$ng/$ig:.2f}x, CPU s/GB {$nc/$ic:.2f}x')"
      done
    done
    for tool in netdoctor iperf3 $extra; do
      python3 -c "
s=[tuple(map(float,x.split('/'))) for x in '${SERIES[$tool]}'.split()]
print(f'tcp $where P=$p $tool round by round (Gbit/s/CPU s per GB): ' + ' '.join(f'{g:.2f}/{c:.3f}' for g,c in s) + (f'; last/first Gbit/s {s[-1][0]/s[0][0]:.2f}x, CPU s/GB {s[-1][1]/s[0][1]:.2f}x' if len(s) > 1 else ''))"
    done
    if [ "$ROUNDS" -gt 1 ]; then
      for tool in netdoctor $extra; do
        case $tool in
          netdoctor) what="netdoctor" ;;
          netdoctor-per-stream) what="netdoctor -T $p (a thread per stream)" ;;
          netdoctor-before) what="netdoctor BEFORE=$BEFORE" ;;
          netdoctor-Z) what="netdoctor -Z" ;;
          netdoctor-L) what="netdoctor --notsent-lowat $LOWAT" ;;
          iperf3-Z) what="iperf3 -Z" ;;
          *) what="netdoctor -T ${tool#netdoctor-T}" ;;
        esac
        python3 -c "import statistics as s; g=[${GR[$tool]}]; c=[${CR[$tool]}]; print(f'tcp $where P=$p median of $ROUNDS rounds $what/iperf3: Gbit/s {s.median(g):.2f}x, CPU s/GB {s.median(c):.2f}x (CPU/GB ratios {sorted(round(x,2) for x in c)})')"
      done
    fi
    unset R SERIES GR CR
  done
done
[ -z "${NO_PPS:-}" ] || { echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"; exit 0; }
declare -A S=()
for tool in iperf3 netdoctor netdoctor-no-gso trafgen; do
  if [ $tool = trafgen ] && ! command -v trafgen >/dev/null; then echo "skipped: needs trafgen (apt-get install netsniff-ng)"; continue; fi
  S[$tool]=$(run_pps $tool); echo "pps veth $tool: ${S[$tool]} (sent/s, arrived at vB/s, arrived per sender CPU s)"
done
read -r ns na nc <<<"${S[netdoctor]}"; read -r is ia ic <<<"${S[iperf3]}"
python3 -c "print(f'pps veth ratio netdoctor/iperf3: sent {$ns/$is:.2f}x, arrived {$na/$ia:.2f}x, arrived per sender CPU s {$nc/max($ic,1):.2f}x')"
read -r gs ga gc <<<"${S[netdoctor-no-gso]}"
python3 -c "print(f'pps veth ratio netdoctor --no-gso/iperf3: sent {$gs/$is:.2f}x, arrived {$ga/$ia:.2f}x, arrived per sender CPU s {$gc/max($ic,1):.2f}x')"
# trafgen's own count can be missing (its summary did not come out after SIGINT): the arrived
# ratio, counted at the receiving interface, stands without it.
if [ -n "${S[trafgen]:-}" ]; then read -r ts ta tc <<<"${S[trafgen]}"; python3 -c "print('pps veth ratio netdoctor/trafgen: sent ' + (f'{$ns/$ts:.2f}x' if $ts else 'n/a (trafgen printed no count)') + f', arrived {$na/$ta:.2f}x, arrived per sender CPU s {$nc/max($tc,1):.2f}x')"; fi
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

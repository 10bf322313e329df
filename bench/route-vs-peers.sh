#!/usr/bin/env bash
# Compares `netdoctor trace` with `traceroute --tcp` and `mtr --tcp`, and `netdoctor dns` with
# `dig`, on the route lab (cli → r1 → delay hop → r2 → srv, lab nameserver); prints figures.
#
#   bench/route-vs-peers.sh [RTT_MS] [ROUNDS] [DNS_DELAY_MS]     (root; defaults 37 10 50)
#
# The lab runs as the `route_lab` example of netdoctor-lab (threads of that one process; its
# namespaces are named ndrt-<pid>-…). All traffic stays inside the lab's namespaces. The lab is
# stopped by closing its stdin, and killed by its PID only if it does not stop within 10 s.
set -euo pipefail

RTT=${1:-37}
ROUNDS=${2:-10}
DNS_DELAY=${3:-50}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
[ "$(id -u)" = 0 ] || { echo "route-vs-peers: needs root (network namespaces)" >&2; exit 2; }
for t in traceroute mtr dig python3; do
  command -v "$t" >/dev/null || { echo "route-vs-peers: $t not installed" >&2; exit 2; }
done

(cd "$ROOT" && cargo build --release -q -p netdoctor -p netdoctor-lab --example route_lab)
ND=$TARGET/release/netdoctor
LAB=$TARGET/release/examples/route_lab
TMP=$(mktemp -d)
mkfifo "$TMP/in"
"$LAB" --rtt-ms "$RTT" --resolver "slow:$DNS_DELAY" <"$TMP/in" >"$TMP/lab.out" 2>&1 &
LABPID=$!
exec 9>"$TMP/in"
cleanup() {
  exec 9>&- || true
  for _ in $(seq 100); do kill -0 "$LABPID" 2>/dev/null || break; sleep 0.1; done
  kill "$LABPID" 2>/dev/null || true
  wait "$LABPID" 2>/dev/null || true
  [ -n "${KEEP:-}" ] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

for _ in $(seq 200); do grep -q '^ready' "$TMP/lab.out" && break; sleep 0.1; done
grep -q '^ready' "$TMP/lab.out" || { cat "$TMP/lab.out" >&2; exit 1; }
CLI=$(sed -n 's/^ready client=\([^ ]*\).*/\1/p' "$TMP/lab.out")
SRV=10.231.3.2
NS=10.231.3.53
in_cli() { ip netns exec "$CLI" "$@"; }

echo "route lab: added RTT ${RTT} ms on the r1–r2 link, nameserver delay ${DNS_DELAY} ms, ${ROUNDS} rounds"
echo
echo "\$ traceroute -T -n -p 80 -q $ROUNDS -N 1 $SRV"
in_cli traceroute -T -n -p 80 -q "$ROUNDS" -N 1 -w 2 "$SRV" >"$TMP/traceroute.txt"
echo "\$ mtr -n -T -P 80 -c $ROUNDS -i 0.2 -j $SRV"
in_cli mtr -n -T -P 80 -c "$ROUNDS" -i 0.2 -j "$SRV" >"$TMP/mtr.json"
echo "\$ netdoctor trace $SRV -n --rounds $ROUNDS --interval 200ms --json"
NETDOCTOR_QUIET=1 in_cli "$ND" trace "$SRV" -n --rounds "$ROUNDS" --interval 200ms --json >"$TMP/nd-trace.json" || true
echo "\$ dig @$NS srv.lab.test +tries=1 (×$ROUNDS)"
for _ in $(seq "$ROUNDS"); do
  in_cli dig @"$NS" srv.lab.test +tries=1 +time=2 | sed -n 's/^;; Query time: \([0-9]*\) msec/\1/p'
done >"$TMP/dig.txt"
echo "\$ netdoctor dns srv --tries $ROUNDS --no-reverse --json"
NETDOCTOR_QUIET=1 in_cli "$ND" dns srv --tries "$ROUNDS" --no-reverse --json >"$TMP/nd-dns.json" || true
echo

python3 - "$TMP" <<'PY'
import json, re, statistics, sys
tmp = sys.argv[1]
tr = {}
for line in open(f"{tmp}/traceroute.txt"):
    m = re.match(r"\s*(\d+)\s+(.*)", line)
    if not m:
        continue
    ttl, rest = int(m.group(1)), m.group(2)
    ips = re.findall(r"(\d+\.\d+\.\d+\.\d+)", rest)
    times = [float(x) for x in re.findall(r"([\d.]+) ms", rest)]
    tr[ttl] = (ips[0] if ips else "*", times)
mtr = {int(h["count"]): h for h in json.load(open(f"{tmp}/mtr.json"))["report"]["hubs"]}
nd = json.load(open(f"{tmp}/nd-trace.json"))
ndh = {h["ttl"]: h for h in nd["measurements"]["trace"]["hops"]}

def pct(a, b):
    return 100.0 * (a - b) / b if b else float("nan")

print("trace: per-hop RTT in ms (traceroute: median of its probes; mtr: Avg/Best; netdoctor: median/avg/best)")
print(f"{'hop':>3}  {'netdoctor':<12} {'traceroute':<12} {'mtr':<12} {'nd med':>7} {'tr med':>7} {'Δ%':>6} {'nd avg':>7} {'mtr avg':>7} {'Δ%':>6} {'nd best':>7} {'mtr best':>8}")
same, within = True, True
for ttl in sorted(set(tr) | set(mtr) | set(ndh)):
    n = ndh.get(ttl, {})
    nip = n.get("addrs", [{}])[0].get("ip", "???") if n.get("addrs") else "???"
    tip, ttimes = tr.get(ttl, ("-", []))
    m = mtr.get(ttl, {})
    mip = m.get("host", "-")
    same &= nip == tip == mip
    nmed, navg, nbest = n.get("median_ms"), n.get("avg_ms"), n.get("best_ms")
    tmed = statistics.median(ttimes) if ttimes else None
    mavg, mbest = m.get("Avg"), m.get("Best")
    d1 = pct(nmed, tmed) if nmed and tmed else float("nan")
    d2 = pct(navg, mavg) if navg and mavg else float("nan")
    if tmed and tmed >= 1.0 and not abs(d1) <= 10.0:
        within = False
    if mavg and mavg >= 1.0 and not abs(d2) <= 10.0:
        within = False
    f = lambda v: f"{v:7.2f}" if isinstance(v, (int, float)) else f"{'-':>7}"
    print(f"{ttl:>3}  {nip:<12} {tip:<12} {mip:<12} {f(nmed)} {f(tmed)} {d1:6.1f} {f(navg)} {f(mavg)} {d2:6.1f} {f(nbest)} {f(mbest):>8}")
print(f"same hops: {'yes' if same else 'NO'}; per-hop RTT within 10% (hops ≥ 1 ms): {'yes' if within else 'NO'}")
print("findings:", ", ".join(f["summary"] for f in nd["findings"]) or "none")
print()
dig = [float(x) for x in open(f"{tmp}/dig.txt").read().split()]
dns = json.load(open(f"{tmp}/nd-dns.json"))
srv = dns["measurements"]["dns"]["servers"][0]
udp = [t["elapsed_ms"] for t in srv["udp"]["tries"] if t.get("elapsed_ms") is not None]
tcp = [t["elapsed_ms"] for t in srv["tcp"]["tries"] if t.get("elapsed_ms") is not None]
gai = dns["measurements"]["dns"].get("getaddrinfo", {}).get("elapsed_ms")
print("dns: srv.lab.test at the lab nameserver, ms")
print(f"  dig (udp, integer ms)   n={len(dig):>2}  median {statistics.median(dig):7.1f}  min {min(dig):7.1f}  max {max(dig):7.1f}")
print(f"  netdoctor dns udp       n={len(udp):>2}  median {statistics.median(udp):7.2f}  min {min(udp):7.2f}  max {max(udp):7.2f}")
print(f"  netdoctor dns tcp       n={len(tcp):>2}  median {statistics.median(tcp):7.2f}  (connect + query)")
print(f"  netdoctor getaddrinfo   {gai:7.2f}" if gai else "  getaddrinfo: -")
d = pct(statistics.median(udp), statistics.median(dig))
print(f"  udp median vs dig median: {d:+.1f}%")
print("findings:", ", ".join(f["summary"] for f in dns["findings"]) or "none")
PY

#!/usr/bin/env bash
# Per-segment agreement between netdoctor's TCP analysis and tshark's tcp.analysis.* flags.
#
# For every capture (default: /work/shared/realworld-pcaps/* and testdata/captures/*), runs
#   netdoctor analyze --json --dump-flags F   (the flags the trackers concluded, per frame)
#   tshark -r F -T fields -e frame.number -e tcp.analysis.<flag> ...
# and prints, per flag, the frames both flag, only tshark flags, only netdoctor flags, and two
# agreement figures: over the frames either flags (both / (both + only one), the strict one)
# and over all TCP frames (frames where the two agree / all).
#
# Deliberate differences (excluded or explained, see bench/README.md):
# - duplicate frames: netdoctor drops copies of a frame (same IP id, seq, ACK, TSval, checksum
#   within 5 ms; a port mirror, merged captures) before the analysis; tshark calls each copy a
#   retransmission or a duplicate ACK. Frames netdoctor dropped as copies are left out of the
#   comparison and counted apart.
# - out of order vs retransmission: tshark decides by a fixed 3 ms since the highest sequence
#   seen (Wireshark issues 13843, 15993); netdoctor by the IPv4 id when both segments have one,
#   else by whether the receiver had signalled the hole before the fill. "retransmission" is
#   compared as tshark's retransmission ∪ out-of-order against netdoctor's, and each side's
#   out-of-order is shown apart.
# - fast retransmission: tshark wants ≥ 2 duplicate ACKs and the segment at their ACK within
#   20 ms; netdoctor also counts SACK recovery (a SACK block above the cumulative ACK) of
#   segments other than the one the ACKs point at.
#
# Usage: bench/tshark-agreement.sh [capture ...]
# Env: NETDOCTOR (binary; default: $CARGO_TARGET_DIR or target/release/netdoctor),
#      CORPUS (default /work/shared/realworld-pcaps), VERBOSE=1 lists each disagreeing frame.
# Needs tshark and python3. Writes only to a temp dir, removed on exit.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
CORPUS="${CORPUS:-/work/shared/realworld-pcaps}"
NETDOCTOR="${NETDOCTOR:-${CARGO_TARGET_DIR:-$root/target}/release/netdoctor}"
command -v tshark >/dev/null || { echo "skipped: needs tshark (apt-get install tshark)" >&2; exit 0; }
[[ -x "$NETDOCTOR" ]] || { echo "no netdoctor binary at $NETDOCTOR (cargo build --release -p netdoctor)" >&2; exit 2; }
work="$(mktemp -d /tmp/nd-agree.XXXXXX)"
trap 'rm -rf "$work"' EXIT

if [[ $# -gt 0 ]]; then
    files=("$@")
else
    files=()
    [[ -d "$CORPUS" ]] && for f in "$CORPUS"/*; do [[ "$f" == *NOTICE.md ]] || files+=("$f"); done
    for f in "$root"/testdata/captures/*.pcap "$root"/testdata/captures/*.pcapng; do files+=("$f"); done
fi

n=0
for f in "${files[@]}"; do
    n=$((n + 1))
    base="$work/$n"
    # netdoctor exits 0-3 by verdict; anything else is a failure of the harness's input.
    rc=0
    "$NETDOCTOR" analyze --json --dump-flags "$base.nd" "$f" >"$base.json" 2>"$base.err" || rc=$?
    if [[ $rc -gt 3 ]]; then
        echo "$f: netdoctor exit $rc: $(head -c 200 "$base.err")" >&2
    fi
    [[ -f "$base.nd" ]] || : >"$base.nd" # a capture netdoctor refuses (link type, no TCP)
    # tshark reads gzip'd files itself.
    tshark -r "$f" -Y tcp -T fields -E separator=/t -E occurrence=f \
        -e frame.number -e tcp.analysis.retransmission -e tcp.analysis.fast_retransmission \
        -e tcp.analysis.spurious_retransmission -e tcp.analysis.duplicate_ack \
        -e tcp.analysis.zero_window -e tcp.analysis.window_full -e tcp.analysis.lost_segment \
        -e tcp.analysis.ack_lost_segment -e tcp.analysis.out_of_order \
        >"$base.ts" 2>/dev/null || true
    echo "$f" >"$base.name"
done

VERBOSE="${VERBOSE:-0}" /usr/bin/python3 - "$work" "$n" <<'PY'
import sys, os
work, n = sys.argv[1], int(sys.argv[2])
cols = ["retransmission", "fast_retransmission", "spurious_retransmission", "duplicate_ack",
        "zero_window", "window_full", "lost_segment", "ack_lost_segment", "out_of_order"]
flags = cols[:-1]
tot = {k: [0, 0, 0, 0] for k in flags}  # both, only tshark, only netdoctor, frames
dups = 0
ooo = [0, 0]
verbose = os.environ.get("VERBOSE") == "1"
for i in range(1, n + 1):
    b = f"{work}/{i}"
    name = open(b + ".name").read().strip()
    nd = {}
    for line in open(b + ".nd"):
        fr, _, fl = line.rstrip("\n").partition("\t")
        nd[int(fr)] = set(fl.split(",")) if fl else set()
    for line in open(b + ".ts"):
        parts = line.rstrip("\n").split("\t")
        if not parts[0]:
            continue
        fr = int(parts[0])
        parts += [""] * (len(cols) + 1 - len(parts))
        ts = {c for c, v in zip(cols, parts[1:]) if v}
        mine = nd.get(fr, set())
        if "duplicate_frame" in mine:
            dups += 1
            continue
        # Deliberate: out-of-order and retransmission are one question asked two ways.
        if "out_of_order" in ts:
            ts.add("retransmission")
            ooo[0] += 1
        if "out_of_order" in mine:
            mine = mine | {"retransmission"}
            ooo[1] += 1
        for k in flags:
            a, m = k in ts, k in mine
            t = tot[k]
            t[3] += 1
            if a and m:
                t[0] += 1
            elif a:
                t[1] += 1
                if verbose:
                    print(f"  only tshark    {k:24} {os.path.basename(name)} frame {fr}")
            elif m:
                t[2] += 1
                if verbose:
                    print(f"  only netdoctor {k:24} {os.path.basename(name)} frame {fr}")
print(f"{n} captures; {tot['retransmission'][3]} TCP frames compared; "
      f"{dups} duplicate frames dropped by netdoctor (not compared); "
      f"out of order: tshark {ooo[0]}, netdoctor {ooo[1]}")
print(f"| flag | both | only tshark | only netdoctor | agreement on flagged frames | agreement on all frames |")
print(f"|---|---:|---:|---:|---:|---:|")
for k in flags:
    both, ot, on, frames = tot[k]
    flagged = both + ot + on
    strict = 100.0 * both / flagged if flagged else 100.0
    allf = 100.0 * (frames - ot - on) / frames if frames else 100.0
    print(f"| {k} | {both} | {ot} | {on} | {strict:.1f} % | {allf:.2f} % |")
PY

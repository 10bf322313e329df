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
# Deliberate differences, left out of the table and counted apart with the reason (the
# script prints each class and its count; see bench/README.md):
# - duplicate_frame: copies of a frame (same IPv4 id, seq, ACK, TSval, checksum) that
#   netdoctor drops before the analysis; tshark calls each copy a retransmission or a
#   duplicate ACK.
# - refused: captures netdoctor does not decode (a link type it does not read); 802.11 and NFLOG are read since session 8.
# - untracked: segments outside any connection netdoctor tracks (after both FINs or a reset).
# - fast_recovery: netdoctor's wider fast-retransmit class (SACK recovery of other segments, a
#   resend within an RTT but > 20 ms after the duplicate ACKs); "fast_retransmission" itself is
#   dumped by Wireshark's rule (>= 2 duplicate ACKs, the segment at their ACK, < 20 ms).
# - repeat_ack: tshark's duplicate ACKs with nothing outstanding (RFC 5681 §2 needs some).
# - ack_lost_truth: ack_lost_segment frames where tshark contradicts the capture itself,
#   checked here from tshark's own seq/ack fields (an ACK of sequence space the capture never
#   held in the other direction, beyond what that direction had acknowledged), and netdoctor
#   agrees with the capture.
# - out of order vs retransmission: tshark decides by time since the highest sequence
#   (Wireshark issues 13843, 15993), netdoctor by IPv4 ids or the receiver's signal; compared
#   as one question (retransmission ∪ out-of-order on each side).
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
    # A capture netdoctor refuses (link type, no TCP): its frames are counted apart.
    [[ -f "$base.nd" ]] || { : >"$base.nd"; echo refused >"$base.refused"; }
    # tshark reads gzip'd files itself.
    tshark -r "$f" -Y tcp -T fields -E separator=/t -E occurrence=f \
        -e frame.number -e tcp.analysis.retransmission -e tcp.analysis.fast_retransmission \
        -e tcp.analysis.spurious_retransmission -e tcp.analysis.duplicate_ack \
        -e tcp.analysis.zero_window -e tcp.analysis.window_full -e tcp.analysis.lost_segment \
        -e tcp.analysis.ack_lost_segment -e tcp.analysis.out_of_order \
        -e tcp.stream -e ip.src -e ipv6.src -e tcp.srcport -e tcp.seq_raw -e tcp.ack_raw \
        -e tcp.len -e tcp.flags.syn -e tcp.flags.fin -e tcp.flags.ack -e tcp.flags.reset \
        >"$base.ts" 2>/dev/null || true
    echo "$f" >"$base.name"
done

VERBOSE="${VERBOSE:-0}" /usr/bin/python3 - "$work" "$n" <<'PY'
import sys, os, bisect
work, n = sys.argv[1], int(sys.argv[2])
cols = ["retransmission", "fast_retransmission", "spurious_retransmission", "duplicate_ack",
        "zero_window", "window_full", "lost_segment", "ack_lost_segment", "out_of_order"]
flags = cols[:-1]
tot = {k: [0, 0, 0, 0] for k in flags}  # both, only tshark, only netdoctor, frames
# Deliberate differences, per class: frames (or flags) left out of the comparison.
apart = {
    "duplicate_frame": [0, "copies of a frame (same IPv4 id, seq, ACK, TSval, checksum; within "
                           "100 ms with a non-zero IPv4 id, 0.2 ms without) dropped before the "
                           "analysis; tshark calls them retransmissions or duplicate ACKs (frames)"],
    "refused": [0, "frames of captures netdoctor refuses (link type it does not decode, e.g. "
                   "802.11): each tshark flag there (flags)"],
    "untracked": [0, "tshark flags on segments outside any connection netdoctor tracks (after "
                     "both FINs or a reset, a pure ACK before the sequence space is known) (flags)"],
    "fast_recovery": [0, "netdoctor's fast retransmissions outside Wireshark's rule (SACK "
                         "recovery of other segments, a resend within an RTT but > 20 ms after "
                         "the duplicate ACKs): dumped as fast_recovery, not compared (frames)"],
    "repeat_ack": [0, "tshark duplicate ACKs with nothing outstanding (after a repeated "
                      "SYN/ACK or FIN, a D-SACK report); RFC 5681 §2 needs outstanding data "
                      "(frames)"],
    "ack_lost_truth": [0, "ack_lost_segment where tshark contradicts the capture itself: it "
                          "flags an ACK of bytes the capture holds, or misses one of bytes it "
                          "never held (its 'max seq to be acked' stops after a gap and flags "
                          "once per stall); netdoctor agrees with the capture (frames)"],
}
ooo = [0, 0]
verbose = os.environ.get("VERBOSE") == "1"
M = 1 << 32


def covered(iv, lo, hi):
    """Whether [lo, hi) lies inside the union of the sorted, merged intervals iv."""
    k = bisect.bisect_right(iv, [lo, M * 4]) - 1
    return k >= 0 and iv[k][0] <= lo and iv[k][1] >= hi


def add(iv, lo, hi):
    k = bisect.bisect_left(iv, [lo, lo])
    iv.insert(k, [lo, hi])
    out = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    iv[:] = out


for i in range(1, n + 1):
    b = f"{work}/{i}"
    name = open(b + ".name").read().strip()
    refused = os.path.exists(b + ".refused")
    nd = {}
    for line in open(b + ".nd"):
        fr, _, fl = line.rstrip("\n").partition("\t")
        nd[int(fr)] = set(fl.split(",")) if fl else set()
    # Ground truth for ack_lost_segment, from the capture: an ACK that acknowledges sequence
    # space (bytes, SYN, FIN) the capture never held in the other direction, beyond what
    # this direction had acknowledged before.
    held = {}   # (stream, src, port) -> merged intervals, relative to base
    base = {}   # (stream, src, port) -> first sequence number seen
    acked = {}  # (stream, src, port) -> highest relative ACK sent
    ends = {}   # stream -> its directions' keys
    for line in open(b + ".ts"):
        parts = line.rstrip("\n").split("\t")
        if not parts[0]:
            continue
        fr = int(parts[0])
        parts += [""] * (len(cols) + 12 - len(parts))
        ts = {c for c, v in zip(cols, parts[1:]) if v}
        stream, src4, src6, port, seq, ack, ln, syn, fin, ackf, rst = parts[len(cols) + 1:len(cols) + 12]
        truth_unseen = False
        if stream and seq:
            me = (stream, src4 or src6, port)
            seq, ack, ln = int(seq), int(ack or 0), int(ln or 0)
            syn, fin, ackf, rst = syn in ("1", "True"), fin in ("1", "True"), ackf in ("1", "True"), rst in ("1", "True")
            rel = lambda k, x: ((x - base[k] + (1 << 31)) % M) - (1 << 31)
            if me not in base:
                base[me] = seq
                ends.setdefault(stream, []).append(me)
            other = next((k for k in ends[stream] if k != me), None)
            if ackf and not rst and other is not None:
                a = rel(other, ack)
                lo = acked.get(me)
                iv = held.get(other, [])
                if lo is None and iv:
                    lo = iv[0][0]
                if lo is not None and a > lo and not covered(iv, lo, a):
                    truth_unseen = True
                if lo is None or a > lo:
                    acked[me] = a
            span = ln + int(syn) + int(fin)
            if span > 0 and not rst:
                s0 = rel(me, seq)
                add(held.setdefault(me, []), s0, s0 + span)
        if refused:
            apart["refused"][0] += len(ts & set(flags))
            continue
        mine = nd.get(fr, set())
        if "duplicate_frame" in mine:
            apart["duplicate_frame"][0] += 1
            continue
        if "untracked" in mine:
            apart["untracked"][0] += len(ts & set(flags))
            continue
        if "fast_recovery" in mine:
            apart["fast_recovery"][0] += 1
        # Deliberate: out-of-order and retransmission are one question asked two ways.
        if "out_of_order" in ts:
            ts.add("retransmission")
            ooo[0] += 1
        if "out_of_order" in mine:
            mine = mine | {"retransmission"}
            ooo[1] += 1
        if "duplicate_ack" in ts and "repeat_ack" in mine:
            apart["repeat_ack"][0] += 1
            ts.discard("duplicate_ack")
        a_ts, a_nd = "ack_lost_segment" in ts, "ack_lost_segment" in mine
        if a_ts != a_nd and a_nd == truth_unseen:
            apart["ack_lost_truth"][0] += 1
            ts.discard("ack_lost_segment")
            mine = mine - {"ack_lost_segment"}
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
      f"out of order: tshark {ooo[0]}, netdoctor {ooo[1]} (compared as retransmissions)")
print("Left out of the comparison, on purpose:")
for k, (c, why) in apart.items():
    print(f"- {k}: {c}: {why}")
print()
print(f"| flag | both | only tshark | only netdoctor | agreement on flagged frames | agreement on all frames |")
print(f"|---|---:|---:|---:|---:|---:|")
for k in flags:
    both, ot, on, frames = tot[k]
    flagged = both + ot + on
    strict = 100.0 * both / flagged if flagged else 100.0
    allf = 100.0 * (frames - ot - on) / frames if frames else 100.0
    print(f"| {k} | {both} | {ot} | {on} | {strict:.1f} % | {allf:.2f} % |")
PY

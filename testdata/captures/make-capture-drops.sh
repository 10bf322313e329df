#!/usr/bin/env bash
# Makes the capture-drops-*.pcap.gz captures (see README.md): frames the capture lost, not the
# network. Three downloads of a 300 KB file (python3 http.server, HTTP/1.0: the server closes)
# between two namespaces joined by a veth pair with GSO one segment (wire-size packets),
# captured in the client's namespace with snap length 320 (the whole HTTP head: its Content-Length tells an unfinished answer); then, from that clean capture
# (capture-drops-clean), with make-capture-drops.py so that the truth is known:
#   capture-drops-gaps   every 9th data frame of the server deleted (bytes the client ACKs
#                        that the file never shows; no retransmission follows);
#   capture-drops-tail   the same gaps, and every frame of the first two downloads after their
#                        60th data frame deleted (the ring overflowed until the next download
#                        began: their ends and FINs are missing); then cut by editcap -r in the
#                        third download (that one really is cut by the end of the capture);
#   capture-drops-end    the clean capture cut by editcap -r in the third download (the
#                        look-alike: really cut by the end, nothing missed);
#   capture-drops-stall  the clean capture with the first download's frames after its 60th data
#                        frame deleted and no other gap (the look-alike: a server that stopped
#                        writing mid-answer; the file cannot tell, nothing says the capture
#                        dropped frames).
# Namespaces are removed on exit, also on failure; processes are stopped by their PIDs.
# Needs root, tcpdump, python3, iproute2, editcap (wireshark-common), gzip.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
. "$out/lib.sh"
lab_begin netdoctor-capdrops
C="nd-s30b-$$-c"
S="nd-s30b-$$-s"
lab_netns "$C" "$S"
lab_veth "$C" "$S" ndcd-c ndcd-s 10.79.7.1 10.79.7.2 gso1

mkdir -p "$work/www"
head -c 300000 /dev/zero >"$work/www/big.bin"
fifo="$work/srv"
mkfifo "$fifo"
(cd "$work/www" && exec ip netns exec "$S" /usr/bin/python3 -u -m http.server 18140 \
    --bind 10.79.7.2 >"$fifo" 2>&1) &
pids+=($!)
read -r _ <"$fifo"
cat "$fifo" >/dev/null &
pids+=($!)

clean="$work/clean.pcap"
ip netns exec "$C" tcpdump -U --immediate-mode -i ndcd-c -s 320 -w "$clean" \
    'tcp port 18140' 2>"$work/td.err" &
td=$!
pids+=("$td")
for _ in $(seq 1 200); do grep -q "listening on" "$work/td.err" 2>/dev/null && break; sleep 0.05; done
for _ in 1 2 3; do
    ip netns exec "$C" curl -s -m 10 -o /dev/null -w '%{size_download}\n' \
        http://10.79.7.2:18140/big.bin
    sleep 0.2
done
sleep 0.3
kill -INT "$td" 2>/dev/null || true
wait "$td" || true
cat "$work/td.err" >&2

# The frame number of the third download's 100th data frame from the server.
third=$(tshark -r "$clean" -Y 'tcp.srcport == 18140 && tcp.len > 0 && tcp.stream == 2' \
    -T fields -e frame.number | sed -n 100p)
py="$out/make-capture-drops.py"
python3 "$py" every "$clean" "$work/gaps.pcap" 18140 9
python3 "$py" tail "$work/gaps.pcap" "$work/tail-all.pcap" 18140 60 2
python3 "$py" tail "$clean" "$work/stall.pcap" 18140 60 1
# Cut in the third download: the frame that in the clean file is `third`, in each file.
cut_at() { # FILE: editcap -r keeping the frames up to the clean file's frame `third`
    local n
    n=$(tshark -r "$1" -Y "frame.time_epoch <= $(tshark -r "$clean" -Y "frame.number == $third" \
        -T fields -e frame.time_epoch)" -T fields -e frame.number | tail -1)
    editcap -r "$1" "$2" "1-$n"
}
cut_at "$work/tail-all.pcap" "$work/tail.pcap"
cut_at "$clean" "$work/end.pcap"
for f in clean gaps tail end stall; do
    gzip -9 -n -c "$work/$f.pcap" >"$out/capture-drops-$f.pcap.gz"
    echo "capture-drops-$f.pcap.gz: $(tshark -r "$work/$f.pcap" 2>/dev/null | wc -l) frames, \
$(tshark -r "$work/$f.pcap" -Y tcp.analysis.ack_lost_segment 2>/dev/null | wc -l) ack_lost_segment"
done

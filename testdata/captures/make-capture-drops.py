#!/usr/bin/env python3
"""Frames a capture lost, made from a clean capture so that the truth is known (see
make-capture-drops.sh). Reads a little-endian pcap of Ethernet/IPv4/TCP frames.

  make-capture-drops.py every IN OUT PORT N   delete every Nth data frame sent from PORT
  make-capture-drops.py tail IN OUT PORT K C  also delete every frame of the first C
                                              connections after their Kth data frame from PORT
                                              (both directions, the FINs too: the ring
                                              overflowed until the next download began)
"""
import struct
import sys


def frames(path):
    with open(path, 'rb') as f:
        data = f.read()
    off = 24
    yield data[:24], None
    while off < len(data):
        incl = struct.unpack_from('<I', data, off + 8)[0]
        rec = data[off:off + 16 + incl]
        off += 16 + incl
        pkt = rec[16:]
        ihl = (pkt[14] & 15) * 4
        tot = struct.unpack_from('>H', pkt, 16)[0]
        tcp = pkt[14 + ihl:]
        sport, dport = struct.unpack_from('>HH', tcp, 0)
        doff = (tcp[12] >> 4) * 4
        yield rec, (sport, dport, tot - ihl - doff)


def main():
    mode, src, dst, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    n = int(sys.argv[5])
    conns = int(sys.argv[6]) if mode == 'tail' else 0
    out, data_seen, deleted = [], {}, 0
    order = []
    for rec, t in frames(src):
        if t is None:
            out.append(rec)
            continue
        sport, dport, length = t
        client = dport if sport == port else sport
        if client not in data_seen:
            data_seen[client] = 0
            order.append(client)
        drop = False
        if sport == port and length > 0:
            data_seen[client] += 1
            drop = mode == 'every' and data_seen[client] % n == 0
        if mode == 'tail' and order.index(client) < conns and data_seen[client] > n:
            drop = True
        deleted += drop
        if not drop:
            out.append(rec)
    with open(dst, 'wb') as f:
        f.write(b''.join(out))
    print(f'{dst}: {deleted} frames deleted', file=sys.stderr)


main()

#!/usr/bin/python3
"""Capture artefacts derived from the committed captures (no root, no network).

Run from this folder: `/usr/bin/python3 make-artefacts.py`.

- reorder-eth.pcap.gz: `healthy-eth.pcap` as a capture on several NIC queues or CPUs writes
  it: about one frame in seven changes place with the frame after it in the file, each
  keeping its own timestamp (seeded, so the file is the same on every run). Read in file
  order, a server's segment written after the client's ACK of it looks resent, the ACK looks
  like one of data never captured; in timestamp order it is the healthy original.
"""
import gzip
import random
import struct


def records(path):
    with open(path, "rb") as f:
        d = f.read()
    assert struct.unpack("<I", d[:4])[0] == 0xA1B2C3D4, "microsecond pcap expected"
    off, out = 24, []
    while off + 16 <= len(d):
        incl = struct.unpack("<I", d[off + 8 : off + 12])[0]
        out.append(d[off : off + 16 + incl])
        off += 16 + incl
    return d[:24], out


def reorder():
    head, recs = records("healthy-eth.pcap")
    rng = random.Random(7)
    i = 1
    while i < len(recs) - 1:
        if rng.random() < 0.15:
            recs[i], recs[i + 1] = recs[i + 1], recs[i]
            i += 2
        else:
            i += 1
    with gzip.GzipFile("reorder-eth.pcap.gz", "wb", mtime=0) as f:
        f.write(head + b"".join(recs))


if __name__ == "__main__":
    reorder()

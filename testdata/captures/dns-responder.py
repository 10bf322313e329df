#!/usr/bin/env python3
"""A tiny nameserver for make-dns.sh: answers A/AAAA/PTR on UDP (and TCP) port 53 of ADDR.

usage: dns-responder.py ADDR MODE
  refused  every query answered REFUSED at once
  lossy    every 3rd query (counted over all queries) dropped, the others answered at once
  ptr      A/AAAA answered at once, PTR queries dropped
  slow     every query answered after 300 ms
  tc       over UDP every answer truncated (TC bit, no records); over TCP answered in full
  tc-notcp as tc, but nothing listens on TCP port 53 (the kernel resets the SYN, or a DROP
           rule of the server's namespace drops it: make-dns.sh)
  tc-slow  as tc, the answers over TCP after 300 ms
  plain    every query answered at once (the client asks over TCP: `options use-vc`)
"""
import socket
import struct
import sys
import threading
import time

addr, mode = sys.argv[1], sys.argv[2]
count = 0


def answer(q, tcp):
    """The answer to query q (bytes), or None to drop it."""
    global count
    count += 1
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    i = 12
    while q[i] != 0:
        i += q[i] + 1
    qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
    question = q[12:i + 5]
    rd = flags & 0x0100
    if mode == "refused":
        return struct.pack("!HHHHHH", qid, 0x8000 | rd | 5, 1, 0, 0, 0) + question
    if mode == "lossy" and count % 3 == 0:
        return None
    if mode == "ptr" and qtype == 12:
        return None
    if mode == "slow" or (mode == "tc-slow" and tcp):
        time.sleep(0.3)
    rrs = b""
    n = 0
    if qtype == 1:
        for k in range(1, 41 if mode.startswith("tc") else 2):
            rrs += struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + bytes([10, 9, k // 256, k % 256])
            n += 1
    elif qtype == 12:
        name = b"".join(bytes([len(x)]) + x for x in [b"host", b"lab"]) + b"\0"
        rrs = struct.pack("!HHHIH", 0xC00C, 12, 1, 60, len(name)) + name
        n = 1
    fl = 0x8400 | rd | 0x80
    if mode.startswith("tc") and not tcp and n > 0:
        return struct.pack("!HHHHHH", qid, fl | 0x0200, 1, 0, 0, 0) + question
    return struct.pack("!HHHHHH", qid, fl, 1, n, 0, 0) + question + rrs


def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    while True:
        q, peer = s.recvfrom(4096)
        a = answer(q, False)
        if a is not None:
            s.sendto(a, peer)


def tcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 53))
    s.listen(16)
    while True:
        c, _ = s.accept()
        with c:
            try:
                while True:
                    h = c.recv(2)
                    if len(h) < 2:
                        break
                    (ln,) = struct.unpack("!H", h)
                    q = b""
                    while len(q) < ln:
                        d = c.recv(ln - len(q))
                        if not d:
                            break
                        q += d
                    a = answer(q, True)
                    if a is not None:
                        c.sendall(struct.pack("!H", len(a)) + a)
            except OSError:
                pass


if mode != "tc-notcp":
    threading.Thread(target=tcp, daemon=True).start()
print("listening", flush=True)
udp()

#!/usr/bin/python3
"""Hand-made captures of the capture-quality classes (issue 19), written packet by packet.

Each file is one TCP conversation on Ethernet/IPv4 with a shape taken from a third-party
capture we may not copy: valid checksums, IPv4 ids numbered per sender, TCP timestamps,
SACK. Run from this folder: `/usr/bin/python3 make-quality.py` (no root, no network).

- fast-retx-longrtt.pcap: captured at the server, RTT 166 ms. The server sends a 10-segment
  response, the first segment is lost after the capture point, the client's three duplicate
  ACKs (with SACK) arrive one RTT later, the server resends 51 µs after the third. The
  server had been silent 166 ms: a fast retransmission, not a timeout.
- rto-unacked.pcap: after one exchange, the client's next request is resent 5 times (RTO 296 ms, doubling) over
  ~9.2 s and never acknowledged; the capture ends there.
- gap-delack.pcap: three GETs whose responses stream 8 full-size segments 200 ms apart; the
  capture misses the 7th of each (sent 560 ms after the 6th); the client's ACK of it, 565 ms
  after the 6th captured segment, is followed at once by the 8th. Not a delayed ACK: the ACK answers data never captured.
- rst-after-fin.pcap: the server closes (FIN) 15 s after the last response, the client
  acknowledges it but keeps its side open; 45 s later the client sends a keep-alive probe and
  the server answers with a reset: a reset after the close, not in the middle of an exchange.
"""
import struct

CLI = (bytes([10, 9, 0, 1]), 40000, b"\x02\x00\x00\x00\x00\x01")
SRV = (bytes([10, 9, 0, 2]), 80, b"\x02\x00\x00\x00\x00\x02")
MSS = 1448


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


class Conv:
    def __init__(self):
        self.frames = []
        self.ipid = {0: 0x1000, 1: 0x5000}
        self.seq = {0: 1000, 1: 900000}  # client, server ISNs
        self.ack = {0: 0, 1: 0}

    def pkt(self, t, side, flags, payload=b"", seq=None, ack=None, win=502, sack=(), syn_opts=False, tsval=None):
        src, dst = (CLI, SRV) if side == 0 else (SRV, CLI)
        seq = self.seq[side] if seq is None else seq
        ack = self.ack[side] if ack is None else ack
        ts = int(t * 1000) + (100000 if side else 5000) if tsval is None else tsval
        if syn_opts:
            opts = struct.pack("!BBH", 2, 4, 1460) + b"\x04\x02" + struct.pack("!BBII", 8, 10, ts, 0) + b"\x01\x03\x03\x07"
        else:
            opts = b"\x01\x01" + struct.pack("!BBII", 8, 10, ts, 0)
            if sack:
                opts += b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(sack))
                for l, r in sack:
                    opts += struct.pack("!II", l, r)
        hl = 20 + len(opts)
        fl = 0
        for ch, bit in (("F", 1), ("S", 2), ("R", 4), ("P", 8), ("A", 16)):
            if ch in flags:
                fl |= bit
        tcp = struct.pack("!HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (hl // 4) << 4, fl, win, 0, 0) + opts + payload
        pseudo = src[0] + dst[0] + struct.pack("!BBH", 0, 6, len(tcp))
        c = csum(pseudo + tcp)
        tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
        self.ipid[side] += 1
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), self.ipid[side], 0x4000, 64, 6, 0, src[0], dst[0])
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        eth = dst[2] + src[2] + b"\x08\x00"
        self.frames.append((t, eth + ip + tcp))
        return seq

    def handshake(self, t, rtt):
        self.pkt(t, 0, "S", syn_opts=True, ack=0)
        self.seq[0] += 1
        self.ack[1] = self.seq[0]
        self.pkt(t + rtt / 2, 1, "SA", syn_opts=True)
        self.seq[1] += 1
        self.ack[0] = self.seq[1]
        self.pkt(t + rtt, 0, "A")

    def send(self, t, side, payload, flags="PA", captured=True):
        seq = self.seq[side]
        if captured:
            self.pkt(t, side, flags, payload)
        else:
            self.ipid[side] += 1
        self.seq[side] += len(payload)
        return seq

    def write(self, path):
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            base = 1_764_000_000
            for t, data in sorted(self.frames, key=lambda x: x[0]):
                us = round(t * 1e6)
                f.write(struct.pack("<IIII", base + us // 1_000_000, us % 1_000_000, len(data), len(data)))
                f.write(data)


GET = b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n"


def fast_retx_longrtt():
    c, rtt = Conv(), 0.166
    c.handshake(0.0, rtt)  # captured at the server: SYN at 0 is really SYN arrival; fine for shape
    t = 0.2
    c.send(t, 0, GET)
    c.ack[1] = c.seq[0]
    t += 0.0002
    hdr = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (10 * MSS - 38)
    body = hdr + b"x" * (10 * MSS - len(hdr))
    segs = []
    for k in range(10):
        segs.append((c.seq[1], body[k * MSS:(k + 1) * MSS]))
        c.send(t + k * 0.00001, 1, body[k * MSS:(k + 1) * MSS], flags="A" if k < 9 else "PA")
    first = segs[0][0]
    # One RTT later: the client's duplicate ACKs for segments 2..10 (segment 1 lost after the
    # capture point), each with a growing SACK block.
    ta = t + rtt
    for k in range(1, 10):
        c.pkt(ta + k * 0.00002, 0, "A", ack=first, sack=[(segs[1][0], segs[k][0] + MSS)])
        if k == 3:
            # The fast retransmission, 51 µs after the third duplicate ACK.
            c.pkt(ta + k * 0.00002 + 0.000051, 1, "A", segs[0][1], seq=first)
    end = c.seq[1]
    c.pkt(ta + rtt + 0.0003, 0, "A", ack=end)
    c.ack[0] = c.seq[1]
    tf = ta + rtt + 0.5
    c.send(tf, 0, b"", flags="FA")
    c.seq[0] += 1
    c.ack[1] = c.seq[0]
    c.pkt(tf + 0.0001, 1, "FA")
    c.seq[1] += 1
    c.ack[0] = c.seq[1]
    c.pkt(tf + rtt, 0, "A")
    c.write("fast-retx-longrtt.pcap")


def rto_unacked():
    c, rtt = Conv(), 0.002
    c.handshake(0.0, rtt)
    t = 0.1
    # One exchange that works, then a request that the network eats every time.
    c.send(t, 0, GET)
    c.ack[1] = c.seq[0]
    c.send(t + 0.003, 1, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.ack[0] = c.seq[1]
    c.pkt(t + 0.0032, 0, "A")
    t += 1.0
    seq = c.send(t, 0, GET)
    rto = 0.296
    for _ in range(5):
        t += rto
        c.pkt(t, 0, "PA", GET, seq=seq)
        rto *= 2
    c.write("rto-unacked.pcap")


def gap_delack():
    c, rtt = Conv(), 0.0005
    c.handshake(0.0, rtt)
    t = 0.1
    for k in range(3):
        # A response streamed in 8 full-size segments 200 ms apart, the client ACKing each
        # promptly (the 6th with the 7th); the capture misses the 7th (sent 560 ms after the 6th):
        # the client's ACK of both, 565 ms after the 6th, is followed at once by the 8th.
        c.send(t, 0, GET)
        c.ack[1] = c.seq[0]
        hdr = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (8 * MSS - 38)
        body = hdr + b"r" * (8 * MSS - len(hdr))
        ts = t + 0.001
        for n in range(8):
            seg = body[n * MSS:(n + 1) * MSS]
            if n == 6:
                ts += 0.560
                c.send(ts, 1, seg, flags="A", captured=False)
                c.ack[0] = c.seq[1]
                c.pkt(ts + 0.005, 0, "A")
                ts += 0.0051
                continue
            c.send(ts, 1, seg, flags="A" if n < 7 else "PA")
            c.ack[0] = c.seq[1]
            if n != 5:  # the 6th is acknowledged with the 7th (every second segment)
                c.pkt(ts + 0.0003, 0, "A")
            ts += 0.2
        t = ts + 0.5
    c.pkt(t, 0, "FA")
    c.seq[0] += 1
    c.ack[1] = c.seq[0]
    c.pkt(t + 0.0001, 1, "FA")
    c.seq[1] += 1
    c.ack[0] = c.seq[1]
    c.pkt(t + 0.0002, 0, "A")
    c.write("gap-delack.pcap")


def rst_after_fin():
    c, rtt = Conv(), 0.0004
    c.handshake(0.0, rtt)
    t = 0.05
    for k in range(3):
        tk = t + k * 1.0
        c.send(tk, 0, b"GET /k%d HTTP/1.1\r\nHost: x\r\n\r\n" % k)
        c.ack[1] = c.seq[0]
        c.send(tk + 0.002, 1, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        c.ack[0] = c.seq[1]
        c.pkt(tk + 0.0022, 0, "A")
    tlast = t + 2.0
    # The server closes its side 15 s later; the client acknowledges but stays open.
    tfin = tlast + 15.0
    c.pkt(tfin, 1, "FA")
    c.seq[1] += 1
    c.ack[0] = c.seq[1]
    c.pkt(tfin + 0.0002, 0, "A")
    # 45 s later: the client's keep-alive probe (seq - 1, no data); the server resets.
    tka = tfin + 45.0
    c.pkt(tka, 0, "A", seq=c.seq[0] - 1)
    c.pkt(tka + 0.0002, 1, "R", seq=c.seq[1], ack=0)
    c.write("rst-after-fin.pcap")


fast_retx_longrtt()
rto_unacked()
gap_delack()
rst_after_fin()

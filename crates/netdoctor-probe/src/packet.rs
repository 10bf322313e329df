//! TCP SYN construction and reply matching for the raw-socket probe (pure, no I/O).
//!
//! Hand-written rather than taken from `etherparse`: the probe needs a single 24-byte header
//! (SYN + MSS option), the IPv4 pseudo-header checksum, and a four-field match on replies; that
//! is a few dozen lines, keeps the probe crate free of a packet library, and is unit tested here.

use std::net::Ipv4Addr;

/// TCP flag bits (byte 13 of the header).
pub(crate) const FIN: u8 = 0x01;
pub(crate) const SYN: u8 = 0x02;
pub(crate) const RST: u8 = 0x04;
pub(crate) const ACK: u8 = 0x10;

/// Length of the SYN we send: 20-byte header + 4-byte MSS option.
pub(crate) const SYN_LEN: usize = 24;

/// Builds a SYN from `src_port` to `dst_port` with sequence number `seq` and an MSS option.
/// The checksum field is left 0; fill it with [`ipv4_tcp_checksum`] (IPv4) or let the kernel
/// do it (IPv6 raw socket with `IPV6_CHECKSUM` = 16).
pub(crate) fn build_syn(src_port: u16, dst_port: u16, seq: u32, mss: u16) -> [u8; SYN_LEN] {
    let mut h = [0u8; SYN_LEN];
    h[0..2].copy_from_slice(&src_port.to_be_bytes());
    h[2..4].copy_from_slice(&dst_port.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    // ack number 0 (bytes 8..12)
    h[12] = ((SYN_LEN / 4) as u8) << 4; // data offset in 32-bit words
    h[13] = SYN;
    h[14..16].copy_from_slice(&64240u16.to_be_bytes()); // window, as Linux sends
    // checksum (16..18) and urgent pointer (18..20) stay 0
    h[20] = 2; // option kind: MSS
    h[21] = 4; // option length
    h[22..24].copy_from_slice(&mss.to_be_bytes());
    h
}

/// Internet checksum (RFC 1071) over the IPv4 pseudo header and `segment`.
pub(crate) fn ipv4_tcp_checksum(src: Ipv4Addr, dst: Ipv4Addr, segment: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut add = |bytes: &[u8]| {
        let mut chunks = bytes.chunks_exact(2);
        for c in &mut chunks {
            sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
        }
        if let [last] = chunks.remainder() {
            sum += u32::from(*last) << 8;
        }
    };
    add(&src.octets());
    add(&dst.octets());
    add(&[0, 6]); // zero, protocol TCP
    add(&(segment.len() as u16).to_be_bytes());
    add(segment);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Writes the IPv4 checksum into a segment built by [`build_syn`].
pub(crate) fn fill_ipv4_checksum(segment: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr) {
    segment[16] = 0;
    segment[17] = 0;
    let c = ipv4_tcp_checksum(src, dst, segment);
    segment[16..18].copy_from_slice(&c.to_be_bytes());
}

/// The fields of a received TCP header that the probe matches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TcpHead {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
}

/// Parses the start of a TCP header; `None` if `b` is too short.
pub(crate) fn parse_tcp(b: &[u8]) -> Option<TcpHead> {
    if b.len() < 20 {
        return None;
    }
    Some(TcpHead {
        src_port: u16::from_be_bytes([b[0], b[1]]),
        dst_port: u16::from_be_bytes([b[2], b[3]]),
        seq: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        ack: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
        flags: b[13],
    })
}

/// Parses an IPv4 packet carrying TCP, as an IPv4 raw socket delivers it (IP header included).
/// Returns source and destination address and the TCP header; `None` for anything else
/// (not IPv4, not TCP, truncated, or a non-first fragment).
pub(crate) fn parse_ipv4_tcp(b: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr, TcpHead)> {
    if b.len() < 20 || b[0] >> 4 != 4 || b[9] != 6 {
        return None;
    }
    let ihl = usize::from(b[0] & 0x0f) * 4;
    let frag_offset = u16::from_be_bytes([b[6], b[7]]) & 0x1fff;
    if ihl < 20 || frag_offset != 0 {
        return None;
    }
    let src = Ipv4Addr::new(b[12], b[13], b[14], b[15]);
    let dst = Ipv4Addr::new(b[16], b[17], b[18], b[19]);
    Some((src, dst, parse_tcp(b.get(ihl..)?)?))
}

/// What a reply to our SYN means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// SYN+ACK: something listens.
    SynAck,
    /// RST: nothing listens on the port.
    Rst,
}

/// Matches `h` (already known to come from the target address) against the probe that sent
/// sequence number `isn` from `local_port` to `target_port`.
pub(crate) fn classify(h: &TcpHead, target_port: u16, local_port: u16, isn: u32) -> Option<Answer> {
    if h.src_port != target_port || h.dst_port != local_port || h.flags & ACK == 0 {
        return None;
    }
    if h.ack != isn.wrapping_add(1) {
        return None; // an answer to an earlier probe, or unrelated traffic
    }
    if h.flags & RST != 0 {
        Some(Answer::Rst)
    } else if h.flags & (SYN | FIN) == SYN {
        Some(Answer::SynAck)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syn_layout() {
        let s = build_syn(40000, 80, 0x01020304, 1460);
        assert_eq!(&s[0..4], &[0x9c, 0x40, 0, 80]);
        assert_eq!(&s[4..8], &[1, 2, 3, 4]);
        assert_eq!(s[12], 0x60);
        assert_eq!(s[13], SYN);
        assert_eq!(&s[20..24], &[2, 4, 0x05, 0xb4]);
        let h = parse_tcp(&s).unwrap();
        assert_eq!(
            (h.src_port, h.dst_port, h.seq, h.flags),
            (40000, 80, 0x01020304, SYN)
        );
    }

    /// A SYN hping3 sent on lo (127.0.0.1:1072 → 127.0.0.1:55333), captured with tcpdump, which
    /// verified its checksum 0xb30d as correct. (Kernel-built SYNs on lo carry only a partial
    /// checksum: offload, so they cannot serve here.)
    #[test]
    fn checksum_matches_hping3() {
        let pkt: [u8; 40] = [
            0x45, 0x00, 0x00, 0x28, 0xc4, 0xde, 0x00, 0x00, 0x40, 0x06, 0xb7, 0xef, 0x7f, 0x00,
            0x00, 0x01, 0x7f, 0x00, 0x00, 0x01, 0x04, 0x30, 0xd8, 0x25, 0x4d, 0x2e, 0x77, 0xad,
            0x34, 0x9b, 0x27, 0x06, 0x50, 0x02, 0x02, 0x00, 0xb3, 0x0d, 0x00, 0x00,
        ];
        let (src, dst, h) = parse_ipv4_tcp(&pkt).unwrap();
        assert_eq!((src, dst), (Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST));
        assert_eq!(
            (h.src_port, h.dst_port, h.seq, h.flags),
            (1072, 55333, 1294890925, SYN)
        );
        let mut seg = [0u8; 20];
        seg.copy_from_slice(&pkt[20..]);
        fill_ipv4_checksum(&mut seg, src, dst);
        assert_eq!(u16::from_be_bytes([seg[16], seg[17]]), 0xb30d);
        // A correct checksum sums to zero when verified over the whole segment.
        assert_eq!(ipv4_tcp_checksum(src, dst, &seg), 0);
        // and any flipped bit breaks it
        seg[5] ^= 0x10;
        assert_ne!(ipv4_tcp_checksum(src, dst, &seg), 0);
    }

    #[test]
    fn odd_length_checksum_pads_with_zero() {
        // By hand: 0a00+0001 + 0a00+0002 + 0006 + 0003 (length) + 0102 + 0300 (03 padded)
        // = 0x180e, complement 0xe7f1.
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let b = Ipv4Addr::new(10, 0, 0, 2);
        assert_eq!(ipv4_tcp_checksum(a, b, &[1, 2, 3]), 0xe7f1);
    }

    #[test]
    fn classify_replies() {
        let isn = 1000;
        let mk = |src_port, dst_port, ack, flags| TcpHead {
            src_port,
            dst_port,
            seq: 7,
            ack,
            flags,
        };
        assert_eq!(
            classify(&mk(80, 40000, 1001, SYN | ACK), 80, 40000, isn),
            Some(Answer::SynAck)
        );
        assert_eq!(
            classify(&mk(80, 40000, 1001, RST | ACK), 80, 40000, isn),
            Some(Answer::Rst)
        );
        // wrong ack (an earlier probe), wrong ports, our own SYN, plain ACK
        assert_eq!(
            classify(&mk(80, 40000, 999, SYN | ACK), 80, 40000, isn),
            None
        );
        assert_eq!(
            classify(&mk(81, 40000, 1001, SYN | ACK), 80, 40000, isn),
            None
        );
        assert_eq!(
            classify(&mk(80, 40001, 1001, SYN | ACK), 80, 40000, isn),
            None
        );
        assert_eq!(classify(&mk(40000, 80, 0, SYN), 80, 40000, isn), None);
        assert_eq!(classify(&mk(80, 40000, 1001, ACK), 80, 40000, isn), None);
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_tcp(&[0; 19]).is_none());
        assert!(parse_ipv4_tcp(&[0x45; 10]).is_none());
        let mut udp = [0u8; 40];
        udp[0] = 0x45;
        udp[9] = 17;
        assert!(parse_ipv4_tcp(&udp).is_none());
        let mut short_ihl = [0u8; 40];
        short_ihl[0] = 0x41;
        short_ihl[9] = 6;
        assert!(parse_ipv4_tcp(&short_ihl).is_none());
    }
}

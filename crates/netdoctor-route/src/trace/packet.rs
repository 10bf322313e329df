//! The per-family parts of a probe: the ICMP echo request, what an ICMP type means, and the
//! parser of what a raw ICMP socket reads. Everything else (sockets, timing, matching by the
//! kernel's error queue) is the same for IPv4 and IPv6 and lives in [`super::probe`].
//!
//! - IPv4: echo request type 8 (checksum computed here), reply 0; Time Exceeded 11,
//!   Destination Unreachable 3. A raw IPv4 socket reads the IP header too, so the sender is
//!   taken from it.
//! - IPv6: echo request type 128, reply 129; Time Exceeded 3, Destination Unreachable 1. The
//!   kernel computes ICMPv6 checksums on raw and ping ICMPv6 sockets (RFC 3542 §3.1: the
//!   pseudo header needs the source address the route picks), so ours stays 0. A raw ICMPv6
//!   socket reads no IPv6 header: the sender comes from recvfrom's address, and an error's
//!   quote is the 40-byte IPv6 header of our probe followed by its first bytes.
//!
//! Hand-written: three message types per family, and the parser must match our own identifier
//! and sequence number inside a quote, which the ICMP crates (pnet, etherparse) leave to the
//! caller anyway.

use super::probe::ReplyKind;
use std::net::{IpAddr, Ipv4Addr};

/// The address family of a trace, from its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn of(ip: IpAddr) -> Family {
        match ip {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }

    fn echo_request_type(self) -> u8 {
        match self {
            Family::V4 => 8,
            Family::V6 => 128,
        }
    }

    fn echo_reply_type(self) -> u8 {
        match self {
            Family::V4 => 0,
            Family::V6 => 129,
        }
    }

    /// ICMP Time Exceeded (a router on the way: the TTL / hop limit ran out).
    pub fn is_time_exceeded(self, icmp_type: u8) -> bool {
        icmp_type
            == match self {
                Family::V4 => 11,
                Family::V6 => 3,
            }
    }

    /// ICMP Destination Unreachable.
    pub fn is_unreachable(self, icmp_type: u8) -> bool {
        icmp_type
            == match self {
                Family::V4 => 3,
                Family::V6 => 1,
            }
    }

    /// The echo request with `ident` and `seq`. IPv4's checksum is filled in; IPv6's is left 0
    /// for the kernel.
    pub fn echo_request(self, ident: u16, seq: u16) -> [u8; 16] {
        let mut p = [0u8; 16];
        p[0] = self.echo_request_type();
        p[4..6].copy_from_slice(&ident.to_be_bytes());
        p[6..8].copy_from_slice(&seq.to_be_bytes());
        p[8..16].copy_from_slice(b"netdoctr");
        if self == Family::V4 {
            let sum = checksum(&p);
            p[2..4].copy_from_slice(&sum.to_be_bytes());
        }
        p
    }

    /// Parses what a raw ICMP socket of this family read (`from`: recvfrom's address, used by
    /// IPv6, whose raw sockets read no IP header): the sender and the reply kind when it answers
    /// our echo (`ident`, `seq`), directly (echo reply) or quoted in Time Exceeded /
    /// Destination Unreachable.
    pub fn parse_raw(
        self,
        pkt: &[u8],
        from: Option<IpAddr>,
        ident: u16,
        seq: u16,
    ) -> Option<(IpAddr, ReplyKind)> {
        let (src, icmp) = match self {
            Family::V4 => {
                let ihl = usize::from(pkt.first()? & 0x0f) * 4;
                let src = Ipv4Addr::new(*pkt.get(12)?, *pkt.get(13)?, pkt[14], pkt[15]);
                (IpAddr::V4(src), pkt.get(ihl..)?)
            }
            Family::V6 => (from?, pkt),
        };
        let ours = |echo: &[u8], request: u8| -> bool {
            echo.len() >= 8
                && echo[0] == request
                && u16::from_be_bytes([echo[4], echo[5]]) == ident
                && u16::from_be_bytes([echo[6], echo[7]]) == seq
        };
        let t = *icmp.first()?;
        if t == self.echo_reply_type() {
            return ours(icmp, t).then_some((src, ReplyKind::Reached));
        }
        let kind = if self.is_time_exceeded(t) {
            ReplyKind::TimeExceeded
        } else if self.is_unreachable(t) {
            ReplyKind::Unreachable { code: icmp[1] }
        } else {
            return None;
        };
        let inner = icmp.get(8..)?;
        let quoted = match self {
            Family::V4 => inner.get(usize::from(inner.first()? & 0x0f) * 4..)?,
            // Our probes carry no extension headers: ICMPv6 follows the fixed header.
            Family::V6 => {
                if inner.len() < 40 || inner[0] >> 4 != 6 || inner[6] != 58 {
                    return None;
                }
                &inner[40..]
            }
        };
        ours(quoted, self.echo_request_type()).then_some((src, kind))
    }
}

/// The Internet checksum (RFC 1071).
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in data.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], 0])
        };
        sum += u32::from(w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    #[test]
    fn echo_requests_per_family() {
        let p = Family::V4.echo_request(0x1234, 7);
        assert_eq!(checksum(&p), 0);
        assert_eq!(&p[4..8], &[0x12, 0x34, 0, 7]);
        let p = Family::V6.echo_request(0x1234, 7);
        assert_eq!((p[0], p[2], p[3]), (128, 0, 0));
        assert_eq!(&p[4..8], &[0x12, 0x34, 0, 7]);
    }

    fn ipv4(src: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0];
        h.extend_from_slice(&src);
        h.extend_from_slice(&[10, 0, 0, 1]);
        h.extend_from_slice(payload);
        h
    }

    #[test]
    fn raw_icmp_replies_are_matched_to_their_probe() {
        let f = Family::V4;
        let mut reply = f.echo_request(9, 3).to_vec();
        reply[0] = 0;
        let pkt = ipv4([10, 0, 0, 9], &reply);
        assert_eq!(
            f.parse_raw(&pkt, None, 9, 3),
            Some(("10.0.0.9".parse().unwrap(), ReplyKind::Reached))
        );
        assert_eq!(f.parse_raw(&pkt, None, 9, 4), None);
        // Time exceeded from a router quoting our echo request.
        let quoted = ipv4([10, 0, 0, 1], &f.echo_request(9, 3));
        let mut te = vec![11, 0, 0, 0, 0, 0, 0, 0];
        te.extend_from_slice(&quoted);
        let pkt = ipv4([10, 0, 1, 1], &te);
        assert_eq!(
            f.parse_raw(&pkt, None, 9, 3),
            Some(("10.0.1.1".parse().unwrap(), ReplyKind::TimeExceeded))
        );
        assert_eq!(f.parse_raw(&pkt, None, 8, 3), None);
        assert_eq!(f.parse_raw(&pkt[..30], None, 9, 3), None);
    }

    /// An IPv6 header (next header ICMPv6) around `payload`.
    fn ipv6(payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x60, 0, 0, 0, 0, payload.len() as u8, 58, 1];
        h.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        h.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        h.extend_from_slice(payload);
        h
    }

    #[test]
    fn raw_icmpv6_replies_are_matched_to_their_probe() {
        let f = Family::V6;
        let router: IpAddr = "fd00:1::1".parse().unwrap();
        let link_local: IpAddr = "fe80::1".parse().unwrap();
        let mut reply = f.echo_request(9, 3).to_vec();
        reply[0] = 129;
        assert_eq!(
            f.parse_raw(&reply, Some(router), 9, 3),
            Some((router, ReplyKind::Reached))
        );
        assert_eq!(f.parse_raw(&reply, Some(router), 9, 4), None);
        assert_eq!(f.parse_raw(&reply, None, 9, 3), None);
        // Our own echo request looped back on the raw socket is not an answer.
        assert_eq!(f.parse_raw(&f.echo_request(9, 3), Some(router), 9, 3), None);
        for (t, code, kind) in [
            (3, 0, ReplyKind::TimeExceeded),
            (1, 3, ReplyKind::Unreachable { code: 3 }),
        ] {
            let mut e = vec![t, code, 0, 0, 0, 0, 0, 0];
            e.extend_from_slice(&ipv6(&f.echo_request(9, 3)));
            assert_eq!(
                f.parse_raw(&e, Some(link_local), 9, 3),
                Some((link_local, kind))
            );
            assert_eq!(f.parse_raw(&e, Some(link_local), 10, 3), None);
            assert_eq!(f.parse_raw(&e[..50], Some(link_local), 9, 3), None);
        }
        // An IPv4 Time Exceeded type (11) means nothing in ICMPv6.
        let mut e = vec![11, 0, 0, 0, 0, 0, 0, 0];
        e.extend_from_slice(&ipv6(&f.echo_request(9, 3)));
        assert_eq!(f.parse_raw(&e, Some(router), 9, 3), None);
    }
}

//! Test packet builders: a scripted TCP conversation as raw IPv4 packets (LINKTYPE_RAW)
//! pushed through an [`Analyzer`].

use std::net::{IpAddr, SocketAddr};

use crate::analyze::{Analyzer, AnalyzerConfig};
use crate::decode::TcpFlags as F;
use crate::packet::{LinkType, RawPacket};

pub const MS: i64 = 1_000_000;

/// A scripted TCP conversation as raw IPv4 packets (LINKTYPE_RAW).
pub struct Script {
    pub c: SocketAddr,
    pub s: SocketAddr,
    pub cseq: u32,
    pub sseq: u32,
    pub t: i64,
    pub frame: u64,
    pub a: Analyzer,
}

pub fn ipv4(
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    ipv4_full(src, dst, seq, ack, flags, payload, 0xffff, &[], 0)
}

/// An IPv4/TCP packet with a given window, SACK blocks and IP id.
#[allow(clippy::too_many_arguments)]
pub fn ipv4_full(
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
    window: u16,
    sack: &[(u32, u32)],
    ip_id: u16,
) -> Vec<u8> {
    let (IpAddr::V4(s), IpAddr::V4(d)) = (src.ip(), dst.ip()) else {
        unreachable!()
    };
    let syn = flags & F::SYN != 0;
    let mut opts: Vec<u8> = if syn { vec![2, 4, 0x05, 0xb4] } else { vec![] };
    if !sack.is_empty() {
        opts.extend_from_slice(&[1, 1, 5, 2 + 8 * sack.len() as u8]);
        for (l, r) in sack {
            opts.extend_from_slice(&l.to_be_bytes());
            opts.extend_from_slice(&r.to_be_bytes());
        }
    }
    let tcp_len = 20 + opts.len();
    let total = (20 + tcp_len + payload.len()) as u16;
    let mut p = vec![0x45, 0];
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&ip_id.to_be_bytes());
    p.extend_from_slice(&[0x40, 0, 64, 6, 0, 0]);
    p.extend_from_slice(&s.octets());
    p.extend_from_slice(&d.octets());
    p.extend_from_slice(&src.port().to_be_bytes());
    p.extend_from_slice(&dst.port().to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&ack.to_be_bytes());
    p.push(((tcp_len / 4) as u8) << 4);
    p.push(flags);
    p.extend_from_slice(&window.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, 0]);
    p.extend_from_slice(&opts);
    p.extend_from_slice(payload);
    p
}

impl Script {
    pub fn new(c: &str, s: &str) -> Self {
        Script {
            c: c.parse().unwrap(),
            s: s.parse().unwrap(),
            cseq: 1000,
            sseq: 5000,
            t: 1_700_000_000_000_000_000,
            frame: 0,
            a: Analyzer::new(AnalyzerConfig::default()),
        }
    }
    /// Sends from the client (`from_client`) or the server after `dt` ns.
    pub fn send(&mut self, dt: i64, from_client: bool, flags: u8, payload: &[u8]) {
        self.t += dt;
        self.frame += 1;
        let (src, dst, seq, ack) = if from_client {
            (self.c, self.s, self.cseq, self.sseq)
        } else {
            (self.s, self.c, self.sseq, self.cseq)
        };
        let p = ipv4(src, dst, seq, ack, flags, payload);
        let adv = payload.len() as u32 + u32::from(flags & (F::SYN | F::FIN) != 0);
        if from_client {
            self.cseq = self.cseq.wrapping_add(adv);
        } else {
            self.sseq = self.sseq.wrapping_add(adv);
        }
        self.a.push(&RawPacket {
            frame: self.frame,
            ts_ns: self.t,
            link: LinkType::Raw,
            data: &p,
            orig_len: p.len() as u32,
        });
    }
    /// Sends a segment with explicit sequence numbers (the script's own are not moved).
    #[allow(clippy::too_many_arguments)]
    pub fn raw(
        &mut self,
        dt: i64,
        from_client: bool,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
        window: u16,
        sack: &[(u32, u32)],
        ip_id: u16,
    ) {
        self.t += dt;
        self.frame += 1;
        let (src, dst) = if from_client {
            (self.c, self.s)
        } else {
            (self.s, self.c)
        };
        let p = ipv4_full(src, dst, seq, ack, flags, payload, window, sack, ip_id);
        self.a.push(&RawPacket {
            frame: self.frame,
            ts_ns: self.t,
            link: LinkType::Raw,
            data: &p,
            orig_len: p.len() as u32,
        });
    }
    pub fn handshake(&mut self) {
        self.send(0, true, F::SYN, b"");
        self.send(50_000, false, F::SYN | F::ACK, b"");
        self.send(50_000, true, F::ACK, b"");
    }
    pub fn close(&mut self) {
        self.send(MS, true, F::FIN | F::ACK, b"");
        self.send(50_000, false, F::FIN | F::ACK, b"");
        self.send(50_000, true, F::ACK, b"");
    }
}

pub const REQ: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
pub const HDR: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 600\r\n\r\n";

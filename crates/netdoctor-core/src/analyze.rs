//! The analyzer: decodes packets, rebuilds TCP connections, splits HTTP/1.x exchanges and
//! feeds the detectors. Streaming: [`Analyzer::push`] one packet at a time, then
//! [`Analyzer::finish`].
//!
//! TCP reconstruction is hand-written: crates that reassemble TCP streams (for IDS use)
//! buffer payload and do not expose the timing of ACKs relative to data, which is what the
//! detectors need. We keep per direction only sequence numbers and a few `Copy` packet
//! summaries; payload bytes are never stored. Memory is bounded by the number of
//! concurrently open connections ([`MAX_CONNECTIONS`]): state is dropped on RST or when both
//! FINs were seen, latencies go into HDR histograms, and detectors keep a few examples.
//!
//! Which side is the server: the receiver of the SYN; without a captured handshake,
//! `server_port` when given, else the side whose payload starts with an HTTP status line (or
//! the peer of the side that sends a request line), else the lower port.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use crate::decode::{TcpSegment, decode};
use crate::detect::Pkt;
use crate::detect::nagle_delayed_ack::{NagleAgg, NagleDir};
use crate::detect::slow_server_processing::{ExchangeView, SlowAgg};
use crate::finding::{Finding, rank};
use crate::packet::RawPacket;
use crate::stats::{Hist, Percentiles};

/// Connections tracked at once; more are counted but not analyzed.
pub const MAX_CONNECTIONS: usize = 65_536;

#[derive(Default, Clone, Debug)]
pub struct AnalyzerConfig {
    /// The server's port, for connections whose handshake was not captured.
    pub server_port: Option<u16>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct CaptureStats {
    pub packets: u64,
    /// Sum of the on-the-wire lengths.
    pub bytes: u64,
    pub tcp_segments: u64,
    /// Valid packets that are not TCP segments (ARP, UDP, IP fragments, ...).
    pub other_packets: u64,
    pub decode_errors: u64,
    /// Connections analyzed (each SYN or each mid-stream connection counts once).
    pub connections: u64,
    pub connections_with_handshake: u64,
    /// Connections not analyzed because [`MAX_CONNECTIONS`] were open.
    pub connections_untracked: u64,
    /// Data segments entirely below the highest sequence number already sent.
    pub retransmitted_segments: u64,
    pub first_ts_ns: Option<i64>,
    pub last_ts_ns: Option<i64>,
    pub duration_s: f64,
    /// Packets the kernel ring dropped during a live capture.
    pub capture_drops: u64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ExchangeStats {
    /// Completed HTTP/1.x request/response exchanges.
    pub count: u64,
    /// Last response byte − first request byte, as seen at the capture point.
    pub latency_ms: Percentiles,
    /// First response byte − last request byte, minus the handshake RTT when known.
    pub server_time_ms: Percentiles,
    /// Median handshake RTT (SYN → ACK of the SYN/ACK) over connections with a handshake.
    pub rtt_ms: Option<f64>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Analysis {
    pub stats: CaptureStats,
    pub exchanges: ExchangeStats,
    /// Ranked with [`crate::finding::rank`].
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
}

/// One endpoint, IPv4 stored as v4-mapped IPv6: a compact, cheaply hashed key part.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Endpoint {
    ip: [u8; 16],
    port: u16,
}

impl From<SocketAddr> for Endpoint {
    fn from(a: SocketAddr) -> Self {
        let ip = match a.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        };
        Endpoint { ip, port: a.port() }
    }
}

/// Both endpoints, lower first, so both directions map to the same entry.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ConnKey {
    lo: Endpoint,
    hi: Endpoint,
}

/// The key and the index (0: lo, 1: hi) of the sender.
fn conn_key(src: SocketAddr, dst: SocketAddr) -> (ConnKey, usize) {
    let (s, d) = (Endpoint::from(src), Endpoint::from(dst));
    if s <= d {
        (ConnKey { lo: s, hi: d }, 0)
    } else {
        (ConnKey { lo: d, hi: s }, 1)
    }
}

fn seq_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// How the server side was decided; a stronger reason may override a weaker one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Reason {
    LowerPort,
    Payload,
    Port,
    Handshake,
}

/// One direction of a connection: the data sent by one endpoint.
#[derive(Clone, Copy, Default)]
struct Dir {
    started: bool,
    isn: u32,
    /// Highest sequence number sent + 1 (absolute).
    nxt: u32,
    /// Highest ACK received from the peer for this direction's data.
    acked: Option<u32>,
    mss: Option<u16>,
    wscale: Option<u8>,
    /// Last advertised receive window of this endpoint, scaled when both sides negotiated it.
    window: u32,
    fin: bool,
    nagle: NagleDir,
}

impl Dir {
    /// Relative sequence number (as Wireshark shows it).
    #[allow(dead_code)]
    fn rel(&self, seq: u32) -> u32 {
        seq.wrapping_sub(self.isn)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Request,
    Response,
}

#[derive(Clone, Copy)]
struct Exchange {
    first_req: Pkt,
    last_req: Pkt,
    first_resp: Option<Pkt>,
    last_resp: Pkt,
    /// `false` when the captured request start is not an HTTP method.
    http: bool,
    stalled_server: bool,
    stalled_client: bool,
}

struct Conn {
    ep: [SocketAddr; 2],
    /// Index of the server endpoint and why.
    server: usize,
    reason: Reason,
    dirs: [Dir; 2],
    syn_ts: Option<i64>,
    synack_seen: bool,
    rtt_ns: Option<i64>,
    phase: Phase,
    cur: Option<Exchange>,
}

/// Request-line methods of HTTP/1.x (with the following space).
const METHODS: [&[u8]; 9] = [
    b"GET ",
    b"POST ",
    b"PUT ",
    b"HEAD ",
    b"DELETE ",
    b"OPTIONS ",
    b"PATCH ",
    b"CONNECT ",
    b"TRACE ",
];

/// At least 4 captured bytes that start (a prefix of) a request line.
fn looks_like_request(p: &[u8]) -> bool {
    p.len() >= 4
        && METHODS.iter().any(|m| {
            let n = p.len().min(m.len());
            m[..n] == p[..n]
        })
}

fn looks_like_response(p: &[u8]) -> bool {
    let n = p.len().min(7);
    n >= 4 && b"HTTP/1."[..n] == p[..n]
}

pub struct Analyzer {
    cfg: AnalyzerConfig,
    stats: CaptureStats,
    conns: HashMap<ConnKey, Conn, foldhash::fast::RandomState>,
    aggs: Aggs,
}

/// Capture-wide aggregates, kept apart from the connection table so both can be borrowed
/// at once (one hash lookup per packet).
struct Aggs {
    handshake_rtt: Hist,
    latency: Hist,
    server_time: Hist,
    exchanges: u64,
    nagle: NagleAgg,
    slow: SlowAgg,
}

impl Analyzer {
    pub fn new(cfg: AnalyzerConfig) -> Self {
        Analyzer {
            cfg,
            stats: CaptureStats::default(),
            conns: HashMap::default(),
            aggs: Aggs {
                handshake_rtt: Hist::new(),
                latency: Hist::new(),
                server_time: Hist::new(),
                exchanges: 0,
                nagle: NagleAgg::default(),
                slow: SlowAgg::default(),
            },
        }
    }

    /// Feeds one captured packet. Never panics; undecodable packets are counted.
    pub fn push(&mut self, pkt: &RawPacket<'_>) {
        self.stats.packets += 1;
        self.stats.bytes += u64::from(pkt.orig_len);
        if self.stats.first_ts_ns.is_none() {
            self.stats.first_ts_ns = Some(pkt.ts_ns);
        }
        self.stats.last_ts_ns = Some(pkt.ts_ns);
        match decode(pkt) {
            Ok(Some(seg)) => {
                self.stats.tcp_segments += 1;
                self.on_segment(&seg);
            }
            Ok(None) => self.stats.other_packets += 1,
            Err(_) => self.stats.decode_errors += 1,
        }
    }

    /// Packets the kernel dropped before they reached the capture (live capture).
    pub fn note_capture_drops(&mut self, drops: u64) {
        self.stats.capture_drops += drops;
    }

    fn on_segment(&mut self, seg: &TcpSegment<'_>) {
        let (key, i) = conn_key(seg.src, seg.dst);
        let j = 1 - i;
        let f = seg.flags;
        let opening = f.syn() && !f.ack();

        if opening && let Some(old) = self.conns.remove(&key) {
            // Port reuse: a new connection on the same 4-tuple.
            self.close(old);
        }
        let n_conns = self.conns.len();
        let c = match self.conns.entry(key) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                // Only a SYN, a SYN/ACK or data opens state: trailing ACKs/FINs of a closed
                // connection must not resurrect it.
                if !(f.syn() || seg.payload_len > 0) || f.rst() {
                    return;
                }
                if n_conns >= MAX_CONNECTIONS {
                    self.stats.connections_untracked += 1;
                    return;
                }
                self.stats.connections += 1;
                if f.syn() {
                    self.stats.connections_with_handshake += 1;
                }
                v.insert(new_conn(&self.cfg, key, i, seg))
            }
        };
        let from_server = c.server == i;
        let pkt = Pkt {
            frame: seg.frame,
            ts_ns: seg.ts_ns,
            from_server,
            flags: f,
            len: seg.payload_len,
        };

        // Handshake.
        if f.syn() {
            let d = &mut c.dirs[i];
            d.started = true;
            d.isn = seg.seq;
            d.nxt = seg.seq.wrapping_add(1);
            d.mss = seg.mss;
            d.wscale = seg.wscale;
            if opening {
                c.syn_ts = Some(seg.ts_ns);
            } else {
                c.synack_seen = true;
            }
        } else if f.ack()
            && c.rtt_ns.is_none()
            && c.synack_seen
            && !from_server
            && let Some(t) = c.syn_ts
        {
            let rtt = seg.ts_ns - t;
            if rtt >= 0 {
                c.rtt_ns = Some(rtt);
                self.aggs.handshake_rtt.record_ns(rtt);
            }
        }

        // Window (scaled only when both sides offered window scaling, never on SYNs).
        {
            let scale = match (c.dirs[i].wscale, c.dirs[j].wscale) {
                (Some(s), Some(_)) if !f.syn() => u32::from(s.min(14)),
                _ => 0,
            };
            c.dirs[i].window = u32::from(seg.window) << scale;
        }

        // ACK of the peer's data.
        if f.ack() {
            let peer = &mut c.dirs[j];
            if peer.acked.is_none_or(|a| seq_gt(seg.ack, a)) {
                peer.acked = Some(seg.ack);
            }
            if seg.payload_len == 0 && !f.syn() && !f.fin() && !f.rst() {
                peer.nagle.on_peer_ack(seg.ack, pkt);
            }
        }

        // Data.
        if seg.payload_len > 0 {
            let d = &mut c.dirs[i];
            if !d.started {
                d.started = true;
                d.isn = seg.seq.wrapping_sub(1);
                d.nxt = seg.seq;
            }
            let end = seg.seq.wrapping_add(seg.payload_len);
            if seq_gt(end, d.nxt) {
                d.nxt = end;
                // Re-orient a guessed connection on the first telling payload.
                if c.reason <= Reason::LowerPort && c.cur.is_none() {
                    if looks_like_response(seg.payload) {
                        c.server = i;
                        c.reason = Reason::Payload;
                    } else if looks_like_request(seg.payload) {
                        c.server = j;
                        c.reason = Reason::Payload;
                    }
                }
                let from_server = c.server == i;
                let pkt = Pkt { from_server, ..pkt };
                self.aggs.on_new_data(c, i, pkt, end, seg.payload);
            } else {
                self.stats.retransmitted_segments += 1;
            }
        } else if seg.seq_len() > 0 {
            let d = &mut c.dirs[i];
            let end = seg.seq.wrapping_add(seg.seq_len());
            if !d.started {
                d.started = true;
                d.isn = seg.seq.wrapping_sub(1);
                d.nxt = end;
            } else if seq_gt(end, d.nxt) {
                d.nxt = end;
            }
        }

        // Teardown.
        if f.fin() {
            c.dirs[i].fin = true;
        }
        if (f.rst() || (c.dirs[0].fin && c.dirs[1].fin))
            && let Some(c) = self.conns.remove(&key)
        {
            self.close(c);
        }
    }
}

fn new_conn(cfg: &AnalyzerConfig, key: ConnKey, i: usize, seg: &TcpSegment<'_>) -> Conn {
    let ep = if i == 0 {
        [seg.src, seg.dst]
    } else {
        [seg.dst, seg.src]
    };
    let f = seg.flags;
    let (server, reason) = if f.syn() && !f.ack() {
        (1 - i, Reason::Handshake)
    } else if f.syn() {
        (i, Reason::Handshake)
    } else if let Some(p) = cfg.server_port
        && (key.lo.port == p) != (key.hi.port == p)
    {
        (usize::from(key.hi.port == p), Reason::Port)
    } else if looks_like_response(seg.payload) {
        (i, Reason::Payload)
    } else if looks_like_request(seg.payload) {
        (1 - i, Reason::Payload)
    } else {
        (usize::from(key.hi.port < key.lo.port), Reason::LowerPort)
    };
    Conn {
        ep,
        server,
        reason,
        dirs: [Dir::default(); 2],
        syn_ts: None,
        synack_seen: false,
        rtt_ns: None,
        phase: Phase::Idle,
        cur: None,
    }
}

impl Aggs {
    /// New (not retransmitted) payload from endpoint `i`.
    fn on_new_data(&mut self, c: &mut Conn, i: usize, pkt: Pkt, end: u32, payload: &[u8]) {
        let j = 1 - i;
        let client = c.ep[1 - c.server];
        let server = c.ep[c.server];

        // HTTP exchange splitting.
        let mut finished = None;
        if pkt.from_server {
            match c.phase {
                Phase::Request => {
                    if let Some(x) = c.cur.as_mut() {
                        x.first_resp = Some(pkt);
                        x.last_resp = pkt;
                    }
                    c.phase = Phase::Response;
                }
                Phase::Response => {
                    if let Some(x) = c.cur.as_mut() {
                        x.last_resp = pkt;
                    }
                }
                Phase::Idle => {}
            }
        } else {
            match c.phase {
                Phase::Request => {
                    if let Some(x) = c.cur.as_mut() {
                        x.last_req = pkt;
                    }
                }
                Phase::Idle | Phase::Response => {
                    finished = c.cur.take();
                    c.cur = Some(Exchange {
                        first_req: pkt,
                        last_req: pkt,
                        first_resp: None,
                        last_resp: pkt,
                        http: payload.len() < 4 || looks_like_request(payload),
                        stalled_server: false,
                        stalled_client: false,
                    });
                    c.phase = Phase::Request;
                }
            }
        }

        // Nagle: this side's tracker sees the data, the peer's learns a new message began.
        let rtt = c.rtt_ns;
        let mss = c.dirs[j].mss; // the MSS this side may send is the one the peer announced
        let stall = c.dirs[i].nagle.on_data(pkt, end, mss, rtt);
        c.dirs[j].nagle.on_peer_data();
        if let Some(st) = stall {
            if let Some(x) = c.cur.as_mut() {
                if pkt.from_server {
                    x.stalled_server = true;
                } else {
                    x.stalled_client = true;
                }
            }
            self.nagle.on_stall(client, server, st);
        }
        if let Some(x) = finished {
            self.finish_exchange(client, server, rtt, x);
        }
    }

    fn finish_exchange(
        &mut self,
        client: SocketAddr,
        server: SocketAddr,
        rtt: Option<i64>,
        x: Exchange,
    ) {
        let Some(first_resp) = x.first_resp else {
            return;
        };
        if !x.http {
            return;
        }
        self.exchanges += 1;
        self.latency
            .record_ns(x.last_resp.ts_ns - x.first_req.ts_ns);
        let server_time = (first_resp.ts_ns - x.last_req.ts_ns - rtt.unwrap_or(0)).max(0);
        self.server_time.record_ns(server_time);
        if x.stalled_server {
            self.nagle.on_affected_exchange(true);
        }
        if x.stalled_client {
            self.nagle.on_affected_exchange(false);
        }
        self.slow.on_exchange(&ExchangeView {
            client,
            server,
            first_req: x.first_req,
            last_req: x.last_req,
            first_resp,
            last_resp: x.last_resp,
            server_time_ns: server_time,
        });
    }
}

impl Analyzer {
    /// A connection ended (FIN both ways, RST, or reuse): its exchange is complete.
    fn close(&mut self, mut c: Conn) {
        if c.phase == Phase::Response
            && let Some(x) = c.cur.take()
        {
            let (client, server) = (c.ep[1 - c.server], c.ep[c.server]);
            self.aggs.finish_exchange(client, server, c.rtt_ns, x);
        }
    }

    /// Ends the analysis. Exchanges still in progress (cut off by the end of the capture)
    /// are not counted: their response may be incomplete.
    pub fn finish(mut self) -> Analysis {
        let t0 = self.stats.first_ts_ns.unwrap_or(0);
        if let (Some(a), Some(b)) = (self.stats.first_ts_ns, self.stats.last_ts_ns) {
            self.stats.duration_s = (b - a).max(0) as f64 / 1e9;
        }
        let mut findings = Vec::new();
        let g = &self.aggs;
        g.nagle.finish(g.exchanges, t0, &mut findings);
        g.slow
            .finish(g.exchanges, &g.latency, &g.server_time, t0, &mut findings);
        rank(&mut findings);

        let mut warnings = Vec::new();
        let s = &self.stats;
        if s.decode_errors > 0 {
            warnings.push(format!("{} packets could not be decoded", s.decode_errors));
        }
        if s.capture_drops > 0 {
            warnings.push(format!(
                "capture dropped {} packets: findings may be incomplete",
                s.capture_drops
            ));
        }
        if s.connections_untracked > 0 {
            warnings.push(format!(
                "{} connections were not analyzed (more than {MAX_CONNECTIONS} open at once)",
                s.connections_untracked
            ));
        }
        if s.packets > 0 && s.tcp_segments == 0 {
            warnings.push("the capture contains no TCP segments".to_string());
        }
        let g = &self.aggs;
        let rtt_ms = (g.handshake_rtt.len() > 0).then(|| g.handshake_rtt.quantile_ms(0.5));
        Analysis {
            stats: self.stats,
            exchanges: ExchangeStats {
                count: g.exchanges,
                latency_ms: g.latency.percentiles(),
                server_time_ms: g.server_time.percentiles(),
                rtt_ms,
            },
            findings,
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::finding::{Evidence, FindingId, Side};
    use crate::packet::LinkType;

    const MS: i64 = 1_000_000;

    /// A scripted TCP conversation as raw IPv4 packets (LINKTYPE_RAW).
    struct Script {
        c: SocketAddr,
        s: SocketAddr,
        cseq: u32,
        sseq: u32,
        t: i64,
        frame: u64,
        a: Analyzer,
    }

    fn ipv4(
        src: SocketAddr,
        dst: SocketAddr,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let (IpAddr::V4(s), IpAddr::V4(d)) = (src.ip(), dst.ip()) else {
            unreachable!()
        };
        let syn = flags & F::SYN != 0;
        let opts: &[u8] = if syn { &[2, 4, 0x05, 0xb4] } else { &[] };
        let tcp_len = 20 + opts.len();
        let total = (20 + tcp_len + payload.len()) as u16;
        let mut p = vec![0x45, 0];
        p.extend_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
        p.extend_from_slice(&s.octets());
        p.extend_from_slice(&d.octets());
        p.extend_from_slice(&src.port().to_be_bytes());
        p.extend_from_slice(&dst.port().to_be_bytes());
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&ack.to_be_bytes());
        p.push(((tcp_len / 4) as u8) << 4);
        p.push(flags);
        p.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
        p.extend_from_slice(opts);
        p.extend_from_slice(payload);
        p
    }

    impl Script {
        fn new(c: &str, s: &str) -> Self {
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
        fn send(&mut self, dt: i64, from_client: bool, flags: u8, payload: &[u8]) {
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
        fn handshake(&mut self) {
            self.send(0, true, F::SYN, b"");
            self.send(50_000, false, F::SYN | F::ACK, b"");
            self.send(50_000, true, F::ACK, b"");
        }
        fn close(&mut self) {
            self.send(MS, true, F::FIN | F::ACK, b"");
            self.send(50_000, false, F::FIN | F::ACK, b"");
            self.send(50_000, true, F::ACK, b"");
        }
    }

    const REQ: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    const HDR: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 600\r\n\r\n";

    #[test]
    fn client_side_nagle_is_side_client() {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        for _ in 0..12 {
            // Request headers, then the body held by the client's Nagle until the server's
            // delayed ACK 40 ms later.
            s.send(
                MS,
                true,
                F::PSH | F::ACK,
                b"POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\n",
            );
            s.send(40 * MS, false, F::ACK, b"");
            s.send(100_000, true, F::PSH | F::ACK, b"0123456789");
            s.send(200_000, false, F::PSH | F::ACK, HDR);
            s.send(50_000, true, F::ACK, b"");
        }
        s.close();
        let an = s.a.finish();
        assert_eq!(an.exchanges.count, 12);
        let f = &an.findings[0];
        assert_eq!(f.id, FindingId::NagleDelayedAck);
        assert_eq!(f.side, Side::Client);
        assert!(f.fix.contains("client"));
        let added = f.impact.added_latency_ms.unwrap();
        assert!((39.0..=41.0).contains(&added), "{added}");
        assert_eq!(f.impact.affected_fraction, Some(1.0));
        assert_eq!(an.stats.connections, 1);
        // The RTT is 100 µs: latency ≈ 40 + 0.1 + 0.2 ms.
        assert!(
            (40.0..41.0).contains(&an.exchanges.latency_ms.p50),
            "{:?}",
            an.exchanges
        );
    }

    #[test]
    fn prompt_ack_or_new_request_is_not_a_stall() {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        for _ in 0..10 {
            s.send(MS, true, F::PSH | F::ACK, REQ);
            s.send(100_000, false, F::PSH | F::ACK, HDR);
            // The client ACKs promptly; the body follows only 45 ms later (server think
            // time between two writes, not Nagle).
            s.send(50_000, true, F::ACK, b"");
            s.send(45 * MS, false, F::PSH | F::ACK, &[b'x'; 600]);
            // Idle client: delayed ACK 40 ms later, then the next request (peer data).
            s.send(40 * MS, true, F::ACK, b"");
        }
        s.close();
        let an = s.a.finish();
        assert_eq!(an.exchanges.count, 10);
        assert!(
            an.findings
                .iter()
                .all(|f| f.id != FindingId::NagleDelayedAck),
            "{:#?}",
            an.findings
        );
    }

    #[test]
    fn retransmission_is_not_new_data() {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        // Retransmit the same response segment 200 ms later.
        s.sseq -= HDR.len() as u32;
        s.send(200 * MS, false, F::PSH | F::ACK, HDR);
        s.send(50_000, true, F::ACK, b"");
        s.close();
        let an = s.a.finish();
        assert_eq!(an.stats.retransmitted_segments, 1);
        assert_eq!(an.exchanges.count, 1);
        // The retransmission did not extend the response: latency = 0.1 ms, not 200 ms.
        assert!(an.exchanges.latency_ms.max < 1.0, "{:?}", an.exchanges);
    }

    #[test]
    fn closed_connections_free_their_state() {
        let mut a = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        for port in 0..200u16 {
            a.c.set_port(20000 + port);
            a.handshake();
            a.send(MS, true, F::PSH | F::ACK, REQ);
            a.send(100_000, false, F::PSH | F::ACK, HDR);
            a.close();
            assert!(a.a.conns.is_empty(), "state kept after FIN/FIN/ACK");
        }
        // A reset also frees it.
        a.c.set_port(30000);
        a.handshake();
        a.send(MS, true, F::RST, b"");
        assert!(a.a.conns.is_empty());
        let an = a.a.finish();
        assert_eq!(an.stats.connections, 201);
        assert_eq!(an.exchanges.count, 200);
        assert_eq!(an.exchanges.rtt_ms, Some(0.1));
    }

    #[test]
    fn mid_stream_orientation_from_status_line() {
        // The server has the HIGHER port and the handshake is missing: the status line
        // decides.
        let mut s = Script::new("10.0.0.1:80", "10.0.0.2:50000");
        for _ in 0..6 {
            s.send(MS, true, F::PSH | F::ACK, REQ);
            s.send(100_000, false, F::PSH | F::ACK, HDR);
            s.send(40 * MS, true, F::ACK, b"");
            s.send(100_000, false, F::PSH | F::ACK, &[b'x'; 600]);
        }
        let an = s.a.finish();
        assert_eq!(an.stats.connections_with_handshake, 0);
        // 6 requests; the last one is still in progress at the end of the capture.
        assert_eq!(an.exchanges.count, 5);
        let f = &an.findings[0];
        assert_eq!((f.id, f.side), (FindingId::NagleDelayedAck, Side::Server));
        let Evidence::Packets { connection, .. } = &f.evidence[0] else {
            panic!()
        };
        assert_eq!(connection, "10.0.0.1:80 → 10.0.0.2:50000");
    }

    #[test]
    fn garbage_is_counted_and_warned() {
        let mut a = Analyzer::new(AnalyzerConfig::default());
        for len in 0..64usize {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8 | 0x40).collect();
            a.push(&RawPacket {
                frame: len as u64 + 1,
                ts_ns: len as i64,
                link: LinkType::Ethernet,
                data: &data,
                orig_len: len as u32,
            });
        }
        a.note_capture_drops(3);
        let an = a.finish();
        assert_eq!(an.stats.packets, 64);
        assert!(an.stats.decode_errors > 0);
        assert!(
            an.warnings
                .iter()
                .any(|w| w.ends_with("packets could not be decoded"))
        );
        assert!(
            an.warnings
                .iter()
                .any(|w| w.contains("capture dropped 3 packets"))
        );
        assert!(an.findings.is_empty());
    }
}

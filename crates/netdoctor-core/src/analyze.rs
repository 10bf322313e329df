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
//!
//! Data that is not new is classified by [`crate::detect::loss`] (out of order, retransmitted,
//! spurious); data the receiver acknowledged but the capture never saw is counted as a capture
//! gap. Both capture gaps and the ring's own drops ([`Analyzer::note_capture_drops`]) become
//! warnings, and transport findings computed over an incomplete capture say so. Each HTTP/1.x
//! exchange gets a latency breakdown ([`crate::breakdown`]).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use crate::breakdown::{Breakdown, BreakdownAgg, Cause, ExchangeParts};
use crate::decode::{TcpSegment, decode};
use crate::detect::Pkt;
use crate::detect::connection_reset::{ResetAgg, ResetKind};
use crate::detect::delayed_ack_stall;
use crate::detect::loss::{Episode, LossAgg, LossDir, Old};
use crate::detect::nagle_delayed_ack::{self, NagleDir, StallSides};
use crate::detect::short_connections::ShortAgg;
use crate::detect::slow_server_processing::{ExchangeView, SlowAgg};
use crate::detect::syn_retransmit::{SynAgg, SynState};
use crate::detect::zero_window::{ZeroAgg, ZeroDir, ZeroPeriod};
use crate::finding::{Finding, Layer, rank};
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
    /// Data segments entirely below the highest sequence number already sent, that repeat
    /// bytes already sent (out-of-order segments are not counted here).
    pub retransmitted_segments: u64,
    pub first_ts_ns: Option<i64>,
    pub last_ts_ns: Option<i64>,
    pub duration_s: f64,
    /// Packets the kernel ring dropped during a live capture.
    pub capture_drops: u64,
    /// New data segments carrying payload (original transmissions).
    #[serde(default)]
    pub data_segments: u64,
    /// Segments that filled a gap in the sequence space before the receiver asked for them
    /// (reordering, not loss).
    #[serde(default)]
    pub out_of_order_segments: u64,
    /// Retransmissions of data already acknowledged, or reported by the receiver as received
    /// twice (D-SACK).
    #[serde(default)]
    pub spurious_retransmissions: u64,
    /// Pure ACKs that repeated the previous cumulative ACK while data was outstanding.
    #[serde(default)]
    pub duplicate_acks: u64,
    /// Segments the receiver acknowledged that the capture never saw (capture-side drops).
    #[serde(default)]
    pub capture_gaps: u64,
    /// Repeated SYNs and SYN/ACKs (same initial sequence number).
    #[serde(default)]
    pub syn_retransmits: u64,
    /// TCP resets.
    #[serde(default)]
    pub resets: u64,
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
    /// Where the time of a typical (median-latency) request went; see [`crate::breakdown`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown_p50_ms: Option<Breakdown>,
    /// Mean breakdown over all exchanges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown_mean_ms: Option<Breakdown>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Analysis {
    pub stats: CaptureStats,
    pub exchanges: ExchangeStats,
    /// Ranked with [`crate::finding::rank`].
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
}

/// One endpoint, IPv4 stored as v4-mapped IPv6, the address as a big-endian integer: a
/// compact key part that compares (same order as the address bytes) and hashes in a few
/// instructions.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Endpoint {
    ip: u128,
    port: u16,
}

impl From<SocketAddr> for Endpoint {
    #[inline]
    fn from(a: SocketAddr) -> Self {
        let ip = match a.ip() {
            IpAddr::V4(v4) => 0xffff_0000_0000 | u128::from(v4.to_bits()),
            IpAddr::V6(v6) => v6.to_bits(),
        };
        Endpoint { ip, port: a.port() }
    }
}

/// Both endpoints, lower first, so both directions map to the same entry.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ConnKey {
    lo: Endpoint,
    hi: Endpoint,
}

impl std::hash::Hash for ConnKey {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u128(self.lo.ip);
        state.write_u128(self.hi.ip);
        state.write_u32(u32::from(self.lo.port) << 16 | u32::from(self.hi.port));
    }
}

/// The key and the index (0: lo, 1: hi) of the sender.
#[inline]
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
    loss: LossDir,
    /// Zero-window periods of this endpoint as a receiver.
    zero: ZeroDir,
    /// Since this direction's last new data: a retransmission, or the peer closed its
    /// window. A late ACK then is not a delayed-ACK stall.
    disturbed: bool,
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
    delack_server: bool,
    delack_client: bool,
    /// Zero window advertised by the client (index 0) / the server (1) during the exchange.
    zero: [bool; 2],
    parts: ExchangeParts,
    /// The last (needed, not spurious) retransmission of response data: the response was
    /// delivered then, not when its original left.
    delivered_ns: i64,
}

impl Exchange {
    fn add_stall(&mut self, cause: Cause, start: i64, end: i64) {
        self.parts.add(cause, self.first_req.ts_ns, start, end);
    }
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
    syn: SynState,
    /// Completed exchanges on this connection and the first request's first packet.
    exchanges: u32,
    first_req: Option<Pkt>,
    /// Last packet seen on the connection (ends open zero-window periods).
    last: Option<Pkt>,
    /// The frame that opened the state (orders the connections still open at the end).
    first_frame: u64,
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

/// How far (2^55 ns ≈ 1.1 years) a packet's time may lie from the first packet's.
const TS_BOUND_NS: i64 = 1 << 55;

pub struct Analyzer {
    cfg: AnalyzerConfig,
    stats: CaptureStats,
    /// Packets whose timestamp lay more than [`TS_BOUND_NS`] from the first and was clamped.
    clamped_ts: u64,
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
    /// Stalls released by a late ACK: small segments (Nagle) and full-size ones.
    nagle: StallSides,
    delack: StallSides,
    slow: SlowAgg,
    loss: LossAgg,
    syn: SynAgg,
    zero: ZeroAgg,
    resets: ResetAgg,
    short: ShortAgg,
    breakdown: BreakdownAgg,
}

impl Analyzer {
    pub fn new(cfg: AnalyzerConfig) -> Self {
        Analyzer {
            cfg,
            stats: CaptureStats::default(),
            clamped_ts: 0,
            conns: HashMap::default(),
            aggs: Aggs {
                handshake_rtt: Hist::new(),
                latency: Hist::new(),
                server_time: Hist::new(),
                exchanges: 0,
                nagle: StallSides::default(),
                delack: StallSides::default(),
                slow: SlowAgg::default(),
                loss: LossAgg::default(),
                syn: SynAgg::default(),
                zero: ZeroAgg::default(),
                resets: ResetAgg::default(),
                short: ShortAgg::default(),
                breakdown: BreakdownAgg::new(),
            },
        }
    }

    /// Feeds one captured packet. Never panics; undecodable packets are counted.
    pub fn push(&mut self, pkt: &RawPacket<'_>) {
        self.stats.packets += 1;
        self.stats.bytes += u64::from(pkt.orig_len);
        // Timestamps from files can be anything. Keeping every one within TS_BOUND_NS of the
        // first bounds every difference the detectors take (and multiply) far from overflow.
        let t0 = *self.stats.first_ts_ns.get_or_insert(pkt.ts_ns);
        let ts = pkt.ts_ns.clamp(
            t0.saturating_sub(TS_BOUND_NS),
            t0.saturating_add(TS_BOUND_NS),
        );
        if ts != pkt.ts_ns {
            self.clamped_ts += 1;
        }
        let pkt = &RawPacket { ts_ns: ts, ..*pkt };
        self.stats.last_ts_ns = Some(ts);
        match decode(pkt) {
            Ok(Some(ref seg)) => {
                self.stats.tcp_segments += 1;
                self.on_segment(seg);
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

        if opening && let Some(old) = self.conns.get(&key) {
            // The same SYN again (same ISN from the same side) is a retransmission; otherwise
            // a new connection reuses the 4-tuple.
            let d = &old.dirs[i];
            let repeat = old.syn.first_syn.is_some()
                && d.started
                && d.isn == seg.seq
                && d.nxt == seg.seq.wrapping_add(1);
            if !repeat && let Some(old) = self.conns.remove(&key) {
                self.close(old);
            }
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
        c.last = Some(pkt);

        // Handshake.
        if f.syn() {
            let d = &mut c.dirs[i];
            let repeat = d.started && d.isn == seg.seq && (opening || c.synack_seen);
            if repeat {
                self.stats.syn_retransmits += 1;
            }
            d.started = true;
            d.isn = seg.seq;
            if !repeat || seq_gt(seg.seq.wrapping_add(1), d.nxt) {
                d.nxt = seg.seq.wrapping_add(1);
            }
            d.mss = seg.mss;
            d.wscale = seg.wscale;
            if opening {
                c.syn_ts = Some(seg.ts_ns);
                c.syn.on_syn(pkt);
            } else {
                c.synack_seen = true;
                c.syn.on_synack(pkt);
            }
        } else if f.ack() && !from_server && c.synack_seen && c.syn.done.is_none() {
            // The client's first ACK after the (last) SYN/ACK completes the handshake.
            c.syn.done = Some(pkt);
            if c.rtt_ns.is_none()
                && let Some(t) = c.syn_ts
            {
                // With a repeated SYN/ACK: SYN → first SYN/ACK plus last SYN/ACK → ACK.
                let rtt = match (c.syn.synacks > 1, c.syn.first_synack, c.syn.last_synack) {
                    (true, Some(a), Some(b)) => (a.ts_ns - t).max(0) + (seg.ts_ns - b.ts_ns),
                    _ => seg.ts_ns - t,
                };
                if rtt >= 0 {
                    c.rtt_ns = Some(rtt);
                    self.aggs.handshake_rtt.record_ns(rtt);
                }
            }
        }

        // Window (scaled only when both sides offered window scaling, never on SYNs).
        {
            let scale = match (c.dirs[i].wscale, c.dirs[j].wscale) {
                (Some(s), Some(_)) if !f.syn() => u32::from(s.min(14)),
                _ => 0,
            };
            c.dirs[i].window = u32::from(seg.window) << scale;
            if let Some(z) = c.dirs[i].zero.on_window(pkt, seg.window) {
                self.aggs.on_zero_period(c, i, z);
            }
            if c.dirs[i].zero.active() {
                c.dirs[j].disturbed = true;
            }
        }

        // ACK of the peer's data.
        if f.ack() {
            let pure = seg.payload_len == 0 && !f.syn() && !f.fin() && !f.rst();
            let mss = u32::from(c.dirs[i].mss.unwrap_or(1460)).saturating_sub(40);
            let peer = &mut c.dirs[j];
            let news = peer.loss.on_peer_ack(
                seg.ts_ns,
                seg.ack,
                peer.acked,
                peer.nxt,
                seg.sack.as_slice(),
                pure,
                mss,
            );
            if peer.acked.is_none_or(|a| seq_gt(seg.ack, a)) {
                peer.acked = Some(seg.ack);
            }
            if pure {
                peer.nagle.on_peer_ack(seg.ack, pkt);
            }
            self.stats.duplicate_acks += u64::from(news.dup);
            self.stats.spurious_retransmissions += u64::from(news.dsack);
            self.stats.capture_gaps += u64::from(news.capture_gaps);
            if let Some(ep) = news.closed {
                self.aggs.on_episode(c, ep);
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
                d.loss.on_new_data(pkt, seg.seq, d.nxt, d.acked, seg.ip_id);
                d.nxt = end;
                self.stats.data_segments += 1;
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
                match d
                    .loss
                    .on_old_data(pkt, seg.seq, end, d.nxt, d.acked, c.rtt_ns, seg.ip_id)
                {
                    Old::OutOfOrder => self.stats.out_of_order_segments += 1,
                    Old::Retransmission { spurious } => {
                        self.stats.retransmitted_segments += 1;
                        self.stats.spurious_retransmissions += u64::from(spurious);
                        d.disturbed = true;
                    }
                }
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
        if f.rst() {
            self.stats.resets += 1;
            self.aggs.on_reset(c, pkt);
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
        syn: SynState::default(),
        exchanges: 0,
        first_req: None,
        last: None,
        first_frame: seg.frame,
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
                    c.first_req.get_or_insert(pkt);
                    c.cur = Some(Exchange {
                        first_req: pkt,
                        last_req: pkt,
                        first_resp: None,
                        last_resp: pkt,
                        http: payload.len() < 4 || looks_like_request(payload),
                        stalled_server: false,
                        stalled_client: false,
                        delack_server: false,
                        delack_client: false,
                        zero: [false; 2],
                        parts: ExchangeParts::default(),
                        delivered_ns: i64::MIN,
                    });
                    c.phase = Phase::Request;
                }
            }
        }

        // Nagle / delayed ACK: this side's tracker sees the data, the peer's learns a new
        // message began.
        let rtt = c.rtt_ns;
        let mss = c.dirs[j].mss; // the MSS this side may send is the one the peer announced
        let disturbed = std::mem::take(&mut c.dirs[i].disturbed);
        let stall = c.dirs[i].nagle.on_data(pkt, end, mss, rtt);
        c.dirs[j].nagle.on_peer_data();
        if let Some(st) = stall
            && !disturbed
        {
            if let Some(x) = c.cur.as_mut() {
                let cause = if st.nagle {
                    Cause::Nagle
                } else {
                    Cause::DelayedAck
                };
                x.add_stall(cause, st.prev.ts_ns, st.held.ts_ns);
                match (st.nagle, pkt.from_server) {
                    (true, true) => x.stalled_server = true,
                    (true, false) => x.stalled_client = true,
                    (false, true) => x.delack_server = true,
                    (false, false) => x.delack_client = true,
                }
            }
            if st.nagle {
                self.nagle.on_stall(client, server, st);
            } else {
                self.delack.on_stall(client, server, st);
            }
        }
        if let Some(x) = finished {
            self.finish_exchange(c, x);
        }
    }

    /// A loss episode of the connection ended: charge its stall and count it.
    fn on_episode(&mut self, c: &mut Conn, ep: Episode) {
        let (client, server) = (c.ep[1 - c.server], c.ep[c.server]);
        if let Some(x) = c.cur.as_mut()
            && ep.stall_ns() > 0
        {
            let cause = if ep.timeout {
                Cause::Timeout
            } else {
                Cause::Loss
            };
            x.add_stall(cause, ep.stall_start_ns(), ep.last.ts_ns);
            if ep.last.from_server && x.first_resp.is_some() {
                x.delivered_ns = x.delivered_ns.max(ep.last.ts_ns);
            }
        }
        self.loss.on_episode(client, server, ep);
    }

    /// Endpoint `i` of the connection reopened its window after `z`.
    fn on_zero_period(&mut self, c: &mut Conn, i: usize, z: ZeroPeriod) {
        let (client, server) = (c.ep[1 - c.server], c.ep[c.server]);
        let reader_is_server = c.server == i;
        if let Some(x) = c.cur.as_mut() {
            x.add_stall(Cause::ZeroWindow, z.start.ts_ns, z.end.ts_ns);
            x.zero[usize::from(reader_is_server)] = true;
        }
        self.zero.on_period(client, server, reader_is_server, z);
    }

    /// A reset `rst` arrived on the connection (before its state is dropped).
    fn on_reset(&mut self, c: &Conn, rst: Pkt) {
        let (client, server) = (c.ep[1 - c.server], c.ep[c.server]);
        let kind = if c.rtt_ns.is_none() && c.syn.first_syn.is_some() && c.cur.is_none() {
            ResetKind::Refused
        } else {
            match (c.phase, rst.from_server) {
                (Phase::Request, _) | (Phase::Response, true) => ResetKind::DuringExchange,
                (Phase::Response, false) => ResetKind::ClientAbort,
                (Phase::Idle, _) => ResetKind::Idle,
            }
        };
        let before = match kind {
            ResetKind::Refused => c.syn.last_syn,
            _ => c.cur.map(|x| {
                if x.first_resp.is_some() {
                    x.last_resp
                } else {
                    x.last_req
                }
            }),
        };
        self.resets.on_reset(client, server, kind, before, rst);
    }

    fn finish_exchange(&mut self, c: &mut Conn, x: Exchange) {
        let Some(first_resp) = x.first_resp else {
            return;
        };
        if !x.http {
            return;
        }
        let (client, server) = (c.ep[1 - c.server], c.ep[c.server]);
        let rtt = c.rtt_ns;
        c.exchanges += 1;
        self.exchanges += 1;
        let latency = x.last_resp.ts_ns.max(x.delivered_ns) - x.first_req.ts_ns;
        self.latency.record_ns(latency);
        let server_time = (first_resp.ts_ns - x.last_req.ts_ns - rtt.unwrap_or(0)).max(0);
        self.server_time.record_ns(server_time);
        if x.stalled_server {
            self.nagle.on_affected_exchange(true);
        }
        if x.stalled_client {
            self.nagle.on_affected_exchange(false);
        }
        if x.delack_server {
            self.delack.on_affected_exchange(true);
        }
        if x.delack_client {
            self.delack.on_affected_exchange(false);
        }
        for (k, z) in x.zero.iter().enumerate() {
            if *z {
                self.zero.on_exchange(k == 1);
            }
        }
        self.loss.on_exchange(
            x.parts.stalls[Cause::Loss as usize],
            x.parts.stalls[Cause::Timeout as usize],
        );
        self.breakdown
            .record(latency, rtt.unwrap_or(0), server_time, &x.parts);
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

    /// A connection's state is dropped (closed, reused, or the capture ended): loss episodes
    /// and zero-window periods still open end here (charged to the exchange in progress).
    fn flush_stalls(&mut self, c: &mut Conn) {
        for k in 0..2 {
            if let Some(ep) = c.dirs[k].loss.take_open() {
                self.on_episode(c, ep);
            }
            if let Some(last) = c.last
                && let Some(z) = c.dirs[k].zero.take_open(last)
            {
                self.on_zero_period(c, k, z);
            }
        }
    }

    /// Per-connection counts, once the connection's last exchange was finished.
    fn flush_counts(&mut self, c: &Conn) {
        let (client, server) = (c.ep[1 - c.server], c.ep[c.server]);
        self.syn.on_conn(client, server, &c.syn);
        if let Some(syn) = c.syn.first_syn {
            self.short
                .on_conn(client, server, syn, c.first_req, c.exchanges);
        }
    }
}

impl Analyzer {
    /// A connection ended (FIN both ways, RST, or reuse): its exchange is complete.
    fn close(&mut self, mut c: Conn) {
        // Open loss episodes and zero-window periods end with the connection; charge them to
        // the exchange before it is finished.
        self.aggs.flush_stalls(&mut c);
        if c.phase == Phase::Response
            && let Some(x) = c.cur.take()
        {
            self.aggs.finish_exchange(&mut c, x);
        }
        self.aggs.flush_counts(&c);
    }

    /// Ends the analysis. Exchanges still in progress (cut off by the end of the capture)
    /// are not counted: their response may be incomplete.
    pub fn finish(mut self) -> Analysis {
        let t0 = self.stats.first_ts_ns.unwrap_or(0);
        if let (Some(a), Some(b)) = (self.stats.first_ts_ns, self.stats.last_ts_ns) {
            self.stats.duration_s = (b - a).max(0) as f64 / 1e9;
        }
        // In the order the connections started, not the hash table's (randomly seeded)
        // order: detectors keep the first few examples, and the report must not change from
        // one run to the next.
        let mut open: Vec<Conn> = std::mem::take(&mut self.conns).into_values().collect();
        open.sort_unstable_by_key(|c| c.first_frame);
        for mut c in open {
            self.aggs.flush_stalls(&mut c);
            self.aggs.flush_counts(&c);
        }
        let mut findings = Vec::new();
        let g = &self.aggs;
        let p50 = g.latency.quantile_ms(0.5);
        nagle_delayed_ack::finish(&g.nagle, g.exchanges, t0, &mut findings);
        delayed_ack_stall::finish(&g.delack, g.exchanges, t0, &mut findings);
        g.slow
            .finish(g.exchanges, &g.latency, &g.server_time, t0, &mut findings);
        g.loss.finish(
            g.exchanges,
            self.stats.data_segments,
            p50,
            t0,
            &mut findings,
        );
        g.syn.finish(t0, &mut findings);
        g.zero.finish(g.exchanges, t0, &mut findings);
        g.resets
            .finish(g.exchanges, self.stats.connections, t0, &mut findings);
        g.short.finish(p50, t0, &mut findings);

        let mut warnings = Vec::new();
        let s = &self.stats;
        if s.decode_errors > 0 {
            warnings.push(format!("{} packets could not be decoded", s.decode_errors));
        }
        if self.clamped_ts > 0 {
            warnings.push(format!(
                "{} packets have timestamps more than a year away from the first packet's \
                 (a corrupt file?); their times were clamped",
                self.clamped_ts
            ));
        }
        if s.capture_drops > 0 {
            warnings.push(format!(
                "capture dropped {} packets: findings may be incomplete",
                s.capture_drops
            ));
        }
        if s.capture_gaps > 0 {
            warnings.push(format!(
                "the capture missed {} segments that the receiver acknowledged (dropped by the \
                 capture, not by the network): loss and stall findings may be incomplete",
                s.capture_gaps
            ));
        }
        if s.capture_drops > 0 || s.capture_gaps > 0 {
            // Transport findings are computed from the packets; missing packets can hide or
            // fake their patterns. Say so where it matters and trust them less.
            for f in findings.iter_mut().filter(|f| f.layer == Layer::Transport) {
                f.confidence = (f.confidence * 0.7).max(0.1);
                f.explanation.push_str(
                    " Note: the capture itself missed packets, so this analysis may be wrong \
                     (retransmissions, stalls or window changes may be hidden or misread).",
                );
            }
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
        rank(&mut findings);
        let g = &self.aggs;
        let rtt_ms = (g.handshake_rtt.len() > 0).then(|| g.handshake_rtt.quantile_ms(0.5));
        let breakdown = g.breakdown.finish();
        Analysis {
            stats: self.stats,
            exchanges: ExchangeStats {
                count: g.exchanges,
                latency_ms: g.latency.percentiles(),
                server_time_ms: g.server_time.percentiles(),
                rtt_ms,
                breakdown_p50_ms: breakdown.map(|b| b.0),
                breakdown_mean_ms: breakdown.map(|b| b.1),
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
    use crate::finding::{Evidence, FindingId, Severity, Side};
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
        ipv4_full(src, dst, seq, ack, flags, payload, 0xffff, &[], 0)
    }

    /// An IPv4/TCP packet with a given window, SACK blocks and IP id.
    #[allow(clippy::too_many_arguments)]
    fn ipv4_full(
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
        /// Sends a segment with explicit sequence numbers (the script's own are not moved).
        #[allow(clippy::too_many_arguments)]
        fn raw(
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
        assert_eq!(an.stats.data_segments, 2);
        assert_eq!(an.exchanges.count, 1);
        // The retransmission is not a new response segment, but it was needed (no D-SACK):
        // the client got the response only then, 200 ms after the original.
        let lat = an.exchanges.latency_ms.max;
        assert!((200.0..201.0).contains(&lat), "{:?}", an.exchanges);
        let f = an
            .findings
            .iter()
            .find(|f| f.id == FindingId::RetransmissionTimeout)
            .unwrap();
        assert!((199.0..201.0).contains(&f.impact.added_latency_ms.unwrap()));
        let b = an.exchanges.breakdown_p50_ms.unwrap();
        assert!(
            (199.0..201.0).contains(&b.stalls.retransmission_timeout),
            "{b:?}"
        );
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

    const SEG: usize = 1400;

    /// Server sends segments 0,2 then (after the client's SACK) 1, with the given IP ids for
    /// segment 1 (2 is sent with id 102). Returns the analysis.
    fn hole_then_fill(fill_id: u16, fill_delay: i64, complain: bool) -> Analysis {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        s.send(MS, true, F::PSH | F::ACK, REQ);
        let (c, b) = (s.cseq, s.sseq);
        let seg = [b'x'; SEG];
        let at = |k: u32| b.wrapping_add(k * SEG as u32);
        s.raw(100_000, false, at(0), c, F::ACK, &seg, 0xffff, &[], 100);
        s.raw(10_000, false, at(2), c, F::ACK, &seg, 0xffff, &[], 102);
        if complain {
            s.raw(
                2_000,
                true,
                c,
                at(1),
                F::ACK,
                b"",
                0xffff,
                &[(at(2), at(3))],
                7,
            );
        }
        s.raw(
            fill_delay,
            false,
            at(1),
            c,
            F::ACK,
            &seg,
            0xffff,
            &[],
            fill_id,
        );
        s.raw(5_000, true, c, at(3), F::ACK, b"", 0xffff, &[], 8);
        s.sseq = at(3);
        s.close();
        s.a.finish()
    }

    #[test]
    fn reordering_is_not_retransmission() {
        // The late segment has the smaller IP id: it was sent before the one that overtook it,
        // even though it arrives after the client's SACK, 2 ms later.
        let an = hole_then_fill(101, 2 * MS, true);
        assert_eq!(an.stats.out_of_order_segments, 1, "{:?}", an.stats);
        assert_eq!(an.stats.retransmitted_segments, 0);
        assert_eq!(an.stats.capture_gaps, 0);
        assert!(
            an.findings
                .iter()
                .all(|f| f.id != FindingId::PacketLossRetransmission),
            "{:#?}",
            an.findings
        );
        // Without IP ids: arriving before any complaint means reordering too.
        let an = hole_then_fill(0, 20_000, false);
        assert_eq!(an.stats.out_of_order_segments, 1, "{:?}", an.stats);
        assert_eq!(an.stats.retransmitted_segments, 0);
    }

    #[test]
    fn signalled_hole_filled_later_is_loss() {
        // Larger IP id: sent again after the client's SACK reported the hole.
        let an = hole_then_fill(103, 300_000, true);
        assert_eq!(an.stats.retransmitted_segments, 1, "{:?}", an.stats);
        assert_eq!(an.stats.out_of_order_segments, 0);
        let f = an
            .findings
            .iter()
            .find(|f| f.id == FindingId::PacketLossRetransmission)
            .unwrap_or_else(|| panic!("{:#?}", an.findings));
        assert_eq!(f.side, Side::Network);
        assert_eq!(f.impact.affected_fraction, Some(1.0));
        // No IP ids, but the fill came well after the complaint (RTT 0.1 ms here): loss too.
        let an = hole_then_fill(0, 300_000, true);
        assert_eq!(an.stats.retransmitted_segments, 1, "{:?}", an.stats);
        let b = an.exchanges.breakdown_p50_ms.unwrap();
        assert!(b.stalls.packet_loss_retransmission > 0.0, "{b:?}");
    }

    #[test]
    fn dsack_spurious_retransmissions_keep_a_healthy_server_healthy() {
        // 100 exchanges; on each the client is slow to ACK (4 ms, starved of CPU), the server
        // retransmits its response (tail-loss probe), and the client reports the duplicate
        // with a D-SACK. tshark flags all 100 as retransmissions; they cost nothing.
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        for _ in 0..100 {
            s.send(MS, true, F::PSH | F::ACK, REQ);
            let (c, b) = (s.cseq, s.sseq);
            s.send(100_000, false, F::PSH | F::ACK, HDR);
            let e = s.sseq;
            s.raw(4 * MS, false, b, c, F::PSH | F::ACK, HDR, 0xffff, &[], 0);
            s.raw(100_000, true, c, e, F::ACK, b"", 0xffff, &[(b, e)], 0);
        }
        s.close();
        let an = s.a.finish();
        assert_eq!(an.exchanges.count, 100);
        assert_eq!(an.stats.retransmitted_segments, 100);
        assert_eq!(an.stats.spurious_retransmissions, 100, "{:?}", an.stats);
        assert!(
            an.findings.iter().all(|f| f.severity == Severity::Info),
            "{:#?}",
            an.findings
        );
        assert!(
            an.findings
                .iter()
                .all(|f| f.id != FindingId::PacketLossRetransmission
                    && f.id != FindingId::RetransmissionTimeout),
            "{:#?}",
            an.findings
        );
        let b = an.exchanges.breakdown_p50_ms.unwrap();
        assert_eq!(b.stalls_total(), 0.0, "{b:?}");
        assert!(an.exchanges.latency_ms.p50 < 1.0, "{:?}", an.exchanges);
    }

    #[test]
    fn repeated_syn_is_one_connection_and_a_syn_retransmit() {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.send(0, true, F::SYN, b"");
        s.cseq -= 1;
        s.send(1000 * MS, true, F::SYN, b"");
        s.send(50_000, false, F::SYN | F::ACK, b"");
        s.send(50_000, true, F::ACK, b"");
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        s.close();
        let an = s.a.finish();
        assert_eq!(an.stats.connections, 1);
        assert_eq!(an.stats.syn_retransmits, 1);
        assert_eq!(an.exchanges.count, 1);
        // The RTT comes from the SYN that was answered.
        assert_eq!(an.exchanges.rtt_ms, Some(0.1));
        let f = an
            .findings
            .iter()
            .find(|f| f.id == FindingId::SynRetransmit)
            .unwrap();
        assert!(f.summary.contains("repeat its SYN"), "{}", f.summary);
        let added = f.impact.added_latency_ms.unwrap();
        assert!((1000.0..1001.0).contains(&added), "{added}");
        assert_eq!(f.severity, Severity::Critical);

        // The SYN/ACK repeated instead (the client's ACK was lost).
        let mut s = Script::new("10.0.0.1:40001", "10.0.0.2:80");
        s.send(0, true, F::SYN, b"");
        s.send(50_000, false, F::SYN | F::ACK, b"");
        s.sseq -= 1;
        s.send(1000 * MS, false, F::SYN | F::ACK, b"");
        s.send(50_000, true, F::ACK, b"");
        s.close();
        let an = s.a.finish();
        assert_eq!(an.stats.connections, 1);
        let f = an
            .findings
            .iter()
            .find(|f| f.id == FindingId::SynRetransmit)
            .unwrap();
        assert!(f.summary.contains("SYN/ACK"), "{}", f.summary);
        assert_eq!(an.exchanges.rtt_ms, Some(0.1));
    }

    #[test]
    fn zero_window_names_the_reader_and_its_time() {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        for _ in 0..3 {
            s.send(MS, true, F::PSH | F::ACK, REQ);
            s.send(100_000, false, F::ACK, &[b'x'; SEG]);
            let (c, b) = (s.cseq, s.sseq);
            // The client's buffer is full: window 0 for 100 ms, then reopened.
            s.raw(50_000, true, c, b, F::ACK, b"", 0, &[], 0);
            s.raw(100 * MS, true, c, b, F::ACK, b"", 0xffff, &[], 0);
            s.send(50_000, false, F::PSH | F::ACK, &[b'x'; 100]);
            s.send(50_000, true, F::ACK, b"");
        }
        s.close();
        let an = s.a.finish();
        let f = an
            .findings
            .iter()
            .find(|f| f.id == FindingId::ZeroWindow)
            .unwrap_or_else(|| panic!("{:#?}", an.findings));
        assert_eq!(f.side, Side::Client);
        assert!(f.severity >= Severity::Warning);
        let d = f.impact.added_latency_ms.unwrap();
        assert!((99.0..101.0).contains(&d), "{d}");
        assert_eq!(f.impact.affected_fraction, Some(1.0));
        let b = an.exchanges.breakdown_p50_ms.unwrap();
        assert!((99.0..101.0).contains(&b.stalls.zero_window), "{b:?}");
        // Not a delayed-ACK stall: the window, not the ACK timer, held the server.
        assert!(
            an.findings
                .iter()
                .all(|f| f.id != FindingId::DelayedAckStall && f.id != FindingId::NagleDelayedAck),
            "{:#?}",
            an.findings
        );
    }

    #[test]
    fn resets_say_who_and_when() {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        // Refused: SYN answered by RST/ACK.
        s.send(0, true, F::SYN, b"");
        s.send(50_000, false, F::RST | F::ACK, b"");
        // Server resets mid-response, 3 times.
        for port in 40001..40004 {
            s.c.set_port(port);
            s.handshake();
            s.send(MS, true, F::PSH | F::ACK, REQ);
            s.send(100_000, false, F::ACK, &[b'x'; SEG]);
            s.send(10 * MS, false, F::RST | F::ACK, b"");
        }
        // A client that aborts while the response arrives: info only.
        s.c.set_port(40010);
        s.handshake();
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::ACK, &[b'x'; SEG]);
        s.send(100_000, true, F::RST | F::ACK, b"");
        let an = s.a.finish();
        assert_eq!(an.stats.resets, 5);
        let resets: Vec<_> = an
            .findings
            .iter()
            .filter(|f| f.id == FindingId::ConnectionReset)
            .collect();
        assert_eq!(resets.len(), 3, "{resets:#?}");
        let refused = resets
            .iter()
            .find(|f| f.summary.contains("refused"))
            .unwrap();
        assert_eq!(refused.side, Side::Server);
        let mid = resets
            .iter()
            .find(|f| f.summary.contains("middle"))
            .unwrap();
        assert_eq!((mid.side, mid.severity), (Side::Server, Severity::Critical));
        assert!(
            mid.summary.contains("reset 3 connections"),
            "{}",
            mid.summary
        );
        let abort = resets.iter().find(|f| f.side == Side::Client).unwrap();
        assert_eq!(abort.severity, Severity::Info);
    }

    #[test]
    fn delayed_ack_stall_without_nagle() {
        // A window-limited server: one full-size segment in flight, the client delays its ACK
        // 40 ms, the next full segment leaves right after the ACK. Nagle never holds full
        // segments, so this is delayed_ack_stall, side client (the one delaying ACKs).
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        for _ in 0..6 {
            s.send(MS, true, F::PSH | F::ACK, REQ);
            s.send(100_000, false, F::ACK, &[b'x'; 1420]);
            s.send(40 * MS, true, F::ACK, b"");
            s.send(100_000, false, F::PSH | F::ACK, &[b'x'; 1420]);
            s.send(50_000, true, F::ACK, b"");
        }
        s.close();
        let an = s.a.finish();
        let f = &an.findings[0];
        assert_eq!(f.id, FindingId::DelayedAckStall, "{:#?}", an.findings);
        assert_eq!(f.side, Side::Client);
        assert_eq!(f.severity, Severity::Critical);
        let added = f.impact.added_latency_ms.unwrap();
        assert!((39.0..41.0).contains(&added), "{added}");
        assert!(
            an.findings
                .iter()
                .all(|f| f.id != FindingId::NagleDelayedAck)
        );
        let b = an.exchanges.breakdown_p50_ms.unwrap();
        assert!((39.0..41.0).contains(&b.stalls.delayed_ack_stall), "{b:?}");
    }

    #[test]
    fn data_acked_but_never_captured_is_a_capture_gap() {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        for _ in 0..6 {
            s.send(MS, true, F::PSH | F::ACK, REQ);
            s.send(100_000, false, F::PSH | F::ACK, HDR);
            // The body's first segment is missing from the capture, the client ACKs it all.
            s.sseq += SEG as u32;
            s.send(100_000, false, F::ACK, &[b'x'; SEG]);
            s.send(50_000, true, F::ACK, b"");
        }
        s.close();
        let an = s.a.finish();
        assert_eq!(an.stats.capture_gaps, 6, "{:?}", an.stats);
        assert_eq!(an.stats.retransmitted_segments, 0);
        assert!(
            an.warnings
                .iter()
                .any(|w| w.contains("capture missed 6 segments")),
            "{:?}",
            an.warnings
        );
    }

    #[test]
    fn one_request_per_connection_is_short_connections() {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        for port in 0..10u16 {
            s.c.set_port(41000 + port);
            s.handshake();
            s.send(MS, true, F::PSH | F::ACK, REQ);
            s.send(100_000, false, F::PSH | F::ACK, HDR);
            s.close();
        }
        let an = s.a.finish();
        let f = an
            .findings
            .iter()
            .find(|f| f.id == FindingId::ShortConnections)
            .unwrap_or_else(|| panic!("{:#?}", an.findings));
        // SYN → request: 0.1 ms handshake + 1 ms; the request itself takes 0.1 ms: setup
        // dominates, but 1.1 ms is still cheap.
        let added = f.impact.added_latency_ms.unwrap();
        assert!((1.0..1.2).contains(&added), "{added}");
        assert_eq!(f.impact.affected_fraction, Some(1.0));
        assert_eq!(f.severity, Severity::Warning);
        // Keep-alive: no finding.
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        for _ in 0..10 {
            s.send(MS, true, F::PSH | F::ACK, REQ);
            s.send(100_000, false, F::PSH | F::ACK, HDR);
        }
        s.close();
        let an = s.a.finish();
        assert!(
            an.findings
                .iter()
                .all(|f| f.id != FindingId::ShortConnections)
        );
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

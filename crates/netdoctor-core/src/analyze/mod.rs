//! The analyzer: decodes packets, rebuilds TCP connections, splits request/response
//! exchanges (HTTP/1.x, or direction turns for any other protocol: see `http`; HTTP/2 streams
//! of cleartext connections: see `h2`) and feeds the
//! detectors. Streaming: [`Analyzer::push`] one packet at a time (and
//! [`Analyzer::observe`] what observers saw), then [`Analyzer::finish`]; or
//! [`Analyzer::take_window`] now and then to get the findings so far and go on.
//!
//! Layout: `flow` (the table's key), `conn` (per-connection and per-direction state),
//! `orient` (which side is the server, also for connections picked up mid-stream), `tcp`
//! (the per-segment path), `http` (exchange splitting by turns; HTTP/1.x recognised), `hub`
//! (aggregates and the detectors, fed with [`crate::event::Event`]s), `quality`
//! (capture-quality warnings), `conclude` (the detectors' conclusions and the exchange figures
//! as an [`Analysis`]), `order` (a file's frames put back in timestamp order).
//!
//! TCP reconstruction is hand-written: crates that reassemble TCP streams (for IDS use)
//! buffer payload and do not expose the timing of ACKs relative to data, which is what the
//! detectors need. We keep per direction only sequence numbers and a few `Copy` packet
//! summaries; payload bytes are never stored, except out-of-order bytes of a cleartext
//! HTTP/2 connection waiting for a hole to be filled (`reasm`, at most 1 MiB per direction).
//! Memory is bounded by the number of
//! concurrently open connections ([`MAX_CONNECTIONS`]; half-open ones, a SYN flood's, by
//! [`MAX_HALF_OPEN`], see `halfopen`): state is dropped on RST, when both
//! FINs were seen, or (with [`Analyzer::idle_timeout`]) when a connection was idle too long;
//! latencies go into HDR histograms, and detectors keep a few examples.
//!
//! Data that is not new is classified by [`crate::track::loss`] (out of order, retransmitted,
//! spurious); data the receiver acknowledged but the capture never saw is counted as a capture
//! gap. Both capture gaps and the ring's own drops ([`Analyzer::note_capture_drops`]) become
//! warnings, and transport findings computed over an incomplete capture say so. Each
//! exchange gets a latency breakdown ([`crate::breakdown`]).

mod agg;
pub mod bulk;
mod conclude;
mod conn;
mod dns;
pub mod flights;
mod flow;
mod framing;
pub mod h2;
mod halfopen;
mod http;
mod hub;
pub mod order;
mod orient;
mod quality;
mod reasm;
mod reset_kind;
mod result;
pub mod shard;
mod tcp;
#[cfg(test)]
mod tests;
mod tls;
mod window;

pub use dns::ALL_SILENT_FIX;
pub use quality::CaptureQuality;
use result::is_zero;
pub use result::{
    Analysis, CaptureStats, ExchangeMethod, ExchangeStats, MAX_MISSING_SHARE_FOR_HEALTHY,
    TlsHandshakeStats,
};

use std::collections::HashMap;

use crate::decode::decode;
use crate::event::Event;
use crate::observation::Observation;
use crate::packet::RawPacket;
pub use crate::track::flags::SegFlags;
use conclude::{conclude, conclude_judged};
use conn::Conn;
use flow::ConnKey;
use hub::Hub;

/// Connections tracked at once; more are counted but not analyzed.
pub const MAX_CONNECTIONS: usize = 65_536;
pub use halfopen::{MAX_HALF_OPEN, MAX_TOMBS};

#[derive(Default, Clone, Debug)]
pub struct AnalyzerConfig {
    /// The server's port, for connections whose handshake was not captured.
    pub server_port: Option<u16>,
    /// More server (listening) ports, e.g. from this host's listening sockets: for
    /// connections whose handshake was not captured, an end on one of them is the server.
    pub server_ports: Vec<u16>,
}

/// How far (2^55 ns ≈ 1.1 years) a packet's time may lie from the first packet's.
pub(crate) const TS_BOUND_NS: i64 = 1 << 55;

pub struct Analyzer {
    cfg: AnalyzerConfig,
    stats: CaptureStats,
    /// Packets whose timestamp lay more than [`TS_BOUND_NS`] from the first and was clamped.
    clamped_ts: u64,
    conns: HashMap<ConnKey, Conn, foldhash::fast::RandomState>,
    /// The half-open connections in opening order, and the evicted ones ([`halfopen`]).
    half: halfopen::HalfOpen,
    /// How many connections each endpoint was seen in (servers of handshakes, both ends of
    /// connections picked up mid-stream): the server of a connection without a handshake is
    /// the end that many connections share ([`orient::Shared`]).
    shared: orient::Shared,
    hub: Hub,
    /// Connections without a packet for this long are dropped (`None`: never).
    idle_ns: Option<i64>,
    /// Next packet time at which idle connections are looked for.
    next_sweep_ns: i64,
    /// Start of the current window (first packet's time until the first window is taken).
    window_start_ns: Option<i64>,
    /// Per-segment analysis flags, when asked for ([`Analyzer::record_flags`]).
    flags: Option<Vec<(u64, SegFlags)>>,
    /// The totals when the current window started ([`window`]).
    window_base: window::Base,
    /// Connections with packets that opened no state (pure ACKs before the first data of a
    /// capture started mid-connection), by the directions they came from (bit `1 << i`): a
    /// connection opened later saw both ends. At most [`MAX_UNTRACKED_KEYS`], then forgotten.
    untracked: HashMap<ConnKey, u8, foldhash::fast::RandomState>,
    /// Connections a reset closed, by the endpoint index that sent it: a segment on the same
    /// 4-tuple without SYN is a leftover of that connection, and its sender's reset of it the
    /// closed socket's answer ([`conn::Conn::after_reset`]). At most [`MAX_UNTRACKED_KEYS`],
    /// then forgotten.
    reset_keys: HashMap<ConnKey, u8, foldhash::fast::RandomState>,
    /// The frames that are no TCP segment, read for DNS lookups ([`dns`]).
    dns: dns::DnsLog,
}

/// Connections remembered in [`Analyzer::untracked`].
const MAX_UNTRACKED_KEYS: usize = 1024;

impl Analyzer {
    pub fn new(cfg: AnalyzerConfig) -> Self {
        Analyzer {
            cfg,
            stats: CaptureStats::default(),
            clamped_ts: 0,
            conns: HashMap::default(),
            half: halfopen::HalfOpen::default(),
            shared: orient::Shared::default(),
            hub: Hub::new(),
            idle_ns: None,
            next_sweep_ns: i64::MIN,
            window_start_ns: None,
            flags: None,
            window_base: window::Base::default(),
            untracked: HashMap::default(),
            reset_keys: HashMap::default(),
            dns: dns::DnsLog::default(),
        }
    }

    /// Keeps every segment's analysis flags (frame number, [`SegFlags`]; segments without a
    /// flag are left out) for [`Analyzer::take_flags`]: for the tshark agreement harness and
    /// for debugging a capture. Costs memory per flagged segment; off by default.
    pub fn record_flags(mut self) -> Self {
        self.flags = Some(Vec::new());
        self
    }

    /// The flags recorded so far (see [`Analyzer::record_flags`]), in frame order.
    pub fn take_flags(&mut self) -> Vec<(u64, SegFlags)> {
        self.flags.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Drops connections that saw no packet for `timeout` (checked as packets arrive, at most
    /// every quarter of the timeout, and at [`Analyzer::take_window`]). Their exchange in
    /// progress is completed as on a close, their open stalls end, and they are counted in
    /// [`CaptureStats::connections_evicted`]. For long-running analysis; off by default (a
    /// file's connections are all kept until [`Analyzer::finish`]).
    pub fn idle_timeout(mut self, timeout: std::time::Duration) -> Self {
        let ns = i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX).max(1);
        self.idle_ns = Some(ns);
        self
    }

    /// Feeds one captured packet. Never panics; undecodable packets are counted.
    pub fn push(&mut self, pkt: &RawPacket<'_>) {
        let ts = stamp(&mut self.stats, &mut self.clamped_ts, pkt);
        let pkt = &RawPacket { ts_ns: ts, ..*pkt };
        self.window_start_ns.get_or_insert(ts);
        if self.idle_ns.is_some() && ts >= self.next_sweep_ns {
            self.evict_idle(ts);
        }
        match decode(pkt) {
            Ok(Some(ref seg)) => {
                self.stats.tcp_segments += 1;
                if seg.port_53 {
                    self.dns.push_tcp(seg);
                }
                self.on_segment(seg);
            }
            Ok(None) => {
                self.stats.other_packets += 1;
                self.dns.push(pkt, ts);
            }
            Err(e) => self.stats.count_decode_error(&e),
        }
    }

    /// Frames that a first reading found stamped earlier than their predecessor, fed to this
    /// analyzer in timestamp order ([`order::TimeOrder`]): said in the capture's warnings.
    pub fn note_sorted_frames(&mut self, frames: u64) {
        self.stats.quality.sorted_frames += frames;
    }

    /// Packets the kernel dropped before they reached the capture (live capture).
    pub fn note_capture_drops(&mut self, drops: u64) {
        self.stats.capture_drops += drops;
    }

    /// Something an observer saw outside the packets: it goes to every detector, in order
    /// with the packets' events. Works without any packet (a run without a capture).
    pub fn observe(&mut self, obs: Observation) {
        self.hub.emit(&Event::Observed(&obs));
    }

    /// Completed exchanges so far (of the current window), for progress lines.
    pub fn exchanges(&self) -> u64 {
        match &self.hub.out {
            agg::Out::Direct(a) => a.exchanges,
            agg::Out::Log { .. } => 0,
        }
    }

    /// Connections open now (tracked state).
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// Drops the connections idle since before `now_ns - idle timeout`, oldest first.
    fn evict_idle(&mut self, now_ns: i64) {
        let Some(idle) = self.idle_ns else {
            return;
        };
        self.next_sweep_ns = now_ns.saturating_add((idle / 4).max(1));
        let limit = now_ns.saturating_sub(idle);
        let stale: Vec<ConnKey> = self
            .conns
            .iter()
            .filter(|(_, c)| c.last.is_none_or(|p| p.ts_ns < limit))
            .map(|(k, _)| *k)
            .collect();
        let mut gone: Vec<Gone> = stale
            .iter()
            .filter_map(|k| self.conns.remove(k))
            .map(|c| Gone::Conn(Box::new(c)))
            .collect();
        if !self.half.tombs.is_empty() {
            let old: Vec<ConnKey> = self
                .half
                .tombs
                .iter()
                .filter(|(_, t)| t.last_ns < limit)
                .map(|(k, _)| *k)
                .collect();
            gone.extend(
                old.iter()
                    .filter_map(|k| self.half.tombs.remove(k))
                    .map(|t| Gone::Tomb(Box::new(t))),
            );
        }
        if gone.is_empty() {
            return;
        }
        // Deterministic order (the table's order is randomly seeded).
        gone.sort_unstable_by_key(Gone::first_frame);
        self.stats.connections_evicted += gone.len() as u64;
        for g in gone {
            match g {
                Gone::Conn(c) => self.close(*c),
                Gone::Tomb(t) => self.hub.emit(&Event::ConnDone(&t.done())),
            }
        }
        // A table that grew in a burst gives its memory back.
        if self.conns.capacity() > 4 * self.conns.len() + 1024 {
            self.conns.shrink_to(2 * self.conns.len());
        }
        if self.half.tombs.is_empty() && self.half.tombs.capacity() > 0 {
            self.half.tombs.shrink_to_fit();
        }
    }

    /// A connection whose exchanges are approximate, counted as it ends: pipelined or
    /// multiplexed HTTP/1 traffic, or TLS that chose (or may have chosen) HTTP/2.
    fn count_approximate(&mut self, c: &Conn) {
        self.stats.pipelined_connections += u64::from(c.ambiguous);
        let a = c.tls.hello;
        if a & tls::ALPN_CHOSE_H2 != 0 {
            self.stats.tls_h2_connections += 1;
        } else if a & tls::ALPN_HIDDEN != 0 {
            self.stats.tls_h2_maybe_connections += 1;
        }
    }

    /// A connection ended (FIN both ways, RST, reuse or eviction): its exchange is complete.
    fn close(&mut self, mut c: Conn) {
        self.judge_stray_reset(&c);
        self.half.left(&mut c);
        self.count_one_way(&c);
        self.flush_held(&mut c);
        // Open loss episodes and zero-window periods end with the connection; charge them to
        // the exchange before it is finished.
        self.hub.flush_stalls(&mut c);
        self.count_approximate(&c);
        self.take_answered(&mut c, false);
        self.hub.flush_counts(&c);
        self.hub.flush_bulk(&mut c);
    }

    /// A connection ends: counted when it was captured in one direction only.
    fn count_one_way(&mut self, c: &Conn) {
        let q = &mut self.stats.quality;
        match c.one_way() {
            Some(true) => q.client_unseen_connections += 1,
            Some(false) => q.server_unseen_connections += 1,
            None => {}
        }
    }

    /// A connection ends: its answered exchanges are finished (`cut`: by the end of the
    /// capture), and its HTTP/2 streams that ended in a capture gap are counted.
    fn take_answered(&mut self, c: &mut Conn, cut: bool) {
        for x in c.take_answered() {
            self.hub.finish_exchange_as(c, &x, cut);
        }
        self.stats.h2_streams_cut_by_gap += u64::from(c.h2_gap_cut());
    }

    /// A connection ends: the bytes its HTTP/2 reassemblers held are read (the streams they
    /// complete are exchanges), and what its framing and reassembly lost is counted.
    fn flush_held(&mut self, c: &mut Conn) {
        for x in c.flush_held() {
            self.hub.finish_exchange(c, &x);
        }
        self.stats.h2_framing_lost += u64::from(c.h2_framing_lost());
        self.stats.h2_reassembly_overflows += u64::from(c.reassembly_overflows());
    }

    /// The findings and exchange figures of the window since the previous call (or the
    /// start), at time `now_ns` (ns since the epoch; the capture's clock): idle connections
    /// are evicted first (with [`Analyzer::idle_timeout`]), then every detector reports and
    /// starts over. Connections still open keep their state and go on into the next window;
    /// events count in the window they are raised in (a stall when its held data leaves, an
    /// exchange when it completes). `stats` in the result
    /// are cumulative since the start, but the findings and warnings are judged on the
    /// window's own counts ([`window`]). Observations belong to the window they arrived in.
    pub fn take_window(&mut self, now_ns: i64) -> Analysis {
        if self.idle_ns.is_some() {
            self.evict_idle(now_ns);
        }
        let a = self.conclude();
        self.window_base = window::Base::at(&self.stats, self.clamped_ts, self.conns.len());
        self.hub.reset_window();
        self.window_start_ns = Some(now_ns);
        a
    }

    /// Start of the current window (ns since the epoch), once a packet or window was seen.
    pub fn window_start_ns(&self) -> Option<i64> {
        self.window_start_ns
    }

    /// Ends the analysis. An exchange whose response was still arriving when the capture
    /// ended (the server had not sent its FIN) counts as incomplete ([`ExchangeStats::incomplete`]): its first-byte time is
    /// known, its latency is not. A request still unanswered is not an exchange.
    pub fn finish(mut self) -> Analysis {
        self.flush_open();
        let mut a = self.conclude();
        add_dns(&mut a, &self.dns);
        a
    }

    /// Ends every connection still open (see [`Analyzer::finish`]).
    fn flush_open(&mut self) {
        // In the order the connections started, not the hash table's (randomly seeded)
        // order: detectors keep the first few examples, and the report must not change from
        // one run to the next.
        let mut open: Vec<Gone> = std::mem::take(&mut self.conns)
            .into_values()
            .map(|c| Gone::Conn(Box::new(c)))
            .chain(
                std::mem::take(&mut self.half.tombs)
                    .into_values()
                    .map(|t| Gone::Tomb(Box::new(t))),
            )
            .collect();
        self.half.live = 0;
        self.half.order.clear();
        open.sort_unstable_by_key(Gone::first_frame);
        for g in open {
            self.hub.tag(g.first_frame());
            let mut c = match g {
                Gone::Conn(c) => *c,
                Gone::Tomb(t) => {
                    self.hub.emit(&Event::ConnDone(&t.done()));
                    continue;
                }
            };
            self.count_approximate(&c);
            self.count_one_way(&c);
            self.flush_held(&mut c);
            self.hub.flush_stalls(&mut c);
            // The server's FIN ends its responses: an exchange answered before it is complete
            // although the client's close is not in the capture (ppa-http_post: the server
            // closes an idle keep-alive connection 2 s after its last response, and the
            // capture ends with the client's ACK of that FIN).
            let cut = !c.dirs[c.server].fin;
            self.take_answered(&mut c, cut);
            self.hub.flush_counts(&c);
            self.hub.flush_bulk(&mut c);
        }
    }

    /// Runs the detectors' reports over what the hub holds now.
    fn conclude(&mut self) -> Analysis {
        let agg = self.hub.agg().expect("a logging hub is never concluded");
        let (judged, clamped_ts) = self.window_base.judge(&self.stats, self.clamped_ts);
        conclude_judged(&mut self.stats, &judged, clamped_ts, agg)
    }
}

/// The capture's DNS lookups told into `a` (at the end of a file: a window's lookups may
/// still be waiting for their answers, so windows do not tell them).
fn add_dns(a: &mut Analysis, log: &dns::DnsLog) {
    let (Some(t0), Some(end)) = (a.stats.first_ts_ns, a.stats.last_ts_ns) else {
        return;
    };
    let (findings, warnings) = log.tell(t0, end, a.stats.connections_with_handshake > 0);
    if findings.is_empty() && warnings.is_empty() {
        return;
    }
    a.findings.extend(findings);
    crate::finding::rank(&mut a.findings);
    a.warnings.extend(warnings);
}

/// A connection whose state ends: in full, or an evicted half-open one.
enum Gone {
    Conn(Box<Conn>),
    Tomb(Box<halfopen::Tomb>),
}

impl Gone {
    fn first_frame(&self) -> u64 {
        match self {
            Gone::Conn(c) => c.first_frame,
            Gone::Tomb(t) => t.first_frame,
        }
    }
}

/// `ts` kept within [`TS_BOUND_NS`] of the capture's first timestamp `t0` (see [`stamp`]).
#[inline]
pub(crate) fn clamp_stamp(t0: i64, ts: i64) -> i64 {
    ts.clamp(
        t0.saturating_sub(TS_BOUND_NS),
        t0.saturating_add(TS_BOUND_NS),
    )
}

/// Counts a packet in `stats` and returns its timestamp, clamped: timestamps from files can be
/// anything, and keeping every one within [`TS_BOUND_NS`] of the first bounds every difference
/// the detectors take (and multiply) far from overflow.
#[inline]
fn stamp(stats: &mut CaptureStats, clamped_ts: &mut u64, pkt: &RawPacket<'_>) -> i64 {
    stats.packets += 1;
    stats.bytes += u64::from(pkt.orig_len);
    let t0 = *stats.first_ts_ns.get_or_insert(pkt.ts_ns);
    let ts = clamp_stamp(t0, pkt.ts_ns);
    if ts != pkt.ts_ns {
        *clamped_ts += 1;
    }
    if stats.last_ts_ns.is_some_and(|last| ts < last) {
        stats.quality.backdated_frames += 1;
    }
    stats.last_ts_ns = Some(ts);
    ts
}

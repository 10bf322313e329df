//! `shaper_limited` from the receiver's view: the server's transfers of all connections added
//! up, as they arrived at a capture taken near the receiver (where `bulk_limits`' sender-side
//! rule cannot see the sender's queue). A token bucket (`tc … tbf`, the Kubernetes bandwidth
//! plugin, a policer) or a link of that rate hands out a fixed number of bytes per second
//! whatever the number of connections: the arrivals, summed over the connections, are flat
//! while any transfer runs, each connection gets a share that varies, and the bucket's queue
//! overflows into loss. Rule, over the server's transfers of at least 64 KB (`Event::Bulk`):
//!
//! - at least [`MIN_TOTAL`] bytes over at least [`MIN_BUSY_BINS`] bins of [`BIN_NS`] in which
//!   a transfer was running, the first and last of each busy stretch left out (ramp and cut);
//! - the summed arrivals per busy bin flat: at least [`MIN_FLAT_SHARE`] of them within ±30 %
//!   of their median;
//! - busy bins ≥ 80 % of the span from the first to the last transfer (a steady load);
//! - loss: ≥ 3 segments (≥ 0.5 % of the segments) retransmitted, not spurious — the bucket's
//!   queue overflowing. A flat rate without loss is left alone (a server-side rate limit such
//!   as nginx's `limit_rate` is flat too, and loses nothing);
//! - the receiver's window never under 4 segments (a client that reads slowly sets the rate
//!   with its window: `zero_window`, not a shaper).
//!
//! Look-alikes kept apart: random loss on a fast path (the rate swings between loss episodes
//! and timeouts: not flat), a slow server (little transfer time, no loss), a slow reader (its
//! window), a capture taken at the sender (the sender-side rule in `bulk_limits` judges it).
//! Memory is fixed: at most [`MAX_BINS`] bins, merged pairwise (the bin doubles) beyond.

use crate::analyze::bulk::BulkTransfer;
use crate::event::Pkt;
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};

/// The bin of the summed arrivals, ns (a 32 KB bucket at 20 Mbit/s refills in 13 ms; a
/// retransmission timeout idles a connection for 200 ms or more).
pub const BIN_NS: i64 = 100_000_000;
/// Bins kept before they are merged pairwise.
pub const MAX_BINS: usize = 4096;
/// Bytes the server's transfers must carry in all.
pub const MIN_TOTAL: u64 = 2 * 1024 * 1024;
/// Busy bins (after the ramps are left out) needed to judge flatness.
pub const MIN_BUSY_BINS: usize = 8;
/// Flat: at least this share of the busy bins within ±30 % of their median. A share rather
/// than a coefficient of variation, so that the few bins where every connection waited for a
/// timeout at once (the bucket idle) do not hide the rate the others show. Measured: tbf
/// 20 Mbit/s with 200 KB answers 0.90, with 1 MB answers (21 % of the segments lost) 0.88;
/// 2 % random loss on the same veth path 0.33.
pub const MIN_FLAT_SHARE: f64 = 0.75;

#[derive(Default)]
pub struct Arrivals {
    /// First bin's start, ns since the epoch, and the bin width (starts at [`BIN_NS`]).
    start_ns: Option<i64>,
    bin_ns: i64,
    /// Per bin: bytes that arrived and transfers running.
    bins: Vec<(f64, u32)>,
    transfers: u64,
    /// Transfers whose connection's handshake put the capture at the server (the sender).
    at_sender: u64,
    connections: Vec<String>,
    bytes: u64,
    segments: u64,
    lost: u64,
    rto: u64,
    /// The receiver's window went under 4 segments in some transfer.
    window_tight: bool,
    /// Transfer durations (first data to end), ms, a fixed-size sample.
    durations_ms: Vec<f64>,
    example: Option<(String, Option<Pkt>, Option<Pkt>)>,
    /// The receivers' median advertised windows (bytes) and the connections' handshake RTTs
    /// (ns), fixed-size samples.
    windows: Vec<u32>,
    rtts_ns: Vec<i64>,
}

impl Arrivals {
    /// Adds one transfer of the server seen near the receiver (others are ignored).
    pub fn add(&mut self, t: &BulkTransfer) {
        if !t.sender_is_server || t.bin_ns <= 0 {
            return;
        }
        // Judged per connection from its handshake; one capture point is one place, so a
        // minority judged "at the sender" is counted with the rest (see `judge`).
        self.at_sender += u64::from(t.sender_side == Some(true));
        let start = *self.start_ns.get_or_insert(t.chart_start_ns);
        if self.bin_ns == 0 {
            self.bin_ns = BIN_NS;
        }
        // Transfers come in the order they ended: one that began before the first one seen
        // has its earlier bytes counted in bin 0.
        self.transfers += 1;
        if !self.connections.contains(&t.connection) && self.connections.len() < 64 {
            self.connections.push(t.connection.clone());
        }
        self.segments += t.segments;
        self.lost += t.retransmitted.saturating_sub(t.spurious);
        self.rto += t.rto;
        // The receiver's MSS (captured segments may be GRO-merged, far larger).
        let seg = u64::from(t.peer_mss.unwrap_or(1460).max(536));
        if t.bins
            .iter()
            .any(|b| b.window_min > 0 && u64::from(b.window_min) < 4 * seg)
        {
            self.window_tight = true;
        }
        if self.durations_ms.len() < 1024 {
            self.durations_ms
                .push((t.end_ns - t.chart_start_ns).max(0) as f64 / 1e6);
        }
        if self.windows.len() < 1024 && t.window_p50 > 0 {
            self.windows.push(t.window_p50);
        }
        if self.example.is_none() {
            self.example = Some((t.connection.clone(), t.first, t.full_example));
        }
        // Each of the transfer's bins spread over the bins it overlaps, by overlap.
        for (k, b) in t.bins.iter().enumerate() {
            self.bytes += b.bytes;
            let s = t.chart_start_ns + k as i64 * t.bin_ns;
            self.spread(start, s, s + t.bin_ns, b.bytes as f64);
        }
        // Running from its first byte to its end.
        let (first, last) = (
            self.index(start, t.chart_start_ns),
            self.index(start, t.end_ns.max(t.chart_start_ns)),
        );
        for i in first..=last {
            let i = self.slot(i);
            self.bins[i].1 += 1;
        }
    }

    /// Adds `bytes` that arrived evenly over `[s, e]` (one response of the server, for the
    /// queue rule in [`super::queue`]), counted as a transfer running then.
    pub(super) fn add_span(&mut self, s: i64, e: i64, bytes: u64) {
        let start = *self.start_ns.get_or_insert(s);
        if self.bin_ns == 0 {
            self.bin_ns = BIN_NS;
        }
        self.transfers += 1;
        self.bytes += bytes;
        self.spread(start, s, e.max(s + 1), bytes as f64);
        let (first, last) = (self.index(start, s), self.index(start, e.max(s)));
        for i in first..=last {
            let i = self.slot(i);
            self.bins[i].1 += 1;
        }
    }

    /// The bin width now, ns.
    pub(super) fn bin_ns(&self) -> i64 {
        self.bin_ns
    }

    fn index(&self, start: i64, ts: i64) -> usize {
        ((ts - start).max(0) / self.bin_ns) as usize
    }

    /// The bin `i` (at the current width) exists, merging pairwise until it fits.
    fn slot(&mut self, mut i: usize) -> usize {
        while i >= MAX_BINS {
            let merged: Vec<(f64, u32)> = self
                .bins
                .chunks(2)
                .map(|p| {
                    (
                        p.iter().map(|b| b.0).sum(),
                        p.iter().map(|b| b.1).max().unwrap_or(0),
                    )
                })
                .collect();
            self.bins = merged;
            self.bin_ns *= 2;
            i /= 2;
        }
        if self.bins.len() <= i {
            self.bins.resize(i + 1, (0.0, 0));
        }
        i
    }

    fn spread(&mut self, start: i64, s: i64, e: i64, bytes: f64) {
        if bytes <= 0.0 || e <= s {
            return;
        }
        let mut at = s.max(start);
        if at >= e {
            let i = self.slot(0);
            self.bins[i].0 += bytes;
            return;
        }
        while at < e {
            let i = self.index(start, at);
            let i = self.slot(i);
            let bin_end = start + (i as i64 + 1) * self.bin_ns;
            let to = bin_end.min(e);
            self.bins[i].0 += bytes * (to - at) as f64 / (e - s) as f64;
            at = to;
        }
    }

    /// The summed arrivals' flatness over busy bins (ramps left out): (share within ±30 % of
    /// the median, median bytes per bin, busy bins judged, busy share of the span).
    pub(super) fn flatness(&self) -> Option<(f64, f64, usize, f64)> {
        let first = self.bins.iter().position(|b| b.1 > 0)?;
        let last = self.bins.iter().rposition(|b| b.1 > 0)?;
        let span = &self.bins[first..=last];
        let busy = span.iter().filter(|b| b.1 > 0).count();
        // Leave out the first and last bin of every busy stretch.
        let mut v = Vec::new();
        for (i, b) in span.iter().enumerate() {
            let before = i > 0 && span[i - 1].1 > 0;
            let after = i + 1 < span.len() && span[i + 1].1 > 0;
            if b.1 > 0 && before && after {
                v.push(b.0);
            }
        }
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let median = v[v.len() / 2];
        if median <= 0.0 {
            return None;
        }
        let near = v
            .iter()
            .filter(|x| (*x - median).abs() <= 0.3 * median)
            .count();
        Some((
            near as f64 / v.len() as f64,
            median,
            v.len(),
            busy as f64 / span.len() as f64,
        ))
    }

    /// The client advertised a zero (or near-zero) window: it, not a shaper, set the rate.
    pub fn client_window_closed(&mut self) {
        self.window_tight = true;
    }

    /// A handshake RTT of a connection (from its exchanges).
    pub fn rtt(&mut self, ns: i64) {
        if self.rtts_ns.len() < 1024 && ns > 0 {
            self.rtts_ns.push(ns);
        }
    }

    /// The server's transfers added.
    pub fn transfers(&self) -> u64 {
        self.transfers
    }

    /// The finding, when the rule holds.
    pub fn judge(&self) -> Option<Finding> {
        // Most transfers captured at the sender: `bulk_limits`' sender-side rule judges them.
        if self.bytes < MIN_TOTAL
            || self.window_tight
            || self.bin_ns <= 0
            || 2 * self.at_sender >= self.transfers
        {
            return None;
        }
        let (flat, mean, n, busy_share) = self.flatness()?;
        if n < MIN_BUSY_BINS || flat < MIN_FLAT_SHARE || busy_share < 0.8 {
            return None;
        }
        if self.lost < 3 || (self.lost as f64) < 0.005 * self.segments as f64 {
            return None;
        }
        let rate = mean * 8.0 / (self.bin_ns as f64 / 1e9);
        // Far below what the path carries: one window per handshake RTT is ten times the rate
        // or more (a 20 Mbit/s link 40 ms away with a 64 KB window is not far below it; a
        // LAN's 0.04 ms is).
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        let rtt = median(&mut self.rtts_ns.iter().map(|n| *n as f64).collect())?;
        let window = median(&mut self.windows.iter().map(|w| f64::from(*w)).collect())?;
        let path_bps = window * 8.0 / (rtt / 1e9);
        if path_bps < 10.0 * rate {
            return None;
        }
        let median = median(&mut self.durations_ms.clone()).unwrap_or(0.0);
        let conns = self.connections.len();
        let mut f = Finding::new(
            FindingId::ShaperLimited,
            Severity::Warning,
            Side::Network,
            format!(
                "limited by a shaper or policer: the server's data arrived at a flat {:.1} Mbit/s in total across {conns} connection{}, each transfer taking {median:.0} ms at the median, and {} segments were lost where the rate is held",
                rate / 1e6,
                if conns == 1 { "" } else { "s" },
                self.lost
            ),
        );
        f.explanation = format!(
            "Summed over the connections, the server's data arrived at {:.1} Mbit/s (the median of {n} bins of {:.0} ms while transfers ran, {:.0} % of them within 30 % of it), whatever the number of transfers running: a fixed rate handed out to all connections together, as a token bucket (a `tc tbf`/`htb` qdisc, the Kubernetes bandwidth plugin, a policer) or a link of that rate does. Its queue overflowed: {} segments were resent ({} by timeout; {} segments arrived new, counted as captured, GRO-merged ones as one). The path is fast ({:.2} ms handshake RTT: one {:.0} KB window per round trip would carry {}) and the receiver's window stayed open, so neither the path's round trip nor the client set this rate, and the time of these requests is the transfer at this rate, not the server's work. The capture was taken near the receiver, so where the rate is held is not visible from the packets alone.",
            rate / 1e6,
            self.bin_ns as f64 / 1e6,
            flat * 100.0,
            self.lost,
            self.rto,
            self.segments,
            rtt / 1e6,
            window / 1024.0,
            if path_bps >= 1e9 {
                format!("{:.0} Gbit/s", path_bps / 1e9)
            } else {
                format!("{:.0} Mbit/s", path_bps / 1e6)
            }
        );
        f.fix = "Find the rate limit on the server's egress or the path (`tc -s qdisc show` on the server's interfaces: a tbf/htb qdisc with drops; a pod's `kubernetes.io/egress-bandwidth` annotation; a cloud instance or VPN bandwidth cap; a provider's policer) and raise it, or accept it as the path's capacity; the loss is its queue overflowing, not a faulty link.".to_string();
        f.confidence = flat.clamp(0.0, 0.9);
        f.impact.added_latency_ms = Some(median);
        if let Some((connection, first, example)) = &self.example {
            f.evidence.push(Evidence::Packets {
                connection: connection.clone(),
                packets: [*first, *example]
                    .into_iter()
                    .flatten()
                    .map(|p| p.to_ref(0))
                    .collect(),
                note: format!(
                    "{} transfers of the server on {conns} connections, {:.1} MB in all; summed arrivals {:.1} Mbit/s at the median of {:.0} ms bins, {:.0} % of the bins within 30 % of it; {} of {} segments retransmitted",
                    self.transfers,
                    self.bytes as f64 / 1024.0 / 1024.0,
                    rate / 1e6,
                    self.bin_ns as f64 / 1e6,
                    flat * 100.0,
                    self.lost,
                    self.segments
                ),
            });
        }
        Some(f)
    }
}

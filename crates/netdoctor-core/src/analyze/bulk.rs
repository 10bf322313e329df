//! The bulk-transfer view (issue 22): per direction that carries a bulk transfer, what
//! tcptrace's and Wireshark's stream graphs show, from the packets alone: bytes in flight
//! (highest sequence sent − highest ACK) against the window the receiver advertised (scaled,
//! known when both SYNs were captured), the sender's idle time (nothing in flight, the window
//! open, the peer silent, and no new data), retransmissions (the loss tracker's, so segments
//! the capture missed are not counted as loss), ACK RTT samples (one timed segment at a time,
//! Karn's rule) and throughput over time. The congestion window is not on the wire; what
//! bounds the in-flight data when neither the window nor the writer does is judged from
//! these ([`crate::detect::bulk_limits`]).
//!
//! A transfer is one request/response turn of one direction: the data it sends until the peer
//! answers. The peer's new data is an answer when everything the direction had sent was
//! acknowledged by then (it was done); the direction's next new data then starts a new turn,
//! and the watched transfer of the turn before ends ([`on_new_data`] returns it). So a
//! keep-alive connection of many small answers never adds up to one large transfer, and each
//! download of a connection gets its own transfer and chart. The peer's data that comes while
//! data is in flight (a pipelined request, an HTTP/2 WINDOW_UPDATE, the other half of a
//! bidirectional transfer) is not an answer. A sender that waits for each answer with
//! everything acknowledged (an HTTP/2 download held by its flow-control window, a lock-step
//! exchange of single segments) gets a transfer per turn: each is judged, or not, on its own.
//!
//! The state ([`BulkDir`]) is allocated once a turn has sent [`BULK_MIN_BYTES`], or at its
//! first retransmission by timeout (a black hole stops a transfer early), so request/response
//! connections pay a few comparisons per segment. Until then each direction keeps its turn's
//! start and 24 bytes of times ([`PreBulk`]): the time of the turn's first data and of each
//! [`PRE_STEP`] bytes after it, so the throughput series starts at the turn's first byte (its
//! first bins at 16 KB resolution; in flight and the window are charted from the watch on).
//! When the turn or the connection ends it becomes one [`BulkTransfer`] (one event,
//! [`crate::event::Event::Bulk`]), which also carries the series
//! the HTML report charts. Hand-written: no crate computes these figures from a stream of
//! headers without keeping the packets.

use serde::{Deserialize, Serialize};

use super::conn::Conn;
use super::flow::seq_gt;
use crate::event::Pkt;

/// Bytes a direction sends before it is watched as a bulk transfer.
pub const BULK_MIN_BYTES: u32 = 64 * 1024;
/// The resolution of the series before the watch: one checkpoint per this many bytes.
pub const PRE_STEP: u32 = 16 * 1024;
/// Checkpoints before the watch (the last step is where the watch starts).
const PRE_POINTS: usize = (BULK_MIN_BYTES / PRE_STEP) as usize - 1;

/// A direction's current turn (the data it sends between the peer's data) and its first bytes
/// before they are watched: where the turn starts, when its first data segment went, and how
/// long after that each [`PRE_STEP`] bytes were out (µs, saturating at ~71 minutes).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PreBulk {
    first_ns: Option<i64>,
    at_us: [u32; PRE_POINTS],
    n: u8,
    /// The peer sent new data while everything this direction had sent was acknowledged: this
    /// direction's next new data starts a new turn.
    answered: bool,
    /// The sequence number of the turn's first byte (`None` before the direction's first data).
    start: Option<u32>,
    /// Turns of this direction before the current one.
    turn: u32,
}

impl PreBulk {
    /// New data: `sent` bytes of the turn are out at `ts` (this segment included).
    #[inline]
    fn note(&mut self, ts: i64, sent: u32) {
        let first = *self.first_ns.get_or_insert(ts);
        let due = ((sent / PRE_STEP) as usize).min(PRE_POINTS);
        while usize::from(self.n) < due {
            self.at_us[usize::from(self.n)] =
                u32::try_from((ts - first).max(0) / 1000).unwrap_or(u32::MAX);
            self.n += 1;
        }
    }

    /// Bytes of the turn before `seq` (0 before the turn's start).
    fn before(&self, seq: u32) -> u32 {
        match self.start {
            Some(s) if !seq_gt(s, seq) => seq.wrapping_sub(s),
            _ => 0,
        }
    }
}

/// Bulk transfers kept in [`super::Analysis::bulk`] for charts (the largest by bytes).
pub const MAX_CHARTED: usize = 8;
/// Samples kept of in-flight bytes and of RTTs (decimated by 2 each time the buffer fills).
const MAX_SAMPLES: usize = 256;
/// Time bins of the series (merged pairwise when full).
const MAX_BINS: usize = 128;
/// The first bin's width, ns.
const FIRST_BIN_NS: i64 = 1_000_000;

/// Every `stride`-th value, with the stride doubling when `MAX_SAMPLES` are held: a fixed-size,
/// deterministic sample of the whole run (the same on every run and with `-j N`).
#[derive(Clone, Debug, Default)]
struct Samples {
    v: Vec<u32>,
    stride: u32,
    skip: u32,
}

impl Samples {
    fn push(&mut self, x: u32) {
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        if self.v.len() == MAX_SAMPLES {
            let kept: Vec<u32> = self.v.iter().step_by(2).copied().collect();
            self.v = kept;
            self.stride = self.stride.max(1) * 2;
        }
        self.v.push(x);
        self.skip = self.stride.max(1) - 1;
    }

    fn quantile(&self, q: f64) -> u32 {
        let mut v = self.v.clone();
        v.sort_unstable();
        v.get(((v.len() as f64 - 1.0) * q).round().max(0.0) as usize)
            .copied()
            .unwrap_or(0)
    }
}

/// One time bin of the series.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BulkBin {
    /// New bytes sent in the bin.
    pub bytes: u64,
    /// Largest bytes in flight seen in the bin.
    pub inflight_max: u32,
    /// Smallest window the receiver advertised in the bin (0 when unknown).
    pub window_min: u32,
}

/// One bulk transfer (a direction of a connection), as the detectors and the HTML chart see it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BulkTransfer {
    /// `"client → server"`.
    pub connection: String,
    /// The server end sent the data.
    pub sender_is_server: bool,
    /// First watched data segment and the end (last ACK or data), ns since the epoch.
    pub start_ns: i64,
    pub end_ns: i64,
    /// New bytes and segments sent while watched.
    pub bytes: u64,
    pub segments: u64,
    /// The largest segment sent (bytes of payload) and the MSS the receiver announced.
    pub max_segment: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_mss: Option<u16>,
    /// Retransmitted segments (the loss tracker's: not the capture's own gaps), of them
    /// spurious, and by timeout.
    pub retransmitted: u64,
    pub spurious: u64,
    pub rto: u64,
    /// Bytes the receiver acknowledged while watched.
    pub acked_bytes: u64,
    /// Payload bytes the receiver's ACKs covered that the capture never saw.
    pub missing_bytes: u64,
    /// The receiver's window scale is known (both SYNs captured).
    pub window_known: bool,
    /// In-flight samples (one per new data segment), and how many had the window full (in
    /// flight within one segment of the advertised window).
    pub samples: u64,
    pub at_window: u64,
    /// Quantiles of bytes in flight and of the advertised window over the samples.
    pub inflight_p10: u32,
    pub inflight_p50: u32,
    pub inflight_p90: u32,
    pub window_p50: u32,
    /// Time with nothing in flight, the window open and the peer silent, before the sender's
    /// next new data, ns; and how many such gaps.
    pub idle_ns: i64,
    pub idle_gaps: u64,
    /// Gaps in which the peer sent data (not idling). A request/response turn starts a new
    /// transfer, so these are gaps where the peer's data came while this side still had data
    /// in flight (pipelined requests, flow-control updates).
    pub turns: u64,
    /// The sender's turns before this transfer's (0: its first data on the connection; a
    /// second download on a keep-alive connection is turn 1 of the server).
    #[serde(default)]
    pub turn: u64,
    /// New bytes the peer sent while watched.
    pub peer_bytes: u64,
    /// ACK RTT samples, µs: minimum and median.
    pub rtt_min_us: u32,
    pub rtt_p50_us: u32,
    pub rtt_samples: u64,
    /// New data segments sent with a peer ACK since the sender's previous new data (the
    /// sender answered an ACK: ACK-clocked, as a window, cwnd or a full send buffer makes it),
    /// and the median time from that ACK to the data, µs. A paced or CPU-bound sender sends
    /// on its own schedule, several segments per ACK; a rate-limited writer, on its timer.
    #[serde(default)]
    pub ack_clocked: u64,
    #[serde(default)]
    pub ack_reaction_p50_us: u32,
    /// Full-size segments retransmitted by timeout at the acknowledged edge without the edge
    /// ever moving after the first of them, while the peer kept sending packets.
    pub stuck_full_rto: u64,
    /// The peer sent a packet after the first such retransmission (it is alive).
    pub peer_alive_after_stuck: bool,
    /// The capture point is near the sender (from the handshake: the sender's own leg, SYN →
    /// SYN/ACK for a client, SYN/ACK → ACK for a server, is the longer one), `None` without a
    /// handshake. Only there is "sent − acknowledged" what is in flight and data → ACK the
    /// path's RTT; near the receiver both shrink to the receiver's own delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_side: Option<bool>,
    /// The first watched data segment, one with the window full, the first stuck retransmission.
    #[serde(skip)]
    pub first: Option<Pkt>,
    #[serde(skip)]
    pub full_example: Option<Pkt>,
    #[serde(skip)]
    pub stuck_example: Option<Pkt>,
    /// Where the series (`bins`) starts: the direction's first data segment, ns since the
    /// epoch (before `start_ns`, the watch's start: its bytes before the watch are in the bins,
    /// not in `bytes`).
    #[serde(default)]
    pub chart_start_ns: i64,
    /// Width of each bin of `bins`, ns.
    pub bin_ns: i64,
    pub bins: Vec<BulkBin>,
}

impl BulkTransfer {
    pub fn duration_ns(&self) -> i64 {
        (self.end_ns - self.start_ns).max(0)
    }
    /// Average rate over the watched time, bits/s.
    pub fn bits_per_second(&self) -> f64 {
        let d = self.duration_ns();
        if d == 0 {
            0.0
        } else {
            self.bytes as f64 * 8e9 / d as f64
        }
    }
    /// Coefficient of variation of the bins' rates, first and last bins left out (ramp and
    /// cut); infinite with fewer than 4 bins left.
    ///
    /// Only the watched part counts: the bins before the one holding `start_ns` chart the
    /// transfer's start (slow start), and that bin is the ramp.
    pub fn rate_cv(&self) -> f64 {
        let first = if self.bin_ns > 0 {
            ((self.start_ns - self.chart_start_ns).max(0) / self.bin_ns) as usize
        } else {
            0
        };
        let bins = self.bins.get(first..).unwrap_or_default();
        let n = bins.len();
        if n < 6 {
            return f64::INFINITY;
        }
        let v: Vec<f64> = bins[1..n - 1].iter().map(|b| b.bytes as f64).collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        if mean <= 0.0 {
            return f64::INFINITY;
        }
        let var = v.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / v.len() as f64;
        var.sqrt() / mean
    }
}

/// A watched direction's running state.
#[derive(Clone, Debug, Default)]
pub(super) struct BulkDir {
    t: BulkTransfer,
    inflight: Samples,
    window: Samples,
    rtt: Samples,
    /// Time from a peer ACK to the sender's next new data, µs (ACK-clocked segments only).
    reaction: Samples,
    /// The latest peer ACK since the sender's last new data.
    ack_since_data: Option<i64>,
    /// Segment being timed: its end and when it was sent.
    timed: Option<(u32, i64)>,
    /// Since when nothing was in flight (all acknowledged), and whether the peer sent data since.
    empty_since: Option<i64>,
    peer_spoke: bool,
    /// The acknowledged edge when watching began and now (for `acked_bytes`).
    acked: Option<u32>,
    /// Sequence number of the first stuck full-size retransmission.
    stuck_at: Option<u32>,
}

impl BulkDir {
    /// Watching starts at `pkt`, `before` bytes after the direction's first (`pre` says when
    /// they went): the series starts at the first byte.
    fn new(pkt: Pkt, pre: &PreBulk, before: u32) -> Self {
        let first = pre.first_ns.unwrap_or(pkt.ts_ns).min(pkt.ts_ns);
        let mut b = BulkDir {
            t: BulkTransfer {
                start_ns: pkt.ts_ns,
                end_ns: pkt.ts_ns,
                first: Some(pkt),
                chart_start_ns: first,
                bin_ns: FIRST_BIN_NS,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut charted = 0u32;
        for &us in &pre.at_us[..usize::from(pre.n)] {
            if charted + PRE_STEP > before {
                break;
            }
            b.bin(first + i64::from(us) * 1000).bytes += u64::from(PRE_STEP);
            charted += PRE_STEP;
        }
        if before > charted {
            b.bin(pkt.ts_ns).bytes += u64::from(before - charted);
        }
        b
    }

    fn bin(&mut self, ts: i64) -> &mut BulkBin {
        let t = &mut self.t;
        let mut k = ((ts - t.chart_start_ns).max(0) / t.bin_ns) as usize;
        while k >= MAX_BINS {
            let merged: Vec<BulkBin> = t
                .bins
                .chunks(2)
                .map(|p| BulkBin {
                    bytes: p.iter().map(|b| b.bytes).sum(),
                    inflight_max: p.iter().map(|b| b.inflight_max).max().unwrap_or(0),
                    window_min: p
                        .iter()
                        .map(|b| b.window_min)
                        .filter(|w| *w > 0)
                        .min()
                        .unwrap_or(0),
                })
                .collect();
            t.bins = merged;
            t.bin_ns *= 2;
            k = ((ts - t.chart_start_ns).max(0) / t.bin_ns) as usize;
        }
        if t.bins.len() <= k {
            t.bins.resize(k + 1, BulkBin::default());
        }
        &mut t.bins[k]
    }
}

/// New data from endpoint `i` (`pkt`, bytes `seq..end`) after the trackers saw it: starts a
/// new turn when the peer answered this direction's data (a request/response turn: the
/// transfer of the turn before ends and is returned), starts watching the turn once it has
/// sent [`BULK_MIN_BYTES`], then samples in flight.
#[inline]
pub(super) fn on_new_data(
    c: &mut Conn,
    i: usize,
    pkt: Pkt,
    seq: u32,
    end: u32,
) -> Option<Box<BulkDir>> {
    let j = 1 - i;
    if let Some(p) = c.bulk[j].as_deref_mut() {
        p.t.peer_bytes += u64::from(pkt.len);
        p.peer_spoke = true;
    }
    // The peer's data answers the other direction's turn only when that direction had all its
    // data acknowledged (it was done): data that comes while it is still sending (an HTTP/2
    // WINDOW_UPDATE, the other half of a bidirectional transfer, a pipelined request) is not
    // an answer.
    let other = &mut c.dirs[j];
    if other.started && other.acked.is_some_and(|a| !seq_gt(other.nxt, a)) {
        other.pre_bulk.answered = true;
    }
    let d = &mut c.dirs[i];
    let mut ended = None;
    let turn = &mut d.pre_bulk;
    match turn.start {
        None => turn.start = Some(seq),
        Some(s) if turn.answered && seq_gt(seq, s) => {
            ended = c.bulk[i].take();
            *turn = PreBulk {
                start: Some(seq),
                turn: turn.turn.saturating_add(1),
                ..PreBulk::default()
            };
        }
        _ => {}
    }
    turn.answered = false;
    if c.bulk[i].is_none() {
        let sent = d.nxt.wrapping_sub(turn.start.unwrap_or(seq));
        if sent < BULK_MIN_BYTES {
            turn.note(pkt.ts_ns, sent);
            return ended;
        }
        let before = turn.before(seq).min(sent);
        let mut b = BulkDir::new(pkt, turn, before);
        b.t.turn = u64::from(turn.turn);
        c.bulk[i] = Some(Box::new(b));
    }
    let known = c.dirs[i].syn_seen && c.dirs[j].syn_seen;
    let acked = c.dirs[i].acked;
    let window = c.dirs[j].window;
    let peer_mss = c.dirs[j].mss;
    let Some(b) = c.bulk[i].as_deref_mut() else {
        return ended;
    };
    if let Some(since) = b.empty_since.take() {
        if b.peer_spoke {
            b.t.turns += 1;
        } else if window >= pkt.len.max(1) {
            b.t.idle_ns += (pkt.ts_ns - since).max(0);
            b.t.idle_gaps += 1;
        }
    }
    b.peer_spoke = false;
    if let Some(at) = b.ack_since_data.take() {
        b.t.ack_clocked += 1;
        b.reaction
            .push(u32::try_from((pkt.ts_ns - at).max(0) / 1000).unwrap_or(u32::MAX));
    }
    b.t.peer_mss = peer_mss;
    b.t.window_known = known;
    b.t.bytes += u64::from(end.wrapping_sub(seq));
    b.t.segments += 1;
    b.t.max_segment = b.t.max_segment.max(pkt.len);
    b.t.end_ns = b.t.end_ns.max(pkt.ts_ns);
    if b.timed.is_none() {
        b.timed = Some((end, pkt.ts_ns));
    }
    let Some(a) = acked else {
        let bin = b.bin(pkt.ts_ns);
        bin.bytes += u64::from(pkt.len);
        return ended;
    };
    b.acked.get_or_insert(a);
    let inflight = if seq_gt(end, a) {
        end.wrapping_sub(a)
    } else {
        0
    };
    b.t.samples += 1;
    b.inflight.push(inflight);
    if known {
        b.window.push(window);
        if inflight.saturating_add(pkt.len.max(536)) >= window {
            b.t.at_window += 1;
            b.t.full_example.get_or_insert(pkt);
        }
    }
    let bin = b.bin(pkt.ts_ns);
    bin.bytes += u64::from(pkt.len);
    bin.inflight_max = bin.inflight_max.max(inflight);
    if known && (bin.window_min == 0 || window < bin.window_min) {
        bin.window_min = window;
    }
    ended
}

/// An ACK from endpoint `i` of the peer's (`1 - i`) data, after the trackers took it.
#[inline]
pub(super) fn on_ack(c: &mut Conn, i: usize, pkt: Pkt, ack: u32, gap_bytes: u64) {
    let j = 1 - i;
    let nxt = c.dirs[j].nxt;
    let window = c.dirs[i].window;
    let Some(b) = c.bulk[j].as_deref_mut() else {
        return;
    };
    b.t.missing_bytes += gap_bytes;
    b.t.end_ns = b.t.end_ns.max(pkt.ts_ns);
    b.ack_since_data = Some(pkt.ts_ns);
    if b.stuck_at.is_some() {
        b.t.peer_alive_after_stuck = true;
    }
    if let Some(a) = b.acked
        && seq_gt(ack, a)
    {
        b.t.acked_bytes += u64::from(ack.wrapping_sub(a));
        b.acked = Some(ack);
        if b.stuck_at.is_some_and(|s| seq_gt(ack, s)) {
            // The edge moved past the stuck segment: not a black hole after all.
            b.t.stuck_full_rto = 0;
            b.stuck_at = None;
        }
    }
    if let Some((end, sent)) = b.timed
        && !seq_gt(end, ack)
    {
        let us = u32::try_from((pkt.ts_ns - sent).max(0) / 1000).unwrap_or(u32::MAX);
        b.rtt.push(us);
        b.t.rtt_samples += 1;
        b.t.rtt_min_us = if b.t.rtt_samples == 1 {
            us
        } else {
            b.t.rtt_min_us.min(us)
        };
        b.timed = None;
    }
    if ack == nxt && window > 0 {
        b.empty_since.get_or_insert(pkt.ts_ns);
    } else {
        b.empty_since = None;
    }
    if window > 0 {
        let bin = b.bin(pkt.ts_ns);
        if bin.window_min == 0 || window < bin.window_min {
            bin.window_min = window;
        }
    }
}

/// A retransmission by endpoint `i` of bytes from `seq` (`pkt.len` of them).
#[cold]
pub(super) fn on_retransmission(
    c: &mut Conn,
    i: usize,
    pkt: Pkt,
    seq: u32,
    spurious: bool,
    timeout: bool,
) {
    if c.bulk[i].is_none() && timeout {
        let d = &c.dirs[i];
        let before = d.pre_bulk.before(seq).min(BULK_MIN_BYTES);
        let mut b = BulkDir::new(pkt, &d.pre_bulk, before);
        b.t.turn = u64::from(d.pre_bulk.turn);
        b.acked = d.acked;
        // Watching starts here, before any new data could set it (a black hole's first
        // window is under BULK_MIN_BYTES): the peer's SYN MSS, as `on_new_data` keeps it.
        b.t.peer_mss = c.dirs[1 - i].mss;
        c.bulk[i] = Some(Box::new(b));
    }
    let acked = c.dirs[i].acked;
    let window = c.dirs[1 - i].window;
    let mss = c.dirs[1 - i].mss.map_or(1460, u32::from);
    let Some(b) = c.bulk[i].as_deref_mut() else {
        return;
    };
    b.t.retransmitted += 1;
    b.t.spurious += u64::from(spurious);
    b.t.rto += u64::from(timeout);
    b.t.max_segment = b.t.max_segment.max(pkt.len);
    b.timed = None;
    // A full-size segment (over 1200 bytes, within 100 of the MSS) resent by timeout at the
    // acknowledged edge, into an open window.
    let full = pkt.len > 1200 && pkt.len + 100 >= mss.saturating_sub(12);
    if timeout && full && acked == Some(seq) && window >= pkt.len {
        if b.stuck_at.is_none() {
            b.stuck_at = Some(seq);
            b.t.stuck_example = Some(pkt);
        }
        b.t.stuck_full_rto += 1;
    }
}

/// The connection ends: its watched directions as [`BulkTransfer`]s.
pub(super) fn take(c: &mut Conn) -> impl Iterator<Item = BulkTransfer> + '_ {
    (0..2).filter_map(move |i| {
        let b = c.bulk[i].take()?;
        Some(finish(c, i, *b))
    })
}

/// The transfer of endpoint `i`'s watched turn `b` (ended by a new turn or the connection's end).
pub(super) fn finish(c: &Conn, i: usize, b: BulkDir) -> BulkTransfer {
    let near_client = c.syn.near_client();
    let mut t = b.t;
    t.connection = crate::detect::conn_label(c.ends().client, c.ends().server);
    t.sender_is_server = i == c.server;
    t.sender_side = near_client.map(|n| n != t.sender_is_server);
    for p in [&mut t.first, &mut t.full_example, &mut t.stuck_example]
        .into_iter()
        .flatten()
    {
        p.from_server = t.sender_is_server;
    }
    t.inflight_p10 = b.inflight.quantile(0.1);
    t.inflight_p50 = b.inflight.quantile(0.5);
    t.inflight_p90 = b.inflight.quantile(0.9);
    t.window_p50 = b.window.quantile(0.5);
    t.rtt_p50_us = b.rtt.quantile(0.5);
    t.ack_reaction_p50_us = b.reaction.quantile(0.5);
    t
}

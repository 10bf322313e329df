//! Per-direction loss tracking: classifies data that is not new (out of order, retransmitted,
//! spurious), groups retransmissions into episodes and raises one [`Episode`] when an episode
//! ends. The [`packet_loss_retransmission` / `retransmission_timeout`
//! detector](crate::detect::loss) turns episodes into findings; the method is described there.

use crate::event::Pkt;

mod episode;
pub use episode::{Episode, RetxClass};

/// Silence before a retransmission that marks it as timer-driven (Linux: RTO ≥ 200 ms).
pub const RTO_MIN_NS: i64 = 150_000_000;
/// A fill that comes less than RTT / this after the receiver's complaint is out of order.
pub const REACT_RTT_DIV: i64 = 8;
/// A retransmission this soon after the receiver's last loss signal (duplicate ACK, SACK)
/// reacts to it (or the handshake RTT, when longer; never the minimum RTO or more).
pub const FAST_REACT_NS: i64 = 20_000_000;
/// Wireshark's window for a fast retransmission: the segment the duplicate ACKs point at,
/// sent less than this after the receiver's last ACK (`tcp.analysis.fast_retransmission`).
pub const WIRESHARK_FAST_NS: i64 = 20_000_000;
/// Holes (ranges not captured yet) remembered per direction; more are forgotten.
const MAX_HOLES: usize = 4;
/// TCP's largest window (65535 << 14) is below this: a SACK block that starts farther than
/// this from the cumulative ACK names nothing the sender could have sent. Such blocks are in
/// another sequence space: a middlebox that randomises sequence numbers and leaves the SACK
/// option alone (`ppp-one_tcp_stream_max_seq`: every block 1,143,864,130 above the data it
/// names).
pub const MAX_WINDOW_SPAN: u32 = 1 << 30;

fn seq_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}
fn seq_ge(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

#[derive(Clone, Copy, Debug, Default)]
struct Hole {
    start: u32,
    end: u32,
    /// IPv4 id of the segment that opened the hole (after it in sequence space).
    ip_id: Option<u16>,
    /// When the receiver first pointed at it (duplicate ACK at its start or a SACK block
    /// above it).
    signalled: Option<i64>,
}

/// What a data segment that is not entirely new turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Old {
    OutOfOrder,
    Retransmission {
        spurious: bool,
        class: RetxClass,
        /// Wireshark's narrower rule for a fast retransmission holds: ≥ 2 duplicate ACKs,
        /// this segment starts at their ACK number, it comes < [`WIRESHARK_FAST_NS`] after
        /// the receiver's last ACK, and it was not already acknowledged. SACK recovery of
        /// other segments and resends later within an RTT are [`RetxClass::Fast`] without it.
        at_dupack: bool,
        /// Not acknowledged cumulatively (`spurious` is false) but inside a SACK block the
        /// receiver had sent: it resent bytes the receiver said it held. Spurious for the
        /// episode; Wireshark does not flag it, so neither do the segment flags.
        sacked: bool,
    },
}

/// What an ACK of this direction's data told us.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AckNews {
    pub dup: bool,
    pub dsack: bool,
    /// Segments' worth of ranges the receiver had that the capture never saw.
    pub capture_gaps: u32,
    /// Their bytes.
    pub gap_bytes: u64,
    pub closed: Option<Episode>,
}

/// Per-direction loss state (lives in the connection state of the sending side).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LossDir {
    holes: [Hole; MAX_HOLES],
    n_holes: u8,
    last_tx: Option<Pkt>,
    progress_ts: i64,
    flight_ts: i64,
    episode: Option<Episode>,
    /// The last retransmission already known to be spurious when sent (its D-SACK is not
    /// counted again).
    spurious_range: Option<(u32, u32)>,
    /// The last retransmission inside a SACK block of the receiver: counted spurious in its
    /// episode when sent, so its D-SACK is not counted there again.
    sacked_range: Option<(u32, u32)>,
    /// An episode a pure ACK of the receiver closed, held until the connection's next packet
    /// ([`Self::take_closing_after`]): when that packet is the receiver's D-SACK of a resend (the
    /// resend arrived after the original, and the receiver reported it right after the ACK the
    /// original earned), the resend counts as spurious (`ndpi-iphone`: two tail-loss probes of
    /// the server, each D-SACKed by the phone in the packet after the ACK that closed its
    /// episode, read as 2 segments lost). On a connection of turns it waits longer (the
    /// caller's `keep` and [`Self::take_closing_after`]): past the sender's packets and the
    /// receiver's pure ACKs, for one RTT after the closing ACK, since a D-SACK comes at most
    /// that late (the resend left before the sender had the closing ACK, and the receiver
    /// D-SACKs the duplicate the moment it arrives; at any capture point that is under one
    /// round trip after the ACK). `bulk-clean`: the receiver's closing ACK, the sender's data,
    /// another ACK of the receiver, then the D-SACK of the resend 38 µs after the closing ACK.
    closing: Option<Episode>,
    /// When the ACK that closed the held episode came.
    closing_ns: i64,
    /// Duplicate ACKs since the cumulative ACK last advanced.
    dupacks: u32,
    /// A SACK block above the cumulative ACK came since it last advanced.
    sacked: bool,
    /// When the receiver last signalled a loss (duplicate ACK, SACK) since the last advance.
    signal_ts: Option<i64>,
    /// The receiver's last ACK number and when it came (any ACK).
    last_ack: Option<(u32, i64)>,
    /// The SACK blocks above the cumulative ACK of the receiver's last ACK that had any
    /// (cleared when the cumulative ACK advances): a retransmission inside one resends data
    /// the receiver has.
    sack_blocks: [(u32, u32); 4],
    n_sack_blocks: u8,
    /// The end of the highest range not captured that no hole remembers (more than
    /// [`MAX_HOLES`], or a tail given up): below it, a resend may fill a gap the capture had,
    /// so it is never taken for a resend of captured data. Cleared when the cumulative ACK
    /// passes it.
    forgotten: Option<u32>,
}

impl LossDir {
    /// New data `[seq, end)` was sent; `nxt` is the highest sequence sent before it and
    /// `acked` the peer's cumulative ACK.
    pub(crate) fn on_new_data(
        &mut self,
        pkt: Pkt,
        seq: u32,
        nxt: u32,
        acked: Option<u32>,
        ip_id: Option<u16>,
    ) {
        self.open_hole(nxt, seq, ip_id);
        if acked.is_none_or(|a| seq_ge(a, nxt)) {
            self.flight_ts = pkt.ts_ns;
        }
        self.last_tx = Some(pkt);
    }

    /// Data `[seq, end)` entirely below the highest sequence sent (`ip_id`: its IPv4 id).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_old_data(
        &mut self,
        pkt: Pkt,
        seq: u32,
        end: u32,
        nxt: u32,
        acked: Option<u32>,
        rtt_ns: Option<i64>,
        ip_id: Option<u16>,
    ) -> Old {
        // Does it fill a hole?
        let mut filled = None;
        for k in 0..usize::from(self.n_holes) {
            let h = self.holes[k];
            if seq_gt(end, h.start) && seq_gt(h.end, seq) {
                filled = Some(h);
                if seq_ge(seq, h.start) && seq_gt(h.end, end) && seq_gt(seq, h.start) {
                    // In the middle: keep the front part, forget the tail (bounded state).
                    self.forget(h.end);
                    self.holes[k].end = seq;
                } else if seq_gt(h.end, end) {
                    self.holes[k].start = end;
                } else if seq_gt(seq, h.start) {
                    self.holes[k].end = seq;
                } else {
                    self.remove_hole(k);
                }
                break;
            }
        }
        if let Some(h) = filled {
            let quick = |t: i64| pkt.ts_ns - t < rtt_ns.unwrap_or(0) / REACT_RTT_DIV;
            let reordered = match (ip_id, h.ip_id) {
                (Some(a), Some(b)) if a != 0 && b != 0 && a != b => (a.wrapping_sub(b) as i16) < 0,
                _ => h.signalled.is_none_or(quick),
            };
            if reordered {
                self.last_tx = Some(pkt);
                return Old::OutOfOrder;
            }
        }
        let spurious = acked.is_some_and(|a| seq_ge(a, end));
        let sacked = self.sack_blocks[..usize::from(self.n_sack_blocks)]
            .iter()
            .any(|&(l, r)| seq_ge(seq, l) && seq_ge(r, end));
        let untracked = self.forgotten.is_some_and(|f| seq_gt(f, seq));
        if spurious {
            self.spurious_range = Some((seq, end));
        }
        // Inside a SACK block: the receiver had said it held these bytes, so the resend is
        // spurious even when its D-SACK comes only after the episode closed
        // (`suri-tcp-empty-sack`: 3326-3954 SACKed, resent with the hole's fill, D-SACKed after
        // the ACK that closed the episode).
        let had = !spurious && sacked;
        if had {
            self.sacked_range = Some((seq, end));
        }
        let wasted = spurious || had;
        let silence = self.last_tx.map_or(0, |p| pkt.ts_ns - p.ts_ns);
        let react = FAST_REACT_NS.max(rtt_ns.unwrap_or(0)).min(RTO_MIN_NS);
        let signalled = (self.dupacks >= 2 || self.sacked)
            && self
                .signal_ts
                .is_some_and(|t| (0..react).contains(&(pkt.ts_ns - t)));
        let class = if signalled {
            RetxClass::Fast
        } else if silence >= RTO_MIN_NS {
            RetxClass::Timeout
        } else if end == nxt {
            RetxClass::Probe
        } else {
            RetxClass::Quick
        };
        let at_dupack = !spurious
            && self.dupacks >= 2
            && self
                .last_ack
                .is_some_and(|(a, t)| a == seq && pkt.ts_ns - t < WIRESHARK_FAST_NS);
        let timeout = class == RetxClass::Timeout;
        match self.episode.as_mut() {
            Some(e) => {
                e.retx += 1;
                e.spurious += u32::from(wasted);
                e.last = pkt;
                e.timer_retx += u32::from(timeout);
                if timeout && e.first_timer_ns.is_none() {
                    e.first_timer_ns = Some(pkt.ts_ns);
                }
                e.head_resends += u32::from(seq == e.head_seq);
                if timeout && !e.timeout {
                    e.timeout = true;
                    e.rto_ns = silence;
                }
            }
            None => {
                self.episode = Some(Episode {
                    recover: nxt,
                    first: pkt,
                    last: pkt,
                    before: self.last_tx,
                    timeout,
                    rto_ns: if timeout { silence } else { 0 },
                    stall_from: self.progress_ts.max(self.flight_ts),
                    retx: 1,
                    spurious: u32::from(wasted),
                    acked_at_start: acked,
                    setup: false,
                    unacked: false,
                    timer_retx: u32::from(timeout),
                    head_seq: seq,
                    head_resends: 1,
                    peer_last_ns: None,
                    first_timer_ns: timeout.then_some(pkt.ts_ns),
                    peer_forgot: false,
                    near_receiver: None,
                    // Where the sender had a reason: the receiver's signal, the timer, or a
                    // tail-loss probe after silence (a probe that only preceded a delayed ACK
                    // is answered by a D-SACK, which the detector checks). Not a RACK resend
                    // in the middle of a flight.
                    original_seen: filled.is_none()
                        && !untracked
                        && !spurious
                        && !sacked
                        && matches!(
                            class,
                            RetxClass::Fast | RetxClass::Timeout | RetxClass::Probe
                        ),
                    class,
                    dsacked: false,
                    receiver_unseen: false,
                    window_closed: false,
                    before_capture: false,
                    idle: false,
                });
            }
        }
        self.last_tx = Some(pkt);
        Old::Retransmission {
            spurious,
            class,
            at_dupack,
            sacked: had,
        }
    }

    /// The sender's sequence jumped from `nxt` to `seq` (a segment before it was not
    /// captured): remember the range, to tell later whether the network or the capture lost it.
    pub(crate) fn open_hole(&mut self, nxt: u32, seq: u32, ip_id: Option<u16>) {
        if !seq_gt(seq, nxt) {
            return;
        }
        if self.n_holes < MAX_HOLES as u8 {
            self.holes[usize::from(self.n_holes)] = Hole {
                start: nxt,
                end: seq,
                ip_id,
                signalled: None,
            };
            self.n_holes += 1;
        } else {
            self.forget(seq);
        }
    }

    /// A range not captured up to `end` is no longer remembered as a hole.
    fn forget(&mut self, end: u32) {
        if self.forgotten.is_none_or(|f| seq_gt(end, f)) {
            self.forgotten = Some(end);
        }
    }

    fn remove_hole(&mut self, k: usize) {
        let n = usize::from(self.n_holes);
        self.holes.copy_within(k + 1..n, k);
        self.n_holes -= 1;
    }

    /// The peer acknowledged up to `ack` (with SACK blocks); `prev` is its previous highest
    /// cumulative ACK, `nxt` the highest sequence sent, `pure` whether it carried nothing else.
    ///
    /// Nearly every ACK of a healthy connection carries no SACK block, finds no hole and no
    /// loss episode open, and acknowledges nothing beyond what was captured: then only the
    /// progress (or duplicate-ACK) bookkeeping of [`Self::on_progress`] has anything to do,
    /// and it is done inline. Every other ACK takes the full path, which does the same
    /// bookkeeping at the same point.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn on_peer_ack(
        &mut self,
        ts_ns: i64,
        ack: u32,
        prev: Option<u32>,
        nxt: u32,
        sack: &[(u32, u32)],
        pure: bool,
        hold: bool,
        keep: bool,
        mss: u32,
    ) -> AckNews {
        if sack.is_empty()
            && self.n_holes == 0
            && self.episode.is_none()
            && self.closing.is_none()
            && !seq_gt(ack, nxt)
        {
            self.last_ack = Some((ack, ts_ns));
            let advanced = prev.is_none_or(|p| seq_gt(ack, p));
            return AckNews {
                dup: self.on_progress(ts_ns, ack, advanced, pure, nxt),
                ..AckNews::default()
            };
        }
        self.on_peer_ack_full(ts_ns, ack, prev, nxt, sack, pure, hold, keep, mss)
    }

    /// The cumulative ACK moved up (`advanced`), or a pure ACK repeated it below `nxt`: a
    /// duplicate ACK, returned true.
    #[inline(always)]
    fn on_progress(&mut self, ts_ns: i64, ack: u32, advanced: bool, pure: bool, nxt: u32) -> bool {
        if advanced {
            if self.forgotten.is_some_and(|f| seq_ge(ack, f)) {
                self.forgotten = None;
            }
            self.progress_ts = ts_ns;
            self.dupacks = 0;
            self.sacked = false;
            self.signal_ts = None;
            self.n_sack_blocks = 0;
            false
        } else if pure && seq_gt(nxt, ack) {
            self.dupacks += 1;
            self.signal_ts = Some(ts_ns);
            true
        } else {
            false
        }
    }

    /// [`Self::on_peer_ack`] with SACK blocks, holes, an open or held episode or an ACK beyond
    /// `nxt`. `hold`: the ACK carries nothing else (no data, FIN or reset), so an episode it
    /// closes may wait for the receiver's next packet ([`Self::closing`]). `keep`: an episode
    /// already held may wait past this ACK too, when it does not D-SACK that episode's resend.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn on_peer_ack_full(
        &mut self,
        ts_ns: i64,
        ack: u32,
        prev: Option<u32>,
        nxt: u32,
        sack: &[(u32, u32)],
        pure: bool,
        hold: bool,
        keep: bool,
        mss: u32,
    ) -> AckNews {
        let mut news = AckNews::default();
        let mut held = self.closing.take();
        let held_before = held.map(|e| (e.spurious, e.dsacked));
        self.last_ack = Some((ack, ts_ns));
        let advanced = prev.is_none_or(|p| seq_gt(ack, p));
        // Blocks in another sequence space ([`MAX_WINDOW_SPAN`]) are not read, with one
        // exception: on an ACK of everything sent, a block can only report data received
        // twice, wherever it lies (RFC 2883).
        let foreign =
            |&(l, _): &(u32, u32)| (l.wrapping_sub(ack) as i32).unsigned_abs() >= MAX_WINDOW_SPAN;
        let all_acked = seq_ge(ack, nxt);
        let foreign_dsack = all_acked && sack.first().is_some_and(foreign);
        let mut kept = [(0u32, 0u32); 4];
        let mut n_kept = 0;
        for b in sack.iter().filter(|b| !foreign(b)).take(4) {
            kept[n_kept] = *b;
            n_kept += 1;
        }
        let sack = &kept[..n_kept];
        // D-SACK (RFC 2883): the first block lies below the cumulative ACK or inside the second.
        if foreign_dsack {
            // Which range it names cannot be read: it counts for the open episode only (not
            // for a keep-alive probe's byte, which some stacks answer with a D-SACK too).
            if let Some(e) = self.episode.as_mut().or(held.as_mut())
                && e.spurious < e.retx
            {
                news.dsack = true;
                e.spurious += 1;
                e.dsacked = true;
            }
        } else if let Some(&(l, r)) = sack.first() {
            let below = seq_ge(ack, r);
            let inside = sack
                .get(1)
                .is_some_and(|&(l2, r2)| seq_ge(l, l2) && seq_ge(r2, r));
            if (below || inside) && self.sacked_range == Some((l, r)) {
                // Counted spurious when it was resent; the D-SACK confirms it.
                news.dsack = true;
                self.sacked_range = None;
                if let Some(e) = self.episode.as_mut().or(held.as_mut()) {
                    e.dsacked = true;
                }
            } else if (below || inside) && self.spurious_range != Some((l, r)) {
                news.dsack = true;
                // The held episode: only a block inside what it resent.
                let late = held.as_mut().filter(|e| {
                    seq_ge(e.recover, r) && e.acked_at_start.is_none_or(|a| seq_ge(l, a))
                });
                // The held episode first: a block inside its range is not a newer resend's.
                if let Some(e) = late.or(self.episode.as_mut())
                    && e.spurious < e.retx
                {
                    e.spurious += 1;
                    e.dsacked = true;
                }
            }
        }
        // Holes: signalled, or acknowledged without ever being captured.
        let mut k = 0;
        while k < usize::from(self.n_holes) {
            let mut h = self.holes[k];
            let sacked_above = sack.iter().any(|&(l, _)| seq_ge(l, h.end));
            // The receiver holds bytes of the hole the capture never saw: below the
            // cumulative ACK, or inside a SACK block. Each part counts once, when first
            // acknowledged; the rest stays a hole (a later ACK of it is flagged again).
            let mut got = 0u32;
            if seq_gt(ack, h.start) {
                let end = if seq_gt(ack, h.end) { h.end } else { ack };
                got += end.wrapping_sub(h.start);
                h.start = end;
            }
            let mut tail = None;
            if seq_gt(h.end, h.start)
                && let Some(&(l, r)) = sack
                    .iter()
                    .find(|&&(l, r)| seq_gt(r, h.start) && seq_gt(h.end, l))
            {
                let lo = if seq_gt(l, h.start) { l } else { h.start };
                let hi = if seq_gt(h.end, r) { r } else { h.end };
                got += hi.wrapping_sub(lo);
                if seq_gt(h.end, hi) {
                    tail = Some(Hole { start: hi, ..h });
                }
                h.end = lo;
            }
            if got > 0 {
                news.capture_gaps += got.div_ceil(mss.max(1)).max(1);
                news.gap_bytes += u64::from(got);
                if let Some(t) = tail {
                    if self.n_holes < MAX_HOLES as u8 {
                        self.holes[usize::from(self.n_holes)] = t;
                        self.n_holes += 1;
                    } else {
                        self.forget(t.end);
                    }
                }
                if seq_gt(h.end, h.start) {
                    self.holes[k] = h;
                } else {
                    self.remove_hole(k);
                    continue;
                }
            }
            if (ack == h.start || sacked_above) && h.signalled.is_none() {
                self.holes[k].signalled = Some(ts_ns);
            }
            k += 1;
        }
        if seq_gt(ack, nxt) {
            // ACK for data never captured at all (the caller moves `nxt` up to it).
            let bytes = ack.wrapping_sub(nxt);
            news.capture_gaps += bytes.div_ceil(mss.max(1)).max(1);
            news.gap_bytes += u64::from(bytes);
        }
        news.dup = self.on_progress(ts_ns, ack, advanced, pure, nxt);
        if !news.dsack && sack.iter().any(|&(l, _)| seq_gt(l, ack)) {
            self.sacked = true;
            self.signal_ts = Some(ts_ns);
            self.n_sack_blocks = 0;
            for &b in sack.iter().filter(|&&(l, _)| seq_gt(l, ack)).take(4) {
                self.sack_blocks[usize::from(self.n_sack_blocks)] = b;
                self.n_sack_blocks += 1;
            }
        }
        if let Some(e) = self.episode
            && seq_ge(ack, e.recover)
        {
            self.episode = None;
            if held.is_none() && (!hold || e.is_spurious()) {
                news.closed = Some(e);
            } else {
                // Held; or, behind an episode already held, told at the next packet.
                self.closing = Some(e);
                self.closing_ns = ts_ns;
            }
        }
        if let Some(e) = held {
            if keep && self.closing.is_none() && held_before == Some((e.spurious, e.dsacked)) {
                // Not this ACK's D-SACK: it may still come.
                self.closing = Some(e);
            } else {
                news.closed = Some(e);
            }
        }
        news
    }

    /// The episode held by [`Self::closing`], ended by a packet at `ts_ns` of the connection
    /// that is not its receiver's ACK (that one reads it first, in [`Self::on_peer_ack`]),
    /// unless the packet comes within `wait_ns` of the ACK that closed the episode (a
    /// negative `wait_ns` takes it at once).
    /// An episode is held ([`Self::closing`]).
    #[inline]
    pub(crate) fn holding(&self) -> bool {
        self.closing.is_some()
    }

    pub(crate) fn take_closing_after(&mut self, ts_ns: i64, wait_ns: i64) -> Option<Episode> {
        if self.closing.is_some() && ts_ns - self.closing_ns <= wait_ns {
            None
        } else {
            self.closing.take()
        }
    }

    /// The receiver of this direction's data sent a packet (any: an ACK, data, a reset);
    /// `forgot`: a reset without the ACK flag (see [`Episode::peer_forgot`]).
    pub(crate) fn on_peer_packet(&mut self, ts_ns: i64, forgot: bool) {
        if let Some(e) = self.episode.as_mut() {
            if forgot {
                e.peer_forgot = true;
            } else {
                e.peer_last_ns = Some(ts_ns);
            }
        }
    }

    /// The episode just opened by a retransmission (its first) went while the receiver's
    /// window was closed: see [`Episode::window_closed`].
    pub(crate) fn note_window_closed(&mut self) {
        if let Some(e) = self.episode.as_mut()
            && e.retx == 1
        {
            e.window_closed = true;
        }
    }

    /// The connection ended or the capture did: an episode still open ends here.
    /// A held episode (acknowledged) comes first; call until `None`.
    pub(crate) fn take_open(&mut self) -> Option<Episode> {
        self.closing
            .take()
            .or_else(|| self.episode.take().map(|e| Episode { unacked: true, ..e }))
    }
}

//! A loss episode ([`Episode`]) and what made its sender resend ([`RetxClass`]): what the
//! per-direction tracker ([`super::LossDir`]) hands to the detectors.

use super::RTO_MIN_NS;
use crate::event::Pkt;

/// A group of retransmissions repairing one loss.
#[derive(Clone, Copy, Debug)]
pub struct Episode {
    /// The episode ends when the cumulative ACK reaches this.
    pub(super) recover: u32,
    pub first: Pkt,
    pub last: Pkt,
    /// The sender's last transmission before the first retransmission.
    pub before: Option<Pkt>,
    pub timeout: bool,
    /// Silence before the first timeout retransmission (the RTO), 0 without a timeout.
    pub rto_ns: i64,
    pub(super) stall_from: i64,
    pub retx: u32,
    pub spurious: u32,
    /// The peer's cumulative ACK of this direction when the episode began.
    pub acked_at_start: Option<u32>,
    /// The retransmitted data was a connection's first request, of which the server had
    /// acknowledged nothing (set by the analyzer): at setup, a full listen queue drops it
    /// as readily as the path.
    pub setup: bool,
    /// The capture (or the connection) ended before the receiver acknowledged the
    /// retransmitted data: the stall lasted at least until the last retransmission.
    pub unacked: bool,
    /// Retransmissions sent by the sender's timer (silence ≥ [`RTO_MIN_NS`] before them, no
    /// loss signal): how often the timer fired.
    pub timer_retx: u32,
    /// Sequence number of the first retransmitted segment, and how many times a segment
    /// starting there was resent (the most any one segment was resent, in practice: the
    /// timer resends the oldest unacknowledged segment each time).
    pub(super) head_seq: u32,
    pub head_resends: u32,
    /// The receiver's last packet (an ACK, also a duplicate, data, a reset) while the episode
    /// was open, and the
    /// first timer-driven retransmission: a receiver that answered nothing after the timer
    /// began firing went silent (or the capture stopped seeing it).
    pub peer_last_ns: Option<i64>,
    pub first_timer_ns: Option<i64>,
    /// The receiver answered with a reset that acknowledges nothing (RFC 9293's
    /// `<SEQ=SEG.ACK><CTL=RST>`): what a host sends for a segment of a connection it does not
    /// have. The sender's data reached the receiver's host, which had dropped the connection
    /// without a FIN or a reset; that reset is not counted in `peer_last_ns` (it shows the host
    /// up, not the connection alive).
    pub peer_forgot: bool,
    /// The capture point was near the receiver of the retransmitted data (from the
    /// handshake, set by the analyzer; `None` without one): what the capture shows arriving
    /// reached the receiver's host.
    pub near_receiver: Option<bool>,
    /// The first retransmission repeated bytes the capture had already seen (not a hole) and
    /// the receiver had not acknowledged, cumulatively or by SACK: the original passed the
    /// capture point and the receiver never said it had it. Set only for a retransmission
    /// the receiver signalled (duplicate ACKs, SACK), the sender's timer sent, or a tail-loss
    /// probe; never inside a range the capture missed (a hole, also one a bare FIN jumped
    /// over, or one forgotten past `MAX_HOLES`).
    pub original_seen: bool,
    /// What made the sender resend the first time (its timer, a tail-loss probe, the
    /// receiver's duplicate ACKs or SACK).
    pub class: RetxClass,
    /// The receiver reported a retransmission of the episode as received twice (D-SACK).
    pub dsacked: bool,
    /// Not one packet of the receiver was captured on the connection (set by the analyzer
    /// when the connection ends): whether it got the data cannot be seen.
    pub receiver_unseen: bool,
    /// The receiver's window was closed (zero, or near zero below one MSS) when the episode
    /// began (set by the analyzer): the sender filled the little window left and probed it
    /// again; no loss is shown, the reader's stop is (`zero_window` tells it).
    pub window_closed: bool,
    /// The original never reached the capture point: a resend that looks like new data, told
    /// by a skip of the sender's IPv4 ids (set by the analyzer, never by this tracker).
    pub before_capture: bool,
    /// No exchange of the connection was in progress when the episode was handed on, though
    /// the connection had completed one (set by the analyzer): the resent data answered no
    /// request (a closing TLS alert and FIN after the client's own close alert,
    /// `suri-tcp-empty-sack`), and no request waited on it.
    pub idle: bool,
}

impl Episode {
    /// The episode's packets as evidence: the last one sent before the loss (if known), the
    /// first retransmission and, when another, the last one.
    pub fn packet_refs(&self, t0_ns: i64) -> Vec<crate::finding::PacketRef> {
        let mut packets = Vec::with_capacity(3);
        if let Some(b) = self.before {
            packets.push(b.to_ref(t0_ns));
        }
        packets.push(self.first.to_ref(t0_ns));
        if self.last.frame != self.first.frame {
            packets.push(self.last.to_ref(t0_ns));
        }
        packets
    }

    /// An episode of `retx` retransmissions (`spurious` of them spurious) from `first` to
    /// `last`, stalled since `stall_from` (for detectors' tests and synthetic streams).
    pub fn synthetic(first: Pkt, last: Pkt, stall_from: i64, retx: u32, spurious: u32) -> Self {
        let silence = first.ts_ns - stall_from;
        Episode {
            recover: 0,
            first,
            last,
            before: None,
            timeout: silence >= RTO_MIN_NS,
            rto_ns: if silence >= RTO_MIN_NS { silence } else { 0 },
            stall_from,
            retx,
            spurious,
            acked_at_start: None,
            setup: false,
            unacked: false,
            timer_retx: u32::from(silence >= RTO_MIN_NS),
            head_seq: 0,
            head_resends: retx,
            peer_last_ns: None,
            first_timer_ns: (silence >= RTO_MIN_NS).then_some(first.ts_ns),
            peer_forgot: false,
            near_receiver: None,
            original_seen: false,
            class: if silence >= RTO_MIN_NS {
                RetxClass::Timeout
            } else {
                RetxClass::Fast
            },
            dsacked: false,
            receiver_unseen: false,
            window_closed: false,
            before_capture: false,
            idle: false,
        }
    }

    /// Time the transfer was stalled by this loss (0 when every retransmission was spurious).
    pub fn stall_ns(&self) -> i64 {
        if self.spurious >= self.retx {
            0
        } else {
            (self.last.ts_ns - self.stall_from).max(0)
        }
    }
    pub fn stall_start_ns(&self) -> i64 {
        self.stall_from
    }
    pub fn is_spurious(&self) -> bool {
        self.spurious >= self.retx
    }
    /// The receiver had acknowledged (cumulatively) the first resent segment's start before
    /// the episode began: the resend repeated data already acknowledged where the capture was.
    pub fn acked_before_resend(&self) -> bool {
        self.acked_at_start
            .is_some_and(|a| super::seq_gt(a, self.head_seq))
    }
    /// Minimum timer retransmissions, none answered, for [`Episode::peer_silent`].
    pub const SILENT_TIMER_RETX: u32 = 3;
    /// The receiver went silent: the episode was never acknowledged, the sender's timer fired
    /// at least [`Episode::SILENT_TIMER_RETX`] times (0.2 + 0.4 + 0.8 s at least, with the
    /// usual doubling), and the receiver sent no ACK at all from the first of those on, though
    /// it had acknowledged this direction's data before (its direction was captured).
    pub fn peer_silent(&self) -> bool {
        self.unacked
            && self.acked_at_start.is_some()
            && self.timer_retx >= Self::SILENT_TIMER_RETX
            && self
                .first_timer_ns
                .is_some_and(|t| self.peer_last_ns.is_none_or(|a| a < t))
    }
}

/// What made the sender resend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetxClass {
    /// The receiver signalled the loss (≥ 2 duplicate ACKs, or SACK blocks above the
    /// cumulative ACK) less than [`FAST_REACT_NS`](super::FAST_REACT_NS) (or an RTT) before:
    /// fast retransmit / SACK recovery.
    Fast,
    /// No signal, and the sender had been silent ≥ [`RTO_MIN_NS`]: its retransmission timer.
    Timeout,
    /// No signal, the sender's highest segment, before the RTO: a tail-loss probe.
    Probe,
    /// No captured signal, before any timer and not the highest segment (RACK's reordering
    /// timer, or signals the capture missed): counted with the fast ones.
    Quick,
}

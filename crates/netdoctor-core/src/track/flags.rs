//! Per-segment analysis flags: what Wireshark's `tcp.analysis.*` fields say about a frame,
//! as the trackers concluded it. Only recorded on request ([`crate::analyze::Analyzer::record_flags`]),
//! for the agreement harness (`bench/tshark-agreement.sh`) and for debugging a capture; the
//! detectors use the trackers' own state. A hand-written bit set: eighteen constants do not
//! need the `bitflags` crate.

use std::fmt;

/// The analysis flags of one segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegFlags(pub u32);

impl SegFlags {
    /// A copy of a frame seen a few ms before (same IP id, sequence, ACK, TSval, length,
    /// checksum): dropped before the trackers.
    pub const DUPLICATE_FRAME: u32 = 1 << 0;
    /// Data (or SYN/FIN) that repeats sequence space already sent (any class below).
    pub const RETRANSMISSION: u32 = 1 << 1;
    /// Resent by Wireshark's rule for a fast retransmission: ≥ 2 duplicate ACKs, the segment
    /// at their ACK number, < 20 ms after the receiver's last ACK, not already acknowledged.
    pub const FAST_RETRANSMISSION: u32 = 1 << 2;
    /// Resent after the sender's retransmission timer (silence ≥ the minimum RTO, no signal).
    pub const RTO_RETRANSMISSION: u32 = 1 << 3;
    /// The highest segment resent without a signal before the RTO: a tail-loss probe.
    pub const TAIL_LOSS_PROBE: u32 = 1 << 4;
    /// Resent data the receiver had already acknowledged (or reported with a D-SACK).
    pub const SPURIOUS_RETRANSMISSION: u32 = 1 << 5;
    /// Filled a gap before the sender could have reacted: reordering, not loss.
    pub const OUT_OF_ORDER: u32 = 1 << 6;
    /// A pure ACK repeating the previous ACK, window and sequence of its sender.
    pub const DUPLICATE_ACK: u32 = 1 << 7;
    /// The sender advertised a zero receive window.
    pub const ZERO_WINDOW: u32 = 1 << 8;
    /// The segment filled the receiver's advertised window to its right edge.
    pub const WINDOW_FULL: u32 = 1 << 9;
    /// The sequence starts past the sender's highest captured byte: the capture (or the
    /// network, before the capture point) lost the segment before it.
    pub const LOST_SEGMENT: u32 = 1 << 10;
    /// It acknowledges data the capture never saw (past the highest byte captured, once per
    /// gap, or over a range the capture skipped).
    pub const ACK_LOST_SEGMENT: u32 = 1 << 11;
    /// A keep-alive probe (0 or 1 byte at the sender's next sequence − 1).
    pub const KEEP_ALIVE: u32 = 1 << 12;
    /// A reset after a FIN of the connection.
    pub const RESET_AFTER_FIN: u32 = 1 << 13;
    /// A reset after the connection had been idle ≥ [`IDLE_RESET_NS`].
    pub const RESET_AFTER_IDLE: u32 = 1 << 14;
    /// Resent after the receiver signalled the loss, outside Wireshark's narrower rule
    /// ([`Self::FAST_RETRANSMISSION`]): SACK recovery of segments other than the one the
    /// duplicate ACKs point at, or a resend later than 20 ms but within an RTT of the signal.
    pub const FAST_RECOVERY: u32 = 1 << 15;
    /// A pure ACK repeating the previous ACK, window and sequence of its sender with nothing
    /// outstanding (after a repeated SYN/ACK or FIN, a D-SACK report): not a duplicate ACK
    /// (RFC 5681 §2 requires outstanding data); Wireshark calls it one.
    pub const REPEAT_ACK: u32 = 1 << 16;
    /// A segment outside any tracked connection (after both FINs or a reset, a pure ACK
    /// before its connection's sequence space is known, past the connection limit): not
    /// analysed.
    pub const UNTRACKED: u32 = 1 << 17;

    /// Names as printed by `--dump-flags` (Wireshark's where it has one).
    pub const NAMES: [(u32, &'static str); 18] = [
        (Self::DUPLICATE_FRAME, "duplicate_frame"),
        (Self::RETRANSMISSION, "retransmission"),
        (Self::FAST_RETRANSMISSION, "fast_retransmission"),
        (Self::RTO_RETRANSMISSION, "rto_retransmission"),
        (Self::TAIL_LOSS_PROBE, "tail_loss_probe"),
        (Self::SPURIOUS_RETRANSMISSION, "spurious_retransmission"),
        (Self::OUT_OF_ORDER, "out_of_order"),
        (Self::DUPLICATE_ACK, "duplicate_ack"),
        (Self::ZERO_WINDOW, "zero_window"),
        (Self::WINDOW_FULL, "window_full"),
        (Self::LOST_SEGMENT, "lost_segment"),
        (Self::ACK_LOST_SEGMENT, "ack_lost_segment"),
        (Self::KEEP_ALIVE, "keep_alive"),
        (Self::RESET_AFTER_FIN, "reset_after_fin"),
        (Self::RESET_AFTER_IDLE, "reset_after_idle"),
        (Self::FAST_RECOVERY, "fast_recovery"),
        (Self::REPEAT_ACK, "repeat_ack"),
        (Self::UNTRACKED, "untracked"),
    ];

    #[inline]
    pub fn has(self, bit: u32) -> bool {
        self.0 & bit != 0
    }
    #[inline]
    pub fn set(&mut self, bit: u32) {
        self.0 |= bit;
    }
}

/// A reset after this much silence on its connection is a reset after an idle period.
pub const IDLE_RESET_NS: i64 = 5_000_000_000;

impl fmt::Display for SegFlags {
    /// The names, comma-separated (empty for none).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (bit, name) in Self::NAMES {
            if self.has(bit) {
                if !first {
                    f.write_str(",")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        Ok(())
    }
}

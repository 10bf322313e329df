//! ACK-path loss: the sender's retransmission timer resent data the receiver had already
//! acknowledged, on a capture taken next to the receiver. The receiver's ACKs left its host
//! (the capture holds them) and did not reach the sender before its timer fired: they were
//! lost (or held for longer than the timer) on the way back. The transfer stalls for the
//! timer's waits though the receiver held every byte (explore9's setup 6: a router dropping
//! 20 % of client→server packets; three client ACKs in a row lost, the server's timer resent
//! twice, 632 ms with nothing new). Unlike the share rule of the parent module, these are told
//! by the stall they cost.
//!
//! Not this: a tail-loss probe (no timer wait: [`Episode::timer_retx`] is 0); a resend the
//! receiver had not acknowledged yet (a delayed ACK, real loss); a capture next to the sender
//! (there the same stall is ordinary loss: the ACK never arrived where the capture was); a
//! capture without the handshake or without the receiver's ACKs.

use std::net::SocketAddr;

use crate::event::{Ends, Episode};

/// Timer resends of acknowledged data stalling this long in all are told even when they are
/// a small share of the data (one 200 ms minimum RTO).
pub const MIN_STALL_NS: i64 = 200_000_000;

/// The episodes of ACK-path loss and the stall they cost.
#[derive(Default)]
pub(super) struct AckPath {
    pub episodes: u64,
    pub retx: u64,
    /// From the sender's previous transmission to its last resend, summed over the episodes.
    pub stall_ns: i64,
    pub by_server: u64,
    pub examples: Vec<(SocketAddr, SocketAddr, Episode)>,
}

/// A timer resend, seen next to its receiver, of data that receiver had acknowledged.
pub(super) fn is_ack_path_loss(ep: &Episode) -> bool {
    ep.is_spurious()
        && ep.timer_retx > 0
        && ep.near_receiver == Some(true)
        && ep.acked_before_resend()
        && !ep.idle
}

impl AckPath {
    pub fn record(&mut self, ends: Ends, ep: Episode) {
        self.episodes += 1;
        self.retx += u64::from(ep.retx);
        self.by_server += u64::from(ep.first.from_server);
        self.stall_ns += ep.before.map_or(0, |b| (ep.last.ts_ns - b.ts_ns).max(0));
        if self.examples.len() < crate::detect::MAX_EXAMPLES {
            self.examples.push((ends.client, ends.server, ep));
        }
    }

    /// Enough stall to tell.
    pub fn told(&self) -> bool {
        self.stall_ns >= MIN_STALL_NS
    }
}

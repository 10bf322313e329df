//! Detectors: each file watches the reconstructed connections for one finding id and turns
//! what it saw into a [`Finding`](crate::finding::Finding) at the end.
//!
//! Detectors keep aggregates (counters, histograms) and a bounded number of example packets,
//! never per-packet lists, so memory does not grow with the capture.

pub mod connection_reset;
pub mod delayed_ack_stall;
pub mod loss;
pub mod nagle_delayed_ack;
pub mod short_connections;
pub mod slow_server_processing;
pub mod syn_retransmit;
pub mod zero_window;

use std::net::SocketAddr;

use crate::decode::TcpFlags;
use crate::finding::PacketRef;

/// Examples kept per finding for evidence.
pub(crate) const MAX_EXAMPLES: usize = 3;

/// A packet remembered for evidence. `Copy`: strings are only built for the findings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Pkt {
    pub frame: u64,
    pub ts_ns: i64,
    pub from_server: bool,
    pub flags: TcpFlags,
    pub len: u32,
}

impl Pkt {
    pub(crate) fn to_ref(self, t0_ns: i64) -> PacketRef {
        PacketRef {
            frame: self.frame,
            time: (self.ts_ns - t0_ns) as f64 / 1e9,
            dir: if self.from_server { "S→C" } else { "C→S" }.to_string(),
            desc: format!("{} len={}", self.flags, self.len),
        }
    }
}

/// `"client → server"` as used in `Evidence::Packets::connection`.
pub(crate) fn conn_label(client: SocketAddr, server: SocketAddr) -> String {
    format!("{client} → {server}")
}

pub(crate) fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

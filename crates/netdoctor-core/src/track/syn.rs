//! Handshake state of one connection: first and last SYN and SYN/ACK, and the ACK that
//! completed the handshake (for the server).

use crate::event::Pkt;

/// Handshake state of one connection.
#[derive(Clone, Copy, Debug, Default)]
pub struct SynState {
    pub first_syn: Option<Pkt>,
    pub last_syn: Option<Pkt>,
    pub syns: u16,
    pub first_synack: Option<Pkt>,
    pub last_synack: Option<Pkt>,
    pub synacks: u16,
    pub done: Option<Pkt>,
    /// The client answered a SYN/ACK at least once (an ACK, or data, after it): kept when a
    /// repeated SYN/ACK clears [`SynState::done`]. A SYN/ACK repeated to a client that never
    /// answered any is the client's silence (a port scan, a spoofed SYN flood, a client that
    /// went away), not a handshake the server failed to complete.
    pub client_answered: bool,
}

impl SynState {
    pub fn on_syn(&mut self, p: Pkt) {
        self.first_syn.get_or_insert(p);
        self.last_syn = Some(p);
        self.syns = self.syns.saturating_add(1);
    }
    pub fn on_synack(&mut self, p: Pkt) {
        self.first_synack.get_or_insert(p);
        self.last_synack = Some(p);
        self.synacks = self.synacks.saturating_add(1);
        // A repeated SYN/ACK means the server did not take the client's ACK: the handshake
        // completes (for the server) only with the next one.
        self.done = None;
    }
    pub fn repeated(&self) -> bool {
        self.syns > 1 || self.synacks > 1
    }
    /// The capture point was near the client: its own leg of the handshake (SYN → SYN/ACK
    /// near the client, SYN/ACK → ACK near the server) was the longer one. `None` without a
    /// complete handshake.
    pub fn near_client(&self) -> Option<bool> {
        match (self.last_syn, self.last_synack, self.done) {
            (Some(a), Some(b), Some(d)) => Some(b.ts_ns - a.ts_ns >= d.ts_ns - b.ts_ns),
            _ => None,
        }
    }
}

//! Handshake state of one connection: first and last SYN and SYN/ACK, and the ACK that
//! completed the handshake (for the server).

use crate::event::Pkt;

/// Handshake legs closer than this tell nothing about where the capture was taken (ns).
pub const SIDE_MARGIN_NS: i64 = 5_000;

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
    /// The client's first answer to a SYN/ACK (its ACK): kept when a repeated SYN/ACK clears
    /// [`SynState::done`]. From the client's side the handshake was complete there.
    pub first_ack: Option<Pkt>,
    /// The first segment carrying data from the client, and from the server.
    pub client_data: Option<Pkt>,
    pub server_data: Option<Pkt>,
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
    /// The client's ACK of a SYN/ACK.
    pub fn on_client_ack(&mut self, p: Pkt) {
        self.done = Some(p);
        self.client_answered = true;
        self.first_ack.get_or_insert(p);
    }
    /// A segment with data (`p.len > 0`).
    pub fn on_data(&mut self, p: Pkt) {
        if p.from_server {
            self.server_data.get_or_insert(p);
        } else {
            self.client_data.get_or_insert(p);
        }
    }
    /// The server repeated its SYN/ACK to a client that had already answered it and had sent
    /// nothing yet, and the client answered the last one; the server sent nothing before the
    /// client's first data (or nothing at all). From the client's side the connection was
    /// open at its first ACK and it had nothing to say: nobody waited on the repeat. The
    /// server's kernel held the connection in SYN-RECV (`TCP_DEFER_ACCEPT`, Apache's
    /// `AcceptFilter http`, repeats its SYN/ACK once, about 31 s later) or the ACK was lost
    /// after the capture point. Look-alikes kept apart: a full accept queue that drops the
    /// ACK *and* the request sent behind it (client data before the repeat), and a protocol
    /// where the server speaks first (the client waited for its banner: server data before
    /// any client data).
    pub fn repeat_after_idle_open(&self) -> bool {
        let (Some(ack), Some(last), Some(done)) = (self.first_ack, self.last_synack, self.done)
        else {
            return false;
        };
        let before_repeat = |p: Option<Pkt>| p.is_some_and(|p| p.ts_ns < last.ts_ns);
        self.synacks > 1
            && self.syns <= 1
            && ack.ts_ns < last.ts_ns
            && done.ts_ns >= last.ts_ns
            && !before_repeat(self.client_data)
            && match (self.server_data, self.client_data) {
                (None, _) => true,
                (Some(s), Some(c)) => s.ts_ns >= c.ts_ns,
                (Some(_), None) => false,
            }
    }
    /// The round trip from the capture point to the server and back: SYN → SYN/ACK, for a
    /// handshake sent once each way (a repeated one does not say which SYN the SYN/ACK
    /// answered). Wherever the capture was taken, this is the part of the handshake RTT that
    /// lies between a request's last byte and the answer's first byte at the capture point:
    /// all of it at the client, none at the server, the server's side midway. No side is
    /// judged, so microsecond legs decide nothing (see [`SynState::near_client`]).
    pub fn server_leg_ns(&self) -> Option<i64> {
        let (to_server, _) = self.legs()?;
        (!self.repeated()).then_some(to_server)
    }
    /// The complete handshake's legs at the capture point, ns: (SYN → SYN/ACK, SYN/ACK → ACK).
    fn legs(&self) -> Option<(i64, i64)> {
        let (Some(a), Some(b), Some(d)) = (self.last_syn, self.last_synack, self.done) else {
            return None;
        };
        Some(((b.ts_ns - a.ts_ns).max(0), (d.ts_ns - b.ts_ns).max(0)))
    }
    /// The capture point was near the client: its own leg of the handshake (SYN → SYN/ACK
    /// near the client, SYN/ACK → ACK near the server) was the longer one. `None` without a
    /// complete handshake, and when the legs do not tell: within a factor of 2 of each other
    /// (a capture midway, or a veth pair or loopback where both legs are a few microseconds
    /// and which one is longer is scheduling noise: legs of 22.5 and 12.8 µs, and of 2.5 and
    /// 2.6 µs, in one capture taken at the client had two of its four connections judged
    /// "at the server", and the receiver's summed arrivals of `shaper_limited` lost a
    /// connection's share), or apart by under [`SIDE_MARGIN_NS`]. A capture at the sender of
    /// an iperf3 run over veth shows 15–20 µs against 5–6 µs: still told.
    pub fn near_client(&self) -> Option<bool> {
        let (to_server, to_client) = self.legs()?;
        let (long, short) = (to_server.max(to_client), to_server.min(to_client));
        if long < 2 * short || long - short < SIDE_MARGIN_NS {
            return None;
        }
        Some(to_server > to_client)
    }
}

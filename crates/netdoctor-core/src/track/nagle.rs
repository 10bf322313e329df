//! Per-direction stall tracker: a sender's data, the peer's first pure ACK covering it, and the
//! sender's next new data of the same message. When the ACK came late and the next data left
//! right after it, the sender was waiting for that ACK: a [`Stall`]. Why it waited decides
//! which detector the stall belongs to ([`StallKind`]); see
//! [`nagle_delayed_ack`](crate::detect::nagle_delayed_ack) for the method.
//!
//! Nagle holds a small segment only when it would have fit in the peer's receive window:
//! a held segment that reaches past the right edge the peer advertised before the late ACK
//! (its cumulative ACK + window) could not have been sent anyway: flow control
//! ([`StallKind::WindowLimited`]), not Nagle. The edge is only trusted when both SYNs were
//! captured (the window scale is known); otherwise a small held segment stays Nagle, as
//! before.
//!
//! A held *full-size* segment past that edge is flow control too when the late ACK covered
//! two or more full segments at once: a receiver that reads its data ACKs every second full
//! segment at once (RFC 5681; Linux does so only while its application keeps the window
//! open), so sitting on two for the delayed-ACK time means it was not reading, and its full
//! window held the sender (ppa-inconsistent_printer: a printer ACKing four segments every
//! 70 ms with a 6 KB window, read as the printer's delayed ACK before). A late ACK of one lone
//! segment stays a delayed ACK, window-limited or not (a one-segment window, an odd segment at
//! the end of a flight).

use crate::event::Pkt;

/// ACKs later than this are delayed ACKs rather than prompt ones (Linux minimum: 40 ms;
/// some timer slack is allowed below it).
pub const MIN_ACK_DELAY_NS: i64 = 30_000_000;
/// No delayed ACK lasts longer (RFC 1122 §4.2.3.2: 500 ms; Linux: 200 ms): a later ACK
/// answers something else (data the capture never saw, a lost segment).
pub const MAX_ACK_DELAY_NS: i64 = 500_000_000;
/// The held segment must leave within this (plus 2 RTT) after the ACK.
pub const HOLD_BASE_NS: i64 = 1_000_000;

/// Why a sender's data waited for the peer's late ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallKind {
    /// The held segment was smaller than the MSS and fitted in the peer's window: the
    /// sender's Nagle algorithm held it (`nagle_delayed_ack`).
    Nagle,
    /// The held segment was full-size: a congestion- or window-limited sender waiting on a
    /// delayed ACK (`delayed_ack_stall`).
    DelayedAck,
    /// The held (small) segment did not fit in the receive window the peer had advertised:
    /// flow control by a full window (`zero_window`), whatever Nagle does.
    WindowLimited,
}

/// Per-direction tracker (lives in the connection state of the sending side).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NagleDir {
    prev: Option<Pkt>,
    prev_end: u32,
    ack: Option<Pkt>,
    /// The peer's window right edge (ACK + window) just before `ack`, when known.
    edge: Option<u32>,
    /// The bytes `ack` newly acknowledged (from the peer's previous cumulative ACK), when
    /// known.
    ack_covered: Option<u32>,
    /// `ack` raised the window the peer advertised by a full segment or more: its
    /// application read (a window update), not only its ACK timer.
    ack_opened: bool,
    peer_data: bool,
}

/// One detected stall.
#[derive(Clone, Copy, Debug)]
pub struct Stall {
    /// The sender's data before the wait.
    pub prev: Pkt,
    /// The peer's late pure ACK.
    pub ack: Pkt,
    /// The sender's next data, right after `ack`.
    pub held: Pkt,
    pub kind: StallKind,
}

impl Stall {
    // Saturating: capture files may hold any i64 timestamps (found by fuzzing).
    /// Data → late ACK.
    pub fn delay_ns(&self) -> i64 {
        self.ack.ts_ns.saturating_sub(self.prev.ts_ns)
    }
    /// Late ACK → the held data.
    pub fn hold_ns(&self) -> i64 {
        self.held.ts_ns.saturating_sub(self.ack.ts_ns)
    }
}

fn seq_ge(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

fn seq_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

impl NagleDir {
    /// The sender sent new data `x` ending at sequence `end`.
    pub(crate) fn on_data(
        &mut self,
        x: Pkt,
        end: u32,
        mss: Option<u16>,
        rtt_ns: Option<i64>,
    ) -> Option<Stall> {
        let mut stall = None;
        if let (Some(prev), Some(ack)) = (self.prev, self.ack)
            && !self.peer_data
        {
            // Full-size segments carry up to 40 bytes of options (timestamps: 12) less.
            let small = mss.is_none_or(|m| x.len + 40 < u32::from(m));
            let past_edge = self.edge.is_some_and(|e| seq_gt(end, e));
            let sat_on_two = mss.is_some_and(|m| {
                self.ack_covered
                    .is_some_and(|c| c >= 2 * u32::from(m).saturating_sub(40))
            });
            let kind = if past_edge && (small || sat_on_two || self.ack_opened) {
                StallKind::WindowLimited
            } else if small {
                StallKind::Nagle
            } else {
                StallKind::DelayedAck
            };
            let s = Stall {
                prev,
                ack,
                held: x,
                kind,
            };
            let rtt = rtt_ns.unwrap_or(0).max(0);
            let late = (MIN_ACK_DELAY_NS..=MAX_ACK_DELAY_NS).contains(&s.delay_ns())
                && (rtt_ns.is_none() || s.delay_ns() >= rtt.saturating_mul(10));
            let prompt =
                (0..=HOLD_BASE_NS.saturating_add(rtt.saturating_mul(2))).contains(&s.hold_ns());
            if late && prompt {
                stall = Some(s);
            }
        }
        self.prev = Some(x);
        self.prev_end = end;
        self.ack = None;
        self.edge = None;
        self.ack_covered = None;
        self.ack_opened = false;
        self.peer_data = false;
        stall
    }

    /// The peer sent a pure ACK (no data, SYN, FIN or RST) acknowledging up to `ack`; `edge`
    /// is the right edge of the window the peer advertised before this ACK (its previous
    /// cumulative ACK + window), `None` when unknown; `before` the peer's previous cumulative
    /// ACK, when there was one; `opened`: this ACK raised the advertised window by a full
    /// segment or more (a window update of a reader that read: a held segment past `edge`
    /// then waited for the window, [`StallKind::WindowLimited`], even after one segment).
    pub(crate) fn on_peer_ack(
        &mut self,
        ack: u32,
        pkt: Pkt,
        edge: Option<u32>,
        before: Option<u32>,
        opened: bool,
    ) {
        if self.prev.is_some() && self.ack.is_none() && seq_ge(ack, self.prev_end) {
            self.ack = Some(pkt);
            self.edge = edge;
            self.ack_covered = before.map(|b| ack.wrapping_sub(b));
            self.ack_opened = opened;
        }
    }

    /// The capture missed segments of this direction (or the peer acknowledged data it
    /// never saw): the ACK timing around them cannot be read, so forget the data waiting.
    pub(crate) fn on_gap(&mut self) {
        self.prev = None;
        self.ack = None;
        self.edge = None;
        self.ack_covered = None;
        self.ack_opened = false;
    }

    /// The peer sent data: a new message, so the next segment is not a held-back piece.
    pub(crate) fn on_peer_data(&mut self) {
        self.peer_data = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags;

    const MS: i64 = 1_000_000;

    fn pkt(frame: u64, ms: i64, from_server: bool, len: u32) -> Pkt {
        Pkt {
            frame,
            ts_ns: ms * MS,
            from_server,
            flags: TcpFlags(TcpFlags::ACK),
            len,
        }
    }

    /// Server sends 4096 bytes [0, 4096), the client ACKs 40 ms later, the server sends 2048
    /// more at once: (edge before the ACK) decides Nagle or flow control.
    fn run(edge: Option<u32>) -> Option<Stall> {
        let mut d = NagleDir::default();
        assert!(
            d.on_data(pkt(1, 0, true, 4096), 4096, Some(65495), None)
                .is_none()
        );
        d.on_peer_ack(4096, pkt(2, 40, false, 0), edge, None, false);
        d.on_data(pkt(3, 40, true, 2048), 6144, Some(65495), None)
    }

    #[test]
    fn a_held_segment_that_fits_the_window_is_nagle() {
        assert_eq!(run(Some(100_000)).unwrap().kind, StallKind::Nagle);
        // Unknown window (no handshake captured): as before, Nagle.
        assert_eq!(run(None).unwrap().kind, StallKind::Nagle);
    }

    #[test]
    fn a_held_segment_past_the_window_edge_is_flow_control() {
        // The client had advertised ACK 0 + window 4096: 6144 did not fit.
        let s = run(Some(4096)).unwrap();
        assert_eq!(s.kind, StallKind::WindowLimited);
        assert_eq!(s.delay_ns(), 40 * MS);
    }

    #[test]
    fn full_size_segments_are_delayed_ack_stalls() {
        let mut d = NagleDir::default();
        d.on_data(pkt(1, 0, true, 1448), 1448, Some(1460), None);
        d.on_peer_ack(1448, pkt(2, 41, false, 0), Some(1448), None, false);
        let s = d.on_data(pkt(3, 41, true, 1448), 2896, Some(1460), None);
        assert_eq!(s.unwrap().kind, StallKind::DelayedAck);
    }

    /// A late ACK of four full segments at once, the next full segment past the window the
    /// receiver had advertised (ppa-inconsistent_printer): a receiver that was not reading,
    /// flow control. The look-alikes stay delayed ACKs: the same late ACK of one lone segment
    /// past the edge (a one-segment window), and of four segments with room in the window.
    #[test]
    fn a_late_ack_of_several_full_segments_at_a_full_window_is_flow_control() {
        let stall = |covered: u32, edge: u32| {
            let mut d = NagleDir::default();
            let start = 8760u32;
            let end = start + covered;
            d.on_data(pkt(1, 0, false, 1460), end, Some(1460), None);
            d.on_peer_ack(end, pkt(2, 65, true, 0), Some(edge), Some(start), false);
            d.on_data(pkt(3, 65, false, 1460), end + 1460, Some(1460), None)
                .unwrap()
                .kind
        };
        // Window 6144 from ACK 8760: edge 14904; four segments (5840 bytes) in flight.
        assert_eq!(stall(5840, 14904), StallKind::WindowLimited);
        assert_eq!(stall(1460, 8760 + 1460), StallKind::DelayedAck);
        assert_eq!(stall(5840, 100_000), StallKind::DelayedAck);
    }

    #[test]
    fn prompt_acks_and_late_releases_are_not_stalls() {
        let mut d = NagleDir::default();
        d.on_data(pkt(1, 0, true, 100), 100, Some(1460), None);
        d.on_peer_ack(100, pkt(2, 1, false, 0), None, None, false);
        assert!(
            d.on_data(pkt(3, 1, true, 100), 200, Some(1460), None)
                .is_none()
        );
        d.on_peer_ack(200, pkt(4, 50, false, 0), None, None, false);
        // Released 20 ms after the ACK: not held by it.
        assert!(
            d.on_data(pkt(5, 70, true, 100), 300, Some(1460), None)
                .is_none()
        );
    }
}

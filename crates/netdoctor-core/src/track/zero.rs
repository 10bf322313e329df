//! Zero-window periods of one endpoint as a receiver: from the first segment advertising
//! window 0 (not SYN, not RST: a reset carries window 0 without meaning it) to the first later
//! segment advertising a non-zero window.
//!
//! Some stacks advertise window 0 on the FIN of a socket the application has closed
//! (`arkime-wireshark-retrans.pcap`: the server's last segment is `[F.]` with window 0). That
//! is a close, not a stopped reader: a period opened by the endpoint's own FIN that never
//! reopens is dropped. A half-closed reader whose buffer really is full (FIN with window 0,
//! then a window update once it reads) still reopens and still counts.

use crate::event::Pkt;

/// Zero-window period of one endpoint (as a receiver).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ZeroDir {
    since: Option<Pkt>,
}

/// A finished zero-window period.
#[derive(Clone, Copy, Debug)]
pub struct ZeroPeriod {
    pub start: Pkt,
    pub end: Pkt,
    /// The window reopened at `end` (false: the connection or capture ended first).
    pub reopened: bool,
    /// The window advertised at `end`, in bytes, when the scale is known (both SYNs seen).
    pub reopen_bytes: Option<u32>,
    /// The MSS the reader announced (the largest segment the sender may send it).
    pub mss: Option<u16>,
}

impl ZeroPeriod {
    /// A period from `start` to `end` that reopened (window and MSS unknown).
    pub fn new(start: Pkt, end: Pkt) -> Self {
        ZeroPeriod {
            start,
            end,
            reopened: true,
            reopen_bytes: None,
            mss: None,
        }
    }

    /// It reopened by less than one MSS (a window below one segment: silly-window territory).
    pub fn reopened_below_mss(&self) -> bool {
        match (self.reopen_bytes, self.mss) {
            (Some(w), Some(m)) => self.reopened && w < u32::from(m),
            _ => false,
        }
    }

    pub fn duration_ns(&self) -> i64 {
        (self.end.ts_ns - self.start.ts_ns).max(0)
    }
}

impl ZeroDir {
    /// A segment from this endpoint advertised `window` (raw field).
    pub(crate) fn on_window(&mut self, pkt: Pkt, window: u16) -> Option<ZeroPeriod> {
        if pkt.flags.syn() || pkt.flags.rst() {
            return None;
        }
        match (self.since, window) {
            (None, 0) => {
                self.since = Some(pkt);
                None
            }
            (Some(start), w) if w > 0 => {
                self.since = None;
                Some(ZeroPeriod::new(start, pkt))
            }
            _ => None,
        }
    }

    pub(crate) fn active(&self) -> bool {
        self.since.is_some()
    }

    /// Ends an open period at `last` (end of the connection or capture).
    pub(crate) fn take_open(&mut self, last: Pkt) -> Option<ZeroPeriod> {
        let start = self.since.take()?;
        if start.flags.fin() {
            return None;
        }
        Some(ZeroPeriod {
            reopened: false,
            ..ZeroPeriod::new(start, last)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags;

    fn pkt(frame: u64, flags: u8) -> Pkt {
        Pkt {
            frame,
            ts_ns: frame as i64 * 1_000_000,
            from_server: true,
            flags: TcpFlags(flags),
            len: 0,
        }
    }

    const ACK: u8 = 0x10;
    const FIN_ACK: u8 = 0x11;

    #[test]
    fn a_fin_with_window_zero_that_never_reopens_is_a_close() {
        let mut z = ZeroDir::default();
        assert!(z.on_window(pkt(1, FIN_ACK), 0).is_none());
        assert!(z.take_open(pkt(2, ACK)).is_none());
    }

    #[test]
    fn a_stopped_reader_that_closes_still_counts() {
        // Window 0 on a plain ACK first, then the FIN: the reader had stopped before closing.
        let mut z = ZeroDir::default();
        assert!(z.on_window(pkt(1, ACK), 0).is_none());
        assert!(z.on_window(pkt(2, FIN_ACK), 0).is_none());
        let p = z.take_open(pkt(3, ACK)).expect("an open period");
        assert!(!p.reopened);
        assert_eq!(p.start.frame, 1);
    }

    #[test]
    fn a_half_closed_reader_that_reopens_still_counts() {
        let mut z = ZeroDir::default();
        assert!(z.on_window(pkt(1, FIN_ACK), 0).is_none());
        let p = z.on_window(pkt(5, ACK), 4096).expect("a period");
        assert!(p.reopened);
        assert_eq!(p.duration_ns(), 4_000_000);
    }
}

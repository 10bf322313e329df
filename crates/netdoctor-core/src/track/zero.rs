//! Zero-window periods of one endpoint as a receiver: from the first segment advertising
//! window 0 (not SYN, not RST: a reset carries window 0 without meaning it) to the first later
//! segment advertising a non-zero window.

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
        self.since.take().map(|start| ZeroPeriod {
            reopened: false,
            ..ZeroPeriod::new(start, last)
        })
    }
}

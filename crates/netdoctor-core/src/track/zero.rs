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
}

impl ZeroPeriod {
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
                Some(ZeroPeriod { start, end: pkt })
            }
            _ => None,
        }
    }

    pub(crate) fn active(&self) -> bool {
        self.since.is_some()
    }

    /// Ends an open period at `last` (end of the connection or capture).
    pub(crate) fn take_open(&mut self, last: Pkt) -> Option<ZeroPeriod> {
        self.since
            .take()
            .map(|start| ZeroPeriod { start, end: last })
    }
}

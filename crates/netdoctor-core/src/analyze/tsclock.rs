//! When a server's segment left the server, read from its TCP timestamp (RFC 7323 TSval).
//!
//! A segment that waited in a queue on the way (a token-bucket shaper on the server's
//! interface, a full bottleneck) arrives late, but its TSval was stamped when TCP sent it.
//! Linux (and the BSDs, macOS) tick the TSval clock once per millisecond, from a random
//! per-connection offset: over one connection, `arrival − TSval × 1 ms` is the sender's clock
//! offset plus the path's one-way delay plus any queueing, and its minimum over the
//! connection's packets is the offset of a segment that did not wait. So a segment stamped
//! `v` left as if it would have arrived at `v × 1 ms + min offset` without the wait; the rest
//! of its arrival time was spent queued behind earlier data.
//!
//! [`super::hub`] uses this for the server's first response byte of an exchange: the part of
//! "server time" (first response byte − last request byte − RTT) that the byte spent queued
//! after the server had sent it is not the server's; it stays in the exchange's latency and is
//! counted as transfer. The estimate is only used when the direction's clock was seen to tick
//! at about 1 kHz (over at least [`MIN_SPAN_NS`], ticks per ms within [`RATE`]) and the byte
//! left after the request had arrived: a sender whose clock ticks otherwise (zeek-missing-syn's
//! server: 100 Hz; Linux before 4.13: 250 Hz; microseconds) or no timestamps change nothing.
//! Hand-written: a running minimum.

/// Packets of the direction needed before its offset is trusted.
const MIN_PACKETS: u32 = 4;
/// The direction's packets must span this much before its tick rate is judged.
const MIN_SPAN_NS: i64 = 200 * MS;
/// Ticks per millisecond accepted as a 1 kHz clock (queueing at either end of the span moves
/// the estimate; 100 Hz, 250 Hz and 1 MHz clocks are far outside).
const RATE: std::ops::RangeInclusive<f64> = 0.7..=1.4;
const MS: i64 = 1_000_000;
/// The timestamp's granularity (1 ms) plus slack: a wait shorter than this is not told apart.
pub(super) const MIN_QUEUED_NS: i64 = 2 * MS;

/// One direction's TSval clock against the capture's.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TsClock {
    base: u32,
    /// The last packet's TSval, in ticks since `base`.
    last_rel: i64,
    /// Minimum over the packets of arrival − ticks × 1 ms.
    off_min: i64,
    n: u32,
    /// Arrival of the first and of the last packet stamped.
    first_ns: i64,
    last_ns: i64,
}

impl TsClock {
    /// A packet of this direction arrived at `ts_ns` carrying `tsval`.
    #[inline]
    pub(super) fn note(&mut self, tsval: Option<u32>, ts_ns: i64) {
        let Some(v) = tsval else {
            return;
        };
        if self.n == 0 {
            self.base = v;
            self.first_ns = ts_ns;
        }
        self.last_ns = ts_ns;
        let rel = i64::from(v.wrapping_sub(self.base) as i32);
        self.last_rel = rel;
        let off = ts_ns - rel * MS;
        if self.n == 0 || off < self.off_min {
            self.off_min = off;
        }
        self.n = self.n.saturating_add(1);
    }

    /// The last packet's TSval (ticks since the first packet's), when it carried one.
    #[inline]
    pub(super) fn last(&self) -> Option<i64> {
        (self.n > 0).then_some(self.last_rel)
    }

    /// How long a packet stamped `rel` that arrived at `arrived_ns` waited on the way beyond
    /// the least-delayed packet of the direction (0 or more), when the clock is a 1 ms one.
    pub(super) fn wait_ns(&self, rel: i64, arrived_ns: i64) -> Option<i64> {
        let span = self.last_ns - self.first_ns;
        if self.n < MIN_PACKETS
            || span < MIN_SPAN_NS
            || !RATE.contains(&((self.last_rel * MS) as f64 / span as f64))
        {
            return None;
        }
        Some((arrived_ns - rel * MS - self.off_min).max(0))
    }

    /// How long a packet stamped `rel` that arrived at `arrived_ns` waited on the way beyond
    /// the least-delayed packet of the direction, when it can be told: `after_ns` is the
    /// earliest it can have left (its request's arrival at the capture point), else the
    /// clock is not a 1 ms one and nothing is said.
    pub(super) fn queued_ns(&self, rel: i64, arrived_ns: i64, after_ns: i64) -> Option<i64> {
        let span = self.last_ns - self.first_ns;
        if self.n < MIN_PACKETS
            || span < MIN_SPAN_NS
            || !RATE.contains(&((self.last_rel * MS) as f64 / span as f64))
        {
            return None;
        }
        let left = rel * MS + self.off_min;
        let queued = arrived_ns - left;
        (left + MIN_QUEUED_NS >= after_ns && queued >= MIN_QUEUED_NS).then_some(queued)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_stamped_early_and_arriving_late_waited() {
        let mut c = TsClock::default();
        // Packets 50 ms apart, stamped 50 ticks apart from 5000: no wait.
        for k in 0..5 {
            c.note(
                Some(5000 + 50 * k),
                100 * MS + i64::from(k) * 50 * MS + 30_000,
            );
        }
        assert_eq!(c.queued_ns(200, 300 * MS + 30_000, 0), None);
        // Stamped at tick 210 (310 ms), arrived at 350 ms: 40 ms in a queue.
        c.note(Some(5210), 350 * MS);
        let q = c.queued_ns(c.last().unwrap(), 350 * MS, 305 * MS).unwrap();
        assert!((39 * MS..=41 * MS).contains(&q), "{q}");
        // A request that arrived after the stamp: not a 1 ms clock, nothing said.
        assert_eq!(c.queued_ns(210, 350 * MS, 340 * MS), None);
    }

    #[test]
    fn a_clock_of_another_rate_says_nothing() {
        // zeek-missing-syn's server: 10 ms per tick. Its first byte, stamped 18 ticks after
        // the SYN/ACK, arrived 184 ms after it: not 166 ms of queue.
        let mut c = TsClock::default();
        for (tick, at) in [
            (0, 0),
            (18, 184),
            (18, 185),
            (37, 369),
            (55, 553),
            (155, 1550),
        ] {
            c.note(Some(391_880_539 + tick), at * MS);
        }
        assert_eq!(c.queued_ns(18, 184 * MS, MS), None);
    }

    #[test]
    fn no_timestamps_or_too_few_packets_say_nothing() {
        let mut c = TsClock::default();
        c.note(None, 5);
        assert_eq!(c.last(), None);
        c.note(Some(u32::MAX), 0);
        c.note(Some(9), 60 * MS); // wrapped: 10 ticks later, 50 ms late
        assert_eq!(c.queued_ns(10, 60 * MS, 0), None);
    }
}

//! One endpoint's TCP timestamp (RFC 7323 TSval) clock against the capture's: the one model
//! both readers of TSval use, fed once per segment of the direction.
//!
//! Linux (and the BSDs, macOS) tick the TSval clock once per millisecond, from a random
//! per-connection offset: over one connection, `arrival − TSval × 1 ms` is the sender's clock
//! offset plus the path's one-way delay to the capture point plus any queueing, and its
//! minimum over the direction's packets is the offset of a segment that did not wait. So a
//! TSval `v` was first current (its segments left without waiting) at `v × 1 ms + min offset`.
//! Whether the clock ticks at 1 kHz is judged two ways, one for each reader (a sender whose
//! clock ticks otherwise: zeek-missing-syn's server at 100 Hz, Linux before 4.13 at 250 Hz,
//! microsecond timestamps, or no timestamps, gives no reading):
//! - by its rate, [`TsClock::one_khz`]: over at least [`MIN_SPAN_NS`] of packets, ticks per ms
//!   within 0.7 ..= 1.4. Queueing on the way only moves the rate, so this holds for a
//!   direction whose packets wait (the server's data behind a shaper), but only after a span.
//! - by its spread, [`TsClock::steady`]: no packet's offset further than [`SPREAD_MAX_NS`]
//!   from the minimum before it (a 10 ms clock is out on its second tick, microseconds on
//!   the first). Judged from the first packets on, but only for a direction that does not
//!   queue before the capture point: the client's, captured near it.
//!
//! Its two readers:
//! - the server's clock, by rate, [`TsClock::queued_ns`]: a segment that waited in a queue on the way
//!   (a token-bucket shaper on the server's interface, a full bottleneck) arrives late, but
//!   its TSval was stamped when TCP sent it. [`crate::analyze`]'s hub uses it for the server's
//!   first response byte of an exchange: the part of "server time" (first response byte −
//!   last request byte − RTT) that the byte spent queued after the server had sent it is not
//!   the server's; it stays in the exchange's latency and is counted as transfer.
//! - the client's clock, by spread, [`TsClock::current_at`]: when a TSval the server echoes (TSecr) was
//!   first current at the client, for the round trip under load ([`super::echo`]).
//!
//! The minimum is global over the connection: a queue standing for seconds (a shaper's) keeps
//! the least-delayed packet as the baseline. Two clocks drifting apart by `d` ppm move it by
//! `d` × the connection's age (20 ppm over 100 s: 2 ms, below [`MIN_QUEUED_NS`] + a tick).
//! Hand-written: a running minimum and an integer rate check.

/// Packets of the direction needed before its offset is trusted.
const MIN_PACKETS: u32 = 4;
/// The direction's packets must span this much before its tick rate is judged.
pub const MIN_SPAN_NS: i64 = 200 * MS;
/// Ticks per millisecond accepted as a 1 kHz clock, in tenths (0.7 ..= 1.4; queueing at either
/// end of the span moves the estimate; 100 Hz, 250 Hz and 1 MHz clocks are far outside).
const RATE_TENTHS: (i64, i64) = (7, 14);
const MS: i64 = 1_000_000;
/// An offset further than this from the minimum: the clock does not tick at 1 ms.
pub const SPREAD_MAX_NS: i64 = 3 * MS;
/// The timestamp's granularity (1 ms) plus slack: a wait shorter than this is not told apart.
pub const MIN_QUEUED_NS: i64 = 2 * MS;

/// One direction's TSval clock against the capture's.
#[derive(Clone, Copy, Debug, Default)]
pub struct TsClock {
    base: u32,
    /// The last packet's TSval, in ticks since `base`.
    last_rel: i64,
    /// Minimum over the packets of arrival − ticks × 1 ms.
    off_min: i64,
    n: u32,
    /// Arrival of the first and of the last packet stamped.
    first_ns: i64,
    last_ns: i64,
    /// An offset was further than [`SPREAD_MAX_NS`] from the minimum before it.
    spread: bool,
}

impl TsClock {
    /// A packet of this direction arrived at `ts_ns` carrying `tsval`.
    #[inline]
    pub fn note(&mut self, tsval: Option<u32>, ts_ns: i64) {
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
        if self.n == 0 {
            self.off_min = off;
        } else {
            self.spread |= (off - self.off_min).abs() > SPREAD_MAX_NS;
            self.off_min = self.off_min.min(off);
        }
        self.n = self.n.saturating_add(1);
    }

    /// The last packet's TSval (ticks since the first packet's), when it carried one.
    #[inline]
    pub fn last(&self) -> Option<i64> {
        (self.n > 0).then_some(self.last_rel)
    }

    /// The clock was seen to tick at about 1 kHz (see the module's docs).
    #[inline]
    pub fn one_khz(&self) -> bool {
        let span = self.last_ns - self.first_ns;
        let ticks = self.last_rel * MS;
        self.n >= MIN_PACKETS
            && span >= MIN_SPAN_NS
            && 10 * ticks >= RATE_TENTHS.0 * span
            && 10 * ticks <= RATE_TENTHS.1 * span
    }

    /// The offsets stayed within [`SPREAD_MAX_NS`] of their minimum (see the module's docs).
    #[inline]
    pub fn steady(&self) -> bool {
        self.n > 0 && !self.spread
    }

    /// When the TSval `v` was first current at the capture point without any wait (ns), if
    /// the clock is steady (a 1 kHz clock of a direction that does not queue).
    #[inline]
    pub fn current_at(&self, v: u32) -> Option<i64> {
        self.steady()
            .then(|| i64::from(v.wrapping_sub(self.base) as i32) * MS + self.off_min)
    }

    /// How long a packet stamped `rel` that arrived at `arrived_ns` waited on the way beyond
    /// the least-delayed packet of the direction (0 or more), when the clock is a 1 ms one.
    pub fn wait_ns(&self, rel: i64, arrived_ns: i64) -> Option<i64> {
        self.one_khz()
            .then(|| (arrived_ns - rel * MS - self.off_min).max(0))
    }

    /// How long a packet stamped `rel` that arrived at `arrived_ns` waited on the way beyond
    /// the least-delayed packet of the direction, when it can be told: `after_ns` is the
    /// earliest it can have left (its request's arrival at the capture point), else the
    /// clock is not a 1 ms one and nothing is said.
    pub fn queued_ns(&self, rel: i64, arrived_ns: i64, after_ns: i64) -> Option<i64> {
        if !self.one_khz() {
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
        // TSval 5100 was first current 100 ms after 5000's first packet.
        assert_eq!(c.current_at(5100), Some(200 * MS + 30_000));
        // Stamped at tick 210 (310 ms), arrived at 350 ms: 40 ms in a queue.
        c.note(Some(5210), 350 * MS);
        let q = c.queued_ns(c.last().unwrap(), 350 * MS, 305 * MS).unwrap();
        assert!((39 * MS..=41 * MS).contains(&q), "{q}");
        // A request that arrived after the stamp: not a 1 ms clock, nothing said.
        assert_eq!(c.queued_ns(210, 350 * MS, 340 * MS), None);
        // A direction whose packets wait is not read by spread.
        assert!(!c.steady() && c.one_khz());
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
        assert_eq!(c.current_at(391_880_539 + 18), None);
        // Microsecond timestamps: 1,000 ticks per ms.
        let mut c = TsClock::default();
        for k in 0..300 {
            c.note(Some(100 + 1000 * k), i64::from(k) * MS);
        }
        assert!(!c.one_khz());
        assert!(!c.steady());
    }

    #[test]
    fn no_timestamps_or_too_few_packets_say_nothing() {
        let mut c = TsClock::default();
        c.note(None, 5);
        assert_eq!(c.last(), None);
        assert_eq!(c.current_at(7), None);
        c.note(Some(u32::MAX), 0);
        c.note(Some(9), 60 * MS); // wrapped: 10 ticks later, 50 ms late
        assert_eq!(c.queued_ns(10, 60 * MS, 0), None);
    }
}

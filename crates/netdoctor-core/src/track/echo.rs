//! The round trip seen while the server's data flows, from the TCP timestamps a capture near
//! the client sees: the server echoes (TSecr) the client's latest TSval, so the time from the
//! client's sending of that TSval to the arrival of the server segment echoing it is one
//! round trip *under load*, queues on the way included. The handshake RTT is the round trip
//! of an idle path; a queue that fills under load (bufferbloat: a deep FIFO behind a shaper)
//! shows as the echo delay far above it (`detect::bulk_limits`' queue rule).
//!
//! A ring of the client's TSvals and their send times would need one entry per millisecond
//! of queue; instead the client's clock is read as a line: Linux (and the BSDs, macOS) tick
//! TSval once per millisecond, so `capture time − TSval × 1 ms` is the same for every client
//! segment within one tick. Its minimum (refreshed every [`WINDOW_NS`], against clock drift)
//! gives when any TSval was first current. A client whose TSval does not tick at 1 ms (a
//! 10 ms clock, microsecond timestamps) spreads that offset past [`SPREAD_MAX_NS`]: no samples
//! from it. A sample overestimates by at most one tick.
//!
//! Only segments echoing a TSval sent after the client's last data count: the echo of the
//! request itself includes the server's time to answer, the echo of an ACK only the path's
//! (the server sends as soon as an ACK opens its window when the whole answer is written).

/// The client clock's tick assumed, ns.
pub const TICK_NS: i64 = 1_000_000;
/// The offset's minimum is kept over two windows of this length.
pub const WINDOW_NS: i64 = 1_000_000_000;
/// A client offset further than this above its minimum: the clock does not tick at 1 ms.
pub const SPREAD_MAX_NS: i64 = 3 * TICK_NS;

/// The round trip under load `loaded_ns` is a queue's against the idle `idle_ns`: at least
/// [`MIN_QUEUE_NS`] more and [`MIN_RATIO`] times as much.
#[inline]
pub fn queued(idle_ns: i64, loaded_ns: i64) -> bool {
    loaded_ns < i64::MAX
        && loaded_ns - idle_ns >= MIN_QUEUE_NS
        && loaded_ns as f64 >= MIN_RATIO * idle_ns as f64
}

/// A queue's delay (loaded − idle round trip) reaches at least this, ns.
pub const MIN_QUEUE_NS: i64 = 5_000_000;
/// And the loaded round trip this many times the idle one.
pub const MIN_RATIO: f64 = 4.0;

/// Per connection: the client's TSval clock, and the echoes of the server.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoClock {
    /// The first client TSval seen (the clock's origin).
    base: Option<u32>,
    /// Minimum of `ts − (tsval − base) × tick` this window and the window before.
    cur_min: i64,
    prev_min: i64,
    window_start: i64,
    /// The client's last data segment's TSval: echoes up to it include the server's work.
    data_tsval: Option<u32>,
    /// The last echo sampled (a repeated echo is not a new round trip).
    last_echo: Option<u32>,
    /// The clock does not tick at [`TICK_NS`].
    bad: bool,
    /// The last sample and when it was taken (ns): an answer sent in one flight (its every
    /// segment echoes the request) is judged by its connection's latest round trip.
    last: Option<(i64, i64)>,
}

impl EchoClock {
    /// A client segment with a timestamp option.
    #[inline]
    pub fn client(&mut self, ts_ns: i64, tsval: u32, data: bool) {
        if self.bad {
            return;
        }
        let base = *self.base.get_or_insert(tsval);
        let off = ts_ns - i64::from(tsval.wrapping_sub(base) as i32) * TICK_NS;
        if self.window_start == 0 {
            (self.cur_min, self.prev_min, self.window_start) = (off, off, ts_ns);
        }
        if ts_ns - self.window_start >= WINDOW_NS {
            self.prev_min = self.cur_min;
            self.cur_min = off;
            self.window_start = ts_ns;
        }
        let min = self.cur_min.min(self.prev_min);
        // Further above the minimum than a tick: a slower clock; further below: a faster one
        // (microsecond timestamps).
        if (off - min).abs() > SPREAD_MAX_NS {
            self.bad = true;
        }
        self.cur_min = self.cur_min.min(off);
        if data {
            self.data_tsval = Some(tsval);
        }
    }

    /// A server data segment echoing `tsecr`: the round trip under load, ns, when it echoes a
    /// new TSval the client sent after its last data.
    #[inline]
    pub fn server(&mut self, ts_ns: i64, tsecr: u32) -> Option<i64> {
        let base = self.base?;
        if self.bad || tsecr == 0 || self.last_echo == Some(tsecr) {
            return None;
        }
        self.last_echo = Some(tsecr);
        // Echoes the request (or older): the server's answer time is in it.
        if self
            .data_tsval
            .is_some_and(|d| tsecr.wrapping_sub(d) as i32 <= 0)
        {
            return None;
        }
        let sent =
            self.cur_min.min(self.prev_min) + i64::from(tsecr.wrapping_sub(base) as i32) * TICK_NS;
        let rtt = ts_ns - sent;
        // Before the client sent it, or from another clock: no sample.
        let ok = (0..60_000_000_000).contains(&rtt);
        if ok {
            self.last = Some((rtt, ts_ns));
        }
        ok.then_some(rtt)
    }

    /// The latest round trip under load, if taken at most [`WINDOW_NS`] before `ts_ns`.
    #[inline]
    pub fn recent(&self, ts_ns: i64) -> Option<i64> {
        self.last
            .filter(|(_, at)| ts_ns - at <= WINDOW_NS)
            .map(|(r, _)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_of_an_ack_is_the_round_trip_under_load() {
        let mut e = EchoClock::default();
        // Client clock: TSval 1000 at t = 5 ms (+ 0.3 ms into the tick).
        let t = |ms: i64| ms * TICK_NS;
        e.client(t(5) + 300_000, 1000, true); // the request
        e.client(t(6) + 100_000, 1001, false);
        e.client(t(30) + 200_000, 1025, false);
        // The echo of the request: the server's time is in it.
        assert_eq!(e.server(t(20), 1000), None);
        // The ACK of TSval 1001 came back 23 ms later (≤ one tick over).
        let s = e.server(t(29) + 500_000, 1001).unwrap();
        assert!((23 * TICK_NS..=24 * TICK_NS).contains(&s), "{s}");
        // A repeated echo is no new sample.
        assert_eq!(e.server(t(29) + 900_000, 1001), None);
    }

    #[test]
    fn a_clock_not_ticking_at_one_ms_gives_no_sample() {
        let mut e = EchoClock::default();
        // A 10 ms clock: TSval 1 per 10 ms.
        for k in 0..10 {
            e.client(k * 10 * TICK_NS, 100 + k as u32, false);
        }
        assert_eq!(e.server(95 * TICK_NS, 108), None);
        // Microsecond timestamps: 1,000 per ms.
        let mut e = EchoClock::default();
        for k in 0..10 {
            e.client(k * TICK_NS, 100 + 1000 * k as u32, false);
        }
        assert_eq!(e.server(10 * TICK_NS, 8100), None);
    }
}

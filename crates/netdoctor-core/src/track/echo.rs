//! The round trip seen while the server's data flows, from the TCP timestamps a capture near
//! the client sees: the server echoes (TSecr) the client's latest TSval, so the time from the
//! client's sending of that TSval to the arrival of the server segment echoing it is one
//! round trip *under load*, queues on the way included. The handshake RTT is the round trip
//! of an idle path; a queue that fills under load (bufferbloat: a deep FIFO behind a shaper)
//! shows as the echo delay far above it (`detect::bulk_limits`' queue rule).
//!
//! A ring of the client's TSvals and their send times would need one entry per millisecond
//! of queue; instead the client's clock is read as a line: the client direction's
//! [`TsClock`] (the same clock the server's direction keeps for its queue wait) says when a
//! TSval was first current. A client whose TSval does not tick at 1 ms (a 10 ms clock,
//! microsecond timestamps) spreads its offsets past [`super::tsclock::SPREAD_MAX_NS`]
//! ([`TsClock::steady`]): no samples from it. A sample overestimates by at most one tick.
//!
//! Only segments echoing a TSval sent after the client's last data count: the echo of the
//! request itself includes the server's time to answer, the echo of an ACK only the path's
//! (the server sends as soon as an ACK opens its window when the whole answer is written).

use super::tsclock::TsClock;

/// A connection's latest round trip under load stands for an answer without one of its own
/// for this long, ns.
pub const RECENT_NS: i64 = 1_000_000_000;

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

/// Per connection: the server's echoes of the client's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct Echo {
    /// The client's last data segment's TSval: echoes up to it include the server's work.
    data_tsval: Option<u32>,
    /// The last echo sampled (a repeated echo is not a new round trip).
    last_echo: Option<u32>,
    /// The last sample and when it was taken (ns): an answer sent in one flight (its every
    /// segment echoes the request) is judged by its connection's latest round trip.
    last: Option<(i64, i64)>,
}

impl Echo {
    /// A client data segment carrying `tsval`.
    #[inline]
    pub fn client_data(&mut self, tsval: u32) {
        self.data_tsval = Some(tsval);
    }

    /// A server data segment echoing `tsecr`, with the client's clock: the round trip under
    /// load, ns, when it echoes a new TSval the client sent after its last data.
    #[inline]
    pub fn server(&mut self, client: &TsClock, ts_ns: i64, tsecr: u32) -> Option<i64> {
        if tsecr == 0 || self.last_echo == Some(tsecr) {
            return None;
        }
        let sent = client.current_at(tsecr)?;
        self.last_echo = Some(tsecr);
        // Echoes the request (or older): the server's answer time is in it.
        if self
            .data_tsval
            .is_some_and(|d| tsecr.wrapping_sub(d) as i32 <= 0)
        {
            return None;
        }
        let rtt = ts_ns - sent;
        // Before the client sent it, or from another clock: no sample.
        let ok = (0..60_000_000_000).contains(&rtt);
        if ok {
            self.last = Some((rtt, ts_ns));
        }
        ok.then_some(rtt)
    }

    /// The latest round trip under load, if taken at most [`RECENT_NS`] before `ts_ns`.
    #[inline]
    pub fn recent(&self, ts_ns: i64) -> Option<i64> {
        self.last
            .filter(|(_, at)| ts_ns - at <= RECENT_NS)
            .map(|(r, _)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    /// A client clock of 1 kHz judged: TSval 700 + k at 0.3 ms into tick k, k = 0..=300.
    fn client_clock() -> TsClock {
        let mut c = TsClock::default();
        for k in 0..=300 {
            c.note(Some(700 + k as u32), k * MS + 300_000);
        }
        c
    }

    #[test]
    fn echo_of_an_ack_is_the_round_trip_under_load() {
        let mut clock = client_clock();
        let mut e = Echo::default();
        let t = |ms: i64| (ms - 700) * MS;
        // The request, TSval 1000 at t = 1000 ms (+ 0.3 ms into the tick), then ACKs.
        clock.note(Some(1000), t(1000) + 300_000);
        e.client_data(1000);
        clock.note(Some(1001), t(1001) + 100_000);
        clock.note(Some(1025), t(1025) + 200_000);
        // The echo of the request: the server's time is in it.
        assert_eq!(e.server(&clock, t(1020), 1000), None);
        // The ACK of TSval 1001 came back 23 ms later (≤ one tick over).
        let s = e.server(&clock, t(1024) + 500_000, 1001).unwrap();
        assert!((23 * MS..=24 * MS).contains(&s), "{s}");
        assert_eq!(e.recent(t(1500)), Some(s));
        assert_eq!(e.recent(t(2100)), None);
        // A repeated echo is no new sample.
        assert_eq!(e.server(&clock, t(1024) + 900_000, 1001), None);
    }

    #[test]
    fn a_clock_not_ticking_at_one_ms_gives_no_sample() {
        // A 10 ms clock: TSval 1 per 10 ms.
        let mut c = TsClock::default();
        for k in 0..10 {
            c.note(Some(100 + k as u32), k * 10 * MS);
        }
        assert_eq!(Echo::default().server(&c, 95 * MS, 108), None);
        // Microsecond timestamps: 1,000 per ms.
        let mut c = TsClock::default();
        for k in 0..10 {
            c.note(Some(100 + 1000 * k as u32), k * MS);
        }
        assert_eq!(Echo::default().server(&c, 10 * MS, 8100), None);
        // A 1 kHz clock: a sample from its first packets on.
        let mut c = TsClock::default();
        for k in 0..10 {
            c.note(Some(100 + k as u32), k * MS);
        }
        assert!(Echo::default().server(&c, 30 * MS, 108).is_some());
    }
}

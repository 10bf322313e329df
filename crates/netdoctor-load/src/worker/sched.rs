//! The tail of a load thread's waits for a CPU. `/proc/thread-self/schedstat` gives only the
//! sum of the time the thread sat runnable on a run queue (`run_delay`); the waits that land in
//! a p99 are the few long ones, which a run's mean wait share does not bound (session 18: a
//! run beside busy loops waited 3–4 % of its time and still had 4× the p99). So the loop reads
//! `run_delay` after every `epoll_wait` (one `pread` of a file kept open) and keeps, per thread:
//! the wait before each wake-up (its distribution: the episodes), and for each request the
//! thread's wait during that request's life (from its intended send time to its last byte read:
//! the time the thread could not have read its answer or sent it on time), with the latency
//! net of that wait. Without schedstats (`/proc/thread-self/schedstat` absent) nothing is kept.

use super::new_histogram;
use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Instant;

/// Samples kept to find the `run_delay` at a request's send time: at 1 000 wake-ups a second
/// (500 req/s) that is 16 s, at 50 000 a second 0.3 s; an older send time takes the oldest.
const RING: usize = 16_384;
/// A wait longer than this before a wake-up is a long one (counted).
pub(crate) const LONG_WAIT_US: u64 = 1_000;

pub(crate) struct SchedClock {
    file: Option<File>,
    last_ns: u64,
    ring: VecDeque<(Instant, u64)>,
    /// The wait before each wake-up, µs (0 recorded as 1: hdrhistogram's lowest).
    pub wakes: Histogram<u64>,
    /// Each request's thread wait during its life, µs.
    pub request_wait: Histogram<u64>,
    /// Each request's latency minus that wait, µs.
    pub net: Histogram<u64>,
    /// Wake-ups that waited over [`LONG_WAIT_US`].
    pub long_waits: u64,
}

impl SchedClock {
    /// Opens this thread's schedstat (call on the load thread itself).
    pub fn new(now: Instant) -> Self {
        let mut c = SchedClock {
            file: File::open("/proc/thread-self/schedstat").ok(),
            last_ns: 0,
            ring: VecDeque::with_capacity(RING),
            wakes: new_histogram(),
            request_wait: new_histogram(),
            net: new_histogram(),
            long_waits: 0,
        };
        if let Some(ns) = c.read() {
            c.last_ns = ns;
            c.ring.push_back((now, ns));
        } else {
            c.file = None;
        }
        c
    }

    pub fn enabled(&self) -> bool {
        self.file.is_some()
    }

    fn read(&self) -> Option<u64> {
        let mut buf = [0u8; 96];
        let n = self.file.as_ref()?.read_at(&mut buf, 0).ok()?;
        let s = std::str::from_utf8(&buf[..n]).ok()?;
        s.split_whitespace().nth(1)?.parse().ok()
    }

    /// After `epoll_wait` returned: the wait since the last reading is this wake-up's.
    pub fn tick(&mut self, now: Instant) {
        let Some(ns) = self.read() else {
            return;
        };
        let us = ns.saturating_sub(self.last_ns) / 1_000;
        self.last_ns = ns;
        self.wakes.saturating_record(us.max(1));
        if us > LONG_WAIT_US {
            self.long_waits += 1;
        }
        if self.ring.len() == RING {
            self.ring.pop_front();
        }
        self.ring.push_back((now, ns));
    }

    /// A request sent (due) at `since` completed with `latency_us`.
    pub fn request(&mut self, since: Instant, latency_us: u64) {
        if self.file.is_none() || self.ring.is_empty() {
            return;
        }
        let at = reading_before(&self.ring, since);
        // The reading before the send may precede it by part of a wait that ended after it:
        // no more than the request's own life can have been its wait.
        let wait = (self.last_ns.saturating_sub(at) / 1_000).min(latency_us);
        self.request_wait.saturating_record(wait.max(1));
        self.net
            .saturating_record(latency_us.saturating_sub(wait).max(1));
    }
}

/// The `run_delay` of the last reading at or before `since` (the oldest when none is): the
/// first entry after `since` as `partition_point` finds it, but searched from the newest end,
/// whose distance doubles until it passes `since`, then halved within the last step. A request's
/// send time is nearly always among the last few readings (its life is a few wake-ups), so this
/// touches a few recent entries where a binary search over the whole ring touched ~14 cold
/// ones: that search was 1.7–2.2 % of a `load` run's CPU at 100 connections (session 27, perf
/// cpu-clock), a third of the engine's own user time.
fn reading_before(ring: &VecDeque<(Instant, u64)>, since: Instant) -> u64 {
    let n = ring.len();
    // Find lo < hi with ring[lo] <= since (or lo = 0) and ring[hi] > since (or hi = n).
    let (mut lo, mut hi) = (n, n);
    let mut step = 1;
    while lo > 0 {
        let i = n.saturating_sub(step);
        if ring[i].0 <= since {
            lo = i;
            break;
        }
        hi = i;
        lo = i;
        step *= 2;
    }
    // Now the answer (first index after `since`) lies in lo..=hi: partition within it.
    let (mut a, mut b) = (lo, hi);
    while a < b {
        let mid = a + (b - a) / 2;
        if ring[mid].0 <= since {
            a = mid + 1;
        } else {
            b = mid;
        }
    }
    ring[a.saturating_sub(1)].1
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The search from the newest end finds what `partition_point` finds, for send times before,
    /// between, at and after every reading (this fails when the doubling or the halving is off
    /// by one).
    #[test]
    fn the_reading_before_a_send_time_is_the_binary_searchs() {
        let t0 = Instant::now();
        for n in [1usize, 2, 3, 5, 8, 17, 100] {
            // Readings at 0, 10, 20, ... µs, with repeats of one time to test ties.
            let ring: VecDeque<(Instant, u64)> = (0..n)
                .map(|i| {
                    let us = (i as u64 / 2) * 10 * 2 + (i as u64 % 2) * 10 * u64::from(i > 3);
                    (t0 + Duration::from_micros(us), i as u64)
                })
                .collect();
            for q in 0..(n as u64 * 20 + 30) {
                let since = t0 + Duration::from_micros(q);
                let i = ring.partition_point(|(t, _)| *t <= since);
                let want = ring[i.saturating_sub(1)].1;
                assert_eq!(reading_before(&ring, since), want, "n {n}, since +{q} µs");
            }
            let before = t0.checked_sub(Duration::from_micros(5)).unwrap_or(t0);
            if before < t0 {
                assert_eq!(
                    reading_before(&ring, before),
                    0,
                    "older than all: the oldest"
                );
            }
        }
    }
}

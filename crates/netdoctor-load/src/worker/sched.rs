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
        let i = self.ring.partition_point(|(t, _)| *t <= since);
        let at = self.ring[i.saturating_sub(1)].1;
        // The reading before the send may precede it by part of a wait that ended after it:
        // no more than the request's own life can have been its wait.
        let wait = (self.last_ns.saturating_sub(at) / 1_000).min(latency_us);
        self.request_wait.saturating_record(wait.max(1));
        self.net
            .saturating_record(latency_us.saturating_sub(wait).max(1));
    }
}

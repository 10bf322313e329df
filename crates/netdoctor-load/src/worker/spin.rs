//! The wait of the event loop: `epoll_wait` until the next deadline, after a spin
//! ([`crate::LoadConfig::spin`]) that polls without sleeping for up to the spin budget, and a
//! back-off that stops spinning while spins time out.
//!
//! Why the back-off: a spin that finds its event spends the gap to it (a few µs) and spares the
//! server a wake-up; a spin that times out spends the whole budget and the thread sleeps anyway.
//! Over plain HTTP to nginx on a 2-vCPU VM (session 23, 50 µs budget, no back-off, a shared
//! machine at load 2: counts, not timings) 23 % of the spins timed out, and they were 83 % of the spin's CPU (0.23 × 50 µs against 0.77 × 3 µs per
//! spin). After a spin times out the next `penalty` waits sleep at once (counted as
//! `skipped`); the penalty doubles with each timeout up to [`MAX_PENALTY`] waits and halves
//! with each spin that finds its event, so a thread whose events come within the budget keeps
//! spinning and one whose waits are longer mostly sleeps.

use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Poll};

use crate::SpinCounts;

/// The most waits that sleep at once after spins timed out.
pub(crate) const MAX_PENALTY: u32 = 64;

/// When to spin: the back-off state of one thread.
#[derive(Debug)]
pub(super) struct Backoff {
    /// Waits left that sleep without spinning.
    skip: u32,
    /// Waits to skip after the next timeout.
    penalty: u32,
}

impl Backoff {
    pub(super) fn new() -> Self {
        Backoff {
            skip: 0,
            penalty: 1,
        }
    }

    /// Whether this wait spins (false: it is one of the skipped waits after a timeout).
    pub(super) fn spins(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            false
        } else {
            true
        }
    }

    /// A spin found its event before the budget ran out.
    pub(super) fn hit(&mut self) {
        self.penalty = (self.penalty / 2).max(1);
    }

    /// A spin ran out its budget and the thread sleeps.
    pub(super) fn timed_out(&mut self) {
        self.skip = self.penalty;
        self.penalty = (self.penalty * 2).min(MAX_PENALTY);
    }
}

/// One thread's waits: the spin budget, its back-off and what they did.
pub(super) struct Waiter {
    budget: Duration,
    backoff: Backoff,
    pub(super) counts: SpinCounts,
}

impl Waiter {
    pub(super) fn new(budget: Duration) -> Self {
        Waiter {
            budget,
            backoff: Backoff::new(),
            counts: SpinCounts::default(),
        }
    }

    /// Fills `events` with what is ready by `wake` (empty: `wake` came); `now` is the loop's
    /// clock. With a budget and no back-off pending it first polls without sleeping, until an
    /// event comes or the budget (at most until `wake`) runs out, then sleeps in `epoll_wait`.
    pub(super) fn wait(
        &mut self,
        poll: &mut Poll,
        events: &mut Events,
        now: Instant,
        wake: Instant,
    ) -> io::Result<()> {
        if self.budget.is_zero() {
            return sleep(poll, events, wake);
        }
        self.counts.waits += 1;
        if !self.backoff.spins() {
            self.counts.skipped += 1;
            return sleep(poll, events, wake);
        }
        poll.poll(events, Some(Duration::ZERO))?;
        if !events.is_empty() {
            return Ok(());
        }
        self.counts.spins += 1;
        let until = now + self.budget.min(wake.saturating_duration_since(now));
        let spun = Instant::now();
        loop {
            std::hint::spin_loop();
            poll.poll(events, Some(Duration::ZERO))?;
            let t = Instant::now();
            if !events.is_empty() || t >= until {
                self.counts.spin_us += u64::try_from((t - spun).as_micros()).unwrap_or(u64::MAX);
                if !events.is_empty() {
                    self.counts.hits += 1;
                    self.backoff.hit();
                    return Ok(());
                }
                self.backoff.timed_out();
                return sleep(poll, events, wake);
            }
        }
    }
}

/// Sleeps in `epoll_wait` until an event or `wake`.
fn sleep(poll: &mut Poll, events: &mut Events, wake: Instant) -> io::Result<()> {
    poll.poll(events, Some(wake.saturating_duration_since(Instant::now())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The back-off engages when spins time out: with no event ever coming, a thread spins at
    /// most once per doubling pause and then once per [`MAX_PENALTY`] + 1 waits, not at every
    /// wait (this fails when the policy always spins).
    #[test]
    fn spins_that_time_out_back_off() {
        let mut poll = Poll::new().unwrap();
        let mut events = Events::with_capacity(4);
        let mut w = Waiter::new(Duration::from_micros(20));
        let waits = 400;
        for _ in 0..waits {
            let now = Instant::now();
            w.wait(
                &mut poll,
                &mut events,
                now,
                now + Duration::from_micros(100),
            )
            .unwrap();
            assert!(events.is_empty());
        }
        let c = &w.counts;
        assert_eq!((c.waits, c.hits), (waits, 0), "{c:?}");
        assert_eq!(c.spins + c.skipped, waits, "{c:?}");
        // 1 + 2 + 4 + ... + 64 = 127 waits for the first 7 spins, then one spin per 65 waits.
        let most = 7 + (waits - 127).div_ceil(u64::from(MAX_PENALTY) + 1);
        assert!(c.spins <= most, "{} spins in {waits} waits: {c:?}", c.spins);
        assert!(c.spins >= 7, "{c:?}");
        // Each spin ran out its budget (20 µs from the loop's clock, less the first poll).
        assert!(c.spin_us >= 15 * c.spins, "{c:?}");
    }

    /// Spins that find their events bring the pause back down: after a run of timeouts, each
    /// hit halves the penalty until a timeout skips a single wait again.
    #[test]
    fn hits_shrink_the_pause() {
        let mut b = Backoff::new();
        for _ in 0..10 {
            b.timed_out();
            while !b.spins() {}
        }
        assert_eq!(b.penalty, MAX_PENALTY);
        for _ in 0..6 {
            b.hit();
        }
        assert_eq!(b.penalty, 1);
        b.timed_out();
        assert!(!b.spins(), "a timeout skips the next wait");
        assert!(b.spins(), "and only that one");
    }

    /// A thread whose event is ready does not spin or back off, and without a budget it never
    /// counts anything.
    #[test]
    fn ready_events_and_no_budget_do_not_spin() {
        let mut poll = Poll::new().unwrap();
        let waker = mio::Waker::new(poll.registry(), mio::Token(0)).unwrap();
        let mut events = Events::with_capacity(4);
        let mut w = Waiter::new(Duration::from_micros(50));
        for _ in 0..3 {
            waker.wake().unwrap();
            let now = Instant::now();
            w.wait(
                &mut poll,
                &mut events,
                now,
                now + Duration::from_millis(100),
            )
            .unwrap();
            assert_eq!(events.iter().count(), 1);
        }
        assert_eq!((w.counts.waits, w.counts.spins), (3, 0), "{:?}", w.counts);
        let mut off = Waiter::new(Duration::ZERO);
        let now = Instant::now();
        off.wait(&mut poll, &mut events, now, now + Duration::from_micros(10))
            .unwrap();
        assert_eq!(off.counts, SpinCounts::default());
    }
}

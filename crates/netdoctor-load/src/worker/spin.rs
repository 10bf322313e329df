//! The wait of the event loop: `epoll_wait` until the next deadline, after either a nap
//! ([`crate::LoadConfig::nap`]: a short sleep on the thread's own timer, then one poll) or a
//! spin ([`crate::LoadConfig::spin`]: polls without sleeping for up to the budget), and a
//! back-off that stops napping or spinning while they come back empty.
//!
//! Why wait before `epoll_wait` at all: a local server that sends a response to a thread asleep
//! in `epoll_wait` pays for waking it (on a VM whose idle vCPU halts, an IPI from the server's
//! CPU; a remote client would cost it nothing of the sort).
//!
//! Why a nap (session 26, `--wait nap`): a thread asleep in `nanosleep` is not on the epoll
//! wait queue, so the server's sends only mark its sockets ready, and the one poll after the
//! nap collects every response that came meanwhile; the CPU stays idle during the nap. On the
//! quiet 2-vCPU bench VM (nginx, 100 connections, alternating rounds, bench/README.md "Session
//! 26"): plain HTTP 1.18× wrk's requests/s at 0.88–0.94× its CPU per request (the 50 µs spin
//! 1.16–1.21× at 0.99–1.01×; no wait 1.05× at 0.83×), nginx's wake-ups sent per request 0.006
//! (wrk 0.063); HTTPS 1.06–1.12× oha (spin 1.03–1.08×). Its cost is the tail at few
//! connections: with 10 connections (2 threads; nginx holds one vCPU, so the two load threads
//! share the other) a nap that starts while the other thread holds the CPU ends when that
//! thread's slice does, milliseconds later (1,101 naps in 3 s, 936 late, 2.3 ms each on
//! average), and the run's p99 read 1.1–1.6 ms against the spin's 0.23–0.6 ms. So the default
//! (`--wait auto`, session 27) naps only where each thread holds at least
//! [`crate::NAP_IN_FLIGHT`] connections ([`crate::nap_for`]) and spins below that.
//! Session 27 also doubled the nap (20 → 40 µs, at most 1/16 of the mean latency instead of
//! 1/32): at 100 connections most naps end late anyway (the two load threads share a vCPU: a
//! 20 µs nap lasted 94 µs on average, 86 % of them late), and fewer, longer naps cost less
//! (quiet, 3 alternating rounds: plain CPU per request 0.911× wrk's against 0.935×; HTTPS
//! 0.82× against 0.89×; requests/s within 1 %). As the default, with the cheaper send-time
//! search of `sched`, two `bench/load-vs-peers` runs gave plain 1.18–1.21× wrk's requests/s
//! at 0.85–0.86× its CPU per request, HTTPS 1.01–1.08× oha (bench/README.md "Session 27").
//!
//! The cost of a nap is the latency it adds: a response that arrives during it is read when it
//! ends, up to the nap's length late. So a nap lasts at most 1/[`NAP_SHARE`] of the thread's
//! recent mean latency (an average over the last ~16 responses), never more than the
//! configured nap: at the bench's 100 connections (~0.7 ms a request) that is the full 40 µs,
//! at most ~6 % of a latency and about half that on average; and naps shorter than [`MIN_NAP`]
//! are not taken (where latencies are short they cost the tail: see there). A nap that overslept (the thread
//! got its CPU back late) is counted (`naps_late`) and nothing more: a thread woken from
//! `epoll_wait` waits for a busy CPU just as long (the run's `cpu_wait` figures tell both).
//! Backing off after a late nap was tried: over HTTPS, where the two load threads and nginx
//! nearly saturate the bench VM's two vCPUs, 89 % of the waits then slept at once and the run
//! fell from 1.07× to 0.95× oha's requests/s (3 alternating rounds). Where latencies are too short for
//! a nap of at least [`MIN_NAP`] (few connections to a fast local server: the first requests,
//! or `-c 10` at ~40 µs), the thread spins instead with the spin budget, which reads a response
//! within a poll of its arrival.
//!
//! Why the back-off: a spin that finds its event spends the gap to it (a few µs) and spares the
//! server a wake-up; a spin that times out spends the whole budget and the thread sleeps anyway.
//! Over plain HTTP to nginx on a 2-vCPU VM (session 23, 50 µs budget, no back-off, a shared
//! machine at load 2: counts, not timings) 23 % of the spins timed out, and they were 83 % of
//! the spin's CPU (0.23 × 50 µs against 0.77 × 3 µs per spin). After a spin or a nap comes back
//! empty the next `penalty` waits sleep at once (counted as `skipped`); the penalty doubles with
//! each empty one up to [`MAX_PENALTY`] waits and halves with each that finds its event, so a
//! thread whose events come within the budget keeps waiting this way and one whose waits are
//! longer mostly sleeps.

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

/// A nap lasts at most this fraction (1/N) of the thread's recent mean latency (1/32 until
/// session 27; the module doc says why 1/16).
pub(crate) const NAP_SHARE: u64 = 16;

/// Naps shorter than this are not taken: the thread spins instead. A short nap is taken when
/// latencies are short, i.e. few connections per thread, where its cost shows: with 2 µs,
/// `-c 10` on loopback (p50 36 µs, a mean near 64 µs allowing 2 µs naps) measured p99
/// 1.6–1.7 ms against the spin's 0.24–0.27 ms (2 rounds each, session 26): a load thread
/// (`SCHED_BATCH`) whose timer fires on a CPU running another task waits for it, and each
/// late response raised the mean that allowed more naps. From 10 µs (a mean latency of
/// 160 µs at [`NAP_SHARE`] 16) naps happen only where many responses are in flight.
pub(crate) const MIN_NAP: Duration = Duration::from_micros(10);

/// A nap that lasted more than twice its length and this much more overslept: the thread did
/// not get its CPU back in time (another task had it).
const OVERSLEPT: Duration = Duration::from_micros(20);

/// One thread's waits: the nap and spin budgets, the back-off and what they did.
pub(super) struct Waiter {
    budget: Duration,
    nap: Duration,
    backoff: Backoff,
    pub(super) counts: SpinCounts,
}

impl Waiter {
    /// `budget`: the spin's; `nap`: the longest nap (zero: never nap, spin when `budget` is set).
    pub(super) fn new(budget: Duration, nap: Duration) -> Self {
        Waiter {
            budget,
            nap,
            backoff: Backoff::new(),
            counts: SpinCounts::default(),
        }
    }

    /// Whether this thread waits before sleeping at all (it has counts to report).
    pub(super) fn waits(&self) -> bool {
        !self.budget.is_zero() || !self.nap.is_zero()
    }

    /// How long a nap lasts for a thread whose recent mean latency is `latency_us` (zero: the
    /// latencies are too short, or not known yet: spin instead).
    fn nap_for(&self, latency_us: u64) -> Duration {
        let d = Duration::from_micros(latency_us / NAP_SHARE).min(self.nap);
        if d < MIN_NAP { Duration::ZERO } else { d }
    }

    /// Fills `events` with what is ready by `wake` (empty: `wake` came); `now` is the loop's
    /// clock, `latency_us` the thread's recent mean latency. Unless the back-off says sleep,
    /// it first polls once; with nothing ready it naps and polls again, or spins (polls without
    /// sleeping until an event comes or the budget, at most until `wake`, runs out); then it
    /// sleeps in `epoll_wait`.
    pub(super) fn wait(
        &mut self,
        poll: &mut Poll,
        events: &mut Events,
        now: Instant,
        wake: Instant,
        latency_us: u64,
    ) -> io::Result<()> {
        if !self.waits() {
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
        let left = wake.saturating_duration_since(now);
        let nap = self.nap_for(latency_us).min(left);
        if !nap.is_zero() {
            self.counts.naps += 1;
            let napped = Instant::now();
            std::thread::sleep(nap);
            poll.poll(events, Some(Duration::ZERO))?;
            let took = napped.elapsed();
            self.counts.nap_us += u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
            if took > nap * 2 + OVERSLEPT {
                // The CPU was busy: counted, not backed off from (a wake-up from `epoll_wait`
                // waits for a busy CPU just as long; backing off cost HTTPS 12 % of its
                // requests/s on the bench VM, where the CPUs are nearly saturated).
                self.counts.naps_late += 1;
            }
            return self.after(!events.is_empty(), poll, events, wake, true);
        }
        if self.budget.is_zero() {
            return sleep(poll, events, wake);
        }
        self.counts.spins += 1;
        let until = now + self.budget.min(left);
        let spun = Instant::now();
        loop {
            std::hint::spin_loop();
            poll.poll(events, Some(Duration::ZERO))?;
            let t = Instant::now();
            if !events.is_empty() || t >= until {
                self.counts.spin_us += u64::try_from((t - spun).as_micros()).unwrap_or(u64::MAX);
                return self.after(!events.is_empty(), poll, events, wake, false);
            }
        }
    }

    /// A nap or spin ended: it `found` events (done), or the back-off grows and the thread
    /// sleeps.
    fn after(
        &mut self,
        found: bool,
        poll: &mut Poll,
        events: &mut Events,
        wake: Instant,
        napped: bool,
    ) -> io::Result<()> {
        if found {
            if napped {
                self.counts.nap_hits += 1;
            } else {
                self.counts.hits += 1;
            }
            self.backoff.hit();
            return Ok(());
        }
        self.backoff.timed_out();
        sleep(poll, events, wake)
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
        let mut w = Waiter::new(Duration::from_micros(20), Duration::ZERO);
        let waits = 400;
        for _ in 0..waits {
            let now = Instant::now();
            w.wait(
                &mut poll,
                &mut events,
                now,
                now + Duration::from_micros(100),
                0,
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
        let mut w = Waiter::new(Duration::from_micros(50), Duration::from_micros(20));
        for _ in 0..3 {
            waker.wake().unwrap();
            let now = Instant::now();
            w.wait(
                &mut poll,
                &mut events,
                now,
                now + Duration::from_millis(100),
                1_000,
            )
            .unwrap();
            assert_eq!(events.iter().count(), 1);
        }
        assert_eq!((w.counts.waits, w.counts.spins), (3, 0), "{:?}", w.counts);
        let mut off = Waiter::new(Duration::ZERO, Duration::ZERO);
        let now = Instant::now();
        off.wait(
            &mut poll,
            &mut events,
            now,
            now + Duration::from_micros(10),
            1_000,
        )
        .unwrap();
        assert_eq!(off.counts, SpinCounts::default());
    }

    /// A nap lasts 1/NAP_SHARE of the recent mean latency, capped by the configured nap; too
    /// short a nap (or no latency yet) is no nap (this fails if the cap or the share is dropped).
    #[test]
    fn a_nap_follows_the_latency() {
        let w = Waiter::new(Duration::from_micros(50), Duration::from_micros(40));
        assert_eq!(w.nap_for(700), Duration::from_micros(40), "capped");
        assert_eq!(w.nap_for(320), Duration::from_micros(20));
        assert_eq!(w.nap_for(160), Duration::from_micros(10));
        assert_eq!(w.nap_for(150), Duration::ZERO, "9.4 µs: spin instead");
        assert_eq!(w.nap_for(40), Duration::ZERO, "2.5 µs: spin instead");
        assert_eq!(w.nap_for(0), Duration::ZERO, "no latency yet");
        let spin_only = Waiter::new(Duration::from_micros(50), Duration::ZERO);
        assert_eq!(spin_only.nap_for(10_000), Duration::ZERO);
    }

    /// A nap that an event arrives in is a hit and returns it; one that finds nothing backs off
    /// (the next wait sleeps at once); with short latencies the thread spins instead.
    #[test]
    fn naps_hit_miss_and_give_way_to_the_spin() {
        let mut poll = Poll::new().unwrap();
        let waker = std::sync::Arc::new(mio::Waker::new(poll.registry(), mio::Token(0)).unwrap());
        let mut events = Events::with_capacity(4);
        // Latency 3.2 s → a 200 ms nap; the event comes 1 ms into it.
        let mut w = Waiter::new(Duration::from_micros(50), Duration::from_millis(200));
        let late = waker.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1));
            late.wake().unwrap();
        });
        let now = Instant::now();
        w.wait(
            &mut poll,
            &mut events,
            now,
            now + Duration::from_secs(5),
            3_200_000,
        )
        .unwrap();
        t.join().unwrap();
        assert_eq!(events.iter().count(), 1);
        assert_eq!(
            (w.counts.naps, w.counts.nap_hits, w.counts.spins),
            (1, 1, 0),
            "{:?}",
            w.counts
        );
        assert!(w.counts.nap_us >= 150_000, "{:?}", w.counts);
        // Nothing comes: the nap misses, the thread sleeps until `wake`, the next wait skips.
        let mut w = Waiter::new(Duration::from_micros(50), Duration::from_micros(20));
        for _ in 0..2 {
            let now = Instant::now();
            w.wait(
                &mut poll,
                &mut events,
                now,
                now + Duration::from_micros(300),
                3_200,
            )
            .unwrap();
            assert!(events.is_empty());
        }
        assert_eq!(
            (w.counts.naps, w.counts.nap_hits, w.counts.skipped),
            (1, 0, 1),
            "{:?}",
            w.counts
        );
        // Latencies of 40 µs: no nap, a spin.
        let mut w = Waiter::new(Duration::from_micros(20), Duration::from_micros(20));
        let now = Instant::now();
        w.wait(
            &mut poll,
            &mut events,
            now,
            now + Duration::from_micros(300),
            40,
        )
        .unwrap();
        assert_eq!((w.counts.naps, w.counts.spins), (0, 1), "{:?}", w.counts);
    }
}

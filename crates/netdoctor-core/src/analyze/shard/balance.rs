//! The balancer: hands hash buckets (with their connections' state, [`super::migrate`]) from
//! a worker that falls behind to one that keeps up, while the analysis runs.
//!
//! Why (session 18, bench/README.md): on this 2-vCPU VM one vCPU is often ~1.7× slower than
//! the other for seconds at a time. Split by packets alone, `-j 2` ends when the half on the
//! slower vCPU does, and the faster one waits. The buckets are first given by packet counts
//! ([`super::route::Owners`], which depends on the packets only); then every [`EVERY`] rounds
//! the reader looks at how long each worker was busy and how many packets its buckets had,
//! takes each worker's cost per packet from it, and moves buckets from the worker above its
//! share to the one below, half the gap at a time (the reader's cost includes routing and
//! merging every packet, so a full step would overshoot).
//!
//! Busy: a worker thread counts the time it waits for a batch or a handed-over connection
//! ([`Idle`]); the reader, the time it waits to hand a worker a batch (the worker is behind)
//! or for a connection handed to it.
//!
//! No result depends on where a connection lives (the state moves whole), so the analysis
//! stays the single analyzer's; the per-worker caps (half-open connections, remembered keys)
//! are the exception, which is why the balancer stops for the run once more than
//! [`super::route::Owners::TRACKED`] buckets were seen.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Rounds between two looks (~128 K packets, ~30 ms on the bench capture).
pub(super) const EVERY: usize = 32;

/// A look counts only when one thread was busy at least this share of it: on an idle
/// machine the slower thread never waits, so a look where both waited (other processes
/// had the CPUs) says nothing about their speeds.
const MIN_BUSY: f64 = 0.8;

/// A move below this share of the window's packets is not worth a handover.
const MIN_SHARE: f64 = 0.02;

/// Per worker thread (index `w - 1`), the nanoseconds it waited for work so far.
pub(super) type Idle = Arc<[AtomicU64]>;

pub(super) fn idle_counters(threads: usize) -> Idle {
    (0..threads).map(|_| AtomicU64::new(0)).collect()
}

/// Adds a wait to a worker's count.
pub(super) fn add_idle(idle: &AtomicU64, d: Duration) {
    idle.fetch_add(
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
}

/// One hand-over: these buckets go from worker `from` to worker `to`.
pub(super) struct Move {
    pub from: usize,
    pub to: usize,
    pub buckets: Vec<u16>,
}

/// The reader's side: the window's clock and waits.
pub(super) struct Balancer {
    workers: usize,
    rounds: usize,
    /// When the window started (the first round's start for the first: the reader may
    /// have read the capture once before its first packet, to sort it).
    since: Option<Instant>,
    /// The reader's waits in this window.
    blocked: Duration,
    idle: Idle,
    /// The workers' idle counts when the window started.
    idle_then: Vec<u64>,
    /// Tests: every this many rounds, move half the buckets to the next worker, whatever
    /// the clock says.
    forced: Option<usize>,
    looks: usize,
    /// The direction (from, to) the last look asked for: a move is made when two looks in
    /// a row ask for the same (one look's clock is noisy).
    asked: Option<(usize, usize)>,
    /// Hand-overs so far.
    pub moves: u64,
}

impl Balancer {
    pub(super) fn new(workers: usize, idle: Idle) -> Balancer {
        Balancer {
            workers,
            rounds: 0,
            since: None,
            blocked: Duration::ZERO,
            idle_then: vec![0; idle.len()],
            idle,
            forced: None,
            looks: 0,
            asked: None,
            moves: 0,
        }
    }

    pub(super) fn force_every(&mut self, rounds: usize) {
        self.forced = Some(rounds.max(1));
    }

    /// The reader waited `d` (for a worker, or a connection handed to it).
    pub(super) fn waited(&mut self, d: Duration) {
        self.blocked += d;
    }

    /// A round is about to go: the moves to make now, given the buckets seen with their
    /// worker and packets since the last look (`counts` is asked for only when it is time).
    pub(super) fn look(&mut self, counts: impl FnOnce() -> Vec<(u16, usize, u32)>) -> Vec<Move> {
        let Some(since) = self.since else {
            // The first round: the clocks start (the workers' waits for it do not count).
            self.since = Some(Instant::now());
            for (then, idle) in self.idle_then.iter_mut().zip(self.idle.iter()) {
                *then = idle.load(Ordering::Relaxed);
            }
            return Vec::new();
        };
        self.rounds += 1;
        let every = self.forced.unwrap_or(EVERY);
        if self.rounds < every {
            return Vec::new();
        }
        self.rounds = 0;
        self.looks += 1;
        let counts = counts();
        let moves = match self.forced {
            Some(_) => forced(&counts, self.workers, self.looks),
            None => {
                let t = since.elapsed().as_secs_f64();
                let mut busy = vec![(t - self.blocked.as_secs_f64()).max(0.0)];
                for (k, idle) in self.idle.iter().enumerate() {
                    let now = idle.load(Ordering::Relaxed);
                    let waited = now.saturating_sub(self.idle_then[k]) as f64 / 1e9;
                    self.idle_then[k] = now;
                    busy.push((t - waited).max(0.0));
                }
                self.judge(t, &busy, &counts)
            }
        };
        self.since = Some(Instant::now());
        self.blocked = Duration::ZERO;
        self.moves += moves.len() as u64;
        moves
    }

    /// The moves of a look of `t` seconds in which each worker was busy `busy[w]` seconds:
    /// [`plan`]'s, when one thread was busy most of the look and the look before asked for
    /// the same direction.
    fn judge(&mut self, t: f64, busy: &[f64], counts: &[(u16, usize, u32)]) -> Vec<Move> {
        let top = busy.iter().copied().fold(0.0, f64::max);
        let mut m = if top >= MIN_BUSY * t {
            plan(counts, busy)
        } else {
            Vec::new()
        };
        let asked = m.first().map(|m| (m.from, m.to));
        if asked != self.asked {
            m.clear();
        }
        self.asked = asked;
        m
    }
}

/// Tests: every other bucket (by the order seen, alternating from one look to the next)
/// moves to the next worker.
fn forced(counts: &[(u16, usize, u32)], workers: usize, look: usize) -> Vec<Move> {
    let mut moves: Vec<Move> = Vec::new();
    for (i, &(b, w, _)) in counts.iter().enumerate() {
        if !(i + look).is_multiple_of(2) {
            continue;
        }
        let to = (w + 1) % workers;
        match moves.iter_mut().find(|m| m.from == w && m.to == to) {
            Some(m) => m.buckets.push(b),
            None => moves.push(Move {
                from: w,
                to,
                buckets: vec![b],
            }),
        }
    }
    moves
}

/// The moves that bring the workers' packets closer to the shares their speeds call for.
/// `counts`: (bucket, worker now, packets in the window); `busy[w]`: seconds worker `w` was
/// busy in the window. At most one move (from the worker furthest above its share to the one
/// furthest below), of half the gap, made of the busiest buckets that fit.
pub(super) fn plan(counts: &[(u16, usize, u32)], busy: &[f64]) -> Vec<Move> {
    let n = busy.len();
    let mut packets = vec![0f64; n];
    for &(_, w, c) in counts {
        packets[w] += f64::from(c);
    }
    let total: f64 = packets.iter().sum();
    if total < 1.0 {
        return Vec::new();
    }
    // Seconds per packet; a worker with no packets is taken as fast as the fastest.
    let cost: Vec<Option<f64>> = (0..n)
        .map(|w| (packets[w] >= 1.0 && busy[w] > 0.0).then(|| busy[w] / packets[w]))
        .collect();
    let Some(fastest) = cost.iter().flatten().copied().reduce(f64::min) else {
        return Vec::new();
    };
    let speed: Vec<f64> = cost.iter().map(|c| 1.0 / c.unwrap_or(fastest)).collect();
    let all: f64 = speed.iter().sum();
    let over: Vec<f64> = (0..n)
        .map(|w| packets[w] - total * speed[w] / all)
        .collect();
    let by = |a: &usize, b: &usize| over[*a].total_cmp(&over[*b]);
    let (Some(from), Some(to)) = ((0..n).max_by(by), (0..n).min_by(by)) else {
        return Vec::new();
    };
    let mut want = over[from].min(-over[to]) / 2.0;
    if from == to || want < MIN_SHARE * total {
        return Vec::new();
    }
    let mut theirs: Vec<(u16, u32)> = counts
        .iter()
        .filter(|(_, w, c)| *w == from && *c > 0)
        .map(|&(b, _, c)| (b, c))
        .collect();
    theirs.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut buckets = Vec::new();
    for (b, c) in theirs {
        if f64::from(c) <= want {
            want -= f64::from(c);
            buckets.push(b);
        }
    }
    if buckets.is_empty() {
        return Vec::new();
    }
    vec![Move { from, to, buckets }]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20 buckets of 50 packets each, the first `on0` on worker 0, the rest on worker 1.
    fn counts(on0: usize) -> Vec<(u16, usize, u32)> {
        (0..20u16)
            .map(|b| (b, usize::from(usize::from(b) >= on0), 50))
            .collect()
    }

    #[test]
    fn a_slower_worker_hands_buckets_to_the_faster() {
        // Even split, worker 1 twice as slow per packet: its share should be a third.
        let m = plan(&counts(10), &[0.5, 1.0]);
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].from, m[0].to), (1, 0));
        // The gap is 500 - 333 = 167 packets; half of it: one bucket.
        assert_eq!(m[0].buckets.len(), 1);
        // And the other way round.
        let m = plan(&counts(10), &[1.0, 0.5]);
        assert_eq!((m[0].from, m[0].to), (0, 1));
    }

    #[test]
    fn workers_at_their_shares_keep_their_buckets() {
        assert!(plan(&counts(10), &[1.0, 1.0]).is_empty());
        // Equally busy with 6 and 14 buckets: worker 0 is 3/7 as fast, at its share.
        assert!(plan(&counts(6), &[1.0, 1.0]).is_empty());
        assert!(plan(&[], &[1.0, 1.0]).is_empty());
    }

    #[test]
    fn an_idle_worker_without_packets_takes_some() {
        let m = plan(&counts(20), &[1.0, 0.0]);
        assert_eq!((m[0].from, m[0].to), (0, 1));
        // Half of the gap of 500 packets: 5 buckets.
        assert_eq!(m[0].buckets.len(), 5);
    }

    #[test]
    fn a_move_needs_two_looks_alike_with_a_thread_busy() {
        let mut b = Balancer::new(2, idle_counters(1));
        let slow1 = [0.5, 1.0];
        assert!(b.judge(1.0, &slow1, &counts(10)).is_empty(), "one look");
        assert_eq!(b.judge(1.0, &slow1, &counts(10)).len(), 1, "two alike");
        // The other way: a look to start over.
        assert!(b.judge(1.0, &[1.0, 0.5], &counts(10)).is_empty());
        // Both threads waited most of the look (other processes had the CPUs): no move,
        // and the count starts over.
        assert!(b.judge(2.0, &slow1, &counts(10)).is_empty());
        assert!(b.judge(1.0, &slow1, &counts(10)).is_empty());
        assert_eq!(b.judge(1.0, &slow1, &counts(10)).len(), 1);
    }

    #[test]
    fn forced_moves_alternate_and_go_to_the_next_worker() {
        let c = counts(10);
        let one = forced(&c, 3, 1);
        let two = forced(&c, 3, 2);
        let moved = |m: &[Move]| m.iter().map(|m| m.buckets.len()).sum::<usize>();
        assert_eq!(moved(&one) + moved(&two), 20);
        assert!(one.iter().all(|m| m.to == (m.from + 1) % 3));
    }
}

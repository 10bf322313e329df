//! Keeping the reader and the workers of `analyze -j N` equally busy while they run: the
//! reader's connections move to a worker when the reader is the slower.
//!
//! The reader (worker 0) also reads, routes and merges every frame, so it is given fewer
//! connections than a worker ([`super::route::Owners`]). How many fewer depends on the host
//! (its first touch of the file's bytes waits on memory) and on the capture: the weight that
//! gave the shortest `-j 2` on the bench capture went from 56 eighths (session 27's host) to
//! 24 (session 30's: a sweep of 8/16/24/32/56/80 eighths, 8 alternating rounds, medians 0.34,
//! 0.28, 0.28, 0.30, 0.33, 0.35 s, `-j 1` 0.52 s: the fixed 56 ran `-j 2` at 1.58× where 24
//! ran it at 1.86×). And a connection's worker is set by its first packet: the bench
//! capture's 101 connections all start within a millisecond, so no later choice helps.
//!
//! So the split is measured, not guessed: every thread times its rounds (the reader its
//! routing, its own batch and the merge, less the time it waited to hand a batch on; a worker
//! its batch), and every [`WINDOW`] rounds [`plan`] compares them. When the reader is the
//! slower by more than [`MARGIN`], it hands whole connections (all of a route bucket's, so
//! every later frame of them goes to the new owner, [`super::route::Owners::give`]) to the
//! least busy worker: about the share of its packets that evens the two times out, on the
//! next round's batch, before any frame of that round ([`Analyzer::hand_over`],
//! [`Analyzer::take_over`]). Nothing moves the other way: a worker's state would have to come
//! back while the reader already routes the next rounds. So the reader starts with more than
//! its share ([`super::route::READER_EIGHTHS_WALKING`] and its siblings are start weights), and
//! a worker found the slower only makes new connections go to the reader more.
//!
//! No result depends on where a connection is analyzed (its state is its own, and the merge
//! orders every conclusion by its frame), so a connection may move at any round boundary; the
//! test `shard_region` moves connections every round ([`ShardedAnalyzer::moving_every_round`])
//! and checks the analysis is the single thread's. A bucket holding a half-open connection or
//! the record of an evicted one does not move: their order (which one is evicted next) is the
//! analyzer's, not the connection's.
//!
//! [`ShardedAnalyzer::moving_every_round`]: super::ShardedAnalyzer::moving_every_round

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::super::Analyzer;
use super::super::conn::Conn;
use super::super::flow::ConnKey;
use super::ShardedAnalyzer;
use super::route::{BUCKET_BITS, end_bits, route_hash};

/// A thread's clock: the time it has run so far. The caller's `thread_cpu_time` (netdoctor-sys;
/// this crate has no `unsafe`) counts only the time a thread ran, so other load on the machine
/// does not read as work; without one ([`wall`]) a preempted thread reads busy.
pub type Clock = fn() -> Duration;

/// The default [`Clock`]: the time since the first call, whoever runs.
pub fn wall() -> Duration {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// Rounds per decision (and rounds waited after a move before the next decision: a move shows
/// in the worker's times only rounds later).
pub(super) const WINDOW: u32 = 8;

/// Rounds at the start whose times are not used (page faults, caches warming).
const WARMUP: u32 = 2;

/// How much slower the reader must be than a worker before anything moves (a fraction): the
/// times of one round vary by a few percent on a quiet machine.
const MARGIN: f64 = 0.10;

/// Of the packets that would even the times out, the share moved at once: the estimate
/// assumes a packet costs the reader what it costs the worker, and the next window corrects
/// an undershoot (an overshoot cannot be taken back).
const DAMPING: f64 = 0.5;

/// At most this share of the reader's live connections moves at once (a window's times can be
/// off; the next window moves more if still called for).
const MOST_AT_ONCE: f64 = 0.25;

/// One route bucket's state handed from the reader to a worker.
pub(super) struct Moved {
    pub(super) bucket: usize,
    conns: Vec<(ConnKey, Conn)>,
    /// Its 4-tuples remembered without a connection: `(key, directions, after a reset)`.
    marks: Vec<(ConnKey, u8, bool)>,
}

/// What a window's times call for.
#[derive(Debug, PartialEq)]
pub(super) enum Plan {
    /// Nothing: too early, or the threads are even.
    Hold,
    /// Move connections carrying about this many of the reader's packets a round to worker
    /// `to`; the reader's weight for new connections becomes `weight` eighths.
    Move {
        to: usize,
        packets: f64,
        weight: u32,
    },
    /// A worker is the slower: new connections count the reader's packets `weight` eighths.
    Weigh { weight: u32 },
}

/// A window's figures per round: the reader's busy time and packets, each worker's.
pub(super) struct Window {
    pub(super) reader_ns: f64,
    pub(super) reader_packets: f64,
    /// Per worker (1..): busy ns and packets a round; `None` when it logged no round.
    pub(super) workers: Vec<Option<(f64, f64)>>,
    /// The reader's weight now, eighths.
    pub(super) weight: u32,
}

/// The decision for one window (a pure function of its figures; see the module docs).
pub(super) fn plan(w: &Window) -> Plan {
    // The least busy worker a round.
    let Some((to, (ns, packets))) = w
        .workers
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.map(|t| (i + 1, t)))
        .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
    else {
        return Plan::Hold;
    };
    if ns <= 0.0 || w.reader_ns <= 0.0 {
        return Plan::Hold;
    }
    let ratio = w.reader_ns / ns;
    let weight = |r: f64| (f64::from(w.weight) * r).round().clamp(8.0, 512.0) as u32;
    if ratio > 1.0 + MARGIN {
        if w.reader_packets < 1.0 || packets < 1.0 {
            return Plan::Hold;
        }
        // A worker's cost of a packet; moving m packets a round takes ~m of it off the
        // reader and puts it on the worker: the times meet at half the difference.
        let per_packet = ns / packets;
        let even = (w.reader_ns - ns) / 2.0 / per_packet;
        Plan::Move {
            to,
            packets: (even * DAMPING).min(w.reader_packets),
            weight: weight(ratio),
        }
    } else if ratio < 1.0 - MARGIN && w.weight > 8 {
        Plan::Weigh {
            weight: weight(ratio),
        }
    } else {
        Plan::Hold
    }
}

/// The reader's clock of its rounds, and what it has handed on.
pub(super) struct Balance {
    /// When the reader's last round ended (its [`Clock`]).
    last: Option<Duration>,
    /// This window: the reader's busy time, its own packets, the packets given to each worker.
    reader: Duration,
    reader_packets: u64,
    given: Vec<u64>,
    rounds: u32,
    /// Rounds to let go by before the next window counts (warm-up, after a move).
    skip: u32,
    /// Move connections at every round whatever the times (tests).
    pub(super) always: bool,
    /// Connections moved so far.
    pub(super) moved: u64,
}

impl Balance {
    pub(super) fn new(workers: usize) -> Balance {
        Balance {
            last: None,
            reader: Duration::ZERO,
            reader_packets: 0,
            given: vec![0; workers],
            rounds: 0,
            skip: WARMUP,
            always: false,
            moved: 0,
        }
    }

    /// The reader ends a round at `now`, having waited `waited` of it to hand batches on; its
    /// own batch had `own` packets and worker `w` was given `given[w - 1]`. Whether a window
    /// is complete (then [`Balance::window`]).
    pub(super) fn round(
        &mut self,
        now: Duration,
        waited: Duration,
        own: usize,
        given: impl Iterator<Item = usize>,
    ) -> bool {
        let since = self.last.replace(now);
        if self.skip > 0 {
            self.skip -= 1;
            return self.always;
        }
        if let Some(since) = since {
            self.reader += now.saturating_sub(since).saturating_sub(waited);
        }
        self.reader_packets += own as u64;
        for (g, n) in self.given.iter_mut().zip(given) {
            *g += n as u64;
        }
        self.rounds += 1;
        self.always || self.rounds >= WINDOW
    }

    /// The window's figures per round (worker `w`'s busy time and rounds from `busy`), and
    /// a fresh window; `weight` is the reader's now.
    pub(super) fn window(&mut self, busy: &[(Duration, u32)], weight: u32) -> Window {
        let rounds = f64::from(self.rounds.max(1));
        let w = Window {
            reader_ns: self.reader.as_nanos() as f64 / rounds,
            reader_packets: self.reader_packets as f64 / rounds,
            workers: busy
                .iter()
                .zip(&self.given)
                .map(|(&(t, n), &p)| {
                    (n > 0).then(|| (t.as_nanos() as f64 / f64::from(n), p as f64 / rounds))
                })
                .collect(),
            weight,
        };
        self.reader = Duration::ZERO;
        self.reader_packets = 0;
        self.given.iter_mut().for_each(|g| *g = 0);
        self.rounds = 0;
        w
    }

    /// Connections moved: the next window starts after the move shows.
    pub(super) fn after_move(&mut self, n: usize) {
        self.moved += n as u64;
        self.skip = WINDOW;
    }
}

impl ShardedAnalyzer {
    /// The reader's round is timed; at the end of a window, connections may move to a worker
    /// on its next batch (see the module docs).
    pub(super) fn rebalance(&mut self, waited: Duration, own: usize, given: &[usize]) {
        if !self
            .balance
            .round((self.clock)(), waited, own, given.iter().copied())
        {
            return;
        }
        let weight = self.owners.reader_weight();
        let window = self.balance.window(&self.merge.take_busy(), weight);
        let since = std::mem::replace(&mut self.window_ts, self.stamps.last);
        let plan = if self.balance.always {
            let to = 1 + self.balance.moved as usize % self.to_workers.len();
            Plan::Move {
                to,
                packets: 0.0,
                weight,
            }
        } else {
            plan(&window)
        };
        match plan {
            Plan::Hold => {}
            Plan::Weigh { weight } => self.owners.weigh_reader(weight),
            Plan::Move {
                to,
                packets,
                weight,
            } => {
                let share = packets / window.reader_packets.max(1.0);
                let moved = self.own.hand_over(share, since);
                if moved.is_empty() {
                    return;
                }
                for m in &moved {
                    self.owners.give(m.bucket, to);
                }
                self.balance.after_move(moved.len());
                self.owners.weigh_reader(weight);
                self.batches[to].moved.extend(moved);
            }
        }
    }
}

/// The route bucket of a connection key (as the reader's [`super::route::Owners`] reads it).
fn bucket_of(k: &ConnKey) -> usize {
    (route_hash(end_bits(k.lo), end_bits(k.hi)) >> (64 - BUCKET_BITS)) as usize
}

impl Analyzer {
    /// Takes out the connections of route buckets carrying about `share` of this analyzer's
    /// packets (of the buckets of connections open and heard from at or after `since_ns`,
    /// that share of them; at least one), with what is remembered of their 4-tuples, for
    /// another analyzer's [`Analyzer::take_over`]. Buckets holding a half-open connection or
    /// an evicted one's record stay.
    pub(super) fn hand_over(&mut self, share: f64, since_ns: i64) -> Vec<Moved> {
        let mut stay: Vec<usize> = self.half.tombs.keys().map(bucket_of).collect();
        stay.extend(
            self.conns
                .iter()
                .filter(|(_, c)| c.half_open)
                .map(|(k, _)| bucket_of(k)),
        );
        stay.sort_unstable();
        let mut live: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.first_close.is_none() && c.last.is_some_and(|p| p.ts_ns >= since_ns))
            .map(|(k, _)| bucket_of(k))
            .filter(|b| stay.binary_search(b).is_err())
            .collect();
        live.sort_unstable();
        live.dedup();
        if live.is_empty() {
            return Vec::new();
        }
        // Live connections share the packets alike (an estimate: no per-connection count is
        // kept on the hot path).
        let share = share.min(MOST_AT_ONCE);
        let n = ((share * live.len() as f64).floor() as usize).clamp(1, live.len());
        let chosen = &live[..n];
        let keys: Vec<ConnKey> = self
            .conns
            .keys()
            .filter(|k| chosen.binary_search(&bucket_of(k)).is_ok())
            .copied()
            .collect();
        let mut out: Vec<Moved> = chosen
            .iter()
            .map(|&bucket| Moved {
                bucket,
                conns: Vec::new(),
                marks: Vec::new(),
            })
            .collect();
        let slot = |b: usize| chosen.binary_search(&b).ok();
        for k in keys {
            if let (Some(i), Some(c)) = (slot(bucket_of(&k)), self.conns.remove(&k)) {
                out[i].conns.push((k, c));
            }
        }
        for (map, reset) in [(&mut self.untracked, false), (&mut self.reset_keys, true)] {
            map.retain(|k, v| match slot(bucket_of(k)) {
                Some(i) => {
                    out[i].marks.push((*k, *v, reset));
                    false
                }
                None => true,
            });
        }
        out
    }

    /// Takes on connections another analyzer handed over ([`Analyzer::hand_over`]).
    pub(super) fn take_over(&mut self, moved: Vec<Moved>) {
        for m in moved {
            self.conns.extend(m.conns);
            for (k, v, reset) in m.marks {
                if reset {
                    self.reset_keys.insert(k, v);
                } else {
                    self.untracked.insert(k, v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(reader_ns: f64, worker_ns: f64) -> Window {
        Window {
            reader_ns,
            reader_packets: 1000.0,
            workers: vec![Some((worker_ns, 3000.0))],
            weight: 16,
        }
    }

    #[test]
    fn a_slower_reader_hands_on_about_the_packets_that_even_the_times_out() {
        // The reader 1.5 ms a round, the worker 1.0 ms for 3000 packets (333 ns each): half
        // the difference is 750 packets, half of that at once.
        let Plan::Move {
            to,
            packets,
            weight,
        } = plan(&window(1.5e6, 1.0e6))
        else {
            panic!("no move")
        };
        assert_eq!(to, 1);
        assert!((packets - 375.0).abs() < 1.0, "{packets}");
        assert_eq!(weight, 24, "new connections follow: 16 × 1.5");
        // Never more than the reader has.
        let Plan::Move { packets, .. } = plan(&window(9.0e6, 1.0e6)) else {
            panic!("no move")
        };
        assert_eq!(packets, 1000.0);
    }

    #[test]
    fn even_threads_hold_and_a_slower_worker_only_weighs_new_connections() {
        assert_eq!(plan(&window(1.08e6, 1.0e6)), Plan::Hold);
        assert_eq!(plan(&window(0.92e6, 1.0e6)), Plan::Hold);
        assert_eq!(plan(&window(0.5e6, 1.0e6)), Plan::Weigh { weight: 8 });
        let mut w = window(0.8e6, 1.0e6);
        w.weight = 40;
        assert_eq!(plan(&w), Plan::Weigh { weight: 32 });
        // A worker that logged nothing this window: no figure, no move.
        w.workers = vec![None];
        assert_eq!(plan(&w), Plan::Hold);
    }

    #[test]
    fn the_least_busy_worker_takes_the_connections() {
        let w = Window {
            reader_ns: 2.0e6,
            reader_packets: 1000.0,
            workers: vec![Some((1.5e6, 3000.0)), Some((1.0e6, 3000.0)), None],
            weight: 16,
        };
        assert!(matches!(plan(&w), Plan::Move { to: 2, .. }));
    }

    #[test]
    fn a_window_counts_only_after_the_warm_up_and_after_a_move() {
        let mut b = Balance::new(1);
        let ms = Duration::from_millis;
        let mut ends = 0;
        for r in 1..=20u64 {
            if b.round(ms(r), Duration::ZERO, 100, [300].into_iter()) {
                ends += 1;
                let w = b.window(&[(ms(8), 8)], 16);
                assert!((w.reader_ns - 1e6).abs() < 1.0, "a round a millisecond");
                assert_eq!(w.reader_packets, 100.0);
                assert_eq!(w.workers, vec![Some((1e6, 300.0))]);
                if ends == 1 {
                    assert_eq!(r, u64::from(WARMUP + WINDOW));
                    b.after_move(3);
                }
            }
        }
        assert_eq!(b.moved, 3);
        // Warm-up 2, window 8 (rounds 3..10), a move, 8 skipped, a window at 26: past the
        // 20 rounds.
        assert_eq!(ends, 1);
    }
}

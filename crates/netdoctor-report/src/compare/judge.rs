//! Latency and throughput judged together, so the comparison's sentences cannot contradict
//! their own numbers (issue 21).
//!
//! The histogram test ([`super::stats`]) is about the *median* request. Under a closed loop the
//! median is confounded with the offered load: when part of run A's connections are stalled
//! (Nagle, an RTO), the median request of A is a fast one that found the server idle, while B,
//! with no stall, serves 3× the requests and each waits a little longer. So the median alone
//! said "B is slower" of the fix that cut p99 by 90 %. The judgement here looks at three
//! things — the median (the test), the tail (p99 and the share of stalled requests), and the
//! throughput (requests/s) — and decides:
//!
//! - every one that moved moved the same way → that way;
//! - the median disagrees with the tail, and the throughput moved in a closed loop: the median
//!   moved with the offered load, so the tail and the throughput decide (when they agree);
//! - otherwise → `mixed`, and the sentences name each percentile that moved and which way.
//!
//! Both runs measured at the same constant rate (`--rate`, or the comparison's automatic
//! rate) have the same offered load: the median is no longer confounded, and a conflict with
//! the tail is `mixed`.
//!
//! **When the p99 moved.** A ratio alone fires on noise: at 500 req/s on loopback a p99 of
//! 0.5 ms in one run and 0.9 ms in the next is ×1.8 and means nothing. So the p99 counts only
//! when it moved by [`TAIL_RATIO`] *and* by at least [`tail_min_change_ms`]: the largest of
//! [`TAIL_MIN_MS`] (1 ms: every stall the tail is about — a 40 ms delayed ACK, a 200 ms RTO, a
//! 1 s SYN retransmit — is far above it), the smaller p50 of the two runs (a change smaller
//! than a typical request is the spread of requests, not a new stall; the smaller, because the
//! typical request of a run whose stall hits most requests *is* the stall: Nagle over TLS, p50
//! 44 ms and p99 54 ms before the fix, p99 20 ms after), and [`TAIL_NOISE_K`] × the noise of the
//! p99 between rounds (the standard deviation of the per-second p99 of each run's time line,
//! the larger of the two, over slots with at least [`MIN_TAIL_REQUESTS`] requests).
//!
//! **When the median moved.** The histogram test needs its shift of two buckets (×1.26), but
//! on a loopback server whose p50 is 0.2 ms, 26 % is 0.05–0.07 ms: one scheduler wake-up more
//! or less on a busy 2-core machine, and two runs of the same server differ by that much. So
//! the median counts only when the p50 also moved by at least [`median_min_change_ms`]: the
//! largest of [`MEDIAN_MIN_MS`] (0.1 ms absolute: a request on loopback takes two or three
//! wake-ups of 10–50 µs each, and the same server measured twice in a row moved its p50 by up
//! to 0.08 ms here; no network cause a diagnosis names — a delayed ACK, an RTO, a round trip
//! over a real link — is smaller), [`MEDIAN_MIN_RATIO`] × the smaller p50 (20 %: relative, so a
//! 40 ms server needs 8 ms; between runs of the same server the p50 stayed within 12 %, the
//! histogram's bucket), and [`MEDIAN_NOISE_K`] × the noise of the p50 between rounds (the
//! standard deviation of the per-second p50, the larger of the two runs). A real 2× change
//! passes all three from a p50 of 0.1 ms up; a 0.07 ms wobble never does.

//!
//! **When a run was starved of CPU.** The per-second noise does not cover a run whose load
//! generator was starved for its whole length: every second is slow alike (session 17: two
//! runs of one server, the first beside a busy loop, read "B is better, p99 8.0 → 4.2 ms").
//! Each run carries its own evidence, the time its load threads waited on a run queue
//! (`load.cpu_wait`: runnable, not on a CPU, so not reading the response that arrived). A run
//! is starved when that is at least [`STARVED_SHARE`] of its threads' time and at least
//! [`STARVED_RATIO`] times the other run's. A direction that makes the starved run the
//! slower one (its higher p50 or p99, its lower requests/s) is then not claimed when the
//! run's own waits can make it: a p50 moved by at most that run's request-wait p99 (below), a
//! p99 by at most [`WAIT_TAIL_K`] times it (session 21's CI, at load ~8: the Nagle fix over
//! TLS at 200 req/s, A waiting 6.2 % of its time against B's 2.4 %, read "same" although its
//! p50 went 45.1 → 0.23 ms and its p99 59.5 → 5.5 ms; A's requests had waited 19.2 ms at p99,
//! which cannot move a median by 45 ms). Without the request waits (an older report) it is
//! not claimed whatever its size. Measured here (one nginx, 20 connections at 500 req/s,
//! 3 s): quiet runs waited 2.5–3.5 % of the time with a p99 of 2.4–4.0 ms; beside two busy
//! loops 8–26 % with a p99 of 7.8–30 ms; beside two compilers 55 % with 780 ms. The mean wait
//! per wake-up (0.13–0.5 ms) is no bound for the p99: the tail of the waits is what lands in
//! it. `starved` names the run and the sentence says why. A direction the starvation cannot
//! explain — the other run slower, or both runs starved alike (a busy host all along, a fix
//! or a regression measured on it: 17 % and 23 %) — is still told; so are the findings.
//!
//! **The tail of the waits.** The mean share catches flagrant starvation only: beside busy
//! loops a run's threads waited 3–4 % of their time in 4 of 5 runs of session 18, under
//! [`STARVED_SHARE`], with 4–8× the p99 of a quiet run. The waits that make a p99 are few and
//! long (one 16 ms wait for a CPU delays every request due during it). So each run also
//! records, per request, how long its load thread waited for a CPU between the request's
//! (intended) send time and its answer's last byte (`load.cpu_wait.request_wait_p99_ms`, the
//! 99th percentile: netdoctor-load's `worker::sched`). That is the client's half of the
//! host's delay: the server on the same host waits on the same run queues and its waits are
//! not seen, so the host's share of a request's latency is taken as twice the client's
//! ([`WAIT_TAIL_K`]). The run with the higher p99 is starved when its request-wait p99 exceeds
//! the other run's by at least [`WAIT_TAIL_MIN_MS`] and by at least 1 / [`WAIT_TAIL_K`] of the
//! p99 difference: the extra waits alone can make the difference. That withholds the tail's
//! direction only: the median and the throughput are not what a few long waits move (the
//! route lab's real 2× change, p50 3.2 → 6.2 ms on a busy host, both runs waiting 13–17 %,
//! had its p99 4.7 → 8.7 ms within reach of B's waits; its median stands). Measured here (nginx over
//! TLS, 20 connections at 500 req/s, 3 s), `WAIT_TAIL_K` × the wait difference over the p99
//! difference: the same server with run A beside two busy loops 2.1–2.7 (A's request-wait p99
//! 15.8–16.2 ms, B's 0.4–2.1 ms; p99 12–16 ms vs 1.6–1.9 ms), the real Nagle fix (closed loop
//! and 200 req/s) 0.10–0.27 (A 5.8–10.1 ms, B 1.9–3.9 ms; p99 48–52 ms vs 3–4 ms). The mean
//! share did not separate them (starved A 6–10 %, the fix's closed-loop B 80 %, its A 5 %),
//! nor did the per-wake-up wait p99 (starved A 3.7–7.9 ms, the fix's A 0.8–4.2 ms), nor the
//! p99 net of the client's own waits (starved A 2.2–3.9 ms vs B 0.2–0.9 ms: the server's
//! waits stay in it).
//!
//! **A busy host moves the median either way.** A run beside busy work is not only slower:
//! its p50 on loopback can be *lower*. Session 19: the same TLS nginx at 500 req/s, run A
//! beside two busy loops, had a p50 of 0.09 ms against the quiet B's 0.20 ms, and the median
//! said "B is worse". Measured here (session 20, a 2-vCPU guest with the other helpers'
//! compilers at nice 10 running all along, UDP ping-pong at 500/s between two processes,
//! alternating rounds, load 7–10): quiet p50 40–45 µs, beside two nice-0 loops 12–21 µs (also
//! beside `dd` of 4 KiB or 64 MiB blocks, 9–25 µs), beside two nice-19 loops 40–41 µs. The
//! CPUs were never idle in any round (`/proc/stat` idle 0 %, haltpoll entries 0–4/s), and the
//! woken process's scheduling delay stayed 2–3 µs at the median (`perf sched timehist`): what
//! changed is the CPU time each wake-up took (20 → 9 µs median per switch-in) when a nice-0
//! hog instead of a compiler held the CPU between requests. The live test's TLS runs agree: net
//! of its own waits (`net_p50_ms`), the run beside busy loops took 0.07–0.18 ms (median 0.09) a
//! request against the quiet run's 0.14–0.20 ms (median 0.18), 24 pairs at a load average of
//! 8–13. So a run on a busy host is not a measure of a short request's CPU time in either
//! direction: its median's direction is withheld, either way, when the p50 moved by at most
//! [`BUSY_MEDIAN_MS`] (a request's CPU work on loopback: 0.1–0.2 ms for TLS; every network
//! cause a diagnosis names, and the real changes the live tests make — 3 → 6 ms, 44 → 3 ms,
//! 0.3–5 → 45 ms — are far above it). A run is on a busy host when it is starved by its share,
//! or its request-wait p99 exceeds the other run's by [`BUSY_WAIT_MIN_MS`] and is
//! [`BUSY_WAIT_RATIO`] times it (a run beside busy
//! loops was 14–16 ms above in session 18, 5–27 ms above in 22 of 24 pairs at a load average
//! of 8–13 here, the host busier still during B in the other 2; session 21's CI had the same
//! server twice at 500/s with B's waits 2.07 ms against A's 0.20 ms at p99 and its p50 0.20
//! against 0.10 ms, read "worse" under the 2 ms this was then). Quiet runs of one server
//! differed by up to 1.7 ms in session 18: such a pair may now be called busy, which withholds
//! only a median that moved by at most [`BUSY_MEDIAN_MS`], the claim a host's load can make
//! alone; `busy` names the run and the sentence says why. Not covered: a
//! run made faster by work that does not make its own threads wait (the same loops at nice 19
//! left the ping-pong's 40 µs alone, but nothing bounds that).

use super::stats::LatencyDirection;
use crate::model::Report;
use serde::{Deserialize, Serialize};

/// A p99 at least this many times lower (higher) is a better (worse) tail.
pub const TAIL_RATIO: f64 = 1.5;
/// Requests/s at least this many times higher (lower) is more (less) throughput.
pub const RPS_RATIO: f64 = 1.25;
/// A share of stalled requests that fell (rose) by at least this much (and by half) counts.
pub const STALLED_POINTS: f64 = 0.05;
/// Requests each run needs for its p99 to count.
pub const MIN_TAIL_REQUESTS: u64 = 100;
/// The p99 must move by at least this many milliseconds to count.
pub const TAIL_MIN_MS: f64 = 1.0;
/// … and by this many times the p99's noise between rounds (per-second slots).
pub const TAIL_NOISE_K: f64 = 2.0;
/// Per-second slots each run needs for its p99 noise to be measured.
const MIN_NOISE_SLOTS: usize = 3;
/// The p50 must move by at least this many milliseconds for the median to count.
pub const MEDIAN_MIN_MS: f64 = 0.1;
/// … by at least this share of the smaller p50 of the two runs …
pub const MEDIAN_MIN_RATIO: f64 = 0.2;
/// … and by this many times the p50's noise between rounds (per-second slots).
pub const MEDIAN_NOISE_K: f64 = 2.0;

/// A load generator waiting for a CPU this share of its threads' time is starved …
pub const STARVED_SHARE: f64 = 0.05;
/// … when that is at least this many times the other run's share.
pub const STARVED_RATIO: f64 = 2.0;
/// The host's delay of a request, in multiples of the client's own wait (module docs).
pub const WAIT_TAIL_K: f64 = 2.0;
/// The slower run's request-wait p99 must exceed the other's by at least this much.
pub const WAIT_TAIL_MIN_MS: f64 = 1.0;
/// A run on a busy host (module docs): its request-wait p99 exceeds the other's by this much.
pub const BUSY_WAIT_MIN_MS: f64 = 1.0;
/// … and is at least this many times the other's (two runs on a host busy all along wait
/// alike: 16 and 15 ms).
pub const BUSY_WAIT_RATIO: f64 = 2.0;
/// … and its p50 is not compared within this many milliseconds of the other's, either way.
pub const BUSY_MEDIAN_MS: f64 = 0.5;

/// Which way something moved from A to B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Better,
    Worse,
    Same,
    /// Parts moved in opposite ways (overall only).
    Mixed,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Better => "better",
            Direction::Worse => "worse",
            Direction::Same => "same",
            Direction::Mixed => "mixed",
        }
    }
}

/// The judgement of latency and throughput together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Performance {
    pub direction: Direction,
    /// The median, from the histogram test (`same` without one).
    pub median: Direction,
    /// The tail: p99 and the share of stalled requests.
    pub tail: Direction,
    /// Requests per second.
    pub throughput: Direction,
    /// Both runs had the same offered load (the same constant rate).
    pub same_rate: bool,
    /// The median's direction was set aside: it moved with the offered load.
    pub median_confounded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<(f64, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<(f64, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_s: Option<(f64, f64)>,
    /// The share of requests a stall cause held, from each run's capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalled: Option<(f64, f64)>,
    /// How far the p99 had to move to count ([`tail_min_change_ms`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_min_change_ms: Option<f64>,
    /// How far the p50 had to move for the median to count ([`median_min_change_ms`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_min_change_ms: Option<f64>,
    /// Each run's load threads' share of time waiting for a CPU (`load.cpu_wait`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait_share: Option<(f64, f64)>,
    /// Each run's 99th percentile of a request's load-thread wait for a CPU
    /// (`load.cpu_wait.request_wait_p99_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_wait_p99_ms: Option<(f64, f64)>,
    /// `a` or `b`: that run's load generator was starved of CPU and a direction that made it
    /// the slower one was withheld (module docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starved: Option<String>,
    /// `a` or `b`: that run was measured on a busy host (its requests waited for a CPU far
    /// longer than the other run's) and the median's direction, a p50 change within
    /// [`BUSY_MEDIAN_MS`] either way, was withheld (module docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy: Option<String>,
}

/// A load's wait share, when it recorded one.
pub fn cpu_wait_share(l: &netdoctor_load::LoadResult) -> Option<f64> {
    l.cpu_wait.map(|w| w.share(l.threads, l.duration_s))
}

/// Which run was starved (module docs): `Some(true)` for A, `Some(false)` for B.
pub(super) fn starved_run(share: Option<(f64, f64)>) -> Option<bool> {
    let (a, b) = share?;
    if a >= STARVED_SHARE && a >= STARVED_RATIO * b {
        Some(true)
    } else if b >= STARVED_SHARE && b >= STARVED_RATIO * a {
        Some(false)
    } else {
        None
    }
}

/// Which run the tail of its waits explains as the slower (module docs): the one with the
/// higher p99, when its request-wait p99 exceeds the other's by [`WAIT_TAIL_MIN_MS`] and by
/// the p99 difference over [`WAIT_TAIL_K`]. `Some(true)` for A.
fn tail_starved_run(wait_p99: Option<(f64, f64)>, p99: Option<(f64, f64)>) -> Option<bool> {
    let ((wa, wb), (pa, pb)) = (wait_p99?, p99?);
    let explains = |w_slow: f64, w_fast: f64, p_slow: f64, p_fast: f64| {
        let dw = w_slow - w_fast;
        p_slow > p_fast && dw >= WAIT_TAIL_MIN_MS && WAIT_TAIL_K * dw >= p_slow - p_fast
    };
    if explains(wa, wb, pa, pb) {
        Some(true)
    } else if explains(wb, wa, pb, pa) {
        Some(false)
    } else {
        None
    }
}

/// Which run was measured on a busy host (module docs): the one whose load generator was
/// starved by its wait share, else the one whose request-wait p99 exceeds the other's by
/// [`BUSY_WAIT_MIN_MS`] and [`BUSY_WAIT_RATIO`] times. `Some(true)` for A.
pub(super) fn busy_run(share: Option<(f64, f64)>, wait_p99: Option<(f64, f64)>) -> Option<bool> {
    starved_run(share).or_else(|| {
        let (a, b) = wait_p99?;
        if a - b >= BUSY_WAIT_MIN_MS && a >= BUSY_WAIT_RATIO * b {
            Some(true)
        } else if b - a >= BUSY_WAIT_MIN_MS && b >= BUSY_WAIT_RATIO * a {
            Some(false)
        } else {
            None
        }
    })
}

/// The run on a busy host whose median's direction is withheld (module docs): the median
/// moved, by at most [`BUSY_MEDIAN_MS`] of p50, whichever way.
pub(super) fn busy_median(
    busy: Option<bool>,
    median: Direction,
    p50: Option<(f64, f64)>,
) -> Option<bool> {
    busy.filter(|_| median != Direction::Same)
        .filter(|_| p50.is_some_and(|(x, y)| (x - y).abs() <= BUSY_MEDIAN_MS))
}

/// The standard deviation of the per-second p99 over the slots of a run's time line with at
/// least [`MIN_TAIL_REQUESTS`] requests; `None` with fewer than three such slots.
pub fn p99_noise_ms(l: &netdoctor_load::LoadResult) -> Option<f64> {
    slots_p99_noise(l.timeline.as_deref()?)
}

fn slots_p99_noise(slots: &[netdoctor_load::TimelinePoint]) -> Option<f64> {
    slots_noise(slots, |s| s.p99_ms)
}

/// The standard deviation of the per-second p50, over the same slots as [`p99_noise_ms`].
pub fn p50_noise_ms(l: &netdoctor_load::LoadResult) -> Option<f64> {
    slots_noise(l.timeline.as_deref()?, |s| s.p50_ms)
}

fn slots_noise(
    slots: &[netdoctor_load::TimelinePoint],
    pick: fn(&netdoctor_load::TimelinePoint) -> Option<f64>,
) -> Option<f64> {
    let v: Vec<f64> = slots
        .iter()
        .filter(|s| s.requests >= MIN_TAIL_REQUESTS)
        .filter_map(pick)
        .collect();
    if v.len() < MIN_NOISE_SLOTS {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    Some((v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
}

/// How far the p99 must move to count (module docs): the largest of [`TAIL_MIN_MS`], the
/// smaller p50 of the two runs, and [`TAIL_NOISE_K`] × the larger noise between rounds.
pub fn tail_min_change_ms(p50: (f64, f64), noise: (Option<f64>, Option<f64>)) -> f64 {
    let noise = noise.0.into_iter().chain(noise.1).fold(0.0, f64::max);
    TAIL_MIN_MS.max(p50.0.min(p50.1)).max(TAIL_NOISE_K * noise)
}

/// How far the p50 must move for the median to count (module docs): the largest of
/// [`MEDIAN_MIN_MS`], [`MEDIAN_MIN_RATIO`] × the smaller p50 and [`MEDIAN_NOISE_K`] × the
/// larger noise between rounds.
pub fn median_min_change_ms(p50: (f64, f64), noise: (Option<f64>, Option<f64>)) -> f64 {
    let noise = noise.0.into_iter().chain(noise.1).fold(0.0, f64::max);
    MEDIAN_MIN_MS
        .max(MEDIAN_MIN_RATIO * p50.0.min(p50.1))
        .max(MEDIAN_NOISE_K * noise)
}

fn ratio_dir(a: f64, b: f64, k: f64, min_abs: f64, lower_is_better: bool) -> Direction {
    if a <= 0.0 || b <= 0.0 || (a - b).abs() < min_abs {
        return Direction::Same;
    }
    let (lo, hi) = if lower_is_better { (b, a) } else { (a, b) };
    if hi >= lo * k {
        Direction::Better
    } else if lo >= hi * k {
        Direction::Worse
    } else {
        Direction::Same
    }
}

/// Agreeing directions (ignoring `same`); `mixed` when two disagree.
fn agree(ds: &[Direction]) -> Direction {
    let moved: Vec<Direction> = ds
        .iter()
        .copied()
        .filter(|d| *d != Direction::Same)
        .collect();
    match moved.first() {
        None => Direction::Same,
        Some(&d) if moved.iter().all(|m| *m == d) => d,
        _ => Direction::Mixed,
    }
}

fn stalled(r: &Report) -> Option<f64> {
    let c = r.measurements.capture.as_ref()?;
    (c.exchanges.count > 0)
        .then_some(c.exchanges.breakdown_mean_ms?)
        .map(|b| b.stalled)
}

/// Judges B against A; `median` is the histogram test's direction.
pub fn judge(a: &Report, b: &Report, median: Option<LatencyDirection>) -> Performance {
    let (la, lb) = (a.measurements.load.as_ref(), b.measurements.load.as_ref());
    let pair = |f: fn(&netdoctor_load::LoadResult) -> f64| la.zip(lb).map(|(x, y)| (f(x), f(y)));
    let p50 = pair(|l| l.latency_ms.p50);
    let p50_min_change = la.zip(lb).map(|(x, y)| {
        median_min_change_ms(
            (x.latency_ms.p50, y.latency_ms.p50),
            (p50_noise_ms(x), p50_noise_ms(y)),
        )
    });
    // The test's direction counts only when the p50 itself moved past its floor; without a
    // load on both sides (no p50 to weigh) the test decides alone.
    let median_moved = match (p50, p50_min_change) {
        (Some((x, y)), Some(m)) => (x - y).abs() >= m,
        _ => true,
    };
    let median = match median {
        Some(LatencyDirection::Faster) if median_moved => Direction::Better,
        Some(LatencyDirection::Slower) if median_moved => Direction::Worse,
        _ => Direction::Same,
    };
    let p99 = pair(|l| l.latency_ms.p99);
    let rps = pair(|l| l.requests_per_s);
    let enough = la
        .zip(lb)
        .is_some_and(|(x, y)| x.requests >= MIN_TAIL_REQUESTS && y.requests >= MIN_TAIL_REQUESTS);
    let min_change = la.zip(lb).map(|(x, y)| {
        tail_min_change_ms(
            (x.latency_ms.p50, y.latency_ms.p50),
            (p99_noise_ms(x), p99_noise_ms(y)),
        )
    });
    let p99_dir = match (p99, min_change) {
        (Some((x, y)), Some(m)) if enough => ratio_dir(x, y, TAIL_RATIO, m, true),
        _ => Direction::Same,
    };
    let st = stalled(a).zip(stalled(b));
    let st_dir = match st {
        Some((x, y)) if x - y >= STALLED_POINTS && y <= x / 2.0 => Direction::Better,
        Some((x, y)) if y - x >= STALLED_POINTS && x <= y / 2.0 => Direction::Worse,
        _ => Direction::Same,
    };
    let tail = match agree(&[p99_dir, st_dir]) {
        Direction::Mixed => Direction::Same,
        d => d,
    };
    let throughput = rps.map_or(Direction::Same, |(x, y)| {
        ratio_dir(x, y, RPS_RATIO, 0.0, false)
    });
    // A starved A explains "better"; a starved B explains "worse".
    let cpu_share = la
        .zip(lb)
        .and_then(|(x, y)| cpu_wait_share(x).zip(cpu_wait_share(y)));
    let wait_p99 = la.zip(lb).and_then(|(x, y)| {
        let w = |l: &netdoctor_load::LoadResult| l.cpu_wait.and_then(|w| w.request_wait_p99_ms);
        w(x).zip(w(y))
    });
    let as_dir = |a: bool| {
        if a {
            Direction::Better
        } else {
            Direction::Worse
        }
    };
    let explained = starved_run(cpu_share).map(as_dir);
    // What the starved run's own waits can explain (module docs): its median by at most its
    // request-wait p99, its p99 by at most WAIT_TAIL_K times that.
    let within = |d: &Direction, pair: Option<(f64, f64)>, k: f64| {
        let a_starved = *d == Direction::Better;
        match (pair, wait_p99) {
            (Some((x, y)), Some((wa, wb))) => (x - y).abs() <= k * if a_starved { wa } else { wb },
            _ => true,
        }
    };
    let median_explained = explained.filter(|d| within(d, p50, 1.0));
    // The tail of the waits is evidence about the p99 only (module docs).
    let tail_explained = explained
        .filter(|d| within(d, p99, WAIT_TAIL_K))
        .or_else(|| tail_starved_run(wait_p99, p99).map(as_dir));
    let mut withheld = None;
    let mut withhold = |d: Direction, by: Option<Direction>| {
        if Some(d) == by {
            withheld = by;
            Direction::Same
        } else {
            d
        }
    };
    let median = withhold(median, median_explained);
    let tail = withhold(tail, tail_explained);
    let throughput = withhold(throughput, explained);
    let starved = withheld.map(|d| if d == Direction::Better { "a" } else { "b" }.to_string());
    // A busy host moves a small p50 either way (module docs): not claimed.
    let busy = busy_median(busy_run(cpu_share, wait_p99), median, p50);
    let median = if busy.is_some() {
        Direction::Same
    } else {
        median
    };
    let busy = busy.map(|a| if a { "a" } else { "b" }.to_string());
    let same_rate = la
        .zip(lb)
        .and_then(|(x, y)| x.rate.zip(y.rate))
        .is_some_and(|(x, y)| (x - y).abs() <= 1e-9 * x.max(1.0));
    let rest = agree(&[tail, throughput]);
    let (direction, median_confounded) = match agree(&[median, tail, throughput]) {
        Direction::Mixed
            if !same_rate
                && throughput != Direction::Same
                && rest != Direction::Mixed
                && median != rest =>
        {
            (rest, true)
        }
        d => (d, false),
    };
    Performance {
        direction,
        median,
        tail,
        throughput,
        same_rate,
        median_confounded,
        p50_ms: p50,
        p99_ms: p99,
        requests_per_s: rps,
        stalled: st,
        p99_min_change_ms: min_change,
        p50_min_change_ms: p50_min_change,
        cpu_wait_share: cpu_share,
        request_wait_p99_ms: wait_p99,
        starved,
        busy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    #[test]
    fn directions_agree_or_mix() {
        assert_eq!(agree(&[Same, Same]), Same);
        assert_eq!(agree(&[Better, Same, Better]), Better);
        assert_eq!(agree(&[Worse, Better]), Mixed);
        assert_eq!(ratio_dir(48.0, 4.8, TAIL_RATIO, 0.1, true), Better);
        assert_eq!(ratio_dir(4.8, 48.0, TAIL_RATIO, 0.1, true), Worse);
        assert_eq!(ratio_dir(4.8, 5.5, TAIL_RATIO, 0.1, true), Same);
        assert_eq!(
            ratio_dir(0.02, 0.08, TAIL_RATIO, 0.1, true),
            Same,
            "too small to count"
        );
        assert_eq!(ratio_dir(2300.0, 7000.0, RPS_RATIO, 0.0, false), Better);
    }

    /// The p99 rule with its minimum change: a real stall counts, noise does not.
    #[test]
    fn the_p99_must_move_more_than_a_millisecond_the_p50_and_the_noise() {
        let p99 = |a: f64, b: f64, p50: (f64, f64), noise: (Option<f64>, Option<f64>)| {
            ratio_dir(a, b, TAIL_RATIO, tail_min_change_ms(p50, noise), true)
        };
        // Issue 21's TLS case: p99 48 → 4.8 ms with the median up 1.2 → 4.1 ms.
        assert_eq!(p99(48.0, 4.8, (1.24, 4.06), (Some(0.8), Some(0.5))), Better);
        assert_eq!(p99(4.8, 48.0, (4.06, 1.24), (Some(0.5), Some(0.8))), Worse);
        // 500 req/s on loopback: ×1.8, but 0.4 ms is noise.
        assert_eq!(p99(0.5, 0.9, (0.19, 0.21), (None, None)), Same);
        assert_eq!(tail_min_change_ms((0.19, 0.21), (None, None)), TAIL_MIN_MS);
        // ×2 and 3 ms, but less than a typical request (p50 4 ms).
        assert_eq!(p99(3.0, 6.0, (4.0, 4.0), (None, None)), Same);
        // The stall is A's typical request (Nagle over TLS, closed loop, measured): the
        // smaller p50 counts, not the stalled one.
        assert_eq!(p99(54.1, 20.3, (44.0, 3.0), (Some(6.4), Some(8.6))), Better);
        assert_eq!(
            tail_min_change_ms((44.0, 3.0), (Some(6.4), Some(8.6))),
            17.2
        );
        // ×2 and 10 ms, above the p50: noise decides.
        assert_eq!(p99(10.0, 20.0, (1.0, 1.0), (Some(6.0), Some(1.0))), Same);
        assert_eq!(p99(10.0, 20.0, (1.0, 1.0), (Some(2.0), Some(1.0))), Worse);
        assert_eq!(
            tail_min_change_ms((1.0, 1.0), (Some(2.0), Some(6.0))),
            12.0,
            "the larger noise of the two runs"
        );
    }

    /// The starved run: waiting 5 % of the time and twice the other run's share (the figures
    /// of the module docs, measured here).
    /// The tail of the waits, on the figures measured here (module docs): (request-wait p99 A,
    /// B), (p99 A, B). Session 18's wrong story in a run of main's binary: A waited 3.3 % of its
    /// time (B 0.5 %), under the share rule, with p99 12.6 → 0.9 ms, and read "B is better".
    #[test]
    fn the_tail_of_the_waits_explains_a_starved_run_and_not_a_real_fix() {
        assert_eq!(starved_run(Some((0.033, 0.005))), None);
        // The same server, A beside busy loops.
        assert_eq!(
            tail_starved_run(Some((16.2, 0.41)), Some((16.5, 1.6))),
            Some(true)
        );
        assert_eq!(
            tail_starved_run(Some((16.2, 2.06)), Some((12.5, 1.84))),
            Some(true)
        );
        assert_eq!(
            tail_starved_run(Some((21.7, 3.3)), Some((22.0, 3.35))),
            Some(true)
        );
        assert_eq!(
            tail_starved_run(Some((15.4, 1.36)), Some((18.8, 1.55))),
            Some(true)
        );
        // … and B beside them: the same, the other way.
        assert_eq!(
            tail_starved_run(Some((1.36, 15.4)), Some((1.55, 18.8))),
            Some(false)
        );
        // The real Nagle fix: A's stall is not its waits (closed loop, then 200 req/s).
        assert_eq!(
            tail_starved_run(Some((10.1, 3.84)), Some((52.0, 4.0))),
            None
        );
        assert_eq!(
            tail_starved_run(Some((6.05, 3.66)), Some((50.1, 3.99))),
            None
        );
        assert_eq!(
            tail_starved_run(Some((5.78, 1.93)), Some((48.0, 3.0))),
            None
        );
        // Waits within 1 ms of each other explain nothing; the faster run's waits neither.
        assert_eq!(tail_starved_run(Some((4.1, 3.2)), Some((6.0, 4.0))), None);
        assert_eq!(tail_starved_run(Some((16.0, 1.0)), Some((1.0, 16.0))), None);
        assert_eq!(tail_starved_run(None, Some((16.5, 1.6))), None);
    }

    #[test]
    fn a_run_is_starved_only_when_it_waited_twice_the_other() {
        // Beside two busy loops, then quiet.
        assert_eq!(starved_run(Some((0.261, 0.025))), Some(true));
        assert_eq!(starved_run(Some((0.081, 0.035))), Some(true));
        assert_eq!(starved_run(Some((0.035, 0.081))), Some(false));
        // A busy host all along: both starved alike, directions stand.
        assert_eq!(starved_run(Some((0.23, 0.17))), None);
        assert_eq!(starved_run(Some((0.55, 0.50))), None);
        // Quiet: a few per cent is no starvation, even at twice.
        assert_eq!(starved_run(Some((0.035, 0.0))), None);
        assert_eq!(starved_run(None), None);
    }

    /// The median's floor: a 0.07 ms wobble on loopback is not a change, a 2× change is,
    /// at any scale.
    #[test]
    fn the_p50_must_move_a_tenth_of_a_millisecond_a_fifth_and_past_its_noise() {
        let moved = |a: f64, b: f64, noise: (Option<f64>, Option<f64>)| {
            (a - b).abs() >= median_min_change_ms((a, b), noise)
        };
        // The case: 0.21 → 0.28 ms (+33 %, two buckets) on loopback.
        assert!(!moved(0.21, 0.28, (Some(0.01), Some(0.02))));
        assert_eq!(
            median_min_change_ms((0.21, 0.28), (None, None)),
            MEDIAN_MIN_MS
        );
        // 2× on loopback, and 2× at 40 ms.
        assert!(moved(0.15, 0.30, (Some(0.02), Some(0.03))));
        assert!(moved(40.0, 80.0, (Some(1.0), Some(2.0))));
        // 15 % at 40 ms: the spread between runs of one server, not a change.
        assert!(!moved(40.0, 46.0, (None, None)));
        // ×1.5 whose per-second p50 swings by 3 ms: noise.
        assert!(!moved(4.0, 6.0, (Some(3.0), Some(0.5))));
        assert!(moved(4.0, 6.0, (Some(0.5), Some(0.5))));
    }

    #[test]
    fn p99_noise_is_the_spread_of_the_per_second_p99() {
        use netdoctor_load::TimelinePoint;
        let slot = |requests: u64, p99: f64| TimelinePoint {
            t_s: 0.0,
            len_s: 1.0,
            requests,
            errors: 0,
            requests_per_s: requests as f64,
            p50_ms: Some(0.2),
            p99_ms: Some(p99),
        };
        assert_eq!(slots_p99_noise(&[]), None, "no time line");
        let two = [slot(500, 1.0), slot(500, 3.0), slot(20, 90.0)];
        assert_eq!(
            slots_p99_noise(&two),
            None,
            "two slots with enough requests"
        );
        let three = [
            slot(500, 1.0),
            slot(500, 3.0),
            slot(500, 2.0),
            slot(20, 90.0),
        ];
        let n = slots_p99_noise(&three).unwrap();
        assert!((n - 1.0).abs() < 1e-9, "{n}");
    }
}

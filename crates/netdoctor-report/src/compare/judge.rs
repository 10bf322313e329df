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
    let median = match median {
        Some(LatencyDirection::Faster) => Direction::Better,
        Some(LatencyDirection::Slower) => Direction::Worse,
        _ => Direction::Same,
    };
    let pair = |f: fn(&netdoctor_load::LoadResult) -> f64| la.zip(lb).map(|(x, y)| (f(x), f(y)));
    let p50 = pair(|l| l.latency_ms.p50);
    let p99 = pair(|l| l.latency_ms.p99);
    let rps = pair(|l| l.requests_per_s);
    let enough = la
        .zip(lb)
        .is_some_and(|(x, y)| x.requests >= MIN_TAIL_REQUESTS && y.requests >= MIN_TAIL_REQUESTS);
    let p99_dir = match p99 {
        Some((x, y)) if enough => ratio_dir(x, y, TAIL_RATIO, 0.1, true),
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
}

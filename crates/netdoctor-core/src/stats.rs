//! Latency aggregation: HDR histograms in microseconds, so memory does not grow with the
//! number of samples (DESIGN.md: never a Vec of every sample).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Percentiles of a latency distribution, in milliseconds. All zero when there were no
/// samples. The one latency summary of the workspace (the load engine's too).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    #[serde(default)]
    pub mean: f64,
    pub p50: f64,
    #[serde(default)]
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    #[serde(default)]
    pub p999: f64,
    pub max: f64,
    #[serde(default)]
    pub stdev: f64,
}

/// Microsecond histogram from 1 µs to 10 minutes, 3 significant digits, with a running sum
/// and sum of squares (mean and standard deviation without walking the histogram).
#[derive(Clone)]
pub(crate) struct Hist {
    h: Histogram<u64>,
    sum: f64,
    sum_sq: f64,
}

impl std::fmt::Debug for Hist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hist({} values)", self.h.len())
    }
}

impl PartialEq for Hist {
    fn eq(&self, other: &Hist) -> bool {
        self.h == other.h
    }
}

const MAX_US: u64 = 600_000_000;

/// Upper bounds (milliseconds) of the fixed latency buckets that exporters publish (the
/// agent's Prometheus histogram): 1 ms … 10 s, with the 40 ms delayed-ACK timer and the
/// 200 ms minimum RTO between bounds.
pub const LATENCY_BOUNDS_MS: [f64; 14] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 35.0, 50.0, 100.0, 200.0, 300.0, 500.0, 1000.0, 2500.0, 10000.0,
];

impl Hist {
    pub(crate) fn new() -> Self {
        // Constant bounds that hdrhistogram accepts (1 ≤ low, high ≥ 2·low, sigfig ≤ 5):
        // this cannot fail at run time, whatever the input.
        Hist {
            h: Histogram::new_with_bounds(1, MAX_US, 3).expect("constant histogram bounds"),
            sum: 0.0,
            sum_sq: 0.0,
        }
    }

    /// Records a duration in nanoseconds (clamped to the histogram's range).
    pub(crate) fn record_ns(&mut self, ns: i64) {
        let us = (ns.max(0) as u64 / 1000).clamp(1, MAX_US);
        // saturating_record never fails for in-range values.
        self.h.saturating_record(us);
        let v = us as f64;
        self.sum += v;
        self.sum_sq += v * v;
    }

    /// Adds every value of `other` (both have the same bounds).
    pub(crate) fn add(&mut self, other: &Hist) {
        // Same bounds: adding cannot fail.
        let _ = self.h.add(&other.h);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    pub(crate) fn len(&self) -> u64 {
        self.h.len()
    }

    /// The sum of the recorded values in milliseconds (each clamped to ≥ 1 µs).
    pub(crate) fn total_ms(&self) -> f64 {
        self.sum / 1000.0
    }

    /// How many recorded values are at least `ms` milliseconds.
    pub(crate) fn count_at_least_ms(&self, ms: f64) -> u64 {
        let us = ((ms * 1000.0).max(1.0) as u64).min(MAX_US);
        self.h.count_between(us, MAX_US)
    }

    /// How many recorded values are at most each bound of [`LATENCY_BOUNDS_MS`] (cumulative,
    /// at the histogram's precision of 3 significant digits).
    pub(crate) fn cumulative_at_bounds(&self) -> Vec<u64> {
        LATENCY_BOUNDS_MS
            .iter()
            .map(|ms| {
                let us = ((ms * 1000.0) as u64).clamp(1, MAX_US);
                self.h.count_between(1, us)
            })
            .collect()
    }

    /// Every distinct recorded value (microseconds, the middle of its 3-significant-digit
    /// bucket) with its count, ascending: the whole distribution, for exporters that bucket it
    /// their own way (the agent's native histogram). At most a few thousand entries.
    pub(crate) fn recorded_us(&self) -> Vec<(u64, u64)> {
        self.h
            .iter_recorded()
            .map(|v| {
                (
                    self.h.median_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            })
            .collect()
    }

    /// The largest recorded value in milliseconds; 0 when empty.
    pub(crate) fn max_ms(&self) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        self.h.max() as f64 / 1000.0
    }

    /// Quantile (0..=1) in milliseconds; 0 when empty.
    pub(crate) fn quantile_ms(&self, q: f64) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        self.h.value_at_quantile(q) as f64 / 1000.0
    }

    pub(crate) fn percentiles(&self) -> Percentiles {
        if self.h.is_empty() {
            return Percentiles::default();
        }
        let n = self.h.len() as f64;
        let mean = self.sum / n;
        let var = (self.sum_sq / n - mean * mean).max(0.0);
        Percentiles {
            mean: mean / 1000.0,
            p50: self.quantile_ms(0.5),
            p75: self.quantile_ms(0.75),
            p90: self.quantile_ms(0.9),
            p99: self.quantile_ms(0.99),
            p999: self.quantile_ms(0.999),
            max: self.h.max() as f64 / 1000.0,
            stdev: var.sqrt() / 1000.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_samples() {
        let mut h = Hist::new();
        assert_eq!(h.percentiles(), Percentiles::default());
        for ms in [1i64, 2, 3, 4] {
            h.record_ns(ms * 1_000_000);
        }
        let p = h.percentiles();
        assert!((p.mean - 2.5).abs() < 1e-9, "{p:?}");
        assert!((p.stdev - 1.25f64.sqrt()).abs() < 1e-9, "{p:?}");
        // hdrhistogram reports the highest value equivalent to a sample (3 significant
        // digits): 3 ms reads 3.001 ms.
        let near = |a: f64, b: f64| (a - b).abs() <= 0.002;
        assert!(
            near(p.p50, 2.0) && near(p.p75, 3.0) && near(p.max, 4.0),
            "{p:?}"
        );
        assert!(
            near(p.p90, 4.0) && near(p.p99, 4.0) && near(p.p999, 4.0),
            "{p:?}"
        );
    }
}

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

/// Microsecond histogram from 1 µs to 10 minutes, 3 significant digits.
pub(crate) struct Hist(Histogram<u64>);

const MAX_US: u64 = 600_000_000;

impl Hist {
    pub(crate) fn new() -> Self {
        // Constant bounds that hdrhistogram accepts (1 ≤ low, high ≥ 2·low, sigfig ≤ 5):
        // this cannot fail at run time, whatever the input.
        Hist(Histogram::new_with_bounds(1, MAX_US, 3).expect("constant histogram bounds"))
    }

    /// Records a duration in nanoseconds (clamped to the histogram's range).
    pub(crate) fn record_ns(&mut self, ns: i64) {
        let us = (ns.max(0) as u64 / 1000).clamp(1, MAX_US);
        // saturating_record never fails for in-range values.
        self.0.saturating_record(us);
    }

    pub(crate) fn len(&self) -> u64 {
        self.0.len()
    }

    /// Quantile (0..=1) in milliseconds; 0 when empty.
    pub(crate) fn quantile_ms(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.value_at_quantile(q) as f64 / 1000.0
    }

    pub(crate) fn percentiles(&self) -> Percentiles {
        if self.0.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            mean: self.0.mean() / 1000.0,
            p50: self.quantile_ms(0.5),
            p75: self.quantile_ms(0.75),
            p90: self.quantile_ms(0.9),
            p99: self.quantile_ms(0.99),
            p999: self.quantile_ms(0.999),
            max: self.0.max() as f64 / 1000.0,
            stdev: self.0.stdev() / 1000.0,
        }
    }
}

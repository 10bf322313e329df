//! The request-duration histogram, fed with whole windows.
//!
//! A live window's exchange statistics carry the count of exchanges at or below each fixed
//! bound (`ExchangeStats::latency_cumulative`, from the core's HDR histogram, 3 significant
//! digits), so each request lands in its real bucket ([`LatencyHistogram::add_counts`]). A
//! report read back from JSON has only its percentiles; for it alone the count is spread over
//! the buckets by linear interpolation of the distribution function (0 → 0, p50 → 0.5,
//! p90 → 0.9, p99 → 0.99, max → 1: [`LatencyHistogram::add_window`]).

use netdoctor_core::Percentiles;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::{MetricType, TypedMetric};
use std::sync::{Arc, Mutex};

/// Upper bounds (seconds) of the request-duration histogram: 1 ms … 10 s, with the 40 ms
/// delayed-ACK timer and 200 ms (minimum RTO) between buckets.
/// The core's [`netdoctor_core::LATENCY_BOUNDS_MS`] in seconds.
pub const LATENCY_BUCKETS_S: [f64; 14] = {
    let ms = netdoctor_core::LATENCY_BOUNDS_MS;
    let mut s = [0.0; 14];
    let mut i = 0;
    while i < s.len() {
        s[i] = ms[i] / 1000.0;
        i += 1;
    }
    s
};

/// A histogram fed with whole windows (count + percentiles), see the module docs.
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    inner: Arc<Mutex<HistState>>,
}

impl Clone for LatencyHistogram {
    fn clone(&self) -> Self {
        LatencyHistogram {
            inner: Arc::clone(&self.inner),
        }
    }
}

#[derive(Debug, Default)]
struct HistState {
    /// Cumulative counts per bucket of [`LATENCY_BUCKETS_S`], as f64 so fractions of a request
    /// are not lost between windows; rounded when encoded.
    cumulative: [f64; LATENCY_BUCKETS_S.len()],
    count: u64,
    sum: f64,
}

impl LatencyHistogram {
    /// Adds a window of `count` requests, `cumulative[i]` of them at most
    /// [`LATENCY_BUCKETS_S`]`[i]`, with mean latency `mean_ms`.
    pub fn add_counts(&self, count: u64, cumulative: &[u64], mean_ms: f64) {
        if count == 0 {
            return;
        }
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (acc, c) in s.cumulative.iter_mut().zip(cumulative) {
            *acc += (*c).min(count) as f64;
        }
        s.count += count;
        s.sum += count as f64 * mean_ms / 1000.0;
    }

    /// Adds a window of `count` requests whose latency has the percentiles `p` (milliseconds).
    pub fn add_window(&self, count: u64, p: &Percentiles) {
        if count == 0 {
            return;
        }
        // (value in seconds, cumulative fraction), monotone in both.
        let mut pts = vec![(0.0, 0.0)];
        for (v, q) in [(p.p50, 0.5), (p.p90, 0.9), (p.p99, 0.99), (p.max, 1.0)] {
            let prev = pts.last().map_or(0.0, |x: &(f64, f64)| x.0);
            pts.push(((v / 1000.0).max(prev), q));
        }
        let cdf = |x: f64| -> f64 {
            for w in pts.windows(2) {
                let ((x0, q0), (x1, q1)) = (w[0], w[1]);
                if x <= x1 {
                    if x1 <= x0 {
                        return q1;
                    }
                    return q0 + (q1 - q0) * ((x - x0) / (x1 - x0)).clamp(0.0, 1.0);
                }
            }
            1.0
        };
        // Mean of the piecewise-linear distribution: each segment's mass at its midpoint.
        let mean: f64 = pts
            .windows(2)
            .map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0)
            .sum();
        let n = count as f64;
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (i, b) in LATENCY_BUCKETS_S.iter().enumerate() {
            s.cumulative[i] += n * cdf(*b);
        }
        s.count += count;
        s.sum += n * mean;
    }

    /// (sum, count, cumulative buckets incl. +Inf).
    pub fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_S
            .iter()
            .zip(s.cumulative.iter())
            .map(|(b, c)| (*b, (c.round() as u64).min(s.count)))
            .collect();
        // prometheus-client writes `le="+Inf"` for f64::MAX.
        buckets.push((f64::MAX, s.count));
        (s.sum, s.count, buckets)
    }
}

impl TypedMetric for LatencyHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for LatencyHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, cumulative) = self.snapshot();
        // The encoder wants per-bucket counts and accumulates them itself.
        let mut prev = 0;
        let per_bucket: Vec<(f64, u64)> = cumulative
            .into_iter()
            .map(|(b, c)| {
                let n = c.saturating_sub(prev);
                prev = prev.max(c);
                (b, n)
            })
            .collect();
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            sum,
            count,
            &per_bucket,
            None,
        )
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_exact_at_the_window_percentiles() {
        let h = LatencyHistogram::default();
        // p50 = 2 ms, p90 = 5 ms, p99 = 50 ms, max = 100 ms (bucket bounds on purpose).
        let p = Percentiles {
            p50: 2.0,
            p90: 5.0,
            p99: 50.0,
            max: 100.0,
            ..Percentiles::default()
        };
        h.add_window(1000, &p);
        let (_, count, b) = h.snapshot();
        assert_eq!(count, 1000);
        let at = |le: f64| b.iter().find(|x| x.0 == le).map(|x| x.1);
        assert_eq!(at(0.002), Some(500));
        assert_eq!(at(0.005), Some(900));
        assert_eq!(at(0.05), Some(990));
        assert_eq!(at(0.1), Some(1000));
        assert_eq!(at(0.001), Some(250));
        assert!(b.windows(2).all(|w| w[0].1 <= w[1].1));
    }
}

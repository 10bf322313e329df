//! The latency distribution of a run for charts: log-spaced histogram buckets and a percentile
//! curve, both read from the run's merged HDR histogram at the end (nothing extra per request).
//!
//! Buckets are 20 per decade (edges `10^(k/20)` µs: 1, 1.12, 1.26, 1.41, 1.58, 1.78, 2, ...,
//! 10, ...), each about 12 % wider than the one before, so one chart shows a 2 ms mode and a
//! 40 ms mode with the same resolution, and 40 ms apart from 44 ms; the list runs from the fastest request's bucket to the
//! slowest's, empty buckets in between included. The curve gives the latency at quantiles that
//! crowd toward the tail (`1 − 10^(−k/8)`: 0, 25 %, 44 %, ..., 90 %, ..., 99 %, ..., 99.999 %),
//! as HdrHistogram's percentile distribution does, cut where the run has too few requests to
//! tell quantiles apart, and ends at the maximum.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Buckets per decade of latency.
const PER_DECADE: f64 = 20.0;
/// Curve points per decade of `1 − quantile`.
const CURVE_PER_DECADE: f64 = 8.0;
/// The curve goes at most to `1 − 10^−5` before the maximum.
const CURVE_DECADES: u32 = 5;

/// One histogram bucket: requests whose latency fell in `[from_ms, to_ms)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyBucket {
    pub from_ms: f64,
    pub to_ms: f64,
    pub count: u64,
}

/// The latency (ms) at one quantile (0..=1) of the run's requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantilePoint {
    pub quantile: f64,
    pub ms: f64,
}

fn bucket_of(us: u64) -> i64 {
    ((us.max(1) as f64).log10() * PER_DECADE).floor() as i64
}

fn edge_ms(k: i64) -> f64 {
    // Rounded to 1 µs: edges print as 1.259 ms, not 1.2589254117941673.
    (10f64.powf(k as f64 / PER_DECADE)).round() / 1000.0
}

/// Log-spaced buckets of a histogram of microseconds; empty for an empty histogram.
pub(crate) fn buckets(h: &Histogram<u64>) -> Vec<LatencyBucket> {
    if h.is_empty() {
        return Vec::new();
    }
    let lo = bucket_of(h.min());
    let hi = bucket_of(h.max());
    let mut out: Vec<LatencyBucket> = (lo..=hi)
        .map(|k| LatencyBucket {
            from_ms: edge_ms(k),
            to_ms: edge_ms(k + 1),
            count: 0,
        })
        .collect();
    for v in h.iter_recorded() {
        // The HDR bucket's middle value decides (its range is 0.1 % wide at 3 digits).
        let k = bucket_of(h.median_equivalent(v.value_iterated_to()));
        let i = (k - lo).clamp(0, hi - lo) as usize;
        out[i].count += v.count_at_value();
    }
    out
}

/// The percentile curve of a histogram of microseconds; empty for an empty histogram.
pub(crate) fn curve(h: &Histogram<u64>) -> Vec<QuantilePoint> {
    if h.is_empty() {
        return Vec::new();
    }
    let n = h.len() as f64;
    let mut out = Vec::new();
    for k in 0..=(CURVE_DECADES * CURVE_PER_DECADE as u32) {
        let tail = 10f64.powf(-f64::from(k) / CURVE_PER_DECADE);
        if tail * n < 1.0 {
            // Fewer than one request beyond this quantile: the rest is the maximum.
            break;
        }
        let q = 1.0 - tail;
        out.push(QuantilePoint {
            quantile: q,
            ms: h.value_at_quantile(q) as f64 / 1000.0,
        });
    }
    out.push(QuantilePoint {
        quantile: 1.0,
        ms: h.max() as f64 / 1000.0,
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = crate::worker::new_histogram();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    #[test]
    fn buckets_cover_min_to_max_and_keep_every_count() {
        // 900 requests at ~2 ms, 100 at ~44 ms: two modes, a decade and a bit apart.
        let h = hist(&[(2_000, 900), (44_000, 100)]);
        let b = buckets(&h);
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), 1000);
        assert_eq!(b.len(), 27, "{b:?}"); // buckets 66 (10^3.30 µs) to 92 (10^4.60 µs)
        let two = b
            .iter()
            .find(|b| b.from_ms <= 2.0 && 2.0 < b.to_ms)
            .unwrap();
        assert_eq!(two.count, 900);
        let forty = b
            .iter()
            .find(|b| b.from_ms <= 44.0 && 44.0 < b.to_ms)
            .unwrap();
        assert_eq!(forty.count, 100);
        for w in b.windows(2) {
            assert_eq!(w[0].to_ms, w[1].from_ms, "contiguous edges");
        }
        assert!(buckets(&crate::worker::new_histogram()).is_empty());
    }

    #[test]
    fn curve_rises_to_the_tail_and_ends_at_the_max() {
        let h = hist(&[(2_000, 990), (44_000, 10)]);
        let c = curve(&h);
        assert_eq!(c.first().unwrap().quantile, 0.0);
        let last = c.last().unwrap();
        assert_eq!(last.quantile, 1.0);
        assert!((last.ms - 44.0).abs() < 0.1, "{last:?}");
        for w in c.windows(2) {
            assert!(w[0].quantile < w[1].quantile && w[0].ms <= w[1].ms, "{w:?}");
        }
        // 1000 requests: nothing beyond 99.9 % but the maximum.
        assert!(c.iter().all(|p| p.quantile <= 0.999 || p.quantile == 1.0));
        let p50 = c.iter().find(|p| (p.quantile - 0.5).abs() < 0.05);
        assert!(p50.is_none_or(|p| (p.ms - 2.0).abs() < 0.01));
    }
}

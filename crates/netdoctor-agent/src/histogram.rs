//! The request-duration histogram, fed with whole windows: classic buckets for the text
//! formats, and the same requests in a native histogram ([`crate::native`]) for the protobuf
//! exposition ([`LatencyHistogram::to_proto`]).
//!
//! A live window's exchange statistics carry the count of exchanges at or below each fixed
//! bound (`ExchangeStats::latency_cumulative`) and the distribution itself
//! (`ExchangeStats::latency_recorded_us`), both from the core's HDR histogram (3 significant
//! digits), so each request lands in its real classic bucket and in its real native bucket
//! ([`LatencyHistogram::add_exchanges`]): the native histogram takes each distinct latency once
//! with its count (O(1) each), so its cost per window is the number of distinct latencies, not
//! of requests. Only exchanges with a latency count (one cut by the window's end has none).
//!
//! A report read back from JSON has only its percentiles; for it alone the count is spread over
//! the buckets by linear interpolation of the distribution function (0 → 0, p50 → 0.5,
//! p90 → 0.9, p99 → 0.99, max → 1: [`LatencyHistogram::add_window`]), and the native histogram
//! gets the same distribution as 100 equal slices at their middle quantile.

use crate::native::{NativeHistogram, ZERO_THRESHOLD};
use crate::proto;
use netdoctor_core::Percentiles;
use netdoctor_core::analyze::ExchangeStats;
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
    /// The same requests in exponential buckets.
    native: NativeHistogram,
}

impl LatencyHistogram {
    /// Adds a window's exchanges: exactly, from their cumulative counts and their distribution
    /// when the report is live, else from their percentiles ([`add_window`](Self::add_window)).
    pub fn add_exchanges(&self, x: &ExchangeStats) {
        if x.latency_cumulative.len() != LATENCY_BUCKETS_S.len() {
            // A report read back from JSON has only the percentiles.
            self.add_window(x.count, &x.latency_ms);
            return;
        }
        // Exchanges with a latency: the distribution's total.
        let count: u64 = x.latency_recorded_us.iter().map(|(_, n)| n).sum();
        if count == 0 {
            return;
        }
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (acc, c) in s.cumulative.iter_mut().zip(&x.latency_cumulative) {
            *acc += (*c).min(count) as f64;
        }
        s.count += count;
        s.sum += count as f64 * x.latency_ms.mean / 1000.0;
        for (us, n) in &x.latency_recorded_us {
            s.native.observe_n(*us as f64 / 1e6, *n);
        }
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
        // The native histogram: 100 slices of the same distribution, each at its middle
        // quantile, the count apportioned so the slices sum to it.
        let inverse = |q: f64| -> f64 {
            for w in pts.windows(2) {
                let ((x0, q0), (x1, q1)) = (w[0], w[1]);
                if q <= q1 && q1 > q0 {
                    return x0 + (x1 - x0) * (q - q0) / (q1 - q0);
                }
            }
            pts.last().map_or(0.0, |p| p.0)
        };
        let mut done = 0u64;
        for k in 0..100u64 {
            let upto = (count * (k + 1) + 50) / 100;
            s.native
                .observe_n(inverse((k as f64 + 0.5) / 100.0), upto - done);
            done = upto;
        }
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

    /// The histogram as the protobuf exposition writes it: count, sum, the classic buckets
    /// (cumulative, `+Inf` left to the count) and the native buckets (schema, zero threshold
    /// and count, positive spans and deltas), from one snapshot. The zero threshold is written
    /// even before the first observation: it is what tells Prometheus (2.42 and later) that
    /// the histogram is native, so its series does not start out classic.
    pub fn to_proto(&self) -> proto::Histogram {
        let s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = LATENCY_BUCKETS_S
            .iter()
            .zip(s.cumulative.iter())
            .map(|(b, c)| proto::Bucket {
                cumulative_count: Some((c.round() as u64).min(s.count)),
                upper_bound: Some(*b),
            })
            .collect();
        let mut h = proto::Histogram {
            sample_count: Some(s.count),
            sample_sum: Some(s.sum),
            bucket,
            ..Default::default()
        };
        {
            let (spans, deltas) = s.native.spans_and_deltas();
            h.schema = Some(i32::from(s.native.schema()));
            h.zero_threshold = Some(ZERO_THRESHOLD);
            h.zero_count = Some(s.native.zero_count());
            h.positive_span = spans
                .iter()
                .map(|sp| proto::BucketSpan {
                    offset: Some(sp.offset),
                    length: Some(sp.length),
                })
                .collect();
            h.positive_delta = deltas;
        }
        h
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
        // The native buckets hold the same count, the median in the bucket of 2 ms.
        let p = h.to_proto();
        assert_eq!(p.sample_count, Some(1000));
        let (mut idx, mut c, mut cum) = (0, 0i64, 0i64);
        let mut median_bucket = None;
        let mut d = p.positive_delta.iter();
        for s in &p.positive_span {
            idx += s.offset.unwrap();
            for _ in 0..s.length.unwrap() {
                c += d.next().unwrap();
                cum += c;
                if cum >= 500 && median_bucket.is_none() {
                    median_bucket = Some(idx);
                }
                idx += 1;
            }
        }
        assert_eq!(cum + p.zero_count.unwrap() as i64, 1000);
        let i = median_bucket.unwrap();
        let b = |i: i32| 2f64.powf(f64::from(i) / 8.0);
        assert!(
            b(i - 1) < 0.002 * 1.001 && 0.002 <= b(i) * 1.001,
            "bucket {i}"
        );
    }
}

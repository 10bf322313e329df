//! A Prometheus native histogram: sparse exponential buckets, as `client_golang` keeps them.
//!
//! Bucket `i` of schema `s` holds the values in `(2^((i-1)/2^s), 2^(i/2^s)]` (upper bound
//! included); values at or below the zero threshold (and negative ones: latencies are not) go to
//! the zero bucket. The index comes from the float's exponent and mantissa in O(1)
//! ([`bucket_index`]: the exponent from the bits, then a search over the `2^s` mantissa bounds
//! of one octave, at most 8 comparisons at schema 8), the way `client_golang` computes it.
//!
//! Bounded: the buckets are one dense run from the lowest to the highest populated index, at
//! most [`MAX_BUCKETS`] long. Past that the resolution halves (schema − 1, every pair of
//! buckets merged into one), as `client_golang` does when `NativeHistogramMaxBucketNumber` is
//! passed without a reset; the zero threshold stays where it is (latencies are ≥ 1 µs).
//!
//! Hand-written: the Rust Prometheus clients (prometheus-client, prometheus) have no native
//! histogram, and this is the bucket arithmetic alone (no exposition).

/// The starting schema: 8 buckets per power of two (each bucket ≈ 9 % wide), the resolution
/// `client_golang`'s `NativeHistogramBucketFactor: 1.1` picks.
pub const INITIAL_SCHEMA: i8 = 3;
/// Largest number of buckets kept (from the lowest to the highest populated one), the value
/// `client_golang` users commonly set as `NativeHistogramMaxBucketNumber`.
pub const MAX_BUCKETS: usize = 160;
/// `client_golang`'s default zero threshold: 2^-128.
pub const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;
/// The coarsest schema Prometheus accepts.
const MIN_SCHEMA: i8 = -4;

/// The bucket of `v` (> 0, finite, normal) at `schema` (−4..=8), with `bounds` the mantissa
/// bounds of that schema ([`mantissa_bounds`]; empty for schema ≤ 0).
#[inline]
pub fn bucket_index(v: f64, schema: i8, bounds: &[f64]) -> i32 {
    // frexp from the bits: v = frac · 2^exp with frac in [0.5, 1).
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32 - 1022;
    let frac = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    if schema > 0 {
        // The first bound ≥ frac: bounds are upper bounds, inclusive.
        let j = bounds.partition_point(|b| *b < frac) as i32;
        j + (exp - 1) * bounds.len() as i32
    } else {
        // An exact power of two is the upper bound of the bucket below.
        let key = if frac == 0.5 { exp - 1 } else { exp };
        let shift = -i32::from(schema);
        (key + (1 << shift) - 1) >> shift
    }
}

/// The upper bounds of one octave's buckets at `schema` as mantissas: `2^(j/2^s − 1)` for
/// `j` in `0..2^s` (empty for schema ≤ 0).
pub fn mantissa_bounds(schema: i8) -> Vec<f64> {
    if schema <= 0 {
        return Vec::new();
    }
    let n = 1usize << schema;
    (0..n)
        .map(|j| 2f64.powf(j as f64 / n as f64 - 1.0))
        .collect()
}

/// One native histogram (positive values and the zero bucket).
#[derive(Debug, Clone)]
pub struct NativeHistogram {
    schema: i8,
    bounds: Vec<f64>,
    /// Index of `buckets[0]`.
    first: i32,
    /// Dense counts from `first` on; empty before the first positive observation.
    buckets: Vec<u64>,
    zero_count: u64,
    count: u64,
    sum: f64,
}

impl Default for NativeHistogram {
    fn default() -> Self {
        NativeHistogram::new(INITIAL_SCHEMA)
    }
}

/// A span of consecutive buckets: `offset` from the end of the previous span (from bucket 0
/// for the first), and `length` buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: i32,
    pub length: u32,
}

impl NativeHistogram {
    pub fn new(schema: i8) -> NativeHistogram {
        let schema = schema.clamp(MIN_SCHEMA, 8);
        NativeHistogram {
            schema,
            bounds: mantissa_bounds(schema),
            first: 0,
            buckets: Vec::new(),
            zero_count: 0,
            count: 0,
            sum: 0.0,
        }
    }

    /// Counts `n` observations of `v`. NaN is ignored.
    #[inline]
    pub fn observe_n(&mut self, v: f64, n: u64) {
        if v.is_nan() || n == 0 {
            return;
        }
        self.count += n;
        self.sum += v * n as f64;
        if v <= ZERO_THRESHOLD {
            self.zero_count += n;
            return;
        }
        // +Inf goes to the highest bucket there is.
        let v = v.min(f64::MAX);
        let i = bucket_index(v, self.schema, &self.bounds);
        let off = i64::from(i) - i64::from(self.first);
        if !self.buckets.is_empty() && (0..self.buckets.len() as i64).contains(&off) {
            self.buckets[off as usize] += n;
            return;
        }
        self.grow_to(i);
        let i = bucket_index(v, self.schema, &self.bounds);
        self.buckets[(i - self.first) as usize] += n;
    }

    /// Extends the dense run to cover index `i`, halving the resolution while it would exceed
    /// [`MAX_BUCKETS`].
    fn grow_to(&mut self, mut i: i32) {
        if self.buckets.is_empty() {
            self.first = i;
            self.buckets.push(0);
            return;
        }
        loop {
            let lo = self.first.min(i);
            let hi = (self.first + self.buckets.len() as i32 - 1).max(i);
            if (hi - lo + 1) as usize <= MAX_BUCKETS || self.schema == MIN_SCHEMA {
                if i < self.first {
                    let add = (self.first - i) as usize;
                    self.buckets.splice(0..0, std::iter::repeat_n(0, add));
                    self.first = i;
                } else {
                    self.buckets.resize((hi - self.first + 1) as usize, 0);
                }
                return;
            }
            self.reduce();
            i = (i + 1) >> 1;
        }
    }

    /// Halves the resolution: bucket `i` of schema `s` becomes bucket `ceil(i/2)` of `s − 1`.
    fn reduce(&mut self) {
        let new_first = (self.first + 1) >> 1;
        let last = self.first + self.buckets.len() as i32 - 1;
        let mut merged = vec![0u64; (((last + 1) >> 1) - new_first + 1) as usize];
        for (k, c) in self.buckets.iter().enumerate() {
            let j = (self.first + k as i32 + 1) >> 1;
            merged[(j - new_first) as usize] += c;
        }
        self.first = new_first;
        self.buckets = merged;
        self.schema -= 1;
        self.bounds = mantissa_bounds(self.schema);
    }

    pub fn schema(&self) -> i8 {
        self.schema
    }

    pub fn zero_count(&self) -> u64 {
        self.zero_count
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// Populated buckets as (index, count), ascending.
    pub fn buckets(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(k, c)| (self.first + k as i32, *c))
    }

    /// The positive buckets as the exposition writes them: spans and the deltas of the counts
    /// (the first count, then each count minus the previous one). Gaps of up to two empty
    /// buckets stay inside a span as zero counts (cheaper than a new span), as `client_golang`
    /// writes them.
    pub fn spans_and_deltas(&self) -> (Vec<Span>, Vec<i64>) {
        let mut spans: Vec<Span> = Vec::new();
        let mut deltas = Vec::new();
        let mut prev_count = 0i64;
        // Index one past the end of the last span.
        let mut end: Option<i32> = None;
        for (i, c) in self.buckets() {
            match end {
                Some(e) if i - e <= 2 => {
                    // Close gap: zero counts inside the span.
                    for _ in e..i {
                        deltas.push(-prev_count);
                        prev_count = 0;
                    }
                    if let Some(s) = spans.last_mut() {
                        s.length += (i - e) as u32 + 1;
                    }
                }
                _ => spans.push(Span {
                    offset: end.map_or(i, |e| i - e),
                    length: 1,
                }),
            }
            let c = c as i64;
            deltas.push(c - prev_count);
            prev_count = c;
            end = Some(i + 1);
        }
        (spans, deltas)
    }

    /// The upper bound of bucket `i` at this histogram's schema.
    pub fn upper_bound(&self, i: i32) -> f64 {
        2f64.powf(f64::from(i) * 2f64.powi(-i32::from(self.schema)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(v: f64, schema: i8) -> i32 {
        bucket_index(v, schema, &mantissa_bounds(schema))
    }

    #[test]
    fn each_value_lands_in_the_bucket_whose_bounds_hold_it() {
        for schema in MIN_SCHEMA..=8 {
            let base = 2f64.powf(2f64.powi(-i32::from(schema)));
            for v in [
                1e-6, 3.3e-5, 0.000_999, 0.001, 0.0404, 0.25, 1.0, 1.5, 2.0, 7.0, 1e4,
            ] {
                let i = index(v, schema);
                let upper = base.powi(i);
                let lower = base.powi(i - 1);
                let tol = 1e-12 * upper;
                assert!(
                    v > lower - tol && v <= upper + tol,
                    "schema {schema}: {v} in bucket {i} = ({lower}, {upper}]"
                );
            }
            // Powers of two are upper bounds, included.
            assert_eq!(index(1.0, schema), 0, "schema {schema}");
        }
        assert_eq!(index(2.0, 0), 1);
        assert_eq!(index(2.0, 3), 8);
        assert_eq!(index(2.0 * 1.000_001, 3), 9);
        assert_eq!(index(4.0, -1), 1);
        assert_eq!(index(4.1, -1), 2);
    }

    #[test]
    fn spans_and_deltas_rebuild_the_counts() {
        let mut h = NativeHistogram::default();
        for (v, n) in [(0.001, 3), (0.0011, 1), (0.002, 5), (0.04, 7), (0.0, 2)] {
            h.observe_n(v, n);
        }
        assert_eq!(h.count(), 18);
        assert_eq!(h.zero_count(), 2);
        let (spans, deltas) = h.spans_and_deltas();
        let mut idx = 0i32;
        let mut count = 0i64;
        let mut rebuilt = Vec::new();
        let mut d = deltas.iter();
        for s in &spans {
            idx += s.offset;
            for _ in 0..s.length {
                count += d.next().unwrap();
                if count > 0 {
                    rebuilt.push((idx, count as u64));
                }
                idx += 1;
            }
        }
        assert!(d.next().is_none());
        assert_eq!(rebuilt, h.buckets().collect::<Vec<_>>());
        assert_eq!(rebuilt.iter().map(|b| b.1).sum::<u64>() + 2, 18);
        // 1 ms and 1.1 ms are one bucket apart at schema 3 (9 % per bucket): one span.
        assert!(spans.len() >= 2, "{spans:?}");
    }

    #[test]
    fn too_wide_a_range_halves_the_resolution_and_keeps_every_count() {
        let mut h = NativeHistogram::default();
        // 1 µs … 1000 s: 30 octaves = 240 buckets at schema 3, over the limit.
        let mut n = 0;
        let mut v = 1e-6;
        while v < 1000.0 {
            h.observe_n(v, 2);
            n += 2;
            v *= 1.07;
        }
        assert!(h.schema() < INITIAL_SCHEMA, "schema {}", h.schema());
        assert!(h.buckets.len() <= MAX_BUCKETS, "{}", h.buckets.len());
        assert_eq!(h.buckets().map(|b| b.1).sum::<u64>(), n);
        // Still in the right buckets after the merges.
        let mut fresh = NativeHistogram::new(h.schema());
        let mut v = 1e-6;
        while v < 1000.0 {
            fresh.observe_n(v, 2);
            v *= 1.07;
        }
        assert_eq!(
            h.buckets().collect::<Vec<_>>(),
            fresh.buckets().collect::<Vec<_>>()
        );
    }
}

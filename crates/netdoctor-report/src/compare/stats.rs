//! The latency test of a comparison: is run B's latency distribution different from run A's,
//! computed from the two runs' latency histograms (never from single percentiles).
//!
//! **The test: Mann–Whitney U with Cliff's δ as the effect size.** The load engine keeps no list
//! of requests, only a histogram on a fixed log grid (20 buckets per decade, the same edges in
//! every run), so both tests are computed on bucket counts: two requests in the same bucket are a
//! tie. U counts, over every pair (a, b), how often a is slower than b (ties count ½); its
//! normal approximation with the tie correction gives z and a two-sided p-value. Cliff's
//! δ = P(a > b) − P(a < b) = 2U/(n_a·n_b) − 1 says how far apart the runs are, from −1 (every B
//! request slower) to +1 (every B request faster). Ties inside a 12 %-wide bucket pull δ toward
//! 0, so the binning can only make a difference look smaller, never invent one. The
//! two-sample Kolmogorov–Smirnov distance D (largest gap between the two cumulative
//! distributions) is reported beside it as a second, shape-sensitive figure.
//!
//! The size of the shift is the Hodges–Lehmann estimate that goes with the U test: the median,
//! over every pair (a, b), of the distance between their buckets, i.e. how many times slower
//! or faster a typical B request is than a typical A one (`typical_ratio`, B/A, to one bucket:
//! a factor 1.12).
//!
//! **Why the p-value alone does not decide.** A 3 s run at 100 connections holds tens of
//! thousands of requests; at that size any shift is "significant" (two runs of the same healthy
//! server one after the other measured z ≈ 30, p ≈ 0), and requests of a closed-loop load are
//! not independent samples, which inflates z further. Nor does δ alone: it is scale-free, so
//! when most requests sit in one narrow mode (the 40 ms delayed-ACK timer) a shift of that mode
//! by a few percent moves many requests across one bucket edge and gives a "medium" δ (two
//! runs of the same `tcp_nodelay off` server: p50 43.9 → 47.2 ms, δ = −0.33). So a difference
//! is **significant** only when all three hold: p < [`ALPHA`]; |δ| ≥ [`NEGLIGIBLE_DELTA`]
//! (0.147, the bound of a "negligible" effect in Romano et al., 2006, "Appropriate statistics
//! for ordinal level data"); and the typical request moved by at least [`MIN_SHIFT_BUCKETS`]
//! buckets (a factor 1.26: one bucket is the histogram's resolution, and two runs of the same
//! server on a busy 2-core machine differed by up to 12 % in p50 — within one bucket). The
//! reference case's fix (p50 44 ms → 2–5 ms) measures δ ≈ 0.99 and a shift of about 20 buckets
//! (×0.08). The smallest change this calls significant is thus about 26 % of the typical
//! latency; a change in the share of slow requests that leaves the typical one alone shows in
//! the findings' verdicts (their affected fraction), not here.
//!
//! The normal tail is computed with the complementary error function (Numerical Recipes'
//! Chebyshev fit, relative error < 1.2·10⁻⁷), written here because it is the only special
//! function needed and a statistics crate would bring far more than one function.

use netdoctor_load::LatencyBucket;
use serde::{Deserialize, Serialize};

/// Significance level of the Mann–Whitney test.
pub const ALPHA: f64 = 0.01;
/// |Cliff's δ| below this is a negligible effect (Romano et al. 2006), however small p is.
pub const NEGLIGIBLE_DELTA: f64 = 0.147;
/// The smallest Hodges–Lehmann shift, in histogram buckets (20 per decade), that counts.
pub const MIN_SHIFT_BUCKETS: i64 = 2;
/// Histogram buckets per decade of latency (the load engine's grid).
const PER_DECADE: f64 = 20.0;

/// Which way B's latency moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyDirection {
    /// B's requests are faster (a significant difference).
    Faster,
    /// B's requests are slower (a significant difference).
    Slower,
    /// No significant difference.
    Same,
}

/// The result of comparing the two latency histograms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyTest {
    /// Always `"mann_whitney_u"`.
    pub test: String,
    /// Requests in A's and B's histograms.
    pub n_a: u64,
    pub n_b: u64,
    /// U statistic: pairs where A's request is slower than B's (ties count ½).
    pub u: f64,
    /// Normal approximation of U with the tie correction.
    pub z: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Cliff's δ = P(A slower) − P(B slower): +1 every B request faster, −1 every one slower.
    pub cliffs_delta: f64,
    /// Words for |δ|: negligible (< 0.147), small (< 0.33), medium (< 0.474), large.
    pub effect: String,
    /// Two-sample Kolmogorov–Smirnov distance between the two distributions (0..=1).
    pub ks_d: f64,
    /// Hodges–Lehmann shift in buckets (20 per decade): positive when B's typical request is
    /// faster.
    pub shift_buckets: i64,
    /// How long a typical B request takes relative to a typical A one (B/A, from the shift:
    /// 0.08 is 12× faster).
    pub typical_ratio: f64,
    /// The significance level used ([`ALPHA`]).
    pub alpha: f64,
    /// The smallest |δ| that counts ([`NEGLIGIBLE_DELTA`]).
    pub min_effect: f64,
    /// The smallest |shift_buckets| that counts ([`MIN_SHIFT_BUCKETS`]).
    pub min_shift_buckets: i64,
    /// p < alpha, |δ| ≥ min_effect and |shift_buckets| ≥ min_shift_buckets.
    pub significant: bool,
    pub direction: LatencyDirection,
}

/// Bucket key: the lower edge in microseconds (edges are rounded to 1 µs by the load engine).
fn key(b: &LatencyBucket) -> i64 {
    (b.from_ms * 1000.0).round() as i64
}

/// Compares two histograms on the load engine's shared log grid. `None` when either holds no
/// request.
pub fn latency_test(a: &[LatencyBucket], b: &[LatencyBucket]) -> Option<LatencyTest> {
    let mut keys: Vec<i64> = a.iter().chain(b).map(key).collect();
    keys.sort_unstable();
    keys.dedup();
    let count = |h: &[LatencyBucket], k: i64| -> f64 {
        h.iter()
            .filter(|x| key(x) == k)
            .map(|x| x.count as f64)
            .sum()
    };
    let ca: Vec<f64> = keys.iter().map(|&k| count(a, k)).collect();
    let cb: Vec<f64> = keys.iter().map(|&k| count(b, k)).collect();
    let (na, nb) = (ca.iter().sum::<f64>(), cb.iter().sum::<f64>());
    if na < 1.0 || nb < 1.0 {
        return None;
    }
    // Pairs where A's request is in a higher bucket than B's (A slower), lower, and tied.
    let (mut a_slower, mut ties, mut b_below) = (0.0, 0.0, 0.0);
    let mut tie_term = 0.0;
    let (mut cum_a, mut cum_b, mut ks_d) = (0.0_f64, 0.0_f64, 0.0_f64);
    for (x, y) in ca.iter().zip(&cb) {
        a_slower += x * b_below;
        ties += x * y;
        b_below += y;
        let t = x + y;
        tie_term += t * t * t - t;
        cum_a += x / na;
        cum_b += y / nb;
        ks_d = ks_d.max((cum_a - cum_b).abs());
    }
    let pairs = na * nb;
    let a_faster = pairs - a_slower - ties;
    let u = a_slower + ties / 2.0;
    let n = na + nb;
    let var = pairs / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)).max(1.0));
    let z = if var > 0.0 {
        (u - pairs / 2.0) / var.sqrt()
    } else {
        0.0
    };
    let p_value = erfc(z.abs() / std::f64::consts::SQRT_2).clamp(0.0, 1.0);
    let delta = (a_slower - a_faster) / pairs;
    let shift = hodges_lehmann(&keys, &ca, &cb);
    let significant =
        p_value < ALPHA && delta.abs() >= NEGLIGIBLE_DELTA && shift.abs() >= MIN_SHIFT_BUCKETS;
    Some(LatencyTest {
        test: "mann_whitney_u".into(),
        n_a: na as u64,
        n_b: nb as u64,
        u,
        z,
        p_value,
        cliffs_delta: delta,
        effect: effect_words(delta).into(),
        // Summed fractions can pass 1 by a rounding step (nine buckets of 1/9: 1.0000000000000002).
        ks_d: ks_d.min(1.0),
        shift_buckets: shift,
        typical_ratio: 10f64.powf(-(shift as f64) / PER_DECADE),
        alpha: ALPHA,
        min_effect: NEGLIGIBLE_DELTA,
        min_shift_buckets: MIN_SHIFT_BUCKETS,
        significant,
        direction: match (significant, delta > 0.0) {
            (false, _) => LatencyDirection::Same,
            (true, true) => LatencyDirection::Faster,
            (true, false) => LatencyDirection::Slower,
        },
    })
}

/// The bucket number of a lower edge in µs on the 20-per-decade grid.
fn bucket_index(key_us: i64) -> i64 {
    ((key_us.max(1) as f64).log10() * PER_DECADE).round() as i64
}

/// The weighted median over every pair (a, b) of bucket(a) − bucket(b): positive when A's
/// typical request is in a higher bucket (slower) than B's.
fn hodges_lehmann(keys: &[i64], ca: &[f64], cb: &[f64]) -> i64 {
    let idx: Vec<i64> = keys.iter().map(|&k| bucket_index(k)).collect();
    let mut diffs: std::collections::BTreeMap<i64, f64> = std::collections::BTreeMap::new();
    let mut total = 0.0;
    for (i, x) in ca.iter().enumerate().filter(|(_, x)| **x > 0.0) {
        for (j, y) in cb.iter().enumerate().filter(|(_, y)| **y > 0.0) {
            *diffs.entry(idx[i] - idx[j]).or_default() += x * y;
            total += x * y;
        }
    }
    let mut seen = 0.0;
    for (d, w) in diffs {
        seen += w;
        if seen >= total / 2.0 {
            return d;
        }
    }
    0
}

/// Romano et al.'s words for |δ|.
pub fn effect_words(delta: f64) -> &'static str {
    match delta.abs() {
        d if d < NEGLIGIBLE_DELTA => "negligible",
        d if d < 0.33 => "small",
        d if d < 0.474 => "medium",
        _ => "large",
    }
}

/// Complementary error function (Numerical Recipes `erfcc`, relative error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(buckets: &[(f64, u64)]) -> Vec<LatencyBucket> {
        buckets
            .iter()
            .map(|&(from, count)| LatencyBucket {
                from_ms: from,
                to_ms: from * 1.122,
                count,
            })
            .collect()
    }

    #[test]
    fn erfc_matches_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(2.0) - 0.004_677_735).abs() < 1e-8);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-7);
        // z = 1.96 → two-sided p = 0.05.
        assert!((erfc(1.96 / std::f64::consts::SQRT_2) - 0.05).abs() < 1e-4);
    }

    #[test]
    fn ks_d_stays_within_one_when_fractions_round_up() {
        // Nine buckets of A, each 1/9, all below B's one: the cumulative sum of A's fractions
        // is 1.0000000000000002 in f64.
        let a: Vec<(f64, u64)> = (0..9).map(|i| (1.0 + i as f64 * 0.2, 1)).collect();
        let t = latency_test(&h(&a), &h(&[(50.0, 5)])).unwrap();
        assert_eq!(t.ks_d, 1.0);
    }

    #[test]
    fn u_and_delta_by_hand() {
        // A: 2 requests at 10 ms, B: 1 at 1 ms and 1 at 10 ms.
        // Pairs: (10,1) A slower ×2, (10,10) tie ×2 → U = 2 + 1 = 3, δ = (2 − 0)/4 = 0.5.
        let t = latency_test(&h(&[(10.0, 2)]), &h(&[(1.0, 1), (10.0, 1)])).unwrap();
        assert_eq!(t.u, 3.0);
        assert_eq!(t.cliffs_delta, 0.5);
        assert_eq!(t.ks_d, 0.5);
        assert!(
            !t.significant,
            "4 requests cannot be significant: p {}",
            t.p_value
        );
    }

    #[test]
    fn identical_histograms_are_the_same() {
        let a = h(&[(1.0, 500), (2.0, 3000), (4.0, 800)]);
        let t = latency_test(&a, &a).unwrap();
        assert_eq!(t.cliffs_delta, 0.0);
        assert!(t.z.abs() < 1e-9);
        assert!((t.p_value - 1.0).abs() < 1e-6);
        assert_eq!(t.direction, LatencyDirection::Same);
        assert_eq!(t.effect, "negligible");
    }

    #[test]
    fn a_large_shift_is_significant_both_ways() {
        let slow = h(&[(39.8, 300), (44.7, 3000), (50.1, 100)]);
        let fast = h(&[(1.0, 2000), (2.0, 30000), (4.0, 900)]);
        let t = latency_test(&slow, &fast).unwrap();
        assert_eq!(t.direction, LatencyDirection::Faster);
        assert_eq!(t.cliffs_delta, 1.0);
        assert!(t.p_value < 1e-12);
        assert_eq!(t.effect, "large");
        // 44.7 ms → 2 ms: 27 buckets of 20 per decade, B ≈ 0.045 × A.
        assert_eq!(t.shift_buckets, 27);
        assert!(
            (t.typical_ratio - 0.0447).abs() < 0.001,
            "{}",
            t.typical_ratio
        );
        let back = latency_test(&fast, &slow).unwrap();
        assert_eq!(back.direction, LatencyDirection::Slower);
        assert_eq!(back.cliffs_delta, -1.0);
    }

    #[test]
    fn a_tiny_shift_in_many_requests_is_not_significant() {
        // 10 % of B's requests one bucket later: p is tiny, the effect is negligible.
        let a = h(&[(2.0, 50_000), (2.24, 50_000)]);
        let b = h(&[(2.0, 45_000), (2.24, 55_000)]);
        let t = latency_test(&a, &b).unwrap();
        assert!(t.p_value < ALPHA, "p {}", t.p_value);
        assert!(t.cliffs_delta.abs() < NEGLIGIBLE_DELTA);
        assert!(!t.significant);
        assert_eq!(t.direction, LatencyDirection::Same);
    }

    #[test]
    fn a_narrow_mode_moving_one_bucket_is_not_significant() {
        // Most requests at the 40 ms timer; in B a third of them cross the next edge.
        let a = h(&[(39.8, 6000), (44.7, 600)]);
        let b = h(&[(39.8, 4000), (44.7, 2600)]);
        let t = latency_test(&a, &b).unwrap();
        assert!(t.p_value < ALPHA);
        assert!(
            t.cliffs_delta.abs() >= NEGLIGIBLE_DELTA,
            "δ {}",
            t.cliffs_delta
        );
        assert!(
            t.shift_buckets.abs() < MIN_SHIFT_BUCKETS,
            "{}",
            t.shift_buckets
        );
        assert!(!t.significant);
        // Two buckets further is a change.
        let c = h(&[(50.1, 4000), (56.2, 2600)]);
        let t = latency_test(&a, &c).unwrap();
        assert_eq!(t.shift_buckets, -2);
        assert_eq!(t.direction, LatencyDirection::Slower);
    }

    #[test]
    fn empty_histograms_give_no_test() {
        assert!(latency_test(&[], &h(&[(1.0, 3)])).is_none());
        assert!(latency_test(&h(&[(1.0, 0)]), &h(&[(1.0, 3)])).is_none());
    }
}

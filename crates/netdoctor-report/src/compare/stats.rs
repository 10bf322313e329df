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
//! **Why the p-value alone does not decide.** A 3 s run at 100 connections holds tens of
//! thousands of requests; at that size any shift is "significant" (two runs of the same healthy
//! server one after the other measured z ≈ 30, p ≈ 0, δ = 0.10), and requests of a closed-loop
//! load are not independent samples, which inflates z further. So a difference is
//! **significant** only when p < [`ALPHA`] *and* |δ| ≥ [`NEGLIGIBLE_DELTA`] (0.147, the bound of a
//! "negligible" effect in Romano et al., 2006, "Appropriate statistics for ordinal level
//! data"). Two runs of the same server stay under it; the reference case's fix (p50 44 ms →
//! 2 ms) measures δ ≈ 0.99.
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
    /// The significance level used ([`ALPHA`]).
    pub alpha: f64,
    /// The smallest |δ| that counts ([`NEGLIGIBLE_DELTA`]).
    pub min_effect: f64,
    /// p < alpha and |δ| ≥ min_effect.
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
    let significant = p_value < ALPHA && delta.abs() >= NEGLIGIBLE_DELTA;
    Some(LatencyTest {
        test: "mann_whitney_u".into(),
        n_a: na as u64,
        n_b: nb as u64,
        u,
        z,
        p_value,
        cliffs_delta: delta,
        effect: effect_words(delta).into(),
        ks_d,
        alpha: ALPHA,
        min_effect: NEGLIGIBLE_DELTA,
        significant,
        direction: match (significant, delta > 0.0) {
            (false, _) => LatencyDirection::Same,
            (true, true) => LatencyDirection::Faster,
            (true, false) => LatencyDirection::Slower,
        },
    })
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
    fn empty_histograms_give_no_test() {
        assert!(latency_test(&[], &h(&[(1.0, 3)])).is_none());
        assert!(latency_test(&h(&[(1.0, 0)]), &h(&[(1.0, 3)])).is_none());
    }
}

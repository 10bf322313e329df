//! Unit tests of the comparison (apart from mod.rs so the decision rules read in one file).

use super::*;

fn s(sev: Severity, ms: f64, frac: f64) -> Option<FindingSide> {
    Some(FindingSide {
        severity: sev,
        added_latency_ms: Some(ms),
        affected_fraction: Some(frac),
    })
}

#[test]
fn finding_changes() {
    use Severity::*;
    assert_eq!(finding_change(s(Critical, 40.0, 0.9), None), Change::Fixed);
    assert_eq!(
        finding_change(s(Critical, 40.0, 0.9), s(Info, 40.0, 0.01)),
        Change::Fixed
    );
    assert_eq!(finding_change(None, s(Warning, 5.0, 0.2)), Change::New);
    assert_eq!(
        finding_change(s(Warning, 40.0, 0.9), s(Critical, 40.0, 0.9)),
        Change::Worse
    );
    assert_eq!(
        finding_change(s(Critical, 40.0, 0.9), s(Warning, 40.0, 0.9)),
        Change::Improved
    );
    assert_eq!(
        finding_change(s(Critical, 40.0, 0.9), s(Critical, 42.0, 0.8)),
        Change::Unchanged
    );
    assert_eq!(
        finding_change(s(Critical, 40.0, 0.9), s(Critical, 40.0, 0.3)),
        Change::Improved
    );
    assert_eq!(
        finding_change(s(Warning, 10.0, 0.2), s(Warning, 40.0, 0.2)),
        Change::Worse
    );
    assert_eq!(finding_change(None, s(Info, 1.0, 0.01)), Change::Unchanged);
    assert_eq!(finding_change(s(Info, 1.0, 0.01), None), Change::Unchanged);
}

fn row(id: FindingId, a: Option<FindingSide>, b: Option<FindingSide>) -> FindingChange {
    FindingChange {
        id,
        change: finding_change(a, b),
        a,
        b,
        summary: String::new(),
    }
}

fn lat(direction: LatencyDirection) -> LatencyTest {
    LatencyTest {
        test: "mann_whitney_u".into(),
        n_a: 1000,
        n_b: 1000,
        u: 0.0,
        z: 0.0,
        p_value: 1.0,
        cliffs_delta: 0.0,
        effect: "negligible".into(),
        ks_d: 0.0,
        shift_buckets: 0,
        typical_ratio: 1.0,
        alpha: stats::ALPHA,
        min_effect: stats::NEGLIGIBLE_DELTA,
        min_shift_buckets: stats::MIN_SHIFT_BUCKETS,
        significant: direction != LatencyDirection::Same,
        direction,
    }
}

#[test]
fn overall_rules_in_order() {
    use FindingId::*;
    use LatencyDirection::*;
    use Severity::*;
    use Verdict::*;
    let nagle_same = [row(
        NagleDelayedAck,
        s(Critical, 40.0, 0.9),
        s(Critical, 41.0, 0.9),
    )];
    let nagle_less = [row(
        NagleDelayedAck,
        s(Critical, 40.0, 0.9),
        s(Critical, 40.0, 0.2),
    )];
    let plus_new = [
        row(
            NagleDelayedAck,
            s(Critical, 40.0, 0.9),
            s(Critical, 40.0, 0.9),
        ),
        row(ZeroWindow, None, s(Warning, 5.0, 0.1)),
    ];
    let fixed_and_new = [
        row(NagleDelayedAck, s(Critical, 40.0, 0.9), None),
        row(SlowServerProcessing, None, s(Warning, 3.0, 0.5)),
    ];
    let info_only = [row(PacketLossRetransmission, None, s(Info, 4.0, 0.001))];
    let cases: [(Verdict, Verdict, &[FindingChange], LatencyDirection, Change); 11] = [
        (Problem, Inconclusive, &[], Faster, Change::Inconclusive),
        (Inconclusive, Healthy, &[], Faster, Change::Inconclusive),
        (Problem, Healthy, &[], Same, Change::Fixed),
        (Healthy, Problem, &[], Same, Change::New),
        (Problem, Problem, &nagle_same, Same, Change::Unchanged),
        (Problem, Problem, &nagle_same, Slower, Change::Worse),
        (Problem, Problem, &nagle_less, Same, Change::Improved),
        (Problem, Problem, &plus_new, Same, Change::Worse),
        (Problem, Problem, &fixed_and_new, Faster, Change::Improved),
        (Healthy, Healthy, &info_only, Same, Change::Unchanged),
        (Healthy, Healthy, &info_only, Faster, Change::Improved),
    ];
    for (a, b, rows, dir, want) in cases {
        let perf = match lat(dir).direction {
            Faster => Direction::Better,
            Slower => Direction::Worse,
            Same => Direction::Same,
        };
        assert_eq!(
            overall(a, b, rows, perf),
            want,
            "{a:?} → {b:?}, {dir:?}, {rows:?}"
        );
    }
    assert_eq!(
        overall(Healthy, Healthy, &[], Direction::Same),
        Change::Unchanged
    );
    // Mixed performance moves the verdict neither way.
    assert_eq!(
        overall(Problem, Problem, &nagle_same, Direction::Mixed),
        Change::Unchanged
    );
}

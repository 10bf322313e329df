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

/// A busy host moves a short request's p50 either way (judge's module docs): the run whose
/// request-wait p99 is 1 ms above the other's (or starved by its share) is on a busy host, and
/// its median's direction is withheld within 0.5 ms of p50, whichever run was faster; a real
/// change above that stands.
#[test]
fn a_busy_hosts_median_is_withheld_either_way_and_a_real_change_is_not() {
    use Direction::*;
    use judge::{busy_median, busy_run};
    // Session 19: A beside two busy loops, request-wait p99 15.8–16.2 ms against 0.4–2.1 ms.
    assert_eq!(
        busy_run(Some((0.045, 0.03)), Some((16.2, 0.41))),
        Some(true)
    );
    assert_eq!(
        busy_run(Some((0.03, 0.045)), Some((2.1, 16.2))),
        Some(false)
    );
    // Flagrant starvation by the share alone (no request waits recorded).
    assert_eq!(busy_run(Some((0.261, 0.025)), None), Some(true));
    // Runs of one server with request-wait p99s under 1 ms apart; both busy alike.
    assert_eq!(busy_run(Some((0.03, 0.025)), Some((1.3, 0.4))), None);
    // Session 21's CI: the same server twice, B's waits 2.07 ms at p99 against A's 0.20 ms,
    // its p50 0.20 against 0.10 ms (said "worse" under the old 2 ms): B is the busy run.
    assert_eq!(
        busy_run(Some((0.0036, 0.0212)), Some((0.195, 2.067))),
        Some(false)
    );
    assert_eq!(
        busy_median(Some(false), Worse, Some((0.099, 0.203))),
        Some(false)
    );
    assert_eq!(busy_run(Some((0.23, 0.17)), Some((16.0, 15.0))), None);
    assert_eq!(busy_run(None, None), None);
    let a = Some(true);
    // The starved A's p50 *lower* (0.09 vs 0.20 ms): "B is worse" is withheld …
    assert_eq!(busy_median(a, Worse, Some((0.09, 0.20))), a);
    // … and so is a busy A slower by a few tenths.
    assert_eq!(busy_median(a, Better, Some((0.45, 0.2))), a);
    // Nothing to withhold when the median did not move.
    assert_eq!(busy_median(a, Same, Some((0.09, 0.20))), None);
    // Real changes beside a busy run: compare_median's 2× (3 → 6 ms), the Nagle fix
    // (44 → 3 ms), a much slower B (0.1 → 44 ms).
    assert_eq!(busy_median(a, Worse, Some((3.1, 6.2))), None);
    assert_eq!(busy_median(Some(false), Better, Some((44.0, 3.0))), None);
    assert_eq!(busy_median(a, Worse, Some((0.1, 44.0))), None);
    assert_eq!(busy_median(None, Worse, Some((0.09, 0.20))), None);
}

/// The sentence names the busy run, both request-wait p99s, the bound and the medians it did not
/// compare, in both languages.
#[test]
fn the_busy_median_sentence_says_why() {
    let args = |l: Lang| {
        l.ui(
            "cmp-sum-busy-median",
            &[
                ("run", "A".into()),
                ("wait", "16.2 ms".into()),
                ("other", "B".into()),
                ("other_wait", "0.4 ms".into()),
                ("bound", "0.5 ms".into()),
                ("p50", "0.09 ms → 0.20 ms".into()),
            ],
        )
    };
    for l in [Lang::En, Lang::Zh] {
        let s = args(l);
        for want in ["A", "16.2 ms", "B", "0.4 ms", "0.5 ms", "0.09 ms → 0.20 ms"] {
            assert!(s.contains(want), "{l:?}: {s}");
        }
        assert!(!s.contains('{'), "{l:?}: {s}");
    }
    assert!(args(Lang::En).contains("run A was measured on a busy host"));
}

/// Session 19's wrong story through the whole judgement: the same server, A beside busy loops
/// with a *lower* p50 (0.09 vs 0.20 ms, past the median's 0.1 ms floor) and the histogram test
/// saying B is slower. A's requests waited 5.0 ms at p99 (B 0.5 ms): the median is withheld as
/// the busy run's, not called worse; a real regression beside the same busy A (B 44 ms) is.
#[test]
fn the_busy_runs_lower_p50_is_not_a_regression_and_a_real_one_is() {
    let run = |p50: f64, wait_ms: f64, wait_p99: f64| {
        let mut r = crate::slo::tests::report(2.0, 3.0, 5000, 0);
        let l = r.measurements.load.as_mut().unwrap();
        l.latency_ms.p50 = p50;
        l.cpu_wait = Some(netdoctor_load::CpuWait {
            wait_ms,
            request_wait_p99_ms: Some(wait_p99),
            ..Default::default()
        });
        r
    };
    // Shares 4 % and 3 %: not starved by the share rule.
    let a = run(0.09, 400.0, 5.0);
    let p = judge::judge(&a, &run(0.20, 300.0, 0.5), Some(LatencyDirection::Slower));
    assert_eq!((p.median, p.direction), (Direction::Same, Direction::Same));
    assert_eq!(p.busy.as_deref(), Some("a"));
    assert_eq!(p.starved, None);
    let p = judge::judge(&a, &run(44.0, 300.0, 0.5), Some(LatencyDirection::Slower));
    assert_eq!(
        (p.median, p.direction),
        (Direction::Worse, Direction::Worse)
    );
    assert_eq!(p.busy, None);
    // Both quiet: the same 0.09 → 0.20 ms stays the histogram test's call.
    let quiet = run(0.09, 300.0, 0.6);
    let p = judge::judge(
        &quiet,
        &run(0.20, 300.0, 0.5),
        Some(LatencyDirection::Slower),
    );
    assert_eq!(p.median, Direction::Worse);
    assert_eq!(p.busy, None);
}

/// Session 20's demo on a busy host: the Nagle fix (p50 48.1 → 1.25 ms) with A's requests
/// waiting 100.4 ms for a CPU at p99 (B 35.2 ms). The tail was withheld, yet the sentence read
/// "latency significantly lower (p50 …, p99 113.3 ms → 49.8 ms …); not conclusive about
/// latency". The p99 is now named only in its own note, and the median still says faster.
#[test]
fn a_withheld_percentile_is_named_in_its_note_not_as_evidence() {
    let run = |p50: f64, p99: f64, wait_p99: f64| {
        let mut r = crate::slo::tests::report(p99, p99 * 1.5, 5000, 0);
        let l = r.measurements.load.as_mut().unwrap();
        l.latency_ms.p50 = p50;
        l.cpu_wait = Some(netdoctor_load::CpuWait {
            wait_ms: 300.0,
            request_wait_p99_ms: Some(wait_p99),
            ..Default::default()
        });
        r
    };
    let side = |label: &str, report: Report| Compared {
        label: label.into(),
        origin: Origin::Run,
        file: None,
        report,
    };
    let mut c = Comparison::new(
        side("off", run(48.1, 113.3, 100.4)),
        side("on", run(1.25, 49.8, 35.2)),
    );
    c.performance = Some(judge::judge(
        &c.a.report,
        &c.b.report,
        Some(LatencyDirection::Faster),
    ));
    assert!(c.tail_withheld(), "{:?}", c.performance);
    let en = c.latency_sentence_in(Lang::En);
    let (head, note) = en
        .split_once("the p99 (113.3 ms → 49.8 ms) is not compared: run A's")
        .expect(&en);
    assert!(
        head.contains("latency significantly lower (p50 48.1 ms → 1.25 ms"),
        "{en}"
    );
    assert!(!head.contains("p99"), "{en}");
    assert!(!en.contains("not conclusive about latency"), "{en}");
    assert!(
        note.contains("100.4 ms") && note.contains("35.2 ms"),
        "{en}"
    );
    let zh = c.latency_sentence_in(Lang::Zh);
    assert!(zh.contains("不比较 p99（113.3 ms → 49.8 ms）"), "{zh}");
    assert!(!zh.contains('{'), "{zh}");
}

/// Session 21's CI at load ~8: the Nagle fix over TLS at 200 req/s with run A starved by the
/// share rule (6.2 % against 2.4 %). The old rule withheld every direction that made A the
/// slower ("same", "starved: a") although A's requests had waited 19.2 ms at p99 and its p50
/// was 45.1 ms against 0.23 ms: the waits cannot explain that. The look-alike, session 17's
/// same server with A beside busy loops (p50 0.30 → 0.25 ms, p99 8.0 → 4.2 ms, A's waits
/// 15.8 ms at p99), stays withheld.
#[test]
fn a_starved_run_does_not_hide_a_change_its_waits_cannot_make() {
    let run = |p50: f64, p99: f64, wait_ms: f64, wait_p99: f64| {
        let mut r = crate::slo::tests::report(p99, p99 * 1.5, 2000, 0);
        let l = r.measurements.load.as_mut().unwrap();
        l.latency_ms.p50 = p50;
        l.cpu_wait = Some(netdoctor_load::CpuWait {
            wait_ms,
            request_wait_p99_ms: Some(wait_p99),
            ..Default::default()
        });
        r
    };
    // 10 s, one thread: 624 ms is 6.2 %, 235 ms 2.4 %.
    let p = judge::judge(
        &run(45.119, 59.519, 624.0, 19.183),
        &run(0.228, 5.451, 235.0, 4.883),
        Some(LatencyDirection::Faster),
    );
    assert_eq!(
        (p.median, p.tail, p.direction),
        (Direction::Better, Direction::Better, Direction::Better),
        "{p:?}"
    );
    assert_eq!(p.starved, None);
    let p = judge::judge(
        &run(0.30, 8.0, 624.0, 15.8),
        &run(0.25, 4.2, 235.0, 1.0),
        Some(LatencyDirection::Faster),
    );
    assert_eq!(p.direction, Direction::Same, "{p:?}");
    assert_eq!(p.starved.as_deref(), Some("a"));
}

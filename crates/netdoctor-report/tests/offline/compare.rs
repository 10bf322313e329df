//! Comparisons of real runs: four `netdoctor diagnose --json` reports of the lab (nginx with
//! `tcp_nodelay off` and `on`, two 3 s runs of each, committed in `tests/data/compare/`),
//! compared the way `--compare` and `--baseline` compare them, with the verdicts, the latency
//! test, the JSON schema and the three views checked.

use crate::html_common;

use netdoctor_core::{FindingId, Verdict};
use netdoctor_report::compare::{Change, Compared, Comparison, LatencyDirection, Origin};
use netdoctor_report::{Report, json};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/compare/{name}.json"))
}

fn report(name: &str) -> Report {
    let text = std::fs::read_to_string(data(name)).unwrap();
    json::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn run(name: &str) -> Compared {
    Compared {
        label: name.into(),
        origin: Origin::Run,
        file: None,
        report: report(name),
    }
}

fn compare(a: &str, b: &str) -> Comparison {
    Comparison::new(run(a), run(b))
}

fn validate(v: &serde_json::Value, schema: &str) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_str(schema).unwrap();
    let val = jsonschema::validator_for(&schema).expect("schema compiles");
    val.iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

fn to_json(c: &Comparison) -> serde_json::Value {
    let mut buf = Vec::new();
    json::write_pretty(c, &mut buf).unwrap();
    serde_json::from_slice(&buf).unwrap()
}

fn terminal(c: &Comparison) -> String {
    let mut out = Vec::new();
    netdoctor_report::compare::terminal::render(c, &mut out).unwrap();
    anstream::adapter::strip_str(&String::from_utf8(out).unwrap()).to_string()
}

#[test]
fn the_data_is_what_the_names_say() {
    for n in ["lab-off-1", "lab-off-2"] {
        let r = report(n);
        assert_eq!(r.verdict, Verdict::Problem, "{n}");
        assert_eq!(r.findings[0].id, FindingId::NagleDelayedAck, "{n}");
    }
    for n in ["lab-off-3a", "lab-off-3b"] {
        assert_eq!(report(n).findings[0].id, FindingId::NagleDelayedAck, "{n}");
    }
    for n in ["lab-on-1", "lab-on-2", "lab-on-3a", "lab-on-3b"] {
        assert_eq!(report(n).verdict, Verdict::Healthy, "{n}");
    }
}

#[test]
fn off_then_on_is_fixed_with_p50_from_44_to_a_few_ms() {
    let c = compare("lab-off-1", "lab-on-1");
    assert_eq!(c.verdict, Change::Fixed, "{}", c.summary);
    assert_eq!(c.exit_code(), 0);
    let nagle = c.finding(FindingId::NagleDelayedAck).unwrap();
    assert_eq!(nagle.change, Change::Fixed);
    assert!(nagle.a.is_some() && nagle.b.is_none());
    let p50 = c.metric("latency_p50_ms").unwrap();
    let (a, b) = (p50.a.unwrap(), p50.b.unwrap());
    assert!((38.0..=55.0).contains(&a), "A p50 {a}");
    assert!(b < 10.0, "B p50 {b}");
    assert!(p50.delta.unwrap() < -30.0);
    let rps = c.metric("requests_per_s").unwrap();
    assert!(rps.ratio.unwrap() > 3.0, "req/s ratio {:?}", rps.ratio);
    let t = c.latency.as_ref().unwrap();
    assert!(t.significant);
    assert_eq!(t.direction, LatencyDirection::Faster);
    assert!(t.cliffs_delta > 0.9, "δ {}", t.cliffs_delta);
    assert!(t.shift_buckets >= 15, "shift {}", t.shift_buckets);
    assert!(t.typical_ratio < 0.2, "B/A {}", t.typical_ratio);
    assert_eq!(t.effect, "large");
    assert!(t.ks_d > 0.9);
    assert_eq!(
        t.n_a,
        c.a.report.measurements.load.as_ref().unwrap().requests
    );
    assert!(c.summary.starts_with("B is healthy"), "{}", c.summary);
    assert!(c.summary.contains("nagle_delayed_ack"), "{}", c.summary);
}

#[test]
fn on_then_off_is_a_new_problem() {
    let c = compare("lab-on-1", "lab-off-1");
    assert_eq!(c.verdict, Change::New);
    assert_eq!(c.exit_code(), 1);
    assert_eq!(
        c.finding(FindingId::NagleDelayedAck).unwrap().change,
        Change::New
    );
    assert_eq!(
        c.latency.as_ref().unwrap().direction,
        LatencyDirection::Slower
    );
}

#[test]
fn two_runs_of_the_same_server_are_unchanged() {
    // The 3a/3b pairs are two runs where δ alone said "different": off p50 43.9 → 47.2 ms
    // (δ −0.33: the timer mode crossed one bucket edge), on p50 3.75 → 3.31 ms (δ +0.20).
    for (a, b, code) in [
        ("lab-off-1", "lab-off-2", 1),
        ("lab-off-2", "lab-off-1", 1),
        ("lab-off-3a", "lab-off-3b", 1),
        ("lab-on-1", "lab-on-2", 0),
        ("lab-on-2", "lab-on-1", 0),
        ("lab-on-3a", "lab-on-3b", 0),
    ] {
        let c = compare(a, b);
        assert_eq!(c.verdict, Change::Unchanged, "{a} vs {b}: {}", c.summary);
        let t = c.latency.as_ref().unwrap();
        // Thousands of requests: p is tiny, the effect is not.
        assert!(!t.significant, "{a} vs {b}: {t:?}");
        assert_eq!(t.direction, LatencyDirection::Same);
        assert!(t.shift_buckets.abs() <= 1, "{a} vs {b}: {t:?}");
        assert_eq!(c.exit_code(), code, "{a} vs {b}: B still has the problem");
        for f in &c.findings {
            assert_eq!(f.change, Change::Unchanged, "{a} vs {b}: {f:?}");
        }
    }
    // lab-on-2 saw a few retransmissions (an info finding): a row, not a new problem.
    let c = compare("lab-on-1", "lab-on-2");
    if let Some(f) = c.findings.iter().find(|f| f.b.is_some() && f.a.is_none()) {
        assert!(!f.is_problem(), "{f:?}");
    }
}

#[test]
fn the_json_follows_its_schema_and_reads_back() {
    for (a, b) in [("lab-off-1", "lab-on-1"), ("lab-on-1", "lab-on-2")] {
        let mut c = compare(a, b);
        c.a.origin = Origin::File;
        c.a.file = Some("before.json".into());
        let v = to_json(&c);
        let errors = validate(&v, netdoctor_report::COMPARE_SCHEMA_JSON);
        assert!(errors.is_empty(), "{errors:#?}");
        for side in ["a", "b"] {
            let errors = validate(&v[side]["report"], netdoctor_report::SCHEMA_JSON);
            assert!(errors.is_empty(), "embedded report {side}: {errors:#?}");
        }
        assert_eq!(v["schema"], "netdoctor.compare/v1");
        assert_eq!(v["a"]["file"], "before.json");
        let back: Comparison = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(to_json(&back), v);
    }
    let v = to_json(&compare("lab-off-1", "lab-on-1"));
    assert_eq!(v["verdict"], "fixed");
    assert_eq!(v["findings"][0]["change"], "fixed");
    assert_eq!(v["latency"]["test"], "mann_whitney_u");
    let mut bad = v.clone();
    bad["verdict"] = "better".into();
    assert!(!validate(&bad, netdoctor_report::COMPARE_SCHEMA_JSON).is_empty());
    let mut bad = v;
    bad["latency"]["p_value"] = 2.0.into();
    assert!(!validate(&bad, netdoctor_report::COMPARE_SCHEMA_JSON).is_empty());
}

#[test]
fn the_terminal_view_shows_both_runs_and_the_verdicts() {
    let text = terminal(&compare("lab-off-1", "lab-on-1"));
    for want in [
        "netdoctor compare",
        "latency p50 under load",
        "requests/s under load",
        "B is faster",
        "Mann–Whitney",
        "FIXED",
        "nagle_delayed_ack",
        "Verdict: FIXED",
    ] {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
    let p50 = text
        .lines()
        .find(|l| l.contains("latency p50 under load"))
        .unwrap();
    assert!(p50.contains("ms") && p50.contains('−'), "{p50}");
    let same = terminal(&compare("lab-off-1", "lab-off-2"));
    assert!(same.contains("no significant difference"), "{same}");
    assert!(same.contains("Verdict: UNCHANGED"), "{same}");
}

#[test]
fn the_html_page_is_self_contained_with_both_histograms() {
    let c = compare("lab-off-1", "lab-on-1");
    let mut out = Vec::new();
    netdoctor_report::compare::html::render(&c, &mut out).unwrap();
    let page = String::from_utf8(out).unwrap();
    html_common::save("compare-off-on.html", &page);
    html_common::assert_structure(&page);
    assert!(page.len() < html_common::MAX_BYTES, "{} bytes", page.len());
    assert!(page.contains(r#"id="verdict" class="verdict c-fixed""#));
    assert!(page.contains(r#"id="fc-nagle_delayed_ack""#));
    assert!(page.contains(r#"<span class="badge c-fixed">fixed</span>"#));
    assert!(page.contains(r#"id="latency-test""#));
    let a_bars = page.matches(r#"class="bar a""#).count();
    let b_bars = page.matches(r#"class="bar b""#).count();
    assert!(a_bars > 3 && b_bars > 3, "bars: A {a_bars}, B {b_bars}");
    assert_eq!(page.matches(r#"class="curve a""#).count(), 1);
    assert_eq!(page.matches(r#"class="curve b""#).count(), 1);
    assert!(!page.contains("<script"));
    assert!(page.contains("default-src 'none'"));
}

#[test]
fn both_views_in_chinese_are_whole_and_say_what_changed() {
    use netdoctor_report::Lang;
    let c = compare("lab-off-1", "lab-on-1");
    let mut out = Vec::new();
    netdoctor_report::compare::terminal::render_in(&c, Lang::Zh, &mut out).unwrap();
    let text = anstream::adapter::strip_str(&String::from_utf8(out).unwrap()).to_string();
    let mut out = Vec::new();
    netdoctor_report::compare::html::render_in(&c, Lang::Zh, &mut out).unwrap();
    let page = String::from_utf8(out).unwrap();
    for (name, s) in [("terminal", &text), ("html", &page)] {
        assert!(!s.contains('⟦'), "{name}: a message is missing:\n{s}");
        assert!(!s.contains("{$"), "{name}: an argument is missing:\n{s}");
    }
    let summary = netdoctor_report::i18n::findings::texts(&c.a.report.findings[0], Lang::Zh)
        .summary
        .into_owned();
    for want in [
        "netdoctor 对比",
        "负载下延迟 p50",
        "延迟：B 更快 — 延迟显著降低（p50 44.0 ms → 4.05 ms (−91 %), p99 ",
        "中位请求更快（典型请求 ×",
        "效应大",
        "\n发现\n",
        "结论：已修复 — A 有问题，B 已健康；已修复：nagle_delayed_ack；延迟显著降低（p50 ",
        summary.as_str(),
    ] {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
    // The finding row: the verdict word padded by display width, so the ids line up.
    let row = text
        .lines()
        .find(|l| l.contains(" nagle_delayed_ack ") && l.contains(" A: "))
        .unwrap_or_else(|| panic!("no finding row in:\n{text}"));
    assert!(row.starts_with("  已修复     nagle_delayed_ack"), "{row}");
    for english in ["FIXED", "Findings", "Latency:", "Verdict:", "B is faster"] {
        assert!(!text.contains(english), "{english:?} left in:\n{text}");
    }
    html_common::assert_structure(&page);
    for want in [
        r#"<html lang="zh-CN">"#,
        r#"<span class="badge c-fixed">已修复</span>"#,
        r#"<h2>延迟分布</h2>"#,
        r#"<div class="vword">已修复</div>"#,
        summary.as_str(),
    ] {
        assert!(page.contains(want), "no {want:?} in the page");
    }
    for english in [
        "The two runs",
        "Latency distributions",
        ">fixed<",
        "Share of each",
    ] {
        assert!(!page.contains(english), "{english:?} left in the page");
    }
    // The JSON does not change with the language: the sentence stays English there.
    assert!(c.summary.starts_with("B is healthy where A had a problem"));
}

/// The histogram of a run with `fast` requests at `fast_ms` and `slow` at `slow_ms`, on the
/// load engine's grid, with its percentiles and requests/s set to match (a closed loop of
/// `conns` connections for 3 s).
fn shaped(name: &str, parts: &[(u64, f64)], conns: f64, rate: Option<f64>) -> Compared {
    let mut c = run(name);
    let load = c.report.measurements.load.as_mut().unwrap();
    let grid = load.latency_histogram.clone().unwrap();
    let mut hist = grid.clone();
    for b in &mut hist {
        b.count = 0;
    }
    for &(n, ms) in parts {
        let b = hist
            .iter_mut()
            .find(|b| b.from_ms <= ms && ms < b.to_ms)
            .expect("on the grid");
        b.count += n;
    }
    let total: u64 = parts.iter().map(|p| p.0).sum();
    let at = |q: f64| {
        let rank = (q * total as f64).ceil() as u64;
        let mut seen = 0;
        for &(n, ms) in parts {
            seen += n;
            if seen >= rank {
                return ms;
            }
        }
        parts.last().unwrap().1
    };
    let mean = parts.iter().map(|&(n, ms)| n as f64 * ms).sum::<f64>() / total as f64;
    load.latency_histogram = Some(hist);
    load.latency_ms.p50 = at(0.5);
    load.latency_ms.p90 = at(0.9);
    load.latency_ms.p99 = at(0.99);
    load.latency_ms.mean = mean;
    load.requests = total;
    load.requests_per_s = rate.unwrap_or(conns * 1000.0 / mean);
    load.rate = rate;
    c
}

#[test]
fn a_fix_that_raises_the_median_at_three_times_the_load_is_not_called_slower() {
    // The issue's reproduction (nginx over TLS, Nagle on in A): A's median request found the
    // server idle (1.24 ms) while 40 % of its requests waited ~45 ms; B, with no stall, served
    // 3× the requests and its median is 4.06 ms.
    let a = shaped("lab-off-1", &[(6_000, 1.24), (4_000, 45.0)], 100.0, None);
    let b = shaped("lab-on-1", &[(29_000, 4.06), (1_000, 5.0)], 100.0, None);
    let c = Comparison::new(a, b);
    let t = c.latency.as_ref().unwrap();
    assert_eq!(
        t.direction,
        LatencyDirection::Slower,
        "the median test alone"
    );
    let p = c.performance.as_ref().unwrap();
    use netdoctor_report::compare::Direction;
    assert_eq!(
        (p.median, p.tail, p.throughput, p.direction),
        (
            Direction::Worse,
            Direction::Better,
            Direction::Better,
            Direction::Better
        ),
        "{p:?}"
    );
    assert!(p.median_confounded);
    assert_eq!(c.verdict, Change::Fixed);
    // Every sentence agrees with its numbers: lower, with p99, and why the median rose.
    assert!(!c.summary.contains("higher ("), "{}", c.summary);
    assert!(c.summary.contains("latency significantly lower (p50 1.24 ms → 4.06 ms (+227 %), p99 45.0 ms → 5.00 ms (−89 %), ×4.58 the requests/s)"), "{}", c.summary);
    assert!(
        c.summary.contains("the median rose because B carried ×"),
        "{}",
        c.summary
    );
    let text = terminal(&c);
    let line = text.lines().find(|l| l.starts_with("Latency:")).unwrap();
    assert!(line.starts_with("Latency: B is faster — "), "{line}");
    assert!(!text.contains("B is slower"), "{text}");
    assert!(
        text.contains("the median request is slower (typical request ×"),
        "{text}"
    );
    let v = to_json(&c);
    assert!(validate(&v, netdoctor_report::COMPARE_SCHEMA_JSON).is_empty());
    assert_eq!(v["performance"]["direction"], "better");
}

#[test]
fn at_the_same_rate_a_median_against_the_tail_is_mixed_and_says_both() {
    // Same offered rate: the median is not confounded; it rose while p99 fell: mixed, which
    // moves the verdict neither way, and the sentence names both percentiles.
    let a = shaped(
        "lab-off-1",
        &[(6_000, 1.24), (4_000, 45.0)],
        100.0,
        Some(2_000.0),
    );
    let b = shaped(
        "lab-off-2",
        &[(9_900, 4.06), (100, 6.0)],
        100.0,
        Some(2_000.0),
    );
    let c = Comparison::new(a, b);
    let p = c.performance.as_ref().unwrap();
    use netdoctor_report::compare::Direction;
    assert!(p.same_rate && !p.median_confounded, "{p:?}");
    assert_eq!(p.direction, Direction::Mixed, "{p:?}");
    assert!(
        c.summary.contains(
            "latency mixed (p50 1.24 ms → 4.06 ms (+227 %), p99 45.0 ms → 4.06 ms (−91 %))"
        ),
        "{}",
        c.summary
    );
    assert!(
        !c.summary.contains("requests/s"),
        "same rate: {}",
        c.summary
    );
    let text = terminal(&c);
    assert!(
        text.contains("Latency: mixed: some percentiles lower, others higher — "),
        "{text}"
    );
}

/// Counter deltas on the page have digit groups, as in the terminal view.
#[test]
fn the_html_counter_deltas_are_grouped() {
    let c = compare("lab-off-1", "lab-on-1");
    let mut out = Vec::new();
    netdoctor_report::compare::html::render(&c, &mut out).unwrap();
    let page = String::from_utf8(out).unwrap();
    // Ip.InDelivers: 34 → 13,785 in A, 13,887 → 143,170 in B.
    assert!(
        page.contains("<code>Ip.InDelivers</code></td><td>+13,751</td><td>+129,283</td>"),
        "{}",
        html_common::between(&page, r#"id="counters""#, "</section>")
    );
}

/// `--slo` on a comparison: the page shows both runs' objectives side by side, A (Nagle, p50
/// ≈ 44 ms) failing `p99<20ms`, B passing it; the same in Chinese, whole; without `--slo`, no
/// block.
#[test]
fn the_html_page_shows_both_runs_slo_side_by_side() {
    use netdoctor_report::Lang;
    use netdoctor_report::slo::Slo;
    let slo: Slo = "p99<20ms,errors<1%".parse().unwrap();
    let (mut a, mut b) = (run("lab-off-1"), run("lab-on-1"));
    a.report.slo = Some(slo.evaluate(&a.report));
    b.report.slo = Some(slo.evaluate(&b.report));
    let c = Comparison::new(a, b);
    let mut out = Vec::new();
    netdoctor_report::compare::html::render(&c, &mut out).unwrap();
    let page = String::from_utf8(out).unwrap();
    html_common::assert_structure(&page);
    let block = &page[page.find(r#"<section id="slo">"#).expect("an SLO block")..];
    let block = &block[..block.find("</section>").unwrap()];
    assert!(
        block.contains(r#"<th>A <span class="badge slo-fail">fail</span> <code>p99&lt;20ms,errors&lt;1%</code></th>"#),
        "{block}"
    );
    assert!(
        block.contains(r#"<th>B <span class="badge slo-pass">pass</span>"#),
        "{block}"
    );
    let p99_row = block
        .split("<tr>")
        .find(|r| r.contains("<code>p99&lt;20ms</code>"))
        .expect("a p99 row");
    assert_eq!(
        p99_row.matches(r#"<td class="slo">"#).count(),
        2,
        "{p99_row}"
    );
    assert!(p99_row.contains("over; load"), "A is over: {p99_row}");
    assert!(p99_row.contains("to spare; load"), "B is under: {p99_row}");
    // The runs' section comes first, then the objectives.
    assert!(page.find(r#"id="runs""#).unwrap() < page.find(r#"id="slo""#).unwrap());

    let mut out = Vec::new();
    netdoctor_report::compare::html::render_in(&c, Lang::Zh, &mut out).unwrap();
    let zh = String::from_utf8(out).unwrap();
    assert!(zh.contains("服务等级目标"), "the Chinese heading");
    assert!(!zh.contains('⟦') && !zh.contains("{$"));

    let mut out = Vec::new();
    netdoctor_report::compare::html::render(&compare("lab-off-1", "lab-on-1"), &mut out).unwrap();
    assert!(!String::from_utf8(out).unwrap().contains(r#"id="slo""#));
}

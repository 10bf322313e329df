//! Two runs compared: did the fix work? (`diagnose --compare URL2`, `diagnose --baseline FILE`,
//! and `demo`'s side by side.)
//!
//! [`Comparison::new`] is pure: it takes two [`Report`]s — A, the baseline (before, or the
//! first URL), and B, the candidate (after, or the second URL) — and decides, without I/O:
//!
//! - **per finding** (every finding id in A or B), a [`Change`]: `fixed` (a problem in A, no
//!   problem in B), `new` (no problem in A, one in B), `worse` / `improved` (in both: a higher /
//!   lower severity, or an impact — added latency × affected fraction — at least 1.5× larger /
//!   smaller), else `unchanged`. A finding of severity `info` is not a problem: it gets a row,
//!   but never moves the overall verdict.
//! - **the latency distributions**, with the test of [`stats`] (Mann–Whitney U on the two
//!   histograms, Cliff's δ as the effect size, the Hodges–Lehmann shift as its size):
//!   `faster`, `slower`, or `same` when the difference is not significant. That is about the
//!   median; [`judge`] weighs it with the tail (p99, stalled requests) and the throughput into
//!   [`Performance`] (`better`, `worse`, `same`, `mixed`), which the verdict and every
//!   sentence about latency use, so none contradicts the numbers beside it.
//! - **overall**, a [`Change`] (or `inconclusive`):
//!   1. either run inconclusive → `inconclusive` (nothing can be claimed);
//!   2. A problem, B healthy → `fixed`;
//!   3. A healthy, B problem → `new`;
//!   4. otherwise a finding got worse or performance is worse → `worse`; else a finding was
//!      fixed or improved, or performance is better → `improved`; else a new finding →
//!      `worse`; else `unchanged` (`mixed` performance moves neither way).
//! - **the exit code** ([`Comparison::exit_code`]): 0 when B is healthy and not worse, 1 when B
//!   still has a problem or got worse, 3 when inconclusive.
//!
//! The deltas of the key measurements (requests/s, p50/p90/p99/max latency, errors, SYN RTT,
//! one request's time) and of the kernel counters are descriptive: no test, A and B side by
//! side with B − A. The comparison embeds both reports, so its JSON
//! (`netdoctor.compare/v1`, schema `schema/compare-v1.json`) holds everything the terminal
//! and HTML views show. Sinks: `TerminalSink` ([`terminal`]) and `JsonSink`; the page is
//! [`html::render`].
//!
//! The descriptive deltas (key measurements and kernel counters, no test) are in [`deltas`];
//! the performance judgement in [`judge`]; the statistics in [`stats`].

mod deltas;
pub mod html;
pub mod judge;
pub mod stats;
pub mod terminal;

use crate::i18n::Lang;
use crate::model::Report;
pub use judge::{Direction, Performance};
use netdoctor_core::{FindingId, Severity, Verdict};
use serde::{Deserialize, Serialize};
pub use stats::{LatencyDirection, LatencyTest};

impl crate::sink::Sink<Comparison> for crate::sink::TerminalSink {
    fn write(&self, c: &Comparison, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        terminal::render(c, out)
    }
}

impl crate::sink::Sink<Comparison> for crate::sink::JsonSink {
    fn write(&self, c: &Comparison, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        crate::json::write_pretty(c, out)
    }
}

/// The schema id written into every comparison.
pub const COMPARE_SCHEMA_ID: &str = "netdoctor.compare/v1";
/// The committed JSON Schema for [`Comparison`].
pub const COMPARE_SCHEMA_JSON: &str = include_str!("../../schema/compare-v1.json");

/// An impact at least this many times larger (smaller) is worse (improved).
pub const IMPACT_RATIO: f64 = 1.5;

/// What changed from A to B, for one finding or overall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Fixed,
    Improved,
    Unchanged,
    Worse,
    /// A new problem (B has it, A had not).
    New,
    /// One of the runs could not be judged (overall only).
    Inconclusive,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Fixed => "fixed",
            Change::Improved => "improved",
            Change::Unchanged => "unchanged",
            Change::Worse => "worse",
            Change::New => "new",
            Change::Inconclusive => "inconclusive",
        }
    }
}

impl Change {
    /// The word for this change in `lang` (`fixed`, `已修复` …): the message `cmp-change-<word>`.
    pub fn word(self, lang: Lang) -> String {
        lang.t(&format!("cmp-change-{}", self.as_str()))
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// Where a compared report came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Measured by this run.
    Run,
    /// Read from a saved report (`--baseline FILE`).
    File,
}

/// One of the two compared runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Compared {
    /// A short name for people: the URL, "baseline", "tcp_nodelay off".
    pub label: String,
    pub origin: Origin,
    /// The saved report's path, for [`Origin::File`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub report: Report,
}

/// A finding as one run saw it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FindingSide {
    pub severity: Severity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_latency_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affected_fraction: Option<f64>,
}

impl FindingSide {
    /// Added latency × affected fraction: the ms a finding adds to an average request.
    pub fn impact_ms(&self) -> Option<f64> {
        Some(self.added_latency_ms? * self.affected_fraction?)
    }
}

/// One finding id across the two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingChange {
    pub id: FindingId,
    pub change: Change,
    /// A's finding; absent when A did not have it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<FindingSide>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<FindingSide>,
    /// The summary of the finding (B's when it has it, else A's).
    pub summary: String,
}

impl FindingChange {
    /// True when either run had it above `info` (the rows that move the overall verdict).
    pub fn is_problem(&self) -> bool {
        [self.a, self.b]
            .iter()
            .flatten()
            .any(|s| s.severity > Severity::Info)
    }
}

/// One measurement in both runs. `delta` is B − A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricChange {
    /// Stable name, e.g. `latency_p50_ms`.
    pub name: String,
    /// Unit: `ms`, `req/s`, `count`.
    pub unit: String,
    /// Whether a smaller value is better (latency, errors) or a larger one (req/s).
    pub lower_is_better: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    /// B / A, when A is above zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

/// How much a kernel counter grew during each run (after − before).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterChange {
    pub name: String,
    /// The change during run A; absent when A's report does not list it (it did not change,
    /// or A has no counters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<i64>,
}

/// The common rate both runs of a comparison were measured at, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OfferedRate {
    /// Requests per second offered to each run (open loop).
    pub rate: f64,
    /// `auto`: chosen below the slower side's closed-loop capacity; `given`: `--rate`.
    pub chosen: String,
    /// The closed-loop requests/s of A and B that made the comparison choose it (auto).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop_rps: Option<(f64, f64)>,
}

/// Two runs compared: per-finding and overall verdicts, measurement deltas and the latency
/// test. The JSON contract `netdoctor.compare/v1`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// Always [`COMPARE_SCHEMA_ID`].
    pub schema: String,
    pub verdict: Change,
    /// The verdict in one sentence.
    pub summary: String,
    /// Every finding id of A or B: A's order first, then B's new ones.
    pub findings: Vec<FindingChange>,
    /// The latency test; absent when a run has no latency histogram (with the reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyTest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_skipped: Option<String>,
    /// Latency and throughput judged together ([`judge`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance: Option<Performance>,
    /// Both runs were measured again at this constant rate because their closed-loop
    /// throughputs differed too much to compare latencies (`diagnose --compare`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate: Option<OfferedRate>,
    pub measurements: Vec<MetricChange>,
    pub counters: Vec<CounterChange>,
    pub a: Compared,
    pub b: Compared,
}

fn side_of(r: &Report, id: FindingId) -> Option<FindingSide> {
    r.findings.iter().find(|f| f.id == id).map(|f| FindingSide {
        severity: f.severity,
        added_latency_ms: f.impact.added_latency_ms,
        affected_fraction: f.impact.affected_fraction,
    })
}

/// "113.3 ms → 49.8 ms" (a percentile of A and B), or "-" when it was not measured.
fn a_to_b(v: Option<(f64, f64)>) -> String {
    use crate::terminal::ms;
    v.map_or_else(|| "-".into(), |(a, b)| format!("{} → {}", ms(a), ms(b)))
}

/// The change of one finding between A and B.
pub fn finding_change(a: Option<FindingSide>, b: Option<FindingSide>) -> Change {
    let problem = |s: &Option<FindingSide>| s.is_some_and(|s| s.severity > Severity::Info);
    match (a, b) {
        _ if problem(&a) && !problem(&b) => Change::Fixed,
        _ if !problem(&a) && problem(&b) => Change::New,
        (Some(a), Some(b)) if b.severity > a.severity => Change::Worse,
        (Some(a), Some(b)) if b.severity < a.severity => Change::Improved,
        (Some(a), Some(b)) => match (a.impact_ms(), b.impact_ms()) {
            (Some(x), Some(y)) if y > x * IMPACT_RATIO && y - x > 0.05 => Change::Worse,
            (Some(x), Some(y)) if y * IMPACT_RATIO < x && x - y > 0.05 => Change::Improved,
            _ => Change::Unchanged,
        },
        // Info in one run and absent in the other, or absent in both.
        _ => Change::Unchanged,
    }
}

impl Comparison {
    /// Compares run B with run A (the baseline).
    pub fn new(a: Compared, b: Compared) -> Comparison {
        let (ra, rb) = (&a.report, &b.report);
        let mut ids: Vec<FindingId> = Vec::new();
        for f in ra.findings.iter().chain(&rb.findings) {
            if !ids.contains(&f.id) {
                ids.push(f.id);
            }
        }
        let findings: Vec<FindingChange> = ids
            .into_iter()
            .map(|id| {
                let (fa, fb) = (side_of(ra, id), side_of(rb, id));
                let summary = rb
                    .findings
                    .iter()
                    .chain(&ra.findings)
                    .find(|f| f.id == id)
                    .map(|f| f.summary.clone())
                    .unwrap_or_default();
                FindingChange {
                    id,
                    change: finding_change(fa, fb),
                    a: fa,
                    b: fb,
                    summary,
                }
            })
            .collect();
        let hist = |r: &Report| {
            r.measurements
                .load
                .as_ref()
                .and_then(|l| l.latency_histogram.clone())
                .filter(|h| h.iter().any(|b| b.count > 0))
        };
        let (latency, latency_skipped) = match (hist(ra), hist(rb)) {
            (Some(x), Some(y)) => (stats::latency_test(&x, &y), None),
            (None, _) => (None, Some(no_histogram(&a.label))),
            (_, None) => (None, Some(no_histogram(&b.label))),
        };
        let perf = judge::judge(ra, rb, latency.as_ref().map(|t| t.direction));
        let verdict = overall(ra.verdict, rb.verdict, &findings, perf.direction);
        let mut c = Comparison {
            schema: COMPARE_SCHEMA_ID.into(),
            verdict,
            summary: String::new(),
            findings,
            latency,
            latency_skipped,
            performance: Some(perf),
            offered_rate: None,
            measurements: deltas::measurements(ra, rb),
            counters: deltas::counters(ra, rb),
            a,
            b,
        };
        c.summary = c.summary_in(Lang::En);
        c
    }

    /// 0 when B is healthy and not worse, 1 when B still has a problem or got worse, 3 when
    /// either run is inconclusive.
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            Change::Inconclusive => 3,
            Change::Worse | Change::New => 1,
            _ if self.b.report.verdict == Verdict::Problem => 1,
            _ => 0,
        }
    }

    /// The metric named `name`.
    pub fn metric(&self, name: &str) -> Option<&MetricChange> {
        self.measurements.iter().find(|m| m.name == name)
    }

    /// The change of finding `id`.
    pub fn finding(&self, id: FindingId) -> Option<&FindingChange> {
        self.findings.iter().find(|f| f.id == id)
    }

    /// The verdict in one sentence in `lang` (`summary` holds the English one).
    pub fn summary_in(&self, lang: Lang) -> String {
        let ids = |c: Change| -> Vec<&str> {
            self.findings
                .iter()
                .filter(|f| f.change == c && f.is_problem())
                .map(|f| f.id.as_str())
                .collect()
        };
        let mut parts: Vec<String> = Vec::new();
        for c in [Change::Fixed, Change::Improved, Change::Worse, Change::New] {
            let v = ids(c);
            if !v.is_empty() {
                parts.push(lang.ui(
                    "cmp-sum-list",
                    &[("word", c.word(lang).into()), ("ids", v.join(", ").into())],
                ));
            }
        }
        parts.push(self.latency_sentence_in(lang));
        let head = lang.t(&format!("cmp-head-{}", self.verdict.as_str()));
        let sep = lang.t("term-sep");
        format!("{head}{sep}{}", parts.join(&sep))
    }

    /// The sentence about latency, from [`Performance`]: its direction, then the numbers that
    /// decided it — p50 and p99 A → B, and, when the median moved against the verdict, why
    /// (the offered load) or that the result is mixed. Never "higher" without the percentile.
    pub fn latency_sentence_in(&self, lang: Lang) -> String {
        use crate::terminal::ms;
        let Some(p) = &self.performance else {
            return lang.t("cmp-sum-not-compared");
        };
        if self.latency.is_none() && p.p50_ms.is_none() {
            return lang.t("cmp-sum-not-compared");
        }
        let pct = |(a, b): (f64, f64)| {
            if a > 0.0 {
                let d = (b / a - 1.0) * 100.0;
                format!("{}{:.0} %", if d < 0.0 { "−" } else { "+" }, d.abs())
            } else {
                String::new()
            }
        };
        let pq = |name: &str, v: Option<(f64, f64)>| {
            v.map(|(a, b)| format!("{name} {} → {} ({})", ms(a), ms(b), pct((a, b))))
        };
        // A percentile whose direction was withheld is not listed as evidence of the head: its
        // note names it (session 20's demo on a busy host read "latency significantly lower
        // (…, p99 113.3 ms → 49.8 ms …); not conclusive about latency").
        let mut nums: Vec<String> = Vec::new();
        if p.busy.is_none() {
            nums.extend(pq("p50", p.p50_ms));
        }
        if !self.tail_withheld() {
            nums.extend(pq("p99", p.p99_ms));
        }
        if let Some((a, b)) = p.stalled
            && (a > 0.0 || b > 0.0)
        {
            nums.push(lang.ui(
                "cmp-sum-stalled",
                &[
                    ("a", format!("{:.0} %", a * 100.0).into()),
                    ("b", format!("{:.0} %", b * 100.0).into()),
                ],
            ));
        }
        if let Some((a, b)) = p.requests_per_s
            && a > 0.0
            && !p.same_rate
        {
            nums.push(lang.ui("cmp-sum-rps", &[("ratio", format!("{:.2}", b / a).into())]));
        }
        let head = lang.t(match p.direction {
            Direction::Better => "cmp-sum-faster",
            Direction::Worse => "cmp-sum-slower",
            Direction::Same => "cmp-sum-same",
            Direction::Mixed => "cmp-sum-mixed",
        });
        let mut s = if nums.is_empty() {
            head
        } else {
            lang.ui(
                "cmp-sum-latency",
                &[("lat", head.into()), ("p50", nums.join(", ").into())],
            )
        };
        if let Some(note) = self.median_note_in(lang) {
            s.push_str(&lang.t("term-sep"));
            s.push_str(&note);
        }
        for note in [self.starved_note_in(lang), self.busy_note_in(lang)]
            .into_iter()
            .flatten()
        {
            s.push_str(&lang.t("term-sep"));
            s.push_str(&note);
        }
        s
    }

    /// Why the median's direction was not claimed: the run measured on a busy host, with both
    /// runs' request-wait p99 ([`judge`]'s module docs).
    pub fn busy_note_in(&self, lang: Lang) -> Option<String> {
        let p = self.performance.as_ref()?;
        let busy_a = p.busy.as_deref()? == "a";
        let (run, other) = if busy_a { ("A", "B") } else { ("B", "A") };
        let (a, b) = p.request_wait_p99_ms.unwrap_or((0.0, 0.0));
        let (mine, theirs) = if busy_a { (a, b) } else { (b, a) };
        let ms = |x: f64| format!("{x:.1} ms");
        Some(lang.ui(
            "cmp-sum-busy-median",
            &[
                ("run", run.into()),
                ("wait", ms(mine).into()),
                ("other", other.into()),
                ("other_wait", ms(theirs).into()),
                ("bound", ms(judge::BUSY_MEDIAN_MS).into()),
                ("p50", a_to_b(p.p50_ms).into()),
            ],
        ))
    }

    /// Whether the tail of the waits (not their mean share) withheld the p99's direction.
    fn tail_withheld(&self) -> bool {
        self.performance.as_ref().is_some_and(|p| {
            p.starved.is_some()
                && judge::starved_run(p.cpu_wait_share).is_none()
                && p.request_wait_p99_ms.is_some()
        })
    }

    /// Why the median moved against the verdict (the offered load changed), when it did.
    pub fn median_note_in(&self, lang: Lang) -> Option<String> {
        let p = self.performance.as_ref()?;
        if p.median_confounded {
            let ratio = p
                .requests_per_s
                .map_or(1.0, |(a, b)| if a > 0.0 { b / a } else { 1.0 });
            let id = if p.median == Direction::Worse {
                "cmp-sum-median-load-up"
            } else {
                "cmp-sum-median-load-down"
            };
            Some(lang.ui(id, &[("ratio", format!("{ratio:.2}").into())]))
        } else {
            None
        }
    }

    /// Why a latency direction was not claimed: the run whose load generator was starved of
    /// CPU, with both runs' wait shares ([`judge`]'s module docs).
    pub fn starved_note_in(&self, lang: Lang) -> Option<String> {
        let p = self.performance.as_ref()?;
        let starved_a = p.starved.as_deref()? == "a";
        let (run, other) = if starved_a { ("A", "B") } else { ("B", "A") };
        if let (true, Some((a, b))) = (self.tail_withheld(), p.request_wait_p99_ms) {
            // The tail of the waits, not their mean share, withheld the direction.
            let (mine, theirs) = if starved_a { (a, b) } else { (b, a) };
            let ms = |x: f64| format!("{x:.1} ms");
            return Some(lang.ui(
                "cmp-sum-starved-tail",
                &[
                    ("run", run.into()),
                    ("wait", ms(mine).into()),
                    ("other", other.into()),
                    ("other_wait", ms(theirs).into()),
                    ("p99", a_to_b(p.p99_ms).into()),
                ],
            ));
        }
        let (a, b) = p.cpu_wait_share?;
        let (mine, theirs) = if starved_a { (a, b) } else { (b, a) };
        let pc = |x: f64| format!("{:.0} %", x * 100.0);
        Some(lang.ui(
            "cmp-sum-starved",
            &[
                ("run", run.into()),
                ("share", pc(mine).into()),
                ("other", other.into()),
                ("other_share", pc(theirs).into()),
            ],
        ))
    }

    /// Why the latency distributions were not compared, in `lang` (`latency_skipped` holds
    /// the English reason); `None` when they were.
    pub fn latency_skipped_in(&self, lang: Lang) -> Option<String> {
        self.latency_skipped.as_ref()?;
        let label = if has_histogram(&self.a.report) {
            &self.b.label
        } else {
            &self.a.label
        };
        Some(lang.ui("cmp-no-histogram-run", &[("label", label.as_str().into())]))
    }

    /// The summary of finding `f` in `lang` (B's finding when it has it, else A's), from the
    /// findings catalogue; `f.summary` in English.
    pub fn finding_summary_in(&self, f: &FindingChange, lang: Lang) -> String {
        if lang == Lang::En {
            return f.summary.clone();
        }
        self.b
            .report
            .findings
            .iter()
            .chain(&self.a.report.findings)
            .find(|x| x.id == f.id)
            .map_or_else(
                || f.summary.clone(),
                |x| crate::i18n::findings::texts(x, lang).summary.into_owned(),
            )
    }
}

fn no_histogram(label: &str) -> String {
    Lang::En.ui("cmp-no-histogram-run", &[("label", label.into())])
}

fn has_histogram(r: &Report) -> bool {
    r.measurements
        .load
        .as_ref()
        .and_then(|l| l.latency_histogram.as_ref())
        .is_some_and(|h| h.iter().any(|b| b.count > 0))
}

/// The overall verdict (rules in the module docs).
fn overall(a: Verdict, b: Verdict, findings: &[FindingChange], perf: Direction) -> Change {
    if a == Verdict::Inconclusive || b == Verdict::Inconclusive {
        return Change::Inconclusive;
    }
    match (a, b) {
        (Verdict::Problem, Verdict::Healthy) => return Change::Fixed,
        (Verdict::Healthy, Verdict::Problem) => return Change::New,
        _ => {}
    }
    let any = |c: Change| findings.iter().any(|f| f.is_problem() && f.change == c);
    if any(Change::Worse) || perf == Direction::Worse {
        Change::Worse
    } else if any(Change::Fixed) || any(Change::Improved) || perf == Direction::Better {
        Change::Improved
    } else if any(Change::New) {
        Change::Worse
    } else {
        Change::Unchanged
    }
}

#[cfg(test)]
mod tests;

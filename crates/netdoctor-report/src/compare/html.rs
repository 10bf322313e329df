//! HTML view of a [`Comparison`]: one self-contained page like [`crate::html::render`] (its
//! style sheet, its Content-Security-Policy: no script, nothing fetched; every text escaped),
//! with the overall verdict as the banner, both runs' verdicts, the measurements side by side
//! with B − A, the latency test, the two latency histograms overlaid (share of each run's
//! requests per bucket, so runs of different sizes compare) and the two percentile curves on one
//! axis, per-finding verdicts, and the kernel counters of both runs; with `--slo`, both runs'
//! objectives side by side after the runs (`html::slo`). The charts are drawn with
//! the report page's own SVG primitives (`html::svg`), for the reasons given there. The words
//! come from the UI catalogue in the chosen [`Lang`] ([`render_in`]; [`render`] is English);
//! arguments taken from the reports are escaped before they enter a message.

use super::{Change, Comparison, FindingSide, LatencyDirection, MetricChange, Origin};
use crate::html::svg::{
    L, Linear, Log, R, Svg, W, fmt_ms, fmt_tick, linear_ticks, log_ticks, nice_max, nines,
};
use crate::html::{e, esc};
use crate::i18n::Lang;
use crate::terminal::word_in;
use fluent_bundle::FluentValue;
use netdoctor_core::{Severity, Verdict};
use netdoctor_load::{LatencyBucket, QuantilePoint};
use std::fmt::{self, Write as _};
use std::io::{self, Write};

/// Styles of this page on top of the report's style sheet.
const CSS: &str = ".c-fixed,.c-improved{background:var(--ok)}.c-worse,.c-new{background:var(--crit)}\
.c-unchanged{background:#475467}.c-inconclusive{background:#8a6100}\
.badge.c-fixed,.badge.c-improved{background:var(--ok)}.badge.c-worse,.badge.c-new{background:var(--crit)}\
.badge.c-unchanged{background:#667085}.badge.v-healthy{background:var(--ok)}.badge.v-problem{background:var(--crit)}\
.badge.v-inconclusive{background:#8a6100}.bar.a{fill:#f04438;opacity:.75}.bar.b{fill:#175cd3;opacity:.75}\
.curve.a{stroke:#f04438}.curve.b{stroke:#175cd3}.swatch.a{background:#f04438}.swatch.b{background:#175cd3}\
td.better{color:var(--ok);font-weight:600}td.worse{color:var(--crit);font-weight:600}";

/// Writes the comparison as one self-contained HTML page, in English.
pub fn render(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    render_in(c, Lang::En, out)
}

/// Writes the comparison as one self-contained HTML page in `lang`.
pub fn render_in(c: &Comparison, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    let mut h = String::with_capacity(64 * 1024);
    page(c, lang, &mut h).map_err(io::Error::other)?;
    out.write_all(h.as_bytes())
}

/// The class of a verdict's badge (its JSON word).
fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Problem => "problem",
        Verdict::Healthy => "healthy",
        Verdict::Inconclusive => "inconclusive",
    }
}

/// A message argument.
fn arg<'a>(v: impl Into<FluentValue<'a>>) -> FluentValue<'a> {
    v.into()
}

fn page(c: &Comparison, lang: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        concat!(
            "<!DOCTYPE html>\n<html lang=\"{}\"><head><meta charset=\"utf-8\">",
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<meta name=\"generator\" content=\"netdoctor {}\">",
            "<title>{}</title><style>{}{}{}</style></head><body>\n"
        ),
        lang.tag(),
        env!("CARGO_PKG_VERSION"),
        lang.ui(
            "cmp-html-title",
            &[
                ("verdict", arg(c.verdict.word(lang))),
                ("a", e(&c.a.label)),
                ("b", e(&c.b.label))
            ]
        ),
        crate::html::CSS,
        CSS,
        crate::html::slo::CSS
    )?;
    write!(
        h,
        r#"<header id="verdict" class="verdict c-{v}"><div class="vword">{}</div><h1>{}</h1><p class="vmeta">A: <code>{}</code> · B: <code>{}</code></p></header>"#,
        c.verdict.word(lang).to_uppercase(),
        esc(&c.summary_in(lang)),
        esc(&c.a.label),
        esc(&c.b.label),
        v = c.verdict.as_str()
    )?;
    h.push_str("<main>");
    runs(c, lang, h)?;
    crate::html::slo::section(
        &[
            ("A", c.a.report.slo.as_ref()),
            ("B", c.b.report.slo.as_ref()),
        ],
        lang,
        h,
    )?;
    measurements(c, lang, h)?;
    latency(c, lang, h)?;
    findings(c, lang, h)?;
    counters(c, lang, h)?;
    h.push_str("</main>");
    write!(
        h,
        "<footer>{}</footer></body></html>",
        lang.ui(
            "cmp-html-footer",
            &[
                ("version", arg(env!("CARGO_PKG_VERSION"))),
                ("schema", e(&c.schema))
            ]
        )
    )?;
    h.push('\n');
    Ok(())
}

fn runs(c: &Comparison, lang: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="runs"><h2>{}</h2><table><thead><tr><th></th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr></thead><tbody>"#,
        lang.t("cmp-html-runs"),
        lang.t("cmp-html-th-run"),
        lang.t("cmp-html-th-target"),
        lang.t("cmp-html-th-from"),
        lang.t("cmp-verdict"),
        lang.t("cmp-html-th-findings")
    )?;
    for (name, run) in [("A", &c.a), ("B", &c.b)] {
        let r = &run.report;
        let from = match (run.origin, &run.file) {
            (Origin::File, Some(f)) => lang.ui("cmp-origin-file", &[("file", arg(f.as_str()))]),
            (Origin::File, None) => lang.t("cmp-origin-saved"),
            (Origin::Run, _) => lang.ui(
                "cmp-html-this-run",
                &[("s", arg(format!("{:.1}", r.elapsed_s)))],
            ),
        };
        let ids: Vec<&str> = r
            .findings
            .iter()
            .filter(|f| f.severity > Severity::Info)
            .map(|f| f.id.as_str())
            .collect();
        write!(
            h,
            r#"<tr><th>{name}</th><td>{}</td><td><code>{}</code></td><td>{}</td><td><span class="badge v-{v}">{}</span></td><td>{}</td></tr>"#,
            esc(&run.label),
            esc(&r.target.input),
            esc(&from),
            esc(&word_in(&r.verdict, lang)),
            esc(&if ids.is_empty() {
                lang.t("cmp-html-none-above-info")
            } else {
                ids.join(", ")
            }),
            v = verdict_class(r.verdict)
        )?;
    }
    h.push_str("</tbody></table></section>");
    Ok(())
}

fn label(m: &MetricChange, lang: Lang) -> String {
    super::terminal::label_id(m)
        .map(|id| lang.t(id))
        .unwrap_or_default()
}

fn value(m: &MetricChange, v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if m.unit == "ms" => fmt_ms(v),
        Some(v) => crate::terminal::thousands(v.max(0.0).round() as u64),
    }
}

fn measurements(c: &Comparison, lang: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="measurements"><h2>{}</h2><table class="num"><thead><tr><th></th><th>A</th><th>B</th><th>B − A</th><th>B / A</th></tr></thead><tbody>"#,
        lang.t("term-measured")
    )?;
    for m in &c.measurements {
        if m.a.is_none() && m.b.is_none() {
            continue;
        }
        let class = match (m.delta, m.ratio) {
            (Some(d), Some(r)) if (r - 1.0).abs() >= 0.10 => {
                if (d < 0.0) == m.lower_is_better {
                    "better"
                } else {
                    "worse"
                }
            }
            _ => "",
        };
        let delta = m.delta.map_or("–".to_string(), |d| {
            if m.unit == "ms" {
                format!("{}{}", if d < 0.0 { "−" } else { "+" }, fmt_ms(d.abs()))
            } else {
                crate::terminal::signed_thousands(d.round() as i64)
            }
        });
        write!(
            h,
            r#"<tr><th>{}</th><td>{}</td><td>{}</td><td class="{class}">{}</td><td>{}</td></tr>"#,
            esc(&label(m, lang)),
            value(m, m.a),
            value(m, m.b),
            esc(&delta),
            m.ratio.map_or("–".to_string(), |r| format!("×{r:.2}"))
        )?;
    }
    h.push_str("</tbody></table></section>");
    Ok(())
}

fn latency(c: &Comparison, lang: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="latency"><h2>{}</h2>"#,
        lang.t("cmp-html-latency")
    )?;
    match &c.latency {
        None => {
            let reason = c
                .latency_skipped_in(lang)
                .unwrap_or_else(|| lang.t("cmp-no-histogram"));
            write!(
                h,
                r#"<p class="nm">{}</p>"#,
                lang.ui("cmp-html-not-compared", &[("reason", e(&reason))])
            )?
        }
        Some(t) => {
            // The verdict on latency (median, tail and throughput together) first; the test
            // is the median's evidence.
            let verdict = lang.t(match c.performance.as_ref().map(|p| p.direction) {
                Some(super::Direction::Better) => "cmp-faster",
                Some(super::Direction::Worse) => "cmp-slower",
                Some(super::Direction::Mixed) => "cmp-mixed",
                _ => "cmp-html-same",
            });
            write!(
                h,
                r#"<p class="lead" id="latency-verdict"><b>{}</b> — {}</p>"#,
                esc(&verdict),
                esc(&c.latency_sentence_in(lang))
            )?;
            let head = lang.t(match t.direction {
                LatencyDirection::Faster => "cmp-median-lower",
                LatencyDirection::Slower => "cmp-median-higher",
                LatencyDirection::Same => "cmp-median-same",
            });
            let p = if t.p_value < 0.001 {
                "p &lt; 0.001".to_string()
            } else {
                format!("p = {:.3}", t.p_value)
            };
            let effect = match lang.t(&format!("cmp-effect-{}", t.effect)) {
                w if w.starts_with('⟦') => t.effect.clone(),
                w => w,
            };
            write!(
                h,
                r#"<p class="lead" id="latency-test">{}</p>"#,
                lang.ui(
                    "cmp-html-latency-test",
                    &[
                        ("head", e(&head)),
                        ("ratio", arg(format!("{:.2}", t.typical_ratio))),
                        ("shift", arg(format!("{:+}", -t.shift_buckets))),
                        ("p", arg(p)),
                        ("delta", arg(format!("{:+.2}", t.cliffs_delta))),
                        ("effect", e(&effect)),
                        ("ks", arg(format!("{:.2}", t.ks_d))),
                        ("na", arg(t.n_a.to_string())),
                        ("nb", arg(t.n_b.to_string())),
                        ("alpha", arg(t.alpha.to_string())),
                        ("min_effect", arg(t.min_effect.to_string())),
                        ("min_shift", arg(t.min_shift_buckets.to_string())),
                    ]
                )
            )?;
        }
    }
    let hist = |r: &crate::Report| {
        r.measurements
            .load
            .as_ref()
            .and_then(|l| l.latency_histogram.clone())
    };
    match overlaid_histogram(&hist(&c.a.report), &hist(&c.b.report), lang) {
        Some(svg) => write!(
            h,
            r#"<figure id="histograms"><figcaption>{}</figcaption>{svg}{}</figure>"#,
            lang.t("cmp-html-hist-caption"),
            legend(c)
        )?,
        None => write!(h, r#"<p class="nm">{}</p>"#, lang.t("cmp-html-no-hist"))?,
    }
    let curve = |r: &crate::Report| {
        r.measurements
            .load
            .as_ref()
            .and_then(|l| l.latency_curve.clone())
    };
    if let Some(svg) = overlaid_curves(&curve(&c.a.report), &curve(&c.b.report), lang) {
        write!(
            h,
            r#"<figure id="curves"><figcaption>{}</figcaption>{svg}{}</figure>"#,
            lang.t("cmp-html-curve-caption"),
            legend(c)
        )?;
    }
    h.push_str("</section>");
    Ok(())
}

fn legend(c: &Comparison) -> String {
    format!(
        r#"<ul class="legend"><li><span class="swatch a"></span>A: {}</li><li><span class="swatch b"></span>B: {}</li></ul>"#,
        esc(&c.a.label),
        esc(&c.b.label)
    )
}

/// Both histograms on one log axis, each bucket split into an A half and a B half; heights
/// are each run's share of its own requests.
fn overlaid_histogram(
    a: &Option<Vec<LatencyBucket>>,
    b: &Option<Vec<LatencyBucket>>,
    lang: Lang,
) -> Option<String> {
    let runs: Vec<(&[LatencyBucket], &str)> = [(a, "bar a"), (b, "bar b")]
        .into_iter()
        .filter_map(|(h, class)| {
            h.as_deref()
                .filter(|h| h.iter().any(|b| b.count > 0))
                .map(|h| (h, class))
        })
        .collect();
    if runs.is_empty() {
        return None;
    }
    let lo = runs
        .iter()
        .filter_map(|(h, _)| h.first())
        .map(|b| b.from_ms)
        .fold(f64::INFINITY, f64::min)
        .max(1e-3);
    let hi = runs
        .iter()
        .filter_map(|(h, _)| h.last())
        .map(|b| b.to_ms)
        .fold(0.0, f64::max)
        .max(lo * 1.01);
    let share = |h: &[LatencyBucket], b: &LatencyBucket| {
        b.count as f64 / h.iter().map(|b| b.count).sum::<u64>().max(1) as f64 * 100.0
    };
    let top_share = runs
        .iter()
        .flat_map(|(h, _)| h.iter().map(|b| share(h, b)))
        .fold(0.0, f64::max);
    let (height, top, bottom) = (280.0, 20.0, 236.0);
    let x = Log {
        d0: lo,
        d1: hi,
        r0: L,
        r1: W - R,
    };
    let max = nice_max(top_share);
    let y = Linear {
        d0: 0.0,
        d1: max,
        r0: bottom,
        r1: top,
    };
    let mut s = Svg::new(W, height, "chart", &lang.t("cmp-svg-histograms"));
    for t in linear_ticks(max) {
        let py = y.at(t);
        s.line(L, py, W - R, py, "grid");
        s.text(L - 6.0, py + 4.0, "end", "tick", &fmt_tick(t));
    }
    for t in log_ticks(lo, hi) {
        let px = x.at(t);
        s.line(px, bottom, px, bottom + 5.0, "axis");
        s.text(px, bottom + 19.0, "middle", "tick", &fmt_tick(t));
    }
    for (i, (hist, class)) in runs.iter().enumerate() {
        let name = if class.ends_with('a') { "A" } else { "B" };
        for k in hist.iter().filter(|k| k.count > 0) {
            let (x0, x1) = (x.at(k.from_ms.max(lo)), x.at(k.to_ms));
            let half = (x1 - x0) / 2.0;
            let left = x0 + half * i as f64;
            let pct = share(hist, k);
            let py = y.at(pct).min(bottom - 2.0);
            let tip = lang.ui(
                "cmp-svg-tip",
                &[
                    ("name", arg(name)),
                    ("from", arg(fmt_ms(k.from_ms))),
                    ("to", arg(fmt_ms(k.to_ms))),
                    ("count", arg(k.count.to_string())),
                    ("pct", arg(format!("{pct:.1}"))),
                ],
            );
            s.rect(left + 0.25, py, half - 0.5, bottom - py, class, Some(&tip));
        }
    }
    s.line(L, bottom, W - R, bottom, "axis");
    s.text(
        (L + W - R) / 2.0,
        height - 6.0,
        "middle",
        "axis-title",
        &lang.t("chart-latency-log"),
    );
    s.text(
        14.0,
        top - 6.0,
        "start",
        "axis-title",
        &lang.t("cmp-svg-share"),
    );
    Some(s.finish())
}

/// Both percentile curves on one "nines" axis and a log latency axis (so 2 ms and 44 ms both
/// read).
fn overlaid_curves(
    a: &Option<Vec<QuantilePoint>>,
    b: &Option<Vec<QuantilePoint>>,
    lang: Lang,
) -> Option<String> {
    let runs: Vec<(&[QuantilePoint], &str)> = [(a, "curve a"), (b, "curve b")]
        .into_iter()
        .filter_map(|(c, class)| c.as_deref().filter(|c| c.len() >= 2).map(|c| (c, class)))
        .collect();
    if runs.is_empty() {
        return None;
    }
    let last = runs
        .iter()
        .flat_map(|(c, _)| c.iter())
        .filter(|p| p.quantile < 1.0)
        .map(|p| nines(p.quantile))
        .fold(0.0, f64::max);
    let end = last.ceil().max(1.0) + 0.5;
    let xpos = |q: f64| if q >= 1.0 { end } else { nines(q) };
    let all = || runs.iter().flat_map(|(c, _)| c.iter()).map(|p| p.ms);
    let lo = all().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let hi = all().fold(0.0, f64::max);
    if !(lo.is_finite() && hi > 0.0) {
        return None;
    }
    let (lo, hi) = (lo * 0.8, (hi * 1.25).max(lo * 2.0));
    let (height, top, bottom) = (260.0, 20.0, 216.0);
    let x = Linear {
        d0: 0.0,
        d1: end,
        r0: L,
        r1: W - R,
    };
    let y = Log {
        d0: lo,
        d1: hi,
        r0: bottom,
        r1: top,
    };
    let mut s = Svg::new(W, height, "chart", &lang.t("cmp-svg-curves"));
    for t in log_ticks(lo, hi) {
        let py = y.at(t);
        s.line(L, py, W - R, py, "grid");
        s.text(L - 6.0, py + 4.0, "end", "tick", &fmt_tick(t));
    }
    let labels = ["0 %", "90 %", "99 %", "99.9 %", "99.99 %", "99.999 %"];
    for (k, lab) in labels.iter().enumerate() {
        if k as f64 > end - 0.5 {
            break;
        }
        let px = x.at(k as f64);
        s.line(px, bottom, px, bottom + 5.0, "axis");
        s.text(px, bottom + 19.0, "middle", "tick", lab);
    }
    s.text(
        x.at(end),
        bottom + 19.0,
        "middle",
        "tick",
        &lang.t("cmp-svg-max"),
    );
    s.line(L, bottom, W - R, bottom, "axis");
    for (c, class) in &runs {
        let pts: Vec<(f64, f64)> = c
            .iter()
            .map(|p| (x.at(xpos(p.quantile)), y.at(p.ms.max(lo))))
            .collect();
        s.polyline(&pts, class);
    }
    s.text(
        (L + W - R) / 2.0,
        height - 6.0,
        "middle",
        "axis-title",
        &lang.t("chart-percentile"),
    );
    s.text(
        14.0,
        top - 6.0,
        "start",
        "axis-title",
        &lang.t("cmp-svg-ms-log"),
    );
    Some(s.finish())
}

fn side(s: &Option<FindingSide>, lang: Lang) -> String {
    match s {
        None => "–".into(),
        Some(s) => {
            let sev = word_in(&s.severity, lang);
            match (s.added_latency_ms, s.affected_fraction) {
                (Some(ms), Some(f)) => lang.ui(
                    "cmp-html-side-impact",
                    &[
                        ("sev", arg(sev)),
                        ("ms", arg(crate::i18n::findings::latency_text(ms))),
                        ("pct", arg(crate::i18n::findings::pct_text(f))),
                    ],
                ),
                (Some(ms), None) => lang.ui(
                    "cmp-html-side-added",
                    &[
                        ("sev", arg(sev)),
                        ("ms", arg(crate::i18n::findings::latency_text(ms))),
                    ],
                ),
                _ => sev,
            }
        }
    }
}

fn findings(c: &Comparison, lang: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="findings"><h2>{}</h2>"#,
        lang.t("cmp-findings")
    )?;
    if c.findings.is_empty() {
        write!(
            h,
            r#"<p class="none">{}</p></section>"#,
            lang.t("cmp-html-no-findings")
        )?;
        return Ok(());
    }
    write!(
        h,
        r#"<table><thead><tr><th>{}</th><th>{}</th><th>A</th><th>B</th><th>{}</th></tr></thead><tbody>"#,
        lang.t("cmp-verdict"),
        lang.t("cmp-html-th-finding"),
        lang.t("cmp-html-th-summary")
    )?;
    for f in &c.findings {
        write!(
            h,
            r#"<tr class="fc" id="fc-{id}"><td><span class="badge c-{c}">{}</span></td><td><code>{id}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            esc(&f.change.word(lang)),
            esc(&side(&f.a, lang)),
            esc(&side(&f.b, lang)),
            esc(&c.finding_summary_in(f, lang)),
            c = f.change.as_str(),
            id = f.id.as_str()
        )?;
    }
    h.push_str("</tbody></table>");
    if c.verdict != Change::Fixed
        && let Some(f) =
            c.b.report
                .findings
                .iter()
                .find(|f| f.severity > Severity::Info)
        && !f.fix.is_empty()
    {
        write!(
            h,
            r#"<p class="fix"><b>{}</b> {}</p>"#,
            lang.ui("cmp-html-still-to-fix", &[("id", arg(f.id.as_str()))]),
            esc(&crate::i18n::findings::texts(f, lang).fix)
        )?;
    }
    h.push_str("</section>");
    Ok(())
}

fn counters(c: &Comparison, lang: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="counters"><h2>{}</h2>"#,
        lang.t("cmp-html-counters")
    )?;
    if c.counters.is_empty() {
        write!(
            h,
            r#"<p class="nm">{}</p></section>"#,
            lang.t("cmp-html-no-counters")
        )?;
        return Ok(());
    }
    write!(
        h,
        r#"<table class="num"><thead><tr><th>{}</th><th>A</th><th>B</th></tr></thead><tbody>"#,
        lang.t("html-th-counter")
    )?;
    let v = |x: Option<i64>| crate::terminal::signed_thousands(x.unwrap_or(0));
    for k in &c.counters {
        write!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            esc(&k.name),
            v(k.a),
            v(k.b)
        )?;
    }
    h.push_str("</tbody></table></section>");
    Ok(())
}

//! HTML view of a [`Comparison`]: one self-contained page like [`crate::html::render`] (its
//! style sheet, its Content-Security-Policy: no script, nothing fetched; every text escaped),
//! with the overall verdict as the banner, both runs' verdicts, the measurements side by side
//! with B − A, the latency test, the two latency histograms overlaid (share of each run's
//! requests per bucket, so runs of different sizes compare) and the two percentile curves on one
//! axis, per-finding verdicts, and the kernel counters of both runs. The charts are drawn with
//! the report page's own SVG primitives (`html::svg`), for the reasons given there.

use super::{Change, Comparison, FindingSide, LatencyDirection, MetricChange, Origin};
use crate::html::esc;
use crate::html::svg::{Linear, Log, Svg, fmt_ms, fmt_tick, linear_ticks, log_ticks, nice_max};
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

const W: f64 = 820.0;
const L: f64 = 64.0;
const R: f64 = 24.0;

/// Writes the comparison as one self-contained HTML page.
pub fn render(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let mut h = String::with_capacity(64 * 1024);
    page(c, &mut h).map_err(io::Error::other)?;
    out.write_all(h.as_bytes())
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Problem => "problem",
        Verdict::Healthy => "healthy",
        Verdict::Inconclusive => "inconclusive",
    }
}

fn page(c: &Comparison, h: &mut String) -> fmt::Result {
    write!(
        h,
        concat!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<meta name=\"generator\" content=\"netdoctor {}\">",
            "<title>netdoctor compare: {} – {} vs {}</title><style>{}{}</style></head><body>\n"
        ),
        env!("CARGO_PKG_VERSION"),
        c.verdict,
        esc(&c.a.label),
        esc(&c.b.label),
        crate::html::CSS,
        CSS
    )?;
    write!(
        h,
        r#"<header id="verdict" class="verdict c-{v}"><div class="vword">{}</div><h1>{}</h1><p class="vmeta">A: <code>{}</code> · B: <code>{}</code></p></header>"#,
        c.verdict.as_str().to_uppercase(),
        esc(&c.summary),
        esc(&c.a.label),
        esc(&c.b.label),
        v = c.verdict.as_str()
    )?;
    h.push_str("<main>");
    runs(c, h)?;
    measurements(c, h)?;
    latency(c, h)?;
    findings(c, h)?;
    counters(c, h)?;
    h.push_str("</main>");
    write!(
        h,
        r#"<footer>netdoctor {} · comparison schema {} · this page is self-contained: no script, nothing fetched</footer></body></html>"#,
        env!("CARGO_PKG_VERSION"),
        esc(&c.schema)
    )?;
    h.push('\n');
    Ok(())
}

fn runs(c: &Comparison, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="runs"><h2>The two runs</h2><table><thead><tr><th></th><th>run</th><th>target</th><th>from</th><th>verdict</th><th>findings</th></tr></thead><tbody>"#);
    for (name, run) in [("A", &c.a), ("B", &c.b)] {
        let r = &run.report;
        let from = match (run.origin, &run.file) {
            (Origin::File, Some(f)) => format!("saved report {f}"),
            (Origin::File, None) => "saved report".into(),
            (Origin::Run, _) => format!("this run ({:.1} s)", r.elapsed_s),
        };
        let ids: Vec<&str> = r
            .findings
            .iter()
            .filter(|f| f.severity > Severity::Info)
            .map(|f| f.id.as_str())
            .collect();
        write!(
            h,
            r#"<tr><th>{name}</th><td>{}</td><td><code>{}</code></td><td>{}</td><td><span class="badge v-{v}">{v}</span></td><td>{}</td></tr>"#,
            esc(&run.label),
            esc(&r.target.input),
            esc(&from),
            esc(&if ids.is_empty() {
                "none above info".to_string()
            } else {
                ids.join(", ")
            }),
            v = verdict_word(r.verdict)
        )?;
    }
    h.push_str("</tbody></table></section>");
    Ok(())
}

fn label(m: &MetricChange) -> &'static str {
    match m.name.as_str() {
        "syn_rtt_median_ms" => "SYN RTT (median)",
        "one_request_ms" => "one request (total)",
        "requests_per_s" => "requests/s under load",
        "latency_p50_ms" => "latency p50 under load",
        "latency_p90_ms" => "latency p90",
        "latency_p99_ms" => "latency p99",
        "latency_max_ms" => "latency max",
        "requests" => "requests",
        "errors" => "errors",
        _ => "",
    }
}

fn value(m: &MetricChange, v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if m.unit == "ms" => fmt_ms(v),
        Some(v) => crate::terminal::thousands(v.max(0.0).round() as u64),
    }
}

fn measurements(c: &Comparison, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="measurements"><h2>Measured</h2><table class="num"><thead><tr><th></th><th>A</th><th>B</th><th>B − A</th><th>B / A</th></tr></thead><tbody>"#);
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
                format!("{d:+.0}")
            }
        });
        write!(
            h,
            r#"<tr><th>{}</th><td>{}</td><td>{}</td><td class="{class}">{}</td><td>{}</td></tr>"#,
            label(m),
            value(m, m.a),
            value(m, m.b),
            esc(&delta),
            m.ratio.map_or("–".to_string(), |r| format!("×{r:.2}"))
        )?;
    }
    h.push_str("</tbody></table></section>");
    Ok(())
}

fn latency(c: &Comparison, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="latency"><h2>Latency distributions</h2>"#);
    match &c.latency {
        None => write!(
            h,
            r#"<p class="nm">Latency not compared: {}.</p>"#,
            esc(c.latency_skipped.as_deref().unwrap_or("no histogram"))
        )?,
        Some(t) => {
            let head = match t.direction {
                LatencyDirection::Faster => "B is faster",
                LatencyDirection::Slower => "B is slower",
                LatencyDirection::Same => "No significant difference",
            };
            let p = if t.p_value < 0.001 {
                "p &lt; 0.001".to_string()
            } else {
                format!("p = {:.3}", t.p_value)
            };
            write!(
                h,
                r#"<p class="lead" id="latency-test"><b>{head}</b>: a typical B request takes ×{:.2} the time of a typical A request (Hodges–Lehmann, {:+} histogram buckets); Mann–Whitney U on the two histograms, {p}, Cliff's δ {:+.2} ({} effect), Kolmogorov–Smirnov D {:.2}; {} and {} requests. A difference counts when p &lt; {}, |δ| ≥ {} and the shift is at least {} buckets (×1.26).</p>"#,
                t.typical_ratio,
                -t.shift_buckets,
                t.cliffs_delta,
                esc(&t.effect),
                t.ks_d,
                t.n_a,
                t.n_b,
                t.alpha,
                t.min_effect,
                t.min_shift_buckets
            )?;
        }
    }
    let hist = |r: &crate::Report| {
        r.measurements
            .load
            .as_ref()
            .and_then(|l| l.latency_histogram.clone())
    };
    match overlaid_histogram(&hist(&c.a.report), &hist(&c.b.report)) {
        Some(svg) => write!(
            h,
            r#"<figure id="histograms"><figcaption>Share of each run's requests per latency bucket (log scale)</figcaption>{svg}{}</figure>"#,
            legend(c)
        )?,
        None => h.push_str(r#"<p class="nm">Latency histograms not measured.</p>"#),
    }
    let curve = |r: &crate::Report| {
        r.measurements
            .load
            .as_ref()
            .and_then(|l| l.latency_curve.clone())
    };
    if let Some(svg) = overlaid_curves(&curve(&c.a.report), &curve(&c.b.report)) {
        write!(
            h,
            r#"<figure id="curves"><figcaption>Latency at each percentile</figcaption>{svg}{}</figure>"#,
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
    let mut s = Svg::new(W, height, "chart", "latency histograms of A and B");
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
            let tip = format!(
                "{name}: {} – {}: {} requests ({pct:.1} %)",
                fmt_ms(k.from_ms),
                fmt_ms(k.to_ms),
                k.count
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
        "latency (ms, log scale)",
    );
    s.text(14.0, top - 6.0, "start", "axis-title", "% of requests");
    Some(s.finish())
}

/// `1 − q` as decades: 0 at q = 0, 2 at 99 %.
fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-9).log10()
}

/// Both percentile curves on one "nines" axis and a log latency axis (so 2 ms and 44 ms both
/// read).
fn overlaid_curves(
    a: &Option<Vec<QuantilePoint>>,
    b: &Option<Vec<QuantilePoint>>,
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
    let mut s = Svg::new(W, height, "chart", "latency percentile curves of A and B");
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
    s.text(x.at(end), bottom + 19.0, "middle", "tick", "max");
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
        "percentile (of requests at or below the latency)",
    );
    s.text(14.0, top - 6.0, "start", "axis-title", "ms (log)");
    Some(s.finish())
}

fn side(s: &Option<FindingSide>) -> String {
    match s {
        None => "–".into(),
        Some(s) => {
            let sev = match s.severity {
                Severity::Critical => "critical",
                Severity::Warning => "warning",
                Severity::Info => "info",
            };
            match (s.added_latency_ms, s.affected_fraction) {
                (Some(ms), Some(f)) => format!("{sev}: +{} on {:.0} %", fmt_ms(ms), f * 100.0),
                (Some(ms), None) => format!("{sev}: +{}", fmt_ms(ms)),
                _ => sev.to_string(),
            }
        }
    }
}

fn findings(c: &Comparison, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="findings"><h2>Findings</h2>"#);
    if c.findings.is_empty() {
        h.push_str(r#"<p class="none">No finding in either run.</p></section>"#);
        return Ok(());
    }
    h.push_str(r#"<table><thead><tr><th>verdict</th><th>finding</th><th>A</th><th>B</th><th>summary</th></tr></thead><tbody>"#);
    for f in &c.findings {
        write!(
            h,
            r#"<tr class="fc" id="fc-{id}"><td><span class="badge c-{c}">{c}</span></td><td><code>{id}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            esc(&side(&f.a)),
            esc(&side(&f.b)),
            esc(&f.summary),
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
            r#"<p class="fix"><b>Still to fix in B ({}):</b> {}</p>"#,
            f.id.as_str(),
            esc(&f.fix)
        )?;
    }
    h.push_str("</section>");
    Ok(())
}

fn counters(c: &Comparison, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="counters"><h2>Kernel counters: change during each run</h2>"#);
    if c.counters.is_empty() {
        h.push_str(r#"<p class="nm">Kernel counters not measured in either run.</p></section>"#);
        return Ok(());
    }
    h.push_str(
        r#"<table class="num"><thead><tr><th>counter</th><th>A</th><th>B</th></tr></thead><tbody>"#,
    );
    let v = |x: Option<i64>| x.map_or("0".to_string(), |x| format!("{x:+}"));
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

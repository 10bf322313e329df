//! Terminal view of a [`Comparison`]: the two runs side by side with B − A, the latency test in
//! words, one line per finding with its verdict, the kernel counters that matter, and the
//! overall verdict last (where the eye lands). Colour as in `crate::terminal`: always written,
//! stripped by the binary's output stream when it is not a terminal. The words come from the UI
//! catalogue in the chosen [`Lang`] (`*_in` functions; the others write English), finding
//! summaries from the findings catalogue; columns are padded by display width (a CJK character
//! takes two cells).

use super::{Change, Comparison, Direction, FindingSide, LatencyDirection, MetricChange, Origin};
use crate::i18n::findings::{latency_text, pct_text};
use crate::i18n::{self, Lang};
use crate::terminal::{ms, thousands, word_in};
use netdoctor_core::Severity;
use owo_colors::OwoColorize;
use std::io::{self, Write};

const NAME: usize = 24;
const COL: usize = 28;

/// The word of a change, coloured: good news green, bad news red.
pub fn change_word(c: Change) -> String {
    change_word_in(c, Lang::En)
}

/// [`change_word`] in `lang`.
pub fn change_word_in(c: Change, lang: Lang) -> String {
    let w = c.word(lang).to_uppercase();
    match c {
        Change::Fixed | Change::Improved => w.green().bold().to_string(),
        Change::Worse | Change::New => w.red().bold().to_string(),
        Change::Inconclusive => w.yellow().bold().to_string(),
        Change::Unchanged => w.bold().to_string(),
    }
}

fn value(m: &MetricChange, v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if m.unit == "ms" => ms(v),
        Some(v) => thousands(v.max(0.0).round() as u64),
    }
}

/// `−39.9 ms (−91 %)`, `×9.66`, `+3`: B − A for people.
fn delta(m: &MetricChange) -> String {
    let Some(d) = m.delta else {
        return String::new();
    };
    let text = if m.unit == "ms" {
        let sign = if d < 0.0 { "−" } else { "+" };
        match m.ratio {
            Some(r) if (r - 1.0).abs() >= 0.005 => {
                format!(
                    "{sign}{} ({sign}{:.0} %)",
                    ms(d.abs()),
                    (r - 1.0).abs() * 100.0
                )
            }
            _ => format!("{sign}{}", ms(d.abs())),
        }
    } else if m.unit == "req/s" {
        match m.ratio {
            Some(r) => format!("×{r:.2}"),
            None => format!("{d:+.0}"),
        }
    } else if d == 0.0 {
        "0".into()
    } else {
        let sign = if d < 0.0 { "−" } else { "+" };
        format!("{sign}{}", thousands(d.abs().round() as u64))
    };
    // Colour only a change of at least 10 %: smaller ones are run-to-run noise.
    let big = m.ratio.map_or(d != 0.0, |r| (r - 1.0).abs() >= 0.10);
    let better = if m.lower_is_better { d < 0.0 } else { d > 0.0 };
    match (big, better) {
        (false, _) => text,
        (true, true) => text.green().to_string(),
        (true, false) => text.red().to_string(),
    }
}

/// The catalogue message naming metric `m` (shared with the HTML view); `None` for a metric
/// this version does not know.
pub(crate) fn label_id(m: &MetricChange) -> Option<&'static str> {
    Some(match m.name.as_str() {
        "syn_rtt_median_ms" => "cmp-syn",
        "one_request_ms" => "cmp-one-request",
        "requests_per_s" => "cmp-rps",
        "latency_p50_ms" => "cmp-p50",
        "latency_p90_ms" => "cmp-p90",
        "latency_p99_ms" => "cmp-p99",
        "latency_max_ms" => "cmp-max",
        "requests" => "cmp-requests",
        "errors" => "cmp-errors",
        _ => return None,
    })
}

fn label(m: &MetricChange, lang: Lang) -> String {
    label_id(m).map(|id| lang.t(id)).unwrap_or_default()
}

fn side(s: &Option<FindingSide>, lang: Lang) -> String {
    match s {
        None => "-".into(),
        Some(s) => {
            let sev = word_in(&s.severity, lang);
            match (s.added_latency_ms, s.affected_fraction) {
                (Some(ms_), Some(f)) => lang.ui(
                    "cmp-side-impact",
                    &[
                        ("sev", sev.into()),
                        ("ms", latency_text(ms_).into()),
                        ("pct", pct_text(f).into()),
                    ],
                ),
                (Some(ms_), None) => lang.ui(
                    "cmp-side-added",
                    &[("sev", sev.into()), ("ms", latency_text(ms_).into())],
                ),
                _ => sev,
            }
        }
    }
}

/// Pads visible text to `w` terminal cells (colour codes do not count, a CJK character counts
/// two).
fn pad(s: &str, w: usize) -> String {
    let visible = strip_len(s);
    format!("{s}{}", " ".repeat(w.saturating_sub(visible)))
}

/// Terminal cells of `s` without ANSI escape sequences.
fn strip_len(s: &str) -> usize {
    let mut n = 0;
    let mut esc = false;
    let mut buf = [0u8; 4];
    for ch in s.chars() {
        match (esc, ch) {
            (false, '\x1b') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, _) => n += i18n::width(ch.encode_utf8(&mut buf)),
        }
    }
    n
}

/// `heading` and `rest` with a space between them, none after a full-width colon.
fn heading(heading: &str, rest: &str) -> String {
    let sep = if heading.ends_with('：') { "" } else { " " };
    format!("{}{sep}{rest}", heading.bold())
}

/// Writes the side-by-side table and the latency test (no header, no verdict line).
pub fn render_table(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    render_table_in(c, Lang::En, out)
}

/// [`render_table`] in `lang`.
pub fn render_table_in(c: &Comparison, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    let head = |label: &str, fallback: &str| {
        if i18n::width(label) <= COL - 2 {
            label.to_string()
        } else {
            fallback.to_string()
        }
    };
    writeln!(
        out,
        "  {} {} {} {}",
        pad("", NAME),
        pad(&head(&c.a.label, "A").bold().to_string(), COL),
        pad(&head(&c.b.label, "B").bold().to_string(), COL),
        "B − A".bold()
    )?;
    let verdict = |r: &crate::Report| {
        let v = word_in(&r.verdict, lang);
        match r.findings.iter().find(|f| f.severity > Severity::Info) {
            Some(f) => format!("{v}: {}", f.id),
            None => v,
        }
    };
    writeln!(
        out,
        "  {} {} {}",
        pad(&lang.t("cmp-verdict"), NAME),
        pad(&verdict(&c.a.report), COL),
        verdict(&c.b.report)
    )?;
    for m in &c.measurements {
        if m.a.is_none() && m.b.is_none() {
            continue;
        }
        writeln!(
            out,
            "  {} {} {} {}",
            pad(&label(m, lang), NAME),
            pad(&value(m, m.a), COL),
            pad(&value(m, m.b), COL),
            delta(m)
        )?;
    }
    writeln!(out)?;
    latency_line(c, lang, out)
}

fn latency_line(c: &Comparison, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    let title = lang.t("cmp-latency");
    let Some(t) = &c.latency else {
        let reason = c
            .latency_skipped_in(lang)
            .unwrap_or_else(|| lang.t("cmp-no-histogram"));
        let rest = lang.ui("cmp-latency-not-compared", &[("reason", reason.into())]);
        return writeln!(out, "{}", heading(&title, &rest));
    };
    // The verdict on latency is the judgement of the median, the tail and the throughput
    // together; the histogram test below is the median's evidence.
    let head = match c.performance.as_ref().map(|p| p.direction) {
        Some(Direction::Better) => lang.t("cmp-faster").green().bold().to_string(),
        Some(Direction::Worse) => lang.t("cmp-slower").red().bold().to_string(),
        Some(Direction::Mixed) => lang.t("cmp-mixed").yellow().bold().to_string(),
        _ => lang.t("cmp-same").bold().to_string(),
    };
    writeln!(
        out,
        "{}",
        heading(&title, &format!("{head} — {}", c.latency_sentence_in(lang)))
    )?;
    let head = match t.direction {
        LatencyDirection::Faster => lang.t("cmp-median-lower"),
        LatencyDirection::Slower => lang.t("cmp-median-higher"),
        LatencyDirection::Same => lang.t("cmp-median-same"),
    };
    let p = if t.p_value < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {:.3}", t.p_value)
    };
    let effect = match lang.t(&format!("cmp-effect-{}", t.effect)) {
        w if w.starts_with('⟦') => t.effect.clone(),
        w => w,
    };
    let rest = lang.ui(
        "cmp-latency-test",
        &[
            ("head", head.into()),
            ("ratio", format!("{:.2}", t.typical_ratio).into()),
            ("p", p.into()),
            ("delta", format!("{:+.2}", t.cliffs_delta).into()),
            ("effect", effect.into()),
            ("ks", format!("{:.2}", t.ks_d).into()),
            ("na", thousands(t.n_a).into()),
            ("nb", thousands(t.n_b).into()),
        ],
    );
    writeln!(out, "  {rest}")
}

/// Writes the whole comparison, in English.
pub fn render(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    render_in(c, Lang::En, out)
}

/// Writes the whole comparison in `lang`.
pub fn render_in(c: &Comparison, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", lang.t("cmp-title").bold())?;
    for (name, run) in [("A", &c.a), ("B", &c.b)] {
        let origin = match (run.origin, &run.file) {
            (Origin::File, Some(f)) => lang.ui("cmp-origin-file", &[("file", f.as_str().into())]),
            (Origin::File, None) => lang.t("cmp-origin-saved"),
            (Origin::Run, _) => lang.t("cmp-origin-run"),
        };
        let target = &run.report.target.input;
        let label = if run.label == *target {
            String::new()
        } else {
            format!("{}: ", run.label)
        };
        writeln!(out, "  {} {label}{target}  ({origin})", name.bold())?;
    }
    writeln!(out)?;
    render_body_in(c, lang, out)
}

/// Everything below the header: the side-by-side table, the latency test, the findings with
/// their verdicts, the counters and the overall verdict (what `demo` shows), in English.
pub fn render_body(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    render_body_in(c, Lang::En, out)
}

/// [`render_body`] in `lang`.
pub fn render_body_in(c: &Comparison, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    render_table_in(c, lang, out)?;
    writeln!(out)?;
    writeln!(out, "{}", lang.t("cmp-findings").bold())?;
    if c.findings.is_empty() {
        writeln!(out, "  {}", lang.t("cmp-no-findings"))?;
    }
    for f in &c.findings {
        writeln!(
            out,
            "  {} {} A: {} → B: {}",
            pad(&change_word_in(f.change, lang), 10),
            pad(&f.id.as_str().bold().to_string(), 27),
            pad(&side(&f.a, lang), 24),
            side(&f.b, lang)
        )?;
        writeln!(out, "  {:10} {}", "", c.finding_summary_in(f, lang))?;
    }
    let shown: Vec<_> = c
        .counters
        .iter()
        .filter(|k| {
            crate::terminal::is_interesting_counter(&k.name) || k.name == "TcpExt.DelayedACKs"
        })
        .collect();
    if !shown.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", lang.t("cmp-counters").bold())?;
        let v = |x: Option<i64>| crate::terminal::signed_thousands(x.unwrap_or(0));
        for k in shown {
            writeln!(
                out,
                "  {} {} {}",
                pad(&k.name, NAME),
                pad(&v(k.a), COL),
                v(k.b)
            )?;
        }
    }
    if let Some(r) = &c.offered_rate {
        writeln!(out)?;
        let rate = thousands(r.rate.round() as u64);
        let line = match r.closed_loop_rps {
            Some((a, b)) => lang.ui(
                "cmp-offered-auto",
                &[
                    ("rate", rate.into()),
                    ("a", thousands(a.round() as u64).into()),
                    ("b", thousands(b.round() as u64).into()),
                ],
            ),
            None => lang.ui("cmp-offered-given", &[("rate", rate.into())]),
        };
        writeln!(out, "{}", heading(&lang.t("cmp-offered"), &line))?;
    }
    for (name, run) in [("A", &c.a), ("B", &c.b)] {
        if let Some(s) = &run.report.slo {
            writeln!(out)?;
            crate::terminal::render_slo(s, name, lang, out)?;
        }
    }
    writeln!(out)?;
    let rest = format!(
        "{} — {}",
        change_word_in(c.verdict, lang),
        c.summary_in(lang)
    );
    writeln!(out, "{}", heading(&lang.t("term-verdict"), &rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Session 20's demo on a busy host: a loss on 5 of 83,351 requests read "info +4.81 ms on
    /// 0 %" in the table while its sentence said "on 5 of 83351 requests".
    #[test]
    fn a_finding_cell_never_rounds_a_share_or_a_wait_to_zero() {
        let cell = |ms, f| {
            let s = Some(FindingSide {
                severity: Severity::Info,
                added_latency_ms: Some(ms),
                affected_fraction: Some(f),
            });
            (side(&s, Lang::En), side(&s, Lang::Zh))
        };
        let (en, zh) = cell(4.81, 5.0 / 83_351.0);
        assert!(en.ends_with("+4.81 ms on <1 %"), "{en}");
        assert!(zh.contains("<1 %"), "{zh}");
        let (en, _) = cell(0.004, 0.5);
        assert!(en.ends_with("+4 µs on 50 %"), "{en}");
        let (en, _) = cell(43.6, 0.83);
        assert!(en.ends_with("+43.6 ms on 83 %"), "{en}");
    }

    #[test]
    fn padding_ignores_colour_and_counts_cells() {
        let s = "FIXED".green().to_string();
        assert_eq!(strip_len(&s), 5);
        assert_eq!(strip_len(&pad(&s, 10)), 10);
        let zh = change_word_in(Change::Fixed, Lang::Zh);
        assert_eq!(strip_len(&zh), 6, "{zh}");
        assert_eq!(strip_len(&pad(&zh, 10)), 10);
        assert_eq!(strip_len("−39.9 ms ×9.66"), 14);
    }
}

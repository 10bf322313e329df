//! Terminal view of a [`Comparison`]: the two runs side by side with B − A, the latency test in
//! words, one line per finding with its verdict, the kernel counters that matter, and the
//! overall verdict last (where the eye lands). Colour as in `crate::terminal`: always written,
//! stripped by the binary's output stream when it is not a terminal.

use super::{Change, Comparison, FindingSide, LatencyDirection, MetricChange, Origin};
use crate::terminal::{ms, thousands};
use netdoctor_core::{Severity, Verdict};
use owo_colors::OwoColorize;
use std::io::{self, Write};

const NAME: usize = 24;
const COL: usize = 28;

/// Counters worth a line (every changed counter is in the JSON).
const COUNTERS: [&str; 9] = [
    "TcpExt.ListenOverflows",
    "TcpExt.ListenDrops",
    "TcpExt.TCPTimeouts",
    "Tcp.RetransSegs",
    "TcpExt.TCPSynRetrans",
    "TcpExt.SyncookiesSent",
    "TcpExt.TCPAbortOnOverflow",
    "Tcp.AttemptFails",
    "TcpExt.DelayedACKs",
];

/// The word of a change, coloured: good news green, bad news red.
pub fn change_word(c: Change) -> String {
    let w = c.as_str().to_uppercase();
    match c {
        Change::Fixed | Change::Improved => w.green().bold().to_string(),
        Change::Worse | Change::New => w.red().bold().to_string(),
        Change::Inconclusive => w.yellow().bold().to_string(),
        Change::Unchanged => w.bold().to_string(),
    }
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Problem => "problem",
        Verdict::Healthy => "healthy",
        Verdict::Inconclusive => "inconclusive",
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

fn side(s: &Option<FindingSide>) -> String {
    match s {
        None => "-".into(),
        Some(s) => {
            let sev = match s.severity {
                Severity::Critical => "critical",
                Severity::Warning => "warning",
                Severity::Info => "info",
            };
            match (s.added_latency_ms, s.affected_fraction) {
                (Some(ms_), Some(f)) => format!("{sev} +{} on {:.0} %", ms(ms_), f * 100.0),
                (Some(ms_), None) => format!("{sev} +{}", ms(ms_)),
                _ => sev.to_string(),
            }
        }
    }
}

/// Pads visible text to `w` columns (colour codes do not count).
fn pad(s: &str, w: usize) -> String {
    let visible = strip_len(s);
    format!("{s}{}", " ".repeat(w.saturating_sub(visible)))
}

/// Characters of `s` without ANSI escape sequences.
fn strip_len(s: &str) -> usize {
    let mut n = 0;
    let mut esc = false;
    for ch in s.chars() {
        match (esc, ch) {
            (false, '\x1b') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// Writes the side-by-side table and the latency test (no header, no verdict line).
pub fn render_table(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let head = |label: &str, fallback: &str| {
        if label.chars().count() <= COL - 2 {
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
        let v = verdict_word(r.verdict);
        match r.findings.iter().find(|f| f.severity > Severity::Info) {
            Some(f) => format!("{v}: {}", f.id),
            None => v.to_string(),
        }
    };
    writeln!(
        out,
        "  {} {} {}",
        pad("verdict", NAME),
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
            pad(label(m), NAME),
            pad(&value(m, m.a), COL),
            pad(&value(m, m.b), COL),
            delta(m)
        )?;
    }
    writeln!(out)?;
    latency_line(c, out)
}

fn latency_line(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let Some(t) = &c.latency else {
        return writeln!(
            out,
            "{} not compared: {}",
            "Latency:".bold(),
            c.latency_skipped.as_deref().unwrap_or("no histogram")
        );
    };
    let head = match t.direction {
        LatencyDirection::Faster => "B is faster".green().bold().to_string(),
        LatencyDirection::Slower => "B is slower".red().bold().to_string(),
        LatencyDirection::Same => "no significant difference".bold().to_string(),
    };
    let p = if t.p_value < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {:.3}", t.p_value)
    };
    writeln!(
        out,
        "{} {head} (typical request ×{:.2}; Mann–Whitney U on the histograms: {p}, Cliff's δ {:+.2}, {} effect; KS D {:.2}; {} vs {} requests)",
        "Latency:".bold(),
        t.typical_ratio,
        t.cliffs_delta,
        t.effect,
        t.ks_d,
        thousands(t.n_a),
        thousands(t.n_b)
    )
}

/// Writes the whole comparison.
pub fn render(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", "netdoctor compare".bold())?;
    for (name, run) in [("A", &c.a), ("B", &c.b)] {
        let origin = match (run.origin, &run.file) {
            (Origin::File, Some(f)) => format!("saved report {f}"),
            (Origin::File, None) => "saved report".to_string(),
            (Origin::Run, _) => "this run".to_string(),
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
    render_body(c, out)
}

/// Everything below the header: the side-by-side table, the latency test, the findings with
/// their verdicts, the counters and the overall verdict (what `demo` shows).
pub fn render_body(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    render_table(c, out)?;
    writeln!(out)?;
    writeln!(out, "{}", "Findings".bold())?;
    if c.findings.is_empty() {
        writeln!(out, "  none in either run")?;
    }
    for f in &c.findings {
        writeln!(
            out,
            "  {} {} A: {} → B: {}",
            pad(&change_word(f.change), 10),
            pad(&f.id.as_str().bold().to_string(), 27),
            pad(&side(&f.a), 24),
            side(&f.b)
        )?;
        writeln!(out, "  {:10} {}", "", f.summary)?;
    }
    let shown: Vec<_> = c
        .counters
        .iter()
        .filter(|k| COUNTERS.contains(&k.name.as_str()))
        .collect();
    if !shown.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", "Kernel counters (change during each run)".bold())?;
        let v = |x: Option<i64>| x.map_or("0".to_string(), |x| format!("{x:+}"));
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
    writeln!(out)?;
    writeln!(
        out,
        "{} {} — {}",
        "Verdict:".bold(),
        change_word(c.verdict),
        c.summary
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_ignores_colour() {
        let s = "FIXED".green().to_string();
        assert_eq!(strip_len(&s), 5);
        assert_eq!(strip_len(&pad(&s, 10)), 10);
    }
}

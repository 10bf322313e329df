//! HTML sink: the report as one self-contained page for people to read and pass around.
//!
//! [`render`] writes a single HTML file with its CSS inline and its charts as inline SVG written
//! here, and no script at all. In order: the verdict and the findings (severity, summary,
//! explanation, fix); the latency distribution (histogram and percentile curve); requests/s
//! and latency over the run; for each finding with packet evidence, a ladder diagram of one
//! connection like Wireshark's flow graph ([`ladder`]); the capture's figures, kernel counter
//! deltas and socket options as tables; the per-request breakdown as a stacked bar; the checks.
//! A section whose data the report does not hold says "not measured" (with the check's reason
//! when there is one); nothing is drawn from made-up data.
//!
//! Files: this one puts the page together (head, verdict banner, escaping); `findings` writes
//! what the run concluded (finding cards, flow graphs), `measurements` what it measured
//! (latencies, time line, tables, breakdown, checks); `charts` and `ladder` draw the SVG on the
//! primitives of `svg`; `report.css` is the inline style sheet.
//!
//! **Why hand-written SVG, not a vendored chart library.** The charts are four simple shapes
//! (bars on a log axis, a polyline, a stacked bar) plus the ladder diagram, which no chart
//! library draws. A JavaScript library (Chart.js, uPlot, ECharts: 50–900 KB) would make the file
//! several times bigger, need script to show anything (blank when printed, in a mail viewer, or
//! with script blocked), and would have to be vendored and kept patched. A Rust plotting crate
//! (plotters with its SVG backend) would add a dozen crates to the build for what is here a few
//! hundred lines, and its text layout needs font metrics we do not have offline. SVG written at
//! render time is static, prints, is small (tens of KB for a 10 s run), and tests can read it as
//! text.
//!
//! **Safety.** Every piece of text from the report goes through [`esc`] (capture file names,
//! process names, error messages and notes can come from a hostile capture or host). The page
//! also carries a Content-Security-Policy that forbids scripts and every fetch
//! (`default-src 'none'`), so even a missed escape could neither run script nor load anything.

mod bulk;
mod charts;
mod findings;
mod ladder;
mod measurements;
pub mod slo;
pub(crate) mod svg;

use crate::i18n::Lang;
use crate::model::{CheckStatus, Report};
use fluent_bundle::FluentValue;
use netdoctor_core::{Severity, Verdict};
use std::fmt::{self, Write as _};
use std::io::{self, Write};

/// Text made safe for HTML element content and quoted attribute values.
pub struct Esc<'a>(pub &'a str);

/// Escapes `&`, `<`, `>`, `"` and `'`.
pub fn esc(s: &str) -> Esc<'_> {
    Esc(s)
}

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut last = 0;
        for (i, b) in self.0.bytes().enumerate() {
            let rep = match b {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                b'\'' => "&#39;",
                _ => continue,
            };
            f.write_str(&self.0[last..i])?;
            f.write_str(rep)?;
            last = i + 1;
        }
        f.write_str(&self.0[last..])
    }
}

/// Escaped text in which `` `code` `` spans (as the core's texts write option names) become
/// `<code>`; text with an odd number of backticks is only escaped.
struct Rich<'a>(&'a str);

impl fmt::Display for Rich<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.matches('`').count().is_multiple_of(2) {
            return write!(f, "{}", esc(self.0));
        }
        for (i, part) in self.0.split('`').enumerate() {
            if i % 2 == 1 {
                write!(f, "<code>{}</code>", esc(part))?;
            } else {
                write!(f, "{}", esc(part))?;
            }
        }
        Ok(())
    }
}

pub(crate) const CSS: &str = include_str!("report.css");

/// Writes the report as one self-contained HTML page, in English.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    render_in(report, Lang::En, out)
}

/// Writes the report as one self-contained HTML page, its headings, labels and finding texts
/// in `lang` (`<html lang>` says which).
pub fn render_in(report: &Report, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    let mut h = String::with_capacity(64 * 1024);
    page(report, lang, &mut h).map_err(io::Error::other)?;
    out.write_all(h.as_bytes())
}

/// A message argument.
fn a<'a>(v: impl Into<FluentValue<'a>>) -> FluentValue<'a> {
    v.into()
}

/// An argument made safe for HTML.
pub(crate) fn e(v: &str) -> FluentValue<'static> {
    FluentValue::from(esc(v).to_string())
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Problem => "problem",
        Verdict::Healthy => "healthy",
        Verdict::Inconclusive => "inconclusive",
    }
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "critical",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

/// A serde enum's JSON string (`side`, `layer`, check names): stable words, whatever the type.
fn word<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// The reason of the check named `name`, when it was skipped or failed.
fn check_reason(report: &Report, name: &str) -> Option<String> {
    report
        .checks
        .iter()
        .find(|c| word(&c.name) == name && c.status != CheckStatus::Ok)
        .map(|c| c.reason.clone().unwrap_or_default())
}

/// "`what` not measured" (`what` is a message id), with the reason when there is one.
fn not_measured(l: Lang, h: &mut String, what: &str, reason: Option<String>) -> fmt::Result {
    let what = l.t(what);
    match reason.filter(|r| !r.is_empty()) {
        Some(r) => write!(
            h,
            r#"<p class="nm">{}</p>"#,
            l.ui(
                "html-not-measured-because",
                &[("what", e(&what)), ("reason", e(&r))]
            )
        ),
        None => write!(
            h,
            r#"<p class="nm">{}</p>"#,
            l.ui("html-not-measured", &[("what", e(&what))])
        ),
    }
}

fn page(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    let verdict = crate::terminal::word_in(&r.verdict, l);
    write!(
        h,
        concat!(
            "<!DOCTYPE html>\n<html lang=\"{}\"><head><meta charset=\"utf-8\">",
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<meta name=\"generator\" content=\"netdoctor {}\">",
            "<title>netdoctor: {} – {}</title><style>{}</style></head><body>\n"
        ),
        l.tag(),
        env!("CARGO_PKG_VERSION"),
        esc(&verdict),
        esc(&r.target.input),
        CSS
    )?;
    header(r, l, h)?;
    h.push_str("<main>");
    findings::findings(r, l, h)?;
    measurements::latency(r, l, h)?;
    measurements::over_time(r, l, h)?;
    findings::packets(r, l, h)?;
    measurements::tables(r, l, h)?;
    measurements::breakdown(r, l, h)?;
    measurements::checks(r, l, h)?;
    h.push_str("</main>");
    write!(
        h,
        r#"<footer>{}</footer></body></html>"#,
        l.ui(
            "html-footer",
            &[
                ("version", a(env!("CARGO_PKG_VERSION"))),
                ("schema", e(&word(&r.schema)))
            ]
        )
    )?;
    h.push('\n');
    Ok(())
}

fn header(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    let verdict = verdict_word(r.verdict);
    let headline = match (r.verdict, r.findings.first()) {
        (Verdict::Problem, Some(f)) => crate::i18n::findings::texts(f, l).summary.into_owned(),
        (Verdict::Problem, None) => l.t("html-headline-problem"),
        (Verdict::Healthy, _) => l.t("html-headline-healthy"),
        (Verdict::Inconclusive, _) => l.t("html-headline-inconclusive"),
    };
    let count = |s: Severity| r.findings.iter().filter(|f| f.severity == s).count();
    write!(
        h,
        r#"<header id="verdict" class="verdict v-{verdict}"><div class="vword">{}</div><h1>{}</h1><p class="vmeta">"#,
        esc(&crate::terminal::word_in(&r.verdict, l).to_uppercase()),
        esc(&headline)
    )?;
    h.push_str(&l.ui(
        "html-finding-counts",
        &[
            ("n", a(r.findings.len())),
            ("critical", a(count(Severity::Critical).to_string())),
            ("warning", a(count(Severity::Warning).to_string())),
            ("info", a(count(Severity::Info).to_string())),
        ],
    ));
    h.push_str(" · ");
    write!(
        h,
        "<code>netdoctor {}</code> <code>{}</code>",
        esc(&word(&r.command)),
        esc(&r.target.input)
    )?;
    let mut about: Vec<&str> = r.target.address.iter().map(String::as_str).collect();
    about.extend(r.target.protocol.map(|p| p.as_str()));
    if !about.is_empty() {
        write!(h, " ({})", esc(&about.join(", ")))?;
    }
    if r.passive {
        write!(h, " · {}", esc(&l.t("term-passive")))?;
    }
    writeln!(
        h,
        " · {}</p></header>",
        l.ui("html-took", &[("s", a(format!("{:.1}", r.elapsed_s)))])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_the_protocol_and_a_passive_run() {
        let mut r = Report::new(
            crate::ReportCommand::Diagnose,
            crate::Target {
                input: "tcp://10.0.0.5:6379".into(),
                address: Some("10.0.0.5:6379".into()),
                protocol: Some(crate::TargetProtocol::Tcp),
            },
        );
        r.passive = true;
        let mut page = Vec::new();
        render(&r, &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("(10.0.0.5:6379, tcp)"), "{page}");
        assert!(
            page.contains("passive: the target&#39;s real traffic was watched"),
            "{page}"
        );
        r.passive = false;
        let mut page = Vec::new();
        render(&r, &mut page).unwrap();
        assert!(!String::from_utf8(page).unwrap().contains("passive:"));
    }

    #[test]
    fn esc_escapes_markup_and_quotes() {
        assert_eq!(
            esc(r#"<a href="x" onclick='y'>&</a>"#).to_string(),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(esc("plain → ü").to_string(), "plain → ü");
        assert_eq!(esc("").to_string(), "");
        assert_eq!(
            Rich("set `tcp_nodelay on;` <now>").to_string(),
            "set <code>tcp_nodelay on;</code> &lt;now&gt;"
        );
        assert_eq!(Rich("odd ` <b>").to_string(), "odd ` &lt;b&gt;");
        assert_eq!(
            Rich("`<script>`").to_string(),
            "<code>&lt;script&gt;</code>"
        );
    }
}

//! Terminal sink: the report as a person reads it under pressure — what was measured, the
//! verdict, why (with the packets that show it), and what to change.
//!
//! Colour is written unconditionally with owo-colors; the binary writes through a stream that
//! strips it when stdout is not a terminal or `NO_COLOR` is set, so this module stays pure.
//!
//! The words come from the report's language ([`Lang`]: the UI catalogue for headings and
//! labels, [`i18n::findings`] for finding texts); `measured` writes the "Measured" block.

use crate::i18n::{self, Lang, pad};
use crate::model::{CheckStatus, Report};
use fluent_bundle::FluentValue;
use netdoctor_core::{Evidence, Finding, Severity, Verdict};
use owo_colors::OwoColorize;
use std::io::{self, Write};

mod measured;
mod slo;
mod tail;
mod verdict;

pub(crate) use measured::is_interesting_counter;
use measured::render_measurements;
pub use measured::{breakdown_line, breakdown_line_in};
pub use slo::{objective_detail, render_slo, result_word};
pub use tail::{bands, cause_name, tail_lines_in};

const WIDTH: usize = 92;

/// A message argument.
fn a<'a>(v: impl Into<FluentValue<'a>>) -> FluentValue<'a> {
    v.into()
}

/// Writes the full report for one target, in English.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    render_in(report, Lang::En, out)
}

/// Writes the full report for one target in `lang` (headings from the UI catalogue, finding
/// texts from [`i18n::findings`]).
pub fn render_in(report: &Report, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    // "(10.0.0.5:6379, tcp)": the address when the input does not show it, the protocol
    // when the scheme does not (`host:port` means http).
    let t = &report.target;
    let mut about: Vec<&str> = Vec::new();
    about.extend(t.address.as_deref().filter(|a| !t.input.contains(*a)));
    about.extend(
        t.protocol
            .map(|p| p.as_str())
            .filter(|p| !t.input.to_ascii_lowercase().starts_with(&format!("{p}://"))),
    );
    writeln!(
        out,
        "{} {}{}",
        format!("netdoctor {}", report.command.as_str()).bold(),
        t.input,
        if about.is_empty() {
            String::new()
        } else {
            format!("  ({})", about.join(", "))
        }
    )?;
    if report.passive {
        writeln!(out, "{}", lang.t("term-passive"))?;
    }
    if report.interrupted {
        writeln!(out, "{}", lang.t("term-interrupted").yellow())?;
    }
    writeln!(out)?;
    render_measurements(report, lang, out)?;
    writeln!(out)?;
    render_verdict(report, lang, out)?;
    if let Some(s) = &report.slo {
        slo::render_slo(s, "", lang, out)?;
    }
    for f in &report.findings {
        writeln!(out)?;
        render_finding(f, lang, out)?;
    }
    writeln!(out)?;
    render_checks(report, lang, out)
}

/// The word for a verdict (`problem`), severity, side, layer or check status in `lang`: the
/// message `word-<json word>`.
pub fn word_in<T: serde::Serialize>(v: &T, lang: Lang) -> String {
    let w = match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => return String::new(),
    };
    lang.t(&format!("word-{w}"))
}

fn render_verdict(report: &Report, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    let upper = word_in(&report.verdict, lang).to_uppercase();
    let label = match report.verdict {
        Verdict::Problem => upper.red().bold().to_string(),
        Verdict::Healthy => upper.green().bold().to_string(),
        Verdict::Inconclusive => upper.yellow().bold().to_string(),
    };
    let tail = match report.verdict {
        Verdict::Problem => verdict::problem_tail(report, lang),
        Verdict::Healthy => lang.t("term-verdict-healthy"),
        Verdict::Inconclusive => lang.t("term-verdict-inconclusive"),
    };
    let heading = lang.t("term-verdict");
    // No space after a full-width colon.
    let sep = if heading.ends_with('：') { "" } else { " " };
    writeln!(out, "{}{sep}{label} — {tail}", heading.bold())
}

fn render_finding(f: &Finding, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    let upper = word_in(&f.severity, lang).to_uppercase();
    let sev = match f.severity {
        Severity::Critical => upper.red().bold().to_string(),
        Severity::Warning => upper.yellow().bold().to_string(),
        Severity::Info => upper.blue().bold().to_string(),
    };
    let meta = lang.ui(
        "term-finding-meta",
        &[
            ("layer", a(word_in(&f.layer, lang))),
            ("side", a(word_in(&f.side, lang))),
            ("confidence", a(format!("{:.2}", f.confidence))),
        ],
    );
    writeln!(out, "[{sev}] {}  {meta}", f.id.as_str().bold())?;
    let texts = i18n::findings::texts(f, lang);
    writeln!(out, "  {}", texts.summary.bold())?;
    if let Some(root) = f.caused_by {
        writeln!(
            out,
            "  {}",
            lang.ui("term-consequence-of", &[("root", a(root.as_str()))])
        )?;
    }
    if !f.consequences.is_empty() {
        let ids: Vec<&str> = f.consequences.iter().map(|c| c.as_str()).collect();
        writeln!(
            out,
            "  {}",
            lang.ui("term-root-cause-of", &[("ids", a(ids.join(", ")))])
        )?;
    }
    if !texts.explanation.is_empty() {
        writeln!(out, "  {}", lang.t("term-why").bold())?;
        for line in wrap(&texts.explanation, WIDTH - 4) {
            writeln!(out, "    {line}")?;
        }
    }
    if !f.evidence.is_empty() {
        writeln!(out, "  {}", lang.t("term-evidence").bold())?;
        for ev in &f.evidence {
            render_evidence(f.id, ev, lang, out)?;
        }
    }
    if !texts.fix.is_empty() {
        writeln!(out, "  {}", lang.t("term-fix").green().bold())?;
        for line in wrap(&texts.fix, WIDTH - 4) {
            writeln!(out, "    {line}")?;
        }
    }
    Ok(())
}

fn render_evidence(
    id: netdoctor_core::FindingId,
    ev: &Evidence,
    lang: Lang,
    out: &mut dyn Write,
) -> io::Result<()> {
    match ev {
        Evidence::Packets {
            connection,
            packets,
            note,
        } => {
            let line = lang.ui(
                "term-ev-connection",
                &[("connection", a(connection.as_str()))],
            );
            writeln!(out, "    {line}")?;
            for p in packets {
                writeln!(
                    out,
                    "      #{:<8} {:>11.6}s  {}  {}",
                    p.frame, p.time, p.dir, p.desc
                )?;
            }
            note_lines(&i18n::findings::packets_note(id, packets, note, lang), out)?;
        }
        Evidence::Counter {
            name,
            before,
            after,
            note,
        } => {
            let line = lang.ui(
                "term-ev-counter",
                &[
                    ("name", a(name.as_str())),
                    ("before", a(before.to_string())),
                    ("after", a(after.to_string())),
                ],
            );
            writeln!(out, "    {line}")?;
            note_lines(note, out)?;
        }
        Evidence::SocketOption {
            pid,
            fd,
            option,
            value,
            note,
        } => {
            let line = lang.ui(
                "term-ev-socket",
                &[
                    ("pid", a(pid.to_string())),
                    ("fd", a(fd.to_string())),
                    ("option", a(option.as_str())),
                    ("value", a(value.as_str())),
                ],
            );
            writeln!(out, "    {line}")?;
            note_lines(note, out)?;
        }
        Evidence::Probe { probe, note } => {
            writeln!(
                out,
                "    {}",
                lang.ui("term-ev-probe", &[("probe", a(probe.as_str()))])
            )?;
            note_lines(note, out)?;
        }
        Evidence::Log { line, note } => {
            writeln!(
                out,
                "    {}",
                lang.ui("term-ev-log", &[("line", a(line.as_str()))])
            )?;
            note_lines(note, out)?;
        }
    }
    Ok(())
}

/// An evidence note, wrapped and indented under its evidence line.
fn note_lines(note: &str, out: &mut dyn Write) -> io::Result<()> {
    for line in wrap(note, WIDTH - 8) {
        writeln!(out, "      {}", line.italic())?;
    }
    Ok(())
}

fn render_checks(report: &Report, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", lang.t("term-checks").bold())?;
    for c in &report.checks {
        // Padded before it is coloured, so the reasons line up with and without colour.
        let paint = |word: &str| match c.status {
            CheckStatus::Ok => word.green().to_string(),
            CheckStatus::Skipped => word.yellow().to_string(),
            CheckStatus::Failed => word.red().to_string(),
        };
        let word = word_in(&c.status, lang);
        match &c.reason {
            Some(r) => writeln!(
                out,
                "  {:<10} {}  {r}",
                c.name.as_str(),
                paint(&pad(&word, 7))
            )?,
            None => writeln!(out, "  {:<10} {}", c.name.as_str(), paint(&word))?,
        }
    }
    Ok(())
}

/// `0.0523` → `"0.05 ms"`, `43.81` → `"43.8 ms"`, `1520.0` → `"1.52 s"`.
pub fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.2} ms")
    }
}

/// `45123` → `"45,123"`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A counter delta with its sign and digit groups: `2261` → `"+2,261"`, `-5` → `"−5"`, `0` → `"0"`.
pub fn signed_thousands(d: i64) -> String {
    match d.signum() {
        0 => "0".into(),
        1 => format!("+{}", thousands(d.unsigned_abs())),
        _ => format!("−{}", thousands(d.unsigned_abs())),
    }
}

/// Greedy word wrap; keeps words longer than the width whole ([`i18n::wrap`]: breaks between
/// CJK characters too).
fn wrap(text: &str, width: usize) -> Vec<String> {
    i18n::wrap(text, width)
}

#[cfg(test)]
mod tests {
    #[test]
    fn signed_thousands_groups_and_signs() {
        assert_eq!(signed_thousands(129_283), "+129,283");
        assert_eq!(signed_thousands(-1_500), "−1,500");
        assert_eq!(signed_thousands(0), "0");
        assert_eq!(signed_thousands(i64::MIN), "−9,223,372,036,854,775,808");
    }

    use super::*;

    #[test]
    fn header_names_the_protocol_and_a_passive_run() {
        let head = |input: &str, protocol, passive| {
            let mut r = Report::new(
                crate::ReportCommand::Diagnose,
                crate::Target {
                    input: input.into(),
                    address: Some("10.0.0.5:6379".into()),
                    protocol,
                },
            );
            r.passive = passive;
            let mut out = Vec::new();
            render(&r, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            text.lines().take(2).collect::<Vec<_>>().join("\n")
        };
        use crate::TargetProtocol as P;
        let h = head("tcp://10.0.0.5:6379", Some(P::Tcp), true);
        assert!(h.ends_with("tcp://10.0.0.5:6379\npassive: the target's real traffic was watched; no probe or load was sent"), "{h}");
        let h = head("db:6379", Some(P::Http), false);
        assert!(h.contains("db:6379  (10.0.0.5:6379, http)"), "{h}");
        assert!(!h.contains("passive"), "{h}");
        let h = head("HTTPS://db:6379/", Some(P::Https), false);
        assert!(h.contains("HTTPS://db:6379/  (10.0.0.5:6379)\n"), "{h}");
    }

    #[test]
    fn formats_numbers_for_people() {
        assert_eq!(ms(0.0523), "0.05 ms");
        assert_eq!(ms(43.81), "43.8 ms");
        assert_eq!(ms(1520.0), "1.52 s");
        assert_eq!(thousands(45123), "45,123");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn breakdown_names_the_parts_that_matter() {
        let b = netdoctor_core::Breakdown {
            latency: 43.93,
            network: 0.0075,
            server: 0.12,
            transfer: 0.0,
            stalls: {
                let mut s = netdoctor_core::Stalls::default();
                s.set(netdoctor_core::FindingId::NagleDelayedAck, 43.8);
                s
            },
            ..Default::default()
        };
        assert_eq!(
            breakdown_line(&b),
            "a typical request (p50) 43.9 ms = 0.01 ms network + 0.12 ms server + 43.8 ms Nagle/delayed ACK"
        );
    }

    #[test]
    fn server_sockets_line_never_says_0_of_0() {
        let mut r = Report::new(
            crate::ReportCommand::Diagnose,
            crate::Target {
                input: "http://127.0.0.1:8080/".into(),
                address: None,
                protocol: None,
            },
        );
        let sock = |state: &str, nodelay: bool| {
            serde_json::from_value::<netdoctor_core::sockets::ServerSocket>(serde_json::json!({
                "pid": 42, "process": "nginx", "fd": 6, "state": state,
                "local": "127.0.0.1:8080", "tcp_nodelay": nodelay, "tcp_cork": false,
                "sndbuf": 2626560, "rcvbuf": 131072
            }))
            .unwrap()
        };
        r.measurements.server_sockets = Some(vec![sock("listen", true)]);
        let mut out = Vec::new();
        render(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("only its listening socket was open"),
            "{text}"
        );
        assert!(!text.contains("0 of 0"), "{text}");

        r.measurements.server_sockets =
            Some(vec![sock("listen", true), sock("established", false)]);
        let mut out = Vec::new();
        render(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("TCP_NODELAY off on 1 of 1 sampled connections"),
            "{text}"
        );
    }

    #[test]
    fn wraps_at_width_without_losing_words() {
        let text = "the quick brown fox jumps over the lazy dog";
        let lines = wrap(text, 10);
        assert!(lines.iter().all(|l| l.chars().count() <= 10), "{lines:?}");
        assert_eq!(lines.join(" "), text);
    }
}

//! Terminal sink: the report as a person reads it under pressure — what was measured, the
//! verdict, why (with the packets that show it), and what to change.
//!
//! Colour is written unconditionally with owo-colors; the binary writes through a stream that
//! strips it when stdout is not a terminal or `NO_COLOR` is set, so this module stays pure.

use crate::i18n::{self, Lang, pad};
use crate::model::{CheckStatus, Report};
use fluent_bundle::FluentValue;
use netdoctor_core::analyze::ExchangeMethod;
use netdoctor_core::{Evidence, Finding, Severity, Verdict};
use owo_colors::OwoColorize;
use std::io::{self, Write};

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
    writeln!(
        out,
        "{} {}{}",
        format!("netdoctor {}", report.command.as_str()).bold(),
        report.target.input,
        report
            .target
            .address
            .as_deref()
            .filter(|a| !report.target.input.contains(*a))
            .map(|a| format!("  ({a})"))
            .unwrap_or_default()
    )?;
    if report.interrupted {
        writeln!(out, "{}", lang.t("term-interrupted").yellow())?;
    }
    writeln!(out)?;
    render_measurements(report, lang, out)?;
    writeln!(out)?;
    render_verdict(report, lang, out)?;
    for f in &report.findings {
        writeln!(out)?;
        render_finding(f, lang, out)?;
    }
    writeln!(out)?;
    render_checks(report, lang, out)
}

/// A measurement line: its label padded to the label column, then the text.
fn row(out: &mut dyn Write, label: &str, text: &str) -> io::Result<()> {
    writeln!(out, "  {} {text}", pad(label, 14))
}

fn render_measurements(report: &Report, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", lang.t("term-measured").bold())?;
    let m = &report.measurements;
    let mut any = false;
    if let Some(probe) = &m.probe {
        if let Some(syn) = &probe.syn {
            any = true;
            let how = match syn.fallback_reason {
                None => lang.t("term-syn-raw"),
                Some(_) => lang.t("term-syn-connect"),
            };
            let line = match (syn.median_ms, syn.min_ms, syn.max_ms) {
                (Some(med), Some(min), Some(max)) => lang.ui(
                    "term-syn-line",
                    &[
                        ("median", a(ms(med))),
                        ("min", a(ms(min))),
                        ("max", a(ms(max))),
                        ("answered", a(syn.answered.to_string())),
                        ("sent", a(syn.sent.to_string())),
                        ("how", a(how)),
                    ],
                ),
                _ if syn.refused > 0 => lang.ui(
                    "term-syn-refused",
                    &[
                        ("refused", a(syn.refused.to_string())),
                        ("sent", a(syn.sent.to_string())),
                    ],
                ),
                _ => lang.ui(
                    "term-syn-none",
                    &[("sent", a(syn.sent.to_string())), ("how", a(how))],
                ),
            };
            row(out, &lang.t("term-syn-rtt"), &line)?;
        }
        if let Some(h) = &probe.http {
            any = true;
            let tls = h.tls_ms.map_or(String::new(), |t| {
                format!(" · {}", lang.ui("term-tls", &[("tls", a(ms(t)))]))
            });
            let line = lang.ui(
                "term-one-request-line",
                &[
                    ("connect", a(ms(h.connect_ms))),
                    ("tls", a(tls)),
                    ("first", a(ms(h.first_byte_ms))),
                    ("total", a(ms(h.total_ms))),
                    ("status", a(h.status.to_string())),
                    ("bytes", a((h.header_bytes + h.body_bytes).to_string())),
                ],
            );
            row(out, &lang.t("term-one-request"), &line)?;
        }
    }
    if let Some(l) = &m.load {
        any = true;
        let line = lang.ui(
            "term-load-line",
            &[
                ("connections", a(l.connections.to_string())),
                ("duration", a(format!("{:.1}", l.duration_s))),
                ("requests", a(thousands(l.requests))),
                ("rps", a(thousands(l.requests_per_s.round() as u64))),
                ("errors", a(l.errors.total().to_string())),
            ],
        );
        row(out, &lang.t("term-under-load"), &line)?;
        let lat = &l.latency_ms;
        let p50 = ms(lat.p50);
        let line = lang.ui(
            "term-p-line",
            &[
                (
                    "p50",
                    a(if lat.p50 >= 20.0 {
                        p50.red().bold().to_string()
                    } else {
                        p50
                    }),
                ),
                ("p90", a(ms(lat.p90))),
                ("p99", a(ms(lat.p99))),
                ("max", a(ms(lat.max))),
            ],
        );
        row(out, "", &line)?;
        if let Some(e) = &l.first_error {
            row(
                out,
                "",
                &lang.ui("term-first-error", &[("error", a(e.as_str()))]),
            )?;
        }
    }
    if let Some(c) = &m.capture {
        any = true;
        let s = &c.stats;
        let label = if c.source == crate::model::CaptureSource::Live {
            lang.t("term-captured")
        } else {
            lang.t("term-read")
        };
        let line = lang.ui(
            "term-capture-line",
            &[
                ("packets", a(thousands(s.packets))),
                ("drops", a(thousands(s.capture_drops))),
                ("conns", a(thousands(s.connections))),
                ("exchanges", a(thousands(c.exchanges.count))),
                (
                    "http",
                    a(match c.exchanges.method {
                        None | Some(ExchangeMethod::Http1) => "yes",
                        _ => "no",
                    }),
                ),
            ],
        );
        row(out, &label, &line)?;
        if c.exchanges.count > 0 {
            let e = &c.exchanges;
            let rtt = e
                .rtt_ms
                .map(|r| lang.ui("term-handshake-rtt", &[("rtt", a(ms(r)))]))
                .unwrap_or_default();
            let line = lang.ui(
                "term-exchange-line",
                &[
                    ("p50", a(ms(e.latency_ms.p50))),
                    ("p99", a(ms(e.latency_ms.p99))),
                    ("server", a(ms(e.server_time_ms.p50))),
                    ("rtt", a(rtt)),
                ],
            );
            row(out, "", &line)?;
        }
        if let Some(m) = c.exchanges.method.filter(|m| *m != ExchangeMethod::Http1) {
            let line = match m {
                ExchangeMethod::Turns => lang.t("term-exchanges-turns"),
                _ => lang.t("term-exchanges-mixed"),
            };
            row(out, "", &line)?;
        }
        if let Some(b) = &c.exchanges.breakdown_p50_ms {
            row(out, "", &breakdown_line_in(b, lang))?;
        }
        if let Some(p) = &c.pcap_file {
            row(
                out,
                "",
                &lang.ui("term-pcap-written", &[("path", a(p.as_str()))]),
            )?;
        }
        for w in &c.warnings {
            row(out, "", &format!("{} {w}", lang.t("term-warning").yellow()))?;
        }
    }
    if let Some(socks) = &m.server_sockets {
        any = true;
        let conns: Vec<_> = socks
            .iter()
            .filter(|s| s.state == netdoctor_core::sockets::SocketState::Established)
            .collect();
        if conns.is_empty()
            && let Some(first) = socks.first()
        {
            let line = lang.ui(
                "term-sockets-listen-only",
                &[
                    ("process", a(first.process.as_str())),
                    ("pid", a(first.pid.to_string())),
                ],
            );
            row(out, &lang.t("term-sockets"), &line)?;
        } else if let Some(first) = conns.first().copied() {
            let off = conns.iter().filter(|s| !s.tcp_nodelay).count();
            let corked = conns.iter().filter(|s| s.tcp_cork).count();
            let line = lang.ui(
                "term-sockets-line",
                &[
                    ("process", a(first.process.as_str())),
                    ("pid", a(first.pid.to_string())),
                    ("off", a(off.to_string())),
                    ("n", a(conns.len().to_string())),
                    ("corked", a(corked.to_string())),
                ],
            );
            row(out, &lang.t("term-sockets"), &line)?;
        }
    }
    if let Some(c) = &m.counters {
        any = true;
        let shown: Vec<String> = c
            .changed
            .iter()
            .filter(|d| is_interesting_counter(&d.name))
            .map(|d| format!("{} +{}", d.name, d.after.saturating_sub(d.before)))
            .collect();
        if !shown.is_empty() {
            row(out, &lang.t("term-kernel"), &shown.join(", "))?;
        }
    }
    if !any {
        writeln!(out, "  {}", lang.t("term-nothing"))?;
    }
    Ok(())
}

/// `"a typical request (p50) 43.9 ms = 0.01 ms network + 0.12 ms server + 43.8 ms Nagle/delayed ACK"`:
/// where the time of a median request went, largest stall parts named.
pub fn breakdown_line(b: &netdoctor_core::Breakdown) -> String {
    breakdown_line_in(b, Lang::En)
}

/// [`breakdown_line`] in `lang`.
pub fn breakdown_line_in(b: &netdoctor_core::Breakdown, lang: Lang) -> String {
    let part = |id: &str, v: f64| lang.ui(id, &[("v", a(ms(v)))]);
    let mut parts = vec![
        part("term-bd-network", b.network),
        part("term-bd-server", b.server),
    ];
    if b.transfer >= 0.005 {
        parts.push(part("term-bd-transfer", b.transfer));
    }
    for (id, v) in b.stalls.iter() {
        use netdoctor_core::FindingId as F;
        let name = match id {
            F::NagleDelayedAck => lang.t("term-stall-nagle"),
            F::DelayedAckStall => lang.t("term-stall-delayed-ack"),
            F::PacketLossRetransmission => lang.t("term-stall-loss"),
            F::RetransmissionTimeout => lang.t("term-stall-rto"),
            F::ZeroWindow => lang.t("term-stall-zero-window"),
            other => other.as_str().to_string(),
        };
        if v >= 0.005 {
            parts.push(format!("{} {name}", ms(v)));
        }
    }
    lang.ui(
        "term-bd-line",
        &[
            ("latency", a(ms(b.latency))),
            ("parts", a(parts.join(" + "))),
        ],
    )
}

/// Counters worth a line in the terminal summary (all changes are in the JSON).
fn is_interesting_counter(name: &str) -> bool {
    const NAMES: [&str; 8] = [
        "TcpExt.ListenOverflows",
        "TcpExt.ListenDrops",
        "TcpExt.TCPTimeouts",
        "Tcp.RetransSegs",
        "TcpExt.TCPSynRetrans",
        "TcpExt.SyncookiesSent",
        "TcpExt.TCPAbortOnOverflow",
        "Tcp.AttemptFails",
    ];
    NAMES.contains(&name)
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
    let n = report.findings.len();
    let upper = word_in(&report.verdict, lang).to_uppercase();
    let label = match report.verdict {
        Verdict::Problem => upper.red().bold().to_string(),
        Verdict::Healthy => upper.green().bold().to_string(),
        Verdict::Inconclusive => upper.yellow().bold().to_string(),
    };
    let tail = match report.verdict {
        Verdict::Problem => lang.ui("term-verdict-problem", &[("n", a(n))]),
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

/// Two reports side by side (the demo: the same server with and without the fix), in English.
pub fn render_comparison(
    labels: [&str; 2],
    reports: [&Report; 2],
    out: &mut dyn Write,
) -> io::Result<()> {
    render_comparison_in(labels, reports, Lang::En, out)
}

/// [`render_comparison`] in `lang`.
pub fn render_comparison_in(
    labels: [&str; 2],
    reports: [&Report; 2],
    lang: Lang,
    out: &mut dyn Write,
) -> io::Result<()> {
    let col = 30;
    let row = |out: &mut dyn Write, name: &str, a: String, b: String| -> io::Result<()> {
        writeln!(out, "  {} {} {b}", pad(&lang.t(name), 22), pad(&a, col))
    };
    writeln!(
        out,
        "  {:<22} {} {}",
        "",
        pad(labels[0], col).bold(),
        labels[1].bold()
    )?;
    let syn = |r: &Report| {
        r.measurements
            .probe
            .as_ref()
            .and_then(|p| p.syn.as_ref())
            .and_then(|s| s.median_ms)
            .map(ms)
            .unwrap_or_else(|| "-".into())
    };
    row(out, "cmp-syn", syn(reports[0]), syn(reports[1]))?;
    let one = |r: &Report| {
        r.measurements
            .probe
            .as_ref()
            .and_then(|p| p.http.as_ref())
            .map(|h| ms(h.total_ms))
            .unwrap_or_else(|| "-".into())
    };
    row(out, "cmp-one-request", one(reports[0]), one(reports[1]))?;
    let rps = |r: &Report| {
        r.measurements
            .load
            .as_ref()
            .map(|l| thousands(l.requests_per_s.round() as u64))
            .unwrap_or_else(|| "-".into())
    };
    row(out, "cmp-rps", rps(reports[0]), rps(reports[1]))?;
    let pct = |r: &Report, f: fn(&netdoctor_load::Percentiles) -> f64| {
        r.measurements
            .load
            .as_ref()
            .map(|l| ms(f(&l.latency_ms)))
            .unwrap_or_else(|| "-".into())
    };
    row(
        out,
        "cmp-p50",
        pct(reports[0], |p| p.p50),
        pct(reports[1], |p| p.p50),
    )?;
    row(
        out,
        "cmp-p99",
        pct(reports[0], |p| p.p99),
        pct(reports[1], |p| p.p99),
    )?;
    let verdict = |r: &Report| {
        let v = word_in(&r.verdict, lang);
        match r.findings.iter().find(|f| f.severity > Severity::Info) {
            Some(f) => format!("{v}: {}", f.id),
            None => v,
        }
    };
    row(out, "cmp-verdict", verdict(reports[0]), verdict(reports[1]))
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

/// Greedy word wrap; keeps words longer than the width whole ([`i18n::wrap`]: breaks between
/// CJK characters too).
fn wrap(text: &str, width: usize) -> Vec<String> {
    i18n::wrap(text, width)
}

#[cfg(test)]
mod tests {
    use super::*;

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

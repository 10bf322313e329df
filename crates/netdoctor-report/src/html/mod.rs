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

mod charts;
mod ladder;
mod svg;

use crate::model::{CheckStatus, Report};
use netdoctor_core::{Evidence, Finding, Severity, Verdict};
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

const CSS: &str = include_str!("report.css");

/// Writes the report as one self-contained HTML page.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut h = String::with_capacity(64 * 1024);
    page(report, &mut h).map_err(io::Error::other)?;
    out.write_all(h.as_bytes())
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

fn not_measured(h: &mut String, what: &str, reason: Option<String>) -> fmt::Result {
    match reason.filter(|r| !r.is_empty()) {
        Some(r) => write!(
            h,
            r#"<p class="nm">{} not measured: {}.</p>"#,
            esc(what),
            esc(&r)
        ),
        None => write!(h, r#"<p class="nm">{} not measured.</p>"#, esc(what)),
    }
}

fn page(r: &Report, h: &mut String) -> fmt::Result {
    let verdict = verdict_word(r.verdict);
    write!(
        h,
        concat!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<meta name=\"generator\" content=\"netdoctor {}\">",
            "<title>netdoctor: {} – {}</title><style>{}</style></head><body>\n"
        ),
        env!("CARGO_PKG_VERSION"),
        verdict,
        esc(&r.target.input),
        CSS
    )?;
    header(r, h)?;
    h.push_str("<main>");
    findings(r, h)?;
    latency(r, h)?;
    over_time(r, h)?;
    packets(r, h)?;
    tables(r, h)?;
    breakdown(r, h)?;
    checks(r, h)?;
    h.push_str("</main>");
    write!(
        h,
        r#"<footer>netdoctor {} · report schema {} · this page is self-contained: no script, nothing fetched</footer></body></html>"#,
        env!("CARGO_PKG_VERSION"),
        esc(&word(&r.schema))
    )?;
    h.push('\n');
    Ok(())
}

fn header(r: &Report, h: &mut String) -> fmt::Result {
    let verdict = verdict_word(r.verdict);
    let headline = match (r.verdict, r.findings.first()) {
        (Verdict::Problem, Some(f)) => f.summary.clone(),
        (Verdict::Problem, None) => "a problem was found".to_string(),
        (Verdict::Healthy, _) => "No problem found: nothing above info".to_string(),
        (Verdict::Inconclusive, _) => {
            "Not enough evidence to call it healthy: see the checks below".to_string()
        }
    };
    let count = |s: Severity| r.findings.iter().filter(|f| f.severity == s).count();
    write!(
        h,
        r#"<header id="verdict" class="verdict v-{verdict}"><div class="vword">{}</div><h1>{}</h1><p class="vmeta">"#,
        verdict.to_uppercase(),
        esc(&headline)
    )?;
    write!(
        h,
        "{} finding{}: {} critical, {} warning, {} info · ",
        r.findings.len(),
        if r.findings.len() == 1 { "" } else { "s" },
        count(Severity::Critical),
        count(Severity::Warning),
        count(Severity::Info)
    )?;
    write!(
        h,
        "<code>netdoctor {}</code> <code>{}</code>",
        esc(&word(&r.command)),
        esc(&r.target.input)
    )?;
    if let Some(a) = &r.target.address {
        write!(h, " ({})", esc(a))?;
    }
    writeln!(h, " · took {:.1} s</p></header>", r.elapsed_s)
}

fn findings(r: &Report, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="findings"><h2>Findings</h2>"#);
    if r.findings.is_empty() {
        h.push_str(r#"<p class="none">No findings.</p>"#);
    }
    for (i, f) in r.findings.iter().enumerate() {
        finding(i + 1, f, h)?;
    }
    h.push_str("</section>\n");
    Ok(())
}

fn finding(n: usize, f: &Finding, h: &mut String) -> fmt::Result {
    let sev = severity_word(f.severity);
    write!(
        h,
        r#"<article class="finding sev-{sev}" id="finding-{n}"><div class="fhead"><span class="badge sev-{sev}">{sev}</span> <code class="fid">{}</code> <span class="meta">{} layer · side: {} · confidence {:.0} %</span></div>"#,
        esc(f.id.as_str()),
        esc(&word(&f.layer)),
        esc(&word(&f.side)),
        f.confidence * 100.0
    )?;
    write!(h, "<h3>{}</h3>", esc(&f.summary))?;
    let mut impact = Vec::new();
    if let Some(ms) = f.impact.added_latency_ms {
        impact.push(format!("adds {} per affected request", svg::fmt_ms(ms)));
    }
    if let Some(fr) = f.impact.affected_fraction {
        impact.push(format!("{:.0} % affected", fr * 100.0));
    }
    if !impact.is_empty() {
        write!(
            h,
            r#"<p class="impact">Impact: {}</p>"#,
            esc(&impact.join(", "))
        )?;
    }
    if !f.explanation.is_empty() {
        write!(h, r#"<p class="explain">{}</p>"#, Rich(&f.explanation))?;
    }
    if !f.fix.is_empty() {
        write!(h, r#"<div class="fix"><b>Fix</b> {}</div>"#, Rich(&f.fix))?;
    }
    let mut items = String::new();
    let mut conns = 0;
    for e in &f.evidence {
        match e {
            Evidence::Packets { .. } => conns += 1,
            Evidence::Counter {
                name,
                before,
                after,
                note,
            } => {
                let _ = write!(
                    items,
                    "<li>counter <code>{}</code>: {} → {} ({:+}) — {}</li>",
                    esc(name),
                    before,
                    after,
                    i128::from(*after) - i128::from(*before),
                    esc(note)
                );
            }
            Evidence::SocketOption {
                pid,
                fd,
                option,
                value,
                note,
            } => {
                let _ = write!(
                    items,
                    "<li>socket option <code>{}</code> = <code>{}</code> (pid {pid}, fd {fd}) — {}</li>",
                    esc(option),
                    esc(value),
                    esc(note)
                );
            }
            Evidence::Probe { probe, note } => {
                let _ = write!(items, "<li>probe {}: {}</li>", esc(probe), esc(note));
            }
            Evidence::Log { line, note } => {
                let _ = write!(
                    items,
                    "<li>kernel log <code>{}</code> — {}</li>",
                    esc(line),
                    esc(note)
                );
            }
        }
    }
    if conns > 0 {
        let _ = write!(
            items,
            "<li>packets on {conns} connection{}: <a href=\"#packets-{n}\">flow graph below</a></li>",
            if conns == 1 { "" } else { "s" }
        );
    }
    if !items.is_empty() {
        write!(h, r#"<ul class="evidence">{items}</ul>"#)?;
    }
    h.push_str("</article>\n");
    Ok(())
}

fn latency(r: &Report, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="latency"><h2>Latency distribution</h2>"#);
    baseline(r, h)?;
    match &r.measurements.load {
        Some(load) => {
            let p = &load.latency_ms;
            write!(
                h,
                r#"<p class="lead">{} requests over {:.1} s on {} connections ({:.0} req/s): p50 <b>{}</b>, p90 {}, p99 <b>{}</b>, max {}.</p>"#,
                load.requests,
                load.duration_s,
                load.connections,
                load.requests_per_s,
                svg::fmt_ms(p.p50),
                svg::fmt_ms(p.p90),
                svg::fmt_ms(p.p99),
                svg::fmt_ms(p.max)
            )?;
            load_outcome(load, h)?;
            match charts::histogram(load) {
                Some(svg) => write!(
                    h,
                    r#"<figure id="histogram"><figcaption>How many requests took how long (log scale, buckets 12 % wide; hover a bar for its count)</figcaption>{svg}</figure>"#
                )?,
                None => not_measured(
                    h,
                    "Latency histogram",
                    Some(if load.requests == 0 {
                        "no request completed".into()
                    } else {
                        "this report has no histogram data".into()
                    }),
                )?,
            }
            if let Some(svg) = charts::curve(load) {
                write!(
                    h,
                    r#"<figure id="percentiles"><figcaption>Percentile curve: the latency that the given share of requests stayed at or under; the right-hand side is the tail</figcaption>{svg}</figure>"#
                )?;
            }
        }
        None => not_measured(h, "Load", check_reason(r, "load"))?,
    }
    if let Some(c) = &r.measurements.capture {
        let e = &c.exchanges;
        if e.count > 0 {
            write!(
                h,
                r#"<p class="lead">In the capture: {} HTTP exchange{} (first request byte to last response byte at the capture point): p50 <b>{}</b>, p90 {}, p99 <b>{}</b>, max {}{}.</p>"#,
                e.count,
                if e.count == 1 { "" } else { "s" },
                svg::fmt_ms(e.latency_ms.p50),
                svg::fmt_ms(e.latency_ms.p90),
                svg::fmt_ms(e.latency_ms.p99),
                svg::fmt_ms(e.latency_ms.max),
                match e.rtt_ms {
                    Some(rtt) => format!("; handshake RTT {}", svg::fmt_ms(rtt)),
                    None => String::new(),
                }
            )?;
        }
    }
    h.push_str("</section>\n");
    Ok(())
}

/// The baseline probes: what one connection and one request cost alone, before the load (the
/// method's first comparison: fine alone, slow under concurrency).
fn baseline(r: &Report, h: &mut String) -> fmt::Result {
    let Some(p) = &r.measurements.probe else {
        return Ok(());
    };
    let mut parts = Vec::new();
    if let Some(s) = &p.syn
        && let Some(med) = s.median_ms
    {
        parts.push(format!(
            "TCP handshake RTT <b>{}</b> (median of {} answered, {})",
            esc(&svg::fmt_ms(med)),
            s.answered,
            esc(&word(&s.method))
        ));
    }
    if let Some(t) = &p.http {
        parts.push(format!(
            "one request <b>{}</b> (connect {}, first byte {}, HTTP {})",
            esc(&svg::fmt_ms(t.total_ms)),
            esc(&svg::fmt_ms(t.connect_ms)),
            esc(&svg::fmt_ms(t.ttfb_ms)),
            t.status
        ));
    }
    if parts.is_empty() {
        return Ok(());
    }
    write!(
        h,
        r#"<p class="lead" id="baseline">Alone, before the load: {}.</p>"#,
        parts.join("; ")
    )
}

/// Status codes and errors of the load: a run whose requests failed says so next to its
/// latencies.
fn load_outcome(load: &netdoctor_load::LoadResult, h: &mut String) -> fmt::Result {
    let codes: Vec<String> = load
        .status
        .iter()
        .map(|(code, n)| format!("{code}: {n}"))
        .collect();
    let e = &load.errors;
    let total = e.total();
    write!(
        h,
        r#"<p class="lead{}">Responses by status: {}. Errors: <b>{total}</b>"#,
        if total > 0 { " errors" } else { "" },
        if codes.is_empty() {
            "none".to_string()
        } else {
            esc(&codes.join(", ")).to_string()
        }
    )?;
    if total > 0 {
        write!(
            h,
            " (connect {}, read {}, write {}, timeout {}, HTTP status {})",
            e.connect, e.read, e.write, e.timeout, e.status
        )?;
    }
    if let Some(first) = &load.first_error {
        write!(h, "; the first: <code>{}</code>", esc(first))?;
    }
    h.push_str(".</p>");
    Ok(())
}

fn over_time(r: &Report, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="timeline"><h2>Over the run</h2>"#);
    match r.measurements.load.as_ref().and_then(charts::timeline) {
        Some(svg) => write!(
            h,
            r#"<figure><figcaption>Requests per second (errors in red) and the latency of each second's responses</figcaption>{svg}</figure>"#
        )?,
        None => {
            let reason = if r.measurements.load.is_some() {
                Some("this report has no per-second data".to_string())
            } else {
                check_reason(r, "load")
            };
            not_measured(h, "Requests/s and latency over time", reason)?
        }
    }
    h.push_str("</section>\n");
    Ok(())
}

/// Most connections listed under a ladder.
const MORE_CONNECTIONS: usize = 20;

fn packets(r: &Report, h: &mut String) -> fmt::Result {
    let with: Vec<(usize, &Finding)> = r
        .findings
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.evidence
                .iter()
                .any(|e| matches!(e, Evidence::Packets { .. }))
        })
        .map(|(i, f)| (i + 1, f))
        .collect();
    h.push_str(r#"<section id="packets"><h2>Packet evidence</h2>"#);
    if with.is_empty() {
        if r.measurements.capture.is_none() {
            not_measured(h, "Packet evidence", check_reason(r, "capture"))?;
        } else {
            h.push_str(
                r#"<p class="none">No finding rests on packets: no flow graph to draw.</p>"#,
            );
        }
    }
    for (n, f) in with {
        let mut conns = f.evidence.iter().filter_map(|e| match e {
            Evidence::Packets {
                connection,
                packets,
                note,
            } => Some((connection, packets, note)),
            _ => None,
        });
        let Some((connection, pkts, note)) = conns.next() else {
            continue;
        };
        write!(
            h,
            r#"<div class="ladder-block" id="packets-{n}"><h3><span class="badge sev-{}">{}</span> <code>{}</code> on {}</h3>"#,
            severity_word(f.severity),
            severity_word(f.severity),
            esc(f.id.as_str()),
            esc(connection)
        )?;
        if let Some(svg) = ladder::ladder(n, f.id, connection, pkts) {
            h.push_str(&svg);
        }
        write!(h, r#"<p class="note">{}</p>"#, esc(note))?;
        let rest: Vec<_> = conns.collect();
        if !rest.is_empty() {
            write!(
                h,
                "<details><summary>{} more connection{} with the same evidence</summary><table><thead><tr><th>connection</th><th>frames</th><th>what the packets show</th></tr></thead><tbody>",
                rest.len(),
                if rest.len() == 1 { "" } else { "s" }
            )?;
            for (c, p, note) in rest.iter().take(MORE_CONNECTIONS) {
                let frames: Vec<String> = p.iter().map(|p| p.frame.to_string()).collect();
                write!(
                    h,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    esc(c),
                    esc(&frames.join(", ")),
                    esc(note)
                )?;
            }
            h.push_str("</tbody></table></details>");
        }
        h.push_str("</div>");
    }
    h.push_str("</section>\n");
    Ok(())
}

fn tables(r: &Report, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="host"><h2>Capture, counters and sockets</h2>"#);
    if let Some(c) = &r.measurements.capture {
        let s = &c.stats;
        write!(
            h,
            r#"<h3>Capture ({})</h3><table class="kv"><tbody><tr><th>packets</th><td>{}</td><th>TCP segments</th><td>{}</td><th>connections</th><td>{} ({} with handshake)</td></tr><tr><th>duration</th><td>{:.3} s</td><th>retransmitted segments</th><td>{}</td><th>dropped by the kernel</th><td>{}</td></tr></tbody></table>"#,
            esc(&word(&c.source)),
            s.packets,
            s.tcp_segments,
            s.connections,
            s.connections_with_handshake,
            s.duration_s,
            s.retransmitted_segments,
            s.capture_drops
        )?;
        if !c.warnings.is_empty() {
            h.push_str(r#"<ul class="warnings">"#);
            for w in &c.warnings {
                write!(h, "<li>{}</li>", esc(w))?;
            }
            h.push_str("</ul>");
        }
    }
    h.push_str("<h3>Kernel counters that changed</h3>");
    match &r.measurements.counters {
        Some(c) if !c.changed.is_empty() => {
            h.push_str(r#"<table class="num"><thead><tr><th>counter</th><th>before</th><th>after</th><th>change</th></tr></thead><tbody>"#);
            for d in &c.changed {
                write!(
                    h,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{:+}</td></tr>",
                    esc(&d.name),
                    d.before,
                    d.after,
                    d.change()
                )?;
            }
            h.push_str("</tbody></table>");
        }
        Some(_) => h.push_str(r#"<p class="none">No counter changed during the run.</p>"#),
        None => not_measured(h, "Kernel counters", check_reason(r, "counters"))?,
    }
    h.push_str("<h3>Socket options of the server</h3>");
    match &r.measurements.server_sockets {
        Some(socks) if !socks.is_empty() => {
            h.push_str(r#"<table class="num"><thead><tr><th>process</th><th>pid</th><th>fd</th><th>state</th><th>local</th><th>TCP_NODELAY</th><th>TCP_CORK</th><th>SO_SNDBUF</th><th>SO_RCVBUF</th></tr></thead><tbody>"#);
            for s in socks {
                write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&s.process),
                    s.pid,
                    s.fd,
                    esc(&word(&s.state)),
                    esc(&s.local),
                    if s.tcp_nodelay { "on" } else { "off" },
                    if s.tcp_nodelay {
                        "on (Nagle off)"
                    } else {
                        "off (Nagle on)"
                    },
                    if s.tcp_cork { "on" } else { "off" },
                    s.sndbuf,
                    s.rcvbuf
                )?;
            }
            h.push_str("</tbody></table>");
        }
        _ => not_measured(
            h,
            "Socket options",
            check_reason(r, "socket_options").or_else(|| {
                Some(match r.measurements.capture.as_ref() {
                    Some(c) if word(&c.source) == "file" => {
                        "offline analysis of a capture file".into()
                    }
                    _ => "the server is not a process on this host, or it was not read".into(),
                })
            }),
        )?,
    }
    h.push_str("</section>\n");
    Ok(())
}

fn breakdown(r: &Report, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="breakdown"><h2>Where the time of a request went</h2>"#);
    let ex = r.measurements.capture.as_ref().map(|c| &c.exchanges);
    let bars: Vec<(&str, f64, Vec<charts::Part>)> = ex
        .into_iter()
        .flat_map(|e| {
            [
                ("typical request (p50)", e.breakdown_p50_ms.as_ref()),
                ("mean of all requests", e.breakdown_mean_ms.as_ref()),
            ]
        })
        .filter_map(|(t, b)| {
            let v = serde_json::to_value(b?).ok()?;
            let (lat, parts) = charts::breakdown_parts(&v)?;
            Some((t, lat, parts))
        })
        .collect();
    match charts::stacked(&bars) {
        Some(svg) => write!(
            h,
            r#"<figure id="breakdown-bar"><figcaption>Each request's latency split into the network RTT, the server's think time, transferring the bytes, and stalls by their cause (from the capture)</figcaption>{svg}</figure>"#
        )?,
        None => {
            let reason = if r.measurements.capture.is_none() {
                check_reason(r, "capture")
            } else {
                Some("the capture held no complete HTTP exchange".to_string())
            };
            not_measured(h, "The per-request breakdown", reason)?
        }
    }
    h.push_str("</section>\n");
    Ok(())
}

fn checks(r: &Report, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="checks"><h2>Checks</h2><table><thead><tr><th>check</th><th>status</th><th>note</th></tr></thead><tbody>"#);
    for c in &r.checks {
        let status = word(&c.status);
        write!(
            h,
            r#"<tr><td><code>{}</code></td><td class="st-{}">{}</td><td>{}</td></tr>"#,
            esc(&word(&c.name)),
            esc(&status),
            esc(&status),
            esc(c.reason.as_deref().unwrap_or(""))
        )?;
    }
    h.push_str("</tbody></table></section>\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

//! Terminal sink: the report as a person reads it under pressure — what was measured, the
//! verdict, why (with the packets that show it), and what to change.
//!
//! Colour is written unconditionally with owo-colors; the binary writes through a stream that
//! strips it when stdout is not a terminal or `NO_COLOR` is set, so this module stays pure.

use crate::model::{CheckStatus, Report};
use netdoctor_core::analyze::ExchangeMethod;
use netdoctor_core::{Evidence, Finding, Severity, Verdict};
use owo_colors::OwoColorize;
use std::io::{self, Write};

const WIDTH: usize = 92;

/// Writes the full report for one target.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
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
        writeln!(
            out,
            "{}",
            "interrupted: the run was stopped early; this report covers what was measured until then"
                .yellow()
        )?;
    }
    writeln!(out)?;
    render_measurements(report, out)?;
    writeln!(out)?;
    render_verdict(report, out)?;
    for f in &report.findings {
        writeln!(out)?;
        render_finding(f, out)?;
    }
    writeln!(out)?;
    render_checks(report, out)
}

fn render_measurements(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", "Measured".bold())?;
    let m = &report.measurements;
    let mut any = false;
    if let Some(probe) = &m.probe {
        if let Some(syn) = &probe.syn {
            any = true;
            let how = match syn.fallback_reason {
                None => "raw SYN, kernel timestamps".to_string(),
                Some(_) => "connect() timing".to_string(),
            };
            let line = match (syn.median_ms, syn.min_ms, syn.max_ms) {
                (Some(med), Some(min), Some(max)) => format!(
                    "{} median (min {}, max {}; {}/{} answered, {how})",
                    ms(med),
                    ms(min),
                    ms(max),
                    syn.answered,
                    syn.sent
                ),
                _ if syn.refused > 0 => format!(
                    "refused: {} of {} SYNs answered with RST (nothing listens)",
                    syn.refused, syn.sent
                ),
                _ => format!("no answer to {} SYNs ({how})", syn.sent),
            };
            writeln!(out, "  {:<14} {line}", "SYN RTT")?;
        }
        if let Some(h) = &probe.http {
            any = true;
            let tls = h
                .tls_ms
                .map_or(String::new(), |t| format!(" · TLS {}", ms(t)));
            writeln!(
                out,
                "  {:<14} connect {}{tls} · first byte {} · total {}  (HTTP {}, {} bytes; median of 3)",
                "One request",
                ms(h.connect_ms),
                ms(h.first_byte_ms),
                ms(h.total_ms),
                h.status,
                h.header_bytes + h.body_bytes
            )?;
        }
    }
    if let Some(l) = &m.load {
        any = true;
        writeln!(
            out,
            "  {:<14} {} connections, {:.1} s: {} requests, {} req/s, errors {}",
            "Under load",
            l.connections,
            l.duration_s,
            thousands(l.requests),
            thousands(l.requests_per_s.round() as u64),
            l.errors.total()
        )?;
        let lat = &l.latency_ms;
        let p50 = ms(lat.p50);
        writeln!(
            out,
            "  {:<14} p50 {} · p90 {} · p99 {} · max {}",
            "",
            if lat.p50 >= 20.0 {
                p50.red().bold().to_string()
            } else {
                p50
            },
            ms(lat.p90),
            ms(lat.p99),
            ms(lat.max)
        )?;
        if let Some(e) = &l.first_error {
            writeln!(out, "  {:<14} first error: {e}", "")?;
        }
    }
    if let Some(c) = &m.capture {
        any = true;
        let s = &c.stats;
        writeln!(
            out,
            "  {:<14} {} packets ({} dropped) on {} connections, {} {}exchanges",
            if c.source == crate::model::CaptureSource::Live {
                "Captured"
            } else {
                "Read"
            },
            thousands(s.packets),
            thousands(s.capture_drops),
            thousands(s.connections),
            thousands(c.exchanges.count),
            match c.exchanges.method {
                None | Some(ExchangeMethod::Http1) => "HTTP ",
                _ => "",
            },
        )?;
        if c.exchanges.count > 0 {
            let e = &c.exchanges;
            writeln!(
                out,
                "  {:<14} exchange latency p50 {} · p99 {}; server time p50 {}{}",
                "",
                ms(e.latency_ms.p50),
                ms(e.latency_ms.p99),
                ms(e.server_time_ms.p50),
                e.rtt_ms
                    .map(|r| format!("; handshake RTT {}", ms(r)))
                    .unwrap_or_default()
            )?;
        }
        if let Some(m) = c.exchanges.method.filter(|m| *m != ExchangeMethod::Http1) {
            writeln!(
                out,
                "  {:<14} exchanges found from {}",
                "",
                match m {
                    ExchangeMethod::Turns => "direction turns (payload not HTTP/1.x)",
                    _ => "HTTP/1.x requests and direction turns (mixed)",
                }
            )?;
        }
        if let Some(b) = &c.exchanges.breakdown_p50_ms {
            writeln!(out, "  {:<14} {}", "", breakdown_line(b))?;
        }
        if let Some(p) = &c.pcap_file {
            writeln!(out, "  {:<14} packets written to {p}", "")?;
        }
        for w in &c.warnings {
            writeln!(out, "  {:<14} {} {w}", "", "warning:".yellow())?;
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
            writeln!(
                out,
                "  {:<14} {} (pid {}): only its listening socket was open when sampled; no \
                 connection's options to show",
                "Server sockets", first.process, first.pid
            )?;
        } else if let Some(first) = conns.first().copied() {
            let off = conns.iter().filter(|s| !s.tcp_nodelay).count();
            let corked = conns.iter().filter(|s| s.tcp_cork).count();
            writeln!(
                out,
                "  {:<14} {} (pid {}): TCP_NODELAY off on {off} of {} sampled connections, TCP_CORK on {corked}",
                "Server sockets",
                first.process,
                first.pid,
                conns.len()
            )?;
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
            writeln!(out, "  {:<14} {}", "Kernel", shown.join(", "))?;
        }
    }
    if let Some(k) = &m.kernel {
        any = true;
        writeln!(out, "  {:<14} {}", "eBPF", k.summary_line())?;
    }
    if !any {
        writeln!(out, "  nothing (see checks below)")?;
    }
    Ok(())
}

/// `"a typical request (p50) 43.9 ms = 0.01 ms network + 0.12 ms server + 43.8 ms Nagle/delayed ACK"`:
/// where the time of a median request went, largest stall parts named.
pub fn breakdown_line(b: &netdoctor_core::Breakdown) -> String {
    let mut parts = vec![
        format!("{} network", ms(b.network)),
        format!("{} server", ms(b.server)),
    ];
    if b.transfer >= 0.005 {
        parts.push(format!("{} transfer", ms(b.transfer)));
    }
    for (id, v) in b.stalls.iter() {
        use netdoctor_core::FindingId as F;
        let name = match id {
            F::NagleDelayedAck => "Nagle/delayed ACK",
            F::DelayedAckStall => "delayed-ACK stall",
            F::PacketLossRetransmission => "loss recovery",
            F::RetransmissionTimeout => "retransmission timeouts",
            F::ZeroWindow => "zero window",
            other => other.as_str(),
        };
        if v >= 0.005 {
            parts.push(format!("{} {name}", ms(v)));
        }
    }
    format!(
        "a typical request (p50) {} = {}",
        ms(b.latency),
        parts.join(" + ")
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

fn render_verdict(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let n = report.findings.len();
    let label = match report.verdict {
        Verdict::Problem => "PROBLEM".red().bold().to_string(),
        Verdict::Healthy => "HEALTHY".green().bold().to_string(),
        Verdict::Inconclusive => "INCONCLUSIVE".yellow().bold().to_string(),
    };
    let tail = match report.verdict {
        Verdict::Problem => format!(
            "{n} finding{}; the first one explains most of the latency",
            plural(n)
        ),
        Verdict::Healthy => "no problem found in what was checked".to_string(),
        Verdict::Inconclusive => {
            "not enough was observed to judge; see the checks below".to_string()
        }
    };
    writeln!(out, "{} {label} — {tail}", "Verdict:".bold())
}

fn render_finding(f: &Finding, out: &mut dyn Write) -> io::Result<()> {
    let sev = match f.severity {
        Severity::Critical => "CRITICAL".red().bold().to_string(),
        Severity::Warning => "WARNING".yellow().bold().to_string(),
        Severity::Info => "INFO".blue().bold().to_string(),
    };
    let side = serde_json::to_value(f.side)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let layer = serde_json::to_value(f.layer)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    writeln!(
        out,
        "[{sev}] {}  ({layer}, side: {side}, confidence {:.2})",
        f.id.as_str().bold(),
        f.confidence
    )?;
    writeln!(out, "  {}", f.summary.bold())?;
    if let Some(root) = f.caused_by {
        writeln!(out, "  consequence of {root} (above)")?;
    }
    if !f.consequences.is_empty() {
        let ids: Vec<&str> = f.consequences.iter().map(|c| c.as_str()).collect();
        writeln!(out, "  root cause of: {} (below)", ids.join(", "))?;
    }
    if !f.explanation.is_empty() {
        writeln!(out, "  {}", "Why:".bold())?;
        for line in wrap(&f.explanation, WIDTH - 4) {
            writeln!(out, "    {line}")?;
        }
    }
    if !f.evidence.is_empty() {
        writeln!(out, "  {}", "Evidence:".bold())?;
        for ev in &f.evidence {
            render_evidence(ev, out)?;
        }
    }
    if !f.fix.is_empty() {
        writeln!(out, "  {}", "Fix:".green().bold())?;
        for line in wrap(&f.fix, WIDTH - 4) {
            writeln!(out, "    {line}")?;
        }
    }
    Ok(())
}

fn render_evidence(ev: &Evidence, out: &mut dyn Write) -> io::Result<()> {
    match ev {
        Evidence::Packets {
            connection,
            packets,
            note,
        } => {
            writeln!(out, "    connection {connection}")?;
            for p in packets {
                writeln!(
                    out,
                    "      #{:<8} {:>11.6}s  {}  {}",
                    p.frame, p.time, p.dir, p.desc
                )?;
            }
            note_lines(note, out)?;
        }
        Evidence::Counter {
            name,
            before,
            after,
            note,
        } => {
            writeln!(out, "    counter {name}: {before} → {after}")?;
            note_lines(note, out)?;
        }
        Evidence::SocketOption {
            pid,
            fd,
            option,
            value,
            note,
        } => {
            writeln!(out, "    socket of pid {pid} (fd {fd}): {option} = {value}")?;
            note_lines(note, out)?;
        }
        Evidence::Probe { probe, note } => {
            writeln!(out, "    probe {probe}:")?;
            note_lines(note, out)?;
        }
        Evidence::Log { line, note } => {
            writeln!(out, "    kernel log: {line}")?;
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

fn render_checks(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", "Checks".bold())?;
    for c in &report.checks {
        // Padded before it is coloured, so the reasons line up with and without colour.
        let paint = |word: &str| match c.status {
            CheckStatus::Ok => word.green().to_string(),
            CheckStatus::Skipped => word.yellow().to_string(),
            CheckStatus::Failed => word.red().to_string(),
        };
        let word = match c.status {
            CheckStatus::Ok => "ok",
            CheckStatus::Skipped => "skipped",
            CheckStatus::Failed => "failed",
        };
        match &c.reason {
            Some(r) => writeln!(
                out,
                "  {:<10} {}  {r}",
                c.name.as_str(),
                paint(&format!("{word:<7}"))
            )?,
            None => writeln!(out, "  {:<10} {}", c.name.as_str(), paint(word))?,
        }
    }
    Ok(())
}

/// Two reports side by side (the demo: the same server with and without the fix).
pub fn render_comparison(
    labels: [&str; 2],
    reports: [&Report; 2],
    out: &mut dyn Write,
) -> io::Result<()> {
    let col = 30;
    let row = |out: &mut dyn Write, name: &str, a: String, b: String| -> io::Result<()> {
        writeln!(out, "  {name:<22} {a:<col$} {b}")
    };
    writeln!(
        out,
        "  {:<22} {:<col$} {}",
        "",
        labels[0].bold(),
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
    row(out, "SYN RTT (median)", syn(reports[0]), syn(reports[1]))?;
    let one = |r: &Report| {
        r.measurements
            .probe
            .as_ref()
            .and_then(|p| p.http.as_ref())
            .map(|h| ms(h.total_ms))
            .unwrap_or_else(|| "-".into())
    };
    row(out, "one request (total)", one(reports[0]), one(reports[1]))?;
    let rps = |r: &Report| {
        r.measurements
            .load
            .as_ref()
            .map(|l| thousands(l.requests_per_s.round() as u64))
            .unwrap_or_else(|| "-".into())
    };
    row(
        out,
        "requests/s under load",
        rps(reports[0]),
        rps(reports[1]),
    )?;
    let pct = |r: &Report, f: fn(&netdoctor_load::Percentiles) -> f64| {
        r.measurements
            .load
            .as_ref()
            .map(|l| ms(f(&l.latency_ms)))
            .unwrap_or_else(|| "-".into())
    };
    row(
        out,
        "latency p50 under load",
        pct(reports[0], |p| p.p50),
        pct(reports[1], |p| p.p50),
    )?;
    row(
        out,
        "latency p99 under load",
        pct(reports[0], |p| p.p99),
        pct(reports[1], |p| p.p99),
    )?;
    let verdict = |r: &Report| {
        let v = match r.verdict {
            Verdict::Problem => "problem",
            Verdict::Healthy => "healthy",
            Verdict::Inconclusive => "inconclusive",
        };
        match r.findings.iter().find(|f| f.severity > Severity::Info) {
            Some(f) => format!("{v}: {}", f.id),
            None => v.to_string(),
        }
    };
    row(out, "verdict", verdict(reports[0]), verdict(reports[1]))
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

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Greedy word wrap; keeps words longer than the width whole.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        for word in para.split_whitespace() {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    lines
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

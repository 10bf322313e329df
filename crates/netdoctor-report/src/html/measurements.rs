//! What the run measured: the latency distribution (baseline probes, load outcome,
//! histogram, percentile curve), the time line, the capture's figures, counter deltas, socket
//! options, the per-request breakdown and the checks. Each part that the report lacks says
//! "not measured" with the reason its check gave.

use super::{charts, check_reason, esc, not_measured, svg, word};
use crate::model::Report;
use std::fmt::{self, Write as _};

pub(super) fn latency(r: &Report, h: &mut String) -> fmt::Result {
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

pub(super) fn over_time(r: &Report, h: &mut String) -> fmt::Result {
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

pub(super) fn tables(r: &Report, h: &mut String) -> fmt::Result {
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

pub(super) fn breakdown(r: &Report, h: &mut String) -> fmt::Result {
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

pub(super) fn checks(r: &Report, h: &mut String) -> fmt::Result {
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

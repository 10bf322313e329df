//! What the run measured: the latency distribution (baseline probes, load outcome,
//! histogram, percentile curve), the time line, the capture's figures, counter deltas, socket
//! options, the per-request breakdown and the checks. Each part that the report lacks says
//! "not measured" with the reason its check gave.

use super::{a, charts, check_reason, e, esc, not_measured, svg, word};
use crate::i18n::Lang;
use crate::model::Report;
use std::fmt::{self, Write as _};

pub(super) fn latency(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="latency"><h2>{}</h2>"#,
        l.t("html-latency")
    )?;
    baseline(r, l, h)?;
    match &r.measurements.load {
        Some(load) => {
            let p = &load.latency_ms;
            write!(
                h,
                r#"<p class="lead">{}</p>"#,
                l.ui(
                    "html-load-lead",
                    &[
                        ("requests", a(load.requests.to_string())),
                        ("duration", a(format!("{:.1}", load.duration_s))),
                        ("connections", a(load.connections.to_string())),
                        ("rps", a(format!("{:.0}", load.requests_per_s))),
                        ("p50", a(svg::fmt_ms(p.p50))),
                        ("p90", a(svg::fmt_ms(p.p90))),
                        ("p99", a(svg::fmt_ms(p.p99))),
                        ("max", a(svg::fmt_ms(p.max))),
                    ]
                )
            )?;
            load_outcome(load, l, h)?;
            match charts::histogram(load, l) {
                Some(svg) => write!(
                    h,
                    r#"<figure id="histogram"><figcaption>{}</figcaption>{svg}</figure>"#,
                    l.t("html-histogram-caption")
                )?,
                None => not_measured(
                    l,
                    h,
                    "html-histogram",
                    Some(if load.requests == 0 {
                        l.t("html-no-request-completed")
                    } else {
                        l.t("html-no-histogram-data")
                    }),
                )?,
            }
            if let Some(svg) = charts::curve(load, l) {
                write!(
                    h,
                    r#"<figure id="percentiles"><figcaption>{}</figcaption>{svg}</figure>"#,
                    l.t("html-curve-caption")
                )?;
            }
        }
        None => not_measured(l, h, "html-load", check_reason(r, "load"))?,
    }
    if let Some(c) = &r.measurements.capture {
        let e = &c.exchanges;
        if e.count > 0 {
            write!(
                h,
                r#"<p class="lead">{}</p>"#,
                l.ui(
                    // Every exchange cut by the capture's end: no latency was measured.
                    if e.incomplete >= e.count && e.lost_by_capture > 0 {
                        "html-capture-lead-unseen"
                    } else if e.incomplete >= e.count {
                        "html-capture-lead-cut"
                    } else {
                        "html-capture-lead"
                    },
                    &[
                        ("n", a(e.count)),
                        ("p50", a(svg::fmt_ms(e.latency_ms.p50))),
                        ("p90", a(svg::fmt_ms(e.latency_ms.p90))),
                        ("p99", a(svg::fmt_ms(e.latency_ms.p99))),
                        ("max", a(svg::fmt_ms(e.latency_ms.max))),
                        (
                            "rtt",
                            a(match e.rtt_ms {
                                Some(rtt) =>
                                    l.ui("html-handshake-rtt", &[("rtt", a(svg::fmt_ms(rtt)))]),
                                None => String::new(),
                            })
                        ),
                    ]
                )
            )?;
        }
    }
    h.push_str("</section>\n");
    Ok(())
}

/// The baseline probes: what one connection and one request cost alone, before the load (the
/// method's first comparison: fine alone, slow under concurrency).
fn baseline(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    let Some(p) = &r.measurements.probe else {
        return Ok(());
    };
    let mut parts = Vec::new();
    if let Some(s) = &p.syn
        && let Some(med) = s.median_ms
    {
        parts.push(l.ui(
            "html-baseline-syn",
            &[
                ("rtt", e(&svg::fmt_ms(med))),
                ("answered", a(s.answered.to_string())),
                ("method", e(&word(&s.method))),
            ],
        ));
    }
    if let Some(t) = &p.http {
        // First byte counted from the start, as the terminal report and curl's
        // time_starttransfer count it (not the server's wait after the request, `ttfb_ms`).
        let tls = t.tls_ms.map_or(String::new(), |ms| {
            l.ui("html-baseline-tls", &[("tls", e(&svg::fmt_ms(ms)))])
        });
        parts.push(l.ui(
            "html-baseline-http",
            &[
                ("total", e(&svg::fmt_ms(t.total_ms))),
                ("connect", e(&svg::fmt_ms(t.connect_ms))),
                ("tls", a(tls)),
                ("first", e(&svg::fmt_ms(t.first_byte_ms))),
                ("status", a(t.status.to_string())),
            ],
        ));
    }
    if parts.is_empty() {
        return Ok(());
    }
    write!(
        h,
        r#"<p class="lead" id="baseline">{}</p>"#,
        l.ui(
            "html-baseline",
            &[("parts", a(parts.join(&l.t("html-list-sep"))))]
        )
    )
}

/// Status codes and errors of the load: a run whose requests failed says so next to its
/// latencies.
fn load_outcome(load: &netdoctor_load::LoadResult, l: Lang, h: &mut String) -> fmt::Result {
    let codes: Vec<String> = load
        .status
        .iter()
        .map(|(code, n)| format!("{code}: {n}"))
        .collect();
    let e = &load.errors;
    let total = e.total();
    write!(
        h,
        r#"<p class="lead{}">{}"#,
        if total > 0 { " errors" } else { "" },
        l.ui(
            "html-status-lead",
            &[
                (
                    "codes",
                    a(if codes.is_empty() {
                        l.t("html-none")
                    } else {
                        esc(&codes.join(", ")).to_string()
                    })
                ),
                ("total", a(total.to_string())),
            ]
        )
    )?;
    if total > 0 {
        write!(
            h,
            " {}",
            l.ui(
                "html-error-kinds",
                &[
                    ("connect", a(e.connect.to_string())),
                    ("read", a(e.read.to_string())),
                    ("write", a(e.write.to_string())),
                    ("timeout", a(e.timeout.to_string())),
                    ("status", a(e.status.to_string())),
                ]
            )
        )?;
    }
    if let Some(first) = &load.first_error {
        h.push_str(&l.ui("html-first-error", &[("error", super::e(first))]));
    }
    h.push_str(&l.t("html-end"));
    h.push_str("</p>");
    Ok(())
}

pub(super) fn over_time(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="timeline"><h2>{}</h2>"#,
        l.t("html-over-time")
    )?;
    match r
        .measurements
        .load
        .as_ref()
        .and_then(|load| charts::timeline(load, l))
    {
        Some(svg) => write!(
            h,
            r#"<figure><figcaption>{}</figcaption>{svg}</figure>"#,
            l.t("html-timeline-caption")
        )?,
        None => {
            let reason = if r.measurements.load.is_some() {
                Some(l.t("html-no-per-second"))
            } else {
                check_reason(r, "load")
            };
            not_measured(l, h, "html-timeline", reason)?
        }
    }
    h.push_str("</section>\n");
    Ok(())
}

pub(super) fn tables(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    write!(h, r#"<section id="host"><h2>{}</h2>"#, l.t("html-tables"))?;
    if let Some(c) = &r.measurements.capture {
        let s = &c.stats;
        let t = |id: &str| l.t(id);
        write!(
            h,
            r#"<h3>{} ({})</h3><table class="kv"><tbody><tr><th>{}</th><td>{}</td><th>{}</th><td>{}</td><th>{}</th><td>{} ({})</td></tr><tr><th>{}</th><td>{:.3} s</td><th>{}</th><td>{}</td><th>{}</th><td>{}</td></tr></tbody></table>"#,
            t("html-capture"),
            esc(&word(&c.source)),
            t("html-th-packets"),
            s.packets,
            t("html-th-segments"),
            s.tcp_segments,
            t("html-th-connections"),
            s.connections,
            l.ui(
                "html-with-handshake",
                &[("n", a(s.connections_with_handshake.to_string()))]
            ),
            t("html-th-duration"),
            s.duration_s,
            t("html-th-retransmitted"),
            s.retransmitted_segments,
            t("html-th-dropped"),
            s.capture_drops
        )?;
        if !c.warnings.is_empty() {
            h.push_str(r#"<ul class="warnings">"#);
            for w in &c.warnings {
                write!(h, "<li>{}</li>", esc(w))?;
            }
            h.push_str("</ul>");
        }
        if !s.bulk.is_empty() {
            write!(h, "<h3>{}</h3>", t("html-bulk"))?;
            h.push_str(&super::bulk::figures(&s.bulk, l));
        }
    }
    write!(h, "<h3>{}</h3>", l.t("html-counters"))?;
    match &r.measurements.counters {
        Some(c) if !c.changed.is_empty() => {
            write!(
                h,
                r#"<table class="num"><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr></thead><tbody>"#,
                l.t("html-th-counter"),
                l.t("html-th-before"),
                l.t("html-th-after"),
                l.t("html-th-change")
            )?;
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
        Some(_) => write!(
            h,
            r#"<p class="none">{}</p>"#,
            l.t("html-no-counter-changed")
        )?,
        None => not_measured(l, h, "html-kernel-counters", check_reason(r, "counters"))?,
    }
    write!(h, "<h3>{}</h3>", l.t("html-sockets"))?;
    match &r.measurements.server_sockets {
        Some(socks) if !socks.is_empty() => {
            write!(
                h,
                r#"<table class="num"><thead><tr><th>{}</th><th>pid</th><th>fd</th><th>{}</th><th>{}</th><th>TCP_NODELAY</th><th>TCP_CORK</th><th>SO_SNDBUF</th><th>SO_RCVBUF</th></tr></thead><tbody>"#,
                l.t("html-th-process"),
                l.t("html-th-state"),
                l.t("html-th-local")
            )?;
            for s in socks {
                // A listening socket sends nothing: its TCP_NODELAY is shown, neutrally.
                let listening = s.state == netdoctor_core::sockets::SocketState::Listen;
                let (class, nodelay) = match (listening, s.tcp_nodelay) {
                    (true, true) => ("listen", l.t("html-nodelay-listen-on")),
                    (true, false) => ("listen", l.t("html-nodelay-listen-off")),
                    (false, true) => ("on", l.t("html-nodelay-on")),
                    (false, false) => ("off", l.t("html-nodelay-off")),
                };
                write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&s.process),
                    s.pid,
                    s.fd,
                    esc(&word(&s.state)),
                    esc(&s.local),
                    class,
                    nodelay,
                    if s.tcp_cork { "on" } else { "off" },
                    s.sndbuf,
                    s.rcvbuf
                )?;
            }
            h.push_str("</tbody></table>");
        }
        _ => not_measured(
            l,
            h,
            "html-socket-options",
            check_reason(r, "socket_options").or_else(|| {
                Some(match r.measurements.capture.as_ref() {
                    Some(c) if word(&c.source) == "file" => l.t("html-offline"),
                    _ => l.t("html-not-local"),
                })
            }),
        )?,
    }
    h.push_str("</section>\n");
    Ok(())
}

pub(super) fn breakdown(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="breakdown"><h2>{}</h2>"#,
        l.t("html-breakdown")
    )?;
    let ex = r.measurements.capture.as_ref().map(|c| &c.exchanges);
    let (typical, mean) = (l.t("html-bar-typical"), l.t("html-bar-mean"));
    let bars: Vec<(&str, f64, Vec<charts::Part>)> = ex
        .into_iter()
        .flat_map(|e| {
            [
                (typical.as_str(), e.breakdown_p50_ms.as_ref()),
                (mean.as_str(), e.breakdown_mean_ms.as_ref()),
            ]
        })
        .filter_map(|(t, b)| {
            let v = serde_json::to_value(b?).ok()?;
            let (lat, parts) = charts::breakdown_parts(&v, l)?;
            Some((t, lat, parts))
        })
        .collect();
    match charts::stacked(&bars, l) {
        Some(svg) => {
            write!(
                h,
                r#"<figure id="breakdown-bar"><figcaption>{}</figcaption>{svg}</figure>"#,
                l.t("html-breakdown-caption")
            )?;
            if let Some(svg) = ex.and_then(|e| tail_bars(e, l)) {
                write!(
                    h,
                    r#"<figure id="tail-bars"><figcaption>{}</figcaption>{svg}</figure>"#,
                    l.t("html-tail-caption")
                )?;
            }
        }
        None => {
            let reason = if r.measurements.capture.is_none() {
                check_reason(r, "capture")
            } else {
                Some(l.t("html-no-complete-exchange"))
            };
            not_measured(l, h, "html-per-request-breakdown", reason)?
        }
    }
    h.push_str("</section>\n");
    Ok(())
}

/// One bar per distinct latency band (p50 … max), each over the full width, its stall parts
/// named with the share of the band's requests they stalled.
fn tail_bars(e: &netdoctor_core::analyze::ExchangeStats, l: Lang) -> Option<String> {
    let mut merged: Vec<(String, netdoctor_core::Breakdown)> = Vec::new();
    for (label, b) in crate::terminal::bands(e) {
        match merged.last_mut() {
            Some((t, prev)) if *prev == b => {
                t.push('/');
                t.push_str(label);
            }
            _ => merged.push((label.to_string(), b)),
        }
    }
    let titles: Vec<String> = merged
        .iter()
        .map(|(t, b)| {
            l.ui(
                "html-bar-band",
                &[("band", t.as_str().into()), ("n", b.requests.into())],
            )
        })
        .collect();
    let bars: Vec<(&str, f64, Vec<charts::Part>)> = merged
        .iter()
        .zip(&titles)
        .filter_map(|((_, b), title)| {
            let v = serde_json::to_value(b).ok()?;
            let (lat, mut parts) = charts::breakdown_parts(&v, l)?;
            for p in &mut parts {
                let id = p.class.strip_prefix("stall s-").unwrap_or_default();
                if let Some(sh) = v["share"].get(id).and_then(|x| x.as_f64()) {
                    p.label = l.ui(
                        "html-part-share",
                        &[
                            ("part", p.label.as_str().into()),
                            ("pct", format!("{:.0}", sh * 100.0).into()),
                        ],
                    );
                }
            }
            Some((title.as_str(), lat, parts))
        })
        .collect();
    // Two bars that are one band say nothing the first chart does not.
    (bars.len() > 1).then(|| charts::stacked_each_full(&bars, l))?
}

pub(super) fn checks(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="checks"><h2>{}</h2><table><thead><tr><th>{}</th><th>{}</th><th>{}</th></tr></thead><tbody>"#,
        l.t("html-checks"),
        l.t("html-th-check"),
        l.t("html-th-status"),
        l.t("html-th-note")
    )?;
    for c in &r.checks {
        let status = word(&c.status);
        write!(
            h,
            r#"<tr><td><code>{}</code></td><td class="st-{}">{}</td><td>{}</td></tr>"#,
            esc(&word(&c.name)),
            esc(&status),
            esc(&crate::terminal::word_in(&c.status, l)),
            esc(c.reason.as_deref().unwrap_or(""))
        )?;
    }
    h.push_str("</tbody></table></section>\n");
    Ok(())
}

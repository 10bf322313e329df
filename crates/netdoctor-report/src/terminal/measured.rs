//! The "Measured" block of the terminal report: the name's DNS lookups and the route (targets
//! given by name or routed), the probes, the load, the capture (with the per-request
//! breakdown), the server's sockets and the kernel counters, one labelled line each (labels
//! padded by display width, so Chinese labels line up too).

use super::{a, ms, thousands};
use crate::i18n::{Lang, pad};
use crate::model::Report;
use netdoctor_core::analyze::ExchangeMethod;
use owo_colors::OwoColorize;
use serde_json::Value;
use std::io::{self, Write};

/// A measurement line: its label padded to the label column, then the text.
fn row(out: &mut dyn Write, label: &str, text: &str) -> io::Result<()> {
    writeln!(out, "  {} {text}", pad(label, 14))
}

pub(super) fn render_measurements(
    report: &Report,
    lang: Lang,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(out, "{}", lang.t("term-measured").bold())?;
    let m = &report.measurements;
    let mut any = false;
    if let Some(line) = m.dns.as_ref().and_then(|v| dns_line(v, lang)) {
        any = true;
        row(out, &lang.t("term-dns"), &line)?;
    }
    if let Some(line) = m.trace.as_ref().and_then(|v| route_line(v, lang)) {
        any = true;
        row(out, &lang.t("term-route"), &line)?;
    }
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
        if let Some(c) = &probe.connect {
            any = true;
            let line = match (c.median_ms, c.min_ms, c.max_ms) {
                (Some(med), Some(min), Some(max)) => lang.ui(
                    "term-connect-line",
                    &[
                        ("median", a(ms(med))),
                        ("min", a(ms(min))),
                        ("max", a(ms(max))),
                        ("answered", a(c.answered.to_string())),
                        ("sent", a(c.sent.to_string())),
                    ],
                ),
                _ => lang.ui(
                    "term-connect-some",
                    &[
                        ("answered", a(c.answered.to_string())),
                        ("sent", a(c.sent.to_string())),
                    ],
                ),
            };
            row(out, &lang.t("term-connect"), &line)?;
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
            // HTTP/2 is named (HTTP/1.1 is what the row means without a name).
            let line = match &h.protocol {
                Some(p) => format!("{line} · {p}"),
                None => line,
            };
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
        let line = match l.protocol.as_deref().filter(|p| *p != "http/1.1") {
            Some(p) => format!("{line} · {p}"),
            None => line,
        };
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
                        None | Some(ExchangeMethod::Http1 | ExchangeMethod::H2) => "yes",
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
            // Every exchange cut by the capture's end: no latency was measured (its
            // percentiles are zeros), only first bytes.
            let key = if e.incomplete >= e.count && e.lost_by_capture > 0 {
                // Some of them ended in frames the capture missed, not by its end.
                "term-exchange-line-unseen"
            } else if e.incomplete >= e.count {
                "term-exchange-line-cut"
            } else {
                "term-exchange-line"
            };
            let line = lang.ui(
                key,
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
                ExchangeMethod::H2 => lang.t("term-exchanges-h2"),
                _ => lang.t("term-exchanges-mixed"),
            };
            row(out, "", &line)?;
        }
        let e = &c.exchanges;
        for (key, n) in [
            (
                "term-exchanges-cut",
                e.incomplete.saturating_sub(e.lost_by_capture),
            ),
            ("term-exchanges-lost", e.lost_by_capture),
        ] {
            if n > 0 {
                row(out, "", &lang.ui(key, &[("n", a(thousands(n)))]))?;
            }
        }
        for line in super::tail::tail_lines_in(&c.exchanges, lang) {
            row(out, "", &line)?;
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
    if let Some(k) = &m.kernel {
        any = true;
        row(out, "eBPF", &k.summary_line())?;
    }
    if !any {
        writeln!(out, "  {}", lang.t("term-nothing"))?;
    }
    Ok(())
}

/// `getaddrinfo 12.0 ms; 10.0.0.53 udp 3.00 ms`: the system lookup and each nameserver's
/// median UDP answer, from `measurements.dns` (`netdoctor-route`'s `DnsReport` kept as JSON);
/// `None` when it holds neither.
fn dns_line(v: &Value, lang: Lang) -> Option<String> {
    let mut parts = Vec::new();
    if v["answered_without_dns"].as_bool() == Some(true) {
        parts.push(lang.t("term-dns-no-dns"));
    }
    let g = &v["getaddrinfo"];
    if g["timed_out"].as_bool() == Some(true) {
        parts.push(lang.t("term-dns-gai-timeout"));
    } else if let Some(e) = g["error"].as_str() {
        parts.push(lang.ui("term-dns-gai-error", &[("error", a(e))]));
    } else if let Some(t) = g["elapsed_ms"].as_f64() {
        parts.push(lang.ui("term-dns-gai", &[("ms", a(ms(t)))]));
    }
    for s in v["servers"].as_array().into_iter().flatten() {
        let server = s["server"].as_str().unwrap_or("?");
        let udp = &s["udp"];
        parts.push(match udp["median_ms"].as_f64() {
            Some(t) => lang.ui(
                "term-dns-server",
                &[("server", a(server)), ("ms", a(ms(t)))],
            ),
            None => lang.ui(
                "term-dns-server-none",
                &[
                    ("server", a(server)),
                    (
                        "answered",
                        a(udp["answered"].as_u64().unwrap_or(0).to_string()),
                    ),
                    ("sent", a(udp["sent"].as_u64().unwrap_or(0).to_string())),
                ],
            ),
        });
    }
    (!parts.is_empty()).then(|| parts.join(&lang.t("term-sep")))
}

/// `3 hops (tcp); RTT to the target min 37.2 ms, median 37.9 ms`, from `measurements.trace`
/// (`netdoctor-route`'s `TraceResult` kept as JSON); `None` without hops.
fn route_line(v: &Value, lang: Lang) -> Option<String> {
    let hops = v["hops"].as_array().filter(|h| !h.is_empty())?;
    let n = hops.len();
    let protocol = v["protocol"].as_str().unwrap_or("?");
    let rtt = hops
        .iter()
        .find(|h| h["destination"].as_bool() == Some(true))
        .and_then(|d| Some((d["best_ms"].as_f64()?, d["median_ms"].as_f64()?)));
    Some(match rtt {
        Some((best, median)) => lang.ui(
            "term-route-line",
            &[
                ("n", a(n)),
                ("protocol", a(protocol)),
                ("best", a(ms(best))),
                ("median", a(ms(median))),
            ],
        ),
        None => lang.ui(
            "term-route-unreached",
            &[("n", a(n)), ("protocol", a(protocol))],
        ),
    })
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
        let name = super::tail::cause_name(id, lang);
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
pub(crate) fn is_interesting_counter(name: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `measurements.dns` and `.trace` as `netdoctor-route` writes them (fields trimmed to
    /// what the lines read, plus a few they must ignore).
    fn dns() -> Value {
        serde_json::json!({
            "name": "api.lab", "query_name": "api.lab.", "record_type": "A",
            "resolver": {}, "timeout_ms": 2000.0,
            "getaddrinfo": {"elapsed_ms": 12.04, "timed_out": false, "results": ["10.0.0.7"]},
            "servers": [
                {"server": "10.0.0.53", "position": 0,
                 "udp": {"transport": "udp", "tries": [], "sent": 3, "answered": 3, "loss": 0.0,
                         "min_ms": 2.9, "median_ms": 3.01, "max_ms": 3.4}},
                {"server": "10.0.0.54", "position": 1,
                 "udp": {"transport": "udp", "tries": [], "sent": 3, "answered": 0, "loss": 1.0}}
            ],
            "reverse": [], "notes": []
        })
    }

    fn trace(reached: bool) -> Value {
        let hop = |ttl: u8, dest: bool| {
            let mut h = serde_json::json!({"ttl": ttl, "addrs": [], "sent": 5, "loss": 0.0,
                "destination": dest});
            if reached || !dest {
                h["received"] = 5.into();
                h["best_ms"] = (10.0 * f64::from(ttl) + 7.2).into();
                h["median_ms"] = (10.0 * f64::from(ttl) + 7.9).into();
            } else {
                h["received"] = 0.into();
            }
            h
        };
        serde_json::json!({"target": "10.0.3.2", "protocol": "tcp", "port": 80,
            "reached": reached, "hops": [hop(1, false), hop(2, false), hop(3, true)],
            "hop_assessment": [], "notes": []})
    }

    #[test]
    fn dns_and_route_get_one_line_each_in_both_languages() {
        assert_eq!(
            dns_line(&dns(), Lang::En).unwrap(),
            "getaddrinfo 12.0 ms; 10.0.0.53 udp 3.01 ms; 10.0.0.54 udp no answer (0/3)"
        );
        assert_eq!(
            route_line(&trace(true), Lang::En).unwrap(),
            "3 hops (tcp); RTT to the target min 37.2 ms, median 37.9 ms"
        );
        assert_eq!(
            route_line(&trace(false), Lang::En).unwrap(),
            "3 hops probed (tcp); the target did not answer"
        );
        let zh = dns_line(&dns(), Lang::Zh).unwrap();
        assert!(zh.contains("12.0 ms") && zh.contains("无应答"), "{zh}");
        let zh = route_line(&trace(true), Lang::Zh).unwrap();
        assert!(zh.contains("3 跳") && zh.contains("37.2 ms"), "{zh}");
        // Nothing to say: no line.
        assert_eq!(
            dns_line(&serde_json::json!({"servers": []}), Lang::En),
            None
        );
        assert_eq!(route_line(&serde_json::json!({"hops": []}), Lang::En), None);
        let mut timed_out = dns();
        timed_out["getaddrinfo"] = serde_json::json!({"timed_out": true, "results": []});
        assert!(
            dns_line(&timed_out, Lang::En)
                .unwrap()
                .starts_with("getaddrinfo timed out; ")
        );
    }

    #[test]
    fn the_measured_block_shows_the_dns_and_route_lines() {
        let mut r = Report::new(
            crate::ReportCommand::Diagnose,
            crate::Target {
                input: "http://api.lab/".into(),
                address: None,
                protocol: None,
            },
        );
        r.measurements.dns = Some(dns());
        r.measurements.trace = Some(trace(true));
        for (lang, dns_label, route_label) in [
            (Lang::En, "DNS ", "Route "),
            (Lang::Zh, "域名解析 ", "路由 "),
        ] {
            let mut out = Vec::new();
            render_measurements(&r, lang, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            let line = |label: &str| {
                text.lines()
                    .find(|l| l.trim_start().starts_with(label))
                    .unwrap_or_else(|| panic!("no {label:?} line in:\n{text}"))
                    .to_string()
            };
            assert!(line(dns_label).contains("10.0.0.53"), "{text}");
            assert!(line(route_label).contains("37.9 ms"), "{text}");
            assert!(!text.contains('⟦') && !text.contains("{$"), "{text}");
        }
    }
}

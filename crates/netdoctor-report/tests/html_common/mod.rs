//! Shared by the HTML tests: reports built from real data, rendering, and a structural check of
//! the markup (which tags and attributes may appear at all).

#![allow(dead_code)]

use netdoctor_core::analyze::{Analyzer, AnalyzerConfig, CaptureStats, ExchangeStats};
use netdoctor_core::sockets::{ServerSocket, SocketState};
use netdoctor_core::verdict::VerdictInputs;
use netdoctor_core::{Evidence, Finding, FindingId, PacketRef, Severity, Side};
use netdoctor_load::{HttpTarget, LoadConfig};
use netdoctor_observe::PacketSource;
use netdoctor_observe::counters::{self, CounterDelta};
use netdoctor_observe::live::{LiveCapture, LiveConfig};
use netdoctor_observe::pcapfile::CaptureFile;
use netdoctor_probe::{HttpProbeConfig, SynProbeConfig};
use netdoctor_report::{
    CaptureSection, CaptureSource, Check, CheckName, CountersSection, ProbeSection, Report,
    ReportCommand, Target, html,
};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The issue's bound for a 10 s run's page.
pub const MAX_BYTES: usize = 500 * 1024;
/// Seconds of load in the live report.
pub const LOAD_SECS: u64 = 2;

pub fn out_dir() -> PathBuf {
    // Set for tests; the example that shares this file has no tmp dir of its own.
    let tmp = option_env!("CARGO_TARGET_TMPDIR").unwrap_or("target/tmp");
    let d = Path::new(tmp).join("html-test");
    std::fs::create_dir_all(&d).expect("create the test output dir");
    d
}

pub fn save(name: &str, page: &str) -> PathBuf {
    let p = out_dir().join(name);
    std::fs::write(&p, page).expect("write the page");
    p
}

pub fn render(r: &Report) -> String {
    let mut buf = Vec::new();
    html::render(r, &mut buf).expect("render");
    String::from_utf8(buf).expect("utf-8")
}

pub fn verdict_word(r: &Report) -> String {
    serde_json::to_value(r.verdict)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

/// The text from `start` to the next `end` after it.
pub fn between<'a>(page: &'a str, start: &str, end: &str) -> &'a str {
    let i = page.find(start).unwrap_or_else(|| panic!("no {start}"));
    let j = page[i..].find(end).map_or(page.len(), |j| i + j);
    &page[i..j]
}

pub fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(netdoctor_report::SCHEMA_JSON).unwrap();
    jsonschema::validator_for(&schema).expect("schema compiles")
}

const TAGS: &[&str] = &[
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "main",
    "section",
    "footer",
    "h1",
    "h2",
    "h3",
    "p",
    "div",
    "span",
    "b",
    "code",
    "ul",
    "li",
    "article",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "figure",
    "figcaption",
    "details",
    "summary",
    "a",
    "svg",
    "line",
    "rect",
    "text",
    "polyline",
    "circle",
    "path",
];

/// Every element in the page is one the renderer writes, no attribute is an event handler or
/// loads anything, and links stay inside the page. A parser of the markup the renderer writes
/// (quoted attributes; `<` never appears in text, because text is escaped): an injected tag or
/// attribute shows up here as one that should not be there.
pub fn assert_structure(page: &str) {
    let b = page.as_bytes();
    let mut i = 0;
    let mut count = 0;
    while let Some(off) = page[i..].find('<') {
        i += off + 1;
        if page[i..].starts_with("!DOCTYPE") {
            continue;
        }
        let closing = b.get(i) == Some(&b'/');
        if closing {
            i += 1;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'-') {
            i += 1;
        }
        let name = &page[start..i];
        assert!(
            TAGS.contains(&name),
            "unexpected element <{name}> near {:?}",
            ctx(page, start)
        );
        count += 1;
        if closing {
            continue;
        }
        // Attributes up to `>` or `/>`.
        loop {
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            match b.get(i) {
                None => panic!("unterminated <{name}>"),
                Some(b'>') => break,
                Some(b'/') if b.get(i + 1) == Some(&b'>') => break,
                _ => {}
            }
            let a0 = i;
            while i < b.len() && !matches!(b[i], b'=' | b'>' | b'/') && !b[i].is_ascii_whitespace()
            {
                i += 1;
            }
            let attr = page[a0..i].to_ascii_lowercase();
            let mut value = "";
            if b.get(i) == Some(&b'=') {
                i += 1;
                let q = b[i];
                assert!(q == b'"', "unquoted attribute {attr} in <{name}>");
                let v0 = i + 1;
                let v1 = v0 + page[v0..].find('"').expect("closing quote");
                value = &page[v0..v1];
                i = v1 + 1;
            }
            assert!(!attr.starts_with("on"), "event handler {attr} in <{name}>");
            assert!(
                !matches!(
                    attr.as_str(),
                    "src" | "srcdoc" | "action" | "formaction" | "style"
                ),
                "attribute {attr} in <{name}>"
            );
            if attr == "href" {
                assert!(value.starts_with('#'), "link out of the page: {value}");
            }
            assert!(!value.contains('<'), "raw < in {attr} of <{name}>");
        }
        if name == "style" {
            let end = page[i..].find("</style>").expect("</style>");
            assert!(!page[i..i + end].contains('<'), "markup in the style sheet");
            i += end;
        }
    }
    assert!(count > 20, "only {count} tags: not a report page");
}

fn ctx(page: &str, i: usize) -> &str {
    let lo = page.floor_char_boundary(i.saturating_sub(60));
    let hi = page.ceil_char_boundary((i + 60).min(page.len()));
    &page[lo..hi]
}

pub fn capture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures")
        .join(name)
}

/// The report `netdoctor analyze FILE` makes (same steps as the binary's `analyze.rs`).
pub fn report_from_capture(name: &str) -> Report {
    let mut r = report_from_path(&capture_path(name));
    r.target.input = format!("testdata/captures/{name}");
    r
}

/// [`report_from_capture`] for any capture file.
pub fn report_from_path(path: &Path) -> Report {
    let started = Instant::now();
    let mut file = CaptureFile::open(path).expect("open capture");
    let mut analyzer = Analyzer::new(AnalyzerConfig::default());
    let summary = file
        .for_each_packet(&mut |p| {
            analyzer.push(p);
            ControlFlow::Continue(())
        })
        .expect("read capture");
    let analysis = analyzer.finish();
    let mut report = Report::new(
        ReportCommand::Analyze,
        Target {
            input: path.display().to_string(),
            address: None,
            protocol: None,
        },
    );
    let mut warnings = summary.warnings.clone();
    warnings.extend(analysis.warnings.iter().cloned());
    report.checks.push(Check::ok(CheckName::Capture));
    for stage in [
        CheckName::SynProbe,
        CheckName::HttpProbe,
        CheckName::Load,
        CheckName::Counters,
    ] {
        report
            .checks
            .push(Check::skipped(stage, "offline analysis of a capture file"));
    }
    let conclusive = analysis.exchanges.count > 0 || analysis.stats.connections > 0;
    report.findings = analysis.findings;
    report.measurements.capture = Some(CaptureSection {
        source: CaptureSource::File,
        snaplen: None,
        pcap_file: None,
        stats: analysis.stats,
        exchanges: analysis.exchanges,
        warnings,
    });
    report.decide(&VerdictInputs {
        exchanges: if conclusive { 100 } else { 0 },
        capture_present: true,
        ..Default::default()
    });
    report.elapsed_s = started.elapsed().as_secs_f64();
    report
}

/// A real run the way `diagnose` makes one, on loopback: the built-in reference server with
/// TCP_NODELAY off (Nagle on: the reference stall) on 127.0.0.1, kernel counters before and
/// after, a live capture of the port on `lo` during the load when this process may open a
/// packet socket, and `secs` of load on 20 connections. `None` (with the reason printed)
/// when the server cannot start.
pub fn live_report(secs: u64) -> Option<Report> {
    let started = Instant::now();
    // Below the ephemeral range: a port bind(0) freed could be taken before the server binds it.
    let port = netdoctor_lab::ports::unused_port([127, 0, 0, 1]);
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let servers = match netdoctor_lab::builtin::BuiltinServers::start(&[(addr, false)]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("SKIPPED live report: the reference server cannot start: {e}");
            return None;
        }
    };
    let mut report = Report::new(
        ReportCommand::Diagnose,
        Target {
            input: format!("http://{addr}/"),
            address: Some(addr.to_string()),
            protocol: None,
        },
    );
    // Baseline probes, as diagnose makes them: the handshake RTT and one request alone.
    let syn = netdoctor_probe::syn_rtt(addr, &SynProbeConfig::default());
    let http = netdoctor_probe::http_timing(addr, &HttpProbeConfig::default());
    report.checks.push(Check::ok(CheckName::SynProbe));
    report.checks.push(match &http {
        Ok(_) => Check::ok(CheckName::HttpProbe),
        Err(e) => Check::failed(CheckName::HttpProbe, e.to_string()),
    });
    report.measurements.probe = Some(ProbeSection {
        syn: Some(syn),
        http: http.ok(),
        connect: None,
    });
    let before = counters::snapshot();
    let stop = AtomicBool::new(false);
    let capture = LiveCapture::open(&LiveConfig {
        interface: Some("lo".into()),
        ..LiveConfig::new(port)
    });
    let mut cfg = LoadConfig::new(HttpTarget {
        addr,
        host: addr.to_string(),
        path: "/".into(),
    });
    cfg.connections = 20;
    cfg.threads = 2;
    cfg.duration = Duration::from_secs(secs);
    let stop = &stop;
    let (load, analysis) = std::thread::scope(|s| {
        let cap = match capture {
            Ok(mut cap) => Some(s.spawn(move || {
                let mut a = Analyzer::new(AnalyzerConfig {
                    server_port: Some(port),
                    ..AnalyzerConfig::default()
                });
                let summary = cap.run(stop, &mut |p| a.push(p));
                summary.map(|sm| {
                    a.note_capture_drops(sm.drops);
                    (a.finish(), sm)
                })
            })),
            Err(e) => {
                report
                    .checks
                    .push(Check::skipped(CheckName::Capture, e.to_string()));
                None
            }
        };
        let load = netdoctor_load::run(&cfg, &AtomicBool::new(false), &mut |_| {});
        stop.store(true, Ordering::Relaxed);
        let analysis = cap.map(|h| h.join().expect("capture thread"));
        (load, analysis)
    });
    servers.stop();
    let load = load.expect("load run");
    report.checks.push(Check::ok(CheckName::Load));
    let mut conclusive = false;
    match analysis {
        Some(Ok((a, summary))) => {
            report.checks.push(Check::ok(CheckName::Capture));
            conclusive = a.exchanges.count >= 20;
            let mut warnings = summary.warnings;
            warnings.extend(a.warnings.iter().cloned());
            report.findings = a.findings;
            report.measurements.capture = Some(CaptureSection {
                source: CaptureSource::Live,
                snaplen: Some(LiveConfig::new(port).snaplen),
                pcap_file: None,
                stats: a.stats,
                exchanges: a.exchanges,
                warnings,
            });
        }
        Some(Err(e)) => report
            .checks
            .push(Check::failed(CheckName::Capture, e.to_string())),
        None => {}
    }
    match (before, counters::snapshot()) {
        (Ok(b), Ok(a)) => {
            report.checks.push(Check::ok(CheckName::Counters));
            report.measurements.counters = Some(CountersSection {
                changed: counters::delta(&b, &a),
            });
        }
        (Err(e), _) | (_, Err(e)) => report
            .checks
            .push(Check::failed(CheckName::Counters, e.to_string())),
    }
    report.checks.push(Check::skipped(
        CheckName::SocketOptions,
        "the server runs inside the test process, whose own sockets are not read",
    ));
    report.measurements.load = Some(load);
    report.decide(&VerdictInputs {
        exchanges: if conclusive { 100 } else { 0 },
        capture_present: true,
        ..Default::default()
    });
    report.elapsed_s = started.elapsed().as_secs_f64();
    Some(report)
}

/// Markup and quotes in every string a report can carry (names from a capture file or a host
/// can be anything).
pub const HOSTILE: &str =
    r#"<script>alert(1)</script>"><img src=x onerror=alert(2)>' onmouseover='alert(3)"#;

pub fn hostile_report() -> Report {
    let h = HOSTILE.to_string();
    let mut r = Report::new(
        ReportCommand::Analyze,
        Target {
            input: h.clone(),
            address: Some(h.clone()),
            protocol: None,
        },
    );
    let mut f = Finding::new(
        FindingId::NagleDelayedAck,
        Severity::Critical,
        Side::Server,
        &h,
    );
    f.explanation = h.clone();
    f.fix = h.clone();
    let pkt = |frame, time: f64| PacketRef {
        frame,
        time,
        ts: 1_700_000_000.0 + time,
        dir: h.clone(),
        desc: h.clone(),
    };
    f.evidence = vec![
        Evidence::Packets {
            connection: format!("{h} → {h}"),
            packets: vec![pkt(1, 0.0), pkt(2, 0.045), pkt(3, 0.0451)],
            note: h.clone(),
        },
        Evidence::Packets {
            connection: h.clone(),
            packets: vec![pkt(4, 0.1)],
            note: h.clone(),
        },
        Evidence::Counter {
            name: h.clone(),
            before: 1,
            after: 2,
            note: h.clone(),
        },
        Evidence::SocketOption {
            pid: 1,
            fd: 3,
            option: h.clone(),
            value: h.clone(),
            note: h.clone(),
        },
        Evidence::Probe {
            probe: h.clone(),
            note: h.clone(),
        },
        Evidence::Log {
            line: h.clone(),
            note: h.clone(),
        },
    ];
    r.findings.push(f);
    r.measurements.capture = Some(CaptureSection {
        source: CaptureSource::File,
        snaplen: None,
        pcap_file: Some(h.clone()),
        stats: CaptureStats::default(),
        exchanges: ExchangeStats::default(),
        warnings: vec![h.clone()],
    });
    r.measurements.counters = Some(CountersSection {
        changed: vec![CounterDelta {
            name: h.clone(),
            before: 0,
            after: 7,
        }],
    });
    r.measurements.server_sockets = Some(vec![ServerSocket {
        pid: 1,
        process: h.clone(),
        fd: 3,
        state: SocketState::Established,
        local: h.clone(),
        tcp_nodelay: false,
        tcp_cork: false,
        sndbuf: 1,
        rcvbuf: 1,
    }]);
    // A load section read back from JSON, with a hostile first error.
    r.measurements.load = Some(
        serde_json::from_value(serde_json::json!({
            "connections": 1, "threads": 1, "duration_s": 1.0, "requests": 1,
            "requests_per_s": 1.0, "bytes_read": 10, "transfer_per_s": 10.0,
            "latency_ms": {"mean": 1.0, "p50": 1.0, "p75": 1.0, "p90": 1.0, "p99": 1.0,
                           "p999": 1.0, "max": 1.0, "stdev": 0.0},
            "status": {"500": 1}, "errors": {"connect": 0, "read": 0, "write": 0,
                                              "timeout": 0, "status": 1},
            "first_error": h,
        }))
        .expect("load section from JSON"),
    );
    r.checks.push(Check::failed(CheckName::Capture, h.clone()));
    r.decide(&VerdictInputs {
        exchanges: 100,
        capture_present: true,
        ..Default::default()
    });
    r
}

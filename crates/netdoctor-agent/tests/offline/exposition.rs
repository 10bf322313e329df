//! The exposition from window reports, and the `/metrics` endpoint's answers and bounds.

use crate::common;

use netdoctor_agent::server::MAX_REQUEST;
use netdoctor_agent::{AgentMetrics, MetricsServer};
use netdoctor_core::{Finding, FindingId, Percentiles, Severity, Side};
use netdoctor_observe::counters::CounterDelta;
use netdoctor_report::{CaptureSection, CountersSection, Report, Target};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

fn window(findings: Vec<Finding>, exchanges: u64) -> Report {
    let mut r = Report::new(
        netdoctor_report::ReportCommand::Watch,
        Target {
            input: "tcp port 8081".into(),
            address: None,
            protocol: None,
        },
    );
    r.findings = findings;
    let mut cap = CaptureSection {
        source: netdoctor_report::CaptureSource::Live,
        snaplen: Some(256),
        pcap_file: None,
        stats: Default::default(),
        exchanges: Default::default(),
        warnings: Vec::new(),
    };
    cap.stats.packets = 4 * exchanges;
    cap.stats.retransmitted_segments = 3;
    cap.exchanges.count = exchanges;
    cap.exchanges.latency_ms = Percentiles {
        p50: 40.0,
        p90: 44.0,
        p99: 48.0,
        max: 60.0,
        ..Percentiles::default()
    };
    r.measurements.capture = Some(cap);
    r.measurements.counters = Some(CountersSection {
        changed: vec![CounterDelta {
            name: "TcpExt.ListenOverflows".into(),
            before: 10,
            after: 17,
        }],
    });
    r.decide(&netdoctor_core::verdict::VerdictInputs {
        exchanges: if exchanges > 0 { 100 } else { 0 },
        capture_present: true,
        ..Default::default()
    });
    r
}

fn nagle() -> Finding {
    let mut f = Finding::new(
        FindingId::NagleDelayedAck,
        Severity::Critical,
        Side::Server,
        "Nagle waits for the delayed ACK",
    );
    f.impact.added_latency_ms = Some(40.5);
    f.impact.affected_fraction = Some(0.9);
    f
}

fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn findings_latency_and_counters_become_labelled_series() {
    let m = AgentMetrics::new();
    m.record_window(8081, &window(vec![nagle()], 1000), 1_700_000_000.0);
    let t = m.encode();
    let labels = r#"{id="nagle_delayed_ack",side="server",port="8081"}"#;
    assert_eq!(
        sample(&t, &format!("netdoctor_finding_active{labels}")),
        Some(1.0),
        "{t}"
    );
    assert_eq!(
        sample(
            &t,
            &format!("netdoctor_finding_added_latency_seconds{labels}")
        ),
        Some(0.0405)
    );
    assert_eq!(
        sample(&t, &format!("netdoctor_finding_windows_total{labels}")),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &t,
            r#"netdoctor_windows_total{port="8081",verdict="problem"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&t, r#"netdoctor_requests_total{port="8081"}"#),
        Some(1000.0)
    );
    assert_eq!(
        sample(
            &t,
            r#"netdoctor_request_duration_seconds_bucket{le="0.05",port="8081"}"#
        )
        .or_else(|| sample(
            &t,
            r#"netdoctor_request_duration_seconds_bucket{port="8081",le="0.05"}"#
        )),
        Some(992.0), // p99 = 48 ms, max = 60 ms: 0.99 + 0.01 × 2/12
        "{t}"
    );
    assert_eq!(
        sample(
            &t,
            r#"netdoctor_window_request_duration_seconds{port="8081",quantile="0.99"}"#
        ),
        Some(0.048)
    );
    assert_eq!(
        sample(
            &t,
            r#"netdoctor_kernel_stat_total{stat="TcpExt.ListenOverflows"}"#
        ),
        Some(17.0) // the kernel's own count, not the window's delta
    );
    assert_eq!(
        sample(
            &t,
            r#"netdoctor_tcp_retransmitted_segments_total{port="8081"}"#
        ),
        Some(3.0)
    );
    assert!(sample(&t, "process_resident_memory_bytes").is_some_and(|v| v > 0.0));
    assert!(t.contains("# TYPE process_cpu_seconds counter"));

    // The listener sampled over the window: gauges with the port label; gone with it.
    let l = netdoctor_agent::host::ListenerWindow {
        samples: 30,
        max_accept_queue: 129,
        backlog: 128,
        full_samples: 3,
        max_syn_recv: 40,
    };
    m.record_host(8081, Some(&l), 52);
    let t = m.encode();
    for (name, want) in [
        ("netdoctor_listen_queue_depth", 129.0),
        ("netdoctor_listen_queue_limit", 128.0),
        ("netdoctor_listen_queue_full_ratio", 0.1),
        ("netdoctor_syn_recv_connections", 40.0),
        ("netdoctor_tcp_open_connections", 52.0),
    ] {
        assert_eq!(
            sample(&t, &format!(r#"{name}{{port="8081"}}"#)),
            Some(want),
            "{name}"
        );
    }
    m.record_host(8081, None, 0);
    let t = m.encode();
    assert_eq!(
        sample(&t, r#"netdoctor_listen_queue_depth{port="8081"}"#),
        None
    );

    // Next window: healthy. The finding's series drop to 0, its window count stays.
    m.record_window(8081, &window(vec![], 500), 1_700_000_030.0);
    let t = m.encode();
    assert_eq!(
        sample(&t, &format!("netdoctor_finding_active{labels}")),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &t,
            &format!("netdoctor_finding_added_latency_seconds{labels}")
        ),
        Some(0.0)
    );
    assert_eq!(
        sample(&t, &format!("netdoctor_finding_windows_total{labels}")),
        Some(1.0)
    );
    assert_eq!(
        sample(&t, r#"netdoctor_requests_total{port="8081"}"#),
        Some(1500.0)
    );
    assert_eq!(
        sample(
            &t,
            r#"netdoctor_windows_total{port="8081",verdict="healthy"}"#
        ),
        Some(1.0)
    );
}

fn http(addr: std::net::SocketAddr, req: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let _ = s.write_all(req);
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn endpoint_serves_only_get_metrics_and_bounds_requests() {
    let m = Arc::new(AgentMetrics::new());
    m.record_window(8081, &window(vec![nagle()], 10), 0.0);
    let srv = MetricsServer::start("127.0.0.1:0".parse().unwrap(), Arc::clone(&m)).unwrap();
    let a = srv.local_addr();
    let ok = http(
        a,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n",
    );
    assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
    assert!(ok.contains("application/openmetrics-text"));
    assert!(ok.contains("netdoctor_finding_active{"));
    assert!(ok.trim_end().ends_with("# EOF"));
    let classic = http(a, b"GET /metrics HTTP/1.1\r\nAccept: */*\r\n\r\n");
    assert!(classic.contains("text/plain; version=0.0.4"), "{classic}");
    assert!(classic.contains("# TYPE netdoctor_requests_total counter"));
    assert!(!classic.contains("# EOF"));
    let q = http(a, b"GET /metrics?x=1 HTTP/1.0\r\n\r\n");
    assert!(q.starts_with("HTTP/1.1 200"), "{q}");
    let nf = http(a, b"GET / HTTP/1.1\r\n\r\n");
    assert!(nf.starts_with("HTTP/1.1 404"), "{nf}");
    let post = http(a, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert!(post.starts_with("HTTP/1.1 405"), "{post}");
    let junk = http(a, b"hello\r\n\r\n");
    assert!(junk.starts_with("HTTP/1.1 400"), "{junk}");
    let mut big = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', MAX_REQUEST + 10));
    let big = http(a, &big);
    assert!(big.starts_with("HTTP/1.1 400"), "{big}");
    // Still serving after the bad requests.
    assert!(http(a, b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
    drop(srv);
    // Stopped on drop: nothing answers on the port any more. One connect may still succeed
    // without a listener of ours: a process that another test forks in the same moment holds a
    // copy of the listener until it execs (CLOEXEC), and a connect can pick the closed port as
    // its own source and connect to itself. Neither lasts, so a few tries tell them apart.
    let refused = (0..50).any(|_| {
        let r = TcpStream::connect(a).is_err();
        if !r {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        r
    });
    assert!(refused, "still accepting on {a} one second after drop");
}

/// `promtool check metrics` (Debian's prometheus package) accepts the exposition.
#[test]
fn promtool_accepts_the_exposition() {
    let Ok(out) = std::process::Command::new("promtool")
        .arg("--version")
        .output()
    else {
        eprintln!("skipped: needs promtool (apt-get install prometheus)");
        return;
    };
    assert!(out.status.success());
    let m = AgentMetrics::new();
    m.record_window(8081, &window(vec![nagle()], 1000), 1.0);
    m.record_host(
        8081,
        Some(&netdoctor_agent::host::ListenerWindow {
            samples: 30,
            max_accept_queue: 3,
            backlog: 511,
            full_samples: 0,
            max_syn_recv: 1,
        }),
        12,
    );
    let text = m.encode_text_004();
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let msg = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{msg}\n---\n{text}"
    );
    assert!(msg.trim().is_empty(), "promtool lint findings:\n{msg}");
}

#[test]
fn a_finding_whose_severity_changes_stays_one_series() {
    let m = AgentMetrics::new();
    let mut f = nagle();
    f.severity = Severity::Warning;
    m.record_window(8081, &window(vec![f.clone()], 1000), 1.0);
    f.severity = Severity::Critical;
    m.record_window(8081, &window(vec![f], 1000), 2.0);
    let t = m.encode();
    let series: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("netdoctor_finding_active{"))
        .collect();
    assert_eq!(series.len(), 1, "{series:?}");
    assert!(
        !t.contains("severity=\""),
        "severity is a value, not a label:\n{t}"
    );
    let labels = r#"{id="nagle_delayed_ack",side="server",port="8081"}"#;
    assert_eq!(
        sample(&t, &format!("netdoctor_finding_severity{labels}")),
        Some(3.0)
    );
    // Gone in the next window: both drop to 0, the series stays.
    m.record_window(8081, &window(Vec::new(), 1000), 3.0);
    let t = m.encode();
    assert_eq!(
        sample(&t, &format!("netdoctor_finding_active{labels}")),
        Some(0.0)
    );
    assert_eq!(
        sample(&t, &format!("netdoctor_finding_severity{labels}")),
        Some(0.0)
    );
}

#[test]
fn kernel_counters_go_up_only_with_the_kernel() {
    let m = AgentMetrics::new();
    let counters = |before, after| CountersSection {
        changed: vec![CounterDelta {
            name: "TcpExt.ListenDrops".into(),
            before,
            after,
        }],
    };
    let mut r = window(Vec::new(), 0);
    r.measurements.counters = Some(counters(5, 9));
    m.record_window(1, &r, 1.0);
    r.measurements.counters = Some(counters(9, 12));
    m.record_window(1, &r, 2.0);
    let name = r#"netdoctor_kernel_stat_total{stat="TcpExt.ListenDrops"}"#;
    assert_eq!(sample(&m.encode(), name), Some(12.0));
    // A recreated namespace starts again from 0: the exported counter does not go down.
    r.measurements.counters = Some(counters(0, 2));
    m.record_window(1, &r, 3.0);
    assert_eq!(sample(&m.encode(), name), Some(12.0));
}

/// Every exported kernel counter exists in this kernel's /proc/net/netstat or /proc/net/snmp.
#[test]
fn every_exported_kernel_counter_exists_in_the_running_kernel() {
    let mut names = std::collections::BTreeSet::new();
    for file in ["/proc/net/netstat", "/proc/net/snmp"] {
        let Ok(text) = std::fs::read_to_string(file) else {
            eprintln!("skipped: cannot read {file}");
            return;
        };
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.chunks(2) {
            let [head, _] = pair else { continue };
            let mut words = head.split_whitespace();
            let Some(prefix) = words.next() else { continue };
            let prefix = prefix.trim_end_matches(':');
            for w in words {
                names.insert(format!("{prefix}.{w}"));
            }
        }
    }
    for c in netdoctor_agent::metrics::KERNEL_COUNTERS {
        assert!(names.contains(c), "{c} is not a counter of this kernel");
    }
}

/// The histogram counts real exchanges: a capture of the Nagle case (every stalled request
/// ~40 ms or more, the first ones on each connection fast) analyzed by the core, and its
/// buckets checked against the exchanges' own latencies.
#[test]
fn the_request_histogram_counts_each_exchange_in_its_bucket() {
    let analysis = common::analyze_nagle_capture();
    let x = &analysis.exchanges;
    assert!(x.count >= 20, "{}", x.count);
    assert_eq!(
        x.latency_cumulative.len(),
        netdoctor_core::LATENCY_BOUNDS_MS.len()
    );
    let mut r = window(Vec::new(), 0);
    r.measurements.capture.as_mut().unwrap().exchanges = x.clone();
    let m = AgentMetrics::new();
    m.record_window(80, &r, 1.0);
    let t = m.encode();
    let bucket = |le: &str| {
        sample(
            &t,
            &format!(r#"netdoctor_request_duration_seconds_bucket{{le="{le}",port="80"}}"#),
        )
        .or_else(|| {
            sample(
                &t,
                &format!(r#"netdoctor_request_duration_seconds_bucket{{port="80",le="{le}"}}"#),
            )
        })
        .unwrap_or_else(|| panic!("no bucket {le}:\n{t}"))
    };
    // Below the delayed-ACK timer vs at or above it: the split the exchanges themselves show.
    let fast = x.latency_cumulative[5] as f64; // ≤ 35 ms
    assert_eq!(bucket("0.035"), fast);
    // Exchanges with a latency (one cut by the capture's end has none).
    let with_latency = (x.count - x.incomplete) as f64;
    assert_eq!(bucket("+Inf"), with_latency);
    let stalled = with_latency - fast;
    assert!(
        stalled > 0.0 && fast > 0.0,
        "fast {fast}, stalled {stalled}"
    );
    // The buckets agree with the exchanges' own median: it is on the side of 35 ms the
    // cumulative count says it is.
    assert_eq!(
        x.latency_ms.p50 > 35.0,
        fast < with_latency / 2.0,
        "{:?}",
        x.latency_ms
    );
}

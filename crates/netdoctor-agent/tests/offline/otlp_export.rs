//! OTLP export against an in-process fake collector: a TcpListener on 127.0.0.1 that records
//! each POST, answers 200, and whose bodies are decoded with the OTLP protobuf definitions.

use netdoctor_agent::WindowResult;
use netdoctor_agent::otlp::OtlpExporter;
use netdoctor_core::{Finding, FindingId, Percentiles, Severity, Side};
use netdoctor_report::{CaptureSection, Report, Target};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyV;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as NumV;
use prost::Message;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Debug, Clone)]
struct Post {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// The fake collector; stopped and joined on drop (also when the test fails).
struct Collector {
    addr: SocketAddr,
    posts: Arc<Mutex<Vec<Post>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Collector {
    fn start() -> Collector {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let posts = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (Arc::clone(&posts), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let Ok((mut c, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                c.set_nonblocking(false).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 16384];
                let (head_end, len) = loop {
                    let n = c.read(&mut chunk).unwrap_or(0);
                    if n == 0 {
                        break (None, 0);
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (Some(i), len);
                    }
                    assert!(buf.len() < 1 << 20, "head too large");
                };
                let Some(h) = head_end else { continue };
                while buf.len() < h + 4 + len {
                    let n = c.read(&mut chunk).unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let head = String::from_utf8_lossy(&buf[..h]).to_string();
                let path = head
                    .lines()
                    .next()
                    .and_then(|l| l.split(' ').nth(1))
                    .unwrap_or("")
                    .to_string();
                let content_type = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-type")
                            .then(|| v.trim().to_string())
                    })
                    .unwrap_or_default();
                p.lock().unwrap().push(Post {
                    path,
                    content_type,
                    body: buf[h + 4..].to_vec(),
                });
                let _ = c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Collector {
            addr,
            posts,
            stop,
            thread: Some(thread),
        }
    }

    fn posts(&self, path: &str) -> Vec<Post> {
        self.posts
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.path == path)
            .cloned()
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn window() -> WindowResult {
    let mut r = Report::new(
        netdoctor_report::ReportCommand::Watch,
        Target {
            input: "tcp port 8081".into(),
            address: None,
            protocol: None,
        },
    );
    let mut f = Finding::new(
        FindingId::NagleDelayedAck,
        Severity::Critical,
        Side::Server,
        "the server's Nagle algorithm waits for the client's delayed ACK",
    );
    f.impact.added_latency_ms = Some(40.5);
    f.fix = "set TCP_NODELAY on the server".into();
    r.findings.push(f);
    let mut cap = CaptureSection {
        source: netdoctor_report::CaptureSource::Live,
        snaplen: Some(256),
        pcap_file: None,
        stats: Default::default(),
        exchanges: Default::default(),
        warnings: Vec::new(),
    };
    cap.exchanges.count = 1234;
    cap.exchanges.latency_ms = Percentiles {
        p50: 41.0,
        p90: 43.0,
        p99: 45.0,
        max: 50.0,
        ..Percentiles::default()
    };
    r.measurements.capture = Some(cap);
    r.decide(&netdoctor_core::verdict::VerdictInputs {
        exchanges: 1234,
        capture_present: true,
        ..Default::default()
    });
    WindowResult {
        port: 8081,
        index: 1,
        end_unix_ms: 0,
        report: r,
        stored: None,
        evidence: None,
        listener: Some(netdoctor_agent::host::ListenerWindow {
            samples: 30,
            max_accept_queue: 7,
            backlog: 511,
            full_samples: 0,
            max_syn_recv: 2,
        }),
        kmsg_lines: 0,
        open_connections: 50,
    }
}

#[test]
fn metrics_and_findings_reach_the_collector() {
    let col = Collector::start();
    let mut exp = OtlpExporter::start(&format!("http://{}", col.addr)).unwrap();
    exp.record_window(&window()).expect("export");
    exp.shutdown().expect("shutdown");

    let m = col.posts("/v1/metrics");
    assert!(!m.is_empty(), "no POST to /v1/metrics");
    assert_eq!(m[0].content_type, "application/x-protobuf");
    let mut names = Vec::new();
    let mut requests = None;
    let mut active = None;
    let mut depth = None;
    for p in &m {
        let req = ExportMetricsServiceRequest::decode(p.body.as_slice()).expect("protobuf");
        for rm in &req.resource_metrics {
            let svc = rm.resource.as_ref().and_then(|r| {
                r.attributes
                    .iter()
                    .find(|a| a.key == "service.name")
                    .and_then(|a| match a.value.as_ref()?.value.as_ref()? {
                        AnyV::StringValue(s) => Some(s.clone()),
                        _ => None,
                    })
            });
            assert_eq!(svc.as_deref(), Some("netdoctor-agent"));
            for sm in &rm.scope_metrics {
                for metric in &sm.metrics {
                    names.push(metric.name.clone());
                    let points = match &metric.data {
                        Some(Data::Sum(s)) => &s.data_points,
                        Some(Data::Gauge(g)) => &g.data_points,
                        _ => continue,
                    };
                    let v = points.iter().find_map(|d| match d.value {
                        Some(NumV::AsInt(i)) => Some(i as f64),
                        Some(NumV::AsDouble(x)) => Some(x),
                        None => None,
                    });
                    match metric.name.as_str() {
                        "netdoctor.requests" => requests = v,
                        "netdoctor.listen.queue.depth" => depth = v,
                        "netdoctor.finding.active" => {
                            let has_id = points.iter().any(|d| {
                                d.attributes.iter().any(|a| {
                                    a.key == "finding.id"
                                        && matches!(a.value.as_ref().and_then(|v| v.value.as_ref()),
                                            Some(AnyV::StringValue(s)) if s == "nagle_delayed_ack")
                                })
                            });
                            assert!(has_id, "finding.active without the finding id");
                            active = v;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    for want in [
        "netdoctor.finding.active",
        "netdoctor.finding.added_latency",
        "netdoctor.requests",
        "netdoctor.window.request.duration",
        "netdoctor.capture.packets",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    assert_eq!(requests, Some(1234.0));
    assert_eq!(depth, Some(7.0), "the listener's accept queue");
    assert_eq!(active, Some(1.0));

    let l = col.posts("/v1/logs");
    assert!(!l.is_empty(), "no POST to /v1/logs");
    let req = ExportLogsServiceRequest::decode(l[0].body.as_slice()).expect("protobuf");
    let rec = &req.resource_logs[0].scope_logs[0].log_records[0];
    match rec.body.as_ref().and_then(|b| b.value.as_ref()) {
        Some(AnyV::StringValue(s)) => assert!(s.contains("Nagle"), "{s}"),
        other => panic!("log body {other:?}"),
    }
    assert_eq!(rec.severity_text, "ERROR");
    let attr = |k: &str| {
        rec.attributes
            .iter()
            .find(|a| a.key == k)
            .and_then(|a| a.value.as_ref()?.value.clone())
    };
    assert_eq!(
        attr("finding.id"),
        Some(AnyV::StringValue("nagle_delayed_ack".into()))
    );
    assert_eq!(attr("server.port"), Some(AnyV::IntValue(8081)));
}

#[test]
fn a_pod_window_carries_the_kubernetes_attributes() {
    let col = Collector::start();
    let mut exp = OtlpExporter::start(&format!("http://{}", col.addr)).unwrap();
    let pod = netdoctor_agent::metrics::PodLabels {
        namespace: Some("shop".into()),
        pod: Some("web-1".into()),
    };
    exp.record_window_in(&pod, &window()).expect("export");
    exp.shutdown().expect("shutdown");
    let mut requests_attrs = None;
    for p in col.posts("/v1/metrics") {
        let req = ExportMetricsServiceRequest::decode(p.body.as_slice()).expect("protobuf");
        for metric in req
            .resource_metrics
            .iter()
            .flat_map(|rm| &rm.scope_metrics)
            .flat_map(|sm| &sm.metrics)
            .filter(|m| m.name == "netdoctor.requests")
        {
            if let Some(Data::Sum(s)) = &metric.data {
                requests_attrs = s.data_points.first().map(|d| {
                    d.attributes
                        .iter()
                        .map(|a| {
                            (
                                a.key.clone(),
                                a.value.as_ref().and_then(|v| v.value.clone()),
                            )
                        })
                        .collect::<Vec<_>>()
                });
            }
        }
    }
    let attrs = requests_attrs.expect("netdoctor.requests exported");
    let get = |k: &str| {
        attrs
            .iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.clone())
    };
    assert_eq!(
        get("k8s.namespace.name"),
        Some(AnyV::StringValue("shop".into()))
    );
    assert_eq!(get("k8s.pod.name"), Some(AnyV::StringValue("web-1".into())));
    assert_eq!(get("server.port"), Some(AnyV::IntValue(8081)));
    let l = col.posts("/v1/logs");
    let req = ExportLogsServiceRequest::decode(l[0].body.as_slice()).expect("protobuf");
    let rec = &req.resource_logs[0].scope_logs[0].log_records[0];
    assert!(
        rec.attributes.iter().any(|a| a.key == "k8s.pod.name"),
        "the finding's log record names the pod"
    );
}

#[test]
fn a_down_collector_is_an_error_not_a_hang_or_panic() {
    // A port with nothing listening, held so nothing else takes it meanwhile.
    let closed = netdoctor_lab::ports::ClosedPort::loopback();
    let addr = closed.addr();
    let mut exp = OtlpExporter::start(&format!("http://{addr}")).unwrap();
    assert!(exp.record_window(&window()).is_err());
    assert!(OtlpExporter::start("https://collector:4318").is_err());
    assert!(OtlpExporter::start("collector:4318").is_err());
}

/// The pods (`k8s.pod.name`) of every data point, per metric, in one metrics POST.
fn pods_per_metric(p: &Post) -> Vec<(String, String)> {
    let req = ExportMetricsServiceRequest::decode(p.body.as_slice()).expect("protobuf");
    let mut out = Vec::new();
    for metric in req
        .resource_metrics
        .iter()
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| &sm.metrics)
    {
        let points = match &metric.data {
            Some(Data::Sum(s)) => &s.data_points,
            Some(Data::Gauge(g)) => &g.data_points,
            _ => continue,
        };
        for d in points {
            let pod = d
                .attributes
                .iter()
                .find(|a| a.key == "k8s.pod.name")
                .and_then(|a| match a.value.as_ref()?.value.as_ref()? {
                    AnyV::StringValue(s) => Some(s.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            out.push((metric.name.clone(), pod));
        }
    }
    out
}

#[test]
fn a_gone_pods_series_are_no_longer_sent_and_the_other_pods_stay() {
    let col = Collector::start();
    let mut exp = OtlpExporter::start(&format!("http://{}", col.addr)).unwrap();
    let pod = |name: &str| netdoctor_agent::metrics::PodLabels {
        namespace: Some("shop".into()),
        pod: Some(name.into()),
    };
    let mut w = window();
    w.report.measurements.counters = Some(netdoctor_report::CountersSection {
        changed: vec![netdoctor_core::CounterDelta {
            name: "TcpExt.ListenOverflows".into(),
            before: 1,
            after: 4,
        }],
    });
    exp.record_window_in(&pod("web-1"), &w).expect("export");
    exp.record_window_in(&pod("web-2"), &w).expect("export");
    let before = col.posts("/v1/metrics");
    let last = pods_per_metric(before.last().expect("a metrics POST"));
    for name in [
        "netdoctor.requests",
        "netdoctor.finding.active",
        "netdoctor.finding.added_latency",
        "netdoctor.window.request.duration",
        "netdoctor.listen.queue.depth",
        "netdoctor.kernel.stat",
    ] {
        for p in ["web-1", "web-2"] {
            assert!(
                last.iter().any(|(n, q)| n == name && q == p),
                "{name} of {p} before the pod went: {last:?}"
            );
        }
    }
    let sent = before.len();
    assert_eq!(exp.forget_pod(&pod("web-1")).expect("export"), 1);
    // The export right after the pod went, and every later one, are without it.
    exp.record_window_in(&pod("web-2"), &w).expect("export");
    exp.shutdown().expect("shutdown");
    let after = col.posts("/v1/metrics");
    assert!(
        after.len() >= sent + 2,
        "{} POSTs after {sent}",
        after.len()
    );
    for p in &after[sent..] {
        let series = pods_per_metric(p);
        assert!(
            !series.iter().any(|(_, q)| q == "web-1"),
            "web-1 still sent after it went: {series:?}"
        );
        for name in ["netdoctor.requests", "netdoctor.finding.active"] {
            assert!(
                series.iter().any(|(n, q)| n == name && q == "web-2"),
                "{name} of web-2 missing: {series:?}"
            );
        }
    }
    // Counters stay cumulative for the pod that stays: two windows of 1234 requests.
    let req = ExportMetricsServiceRequest::decode(after.last().unwrap().body.as_slice()).unwrap();
    let total = req
        .resource_metrics
        .iter()
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| &sm.metrics)
        .filter(|m| m.name == "netdoctor.requests")
        .find_map(|m| match &m.data {
            Some(Data::Sum(s)) => s.data_points.first().and_then(|d| match d.value {
                Some(NumV::AsInt(i)) => Some(i),
                _ => None,
            }),
            _ => None,
        });
    assert_eq!(total, Some(2 * 1234));
}

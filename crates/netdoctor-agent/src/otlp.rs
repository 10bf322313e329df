//! OTLP export: each window's metrics, and its findings as log records, pushed to an
//! OpenTelemetry collector over OTLP/HTTP with protobuf bodies (`/v1/metrics`, `/v1/logs`).
//!
//! Built on the opentelemetry crates (`opentelemetry`, `opentelemetry_sdk`,
//! `opentelemetry-otlp` 0.32, feature `http-proto`; 0.32 builds on rustc 1.95). Their default
//! HTTP transport is reqwest, which brings tokio; the exporter instead gets [`StdHttpClient`],
//! an implementation of `opentelemetry_http::HttpClient` over a blocking std `TcpStream`
//! (one POST per export, `Connection: close`, 5 s timeouts). The SDK drives exports from the
//! caller's thread (`force_flush` after every window) and from its own periodic-reader thread,
//! so no async runtime runs in the agent. Plain `http://` endpoints only: a collector on the node
//! or in the cluster network; TLS to a remote collector is the collector's job.
//!
//! Metric names (OpenTelemetry style: dotted, unit apart; a collector's Prometheus exporter turns
//! them into the `/metrics` names). Attributes use the semantic conventions' names where they
//! name the same thing: `server.port` (the watched listener's port), and in pod mode
//! `k8s.namespace.name` and `k8s.pod.name`. The metrics themselves keep `netdoctor.` names: the
//! semantic conventions (checked against open-telemetry/semantic-conventions, system and k8s
//! metrics) define no TCP round-trip-time metric and no connection-failure metric by cause;
//! their nearest, `system.network.errors` and `system.network.connection.count`, count per
//! interface and per state, not per listener and cause.
//!
//! | OTLP metric | kind | unit | attributes |
//! |---|---|---|---|
//! | `netdoctor.finding.active` | gauge | 1 | finding.id, finding.side, server.port (severity is in the log record, not an attribute that would split the series) |
//! | `netdoctor.finding.added_latency` | gauge | s | same |
//! | `netdoctor.requests` | counter | {request} | server.port |
//! | `netdoctor.window.request.duration` | gauge | s | server.port, quantile (0.5, 0.9, 0.99, 1) |
//! | `netdoctor.capture.packets`, `netdoctor.capture.drops`, `netdoctor.tcp.retransmitted_segments`, `netdoctor.tcp.resets` | counter | {packet}/{segment} | server.port |
//! | `netdoctor.listen.queue.depth`, `netdoctor.listen.queue.limit`, `netdoctor.syn_recv.connections` | gauge | {connection} | server.port |
//! | `netdoctor.kernel.stat` | counter | 1 | stat (its increase over each window) |
//!
//! Findings become log records: body = the finding's summary, severity WARN (warning), ERROR
//! (critical) or INFO, attributes `finding.id`, `finding.side`, `finding.severity`, `server.port`,
//! `finding.added_latency_ms`, `finding.fix`.

use crate::metrics::{KERNEL_COUNTERS, PodLabels};
use crate::watch::WindowResult;
use bytes::Bytes;
use opentelemetry::KeyValue;
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::metrics::{Counter, Gauge, MeterProvider as _};
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{LogExporter, MetricExporter, Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Connect, read and write timeout of one export.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest collector answer read.
const MAX_RESPONSE: u64 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    #[error("invalid OTLP endpoint '{0}': {1}")]
    Endpoint(String, String),
    #[error("build the OTLP {0} exporter: {1}")]
    Build(&'static str, String),
    #[error("OTLP export: {0}")]
    Export(String),
}

struct Instruments {
    finding_active: Gauge<u64>,
    finding_latency: Gauge<f64>,
    requests: Counter<u64>,
    window_latency: Gauge<f64>,
    packets: Counter<u64>,
    drops: Counter<u64>,
    retransmits: Counter<u64>,
    resets: Counter<u64>,
    kernel: Counter<u64>,
    listen_depth: Gauge<u64>,
    listen_limit: Gauge<u64>,
    syn_recv: Gauge<u64>,
}

/// A running OTLP export (metrics + logs).
pub struct OtlpExporter {
    meters: SdkMeterProvider,
    logs: SdkLoggerProvider,
    logger: SdkLogger,
    inst: Instruments,
    /// (port, id, side, severity) of every finding series set so far.
    seen: BTreeSet<(PodLabels, u16, String, String)>,
}

/// Checks an endpoint (`http://host:port`, optional path prefix) and returns it without a
/// trailing slash.
pub fn parse_endpoint(endpoint: &str) -> Result<String, OtlpError> {
    let bad = |why: &str| OtlpError::Endpoint(endpoint.to_string(), why.to_string());
    let rest = endpoint
        .strip_prefix("http://")
        .ok_or_else(|| bad("only http:// is supported (run a collector on the node for TLS)"))?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() {
        return Err(bad("no host"));
    }
    Ok(endpoint.trim_end_matches('/').to_string())
}

impl OtlpExporter {
    /// Sets up the exporters for `endpoint` (e.g. `http://127.0.0.1:4318`); nothing is sent
    /// until the first window.
    pub fn start(endpoint: &str) -> Result<OtlpExporter, OtlpError> {
        let base = parse_endpoint(endpoint)?;
        let metric_exporter = MetricExporter::builder()
            .with_http()
            .with_http_client(StdHttpClient)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{base}/v1/metrics"))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| OtlpError::Build("metrics", e.to_string()))?;
        let log_exporter = LogExporter::builder()
            .with_http()
            .with_http_client(StdHttpClient)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{base}/v1/logs"))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| OtlpError::Build("logs", e.to_string()))?;
        let resource = Resource::builder()
            .with_service_name("netdoctor-agent")
            .with_attribute(KeyValue::new("host.name", hostname()))
            .build();
        // Every window is flushed explicitly; the reader's own interval is only a backstop.
        let reader = PeriodicReader::builder(metric_exporter)
            .with_interval(Duration::from_secs(300))
            .build();
        let meters = SdkMeterProvider::builder()
            .with_reader(reader)
            .with_resource(resource.clone())
            .build();
        let logs = SdkLoggerProvider::builder()
            .with_simple_exporter(log_exporter)
            .with_resource(resource)
            .build();
        let logger = logs.logger("netdoctor");
        let m = meters.meter("netdoctor");
        let inst = Instruments {
            finding_active: m
                .u64_gauge("netdoctor.finding.active")
                .with_unit("1")
                .build(),
            finding_latency: m
                .f64_gauge("netdoctor.finding.added_latency")
                .with_unit("s")
                .build(),
            requests: m
                .u64_counter("netdoctor.requests")
                .with_unit("{request}")
                .build(),
            window_latency: m
                .f64_gauge("netdoctor.window.request.duration")
                .with_unit("s")
                .build(),
            packets: m
                .u64_counter("netdoctor.capture.packets")
                .with_unit("{packet}")
                .build(),
            drops: m
                .u64_counter("netdoctor.capture.drops")
                .with_unit("{packet}")
                .build(),
            retransmits: m
                .u64_counter("netdoctor.tcp.retransmitted_segments")
                .with_unit("{segment}")
                .build(),
            resets: m
                .u64_counter("netdoctor.tcp.resets")
                .with_unit("{segment}")
                .build(),
            listen_depth: m
                .u64_gauge("netdoctor.listen.queue.depth")
                .with_unit("{connection}")
                .build(),
            listen_limit: m
                .u64_gauge("netdoctor.listen.queue.limit")
                .with_unit("{connection}")
                .build(),
            syn_recv: m
                .u64_gauge("netdoctor.syn_recv.connections")
                .with_unit("{connection}")
                .build(),
            kernel: m
                .u64_counter("netdoctor.kernel.stat")
                .with_unit("1")
                .build(),
        };
        Ok(OtlpExporter {
            meters,
            logs,
            logger,
            inst,
            seen: BTreeSet::new(),
        })
    }

    /// Records one port's window and exports it (metrics flushed, findings logged). An export
    /// failure is returned, not fatal: the next window tries again.
    pub fn record_window(&mut self, w: &WindowResult) -> Result<(), OtlpError> {
        self.record_window_in(&PodLabels::default(), w)
    }

    /// [`record_window`](Self::record_window) for a port of a pod: every data point and log
    /// record also carries `k8s.namespace.name` and `k8s.pod.name` (when known).
    pub fn record_window_in(&mut self, pod: &PodLabels, w: &WindowResult) -> Result<(), OtlpError> {
        let r = &w.report;
        let mut base = vec![KeyValue::new("server.port", i64::from(w.port))];
        base.extend(pod_attrs(pod));
        for (_, p, id, side) in self.seen.iter().filter(|s| s.0 == *pod && s.1 == w.port) {
            let attrs = finding_attrs(*p, id, side, pod);
            self.inst.finding_active.record(0, &attrs);
            self.inst.finding_latency.record(0.0, &attrs);
        }
        for f in &r.findings {
            let l = crate::metrics::finding_labels(w.port, f);
            let attrs = finding_attrs(w.port, &l.id, &l.side, pod);
            let severity = serde_json::to_value(f.severity)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            self.inst.finding_active.record(1, &attrs);
            let added_s = f.impact.added_latency_ms.unwrap_or(0.0) / 1000.0;
            self.inst.finding_latency.record(added_s, &attrs);
            let mut rec = self.logger.create_log_record();
            rec.set_body(AnyValue::from(f.summary.clone()));
            let (num, text) = match severity.as_str() {
                "critical" => (Severity::Error, "ERROR"),
                "warning" => (Severity::Warn, "WARN"),
                _ => (Severity::Info, "INFO"),
            };
            rec.set_severity_number(num);
            rec.set_severity_text(text);
            rec.set_timestamp(std::time::SystemTime::now());
            rec.add_attribute("finding.id", l.id.clone());
            rec.add_attribute("finding.side", l.side.clone());
            rec.add_attribute("finding.severity", severity);
            rec.add_attribute("server.port", i64::from(w.port));
            if let Some(n) = &pod.namespace {
                rec.add_attribute("k8s.namespace.name", n.clone());
            }
            if let Some(p) = &pod.pod {
                rec.add_attribute("k8s.pod.name", p.clone());
            }
            if let Some(ms) = f.impact.added_latency_ms {
                rec.add_attribute("finding.added_latency_ms", ms);
            }
            rec.add_attribute("finding.fix", f.fix.clone());
            self.logger.emit(rec);
            self.seen.insert((pod.clone(), w.port, l.id, l.side));
        }
        if let Some(c) = &r.measurements.capture {
            let pa = base.as_slice();
            self.inst.requests.add(c.exchanges.count, pa);
            self.inst.packets.add(c.stats.packets, pa);
            self.inst.drops.add(c.stats.capture_drops, pa);
            self.inst
                .retransmits
                .add(c.stats.retransmitted_segments, pa);
            self.inst.resets.add(c.stats.resets, pa);
            let q = &c.exchanges.latency_ms;
            for (name, v) in [
                ("0.5", q.p50),
                ("0.9", q.p90),
                ("0.99", q.p99),
                ("1", q.max),
            ] {
                self.inst.window_latency.record(
                    v / 1000.0,
                    &[base.as_slice(), &[KeyValue::new("quantile", name)]].concat(),
                );
            }
        }
        if let Some(l) = &w.listener {
            let pa = base.as_slice();
            self.inst
                .listen_depth
                .record(u64::from(l.max_accept_queue), pa);
            self.inst.listen_limit.record(u64::from(l.backlog), pa);
            self.inst.syn_recv.record(u64::from(l.max_syn_recv), pa);
        }
        if let Some(c) = &r.measurements.counters {
            for x in &c.changed {
                if !KERNEL_COUNTERS.contains(&x.name.as_str()) {
                    continue;
                }
                let d = u64::try_from(x.change()).unwrap_or(0);
                self.inst.kernel.add(
                    d,
                    &[
                        &[KeyValue::new("stat", x.name.clone())],
                        pod_attrs(pod).as_slice(),
                    ]
                    .concat(),
                );
            }
        }
        self.meters
            .force_flush()
            .map_err(|e| OtlpError::Export(e.to_string()))
    }

    /// Flushes and stops both providers.
    pub fn shutdown(self) -> Result<(), OtlpError> {
        let m = self.meters.shutdown();
        let l = self.logs.shutdown();
        m.map_err(|e| OtlpError::Export(e.to_string()))?;
        l.map_err(|e| OtlpError::Export(e.to_string()))
    }
}

fn finding_attrs(port: u16, id: &str, side: &str, pod: &PodLabels) -> Vec<KeyValue> {
    let mut v = vec![
        KeyValue::new("finding.id", id.to_string()),
        KeyValue::new("finding.side", side.to_string()),
        KeyValue::new("server.port", i64::from(port)),
    ];
    v.extend(pod_attrs(pod));
    v
}

/// The pod as OpenTelemetry's Kubernetes attributes (`k8s.namespace.name`, `k8s.pod.name`);
/// a pod known only by its network namespace gets `k8s.pod.name` = `netns-<inode>`.
fn pod_attrs(pod: &PodLabels) -> Vec<KeyValue> {
    let mut v = Vec::new();
    if let Some(n) = &pod.namespace {
        v.push(KeyValue::new("k8s.namespace.name", n.clone()));
    }
    if let Some(p) = &pod.pod {
        v.push(KeyValue::new("k8s.pod.name", p.clone()));
    }
    v
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A blocking HTTP/1.1 client for the OTLP exporter (see the module docs for why).
#[derive(Debug, Clone, Copy)]
pub struct StdHttpClient;

#[async_trait::async_trait]
impl HttpClient for StdHttpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        post(&request)
    }
}

fn post(request: &Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
    let uri = request.uri();
    if uri.scheme_str() != Some("http") {
        return Err(format!("{uri}: only http:// is supported").into());
    }
    let host = uri.host().ok_or_else(|| format!("{uri}: no host"))?;
    let port = uri.port_u16().unwrap_or(80);
    let addr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| format!("{host}: no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, EXPORT_TIMEOUT)
        .map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(EXPORT_TIMEOUT))?;
    s.set_write_timeout(Some(EXPORT_TIMEOUT))?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut head = format!(
        "{} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {}\r\nConnection: close\r\n",
        request.method(),
        request.body().len()
    );
    for (k, v) in request.headers() {
        if k != http::header::CONTENT_LENGTH && k != http::header::CONNECTION {
            head.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap_or("")));
        }
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(request.body())?;
    s.flush()?;
    let mut answer = Vec::new();
    s.take(MAX_RESPONSE).read_to_end(&mut answer)?;
    let text = String::from_utf8_lossy(&answer);
    let status: u16 = text
        .lines()
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("{addr}: no HTTP status line in the collector's answer"))?;
    let body = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(Bytes::new(), |p| Bytes::copy_from_slice(&answer[p + 4..]));
    Ok(Response::builder().status(status).body(body)?)
}

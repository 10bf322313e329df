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
//! In pod mode a pod gone ([`OtlpExporter::forget_pod`]) is no longer sent from the next export
//! on: the instruments are observable ones over the exporter's own values (see [`Series`]).
//! OTLP has no "series ended" message; a collector's Prometheus exporter drops it after its
//! `metric_expiration`.
//!
//! Findings become log records: body = the finding's summary, severity WARN (warning), ERROR
//! (critical) or INFO, attributes `finding.id`, `finding.side`, `finding.severity`, `server.port`,
//! `finding.added_latency_ms`, `finding.fix`.

use crate::metrics::{KERNEL_COUNTERS, PodLabels};
use crate::watch::WindowResult;
use bytes::Bytes;
use opentelemetry::KeyValue;
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::metrics::{Meter, MeterProvider as _, ObservableCounter, ObservableGauge};
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{LogExporter, MetricExporter, Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
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

/// The values every metric reports at the next export, per pod and port. The metrics are
/// OpenTelemetry *observable* instruments whose callbacks read this at each collection: the
/// SDK exports only the attribute sets a callback observed in that collection (for cumulative
/// observable counters and for observable gauges alike; see `PrecomputedSum::cumulative` and
/// the delta `LastValue` of opentelemetry_sdk 0.32), so a pod removed from here
/// ([`OtlpExporter::forget_pod`]) is no longer sent. Synchronous instruments keep every
/// attribute set they ever saw until the provider ends.
#[derive(Default)]
struct Series {
    ports: BTreeMap<(PodLabels, u16), PortSeries>,
    /// Kernel counters' totals over the run, per pod and counter.
    kernel: BTreeMap<(PodLabels, String), u64>,
}

/// One port's values (counters are totals since the start).
#[derive(Default)]
struct PortSeries {
    requests: u64,
    packets: u64,
    drops: u64,
    retransmits: u64,
    resets: u64,
    /// p50, p90, p99, max of the last window, seconds.
    latency: Option<[f64; 4]>,
    /// Accept queue depth, limit, SYN_RECV of the last window.
    listener: Option<[u64; 3]>,
    /// (id, side) → (active, added latency in seconds) of every finding seen on the port.
    findings: BTreeMap<(String, String), (u64, f64)>,
}

type Shared = Arc<Mutex<Series>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Series> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// The observable instruments; held so they live as long as the exporter.
struct Instruments {
    _u64_counters: Vec<ObservableCounter<u64>>,
    _u64_gauges: Vec<ObservableGauge<u64>>,
    _f64_gauges: Vec<ObservableGauge<f64>>,
}

fn port_attrs(pod: &PodLabels, port: u16) -> Vec<KeyValue> {
    let mut v = vec![KeyValue::new("server.port", i64::from(port))];
    v.extend(pod_attrs(pod));
    v
}

/// A per-port counter: `f` picks its total from a port's values.
fn port_counter(
    m: &Meter,
    st: &Shared,
    name: &'static str,
    unit: &'static str,
    f: fn(&PortSeries) -> u64,
) -> ObservableCounter<u64> {
    let st = Arc::clone(st);
    m.u64_observable_counter(name)
        .with_unit(unit)
        .with_callback(move |o| {
            for ((pod, port), p) in &lock(&st).ports {
                o.observe(f(p), &port_attrs(pod, *port));
            }
        })
        .build()
}

/// A per-port gauge of the listener samples (`k`: depth, limit, SYN_RECV).
fn listener_gauge(m: &Meter, st: &Shared, name: &'static str, k: usize) -> ObservableGauge<u64> {
    let st = Arc::clone(st);
    m.u64_observable_gauge(name)
        .with_unit("{connection}")
        .with_callback(move |o| {
            for ((pod, port), p) in &lock(&st).ports {
                if let Some(l) = p.listener {
                    o.observe(l[k], &port_attrs(pod, *port));
                }
            }
        })
        .build()
}

fn instruments(m: &Meter, st: &Shared) -> Instruments {
    let counters = vec![
        port_counter(m, st, "netdoctor.requests", "{request}", |p| p.requests),
        port_counter(m, st, "netdoctor.capture.packets", "{packet}", |p| {
            p.packets
        }),
        port_counter(m, st, "netdoctor.capture.drops", "{packet}", |p| p.drops),
        port_counter(
            m,
            st,
            "netdoctor.tcp.retransmitted_segments",
            "{segment}",
            |p| p.retransmits,
        ),
        port_counter(m, st, "netdoctor.tcp.resets", "{segment}", |p| p.resets),
        {
            let st = Arc::clone(st);
            m.u64_observable_counter("netdoctor.kernel.stat")
                .with_unit("1")
                .with_callback(move |o| {
                    for ((pod, stat), v) in &lock(&st).kernel {
                        let attrs = [
                            &[KeyValue::new("stat", stat.clone())],
                            pod_attrs(pod).as_slice(),
                        ]
                        .concat();
                        o.observe(*v, &attrs);
                    }
                })
                .build()
        },
    ];
    let st_active = Arc::clone(st);
    let u64_gauges = vec![
        m.u64_observable_gauge("netdoctor.finding.active")
            .with_unit("1")
            .with_callback(move |o| {
                for ((pod, port), p) in &lock(&st_active).ports {
                    for ((id, side), (active, _)) in &p.findings {
                        o.observe(*active, &finding_attrs(*port, id, side, pod));
                    }
                }
            })
            .build(),
        listener_gauge(m, st, "netdoctor.listen.queue.depth", 0),
        listener_gauge(m, st, "netdoctor.listen.queue.limit", 1),
        listener_gauge(m, st, "netdoctor.syn_recv.connections", 2),
    ];
    let (st_lat, st_win) = (Arc::clone(st), Arc::clone(st));
    let f64_gauges = vec![
        m.f64_observable_gauge("netdoctor.finding.added_latency")
            .with_unit("s")
            .with_callback(move |o| {
                for ((pod, port), p) in &lock(&st_lat).ports {
                    for ((id, side), (_, added)) in &p.findings {
                        o.observe(*added, &finding_attrs(*port, id, side, pod));
                    }
                }
            })
            .build(),
        m.f64_observable_gauge("netdoctor.window.request.duration")
            .with_unit("s")
            .with_callback(move |o| {
                for ((pod, port), p) in &lock(&st_win).ports {
                    let Some(q) = p.latency else { continue };
                    let base = port_attrs(pod, *port);
                    for (name, v) in ["0.5", "0.9", "0.99", "1"].into_iter().zip(q) {
                        o.observe(
                            v,
                            &[base.as_slice(), &[KeyValue::new("quantile", name)]].concat(),
                        );
                    }
                }
            })
            .build(),
    ];
    Instruments {
        _u64_counters: counters,
        _u64_gauges: u64_gauges,
        _f64_gauges: f64_gauges,
    }
}

/// A running OTLP export (metrics + logs).
pub struct OtlpExporter {
    meters: SdkMeterProvider,
    logs: SdkLoggerProvider,
    logger: SdkLogger,
    _inst: Instruments,
    series: Shared,
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
        let series = Shared::default();
        let inst = instruments(&m, &series);
        Ok(OtlpExporter {
            meters,
            logs,
            logger,
            _inst: inst,
            series,
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
        let mut series = lock(&self.series);
        let ps = series.ports.entry((pod.clone(), w.port)).or_default();
        for v in ps.findings.values_mut() {
            *v = (0, 0.0);
        }
        for f in &r.findings {
            let l = crate::metrics::finding_labels(w.port, f);
            let added_s = f.impact.added_latency_ms.unwrap_or(0.0) / 1000.0;
            ps.findings.insert((l.id, l.side), (1, added_s));
        }
        if let Some(c) = &r.measurements.capture {
            ps.requests += c.exchanges.count;
            ps.packets += c.stats.packets;
            ps.drops += c.stats.capture_drops;
            ps.retransmits += c.stats.retransmitted_segments;
            ps.resets += c.stats.resets;
            let q = &c.exchanges.latency_ms;
            ps.latency = Some([q.p50, q.p90, q.p99, q.max].map(|v| v / 1000.0));
        }
        if let Some(l) = &w.listener {
            ps.listener = Some([
                u64::from(l.max_accept_queue),
                u64::from(l.backlog),
                u64::from(l.max_syn_recv),
            ]);
        }
        if let Some(c) = &r.measurements.counters {
            for x in &c.changed {
                if !KERNEL_COUNTERS.contains(&x.name.as_str()) {
                    continue;
                }
                let d = u64::try_from(x.change()).unwrap_or(0);
                *series
                    .kernel
                    .entry((pod.clone(), x.name.clone()))
                    .or_default() += d;
            }
        }
        // Not held while the log records go out (each is an HTTP POST).
        drop(series);
        for f in &r.findings {
            let l = crate::metrics::finding_labels(w.port, f);
            let severity = serde_json::to_value(f.severity)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
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
            rec.add_attribute("finding.id", l.id);
            rec.add_attribute("finding.side", l.side);
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
        }
        self.meters
            .force_flush()
            .map_err(|e| OtlpError::Export(e.to_string()))
    }

    /// Stops sending `pod`'s series (its ports' metrics and its kernel counters: the pod went
    /// away) and exports at once, so the collector's next push is without them. Other pods'
    /// series stay. Returns how many ports' series went.
    pub fn forget_pod(&mut self, pod: &PodLabels) -> Result<usize, OtlpError> {
        let mut series = lock(&self.series);
        let before = series.ports.len();
        series.ports.retain(|(p, _), _| p != pod);
        series.kernel.retain(|(p, _), _| p != pod);
        let n = before - series.ports.len();
        drop(series);
        self.meters
            .force_flush()
            .map_err(|e| OtlpError::Export(e.to_string()))?;
        Ok(n)
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

//! The agent's Prometheus metrics, built from plain window reports.
//!
//! Exposition format: `prometheus-client` (the Prometheus project's Rust client) writes the
//! OpenMetrics text format, which Prometheus scrapes natively. Names follow the Prometheus
//! conventions: the base unit in the name (`_seconds`, `_bytes`, `_ratio`), `_total` on counters
//! (the crate appends it to every counter), `netdoctor_` as the namespace, and the two process
//! metrics under their standard names (`process_cpu_seconds_total`,
//! `process_resident_memory_bytes`) so existing dashboards find them.
//!
//! Everything is fed by [`AgentMetrics::record_window`], from a window's
//! [`netdoctor_report::Report`] (findings, capture statistics, exchange percentiles, counter
//! deltas), so this module does not depend on how the window was produced.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `netdoctor_finding_active` | gauge: 1 when the latest window of the port has the finding, 0 after it went away | id, side, port (+ namespace, pod) |
//! | `netdoctor_finding_severity` | gauge: the finding's severity in the latest window as a value (1 info, 2 warning, 3 critical; 0 once gone), so a finding whose severity changes stays one series | id, side, port |
//! | `netdoctor_finding_added_latency_seconds` | gauge: the finding's added latency in the latest window (0 once gone) | id, side, port |
//! | `netdoctor_finding_affected_ratio` | gauge: fraction of requests or connections affected | id, side, port |
//! | `netdoctor_finding_windows_total` | counter: windows in which the finding was present | id, side, port |
//! | `netdoctor_windows_total` | counter: windows analyzed, by verdict | port, verdict |
//! | `netdoctor_requests_total` | counter: request/response exchanges seen | port |
//! | `netdoctor_request_duration_seconds` | histogram: every exchange with a latency counted in its bucket; native too in the protobuf answer | port |
//! | `netdoctor_window_request_duration_seconds` | summary: exact quantiles of the latest window, with its `_count` and `_sum` | port, quantile (0.5, 0.9, 0.99, 1 = max) |
//! | `netdoctor_capture_packets_total`, `netdoctor_capture_drops_total` | counters | port |
//! | `netdoctor_tcp_connections_total`, `netdoctor_tcp_retransmitted_segments_total`, `netdoctor_tcp_resets_total`, `netdoctor_tcp_syn_retransmits_total` | counters from the packets | port |
//! | `netdoctor_tcp_open_connections` | gauge: connections the port's analyzer tracks at the window's end | port |
//! | `netdoctor_tcp_connections_evicted_total` | counter: connections dropped from the analyzer after the idle timeout | port |
//! | `netdoctor_tcp_half_open_evicted_total` | counter: half-open connections (SYN, no completed handshake) evicted oldest first past the analyzer's half-open cap (a SYN flood or a scan) | port |
//! | `netdoctor_listen_queue_depth` | gauge: largest accept queue (Recv-Q) of the port's listener sampled in the latest window | port |
//! | `netdoctor_listen_queue_limit` | gauge: the accept queue's limit (Send-Q: min(backlog, somaxconn)) | port |
//! | `netdoctor_listen_queue_full_ratio` | gauge: fraction of the window's samples with the accept queue at its limit | port |
//! | `netdoctor_syn_recv_connections` | gauge: largest number of half-open (SYN_RECV) connections to the port sampled in the latest window | port |
//! | `netdoctor_kernel_stat_total` | counter: a kernel counter of the agent's namespace as the kernel counts it (since boot or the namespace's creation; appears once it moves) | stat (e.g. `TcpExt.ListenOverflows`), one of [`KERNEL_COUNTERS`] |
//! | `netdoctor_window_end_timestamp_seconds` | gauge: when the latest window of the port ended | port |
//! | `netdoctor_evidence_bytes` | gauge: size of the evidence directory (`--dir`) | — |
//! | `netdoctor_evidence_dropped_total` | counter: evidence entries deleted to stay within the limits | reason (`count`, `size`, `age`) |
//! | `netdoctor_pod_listener_info` | info (gauge 1): a watched pod listener (`watch --pods`) | port, namespace, pod, pod_uid, netns, source |
//! | `process_cpu_seconds_total`, `process_resident_memory_bytes` | the agent itself | — |
//!
//! Labels and their cardinality: [`crate::labels`] (in pod mode every per-port series also
//! carries the pod's `namespace` and `pod`, and `netdoctor_pod_listener_info{port, namespace,
//! pod, pod_uid, netns, source}` = 1 names each watched pod listener).
//!
//! The request-duration histogram counts each exchange in its bucket (the core's HDR histogram
//! at the fixed bounds, see [`crate::histogram`]); a scrape that asks for the protobuf format
//! ([`crate::accept`]) gets it as a native histogram too ([`AgentMetrics::encode_protobuf`]).
//!
//! Split along its seams: the label sets in [`crate::labels`], the hand-written window summary
//! in [`crate::summary`], the 0.0.4 text conversion in [`crate::text004`]; this file keeps one
//! registry and one recording path per window.

use crate::histogram::LatencyHistogram;
pub use crate::labels::{
    FindingLabels, PodLabels, PodListenerLabels, PortLabels, ReasonLabels, SloLabels, StatLabels,
    VerdictLabels, finding_labels, finding_labels_in, severity_value,
};
use crate::summary::WindowSummary;

mod forget;
pub use crate::text004::openmetrics_to_004;
use netdoctor_core::Finding;
use netdoctor_observe::counters::CounterDelta;
use netdoctor_report::Report;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

/// Kernel counters exported as counters: the ones the detectors and the method use. Every name
/// exists in /proc/net/netstat or /proc/net/snmp of a current kernel (tested against the
/// running one).
pub const KERNEL_COUNTERS: [&str; 15] = [
    "Tcp.RetransSegs",
    "Tcp.InErrs",
    "Tcp.OutRsts",
    "Tcp.AttemptFails",
    "Tcp.EstabResets",
    "TcpExt.ListenOverflows",
    "TcpExt.ListenDrops",
    "TcpExt.SyncookiesSent",
    "TcpExt.TCPSynRetrans",
    "TcpExt.TCPTimeouts",
    "TcpExt.TCPLostRetransmit",
    "TcpExt.TCPAbortOnData",
    "TcpExt.TCPRcvQDrop",
    "TcpExt.TCPBacklogDrop",
    "TcpExt.TCPZeroWindowDrop",
];

type FGauge = Gauge<f64, AtomicU64>;

/// All metrics of one agent. Cheap to update (atomics); [`encode`](Self::encode) renders them.
pub struct AgentMetrics {
    registry: Registry,
    finding_active: Family<FindingLabels, Gauge>,
    finding_severity: Family<FindingLabels, Gauge>,
    finding_latency: Family<FindingLabels, FGauge>,
    finding_affected: Family<FindingLabels, FGauge>,
    finding_windows: Family<FindingLabels, Counter>,
    windows: Family<VerdictLabels, Counter>,
    requests: Family<PortLabels, Counter>,
    latency_hist: Family<PortLabels, LatencyHistogram>,
    /// The same histograms by label set, for the protobuf answer's native buckets.
    latency_by_labels: Mutex<HashMap<PortLabels, LatencyHistogram>>,
    /// The latest window's exact quantiles, count and sum per port (a summary; see encode).
    window_summary: WindowSummary,
    packets: Family<PortLabels, Counter>,
    drops: Family<PortLabels, Counter>,
    connections: Family<PortLabels, Counter>,
    retransmits: Family<PortLabels, Counter>,
    resets: Family<PortLabels, Counter>,
    syn_retransmits: Family<PortLabels, Counter>,
    kernel_stat: Family<StatLabels, Counter>,
    open_connections: Family<PortLabels, Gauge>,
    evicted: Family<PortLabels, Counter>,
    half_open_evicted: Family<PortLabels, Counter>,
    listen_depth: Family<PortLabels, Gauge>,
    listen_limit: Family<PortLabels, Gauge>,
    listen_full: Family<PortLabels, FGauge>,
    syn_recv: Family<PortLabels, Gauge>,
    window_end: Family<PortLabels, FGauge>,
    evidence_bytes: Gauge,
    evidence_dropped: Family<ReasonLabels, Counter>,
    slo_status: Family<SloLabels, Gauge>,
    slo_margin: Family<SloLabels, FGauge>,
    cpu: Counter<f64, AtomicU64>,
    rss: Gauge,
    pod_listener: Family<PodListenerLabels, Gauge>,
    /// Finding series ever set, per (pod, port), so a finding that went away drops to 0.
    seen: Mutex<BTreeMap<(PodLabels, u16), BTreeSet<FindingLabels>>>,
    /// The protobuf answer's families, kept until their text changes.
    proto_cache: crate::protobuf::ProtoCache,
}

impl Default for AgentMetrics {
    fn default() -> Self {
        AgentMetrics::new()
    }
}

impl AgentMetrics {
    pub fn new() -> AgentMetrics {
        let mut r = Registry::default();
        let m = AgentMetrics {
            registry: Registry::default(),
            finding_active: Family::default(),
            finding_severity: Family::default(),
            finding_latency: Family::default(),
            finding_affected: Family::default(),
            finding_windows: Family::default(),
            windows: Family::default(),
            requests: Family::default(),
            latency_hist: Family::default(),
            latency_by_labels: Mutex::new(HashMap::new()),
            window_summary: WindowSummary::default(),
            packets: Family::default(),
            drops: Family::default(),
            connections: Family::default(),
            retransmits: Family::default(),
            resets: Family::default(),
            syn_retransmits: Family::default(),
            kernel_stat: Family::default(),
            open_connections: Family::default(),
            evicted: Family::default(),
            half_open_evicted: Family::default(),
            listen_depth: Family::default(),
            listen_limit: Family::default(),
            listen_full: Family::default(),
            syn_recv: Family::default(),
            window_end: Family::default(),
            evidence_bytes: Gauge::default(),
            evidence_dropped: Family::default(),
            slo_status: Family::default(),
            slo_margin: Family::default(),
            cpu: Counter::default(),
            rss: Gauge::default(),
            pod_listener: Family::default(),
            seen: Mutex::new(BTreeMap::new()),
            proto_cache: Default::default(),
        };
        r.register(
            "netdoctor_finding_active",
            "1 when the latest window of the port has this finding, 0 once it went away",
            m.finding_active.clone(),
        );
        r.register(
            "netdoctor_finding_severity",
            "Severity of the finding in the latest window: 1 info, 2 warning, 3 critical; 0 once it went away",
            m.finding_severity.clone(),
        );
        r.register(
            "netdoctor_finding_added_latency_seconds",
            "Latency the finding added to an affected request in the latest window",
            m.finding_latency.clone(),
        );
        r.register(
            "netdoctor_finding_affected_ratio",
            "Fraction (0..1) of requests or connections the finding affected in the latest window",
            m.finding_affected.clone(),
        );
        r.register(
            "netdoctor_finding_windows",
            "Windows in which the finding was present",
            m.finding_windows.clone(),
        );
        r.register(
            "netdoctor_windows",
            "Windows analyzed, by verdict",
            m.windows.clone(),
        );
        r.register(
            "netdoctor_requests",
            "Request/response exchanges seen in the captured traffic",
            m.requests.clone(),
        );
        r.register(
            "netdoctor_request_duration_seconds",
            "Request duration at the capture point (first request byte to last response byte)",
            m.latency_hist.clone(),
        );
        r.register(
            "netdoctor_capture_packets",
            "Packets captured",
            m.packets.clone(),
        );
        r.register(
            "netdoctor_capture_drops",
            "Packets the kernel dropped before the capture read them",
            m.drops.clone(),
        );
        r.register(
            "netdoctor_tcp_connections",
            "TCP connections seen in the capture",
            m.connections.clone(),
        );
        r.register(
            "netdoctor_tcp_retransmitted_segments",
            "Retransmitted TCP segments seen in the capture",
            m.retransmits.clone(),
        );
        r.register(
            "netdoctor_tcp_resets",
            "TCP resets seen in the capture",
            m.resets.clone(),
        );
        r.register(
            "netdoctor_tcp_syn_retransmits",
            "Retransmitted SYNs seen in the capture",
            m.syn_retransmits.clone(),
        );
        r.register(
            "netdoctor_kernel_stat",
            "A kernel counter of the agent's network namespace (/proc/net/netstat, /proc/net/snmp) as the kernel counts it",
            m.kernel_stat.clone(),
        );
        r.register(
            "netdoctor_tcp_open_connections",
            "Connections the port's analyzer tracks at the end of the latest window",
            m.open_connections.clone(),
        );
        r.register(
            "netdoctor_tcp_connections_evicted",
            "Connections dropped from the analyzer after the idle timeout without a packet",
            m.evicted.clone(),
        );
        r.register(
            "netdoctor_tcp_half_open_evicted",
            "Half-open connections (a SYN, no completed handshake) evicted, oldest first, past the analyzer's half-open cap: a SYN flood or a scan",
            m.half_open_evicted.clone(),
        );
        r.register(
            "netdoctor_listen_queue_depth",
            "Largest accept queue (Recv-Q) of the port's listener sampled in the latest window",
            m.listen_depth.clone(),
        );
        r.register(
            "netdoctor_listen_queue_limit",
            "Limit of the port's accept queue (Send-Q: min(listen backlog, net.core.somaxconn))",
            m.listen_limit.clone(),
        );
        r.register(
            "netdoctor_listen_queue_full_ratio",
            "Fraction (0..1) of the latest window's samples with the accept queue at its limit",
            m.listen_full.clone(),
        );
        r.register(
            "netdoctor_syn_recv_connections",
            "Largest number of half-open (SYN_RECV) connections to the port sampled in the latest window",
            m.syn_recv.clone(),
        );
        r.register(
            "netdoctor_window_end_timestamp_seconds",
            "Unix time at which the latest window of the port ended",
            m.window_end.clone(),
        );
        r.register(
            "netdoctor_evidence_bytes",
            "Size of the evidence directory (reports and pcaps of problem windows)",
            m.evidence_bytes.clone(),
        );
        r.register(
            "netdoctor_evidence_dropped",
            "Evidence entries deleted to stay within the directory's limits, by reason (count, size, age)",
            m.evidence_dropped.clone(),
        );
        r.register(
            "netdoctor_slo_status",
            "Latest window's result of each --slo objective: 0 pass, 1 fail, 3 inconclusive (too few requests to judge)",
            m.slo_status.clone(),
        );
        r.register(
            "netdoctor_slo_margin",
            "How far the latest window's value is on the good side of each --slo objective's limit (negative: over it), in the objective's unit (ms, fraction, req/s)",
            m.slo_margin.clone(),
        );
        r.register(
            "process_cpu_seconds",
            "User and system CPU time spent by the agent",
            m.cpu.clone(),
        );
        r.register(
            "process_resident_memory_bytes",
            "Resident memory of the agent",
            m.rss.clone(),
        );
        r.register(
            "netdoctor_pod_listener",
            "A watched listener of a pod (pod mode): its pod UID, network namespace inode and where the pod's name came from",
            m.pod_listener.clone(),
        );
        AgentMetrics { registry: r, ..m }
    }

    /// Records the `--slo` objectives judged on one window of one port. An objective that
    /// could not be judged keeps status 3 and loses its margin (no stale value).
    pub fn record_slo(&self, port: u16, slo: &netdoctor_report::SloReport) {
        self.record_slo_in(&PodLabels::default(), port, slo);
    }

    /// [`record_slo`](Self::record_slo) for a port of a pod.
    pub fn record_slo_in(&self, pod: &PodLabels, port: u16, slo: &netdoctor_report::SloReport) {
        for o in &slo.objectives {
            let l = SloLabels {
                port: port.to_string(),
                objective: o.objective.clone(),
                pod: pod.clone(),
            };
            self.slo_status
                .get_or_create(&l)
                .set(i64::from(o.result.exit_code()));
            match o.margin {
                Some(m) => {
                    self.slo_margin.get_or_create(&l).set(m);
                }
                None => {
                    self.slo_margin.remove(&l);
                }
            }
        }
    }

    /// Records one window of one port: its findings, exchanges and capture statistics.
    /// `end_unix_s` is the window's end (Unix seconds).
    pub fn record_window(&self, port: u16, report: &Report, end_unix_s: f64) {
        self.record_window_in(&PodLabels::default(), port, report, end_unix_s);
    }

    /// [`record_window`](Self::record_window) for a port of a pod.
    pub fn record_window_in(&self, pod: &PodLabels, port: u16, report: &Report, end_unix_s: f64) {
        let p = port.to_string();
        let pl = PortLabels {
            port: p.clone(),
            pod: pod.clone(),
        };
        self.windows
            .get_or_create(&VerdictLabels {
                port: p.clone(),
                verdict: verdict_str(report),
                pod: pod.clone(),
            })
            .inc();
        self.record_findings_in(pod, port, &report.findings);
        if let Some(cap) = &report.measurements.capture {
            let s = &cap.stats;
            self.packets.get_or_create(&pl).inc_by(s.packets);
            self.drops.get_or_create(&pl).inc_by(s.capture_drops);
            self.connections.get_or_create(&pl).inc_by(s.connections);
            self.retransmits
                .get_or_create(&pl)
                .inc_by(s.retransmitted_segments);
            self.resets.get_or_create(&pl).inc_by(s.resets);
            self.syn_retransmits
                .get_or_create(&pl)
                .inc_by(s.syn_retransmits);
            self.evicted
                .get_or_create(&pl)
                .inc_by(s.connections_evicted);
            self.half_open_evicted
                .get_or_create(&pl)
                .inc_by(s.half_open_evicted);
            let x = &cap.exchanges;
            self.requests.get_or_create(&pl).inc_by(x.count);
            let hist = self.latency_hist.get_or_create(&pl);
            hist.add_exchanges(x);
            self.latency_by_labels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(pl.clone())
                .or_insert_with(|| hist.clone());
            drop(hist);
            self.window_summary.set(pod, port, x.latency_ms, x.count);
        }
        if let Some(c) = &report.measurements.counters {
            self.record_counters_in(pod, &c.changed);
        }
        self.window_end.get_or_create(&pl).set(end_unix_s);
    }

    /// Records what the watch loop knows of a port beyond its report: the listener sampled
    /// over the window (its series are removed when no listener was found) and the connections
    /// its analyzer tracks.
    pub fn record_host(
        &self,
        port: u16,
        listener: Option<&crate::host::ListenerWindow>,
        open_connections: usize,
    ) {
        self.record_host_in(&PodLabels::default(), port, listener, open_connections);
    }

    /// [`record_host`](Self::record_host) for a port of a pod.
    pub fn record_host_in(
        &self,
        pod: &PodLabels,
        port: u16,
        listener: Option<&crate::host::ListenerWindow>,
        open_connections: usize,
    ) {
        let pl = PortLabels {
            port: port.to_string(),
            pod: pod.clone(),
        };
        self.open_connections
            .get_or_create(&pl)
            .set(i64::try_from(open_connections).unwrap_or(i64::MAX));
        match listener {
            Some(l) => {
                self.listen_depth
                    .get_or_create(&pl)
                    .set(i64::from(l.max_accept_queue));
                self.listen_limit
                    .get_or_create(&pl)
                    .set(i64::from(l.backlog));
                self.listen_full
                    .get_or_create(&pl)
                    .set(l.full_samples as f64 / l.samples.max(1) as f64);
                self.syn_recv
                    .get_or_create(&pl)
                    .set(i64::from(l.max_syn_recv));
            }
            None => {
                self.listen_depth.remove(&pl);
                self.listen_limit.remove(&pl);
                self.listen_full.remove(&pl);
                self.syn_recv.remove(&pl);
            }
        }
    }

    /// Records the evidence directory's size and deletions (cumulative, from the ring).
    pub fn record_evidence(&self, s: &crate::ring::RingState) {
        self.evidence_bytes
            .set(i64::try_from(s.bytes).unwrap_or(i64::MAX));
        for (reason, total) in [
            ("count", s.dropped_count),
            ("size", s.dropped_size),
            ("age", s.dropped_age),
        ] {
            let c = self.evidence_dropped.get_or_create(&ReasonLabels {
                reason: reason.to_string(),
            });
            let now = c.get();
            if total > now {
                c.inc_by(total - now);
            }
        }
    }

    /// Sets the finding series of `port` to this window's findings; series of findings that
    /// went away drop to 0.
    pub fn record_findings(&self, port: u16, findings: &[Finding]) {
        self.record_findings_in(&PodLabels::default(), port, findings);
    }

    /// [`record_findings`](Self::record_findings) for a port of a pod.
    pub fn record_findings_in(&self, pod: &PodLabels, port: u16, findings: &[Finding]) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let known = seen.entry((pod.clone(), port)).or_default();
        for l in known.iter() {
            self.finding_active.get_or_create(l).set(0);
            self.finding_severity.get_or_create(l).set(0);
            self.finding_latency.get_or_create(l).set(0.0);
            self.finding_affected.get_or_create(l).set(0.0);
        }
        for f in findings {
            let l = finding_labels_in(pod, port, f);
            self.finding_active.get_or_create(&l).set(1);
            self.finding_severity
                .get_or_create(&l)
                .set(severity_value(f.severity));
            self.finding_latency
                .get_or_create(&l)
                .set(f.impact.added_latency_ms.unwrap_or(0.0) / 1000.0);
            self.finding_affected
                .get_or_create(&l)
                .set(f.impact.affected_fraction.unwrap_or(0.0));
            self.finding_windows.get_or_create(&l).inc();
            known.insert(l);
        }
    }

    /// Brings the counters of [`KERNEL_COUNTERS`] that moved in the window up to the kernel's
    /// value. A counter that went down (its namespace was recreated) keeps its value: a
    /// Prometheus counter never decreases while the agent runs.
    pub fn record_counters(&self, changed: &[CounterDelta]) {
        self.record_counters_in(&PodLabels::default(), changed);
    }

    /// [`record_counters`](Self::record_counters) of a pod's network namespace.
    pub fn record_counters_in(&self, pod: &PodLabels, changed: &[CounterDelta]) {
        for c in changed {
            if !KERNEL_COUNTERS.contains(&c.name.as_str()) {
                continue;
            }
            let counter = self.kernel_stat.get_or_create(&StatLabels {
                stat: c.name.clone(),
                pod: pod.clone(),
            });
            let now = counter.get();
            if c.after > now {
                counter.inc_by(c.after - now);
            }
        }
    }

    /// Names one watched pod listener (`netdoctor_pod_listener_info`).
    pub fn record_pod_listener(&self, l: &PodListenerLabels) {
        self.pod_listener.get_or_create(l).set(1);
    }

    /// Updates the process metrics from /proc/self (called before each scrape).
    pub fn refresh_process(&self) {
        if let Some(p) = crate::procstat::ProcStat::read_self() {
            let cpu = p.cpu_seconds();
            let now = self.cpu.get();
            if cpu > now {
                self.cpu.inc_by(cpu - now);
            }
            self.rss.set(i64::try_from(p.rss_bytes).unwrap_or(i64::MAX));
        }
    }

    /// The OpenMetrics text exposition of every metric.
    pub fn encode(&self) -> String {
        self.refresh_process();
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        // prometheus-client has no summary type: the window summary goes in by hand, before
        // the closing `# EOF`.
        let summary = self.window_summary.encode();
        match out.rfind("# EOF") {
            Some(i) => out.insert_str(i, &summary),
            None => out.push_str(&summary),
        }
        out
    }

    /// The protobuf exposition (length-delimited `io.prometheus.client.MetricFamily`) of every
    /// metric: the families of [`encode`](Self::encode), and the request-duration histogram
    /// with its native buckets beside the classic ones. An error names what could not be read.
    pub fn encode_protobuf(&self) -> Result<Vec<u8>, String> {
        const HIST: &str = "netdoctor_request_duration_seconds";
        let text = self.encode();
        let hists = self
            .latency_by_labels
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.proto_cache.encode(&text, |families| {
            crate::protobuf::replace_histograms(families, HIST, |labels| {
                let mut want = labels.to_vec();
                want.sort_unstable();
                hists
                    .iter()
                    .find(|(l, _)| {
                        let mut have = l.pairs();
                        have.sort_unstable();
                        have == want
                    })
                    .map(|(_, h)| h.to_proto())
            });
        })
    }

    /// Families the last protobuf answer read from the text (the others were copied from the
    /// answer before: their text had not changed).
    pub fn protobuf_families_read(&self) -> usize {
        self.proto_cache.last_read()
    }

    /// The classic Prometheus text format (version 0.0.4) of every metric, for scrapers that
    /// do not ask for OpenMetrics (curl, `promtool check metrics`, older agents). Same samples;
    /// the differences are the counter families' names in `# HELP`/`# TYPE` (with `_total`, as
    /// 0.0.4 names them after their samples) and no `# UNIT`/`# EOF` lines.
    pub fn encode_text_004(&self) -> String {
        openmetrics_to_004(&self.encode())
    }

    /// Every metric name as it appears in samples (counters with `_total`, histograms with
    /// `_bucket`/`_sum`/`_count`), for checks of dashboards and queries.
    pub fn sample_names() -> Vec<String> {
        // Families without a series are not encoded: feed one window that fills them all.
        let m = AgentMetrics::new();
        let mut r = Report::new(
            netdoctor_report::ReportCommand::Watch,
            netdoctor_report::Target {
                input: "tcp port 1".into(),
                address: None,
                protocol: None,
            },
        );
        r.findings.push(Finding::new(
            netdoctor_core::FindingId::NagleDelayedAck,
            netdoctor_core::Severity::Warning,
            netdoctor_core::Side::Server,
            "example",
        ));
        r.measurements.capture = Some(netdoctor_report::CaptureSection {
            source: netdoctor_report::CaptureSource::Live,
            snaplen: None,
            pcap_file: None,
            stats: Default::default(),
            exchanges: Default::default(),
            warnings: Vec::new(),
        });
        r.measurements.counters = Some(netdoctor_report::CountersSection {
            changed: vec![CounterDelta {
                name: KERNEL_COUNTERS[0].to_string(),
                before: 0,
                after: 1,
            }],
        });
        m.record_window(1, &r, 0.0);
        m.record_host(1, Some(&crate::host::ListenerWindow::default()), 0);
        m.record_evidence(&crate::ring::RingState::default());
        let text = m.encode();
        let mut names: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| {
                let (name, ty) = l.split_once(' ')?;
                Some(match ty {
                    "counter" => vec![format!("{name}_total")],
                    "summary" => vec![
                        name.to_string(),
                        format!("{name}_sum"),
                        format!("{name}_count"),
                    ],
                    "histogram" => vec![
                        format!("{name}_bucket"),
                        format!("{name}_sum"),
                        format!("{name}_count"),
                    ],
                    _ => vec![name.to_string()],
                })
            })
            .flatten()
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

fn verdict_str(r: &Report) -> String {
    serde_json::to_value(r.verdict)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

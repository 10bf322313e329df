//! The report: what a run measured, what it concluded, what it could not check.
//!
//! This is the JSON contract `netdoctor.report/v1` (schema: `schema/report-v1.json`). Findings are
//! the core's [`Finding`] type, which is itself kept stable for this purpose; the measurement
//! sections embed the result types of the probe, load and observe crates, which are plain data.
//!
//! A report reads back from its own JSON (`serde_json::from_str::<Report>`), so a saved run can
//! be compared with a later one: every field is owned data or an enum, and unknown fields are
//! ignored (newer reports stay readable).

use netdoctor_core::analyze::{CaptureStats, ExchangeStats};
use netdoctor_core::sockets::ServerSocket;
use netdoctor_core::{Finding, Verdict};
use netdoctor_load::LoadResult;
use netdoctor_observe::counters::CounterDelta;
use netdoctor_probe::{HttpTiming, SynProbe};
use serde::{Deserialize, Serialize};

/// The schema id written into every report.
pub const SCHEMA_ID: &str = "netdoctor.report/v1";

/// The committed JSON Schema for [`Report`].
pub const SCHEMA_JSON: &str = include_str!("../schema/report-v1.json");

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA_ID`] when written by this version.
    pub schema: String,
    pub command: ReportCommand,
    pub target: Target,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub measurements: Measurements,
    pub checks: Vec<Check>,
    /// Wall-clock time the run took, in seconds.
    pub elapsed_s: f64,
    /// The run was stopped early (Ctrl-C, SIGTERM): the report covers what was measured until
    /// then. Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// `diagnose --passive`: the run watched the target's real traffic and sent none (no
    /// probe, no load). Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub passive: bool,
    /// The service-level objectives judged on this run (`--slo`); absent without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<crate::slo::SloReport>,
}

/// The command that made a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportCommand {
    Diagnose,
    Analyze,
    Dns,
    Trace,
    Watch,
}

impl ReportCommand {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportCommand::Diagnose => "diagnose",
            ReportCommand::Dns => "dns",
            ReportCommand::Trace => "trace",
            ReportCommand::Watch => "watch",
            ReportCommand::Analyze => "analyze",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// What the user typed: a URL or a capture file path.
    pub input: String,
    /// The resolved `ip:port`, when the target is a network address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The protocol the target was given with (`diagnose`); how exchanges were found is
    /// `measurements.capture.exchanges.method`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<TargetProtocol>,
}

/// The protocol of a `diagnose` target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetProtocol {
    /// `http://`: HTTP/1.1 over TCP.
    Http,
    /// `https://`: HTTP/1.1 over TLS.
    Https,
    /// `tcp://`: any TCP request/response protocol.
    Tcp,
}

impl TargetProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetProtocol::Http => "http",
            TargetProtocol::Https => "https",
            TargetProtocol::Tcp => "tcp",
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measurements {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeSection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureSection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<CountersSection>,
    /// Sockets of the process serving the target on this host, with their options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_sockets: Option<Vec<ServerSocket>>,
    /// The DNS checks of a target given by name (`netdoctor-route`'s `DnsReport`, as JSON:
    /// the route crate's result types are written, not read back, so they are kept as a
    /// value here and a saved report still reads back whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<serde_json::Value>,
    /// The trace to a routed target (`netdoctor-route`'s `TraceResult` with its hop
    /// assessment), as JSON for the same reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<serde_json::Value>,
    /// Kernel drops by reason, retransmits and TCP state changes counted by eBPF during the
    /// load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<netdoctor_observe::host_findings::KernelEvents>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeSection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syn: Option<SynProbe>,
    /// The request with the median total time out of three timed one after another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpTiming>,
    /// connect() timed to completion, for a `tcp://` target whose SYN probe used raw SYNs
    /// (the whole handshake through the server's listener, where the raw SYN stops at the
    /// SYN/ACK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<SynProbe>,
}

/// Where captured packets came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureSource {
    /// AF_PACKET during the load.
    Live,
    /// A capture file (or a stream: stdin, a FIFO, a gzip'd file).
    File,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureSection {
    pub source: CaptureSource,
    /// Snap length of the live capture (bytes kept per packet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snaplen: Option<u32>,
    /// Where the captured packets were written (`--pcap`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcap_file: Option<String>,
    pub stats: CaptureStats,
    pub exchanges: ExchangeStats,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountersSection {
    /// Kernel counters (/proc/net/netstat, /proc/net/snmp) that changed during the run.
    pub changed: Vec<CounterDelta>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Ok,
    Skipped,
    Failed,
}

/// The stages of the method a report accounts for (`checks[].name` in the JSON).
///
/// A new observer adds one variant here; the JSON name is the variant in snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckName {
    /// SYN round-trip probes (raw SYN, or connect() timing without CAP_NET_RAW).
    SynProbe,
    /// The single timed HTTP request.
    HttpProbe,
    /// The concurrent load.
    Load,
    /// Packet capture (live) or the capture file (offline).
    Capture,
    /// Kernel counters before and after.
    Counters,
    /// Socket options of the server's process.
    SocketOptions,
    /// Whether the latency under load is explained by a finding.
    Explained,
    /// Whether the verdict could rule out transport-level causes.
    Verdict,
    /// Whether the capture held any TCP at all.
    Tcp,
    /// The `--pcap` copy of the captured packets.
    Pcap,
    /// CPU use of the machine and of netdoctor during the load.
    Cpu,
    /// The host collectors: listener queue, socket states, conntrack, interfaces, kernel log.
    Host,
    /// The resolver's path and each nameserver, for a target given by name.
    Dns,
    /// The route to a target that is not on a directly connected network.
    Trace,
    /// eBPF during the load: kernel drop reasons, retransmits, TCP state changes.
    Bpf,
    /// Before any load: route, neighbour, connect, TLS verification and one request; a
    /// failure that is the client's or the path's ends the run here.
    Preflight,
    /// After a load that asked for keep-alive and got a connection per request: a short
    /// keep-alive probe of what that costs.
    KeepaliveProbe,
    /// After a load whose answers looked lost on the path: which packet sizes get from the
    /// target to the client (a connection per size, each announcing a smaller MSS).
    PmtuProbe,
}

impl CheckName {
    /// Every check name, in the order a diagnose run reports them.
    pub const ALL: [CheckName; 18] = [
        CheckName::SynProbe,
        CheckName::HttpProbe,
        CheckName::Load,
        CheckName::Capture,
        CheckName::Counters,
        CheckName::SocketOptions,
        CheckName::Explained,
        CheckName::Verdict,
        CheckName::Tcp,
        CheckName::Pcap,
        CheckName::Cpu,
        CheckName::Host,
        CheckName::Dns,
        CheckName::Trace,
        CheckName::Bpf,
        CheckName::Preflight,
        CheckName::KeepaliveProbe,
        CheckName::PmtuProbe,
    ];

    /// The JSON name, e.g. `"syn_probe"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckName::SynProbe => "syn_probe",
            CheckName::HttpProbe => "http_probe",
            CheckName::Load => "load",
            CheckName::Capture => "capture",
            CheckName::Counters => "counters",
            CheckName::SocketOptions => "socket_options",
            CheckName::Explained => "explained",
            CheckName::Verdict => "verdict",
            CheckName::Tcp => "tcp",
            CheckName::Pcap => "pcap",
            CheckName::Cpu => "cpu",
            CheckName::Host => "host",
            CheckName::Dns => "dns",
            CheckName::Trace => "trace",
            CheckName::Bpf => "bpf",
            CheckName::Preflight => "preflight",
            CheckName::KeepaliveProbe => "keepalive_probe",
            CheckName::PmtuProbe => "pmtu_probe",
        }
    }
}

impl std::fmt::Display for CheckName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One stage of the method and whether it ran; a skipped or failed check says why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: CheckName,
    pub status: CheckStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Check {
    pub fn ok(name: CheckName) -> Check {
        Check {
            name,
            status: CheckStatus::Ok,
            reason: None,
        }
    }
    pub fn ok_with(name: CheckName, note: impl Into<String>) -> Check {
        Check {
            name,
            status: CheckStatus::Ok,
            reason: Some(note.into()),
        }
    }
    pub fn skipped(name: CheckName, reason: impl Into<String>) -> Check {
        Check {
            name,
            status: CheckStatus::Skipped,
            reason: Some(reason.into()),
        }
    }
    pub fn failed(name: CheckName, reason: impl Into<String>) -> Check {
        Check {
            name,
            status: CheckStatus::Failed,
            reason: Some(reason.into()),
        }
    }
}

impl Report {
    pub fn new(command: ReportCommand, target: Target) -> Report {
        Report {
            schema: SCHEMA_ID.to_string(),
            command,
            target,
            verdict: Verdict::Inconclusive,
            findings: Vec::new(),
            measurements: Measurements::default(),
            checks: Vec::new(),
            elapsed_s: 0.0,
            interrupted: false,
            passive: false,
            slo: None,
        }
    }

    /// Ranks the findings and sets the verdict with core's one rule
    /// ([`netdoctor_core::verdict::decide`]). When the run is not healthy for a reason other
    /// than a finding, that reason becomes a check: latency nothing explains fails
    /// `explained`, anything else (no capture, too few exchanges, failed requests, an
    /// interrupted run, a limited client) skips `verdict` with the reason.
    pub fn decide(&mut self, inputs: &netdoctor_core::verdict::VerdictInputs) {
        use netdoctor_core::verdict::Reason;
        let outcome = netdoctor_core::verdict::decide(&mut self.findings, inputs);
        // One root cause with its consequences under it (order and links only).
        netdoctor_core::relate::relate(&mut self.findings);
        for r in &outcome.reasons {
            match r {
                Reason::Finding { .. } => {}
                Reason::UnexplainedLatency { .. } => {
                    self.checks
                        .push(Check::failed(CheckName::Explained, r.message()));
                }
                _ => self
                    .checks
                    .push(Check::skipped(CheckName::Verdict, r.message())),
            }
        }
        self.verdict = outcome.verdict;
    }

    pub fn exit_code(&self) -> i32 {
        self.verdict.exit_code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_are_the_json_names() {
        for name in CheckName::ALL {
            let json = serde_json::to_value(name).unwrap();
            assert_eq!(json, name.as_str(), "{name:?}");
            let back: CheckName = serde_json::from_value(json).unwrap();
            assert_eq!(back, name);
        }
        assert!(serde_json::from_str::<CheckName>("\"made_up\"").is_err());
    }
}

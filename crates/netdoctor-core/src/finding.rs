//! The finding model: what a detector concluded, with its evidence.
//!
//! These types are serialized as-is into the `findings` array of the JSON report
//! (`netdoctor.report/v1`, see `schema/report-v1.json`), so field names and the `id`
//! strings are part of the public contract: add fields, never rename or repurpose them.

use serde::{Deserialize, Serialize};

/// Stable finding ids (DESIGN.md's catalog). The string form is the JSON contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingId {
    NagleDelayedAck,
    DelayedAckStall,
    PacketLossRetransmission,
    RetransmissionTimeout,
    SynRetransmit,
    ZeroWindow,
    ConnectionReset,
    ListenQueueOverflow,
    SynFlood,
    ConntrackTableFull,
    EphemeralPortExhaustion,
    InterfaceErrors,
    SlowServerProcessing,
    ShortConnections,
    ServerNotListening,
    HttpErrors,
    HighBaseRtt,
    RouteProblem,
    DnsNoNameserver,
    DnsServerUnreachable,
    DnsSlow,
    ReverseDnsTimeout,
    DnsNameNotFound,
    ReceiveWindowLimited,
    ApplicationLimited,
    NoRoute,
    NeighbourUnreachable,
    TlsVerifyFailed,
    H2FlowControlStall,
    H2StreamLimit,
    H2HeadOfLine,
    H2StreamResets,
    SendBufferLimited,
    CongestionLimited,
    ShaperLimited,
    MssMtuProblem,
    ReceiverSoftirqSaturated,
    SpuriousRetransmission,
    DnsDeadRecord,
    DnsServerError,
    SmallInitialWindow,
    SlowStartAfterIdle,
}

impl FindingId {
    /// Every id, in catalog order (the report crate's tests pin it to the JSON schema's list,
    /// and the message catalogues are checked against it).
    pub const ALL: [FindingId; 42] = {
        use FindingId::*;
        [
            NagleDelayedAck,
            DelayedAckStall,
            PacketLossRetransmission,
            RetransmissionTimeout,
            SynRetransmit,
            ZeroWindow,
            ConnectionReset,
            ListenQueueOverflow,
            SynFlood,
            ConntrackTableFull,
            EphemeralPortExhaustion,
            InterfaceErrors,
            SlowServerProcessing,
            ShortConnections,
            ServerNotListening,
            HttpErrors,
            HighBaseRtt,
            RouteProblem,
            DnsNoNameserver,
            DnsServerUnreachable,
            DnsSlow,
            ReverseDnsTimeout,
            DnsNameNotFound,
            ReceiveWindowLimited,
            ApplicationLimited,
            NoRoute,
            NeighbourUnreachable,
            TlsVerifyFailed,
            H2FlowControlStall,
            H2StreamLimit,
            H2HeadOfLine,
            H2StreamResets,
            SendBufferLimited,
            CongestionLimited,
            ShaperLimited,
            MssMtuProblem,
            ReceiverSoftirqSaturated,
            SpuriousRetransmission,
            DnsDeadRecord,
            DnsServerError,
            SmallInitialWindow,
            SlowStartAfterIdle,
        ]
    };

    /// The layer a finding id belongs to (fixed by the catalog).
    pub fn layer(self) -> Layer {
        use FindingId::*;
        match self {
            NagleDelayedAck
            | DelayedAckStall
            | PacketLossRetransmission
            | RetransmissionTimeout
            | SynRetransmit
            | ZeroWindow
            | ConnectionReset
            | ReceiveWindowLimited
            | H2HeadOfLine
            | SendBufferLimited
            | SpuriousRetransmission
            | SmallInitialWindow
            | SlowStartAfterIdle => Layer::Transport,
            ListenQueueOverflow
            | SynFlood
            | ConntrackTableFull
            | EphemeralPortExhaustion
            | ReceiverSoftirqSaturated => Layer::Host,
            InterfaceErrors | NeighbourUnreachable => Layer::Link,
            SlowServerProcessing | ShortConnections | ServerNotListening | HttpErrors
            | ApplicationLimited | TlsVerifyFailed | H2FlowControlStall | H2StreamLimit
            | H2StreamResets => Layer::Application,
            HighBaseRtt | RouteProblem | NoRoute | CongestionLimited | ShaperLimited
            | MssMtuProblem => Layer::Network,
            DnsNoNameserver | DnsServerUnreachable | DnsSlow | ReverseDnsTimeout
            | DnsNameNotFound | DnsDeadRecord | DnsServerError => Layer::Dns,
        }
    }

    /// The id as it appears in JSON (`nagle_delayed_ack`).
    pub fn as_str(self) -> &'static str {
        use FindingId::*;
        match self {
            NagleDelayedAck => "nagle_delayed_ack",
            DelayedAckStall => "delayed_ack_stall",
            PacketLossRetransmission => "packet_loss_retransmission",
            RetransmissionTimeout => "retransmission_timeout",
            SynRetransmit => "syn_retransmit",
            ZeroWindow => "zero_window",
            ConnectionReset => "connection_reset",
            ListenQueueOverflow => "listen_queue_overflow",
            SynFlood => "syn_flood",
            ConntrackTableFull => "conntrack_table_full",
            EphemeralPortExhaustion => "ephemeral_port_exhaustion",
            InterfaceErrors => "interface_errors",
            SlowServerProcessing => "slow_server_processing",
            ShortConnections => "short_connections",
            ServerNotListening => "server_not_listening",
            HttpErrors => "http_errors",
            HighBaseRtt => "high_base_rtt",
            RouteProblem => "route_problem",
            DnsNoNameserver => "dns_no_nameserver",
            DnsServerUnreachable => "dns_server_unreachable",
            DnsSlow => "dns_slow",
            ReverseDnsTimeout => "reverse_dns_timeout",
            DnsNameNotFound => "dns_name_not_found",
            ReceiveWindowLimited => "receive_window_limited",
            ApplicationLimited => "application_limited",
            NoRoute => "no_route",
            NeighbourUnreachable => "neighbour_unreachable",
            TlsVerifyFailed => "tls_verify_failed",
            H2FlowControlStall => "h2_flow_control_stall",
            H2StreamLimit => "h2_stream_limit",
            H2HeadOfLine => "h2_head_of_line",
            H2StreamResets => "h2_stream_resets",
            SendBufferLimited => "send_buffer_limited",
            CongestionLimited => "congestion_limited",
            ShaperLimited => "shaper_limited",
            MssMtuProblem => "mss_mtu_problem",
            ReceiverSoftirqSaturated => "receiver_softirq_saturated",
            SpuriousRetransmission => "spurious_retransmission",
            DnsDeadRecord => "dns_dead_record",
            DnsServerError => "dns_server_error",
            SmallInitialWindow => "small_initial_window",
            SlowStartAfterIdle => "slow_start_after_idle",
        }
    }
}

impl std::fmt::Display for FindingId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    Link,
    Network,
    Transport,
    Host,
    Application,
    Dns,
}

/// Ordered: `Info < Warning < Critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

/// Which end has to change to remove the problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Server,
    Client,
    Network,
    Host,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Impact {
    /// Latency added to an affected request, in milliseconds (median over affected requests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_latency_ms: Option<f64>,
    /// Fraction (0..=1) of requests or connections affected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affected_fraction: Option<f64>,
}

/// One packet named as evidence: its frame number in the capture (1-based, as Wireshark
/// numbers them), time relative to the first packet and absolute, direction and a short
/// description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketRef {
    pub frame: u64,
    /// Seconds since the first packet of the capture.
    pub time: f64,
    /// Capture timestamp, seconds since the Unix epoch (absolute: comparable across windows,
    /// captures and logs). 0 in reports written before it existed.
    #[serde(default)]
    pub ts: f64,
    /// `"S→C"` or `"C→S"`.
    pub dir: String,
    /// e.g. `"[P.] len=238 seq=1 ack=79"`.
    pub desc: String,
}

/// Evidence behind a finding. Tagged by `kind` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    /// A sequence of packets on one connection that shows the problem.
    Packets {
        /// `"10.0.0.1:40000 → 10.0.0.2:80"` (client → server).
        connection: String,
        packets: Vec<PacketRef>,
        /// What the reader should see in these packets, e.g. the gaps in ms.
        note: String,
    },
    /// A kernel counter and how it changed during the run.
    Counter {
        name: String,
        before: u64,
        after: u64,
        note: String,
    },
    /// A socket option read from a running process.
    SocketOption {
        pid: u32,
        fd: i32,
        option: String,
        value: String,
        note: String,
    },
    /// An active probe's result.
    Probe { probe: String, note: String },
    /// A kernel log line.
    Log { line: String, note: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub id: FindingId,
    pub layer: Layer,
    pub severity: Severity,
    pub side: Side,
    /// 0..=1: how sure the detector is.
    pub confidence: f64,
    pub impact: Impact,
    pub summary: String,
    pub explanation: String,
    pub fix: String,
    pub evidence: Vec<Evidence>,
    /// Findings of this run that this one explains (it is their root cause), see
    /// [`crate::relate`]. Absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consequences: Vec<FindingId>,
    /// The root cause of this finding when another finding of the run explains it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caused_by: Option<FindingId>,
}

impl Finding {
    /// A finding with the layer taken from the catalog; fill the rest with struct update.
    pub fn new(id: FindingId, severity: Severity, side: Side, summary: impl Into<String>) -> Self {
        Finding {
            id,
            layer: id.layer(),
            severity,
            side,
            confidence: 1.0,
            impact: Impact::default(),
            summary: summary.into(),
            explanation: String::new(),
            fix: String::new(),
            evidence: Vec::new(),
            consequences: Vec::new(),
            caused_by: None,
        }
    }
}

/// The overall answer of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Problem,
    Healthy,
    Inconclusive,
}

impl Verdict {
    /// DESIGN.md's exit codes: 0 healthy, 1 problem found, 3 inconclusive (2 is for errors).
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Healthy => 0,
            Verdict::Problem => 1,
            Verdict::Inconclusive => 3,
        }
    }
}

/// Sort findings most important first: severity, then added latency × affected fraction.
pub fn rank(findings: &mut [Finding]) {
    fn weight(f: &Finding) -> f64 {
        f.impact.added_latency_ms.unwrap_or(0.0) * f.impact.affected_fraction.unwrap_or(1.0)
    }
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(weight(b).total_cmp(&weight(a)))
            .then(b.confidence.total_cmp(&a.confidence))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialize_as_catalog_strings() {
        for id in [
            FindingId::NagleDelayedAck,
            FindingId::SlowServerProcessing,
            FindingId::ServerNotListening,
            FindingId::ReverseDnsTimeout,
        ] {
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{}\"", id.as_str()));
        }
    }

    #[test]
    fn rank_puts_critical_and_costly_first() {
        let mut a = Finding::new(
            FindingId::SlowServerProcessing,
            Severity::Warning,
            Side::Server,
            "a",
        );
        a.impact.added_latency_ms = Some(100.0);
        let mut b = Finding::new(
            FindingId::NagleDelayedAck,
            Severity::Critical,
            Side::Server,
            "b",
        );
        b.impact.added_latency_ms = Some(40.0);
        let mut v = vec![a, b];
        rank(&mut v);
        assert_eq!(v[0].id, FindingId::NagleDelayedAck);
    }
}

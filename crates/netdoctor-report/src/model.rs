//! The report: what a run measured, what it concluded, what it could not check.
//!
//! This is the JSON contract `netdoctor.report/v1` (schema: `schema/report-v1.json`). Findings are
//! the core's [`Finding`] type, which is itself kept stable for this purpose; the measurement
//! sections embed the result types of the probe, load and observe crates, which are plain data.

use netdoctor_core::analyze::{CaptureStats, ExchangeStats};
use netdoctor_core::sockets::ServerSocket;
use netdoctor_core::{Finding, Verdict};
use netdoctor_load::LoadResult;
use netdoctor_observe::counters::CounterDelta;
use netdoctor_probe::{HttpTiming, SynProbe};
use serde::Serialize;

/// The schema id written into every report.
pub const SCHEMA_ID: &str = "netdoctor.report/v1";

/// The committed JSON Schema for [`Report`].
pub const SCHEMA_JSON: &str = include_str!("../schema/report-v1.json");

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    /// `"diagnose"` or `"analyze"`.
    pub command: &'static str,
    pub target: Target,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub measurements: Measurements,
    pub checks: Vec<Check>,
    /// Wall-clock time the run took, in seconds.
    pub elapsed_s: f64,
    /// The run was cut short (Ctrl-C or SIGTERM): the report holds what was seen until then.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// What the user typed: a URL or a capture file path.
    pub input: String,
    /// The resolved `ip:port`, when the target is a network address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
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
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ProbeSection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syn: Option<SynProbe>,
    /// The request with the median total time out of three timed one after another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpTiming>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaptureSection {
    /// `"live"` (AF_PACKET during the load) or `"file"`.
    pub source: &'static str,
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

#[derive(Debug, Clone, Serialize)]
pub struct CountersSection {
    /// Kernel counters (/proc/net/netstat, /proc/net/snmp) that changed during the run.
    pub changed: Vec<CounterDelta>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Ok,
    Skipped,
    Failed,
}

/// One stage of the method and whether it ran; a skipped or failed check says why.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: CheckStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Check {
    pub fn ok(name: &'static str) -> Check {
        Check {
            name,
            status: CheckStatus::Ok,
            reason: None,
        }
    }
    pub fn ok_with(name: &'static str, note: impl Into<String>) -> Check {
        Check {
            name,
            status: CheckStatus::Ok,
            reason: Some(note.into()),
        }
    }
    pub fn skipped(name: &'static str, reason: impl Into<String>) -> Check {
        Check {
            name,
            status: CheckStatus::Skipped,
            reason: Some(reason.into()),
        }
    }
    pub fn failed(name: &'static str, reason: impl Into<String>) -> Check {
        Check {
            name,
            status: CheckStatus::Failed,
            reason: Some(reason.into()),
        }
    }
}

impl Report {
    pub fn new(command: &'static str, target: Target) -> Report {
        Report {
            schema: SCHEMA_ID,
            command,
            target,
            verdict: Verdict::Inconclusive,
            findings: Vec::new(),
            measurements: Measurements::default(),
            checks: Vec::new(),
            elapsed_s: 0.0,
            interrupted: false,
        }
    }

    /// Ranks the findings and sets the verdict. `conclusive` says whether the run saw enough
    /// to call a target without findings healthy.
    pub fn conclude(&mut self, conclusive: bool) {
        netdoctor_core::finding::rank(&mut self.findings);
        self.verdict = Verdict::from_findings(&self.findings, conclusive);
    }

    pub fn exit_code(&self) -> i32 {
        self.verdict.exit_code()
    }
}

//! Observers: the passive parts of a diagnosis (capture, counters, the server's sockets, and
//! later the host's queues, kernel log and eBPF), all of one shape.
//!
//! An observer starts from the plan before the load, may look again while the load runs, and
//! finishes into its check (ok, skipped or failed with the reason), the observations it made
//! and its part of the measurements. One that cannot run (no privilege, remote target) says
//! why in its check and the run goes on without it.

use crate::host::Host;
use crate::plan::DiagnosePlan;
use netdoctor_core::analyze::Analyzer;
use netdoctor_core::observation::Observation;
use netdoctor_observe::SourceSummary;
use netdoctor_report::{Check, CheckName, Measurements};
use std::net::SocketAddr;
use std::time::Duration;

/// What every observer may look at.
pub struct RunCtx<'a> {
    pub plan: &'a DiagnosePlan,
    /// The resolved target.
    pub addr: SocketAddr,
    pub host: &'a dyn Host,
}

/// What the observers found, collected for the detectors and the report.
#[derive(Default)]
pub struct Outcome {
    pub checks: Vec<Check>,
    pub measurements: Measurements,
    /// Fed to the detectors with the packets.
    pub observations: Vec<Observation>,
    /// The analyzer that saw the captured packets (not finished yet: the observations join
    /// it), with what the capture itself reported.
    pub capture: Option<Captured>,
    /// CPU use during the load.
    pub cpu: Option<crate::observers::CpuUse>,
    /// Findings an observer made itself (the host layer's), ranked with the detectors'.
    pub findings: Vec<netdoctor_core::Finding>,
    /// The load's median latency, set before the observers finish, for those that compare a
    /// figure of theirs with it (the trace's base RTT).
    pub load_p50_ms: Option<f64>,
    /// The load's own connect() calls and how many failed for want of a local port, set
    /// before the observers finish (evidence for `ephemeral_port_exhaustion`).
    pub load_connects: Option<netdoctor_observe::host_findings::ConnectOutcome>,
    /// `tcp_info` of the load's own connections, sampled while it ran (the kernel's
    /// `min_rtt`, a base-RTT source).
    pub client_tcp_info: Vec<netdoctor_observe::sockdiag::ConnInfo>,
    /// The MTU probe run after the load (`crate::pmtu`), when the answers looked lost.
    pub pmtu: Option<netdoctor_probe::PmtuProbe>,
    /// Kernel drops by reason that eBPF counted (evidence for the host findings).
    pub kernel_drops: Vec<netdoctor_observe::host_findings::KernelDrop>,
}

/// A live capture that ran.
pub struct Captured {
    pub analyzer: Analyzer,
    pub summary: SourceSummary,
    /// The `--pcap` file, when it was written completely.
    pub pcap_file: Option<std::path::PathBuf>,
}

pub trait Observer: Send {
    /// The check this observer reports under.
    fn name(&self) -> CheckName;
    /// Before the load. An error is the observer's check (skipped or failed, with the
    /// reason); the observer is then dropped and the run goes on.
    fn start(&mut self, ctx: &RunCtx<'_>) -> Result<(), Check>;
    /// On every progress tick of the load (or of a passive window).
    fn tick(&mut self, _ctx: &RunCtx<'_>, _elapsed: Duration) {}
    /// Completed exchanges seen so far, for the progress line of a passive window (the
    /// capture knows; others say `None`). Cheap: read on every tick.
    fn exchanges_seen(&self) -> Option<u64> {
        None
    }
    /// After the load (also an interrupted one): its check, observations and measurements.
    fn finish(self: Box<Self>, ctx: &RunCtx<'_>, out: &mut Outcome);
}

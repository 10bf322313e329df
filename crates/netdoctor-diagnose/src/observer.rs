//! Observers: the passive parts of a diagnosis (capture, counters, the server's sockets, and
//! later the host's queues, kernel log and eBPF), all of one shape.
//!
//! An observer starts from the plan before the load, may look again while the load runs, and
//! finishes into its check (ok, skipped or failed with the reason), the observations it made
//! and its part of the measurements. One that cannot run (no privilege, remote target) says
//! why in its check and the run goes on without it.

use crate::host::Host;
use crate::plan::DiagnosePlan;
use netdoctor_core::analyze::Analysis;
use netdoctor_core::sockets::ServerSocket;
use netdoctor_report::{Check, Measurements};
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
    /// The packets' analysis, when a capture ran.
    pub analysis: Option<Analysis>,
    /// The server's sockets with their options, when they could be read.
    pub server_sockets: Option<Vec<ServerSocket>>,
    /// CPU use during the load.
    pub cpu: Option<crate::observers::CpuUse>,
}

pub trait Observer: Send {
    /// The check this observer reports under.
    fn name(&self) -> &'static str;
    /// Before the load. An error is the observer's check (skipped or failed, with the
    /// reason); the observer is then dropped and the run goes on.
    fn start(&mut self, ctx: &RunCtx<'_>) -> Result<(), Check>;
    /// On every progress tick of the load.
    fn tick(&mut self, _ctx: &RunCtx<'_>, _elapsed: Duration) {}
    /// After the load (also an interrupted one): its check, observations and measurements.
    fn finish(self: Box<Self>, ctx: &RunCtx<'_>, out: &mut Outcome);
}

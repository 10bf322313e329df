//! The host layer during the load (issue 10's collectors): the target's listener sampled over
//! the run (accept queue against backlog), socket states (SYN_RECV, TIME_WAIT), counters with
//! meaning, conntrack, interface errors, sysctls and kernel log lines, all of the namespace the
//! run is in; then the host findings (`listen_queue_overflow`, `syn_flood`,
//! `conntrack_table_full`, `ephemeral_port_exhaustion`, `interface_errors`).
//! The listener (and the server side's counters, states and sysctls) is read in the network
//! namespace of the process that serves the target when it runs on this host (a lab or a
//! container: client namespace → server namespace), else in this one; the check says which.
//! The load's own connect() calls (and those that failed with EADDRNOTAVAIL) join the
//! observations, so a load that ran out of local ports is `ephemeral_port_exhaustion`
//! (critical), not only TIME_WAIT near the range.

use crate::observer::{Observer, Outcome, RunCtx};
use netdoctor_observe::host_findings::host_findings;
use netdoctor_observe::host_run::{self, HostRun};
use netdoctor_report::{Check, CheckName};

#[derive(Default)]
pub struct HostObserver {
    run: Option<HostRun>,
}

impl Observer for HostObserver {
    fn name(&self) -> CheckName {
        CheckName::Host
    }

    fn start(&mut self, ctx: &RunCtx<'_>) -> Result<(), Check> {
        self.run = Some(ctx.host.start_host_run(ctx.addr).ok_or_else(|| {
            Check::skipped(
                CheckName::Host,
                "the host collectors do not run on this host",
            )
        })?);
        Ok(())
    }

    fn finish(mut self: Box<Self>, _ctx: &RunCtx<'_>, out: &mut Outcome) {
        let Some(run) = self.run.take() else { return };
        let sampled_in = run
            .sampled_in()
            .map(|ns| format!("server side read in the {ns}"));
        let (mut obs, mut skipped) = run.finish();
        skipped.extend(host_run::read_client_side(&mut obs));
        skipped.dedup_by(|a, b| a.name == b.name);
        obs.kernel_drops = out.kernel_drops.clone();
        // The load's own connect() failures for want of a local port (EADDRNOTAVAIL) are the
        // direct evidence of ephemeral port exhaustion on this side.
        obs.connects = out.load_connects.clone();
        out.findings.extend(host_findings(&obs));
        let notes: Vec<String> = sampled_in
            .into_iter()
            .chain(skipped.iter().map(|s| match &s.missing_capability {
                Some(cap) if !s.reason.contains(&format!("needs {cap}")) => {
                    format!("{} skipped ({}; needs {cap})", s.name, s.reason)
                }
                _ => format!("{} skipped ({})", s.name, s.reason),
            }))
            .collect();
        out.checks.push(if notes.is_empty() {
            Check::ok(CheckName::Host)
        } else {
            Check::ok_with(CheckName::Host, notes.join("; "))
        });
    }
}

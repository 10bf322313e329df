//! eBPF during the load (netdoctor-bpf on `tp_btf` tracepoints): kernel drops by reason and
//! location (`skb:kfree_skb`), retransmits per connection (`tcp:tcp_retransmit_skb`) and TCP
//! state changes (`sock:inet_sock_set_state`), counted in the kernel in the network namespace
//! of the server when it runs on this host, else in the run's. They become the report's
//! `measurements.kernel` section, and the drops are evidence for the host findings (this
//! observer finishes before the host observer). When the programs cannot load (no BTF, no
//! privilege, a kernel without these tracepoints), the `bpf` check says why and the run goes on.

use crate::host::KernelEventsRun;
use crate::observer::{Observer, Outcome, RunCtx};
use netdoctor_report::{Check, CheckName};

#[derive(Default)]
pub struct BpfObserver {
    run: Option<Box<dyn KernelEventsRun>>,
}

impl Observer for BpfObserver {
    fn name(&self) -> CheckName {
        CheckName::Bpf
    }

    fn start(&mut self, ctx: &RunCtx<'_>) -> Result<(), Check> {
        let run = ctx
            .host
            .start_kernel_events(ctx.addr)
            .map_err(|why| Check::skipped(CheckName::Bpf, why))?;
        self.run = Some(run);
        Ok(())
    }

    fn finish(mut self: Box<Self>, _ctx: &RunCtx<'_>, out: &mut Outcome) {
        let Some(run) = self.run.take() else { return };
        let events = run.finish();
        let mut note = format!("counted in the {}", events.netns);
        if !events.failed.is_empty() {
            note.push_str(&format!(
                "; programs that did not run: {}",
                events.failed.join("; ")
            ));
        }
        out.checks.push(Check::ok_with(CheckName::Bpf, note));
        out.kernel_drops = events.drops.clone();
        out.measurements.kernel = Some(events);
    }
}

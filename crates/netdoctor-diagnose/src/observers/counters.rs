//! Kernel counters (/proc/net/netstat, /proc/net/snmp) before and after the load.

use crate::observer::{Observer, Outcome, RunCtx};
use netdoctor_core::observation::Observation;
use netdoctor_observe::{CounterSnapshot, counters};
use netdoctor_report::{Check, CheckName, CountersSection};

#[derive(Default)]
pub struct CountersObserver {
    before: Option<CounterSnapshot>,
}

impl Observer for CountersObserver {
    fn name(&self) -> CheckName {
        CheckName::Counters
    }

    fn start(&mut self, ctx: &RunCtx<'_>) -> Result<(), Check> {
        let snap = ctx
            .host
            .counters()
            .map_err(|e| Check::failed(CheckName::Counters, e.to_string()))?;
        self.before = Some(snap);
        Ok(())
    }

    fn finish(self: Box<Self>, ctx: &RunCtx<'_>, out: &mut Outcome) {
        let Some(before) = self.before else { return };
        match ctx.host.counters() {
            Ok(after) => {
                out.checks.push(Check::ok(CheckName::Counters));
                let changed = counters::delta(&before, &after);
                out.observations
                    .push(Observation::Counters(changed.clone()));
                out.measurements.counters = Some(CountersSection { changed });
            }
            Err(e) => out
                .checks
                .push(Check::failed(CheckName::Counters, e.to_string())),
        }
    }
}

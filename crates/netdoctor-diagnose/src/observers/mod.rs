//! The observers a diagnosis runs, in the order they start. Adding one: a file here that
//! implements [`Observer`](crate::observer::Observer) and one line in [`for_plan`].

mod bpf;
mod capture;
mod counters;
mod cpu;
mod host;
mod sockets;
mod trace;

use crate::observer::Observer;
use crate::plan::DiagnosePlan;
use netdoctor_report::{Check, CheckName};

pub use capture::CaptureObserver;
pub use counters::CountersObserver;
pub use cpu::{CpuObserver, CpuTimes, CpuUse, cpu_times};
pub use host::HostObserver;
pub use sockets::SocketsObserver;
pub use trace::{TraceObserver, trace_options};

/// The observers the plan asks for, and the checks of those it switched off.
pub fn for_plan(plan: &DiagnosePlan) -> (Vec<Box<dyn Observer>>, Vec<Check>) {
    let mut on: Vec<Box<dyn Observer>> = Vec::new();
    let mut off = Vec::new();
    // First: its probe connections finish before the others watch.
    if plan.trace {
        on.push(Box::new(TraceObserver::default()));
    } else {
        off.push(Check::skipped(CheckName::Trace, "--no-trace was given"));
    }
    // eBPF first: loading it parses the kernel's BTF (~18 MB, freed right after), so that
    // peak comes before the capture ring and the load take their memory, not on top of them.
    // Both host observers start before the capture: finding the server's namespace may open
    // one connection to the target, which must not show up among the run's packets. eBPF
    // finishes before the host observer, whose findings take its drops as evidence.
    if plan.bpf {
        on.push(Box::new(bpf::BpfObserver::default()));
    } else {
        off.push(Check::skipped(
            CheckName::Bpf,
            "switched off (--no-bpf or --no-host)",
        ));
    }
    if plan.host {
        on.push(Box::new(HostObserver::default()));
    } else {
        off.push(Check::skipped(CheckName::Host, "switched off (--no-host)"));
    }
    on.push(Box::new(CpuObserver::default()));
    if plan.counters {
        on.push(Box::new(CountersObserver::default()));
    }
    if plan.capture.enabled {
        on.push(Box::new(CaptureObserver::default()));
    } else {
        off.push(Check::skipped(CheckName::Capture, "--no-capture was given"));
    }
    if plan.socket_options {
        on.push(Box::new(SocketsObserver::default()));
    }
    (on, off)
}

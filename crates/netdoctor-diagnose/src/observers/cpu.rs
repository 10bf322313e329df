//! CPU during the load: the whole machine's (/proc/stat) and netdoctor's own (getrusage).
//! When the load generator shares the machine with the server, a saturated CPU makes both
//! slow; the detectors must then not blame the server (or the network) for queueing that
//! netdoctor's own load caused.

use crate::observer::{Observer, Outcome, RunCtx};
use netdoctor_report::{Check, CheckName};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// CPU use over the load, as fractions of the machine's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    /// Online CPUs.
    pub cores: u32,
    /// Busy share of all CPUs (1.0 = every core busy the whole time).
    pub machine_busy: f64,
    /// netdoctor's own CPU time over wall time, as a share of all CPUs.
    pub own_busy: f64,
    /// How long the server's threads waited for a CPU over the load (their run-queue delay),
    /// ms, when the server runs on this host and its tasks could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_wait_ms: Option<f64>,
    /// The CPU time the server's processes used over the load, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_ms: Option<f64>,
}

impl CpuUse {
    /// The machine had no CPU left: latency measured now includes waiting for a CPU.
    pub fn saturated(&self) -> bool {
        self.machine_busy >= 0.9
    }
}

/// Jiffies from the `cpu` line of /proc/stat: (busy, total).
pub fn parse_proc_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 4 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest time is inside user)
    let idle = v[3] + v.get(4).copied().unwrap_or(0);
    let total: u64 = v.iter().take(8).sum();
    Some((total.saturating_sub(idle), total))
}

/// CPU counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    /// Busy and total jiffies of all CPUs (/proc/stat).
    pub machine: (u64, u64),
    /// This process's user + system time.
    pub own: Duration,
}

/// The machine's CPU counters now (what [`crate::SystemHost`] returns).
pub fn cpu_times() -> Option<CpuTimes> {
    Some(CpuTimes {
        machine: parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)?,
        own: netdoctor_sys::rusage::own_cpu_time(),
    })
}

#[derive(Default)]
pub struct CpuObserver {
    start: Option<(Instant, CpuTimes)>,
    /// The server's process and, per task, (on-CPU, run-queue) ns at its first sight and at
    /// its last: a task that ends during the load (a forked child) keeps its last figures.
    server: Option<u32>,
    tasks: std::collections::HashMap<u32, ([u64; 2], [u64; 2])>,
}

impl Observer for CpuObserver {
    fn name(&self) -> CheckName {
        CheckName::Cpu
    }

    fn start(&mut self, ctx: &RunCtx<'_>) -> Result<(), Check> {
        let t = ctx
            .host
            .cpu_times()
            .ok_or_else(|| Check::failed(CheckName::Cpu, "read /proc/stat"))?;
        self.start = Some((Instant::now(), t));
        self.server = ctx.host.server_pid(ctx.addr);
        self.sample(ctx, true);
        Ok(())
    }

    fn tick(&mut self, ctx: &RunCtx<'_>, _elapsed: Duration) {
        self.sample(ctx, false);
    }

    fn finish(mut self: Box<Self>, ctx: &RunCtx<'_>, out: &mut Outcome) {
        let Some((t0, before)) = self.start else {
            return;
        };
        let Some(after) = ctx.host.cpu_times() else {
            out.checks
                .push(Check::failed(CheckName::Cpu, "read /proc/stat"));
            return;
        };
        let ((busy0, total0), (busy1, total1)) = (before.machine, after.machine);
        let own0 = before.own;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let wall = t0.elapsed().as_secs_f64();
        let total = total1.saturating_sub(total0);
        let machine_busy = if total > 0 {
            busy1.saturating_sub(busy0) as f64 / total as f64
        } else {
            0.0
        };
        let own = after.own.saturating_sub(own0).as_secs_f64();
        let own_busy = if wall > 0.0 {
            (own / wall / f64::from(cores)).min(1.0)
        } else {
            0.0
        };
        self.sample(ctx, false);
        let sum = |k: usize| {
            self.tasks
                .values()
                .map(|(a, b)| b[k].saturating_sub(a[k]))
                .sum::<u64>() as f64
                / 1e6
        };
        let seen = self.server.is_some() && !self.tasks.is_empty();
        let server_cpu_ms = seen.then(|| sum(0));
        let server_wait_ms = seen.then(|| sum(1));
        out.checks.push(Check::ok(CheckName::Cpu));
        out.cpu = Some(CpuUse {
            cores,
            machine_busy,
            own_busy,
            server_wait_ms,
            server_cpu_ms,
        });
    }
}

impl CpuObserver {
    /// Reads the server's tasks: a task seen first at the start counts from there, one born
    /// later from zero; every task keeps its latest figures.
    fn sample(&mut self, ctx: &RunCtx<'_>, first: bool) {
        let Some(pid) = self.server else {
            return;
        };
        for t in ctx.host.server_tasks(pid).unwrap_or_default() {
            let now = [t.cpu_ns, t.wait_ns];
            let e = self
                .tasks
                .entry(t.tid)
                .or_insert((if first { now } else { [0, 0] }, now));
            e.1 = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_busy_excludes_idle_and_iowait() {
        let text = "cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\nintr 1\n";
        assert_eq!(parse_proc_stat(text), Some((160, 1000)));
        assert_eq!(parse_proc_stat("intr 1\n"), None);
        assert_eq!(parse_proc_stat("cpu  1 2\n"), None);
    }
}

//! The host's CPUs over a test, as the receive-softirq finding needs them: per CPU, the share of
//! time spent in softirq (`/proc/stat`), how often `NET_RX` ran (`/proc/softirqs`), and the
//! packets the receive softirq processed, dropped at a full backlog and left for later when its
//! budget ran out (`time_squeeze`, `/proc/net/softnet_stat`). Each side of a test takes a
//! snapshot when the streams start and when they end; our server sends its figures to the
//! client with its results (an extra key, `netdoctor_cpu`, that iperf3 ignores), so the client
//! that sends can judge the receiver's CPUs. With them, each CPU's softirq thread
//! (`ksoftirqd/N`, `/proc/PID/schedstat`): the time it ran and the time it waited on the run
//! queue. Beside busy tasks the receive softirq defers to that thread and gets a task's share,
//! which /proc/stat and softnet_stat hardly show (see `limits::softirq`).

use netdoctor_observe::cpustat::{self, CpuTicks};
use netdoctor_observe::schedstat::{self, TaskCpu};
use netdoctor_observe::softnet::{self, SoftnetCpu};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// How many CPUs a [`HostCpu`] keeps (those with the most softirq time): bounded results on a
/// machine with hundreds of CPUs.
pub const KEEP: usize = 4;

/// The counters at one moment.
#[derive(Clone, Debug)]
pub struct CpuSnapshot {
    at: Instant,
    ticks: Vec<CpuTicks>,
    net_rx: Vec<u64>,
    softnet: Vec<SoftnetCpu>,
    /// Per CPU, its softirq thread's counters.
    ksoftirqd: Vec<(u32, TaskCpu)>,
}

impl CpuSnapshot {
    /// Reads `/proc/stat`, `/proc/softirqs` and `/proc/net/softnet_stat`; the error names the
    /// file that could not be read.
    pub fn take() -> Result<CpuSnapshot, String> {
        Ok(CpuSnapshot {
            ksoftirqd: ksoftirqd(&schedstat::ksoftirqd_pids()),
            ..CpuSnapshot::take_without_threads()?
        })
    }

    /// The next snapshot, reading the softirq threads this one found (no second walk of
    /// `/proc`).
    pub fn take_again(&self) -> Result<CpuSnapshot, String> {
        let pids: Vec<(u32, u32)> = self.ksoftirqd.iter().map(|(c, t)| (*c, t.tid)).collect();
        Ok(CpuSnapshot {
            ksoftirqd: ksoftirqd(&pids),
            ..CpuSnapshot::take_without_threads()?
        })
    }

    fn take_without_threads() -> Result<CpuSnapshot, String> {
        Ok(CpuSnapshot {
            at: Instant::now(),
            ticks: cpustat::read_cpus().map_err(|e| e.to_string())?,
            net_rx: cpustat::read_softirqs("NET_RX").map_err(|e| e.to_string())?,
            softnet: softnet::read().map_err(|e| e.to_string())?,
            ksoftirqd: Vec::new(),
        })
    }

    /// What happened on each CPU since `before`.
    pub fn since(&self, before: &CpuSnapshot) -> HostCpu {
        let seconds = (self.at - before.at).as_secs_f64();
        let mut cpus: Vec<CpuShare> = self
            .ticks
            .iter()
            .enumerate()
            .filter_map(|(i, now)| {
                let then = before.ticks.iter().find(|t| t.cpu == now.cpu)?;
                let d = now.since(then);
                let total = d.total();
                if total == 0 {
                    return None;
                }
                let share = |v: u64| v as f64 / total as f64;
                let idx = now.cpu as usize;
                let rx = |v: &[u64]| v.get(idx).copied().unwrap_or(0);
                // softnet_stat has a line per online CPU, in the order /proc/stat lists them.
                let sn = |v: &[SoftnetCpu]| v.get(i).cloned().unwrap_or_default();
                let (a, b) = (sn(&self.softnet), sn(&before.softnet));
                // The CPU's softirq thread, when both snapshots read the same one.
                let thread = |v: &[(u32, TaskCpu)]| v.iter().find(|k| k.0 == now.cpu).map(|k| k.1);
                let ks = match (thread(&self.ksoftirqd), thread(&before.ksoftirqd)) {
                    (Some(a), Some(b)) if a.tid == b.tid && seconds > 0.0 => {
                        let wall = seconds * 1e9;
                        // A wait that began before `before` is counted when it ends, so a
                        // share can pass 1 on a short span: capped.
                        Some((
                            (a.cpu_ns.saturating_sub(b.cpu_ns) as f64 / wall).min(1.0),
                            (a.wait_ns.saturating_sub(b.wait_ns) as f64 / wall).min(1.0),
                        ))
                    }
                    _ => None,
                };
                Some(CpuShare {
                    cpu: now.cpu,
                    softirq: share(d.softirq),
                    user: share(d.user),
                    system: share(d.system),
                    idle: share(d.idle),
                    net_rx: rx(&self.net_rx).saturating_sub(rx(&before.net_rx)),
                    processed: a.processed.saturating_sub(b.processed),
                    dropped: a.dropped.saturating_sub(b.dropped),
                    time_squeeze: a.time_squeeze.saturating_sub(b.time_squeeze),
                    ksoftirqd_run: ks.map(|k| k.0),
                    ksoftirqd_wait: ks.map(|k| k.1),
                })
            })
            .collect();
        let n = cpus.len() as u32;
        cpus.sort_by(|a, b| b.softirq.total_cmp(&a.softirq));
        cpus.truncate(KEEP);
        HostCpu {
            seconds,
            cpus: n,
            busiest: cpus,
        }
    }
}

/// The host's CPUs over a test: the ones that spent the most time in softirq.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpu {
    /// Wall time the figures cover.
    pub seconds: f64,
    /// Online CPUs.
    pub cpus: u32,
    /// The CPUs with the most softirq time, most first (at most [`KEEP`]).
    pub busiest: Vec<CpuShare>,
}

/// One CPU over a test. Shares are of the CPU's time (ticks), 0–1.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuShare {
    pub cpu: u32,
    pub softirq: f64,
    /// user + nice.
    pub user: f64,
    pub system: f64,
    /// idle + iowait.
    pub idle: f64,
    /// Times the `NET_RX` softirq ran.
    pub net_rx: u64,
    /// Packets the receive softirq processed (softnet_stat).
    pub processed: u64,
    /// Packets dropped because the CPU's backlog was full (`netdev_max_backlog`).
    pub dropped: u64,
    /// Times the receive softirq stopped with work left (budget or time used up).
    pub time_squeeze: u64,
    /// Shares of the wall time the CPU's softirq thread (`ksoftirqd/N`) ran, and waited on
    /// the run queue (ready, the CPU taken by other tasks); absent when it could not be read
    /// (a PID namespace without kernel threads, a server before this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ksoftirqd_run: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ksoftirqd_wait: Option<f64>,
}

/// Each CPU's softirq thread's counters now, from (CPU, pid).
fn ksoftirqd(pids: &[(u32, u32)]) -> Vec<(u32, TaskCpu)> {
    pids.iter()
        .filter_map(|&(cpu, pid)| Some((cpu, schedstat::process_cpu(pid)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(secs: u64, ticks: &[(u32, u64, u64)], rx: &[u64], sq: &[u64]) -> CpuSnapshot {
        CpuSnapshot {
            at: Instant::now() - std::time::Duration::from_secs(10 - secs),
            ticks: ticks
                .iter()
                .map(|&(cpu, user, softirq)| CpuTicks {
                    cpu,
                    user,
                    softirq,
                    idle: 1000,
                    ..CpuTicks::default()
                })
                .collect(),
            net_rx: rx.to_vec(),
            softnet: sq
                .iter()
                .map(|&s| SoftnetCpu {
                    processed: s * 100,
                    dropped: 0,
                    time_squeeze: s,
                })
                .collect(),
            ksoftirqd: Vec::new(),
        }
    }

    #[test]
    fn the_cpu_with_the_most_softirq_comes_first() {
        let a = snap(0, &[(0, 100, 10), (1, 100, 10)], &[5, 5], &[0, 0]);
        let b = snap(5, &[(0, 480, 30), (1, 120, 490)], &[9, 1005], &[0, 80]);
        let h = b.since(&a);
        assert_eq!(h.cpus, 2);
        assert!((h.seconds - 5.0).abs() < 0.1, "{}", h.seconds);
        let top = &h.busiest[0];
        assert_eq!(top.cpu, 1);
        assert!((top.softirq - 480.0 / 500.0).abs() < 1e-9);
        assert_eq!(
            (top.net_rx, top.time_squeeze, top.processed),
            (1000, 80, 8000)
        );
        assert_eq!(h.busiest[1].cpu, 0);
        assert!((h.busiest[1].user - 380.0 / 400.0).abs() < 1e-9);
    }

    #[test]
    fn this_host() {
        let a = CpuSnapshot::take().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = a.take_again().unwrap();
        let h = b.since(&a);
        // The softirq threads are read (where the PID namespace shows kernel threads).
        let visible = !netdoctor_observe::schedstat::ksoftirqd_pids().is_empty();
        assert!(
            !visible
                || h.busiest
                    .iter()
                    .all(|c| c.ksoftirqd_wait.is_some_and(|w| (0.0..=1.0).contains(&w))),
            "{h:?}"
        );
        assert!(h.busiest.len() <= KEEP);
        assert!(h.busiest.iter().all(|c| (0.0..=1.0).contains(&c.softirq)));
    }
}

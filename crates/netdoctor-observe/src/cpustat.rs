//! Per-CPU time from `/proc/stat` (user, system, idle, irq, softirq, steal, in clock ticks) and
//! per-CPU softirq counts from `/proc/softirqs` (how often each kind ran, e.g. `NET_RX`). Both
//! files are the host's, not a namespace's. Hand-parsed like [`crate::softnet`]: one line per
//! CPU (or per kind) of decimal columns, and the `procfs` crate would be a large dependency for
//! two short files.
//!
//! Softirq time in `/proc/stat` counts the work of the softirq handlers wherever they run: on
//! the exit of an interrupt, on `local_bh_enable()` in a task, or in `ksoftirqd`. Without
//! `CONFIG_IRQ_TIME_ACCOUNTING` it is sampled at the tick (the share of ticks that found the CPU
//! in a softirq), so it has the tick's resolution (1 % of a CPU over a second at USER_HZ 100).

use crate::host_error::{HostError, read_file};

/// One CPU's times since boot, in clock ticks (`USER_HZ`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuTicks {
    /// The CPU's number (`cpuN`).
    pub cpu: u32,
    /// user + nice.
    pub user: u64,
    pub system: u64,
    /// idle + iowait.
    pub idle: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// Every tick the CPU counted.
    pub fn total(&self) -> u64 {
        self.user + self.system + self.idle + self.irq + self.softirq + self.steal
    }

    /// The ticks between two readings of the same CPU (`self` the later one).
    pub fn since(&self, before: &CpuTicks) -> CpuTicks {
        CpuTicks {
            cpu: self.cpu,
            user: self.user.saturating_sub(before.user),
            system: self.system.saturating_sub(before.system),
            idle: self.idle.saturating_sub(before.idle),
            irq: self.irq.saturating_sub(before.irq),
            softirq: self.softirq.saturating_sub(before.softirq),
            steal: self.steal.saturating_sub(before.steal),
        }
    }
}

/// Reads every CPU's line of `/proc/stat`.
pub fn read_cpus() -> Result<Vec<CpuTicks>, HostError> {
    Ok(parse_stat(&read_file("CPU times", "/proc/stat", None)?))
}

/// Parses the `cpuN` lines of `/proc/stat` (the `cpu` total line and other lines are skipped;
/// a line with fewer than 7 numbers too).
pub fn parse_stat(text: &str) -> Vec<CpuTicks> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let cpu: u32 = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            (v.len() >= 7).then(|| CpuTicks {
                cpu,
                user: at(0) + at(1),
                system: at(2),
                idle: at(3) + at(4),
                irq: at(5),
                softirq: at(6),
                steal: at(7),
            })
        })
        .collect()
}

/// Reads one kind's per-CPU counts from `/proc/softirqs` (`NET_RX`, `NET_TX`, `TIMER` …),
/// by CPU index.
pub fn read_softirqs(kind: &str) -> Result<Vec<u64>, HostError> {
    let text = read_file("softirq counts", "/proc/softirqs", None)?;
    parse_softirqs(&text, kind).ok_or_else(|| HostError::Unavailable {
        what: "softirq counts",
        reason: format!("/proc/softirqs has no {kind} line"),
    })
}

/// One kind's per-CPU counts from the text of `/proc/softirqs`.
pub fn parse_softirqs(text: &str, kind: &str) -> Option<Vec<u64>> {
    text.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix(kind)?.strip_prefix(':')?;
        Some(
            rest.split_whitespace()
                .map_while(|x| x.parse().ok())
                .collect(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_cpu_lines() {
        let t = "cpu  4296267 251132 620325 1025397 7040 0 121728 6873 0 0\n\
                 cpu0 2146787 116220 303986 530635 2042 0 60789 3379 0 0\n\
                 cpu1 10 5 20 30 4 1 7\n\
                 intr 12345 0 0\n\
                 cpuX 1 2 3 4 5 6 7\n";
        let c = parse_stat(t);
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0],
            CpuTicks {
                cpu: 0,
                user: 2146787 + 116220,
                system: 303986,
                idle: 530635 + 2042,
                irq: 0,
                softirq: 60789,
                steal: 3379
            }
        );
        assert_eq!(c[1].steal, 0, "an old kernel's line without steal");
        assert_eq!(c[1].total(), 15 + 20 + 34 + 1 + 7);
        let later = CpuTicks {
            softirq: 17,
            ..c[1]
        };
        assert_eq!(later.since(&c[1]).softirq, 10);
        assert_eq!(later.since(&c[1]).total(), 10);
    }

    #[test]
    fn one_kind_of_softirq() {
        let t = "                    CPU0       CPU1       \n\
                 \x20         HI:          0          0\n\
                 \x20      NET_TX:      24644      51795\n\
                 \x20      NET_RX:  148002333  130430038\n";
        assert_eq!(
            parse_softirqs(t, "NET_RX"),
            Some(vec![148002333, 130430038])
        );
        assert_eq!(parse_softirqs(t, "BLOCK"), None);
    }

    #[test]
    fn this_machine() {
        let c = read_cpus().unwrap();
        assert!(!c.is_empty());
        assert!(c.iter().all(|c| c.total() > 0));
        let rx = read_softirqs("NET_RX").unwrap();
        assert!(rx.len() >= c.len(), "a column per possible CPU");
    }
}

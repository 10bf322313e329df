//! The agent's own CPU time and resident memory, from /proc (two short reads; `procfs` would
//! bring a whole crate for two numbers). Also used by `bench/watch-cost.sh`'s figures through
//! the exposition and by the watch loop's self-check.

/// CPU time and RSS of one process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcStat {
    /// utime + stime in clock ticks.
    pub cpu_ticks: u64,
    pub rss_bytes: u64,
    pub ticks_per_s: u64,
}

impl ProcStat {
    /// Reads /proc/self/stat and /proc/self/statm; `None` when /proc is not there.
    pub fn read_self() -> Option<ProcStat> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        ProcStat::parse(&stat, &statm, page_size(), ticks_per_second())
    }

    /// Parses the text of /proc/PID/stat and /proc/PID/statm.
    pub fn parse(stat: &str, statm: &str, page: u64, ticks_per_s: u64) -> Option<ProcStat> {
        // The command name (field 2) may hold spaces and parentheses: fields restart after
        // the last ')'. utime and stime are fields 14 and 15, i.e. 12th and 13th after it.
        let rest = &stat[stat.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let utime: u64 = f.get(11)?.parse().ok()?;
        let stime: u64 = f.get(12)?.parse().ok()?;
        let rss_pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        Some(ProcStat {
            cpu_ticks: utime + stime,
            rss_bytes: rss_pages * page,
            ticks_per_s: ticks_per_s.max(1),
        })
    }

    pub fn cpu_seconds(&self) -> f64 {
        self.cpu_ticks as f64 / self.ticks_per_s as f64
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(v).unwrap_or(4096).max(1)
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(v).unwrap_or(100).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_name_with_spaces_and_parens() {
        let stat = "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 100 0";
        let p = ProcStat::parse(stat, "5000 1200 300 1 0 400 0", 4096, 100).unwrap();
        assert_eq!(p.cpu_ticks, 300);
        assert_eq!(p.rss_bytes, 1200 * 4096);
        assert!((p.cpu_seconds() - 3.0).abs() < 1e-9);
        assert!(ProcStat::parse("garbage", "", 4096, 100).is_none());
    }

    #[test]
    fn reads_itself() {
        let p = ProcStat::read_self().expect("/proc/self");
        assert!(p.rss_bytes > 0);
    }
}

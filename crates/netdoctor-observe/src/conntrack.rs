//! The connection tracking table: entries against the table's size, and the per-CPU drop
//! statistics. `nf_conntrack_count` and `/proc/net/stat/nf_conntrack` are per network namespace
//! and read for the calling thread's namespace; `nf_conntrack_max` is global (readable, not
//! writable, from a child namespace). Everything is `Unavailable` when the nf_conntrack module is
//! not loaded — then nothing is tracked and the table cannot fill.

use std::collections::BTreeMap;

use crate::host_error::{HostError, read_file};

const WHAT: &str = "conntrack";
const COUNT: &str = "/proc/sys/net/netfilter/nf_conntrack_count";
const MAX: &str = "/proc/sys/net/netfilter/nf_conntrack_max";
const STAT: &str = "/proc/thread-self/net/stat/nf_conntrack";

/// The table at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConntrackUsage {
    /// Entries in this namespace's table.
    pub count: u64,
    /// The table's size (`nf_conntrack_max`, global).
    pub max: u64,
    /// Per-CPU statistics summed, e.g. `drop` (packets dropped because the table was full),
    /// `early_drop`, `insert_failed`. Empty when the kernel does not provide them.
    pub stats: BTreeMap<String, u64>,
}

impl ConntrackUsage {
    /// `count / max`, 0 when max is 0.
    pub fn fill(&self) -> f64 {
        if self.max == 0 {
            0.0
        } else {
            self.count as f64 / self.max as f64
        }
    }

    /// A summed statistic, 0 when absent.
    pub fn stat(&self, name: &str) -> u64 {
        self.stats.get(name).copied().unwrap_or(0)
    }
}

fn number(path: &str) -> Result<u64, HostError> {
    let text = read_file(WHAT, path, None)?;
    text.trim().parse().map_err(|_| HostError::Parse {
        what: WHAT,
        path: path.to_string(),
        message: format!("not a number: {:?}", text.trim()),
    })
}

/// Reads the table of the calling thread's namespace.
pub fn read() -> Result<ConntrackUsage, HostError> {
    let count = number(COUNT).map_err(|e| match e {
        HostError::Unavailable { .. } => HostError::Unavailable {
            what: WHAT,
            reason: format!(
                "{COUNT} does not exist (nf_conntrack is not loaded: nothing is tracked)"
            ),
        },
        e => e,
    })?;
    let max = number(MAX)?;
    let stats = match read_file(WHAT, STAT, None) {
        Ok(text) => parse_stat(&text)?,
        Err(HostError::Unavailable { .. }) => BTreeMap::new(),
        Err(e) => return Err(e),
    };
    Ok(ConntrackUsage { count, max, stats })
}

/// Sums the per-CPU hex rows of /proc/net/stat/nf_conntrack by column name. The `entries`
/// column is the same table-wide value on every row, so it is taken once.
pub fn parse_stat(text: &str) -> Result<BTreeMap<String, u64>, HostError> {
    let mut lines = text.lines();
    let names: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    let mut out = BTreeMap::new();
    for (i, line) in lines.enumerate() {
        for (name, v) in names.iter().zip(line.split_whitespace()) {
            let v = u64::from_str_radix(v, 16).map_err(|_| HostError::Parse {
                what: WHAT,
                path: STAT.to_string(),
                message: format!("line {}: {v:?} is not hex", i + 2),
            })?;
            let slot = out.entry(name.to_string()).or_insert(0);
            if *name == "entries" {
                *slot = v;
            } else {
                *slot += v;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_cpu_rows() {
        let text = "entries  found drop early_drop\n0000000a  00000001 00000002 00000000\n0000000a  00000001 00000010 00000001\n";
        let s = parse_stat(text).unwrap();
        assert_eq!(s["entries"], 10);
        assert_eq!(s["drop"], 0x12);
        assert_eq!(s["early_drop"], 1);
        assert!(parse_stat("drop\nzz\n").is_err());
    }

    #[test]
    fn fill_is_count_over_max() {
        let u = ConntrackUsage {
            count: 50,
            max: 200,
            ..Default::default()
        };
        assert_eq!(u.fill(), 0.25);
        assert_eq!(u.stat("drop"), 0);
    }

    #[test]
    fn reads_or_says_why_not() {
        match read() {
            Ok(u) => assert!(u.max > 0),
            Err(e) => assert!(e.to_string().starts_with("conntrack"), "{e}"),
        }
    }
}

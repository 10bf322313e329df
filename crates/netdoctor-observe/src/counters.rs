//! Kernel counters before and after a run: /proc/net/netstat (TcpExt, IpExt, MPTcpExt) and
//! /proc/net/snmp (Ip, Icmp, Tcp, Udp, ...), read as `Prefix.Name` → value.
//!
//! Both files are pairs of lines: `TcpExt: Name1 Name2 …` followed by `TcpExt: 1 2 …`. This is
//! hand-parsed (twenty lines) rather than taken from `procfs`, whose typed structs lag behind the
//! kernel's counter list; keeping every name the kernel prints means new counters show up
//! without a code change. Values that are not unsigned counters (`Tcp.MaxConn` is -1) are left out.

use crate::ObserveError;
use crate::error::io_error;
use std::collections::BTreeMap;
use std::path::Path;

/// Kernel counters at one moment, e.g. `"TcpExt.ListenOverflows"` → 3.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct CounterSnapshot {
    pub values: BTreeMap<String, u64>,
}

impl CounterSnapshot {
    /// The value of one counter, e.g. `get("Tcp.RetransSegs")`.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.values.get(name).copied()
    }

    /// Number of counters.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when no counter was read.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// One counter that changed during a run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CounterDelta {
    pub name: String,
    pub before: u64,
    pub after: u64,
}

impl CounterDelta {
    /// `after - before`, negative when a counter went down (gauges such as Tcp.CurrEstab).
    pub fn change(&self) -> i128 {
        i128::from(self.after) - i128::from(self.before)
    }
}

/// Reads /proc/net/netstat and /proc/net/snmp of the caller's network namespace.
pub fn snapshot() -> Result<CounterSnapshot, ObserveError> {
    let read = |p: &str| {
        let path = Path::new(p);
        std::fs::read_to_string(path).map_err(|e| io_error("read", path, &e))
    };
    let netstat = read("/proc/net/netstat")?;
    let snmp = read("/proc/net/snmp")?;
    snapshot_from(&netstat, &snmp)
}

/// Parses the text of /proc/net/netstat and /proc/net/snmp.
pub fn snapshot_from(netstat: &str, snmp: &str) -> Result<CounterSnapshot, ObserveError> {
    let mut snap = CounterSnapshot::default();
    parse_into(&mut snap, "/proc/net/netstat", netstat)?;
    parse_into(&mut snap, "/proc/net/snmp", snmp)?;
    Ok(snap)
}

fn parse_into(snap: &mut CounterSnapshot, file: &str, text: &str) -> Result<(), ObserveError> {
    let err = |message: String| ObserveError::Counters {
        file: file.to_string(),
        message,
    };
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).enumerate();
    while let Some((i, names)) = lines.next() {
        let Some((prefix, names)) = names.split_once(':') else {
            return Err(err(format!("line {}: no 'Prefix:'", i + 1)));
        };
        let Some((j, values)) = lines.next() else {
            return Err(err(format!("'{prefix}' names have no value line")));
        };
        let Some((vprefix, values)) = values.split_once(':') else {
            return Err(err(format!("line {}: no 'Prefix:'", j + 1)));
        };
        if vprefix != prefix {
            return Err(err(format!(
                "line {}: expected values for '{prefix}', found '{vprefix}'",
                j + 1
            )));
        }
        let names: Vec<&str> = names.split_whitespace().collect();
        let values: Vec<&str> = values.split_whitespace().collect();
        if names.len() != values.len() {
            return Err(err(format!(
                "'{prefix}': {} names but {} values",
                names.len(),
                values.len()
            )));
        }
        for (name, value) in names.iter().zip(values) {
            if let Ok(v) = value.parse::<u64>() {
                snap.values.insert(format!("{prefix}.{name}"), v);
            }
        }
    }
    Ok(())
}

/// The counters whose value changed between two snapshots, by name. A counter present in only
/// one snapshot counts from 0.
pub fn delta(before: &CounterSnapshot, after: &CounterSnapshot) -> Vec<CounterDelta> {
    let mut out = Vec::new();
    for (name, &a) in &after.values {
        let b = before.get(name).unwrap_or(0);
        if a != b {
            out.push(CounterDelta {
                name: name.clone(),
                before: b,
                after: a,
            });
        }
    }
    for (name, &b) in &before.values {
        if !after.values.contains_key(name) && b != 0 {
            out.push(CounterDelta {
                name: name.clone(),
                before: b,
                after: 0,
            });
        }
    }
    out.sort_by(|x, y| x.name.cmp(&y.name));
    out
}

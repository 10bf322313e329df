//! Kernel counters before and after a run: /proc/net/netstat (TcpExt, IpExt, MPTcpExt),
//! /proc/net/snmp (Ip, Icmp, Tcp, Udp, ...) and /proc/net/snmp6 (Ip6, Icmp6, Udp6, UdpLite6),
//! read as `Prefix.Name` → value (`Ip6InReceives` becomes `Ip6.InReceives`).
//!
//! The files are read through `/proc/thread-self/net/`, not `/proc/net/`: `/proc/net` is a link to
//! `/proc/self/net`, which follows the process's *main* thread, so a run on a thread that joined
//! another network namespace with `setns(2)` (`--netns`) would otherwise read the root
//! namespace's counters. [`meaning`] gives one line of meaning for the counters that matter.
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
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// One counter that changed during a run (defined in core: observations carry it).
pub use netdoctor_core::observation::CounterDelta;

pub use crate::counter_meaning::meaning;

/// Reads netstat, snmp and snmp6 of the network namespace of the calling thread.
pub fn snapshot() -> Result<CounterSnapshot, ObserveError> {
    let read = |p: &str| {
        let path = Path::new(p);
        std::fs::read_to_string(path).map_err(|e| io_error("read", path, &e))
    };
    let netstat = read("/proc/thread-self/net/netstat")?;
    let snmp = read("/proc/thread-self/net/snmp")?;
    let mut snap = snapshot_from(&netstat, &snmp)?;
    // snmp6 is absent when IPv6 is disabled (ipv6.disable=1): then there is nothing to add.
    match std::fs::read_to_string("/proc/thread-self/net/snmp6") {
        Ok(snmp6) => parse_snmp6_into(&mut snap, &snmp6)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(io_error(
                "read",
                Path::new("/proc/thread-self/net/snmp6"),
                &e,
            ));
        }
    }
    Ok(snap)
}

/// Adds the `Name value` lines of /proc/net/snmp6 as `Ip6.InReceives`, `Icmp6.InMsgs`, ….
pub fn parse_snmp6_into(snap: &mut CounterSnapshot, text: &str) -> Result<(), ObserveError> {
    for (i, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let (Some(name), Some(value), None) = (fields.next(), fields.next(), fields.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(ObserveError::Counters {
                file: "/proc/net/snmp6".to_string(),
                message: format!("line {}: expected 'Name value'", i + 1),
            });
        };
        let key = match name.find('6') {
            Some(at) if at + 1 < name.len() => format!("{}.{}", &name[..=at], &name[at + 1..]),
            _ => format!("Snmp6.{name}"),
        };
        if let Ok(v) = value.parse::<u64>() {
            snap.values.insert(key, v);
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snmp6_names_get_their_prefix() {
        let mut snap = CounterSnapshot::default();
        parse_snmp6_into(
            &mut snap,
            "Ip6InReceives                   \t12\nIcmp6OutType133  3\nUdpLite6InErrors 0\nIp6InOctets 99\n",
        )
        .unwrap();
        assert_eq!(snap.get("Ip6.InReceives"), Some(12));
        assert_eq!(snap.get("Icmp6.OutType133"), Some(3));
        assert_eq!(snap.get("UdpLite6.InErrors"), Some(0));
        assert!(parse_snmp6_into(&mut snap, "Ip6InReceives 1 2\n").is_err());
    }

    #[test]
    fn snapshot_reads_all_three_files() {
        let snap = snapshot().unwrap();
        assert!(snap.get("TcpExt.ListenOverflows").is_some());
        assert!(snap.get("Tcp.RetransSegs").is_some());
        if Path::new("/proc/thread-self/net/snmp6").exists() {
            assert!(snap.get("Ip6.InReceives").is_some());
        }
    }

    #[test]
    fn delta_lists_changes_only() {
        let mut a = CounterSnapshot::default();
        a.values.insert("Tcp.RetransSegs".into(), 5);
        a.values.insert("Tcp.InSegs".into(), 1);
        let mut b = a.clone();
        b.values.insert("Tcp.RetransSegs".into(), 9);
        let d = delta(&a, &b);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].change(), 4);
    }
}

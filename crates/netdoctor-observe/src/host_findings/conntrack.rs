//! `conntrack_table_full`: the connection tracking table reached nf_conntrack_max, so new flows
//! were dropped ("nf_conntrack: table full, dropping packet" in the kernel log, the per-CPU
//! `drop` statistic growing, or the count at the max).
//!
//! Scoped to the run: the log line names no network namespace and the kernel log is the
//! machine's, so a "table full" line is the run's only when the run's namespace's own table
//! shows it (its drop statistics grew, or it is nearly full). A line from another namespace
//! (another container on a shared node) with a table here that went from 0 to 0 is no
//! finding.

use netdoctor_core::finding::{Evidence, Finding, FindingId, Severity, Side};

use super::{HostObservations, log_evidence};
use crate::kmsg::KmsgKind;

/// A table at least this full is reported even without drops.
const NEAR_FULL: f64 = 0.9;

/// The finding, when the conntrack table was full or nearly so during the run.
pub fn conntrack_table_full(obs: &HostObservations) -> Option<Finding> {
    let logged = obs.kmsg_of(KmsgKind::ConntrackTableFull).count();
    let after = obs.conntrack_after.as_ref();
    let before = obs.conntrack_before.as_ref();
    let drops = match (before, after) {
        (Some(b), Some(a)) => a.stat("drop").saturating_sub(b.stat("drop")),
        _ => 0,
    };
    let fill = after.map(|a| a.fill()).unwrap_or(0.0);
    // Statistics that count a full table in this namespace.
    let table_trouble = match (before, after) {
        (Some(b), Some(a)) => ["drop", "early_drop", "insert_failed"]
            .iter()
            .any(|k| a.stat(k) > b.stat(k)),
        _ => false,
    };
    let logged = if table_trouble || fill >= NEAR_FULL {
        logged
    } else {
        0
    };
    if logged == 0 && drops == 0 && fill < NEAR_FULL {
        return None;
    }
    let mut evidence: Vec<Evidence> = Vec::new();
    if let Some(a) = after {
        evidence.push(Evidence::Counter {
            name: "nf_conntrack_count".to_string(),
            before: before.map(|b| b.count).unwrap_or(a.count),
            after: a.count,
            note: format!(
                "entries in the table against nf_conntrack_max {} ({:.0}% full)",
                a.max,
                fill * 100.0
            ),
        });
        if drops > 0 {
            evidence.push(Evidence::Counter {
                name: "nf_conntrack.drop".to_string(),
                before: before.map(|b| b.stat("drop")).unwrap_or(0),
                after: a.stat("drop"),
                note: format!("+{drops}: packets dropped because no entry could be added"),
            });
        }
    }
    if logged > 0 {
        evidence.extend(log_evidence(
            obs.kmsg_of(KmsgKind::ConntrackTableFull),
            3,
            "the kernel dropped a packet of a new flow: no room in the conntrack table",
        ));
    }
    let dropping = logged > 0 || drops > 0;
    let severity = if dropping {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let summary = if dropping {
        format!(
            "conntrack table full: new connections dropped ({} log lines, {drops} drops counted)",
            logged
        )
    } else {
        format!("conntrack table {:.0}% full", fill * 100.0)
    };
    let mut f = Finding::new(FindingId::ConntrackTableFull, severity, Side::Host, summary);
    f.confidence = if dropping { 0.95 } else { 0.6 };
    f.explanation =
        "Every flow through netfilter (NAT, stateful firewall rules, Docker/Kubernetes \
                     networking) needs an entry in the connection tracking table. When it holds \
                     nf_conntrack_max entries, the first packet of each new flow is dropped: \
                     clients see SYN retransmissions (1 s, 3 s) or timeouts while established \
                     connections keep working. Short connections fill it fastest: each stays \
                     for its TIME_WAIT timeout (120 s by default) after it closes."
            .to_string();
    f.fix = "Raise net.netfilter.nf_conntrack_max (and the hash size, \
             /sys/module/nf_conntrack/parameters/hashsize, to max/4), shorten \
             nf_conntrack_tcp_timeout_time_wait / _established if entries linger, use keep-alive \
             to open fewer connections, or exempt traffic that needs no state \
             (`iptables -t raw -A PREROUTING -p tcp --dport 80 -j NOTRACK`)."
        .to_string();
    f.evidence = evidence;
    Some(f)
}

#[cfg(test)]
mod tests {
    //! nf_conntrack_max is global: a child namespace can read it but not set it, so a full table
    //! cannot be produced in a test namespace without changing the host. These tests use
    //! recorded kernel-log lines and counter values instead.
    use super::super::test_support::line;
    use super::*;
    use crate::conntrack::ConntrackUsage;

    fn usage(count: u64, max: u64, drop: u64) -> ConntrackUsage {
        ConntrackUsage {
            count,
            max,
            stats: [("drop".to_string(), drop)].into_iter().collect(),
        }
    }

    #[test]
    fn recorded_table_full_lines_and_drops_are_critical() {
        let obs = HostObservations {
            kmsg: vec![
                line(
                    KmsgKind::ConntrackTableFull,
                    "nf_conntrack: nf_conntrack: table full, dropping packet",
                ),
                line(
                    KmsgKind::ConntrackTableFull,
                    "nf_conntrack: nf_conntrack: table full, dropping packet",
                ),
            ],
            conntrack_before: Some(usage(65_000, 65_536, 10)),
            conntrack_after: Some(usage(65_536, 65_536, 2_410)),
            ..Default::default()
        };
        let f = conntrack_table_full(&obs).unwrap();
        assert_eq!(f.severity, Severity::Critical);
        assert!(
            f.summary.contains("2 log lines") && f.summary.contains("2400 drops"),
            "{}",
            f.summary
        );
        let logs = f
            .evidence
            .iter()
            .filter(|e| matches!(e, Evidence::Log { .. }))
            .count();
        assert_eq!(logs, 2);
        assert!(f.evidence.iter().any(|e| matches!(e, Evidence::Counter { name, after: 2_410, .. } if name == "nf_conntrack.drop")));
    }

    #[test]
    fn a_table_full_line_from_another_namespace_is_not_this_runs() {
        // The run's namespace: a table that went from 0 to 0, no drops. The line is another
        // namespace's (the log is the machine's).
        let line_from_elsewhere = line(
            KmsgKind::ConntrackTableFull,
            "nf_conntrack: nf_conntrack: table full, dropping packet",
        );
        let obs = HostObservations {
            kmsg: vec![line_from_elsewhere.clone()],
            conntrack_before: Some(usage(0, 262_144, 0)),
            conntrack_after: Some(usage(0, 262_144, 0)),
            ..Default::default()
        };
        assert_eq!(conntrack_table_full(&obs), None);
        // Without conntrack readings at all (module not loaded here) neither.
        let obs = HostObservations {
            kmsg: vec![line_from_elsewhere.clone()],
            ..Default::default()
        };
        assert_eq!(conntrack_table_full(&obs), None);
        // The same line with this namespace's insertions failing is the run's.
        let mut failing = usage(65_536, 65_536, 0);
        failing.stats.insert("insert_failed".into(), 40);
        let obs = HostObservations {
            kmsg: vec![line_from_elsewhere],
            conntrack_before: Some(usage(65_000, 65_536, 0)),
            conntrack_after: Some(failing),
            ..Default::default()
        };
        let f = conntrack_table_full(&obs).unwrap();
        assert_eq!(f.severity, Severity::Critical);
    }

    #[test]
    fn nearly_full_without_drops_is_a_warning() {
        let obs = HostObservations {
            conntrack_after: Some(usage(950, 1000, 0)),
            ..Default::default()
        };
        let f = conntrack_table_full(&obs).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.summary.contains("95% full"));
    }

    #[test]
    fn a_roomy_table_is_nothing() {
        let obs = HostObservations {
            conntrack_before: Some(usage(10, 262_144, 0)),
            conntrack_after: Some(usage(5_000, 262_144, 0)),
            ..Default::default()
        };
        assert_eq!(conntrack_table_full(&obs), None);
    }
}

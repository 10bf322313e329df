//! The sysctls that matter for what a run found, and only those: not a checklist. Each finding
//! id brings its own sysctls (somaxconn against the listener's backlog for an accept-queue
//! overflow; tcp_max_syn_backlog and syncookies for SYN drops; ip_local_port_range and
//! tcp_tw_reuse when ports ran short; nf_conntrack_max against the count).

use netdoctor_core::finding::{Finding, FindingId};

use super::HostObservations;

/// One sysctl worth a look, its value and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SysctlAdvice {
    pub name: String,
    pub value: String,
    /// Which finding it concerns.
    pub finding: FindingId,
    pub note: String,
}

/// Advice for the sysctls that fit `findings`, from the values in `obs`.
pub fn sysctl_audit(obs: &HostObservations, findings: &[Finding]) -> Vec<SysctlAdvice> {
    let mut out = Vec::new();
    let has = |id| findings.iter().any(|f| f.id == id);
    let mut push = |name: &str, value: String, finding, note: String| {
        out.push(SysctlAdvice {
            name: name.to_string(),
            value,
            finding,
            note,
        })
    };
    let srv = obs.server_sysctls.clone().unwrap_or_default();
    let cli = obs.client_sysctls.clone().unwrap_or_default();
    if has(FindingId::ListenQueueOverflow) {
        let backlog = obs
            .listener
            .as_ref()
            .and_then(|s| s.max_queue())
            .map(|q| q.1);
        if let Some(max) = srv.somaxconn {
            let note = match backlog {
                Some(b) if b >= max => format!(
                    "the listener's backlog {b} is capped by somaxconn: raise somaxconn with the application's backlog"
                ),
                Some(b) => format!(
                    "the listener's backlog is {b}, below somaxconn {max}: the application's listen() backlog is the limit, raise it there"
                ),
                None => "caps every listen() backlog".to_string(),
            };
            push(
                "net.core.somaxconn",
                max.to_string(),
                FindingId::ListenQueueOverflow,
                note,
            );
        }
        if let Some(v) = srv.tcp_abort_on_overflow {
            let note = if v == 0 {
                "0: overflowing clients wait for SYN retransmission (1 s, 3 s) instead of a reset"
                    .to_string()
            } else {
                format!("{v}: overflowing clients get a reset (counted in EmbryonicRsts)")
            };
            push(
                "net.ipv4.tcp_abort_on_overflow",
                v.to_string(),
                FindingId::ListenQueueOverflow,
                note,
            );
        }
    }
    let syn_drops = obs.delta("TcpExt.TCPReqQFullDrop") > 0;
    if has(FindingId::SynFlood) {
        if let Some(v) = srv.tcp_syncookies {
            let note = if v == 0 {
                "0: SYN cookies are off, so a full SYN queue drops SYNs: set 1".to_string()
            } else {
                format!("{v}: SYN cookies answer SYNs when the SYN queue is full")
            };
            push(
                "net.ipv4.tcp_syncookies",
                v.to_string(),
                FindingId::SynFlood,
                note,
            );
        }
        if let Some(v) = srv.tcp_max_syn_backlog {
            let note = if syn_drops {
                format!(
                    "{v}: SYNs were dropped from a full SYN queue; the queue is also capped by the listen backlog"
                )
            } else {
                format!("{v}: the SYN queue's size (also capped by the listen backlog)")
            };
            push(
                "net.ipv4.tcp_max_syn_backlog",
                v.to_string(),
                FindingId::SynFlood,
                note,
            );
        }
    }
    if has(FindingId::EphemeralPortExhaustion) {
        if let (Some((lo, hi)), Some(n)) = (cli.ip_local_port_range, cli.local_ports()) {
            push(
                "net.ipv4.ip_local_port_range",
                format!("{lo} {hi}"),
                FindingId::EphemeralPortExhaustion,
                format!("{n} local ports per destination; widen it (e.g. 1024 65535)"),
            );
        }
        if let Some(v) = cli.tcp_tw_reuse {
            let note = match v {
                1 => "1: TIME_WAIT ports are already reused; fewer, longer connections are the fix".to_string(),
                2 => "2: TIME_WAIT ports are reused only for loopback; 1 reuses them toward any server".to_string(),
                _ => "0: TIME_WAIT ports are never reused for new connections; 1 allows it".to_string(),
            };
            push(
                "net.ipv4.tcp_tw_reuse",
                v.to_string(),
                FindingId::EphemeralPortExhaustion,
                note,
            );
        }
    }
    if has(FindingId::ConntrackTableFull)
        && let Some(max) = srv.nf_conntrack_max
    {
        let count = obs.conntrack_after.as_ref().map(|c| c.count);
        push(
            "net.netfilter.nf_conntrack_max",
            max.to_string(),
            FindingId::ConntrackTableFull,
            match count {
                Some(c) => format!(
                    "{c} entries in use of {max}: raise it (global: set it in the host's namespace)"
                ),
                None => "the table's size: raise it (global: set it in the host's namespace)"
                    .to_string(),
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::delta;
    use super::*;
    use crate::sockdiag::{ListenerSample, ListenerSeries};
    use crate::sysctl::Sysctls;
    use netdoctor_core::finding::{Severity, Side};

    fn sysctls() -> Sysctls {
        Sysctls {
            somaxconn: Some(4096),
            tcp_max_syn_backlog: Some(128),
            tcp_syncookies: Some(1),
            tcp_abort_on_overflow: Some(0),
            ip_local_port_range: Some((40000, 40009)),
            tcp_tw_reuse: Some(2),
            nf_conntrack_max: Some(65536),
            ..Default::default()
        }
    }

    fn finding(id: FindingId) -> Finding {
        Finding::new(id, Severity::Warning, Side::Host, "x")
    }

    fn obs() -> HostObservations {
        HostObservations {
            server_sysctls: Some(sysctls()),
            client_sysctls: Some(sysctls()),
            listener: Some(ListenerSeries {
                port: 80,
                samples: vec![ListenerSample {
                    at_ms: 0,
                    accept_queue: 2,
                    backlog: 1,
                    syn_recv: 0,
                }],
                ..Default::default()
            }),
            counters: vec![delta("TcpExt.TCPReqQFullDrop", 0, 5)],
            ..Default::default()
        }
    }

    #[test]
    fn nothing_found_means_nothing_to_say() {
        assert!(sysctl_audit(&obs(), &[]).is_empty());
    }

    #[test]
    fn overflow_mentions_only_the_accept_queue_sysctls() {
        let advice = sysctl_audit(&obs(), &[finding(FindingId::ListenQueueOverflow)]);
        let names: Vec<&str> = advice.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            ["net.core.somaxconn", "net.ipv4.tcp_abort_on_overflow"]
        );
        assert!(
            advice[0]
                .note
                .contains("backlog is 1, below somaxconn 4096"),
            "{}",
            advice[0].note
        );
    }

    #[test]
    fn each_finding_brings_its_own() {
        let advice = sysctl_audit(
            &obs(),
            &[
                finding(FindingId::SynFlood),
                finding(FindingId::EphemeralPortExhaustion),
                finding(FindingId::ConntrackTableFull),
            ],
        );
        let names: Vec<&str> = advice.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "net.ipv4.tcp_syncookies",
                "net.ipv4.tcp_max_syn_backlog",
                "net.ipv4.ip_local_port_range",
                "net.ipv4.tcp_tw_reuse",
                "net.netfilter.nf_conntrack_max"
            ]
        );
        assert!(advice[1].note.contains("SYNs were dropped"));
        assert!(advice[2].note.starts_with("10 local ports"));
    }
}

//! Host findings: pure functions from what the host collectors saw during a run
//! ([`HostObservations`]) to findings of the catalog, each with `counter` / `log` / `probe`
//! evidence and a fix. No I/O here: tests feed recorded values, the live path feeds the
//! collectors' structs. One file per finding:
//!
//! - [`listen_queue::listen_queue_overflow`]: the accept queue overflowed;
//! - [`syn_flood::syn_flood`]: half-open connections / SYN cookies beyond a burst;
//! - [`conntrack::conntrack_table_full`]: nf_conntrack at its max or "table full" logged;
//! - [`ports::ephemeral_port_exhaustion`]: connect() ran out of local ports;
//! - [`netdev::interface_errors`]: NIC errors/drops grew;
//! - [`sysctl_audit::sysctl_audit`]: the sysctls that matter for the findings above, only those.
//!
//! [`host_findings`] runs them all. Tying `syn_retransmit` (and the rest) to a listen-queue
//! overflow as its root cause is `netdoctor_core::relate`, applied to the run's final findings;
//! `listen_queue_overflow` also lists the TCPSynRetrans delta among its evidence.

pub mod conntrack;
pub mod listen_queue;
pub mod netdev;
pub mod ports;
pub mod syn_flood;
pub mod sysctl_audit;

use netdoctor_core::finding::{Evidence, Finding};

use crate::conntrack::ConntrackUsage;
use crate::counters::{CounterDelta, meaning};
use crate::kmsg::{KmsgKind, KmsgLine};
use crate::netdev::NetDevDelta;
use crate::sockdiag::{ListenerSeries, StateCounts};
use crate::sysctl::Sysctls;

pub use conntrack::conntrack_table_full;
pub use listen_queue::listen_queue_overflow;
pub use netdev::interface_errors;
pub use ports::ephemeral_port_exhaustion;
pub use syn_flood::syn_flood;
pub use sysctl_audit::{SysctlAdvice, sysctl_audit};

/// How the run's own connect() calls ended (from the load generator or a probe).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConnectOutcome {
    pub attempts: u64,
    /// connect() failures with EADDRNOTAVAIL ("Cannot assign requested address").
    pub addr_not_avail: u64,
    /// The server connected to, when there was one.
    pub remote: Option<std::net::SocketAddr>,
}

/// Kernel drops of one reason at one location during the run (from the eBPF observer on
/// `skb:kfree_skb`, netdoctor-bpf's `DropGroup`; kept as a plain struct here so this crate does
/// not depend on aya).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelDrop {
    /// The kernel's drop reason without its prefix, e.g. `"TCP_LISTEN_OVERFLOW"`.
    pub reason: String,
    /// e.g. `"tcp_conn_request+0x5d2"`.
    pub location: String,
    pub count: u64,
}

/// Retransmissions of one connection during the run (eBPF, `tcp:tcp_retransmit_skb`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelRetransmit {
    pub local: String,
    pub remote: String,
    pub count: u64,
}

/// TCP state transitions during the run (eBPF, `sock:inet_sock_set_state`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelStateChange {
    pub from: String,
    pub to: String,
    pub count: u64,
}

/// What the eBPF observer counted in the kernel during one run, busiest first, in one network
/// namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelEvents {
    /// The network namespace counted (`net:[…]`).
    pub netns: String,
    /// That namespace is the server's (its process runs on this host), so a drop in a
    /// queueing discipline there is on the server's host.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub server_netns: bool,
    pub drops: Vec<KernelDrop>,
    /// Retransmitted segments in all, and on how many connections.
    #[serde(default)]
    pub retransmits_total: u64,
    #[serde(default)]
    pub retransmit_connections: u64,
    /// Of those, the ones on the target's connections (the namespace holds other services).
    #[serde(default)]
    pub target_retransmits: u64,
    #[serde(default)]
    pub target_retransmit_connections: u64,
    /// The connections with the most retransmits (at most [`KernelEvents::MAX_CONNECTIONS`]).
    pub retransmits: Vec<KernelRetransmit>,
    pub state_changes: Vec<KernelStateChange>,
    /// Programs that did not run, each with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

impl KernelEvents {
    /// Connections listed by name in [`KernelEvents::retransmits`].
    pub const MAX_CONNECTIONS: usize = 20;

    /// One line: the drop reasons, the retransmits, the busiest state changes.
    pub fn summary_line(&self) -> String {
        let mut parts = Vec::new();
        if self.drops.is_empty() {
            parts.push("no kernel drops".to_string());
        } else {
            let d: Vec<String> = self
                .drops
                .iter()
                .take(3)
                .map(|d| format!("{} ×{} at {}", d.reason, d.count, d.location))
                .collect();
            parts.push(format!("drops {}", d.join(", ")));
        }
        let mut retrans = format!(
            "{} retransmits on {} connections",
            self.retransmits_total, self.retransmit_connections
        );
        // Name the target's share when the namespace's count holds other connections.
        if self.retransmit_connections > self.target_retransmit_connections {
            retrans.push_str(" in the namespace");
            retrans.push_str(&match self.target_retransmits {
                0 => ", none on the target's".to_string(),
                n => format!(
                    ", {n} of them on {} of the target's",
                    self.target_retransmit_connections
                ),
            });
        }
        parts.push(retrans);
        if !self.state_changes.is_empty() {
            let s: Vec<String> = self
                .state_changes
                .iter()
                .take(3)
                .map(|c| format!("{}→{} {}", c.from, c.to, c.count))
                .collect();
            parts.push(format!("state changes {}", s.join(", ")));
        }
        parts.join("; ")
    }
}

/// Everything the host collectors saw during one run, in the run's network namespace(s).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostObservations {
    /// Counter deltas of the namespace the server runs in (netstat, snmp, snmp6).
    pub counters: Vec<CounterDelta>,
    /// The target's listener, sampled over the run.
    pub listener: Option<ListenerSeries>,
    /// Socket states at the end of the run, in the server's namespace.
    pub server_sockets: Option<StateCounts>,
    /// Socket states at the end of the run, in the client's namespace (where connect() ran).
    pub client_sockets: Option<StateCounts>,
    /// Matching kernel log lines during and just before the run.
    pub kmsg: Vec<KmsgLine>,
    pub conntrack_before: Option<ConntrackUsage>,
    pub conntrack_after: Option<ConntrackUsage>,
    pub netdev: Vec<NetDevDelta>,
    /// Sysctls of the server's namespace.
    pub server_sysctls: Option<Sysctls>,
    /// Sysctls of the client's namespace (ip_local_port_range, tcp_tw_reuse matter there).
    pub client_sysctls: Option<Sysctls>,
    pub connects: Option<ConnectOutcome>,
    /// Kernel drops by reason in the server's namespace, when eBPF could run.
    pub kernel_drops: Vec<KernelDrop>,
}

impl HostObservations {
    /// The delta of one counter, 0 when it did not move.
    pub fn delta(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.after.saturating_sub(d.before))
            .unwrap_or(0)
    }

    /// Counter evidence for `name` when it moved, with its meaning (and `extra`) as the note.
    pub(crate) fn counter_evidence(&self, name: &str, extra: &str) -> Option<Evidence> {
        let d = self.counters.iter().find(|d| d.name == name)?;
        if d.after <= d.before {
            return None;
        }
        let mut note = format!("+{}", d.after - d.before);
        if let Some(m) = meaning(name) {
            note.push_str(": ");
            note.push_str(m);
        }
        if !extra.is_empty() {
            note.push_str("; ");
            note.push_str(extra);
        }
        Some(Evidence::Counter {
            name: name.to_string(),
            before: d.before,
            after: d.after,
            note,
        })
    }

    /// Drops of one kernel drop reason, all locations together.
    pub fn drops_of(&self, reason: &str) -> u64 {
        self.kernel_drops
            .iter()
            .filter(|d| d.reason == reason)
            .map(|d| d.count)
            .sum()
    }

    /// Evidence for the drops of one reason (one entry per location, busiest first, at most 3).
    pub(crate) fn drop_evidence(&self, reason: &str, note: &str) -> Vec<Evidence> {
        let mut drops: Vec<&KernelDrop> = self
            .kernel_drops
            .iter()
            .filter(|d| d.reason == reason)
            .collect();
        drops.sort_by_key(|d| std::cmp::Reverse(d.count));
        drops
            .into_iter()
            .take(3)
            .map(|d| Evidence::Counter {
                name: format!("kfree_skb:{}", d.reason),
                before: 0,
                after: d.count,
                note: format!(
                    "+{} packets dropped at {} (eBPF): {note}",
                    d.count, d.location
                ),
            })
            .collect()
    }

    /// Kernel log lines of one kind.
    pub fn kmsg_of(&self, kind: KmsgKind) -> impl Iterator<Item = &KmsgLine> {
        self.kmsg.iter().filter(move |l| l.kind == kind)
    }
}

/// Up to `max` log lines as evidence; the note says how many there were in all.
pub(crate) fn log_evidence<'a>(
    lines: impl Iterator<Item = &'a KmsgLine>,
    max: usize,
    note: &str,
) -> Vec<Evidence> {
    let lines: Vec<&KmsgLine> = lines.collect();
    let total = lines.len();
    lines
        .into_iter()
        .take(max)
        .map(|l| Evidence::Log {
            line: format!("[{:.6}] {}", l.at_us as f64 / 1e6, l.text),
            note: if total > max {
                format!("{note} ({total} such lines, first {max} shown)")
            } else {
                note.to_string()
            },
        })
        .collect()
}

/// Every host finding the observations support.
pub fn host_findings(obs: &HostObservations) -> Vec<Finding> {
    [
        listen_queue_overflow(obs),
        syn_flood(obs),
        conntrack_table_full(obs),
        ephemeral_port_exhaustion(obs),
        interface_errors(obs),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub fn delta(name: &str, before: u64, after: u64) -> CounterDelta {
        CounterDelta {
            name: name.to_string(),
            before,
            after,
        }
    }

    pub fn line(kind: KmsgKind, text: &str) -> KmsgLine {
        KmsgLine {
            at_us: 12_345_678,
            kind,
            port: None,
            text: text.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_host_has_no_findings() {
        assert!(host_findings(&HostObservations::default()).is_empty());
    }

    #[test]
    fn counter_evidence_carries_meaning() {
        let obs = HostObservations {
            counters: vec![test_support::delta("TcpExt.ListenOverflows", 3, 10)],
            ..Default::default()
        };
        let Some(Evidence::Counter { note, .. }) =
            obs.counter_evidence("TcpExt.ListenOverflows", "")
        else {
            panic!("no evidence");
        };
        assert!(
            note.starts_with("+7: ") && note.contains("accept queue"),
            "{note}"
        );
        assert_eq!(obs.counter_evidence("TcpExt.ListenDrops", ""), None);
    }
}

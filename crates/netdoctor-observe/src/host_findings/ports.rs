//! `ephemeral_port_exhaustion`: connect() ran out of local ports. Linux picks the local port of
//! an outgoing connection from net.ipv4.ip_local_port_range and may reuse a port for another
//! destination, so the limit is per destination address and port: TIME_WAIT sockets to one
//! server hold ports for 60 s after each closed connection. Evidence: connect() failing with
//! EADDRNOTAVAIL, or TIME_WAIT toward one destination near the size of the range. TIME_WAIT on
//! the *server* side (one per client port) is normal churn and never counts.

use netdoctor_core::finding::{Evidence, Finding, FindingId, Severity, Side};

use super::HostObservations;

/// TIME_WAIT toward one destination at this fraction of the range is a warning.
const NEAR_RANGE: f64 = 0.8;

/// The finding, when local ports ran out (or nearly) during the run.
pub fn ephemeral_port_exhaustion(obs: &HostObservations) -> Option<Finding> {
    let failed = obs.connects.as_ref().map(|c| c.addr_not_avail).unwrap_or(0);
    let attempts = obs.connects.as_ref().map(|c| c.attempts).unwrap_or(0);
    let range = obs
        .client_sysctls
        .as_ref()
        .and_then(|s| s.ip_local_port_range);
    let ports = obs.client_sysctls.as_ref().and_then(|s| s.local_ports());
    let busiest = obs
        .client_sockets
        .as_ref()
        .and_then(|s| s.time_wait_by_remote.first().copied());
    let near = match (busiest, ports) {
        (Some((_, tw)), Some(p)) => f64::from(tw) >= NEAR_RANGE * f64::from(p),
        _ => false,
    };
    if failed == 0 && !near {
        return None;
    }
    let range_text = match (range, ports) {
        (Some((lo, hi)), Some(p)) => format!("ip_local_port_range {lo}-{hi} ({p} ports)"),
        _ => "ip_local_port_range unknown".to_string(),
    };
    let mut evidence = Vec::new();
    if failed > 0 {
        evidence.push(Evidence::Probe {
            probe: "connect".to_string(),
            note: format!(
                "{failed} of {attempts} connect() calls failed with EADDRNOTAVAIL (Cannot assign requested address)"
            ),
        });
    }
    if let Some((remote, tw)) = busiest {
        evidence.push(Evidence::Probe {
            probe: "sock_diag TIME_WAIT".to_string(),
            note: format!("{tw} sockets in TIME_WAIT toward {remote}; {range_text}"),
        });
    }
    let severity = if failed > 0 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let summary = if failed > 0 {
        format!(
            "local ports exhausted: {failed} connect() calls failed with EADDRNOTAVAIL ({range_text})"
        )
    } else {
        format!("local ports nearly exhausted: TIME_WAIT toward one server fills the {range_text}")
    };
    let mut f = Finding::new(
        FindingId::EphemeralPortExhaustion,
        severity,
        Side::Client,
        summary,
    );
    f.confidence = if failed > 0 { 0.95 } else { 0.75 };
    if attempts > 0 {
        f.impact.affected_fraction = Some((failed as f64 / attempts as f64).min(1.0));
    }
    f.explanation = "Each outgoing connection to the same server address and port needs its own \
                     local port. A connection closed by this side stays in TIME_WAIT for 60 s and \
                     keeps its port, so opening and closing connections faster than the range \
                     divided by 60 s uses the range up: connect() then searches longer and finally \
                     fails with EADDRNOTAVAIL."
        .to_string();
    f.fix = "Reuse connections (HTTP keep-alive, a connection pool) instead of one per request; \
             widen net.ipv4.ip_local_port_range on the client (e.g. 1024 65535); set \
             net.ipv4.tcp_tw_reuse=1 on the client so TIME_WAIT ports are reused for new outgoing \
             connections; or spread over more server addresses or ports."
        .to_string();
    f.evidence = evidence;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_findings::ConnectOutcome;
    use crate::sockdiag::StateCounts;
    use crate::sysctl::Sysctls;

    fn obs(failed: u64, tw_to_server: u32, server_tw_spread: u32) -> HostObservations {
        HostObservations {
            connects: Some(ConnectOutcome {
                attempts: 1000,
                addr_not_avail: failed,
                remote: None,
            }),
            client_sysctls: Some(Sysctls {
                ip_local_port_range: Some((40000, 40009)),
                ..Default::default()
            }),
            client_sockets: Some(StateCounts {
                time_wait: tw_to_server,
                time_wait_by_remote: if tw_to_server > 0 {
                    vec![("10.0.0.1:80".parse().unwrap(), tw_to_server)]
                } else {
                    vec![]
                },
                ..Default::default()
            }),
            // The server side's TIME_WAIT (one per client port) must never count.
            server_sockets: Some(StateCounts {
                time_wait: server_tw_spread,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn eaddrnotavail_is_critical_and_names_the_range() {
        let f = ephemeral_port_exhaustion(&obs(300, 10, 0)).unwrap();
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.side, Side::Client);
        assert!(
            f.summary.contains("300") && f.summary.contains("40000-40009 (10 ports)"),
            "{}",
            f.summary
        );
        assert_eq!(f.impact.affected_fraction, Some(0.3));
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn time_wait_near_the_range_is_a_warning() {
        let f = ephemeral_port_exhaustion(&obs(0, 9, 0)).unwrap();
        assert_eq!(f.severity, Severity::Warning);
    }

    #[test]
    fn server_side_time_wait_churn_is_nothing() {
        assert_eq!(ephemeral_port_exhaustion(&obs(0, 3, 50_000)), None);
    }
}

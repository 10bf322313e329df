//! `dns_server_unreachable`: a configured nameserver never answered (every try timed out or
//! was refused). When it is asked first (no `rotate`), every lookup waits one timeout before the
//! next server is tried.

use super::probe;
use crate::dns::{DnsReport, TransportTiming};
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

fn describe(t: &TransportTiming) -> String {
    let mut s = format!("{:?}: {}/{} answered", t.transport, t.answered, t.sent).to_lowercase();
    if t.timeouts() > 0 {
        s.push_str(&format!(", {} timed out", t.timeouts()));
    }
    if let Some(e) = t.first_error() {
        s.push_str(&format!(", {e}"));
    }
    s
}

pub fn dns_server_unreachable(r: &DnsReport) -> Vec<Finding> {
    let rc = &r.resolver.resolv_conf;
    let all_dead = r.servers.iter().all(|s| !s.reachable());
    r.servers
        .iter()
        .filter(|s| !s.reachable())
        .map(|s| {
            let timeouts = s.udp.timeouts() > 0;
            let first = s.position == 0 && !rc.rotate;
            let severity = if all_dead {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let mut f = Finding::new(
                FindingId::DnsServerUnreachable,
                severity,
                Side::Network,
                format!(
                    "nameserver {} does not answer ({})",
                    s.server,
                    if timeouts { "timeouts" } else { "refused" }
                ),
            );
            let cost = if all_dead {
                format!(
                    "No configured nameserver answers, so every lookup fails, after up to {} s \
                     (timeout {} s × attempts {} × {} server(s) × {} name(s) tried with the \
                     search list).",
                    rc.worst_case_s(&r.name),
                    rc.timeout_s,
                    rc.attempts,
                    rc.nameservers.len(),
                    rc.names_tried(&r.name)
                )
            } else if first {
                format!(
                    "It is the first nameserver in {} and `rotate` is off, so every lookup first \
                     waits {} s for it before asking the next one.",
                    rc.path.display(),
                    rc.timeout_s
                )
            } else {
                "Lookups that reach it wait for the timeout before trying the next server."
                    .to_string()
            };
            let why = if timeouts {
                "Queries got no answer at all: the server is down, or a firewall drops DNS on the \
                 way."
            } else {
                "The host answered but refused the query port (nothing listens on port 53)."
            };
            f.explanation = format!("{why} {cost}");
            f.fix = format!(
                "Remove or replace `nameserver {}` in {} (or bring that server back); check \
                 with `dig @{} {}`.",
                s.server,
                rc.path.display(),
                s.server,
                r.query_name
            );
            if first || all_dead {
                f.impact.added_latency_ms = Some(f64::from(rc.timeout_s) * 1000.0);
                f.impact.affected_fraction = Some(1.0);
            }
            f.evidence.push(probe(
                "dns",
                format!(
                    "{} asked for {}: {}",
                    s.server,
                    r.query_name,
                    describe(&s.udp)
                ),
            ));
            if let Some(t) = &s.tcp {
                f.evidence
                    .push(probe("dns", format!("{}: {}", s.server, describe(t))));
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::fixtures::*;

    #[test]
    fn dead_first_server_costs_every_lookup_a_timeout() {
        let r = report(
            "nameserver 10.0.0.2\nnameserver 10.0.0.3\noptions timeout:2\n",
            vec![
                server("10.0.0.2", 0, vec![lost(), lost(), lost()]),
                server("10.0.0.3", 1, vec![ok(1.0), ok(1.2), ok(0.9)]),
            ],
            None,
        );
        let f = dns_server_unreachable(&r);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].summary.contains("10.0.0.2") && f[0].summary.contains("timeouts"));
        assert_eq!(f[0].impact.added_latency_ms, Some(2000.0));
        assert!(f[0].explanation.contains("first nameserver"));
    }

    #[test]
    fn all_dead_is_critical_and_refused_is_named() {
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server("10.0.0.2", 0, vec![refused(), refused()])],
            None,
        );
        let f = dns_server_unreachable(&r);
        assert_eq!(f[0].severity, Severity::Critical);
        assert!(f[0].summary.contains("refused"));
    }

    #[test]
    fn slow_but_answering_server_is_not_unreachable() {
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server("10.0.0.2", 0, vec![ok(400.0), lost(), ok(380.0)])],
            None,
        );
        assert!(dns_server_unreachable(&r).is_empty());
    }
}

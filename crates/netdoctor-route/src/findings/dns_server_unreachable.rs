//! `dns_server_unreachable`: a configured nameserver never answered (every try timed out or
//! was refused). When it is asked first (no `rotate`), every lookup waits one timeout before the
//! next server is tried.
//!
//! A server that must have answered getaddrinfo ([`DnsReport::answered_getaddrinfo`]) is never
//! called unreachable: `dns_slow` tells its time. Why a server did not answer comes from the
//! tries: timeouts, refused (nothing on port 53), no route (ENETUNREACH: this namespace has no
//! route to it, side client) or host unreachable (no ARP reply, or a router said so).

use super::probe;
use crate::dns::query::{HOST_UNREACHABLE, NO_ROUTE};
use crate::dns::{DnsReport, ServerTiming, TransportTiming};
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

/// Why a server gave no answer, from its tries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Why {
    Timeouts,
    Refused,
    NoRoute,
    HostUnreachable,
    Other,
}

fn why(s: &ServerTiming) -> Why {
    if s.udp.timeouts() > 0 {
        return Why::Timeouts;
    }
    match s
        .udp
        .first_error()
        .or(s.tcp.as_ref().and_then(|t| t.first_error()))
    {
        Some(e) if e.contains(NO_ROUTE) => Why::NoRoute,
        Some(e) if e.contains(HOST_UNREACHABLE) => Why::HostUnreachable,
        Some(e) if e.contains("refused") => Why::Refused,
        Some(_) => Why::Other,
        None => Why::Timeouts,
    }
}

pub fn dns_server_unreachable(r: &DnsReport) -> Vec<Finding> {
    let rc = &r.resolver.resolv_conf;
    let dead = |s: &&ServerTiming| !s.reachable() && !r.answered_getaddrinfo(s);
    // getaddrinfo found the name through DNS: some server answered it.
    let all_dead = r.servers.iter().all(|s| dead(&s)) && !r.getaddrinfo_answered_by_dns();
    r.servers
        .iter()
        .filter(dead)
        .map(|s| {
            let why = why(s);
            let first = s.position == 0 && !rc.rotate;
            let severity = if all_dead {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let (side, what) = match why {
                Why::Timeouts => (Side::Network, "timeouts".to_string()),
                Why::Refused => (Side::Network, "refused".to_string()),
                Why::NoRoute => (Side::Client, "no route to it".to_string()),
                Why::HostUnreachable => (Side::Network, "host unreachable".to_string()),
                Why::Other => (
                    Side::Network,
                    s.udp.first_error().unwrap_or("no answer").to_string(),
                ),
            };
            let mut f = Finding::new(
                FindingId::DnsServerUnreachable,
                severity,
                side,
                format!("nameserver {} does not answer ({what})", s.server),
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
            let why = match why {
                Why::Timeouts => {
                    "Queries got no answer at all: the server is down, or a firewall drops DNS \
                     on the way."
                }
                Why::Refused => {
                    "The host answered but refused the query port (nothing listens on port 53)."
                }
                Why::NoRoute => {
                    "No query left this host: its routing table has no route to the server's \
                     address (ENETUNREACH; or a router on the way said the network is \
                     unreachable)."
                }
                Why::HostUnreachable => {
                    "The queries could not be delivered: the server's address (or the gateway \
                     toward it) did not answer ARP, or a router said the host is unreachable \
                     (EHOSTUNREACH)."
                }
                Why::Other => "Every query failed at once.",
            };
            f.explanation = format!("{why} {cost}");
            f.fix = format!(
                "{}Remove or replace `nameserver {}` in {} (or bring that server back); check \
                 with `dig @{} {}`.",
                if side == Side::Client {
                    format!(
                        "Add a route to {} (`ip route get {}` shows none), or ",
                        s.server, s.server
                    )
                } else {
                    String::new()
                },
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
    use crate::dns::query::{Outcome, Try};
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
    fn no_route_is_named_and_is_the_clients() {
        let no_route = Try {
            elapsed_ms: Some(0.05),
            outcome: Outcome::Error {
                error: format!("udp socket to 10.0.0.2:53: {NO_ROUTE}"),
            },
        };
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server("10.0.0.2", 0, vec![no_route.clone(), no_route])],
            None,
        );
        let f = dns_server_unreachable(&r);
        assert!(f[0].summary.contains("no route"), "{}", f[0].summary);
        assert!(!f[0].summary.contains("refused"), "{}", f[0].summary);
        assert_eq!(f[0].side, Side::Client);
        assert!(f[0].explanation.contains("ENETUNREACH"));
    }

    #[test]
    fn a_server_that_answered_getaddrinfo_is_never_unreachable() {
        // The only nameserver; getaddrinfo found the name in 2 s; the direct tries gave up
        // at 1 s each.
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server("10.0.0.2", 0, vec![lost(), lost()])],
            Some(gai(Some(2003.0), &["10.0.0.5"], None)),
        );
        assert!(dns_server_unreachable(&r).is_empty());
        // Two servers, the first silent: glibc waited its 5 s and the second answered, so the
        // first is unreachable, but not critical (the name resolved).
        let r = report(
            "nameserver 10.0.0.2\nnameserver 10.0.0.3\n",
            vec![
                server("10.0.0.2", 0, vec![lost(), lost()]),
                server("10.0.0.3", 1, vec![lost(), lost()]),
            ],
            Some(gai(Some(5004.0), &["10.0.0.5"], None)),
        );
        let f = dns_server_unreachable(&r);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].summary.contains("10.0.0.2"));
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

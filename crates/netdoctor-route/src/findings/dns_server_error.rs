//! `dns_server_error`: a nameserver answers at once, but with a failure instead of an answer
//! about the name: SERVFAIL (it could not resolve it: upstream unreachable, DNSSEC validation,
//! lame delegation), REFUSED (it does not serve this client), or an answer truncated over UDP
//! (TC bit) while TCP to it fails, so the resolver never gets the full answer. None of these
//! says the name is missing, and none is a dead server: each has its own fix.

use super::probe;
use crate::dns::query::{Outcome, Try};
use crate::dns::{DnsReport, ServerTiming};
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

/// Why a server's answers are of no use to the resolver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    ServFail,
    Refused,
    /// UDP answers truncated and no TCP answer.
    Truncated,
}

/// A try that tells the resolver something about the name (NOERROR not truncated, NXDOMAIN).
fn usable(t: &Try) -> bool {
    match &t.outcome {
        Outcome::Answer {
            rcode, truncated, ..
        } => {
            let rcode = rcode.to_ascii_lowercase();
            (rcode == "no error" && !truncated) || rcode.contains("non-existent")
        }
        _ => false,
    }
}

fn failure_of(t: &Try) -> Option<Failure> {
    let Outcome::Answer {
        rcode, truncated, ..
    } = &t.outcome
    else {
        return None;
    };
    match rcode.to_ascii_lowercase().as_str() {
        "server failure" => Some(Failure::ServFail),
        "query refused" => Some(Failure::Refused),
        _ if *truncated => Some(Failure::Truncated),
        _ => None,
    }
}

/// The failure of a server none of whose tries (UDP or TCP) was usable, if it answered at all.
fn server_failure(s: &ServerTiming) -> Option<(Failure, String)> {
    let tries: Vec<&Try> = s
        .udp
        .tries
        .iter()
        .chain(s.tcp.iter().flat_map(|t| &t.tries))
        .collect();
    if tries.iter().any(|t| usable(t)) {
        return None;
    }
    let (failure, rcode) = tries
        .iter()
        .find_map(|t| match (&t.outcome, failure_of(t)) {
            (Outcome::Answer { rcode, .. }, Some(f)) => Some((f, rcode.clone())),
            _ => None,
        })?;
    Some((failure, rcode))
}

pub fn dns_server_error(r: &DnsReport) -> Vec<Finding> {
    if r.answered_without_dns {
        return Vec::new();
    }
    let gai_failed = r.getaddrinfo.as_ref().is_some_and(|g| g.results.is_empty());
    let any_usable = r.servers.iter().any(|s| {
        s.udp
            .tries
            .iter()
            .chain(s.tcp.iter().flat_map(|t| &t.tries))
            .any(usable)
    });
    let rc = &r.resolver.resolv_conf;
    let mut out = Vec::new();
    for s in &r.servers {
        let Some((failure, rcode)) = server_failure(s) else {
            continue;
        };
        let q = format!("{} {}", r.query_name, r.record_type);
        let tcp_note = match &s.tcp {
            None => "TCP not asked (--no-tcp)".to_string(),
            Some(t) => match (t.first_error(), t.timeouts()) {
                (Some(e), _) => e.to_string(),
                (None, n) if n > 0 => format!("{n} of {} TCP tries timed out", t.sent),
                _ => "TCP answers truncated too".to_string(),
            },
        };
        let (probe_name, summary, explanation, fix) = match failure {
            Failure::ServFail => (
                "dns_servfail",
                format!(
                    "nameserver {} answers SERVFAIL for {q}: it cannot resolve the name",
                    s.server
                ),
                "The nameserver is reachable and answers at once, but says it failed to resolve \
                 the name: it cannot reach the name's authoritative servers (its upstream or \
                 forwarder is down or blocked), DNSSEC validation failed, or the zone is broken \
                 (lame delegation). This does not say the name is missing: it may well exist."
                    .to_string(),
                format!(
                    "Look at the nameserver's log and its forwarders (can it reach them on port \
                     53?); check the zone's delegation and DNSSEC (`dig +cd {q}` answering means \
                     validation fails; `dig +trace {}`); meanwhile point {} at a working \
                     resolver.",
                    r.query_name,
                    rc.path.display()
                ),
            ),
            Failure::Refused => (
                "dns_refused",
                format!(
                    "nameserver {} answers REFUSED for {q}: it does not resolve for this client",
                    s.server
                ),
                "The nameserver answers, but by policy will not resolve this name for this \
                 client: recursion is allowed only to some networks (an ACL), or it is an \
                 authoritative-only server that does not serve this zone. The name is not \
                 known to be missing."
                    .to_string(),
                format!(
                    "Use the resolver meant for this network in {}, or allow this client's \
                     address in the nameserver's recursion ACL (BIND allow-recursion / \
                     allow-query, Unbound access-control, dnsmasq listen/interface settings); \
                     check with `dig @{} {q}`.",
                    rc.path.display(),
                    s.server
                ),
            ),
            Failure::Truncated => (
                "dns_truncated",
                format!(
                    "nameserver {} truncates its answer for {q} over UDP and TCP fails ({tcp_note})",
                    s.server
                ),
                "The answer does not fit a UDP datagram (the TC bit is set), so the resolver asks \
                 again over TCP port 53, and TCP to this server fails: the full answer never \
                 arrives. Large answers (many records, long CNAME chains, DNSSEC) are lost this \
                 way, usually because a firewall allows only UDP 53 or the server does not \
                 listen on TCP."
                    .to_string(),
                format!(
                    "Allow TCP port 53 to {} (firewall, security group) and make sure it listens \
                     on TCP; or make the answer fit (fewer records, `options edns0` in {}). \
                     Check with `dig +tcp @{} {q}`.",
                    s.server,
                    rc.path.display(),
                    s.server
                ),
            ),
        };
        let critical = gai_failed && !any_usable;
        let mut f = Finding::new(
            FindingId::DnsServerError,
            if critical {
                Severity::Critical
            } else {
                Severity::Warning
            },
            Side::Network,
            summary,
        );
        f.impact.affected_fraction = Some(1.0);
        f.explanation = if critical {
            format!("{explanation} No nameserver gave a usable answer, so the lookup fails.")
        } else {
            format!(
                "{explanation} The resolver moves on to the next nameserver, paying this \
                 server's round trip on every lookup."
            )
        };
        f.fix = fix;
        let answered: Vec<String> = s
            .udp
            .tries
            .iter()
            .filter(|t| t.answered())
            .map(|t| {
                let tc = matches!(
                    t.outcome,
                    Outcome::Answer {
                        truncated: true,
                        ..
                    }
                );
                format!(
                    "{rcode}{} in {}",
                    if tc { " (TC)" } else { "" },
                    super::fmt_ms(t.elapsed_ms.unwrap_or(0.0))
                )
            })
            .collect();
        f.evidence.push(probe(
            probe_name,
            format!(
                "{} udp for {q}: {} ({} of {} tries answered)",
                s.server,
                answered.join(", "),
                s.udp.answered,
                s.udp.sent
            ),
        ));
        if failure == Failure::Truncated {
            f.evidence.push(probe(
                "dns",
                format!("{} tcp for {q}: {tcp_note}", s.server),
            ));
        }
        if let Some(g) = &r.getaddrinfo
            && let Some(e) = &g.error
        {
            f.evidence.push(probe(
                "getaddrinfo",
                format!("getaddrinfo({}) failed: {e}", r.name),
            ));
        }
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::TransportTiming;
    use crate::dns::query::Transport;
    use crate::findings::fixtures::*;

    fn said(rcode: &str, truncated: bool) -> Try {
        Try {
            elapsed_ms: Some(0.3),
            outcome: Outcome::Answer {
                rcode: rcode.into(),
                answers: vec![],
                truncated,
            },
        }
    }

    fn temp_failure() -> Option<crate::names::SystemLookup> {
        Some(gai(
            Some(3.0),
            &[],
            Some("Temporary failure in name resolution"),
        ))
    }

    #[test]
    fn servfail_refused_and_truncation_are_told_as_what_they_are() {
        for (rcode, tc, probe_name, words) in [
            ("Server Failure", false, "dns_servfail", "answers SERVFAIL"),
            ("Query Refused", false, "dns_refused", "answers REFUSED"),
            ("No Error", true, "dns_truncated", "truncates its answer"),
        ] {
            let mut s = server("10.0.0.2", 0, vec![said(rcode, tc), said(rcode, tc)]);
            s.tcp = Some(TransportTiming::from_tries(
                Transport::Tcp,
                vec![refused(), refused()],
            ));
            let r = report("nameserver 10.0.0.2\n", vec![s], temp_failure());
            let f = dns_server_error(&r);
            assert_eq!(f.len(), 1, "{rcode}");
            assert_eq!(f[0].severity, Severity::Critical);
            assert!(f[0].summary.contains(words), "{}", f[0].summary);
            assert!(
                matches!(&f[0].evidence[0], netdoctor_core::finding::Evidence::Probe { probe, .. } if probe == probe_name)
            );
        }
    }

    #[test]
    fn look_alikes_are_not_server_errors() {
        // NXDOMAIN is an answer about the name (dns_name_not_found).
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server(
                "10.0.0.2",
                0,
                vec![said("Non-Existent Domain", false)],
            )],
            temp_failure(),
        );
        assert!(dns_server_error(&r).is_empty());
        // Truncated over UDP but answered over TCP: glibc gets the answer.
        let mut s = server("10.0.0.2", 0, vec![said("No Error", true)]);
        s.tcp = Some(TransportTiming::from_tries(Transport::Tcp, vec![ok(1.0)]));
        let r = report("nameserver 10.0.0.2\n", vec![s], None);
        assert!(dns_server_error(&r).is_empty());
        // A dead server is dns_server_unreachable's.
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server("10.0.0.2", 0, vec![lost(), lost()])],
            temp_failure(),
        );
        assert!(dns_server_error(&r).is_empty());
        // SERVFAIL from the first server while the second answers: a warning.
        let r = report(
            "nameserver 10.0.0.2\nnameserver 10.0.0.3\n",
            vec![
                server("10.0.0.2", 0, vec![said("Server Failure", false)]),
                server("10.0.0.3", 1, vec![ok(1.0)]),
            ],
            Some(gai(Some(4.0), &["10.0.0.5"], None)),
        );
        let f = dns_server_error(&r);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
    }
}

//! `dns_name_not_found`: the resolver works, but the name has no address: every nameserver
//! that answered said NXDOMAIN (or NOERROR with no record of the type asked), and the system
//! lookup failed too. Nothing in the network is slow or broken; the name (or the search list
//! that completes it) is wrong, or the record is missing from the zone.

use super::probe;
use crate::dns::DnsReport;
use crate::dns::query::Outcome;
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

/// What an answered try said about the name: `Some(true)` no such name (NXDOMAIN, or NOERROR
/// without a record of the type asked), `Some(false)` records of the type asked, `None` nothing
/// about the name: not an answer, a failure (SERVFAIL, REFUSED, …: `dns_server_error`), or an
/// answer truncated (TC) whose full form is only over TCP.
fn missing(outcome: &Outcome) -> Option<bool> {
    match outcome {
        Outcome::Answer {
            rcode,
            answers,
            truncated,
        } => {
            let rcode = rcode.to_ascii_lowercase();
            if rcode.contains("non-existent") {
                Some(true)
            } else if rcode == "no error" && !truncated {
                Some(answers.is_empty())
            } else {
                None
            }
        }
        _ => None,
    }
}

pub fn dns_name_not_found(r: &DnsReport) -> Vec<Finding> {
    let gai_failed = r
        .getaddrinfo
        .as_ref()
        .is_none_or(|g| g.error.is_some() && g.results.is_empty());
    if !gai_failed || r.answered_without_dns {
        return Vec::new();
    }
    let said: Vec<(std::net::IpAddr, &Outcome)> = r
        .servers
        .iter()
        .flat_map(|s| {
            s.udp
                .tries
                .iter()
                .chain(s.tcp.iter().flat_map(|t| &t.tries))
                .filter(|t| t.answered())
                .map(move |t| (s.server, &t.outcome))
        })
        .collect();
    if said.is_empty() || !said.iter().all(|(_, o)| missing(o) == Some(true)) {
        return Vec::new();
    }
    let mut servers: Vec<String> = said.iter().map(|(s, _)| s.to_string()).collect();
    servers.dedup();
    let rcode = match said[0].1 {
        Outcome::Answer { rcode, .. } => rcode.clone(),
        _ => String::new(),
    };
    let rc = &r.resolver.resolv_conf;
    let mut f = Finding::new(
        FindingId::DnsNameNotFound,
        Severity::Critical,
        Side::Client,
        format!(
            "{} does not exist: {} answered {rcode} for {} {}",
            r.name,
            servers.join(", "),
            r.query_name,
            r.record_type
        ),
    );
    f.impact.affected_fraction = Some(1.0);
    f.explanation = format!(
        "The nameservers answer, quickly and consistently, that {} has no {} record{}. The \
         resolver works; the name does not: every connection to it fails before it starts.",
        r.query_name,
        r.record_type,
        if rc.search.is_empty() {
            String::new()
        } else {
            format!(
                " (names with fewer than {} dots are completed with the search list: {})",
                rc.ndots,
                rc.search.join(" ")
            )
        }
    );
    f.fix = format!(
        "Check the spelling of {} and the search list in {}; if the name should exist, add its \
         record to the zone (or fix the service discovery that publishes it). Check with \
         `dig {} {}`.",
        r.name,
        rc.path.display(),
        r.query_name,
        r.record_type
    );
    for (server, o) in said.iter().take(2) {
        if let Outcome::Answer { rcode, .. } = o {
            f.evidence.push(probe(
                "dns",
                format!(
                    "{server} answered {rcode} for {} {}",
                    r.query_name, r.record_type
                ),
            ));
        }
    }
    if let Some(g) = &r.getaddrinfo
        && let Some(e) = &g.error
    {
        f.evidence.push(probe(
            "getaddrinfo",
            format!("getaddrinfo({}) failed: {e}", r.name),
        ));
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::query::Try;
    use crate::findings::fixtures::*;

    fn nx() -> Try {
        Try {
            elapsed_ms: Some(0.4),
            outcome: Outcome::Answer {
                rcode: "Non-Existent Domain".into(),
                answers: vec![],
                truncated: false,
            },
        }
    }

    #[test]
    fn every_server_saying_nxdomain_and_a_failed_lookup_is_a_missing_name() {
        let failed = || Some(gai(Some(3.0), &[], Some("Name or service not known")));
        let r = report(
            "nameserver 10.0.0.2\nsearch corp\n",
            vec![server("10.0.0.2", 0, vec![nx(), nx()])],
            failed(),
        );
        let f = dns_name_not_found(&r);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Critical);
        assert!(
            f[0].summary
                .starts_with("api.test does not exist: 10.0.0.2 answered Non-Existent Domain"),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].evidence.len(), 3);
        // One server with an address: the name exists there (the lookup failed for another
        // reason, which the other findings name).
        let r = report(
            "nameserver 10.0.0.2\nnameserver 10.0.0.3\n",
            vec![
                server("10.0.0.2", 0, vec![nx()]),
                server("10.0.0.3", 1, vec![ok(1.0)]),
            ],
            failed(),
        );
        assert!(dns_name_not_found(&r).is_empty());
        // A dead server says nothing about the name; the lookup that worked says it exists.
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server("10.0.0.2", 0, vec![lost()])],
            failed(),
        );
        assert!(dns_name_not_found(&r).is_empty());
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server("10.0.0.2", 0, vec![nx()])],
            Some(gai(Some(3.0), &["10.0.0.5"], None)),
        );
        assert!(dns_name_not_found(&r).is_empty());
    }
}

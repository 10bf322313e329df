//! `reverse_dns_timeout`: PTR lookups of the addresses found time out (or take as long as a
//! timeout). Every tool that prints names — ping, traceroute, netstat, ss without `-n`, access
//! logs with hostname lookups — stalls for seconds per address.

use super::{Thresholds, fmt_ms, probe};
use crate::dns::DnsReport;
use crate::dns::query::Outcome;
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

pub fn reverse_dns_timeout(r: &DnsReport, th: &Thresholds) -> Vec<Finding> {
    let mut evidence = Vec::new();
    let mut worst: f64 = 0.0;
    // Slow getnameinfo of addresses whose PTR every nameserver asked answered at once: the
    // reverse zone is served; the time is the resolver's path.
    let mut path_evidence = Vec::new();
    let mut path_worst: f64 = 0.0;
    let dead_wait = r.dead_servers_wait_ms();
    for rev in &r.reverse {
        let ptr_answered = !rev.direct.is_empty() && rev.direct.iter().all(|(_, t)| t.answered());
        for (server, t) in &rev.direct {
            if t.outcome == Outcome::Timeout {
                evidence.push(probe(
                    "dns",
                    format!(
                        "PTR {} at {server}: no answer within {}",
                        rev.address,
                        fmt_ms(r.timeout_ms)
                    ),
                ));
                worst = worst.max(r.timeout_ms);
            }
        }
        if let Some(sys) = &rev.system {
            let slow = sys.elapsed_ms.is_some_and(|ms| ms >= th.reverse_slow_ms);
            // A dead nameserver ahead explains the wait (`dns_server_unreachable` tells it).
            let dead_explains =
                !sys.timed_out && sys.elapsed_ms.unwrap_or(0.0) - dead_wait < th.reverse_slow_ms;
            if ptr_answered && (sys.timed_out || slow) {
                if !dead_explains {
                    let took = sys
                        .elapsed_ms
                        .filter(|_| !sys.timed_out)
                        .map_or_else(|| "timed out".to_string(), fmt_ms);
                    let direct: Vec<String> = rev
                        .direct
                        .iter()
                        .map(|(srv, t)| format!("{srv} in {}", fmt_ms(t.elapsed_ms.unwrap_or(0.0))))
                        .collect();
                    path_evidence.push(probe(
                        "getnameinfo",
                        format!(
                            "getnameinfo({}): {took}; PTR answered directly by {}",
                            rev.address,
                            direct.join(", ")
                        ),
                    ));
                    path_worst = path_worst.max(sys.elapsed_ms.unwrap_or(r.timeout_ms));
                }
            } else if sys.timed_out || slow {
                let took = sys.elapsed_ms.map_or_else(
                    || sys.error.clone().unwrap_or_default(),
                    |ms| format!("took {}", fmt_ms(ms)),
                );
                evidence.push(probe(
                    "getnameinfo",
                    format!("getnameinfo({}): {took}", rev.address),
                ));
                worst = worst.max(sys.elapsed_ms.unwrap_or(r.timeout_ms));
            }
        }
    }
    if evidence.is_empty() {
        return path_slow(r, path_evidence, path_worst);
    }
    let mut f = Finding::new(
        FindingId::ReverseDnsTimeout,
        Severity::Warning,
        Side::Network,
        format!(
            "reverse (PTR) lookups of {} time out",
            r.reverse
                .iter()
                .map(|x| x.address.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    f.impact.added_latency_ms = Some(worst);
    f.explanation = "The nameserver does not answer PTR questions for these addresses, so every \
                     reverse lookup waits for the resolver's timeout (glibc: timeout × attempts). \
                     Tools that print host names — ping, traceroute, mtr, netstat, ss without \
                     -n, servers logging client host names — stall that long per address, which \
                     looks like a slow network."
        .to_string();
    f.fix = "Serve the reverse zone (in-addr.arpa) on the nameserver or make it answer NXDOMAIN \
             quickly; meanwhile use -n with ping/traceroute/mtr/ss and turn off hostname \
             lookups in server logging."
        .to_string();
    f.evidence = evidence;
    vec![f]
}

/// Reverse lookups that are slow although the nameserver answers the PTR question directly at
/// once: not a missing reverse zone but a lost query retried after the timeout.
fn path_slow(
    r: &DnsReport,
    evidence: Vec<netdoctor_core::finding::Evidence>,
    worst: f64,
) -> Vec<Finding> {
    if evidence.is_empty() {
        return Vec::new();
    }
    let rc = &r.resolver.resolv_conf;
    let mut f = Finding::new(
        FindingId::ReverseDnsTimeout,
        Severity::Warning,
        Side::Network,
        format!(
            "reverse (PTR) lookups took {} although the nameserver answers PTR at once",
            fmt_ms(worst)
        ),
    );
    f.impact.added_latency_ms = Some(worst);
    f.explanation = format!(
        "Asked directly, the nameserver answered the PTR question at once, so the reverse zone \
         is served; the system lookup still waited about a timeout ({} s in {}): its query or \
         the answer was lost on the way and resent after the timeout. Any lookup (forward \
         too) can pay this when DNS packets are lost.",
        rc.timeout_s,
        rc.path.display()
    );
    f.fix = format!(
        "Look for DNS packet loss between this host and the nameserver (repeat `netdoctor dns`: \
         lost direct tries; a firewall or overloaded link on the way); lower `options timeout:` \
         in {} so a lost query is resent sooner.",
        rc.path.display()
    );
    f.evidence = evidence;
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::ReverseTiming;
    use crate::findings::fixtures::*;

    #[test]
    fn ptr_timeout_is_found_and_answered_ptr_is_not() {
        let mut r = report("nameserver 10.0.0.2\n", vec![], None);
        r.reverse.push(ReverseTiming {
            address: "10.0.0.5".parse().unwrap(),
            direct: vec![("10.0.0.2".parse().unwrap(), ok(1.0))],
            system: Some(gai(Some(2.0), &["api.test"], None)),
        });
        assert!(reverse_dns_timeout(&r, &Thresholds::default()).is_empty());
        r.reverse[0].direct[0].1 = lost();
        r.reverse[0].system = Some(gai(None, &[], Some("no result after 12000 ms")));
        let f = reverse_dns_timeout(&r, &Thresholds::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence.len(), 2);
        assert_eq!(f[0].impact.added_latency_ms, Some(2000.0));
    }

    #[test]
    fn slow_getnameinfo_with_a_fast_direct_ptr_is_the_path_not_the_zone() {
        let nx = || crate::dns::query::Try {
            elapsed_ms: Some(1.2),
            outcome: Outcome::Answer {
                rcode: "Non-Existent Domain".into(),
                answers: vec![],
                truncated: false,
            },
        };
        // A dead first nameserver (1 s timeout) explains a 1002 ms getnameinfo: its finding is
        // dns_server_unreachable's, not a missing PTR zone.
        let mut r = report(
            "nameserver 10.0.0.9\nnameserver 10.0.0.2\noptions timeout:1\n",
            vec![
                server("10.0.0.9", 0, vec![lost(), lost()]),
                server("10.0.0.2", 1, vec![ok(0.4)]),
            ],
            None,
        );
        r.reverse.push(ReverseTiming {
            address: "10.0.0.5".parse().unwrap(),
            direct: vec![("10.0.0.2".parse().unwrap(), nx())],
            system: Some(gai(Some(1002.0), &[], Some("Name or service not known"))),
        });
        assert!(reverse_dns_timeout(&r, &Thresholds::default()).is_empty());
        // One server answering PTR at once, getnameinfo 1002 ms: a lost query, told so.
        r.servers.remove(0);
        r.servers[0].position = 0;
        let f = reverse_dns_timeout(&r, &Thresholds::default());
        assert_eq!(f.len(), 1);
        assert!(
            f[0].summary.contains("answers PTR at once"),
            "{}",
            f[0].summary
        );
        assert!(!f[0].explanation.contains("does not answer PTR"));
    }
}

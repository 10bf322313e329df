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
    for rev in &r.reverse {
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
            if sys.timed_out || slow {
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
        return Vec::new();
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
}

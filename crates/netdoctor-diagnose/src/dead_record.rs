//! `dns_dead_record`: the run's address is live, but another address of the name is not.
//!
//! The resolver here put a live address first, so the run alone would say HEALTHY; clients
//! that get another order (another resolver, round-robin DNS, happy eyeballs, a client that
//! rotates addresses) try the dead one first. What that costs them depends on how it fails,
//! so the finding says which (`crate::other_addrs` made one connect() to each):
//!
//! - no answer within the timeout (the host is down, or the port is dropped by a firewall: one
//!   connect() cannot tell which): clients wait their connect timeout (seconds, each new
//!   connection) before the next address: **warning**;
//! - connect() failed at once without a reset (no route from here, e.g. an IPv6 record on a
//!   host without IPv6 routes, or an ICMP unreachable): clients here fall back at once; hosts
//!   with such a route may reach it or not, this one cannot say: **info**;
//! - refused (RST: nothing listens on the port there): clients fall back at once, a round
//!   trip more: **info**.
//!
//! An address that answers, however slowly, is not dead: nothing is said (its connect time is
//! in the evidence when another one is). The verdict ranks it with the run's other findings.

use std::net::SocketAddr;
use std::time::Duration;

use netdoctor_core::finding::{Evidence, Finding, FindingId, Severity, Side};

use crate::other_addrs::{Kind, Outcome};

/// The evidence's probe name for an address of this kind (the Chinese texts choose by the
/// first one's).
fn probe_name(k: Kind) -> &'static str {
    match k {
        Kind::Silent => "dead_record_silent",
        Kind::Unreachable => "dead_record_unreachable",
        Kind::Refused => "dead_record_refused",
        Kind::Live => "other_address_live",
    }
}

/// The finding when `name`'s first address `first` (the run's, live) has `total` addresses
/// and the others did `outcomes`; `None` when every other address accepted a connection.
pub(crate) fn finding(
    name: &str,
    first: SocketAddr,
    total: usize,
    outcomes: &[Outcome],
    timeout: Duration,
) -> Option<Finding> {
    let mut sorted: Vec<(Kind, &Outcome)> = outcomes.iter().map(|o| (o.kind(timeout), o)).collect();
    sorted.sort_by_key(|(k, _)| *k);
    let (worst, _) = *sorted.first()?;
    if worst == Kind::Live {
        return None;
    }
    let of = |k: Kind| -> Vec<String> {
        sorted
            .iter()
            .filter(|(kk, _)| *kk == k)
            .map(|(_, o)| o.addr.to_string())
            .collect()
    };
    let (silent, unreach, refused) = (of(Kind::Silent), of(Kind::Unreachable), of(Kind::Refused));
    let dead: Vec<SocketAddr> = sorted
        .iter()
        .filter(|(k, _)| *k != Kind::Live)
        .map(|(_, o)| o.addr)
        .collect();
    let secs = timeout.as_secs_f64();
    let mut parts = Vec::new();
    if !silent.is_empty() {
        parts.push(format!(
            "{} did not answer a connect() within {secs:.0} s",
            silent.join(", ")
        ));
    }
    if !unreach.is_empty() {
        parts.push(format!(
            "{} cannot be reached from this host (connect() failed at once: {})",
            unreach.join(", "),
            if sorted
                .iter()
                .any(|(k, o)| *k == Kind::Unreachable && o.addr.is_ipv6())
            {
                "no IPv6 route here"
            } else {
                "no route, or an ICMP unreachable"
            }
        ));
    }
    if !refused.is_empty() {
        parts.push(format!(
            "{} refused the connection (RST)",
            refused.join(", ")
        ));
    }
    let (severity, what, cost) = match worst {
        Kind::Silent => (
            Severity::Warning,
            "a dead address",
            "clients that try it first wait for their connect timeout (seconds, on each new \
             connection) before they fall back to the next address, or fail when they do not \
             fall back: slow requests that the run's own address does not show",
        ),
        Kind::Unreachable => (
            Severity::Info,
            "an address this host cannot reach",
            "clients on this host fail at once on it (ENETUNREACH or an ICMP unreachable) and \
             fall back to the next address without waiting; clients that do not fall back \
             fail. Hosts that have a route to it were not tested from here: the address may \
             be live or dead for them",
        ),
        _ => (
            Severity::Info,
            "an address where nothing listens",
            "clients that try it first get a reset and fall back to the next address at once \
             (one round trip more per new connection); clients that do not fall back fail",
        ),
    };
    let mut f = Finding::new(
        FindingId::DnsDeadRecord,
        severity,
        Side::Server,
        format!(
            "{name} has {what} among its {total} records: {}, while {first} (the run's) \
             accepts connections",
            parts.join("; ")
        ),
    );
    let tried = outcomes.len() + 1;
    f.impact.affected_fraction = Some(dead.len() as f64 / tried as f64);
    f.explanation = format!(
        "{name} resolves to {total} addresses and this host's resolver returned {first} first, \
         so the run diagnosed a live address. Clients that get another order (another \
         resolver, round-robin DNS rotating the records, happy eyeballs trying IPv6 first, a \
         client that rotates addresses) try {} first: {cost}. One connect() to each address \
         cannot tell a host that is down from a port a firewall drops; the affected share is \
         the tried addresses that failed.",
        dead.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let ips = dead
        .iter()
        .map(|d| d.ip().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    f.fix = match worst {
        Kind::Unreachable => format!(
            "If {name} must be reachable over this family, give this host a route to {ips} \
             (an IPv6 default route for an AAAA record); if {ips} is not served any more, \
             remove its record from {name} (DNS A/AAAA, or the /etc/hosts line). Check with \
             `getent ahosts {name}`."
        ),
        Kind::Refused => format!(
            "Start the service on {ips} (port {}) or remove {ips} from {name}'s records (DNS \
             A/AAAA, or the /etc/hosts line); check with `getent ahosts {name}`.",
            dead[0].port()
        ),
        _ => format!(
            "Remove {ips} from {name}'s records (its DNS A/AAAA records, or the /etc/hosts \
             line) or bring the host back (and check that no firewall drops port {}); check \
             with `getent ahosts {name}` and `netdoctor diagnose` with {} in the URL and a Host \
             header.",
            dead[0].port(),
            dead[0]
        ),
    };
    for (k, o) in &sorted {
        f.evidence.push(Evidence::Probe {
            probe: probe_name(*k).to_string(),
            note: o.describe(timeout),
        });
    }
    f.evidence.push(Evidence::Probe {
        probe: "run_address".to_string(),
        note: format!(
            "{first}, the resolver's first address, passed the preflight: the run diagnosed it"
        ),
    });
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    const T: Duration = Duration::from_secs(2);

    fn live(a: &str, ms: f64) -> Outcome {
        Outcome {
            addr: sa(a),
            connect_ms: Some(ms),
            refused: false,
            elapsed: Duration::from_secs_f64(ms / 1000.0),
        }
    }

    fn failed(a: &str, refused: bool, elapsed: Duration) -> Outcome {
        Outcome {
            addr: sa(a),
            connect_ms: None,
            refused,
            elapsed,
        }
    }

    #[test]
    fn all_live_says_nothing_even_slow() {
        let o = [live("10.0.0.3:80", 0.2), live("10.0.0.4:80", 900.0)];
        assert!(finding("web.example", sa("10.0.0.2:80"), 3, &o, T).is_none());
        assert!(finding("web.example", sa("10.0.0.2:80"), 1, &[], T).is_none());
    }

    #[test]
    fn a_silent_address_is_a_warning_dead_record() {
        let o = [live("10.0.0.4:80", 0.3), failed("10.0.0.3:80", false, T)];
        let f = finding("web.example", sa("10.0.0.2:80"), 3, &o, T).unwrap();
        assert_eq!(f.id, FindingId::DnsDeadRecord);
        assert_eq!((f.severity, f.side), (Severity::Warning, Side::Server));
        assert!(f.summary.contains("a dead address"), "{}", f.summary);
        assert!(
            f.summary.contains("10.0.0.3:80 did not answer"),
            "{}",
            f.summary
        );
        assert!(
            f.explanation.contains("connect timeout"),
            "{}",
            f.explanation
        );
        assert!(
            f.fix
                .starts_with("Remove 10.0.0.3 from web.example's records"),
            "{}",
            f.fix
        );
        assert_eq!(f.impact.affected_fraction, Some(1.0 / 3.0));
        // The dead one's evidence first (the Chinese text picks by it), the live one's time.
        assert!(matches!(&f.evidence[0], Evidence::Probe { probe, note }
            if probe == "dead_record_silent" && note.contains("within 2 s")));
        assert!(matches!(&f.evidence[1], Evidence::Probe { probe, note }
            if probe == "other_address_live" && note.contains("0.3 ms")));
        assert!(matches!(&f.evidence[2], Evidence::Probe { probe, .. } if probe == "run_address"));
    }

    #[test]
    fn a_refused_address_is_info_and_told_as_a_fast_fallback() {
        let o = [failed("10.0.0.3:80", true, Duration::from_micros(150))];
        let f = finding("web.example", sa("10.0.0.2:80"), 2, &o, T).unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.summary.contains("refused the connection (RST)"),
            "{}",
            f.summary
        );
        assert!(f.explanation.contains("at once"), "{}", f.explanation);
        assert!(
            !f.explanation.contains("connect timeout"),
            "{}",
            f.explanation
        );
        assert!(
            f.fix.starts_with("Start the service on 10.0.0.3 (port 80)"),
            "{}",
            f.fix
        );
    }

    #[test]
    fn an_unroutable_v6_record_is_told_apart() {
        let o = [failed("[fd00::3]:80", false, Duration::from_micros(40))];
        let f = finding("web.example", sa("10.0.0.2:80"), 2, &o, T).unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(f.summary.contains("no IPv6 route here"), "{}", f.summary);
        assert!(f.explanation.contains("ENETUNREACH"), "{}", f.explanation);
        assert!(f.fix.contains("IPv6 default route"), "{}", f.fix);
        assert!(matches!(&f.evidence[0], Evidence::Probe { probe, note }
            if probe == "dead_record_unreachable" && note.contains("[fd00::3]:80")));
    }

    #[test]
    fn the_worst_kind_sets_the_severity() {
        let o = [
            failed("10.0.0.3:80", true, Duration::from_micros(150)),
            failed("10.0.0.5:80", false, T),
        ];
        let f = finding("web.example", sa("10.0.0.2:80"), 3, &o, T).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.summary.contains("10.0.0.5:80 did not answer"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("10.0.0.3:80 refused"), "{}", f.summary);
        assert!(f.fix.contains("10.0.0.5, 10.0.0.3"), "{}", f.fix);
    }
}

//! A name with several addresses: are the others alive too?
//!
//! The run diagnoses the first address the resolver returns; clients that get another order
//! (another resolver, round-robin DNS, happy eyeballs, a client that rotates) try the others
//! first. So when the name has more addresses, each other one (at most [`MAX_OTHERS`]) gets one
//! connect() in parallel with the preflight ([`probe`]; joined before the observers start, so
//! its SYNs stay out of the run's counters; a name with one address costs nothing), and:
//!
//! - The first address is dead (no ARP answer, no route, no SYN/ACK, refused): the preflight
//!   ends the run with a finding about that address, whose fix used to be "correct the address
//!   in the URL". But the URL holds a name, and when the name's other addresses accept
//!   connections the service is up: the fault is a dead record among live ones. Clients that
//!   try the dead address first wait for their connect timeout before they fall back (curl: 4 s
//!   here, each new connection), or fail when they do not fall back. The stopping finding says
//!   what the others did ([`check`]): a live one turns the story into the dead record and its
//!   fix into the name's records; none live says the service answers on none of them. A refused
//!   address goes past the preflight (the probes and the load find `server_not_listening`):
//!   that finding gets the same look once the run is finished ([`check_refused`]). The verdict
//!   stands (the severity is the failed address's); the finding's text and evidence grow.
//! - The first address is live: a dead other one is `dns_dead_record` (`crate::dead_record`).
//!
//! A certificate the client rejects (`tls_verify_failed`) is not about one address: left as is.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netdoctor_core::finding::{Evidence, Finding, FindingId};
use netdoctor_probe::SynProbeConfig;
use netdoctor_report::{CheckName, CheckStatus, Report};

use crate::host::Host;
use crate::plan::DiagnosePlan;
use crate::run::Progress;

/// The preflight's fixes end with this; with a name in the URL it is [`IN_RECORDS`].
const IN_URL: &str = "correct the address in the URL";
const IN_RECORDS: &str = "correct the name's records";
/// Other addresses tried, at most.
pub(crate) const MAX_OTHERS: usize = 4;
/// The connect timeout for each (the run's `--timeout` when shorter).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What one connect() to an address did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// No answer within the timeout: clients wait their connect timeout on it.
    Silent,
    /// Failed well before the timeout without a reset: no route from here (ENETUNREACH, an
    /// IPv6 address on a host without IPv6 routes) or an ICMP unreachable. Clients here fail
    /// at once and fall back.
    Unreachable,
    /// A reset: nothing listens on the port there; clients fall back at once.
    Refused,
    /// Connected.
    Live,
}

/// One other address and what its connect() did.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub addr: SocketAddr,
    /// Connected: the handshake time in ms.
    pub connect_ms: Option<f64>,
    pub refused: bool,
    /// How long the connect() took to end, whatever its result.
    pub elapsed: Duration,
}

impl Outcome {
    fn from_probe(addr: SocketAddr, p: &netdoctor_probe::SynProbe, elapsed: Duration) -> Outcome {
        Outcome {
            addr,
            connect_ms: (p.answered > 0).then(|| p.median_ms.unwrap_or(0.0)),
            refused: p.answered == 0 && p.refused > 0,
            elapsed,
        }
    }

    /// What the connect() did; a failure in under half of `timeout` is not a wait.
    pub(crate) fn kind(&self, timeout: Duration) -> Kind {
        match (self.connect_ms, self.refused) {
            (Some(_), _) => Kind::Live,
            (None, true) => Kind::Refused,
            (None, false) if self.elapsed < timeout / 2 => Kind::Unreachable,
            (None, false) => Kind::Silent,
        }
    }

    pub(crate) fn describe(&self, timeout: Duration) -> String {
        let ms = self.elapsed.as_secs_f64() * 1000.0;
        match (self.kind(timeout), self.connect_ms) {
            (Kind::Live, Some(c)) => format!("{} accepted a connection in {c:.1} ms", self.addr),
            (Kind::Refused, _) => {
                format!("{} refused the connection (RST) in {ms:.1} ms", self.addr)
            }
            (Kind::Unreachable, _) => format!(
                "{} could not be reached: connect() failed after {ms:.1} ms without a reset \
                 (no route from here{}, or an ICMP unreachable)",
                self.addr,
                if self.addr.is_ipv6() {
                    ": no IPv6 route"
                } else {
                    ""
                }
            ),
            _ => format!(
                "{} did not accept a connection within {:.0} s",
                self.addr,
                timeout.as_secs_f64()
            ),
        }
    }
}

/// The connect timeout used for the other addresses in `plan`.
pub(crate) fn timeout(plan: &DiagnosePlan) -> Duration {
    plan.load.timeout.min(CONNECT_TIMEOUT)
}

/// One connect() to each of the name's `others` (at most [`MAX_OTHERS`], in parallel, each
/// bounded by [`timeout`]); nothing when there are none or the URL holds an address.
pub(crate) fn probe(
    plan: &DiagnosePlan,
    host: &dyn Host,
    first: SocketAddr,
    others: &[SocketAddr],
    progress: &dyn Progress,
) -> Vec<Outcome> {
    let name = &plan.target.host;
    if others.is_empty() || name.parse::<std::net::IpAddr>().is_ok() {
        return Vec::new();
    }
    let tried: Vec<SocketAddr> = others.iter().copied().take(MAX_OTHERS).collect();
    progress.stage(&format!(
        "{name} resolves to {} addresses: {first} is diagnosed, one connect() to each other \
         ({})",
        others.len() + 1,
        tried
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let cfg = SynProbeConfig {
        count: 1,
        timeout: timeout(plan),
        ..SynProbeConfig::default()
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = tried
            .iter()
            .map(|&a| {
                let cfg = &cfg;
                s.spawn(move || {
                    let start = Instant::now();
                    let p = host.connect_probe(a, cfg);
                    Outcome::from_probe(a, &p, start.elapsed())
                })
            })
            .collect();
        // A probe thread that panicked tells nothing: its address is left out, not guessed.
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// After a preflight that stopped the run on `failed`: tells in the stopping finding (the
/// report's last) what the name's other addresses (`total` in all) did.
pub(crate) fn check(
    plan: &DiagnosePlan,
    failed: SocketAddr,
    total: usize,
    outcomes: &[Outcome],
    report: &mut Report,
) {
    let Some(i) = report
        .findings
        .len()
        .checked_sub(1)
        .filter(|&i| report.findings[i].id != FindingId::TlsVerifyFailed)
    else {
        return;
    };
    tell(plan, failed, total, outcomes, report, i);
}

/// After a run whose address refused every connection (`server_not_listening`, found by the
/// probes and the load, not the preflight): the same look at the name's other addresses.
pub(crate) fn check_refused(
    plan: &DiagnosePlan,
    failed: SocketAddr,
    total: usize,
    outcomes: &[Outcome],
    report: &mut Report,
) {
    if let Some(i) = report
        .findings
        .iter()
        .position(|f| f.id == FindingId::ServerNotListening)
    {
        tell(plan, failed, total, outcomes, report, i);
    }
}

/// Tells in finding `i` (about `failed`) what the other addresses did; nothing when the URL
/// holds an address, not a name.
fn tell(
    plan: &DiagnosePlan,
    failed: SocketAddr,
    total: usize,
    outcomes: &[Outcome],
    report: &mut Report,
    i: usize,
) {
    let name = plan.target.host.clone();
    if name.parse::<std::net::IpAddr>().is_ok() {
        return;
    }
    let f = &mut report.findings[i];
    // The URL holds a name: its records are what to correct, not the URL.
    f.fix = f.fix.replace(IN_URL, IN_RECORDS);
    if outcomes.is_empty() {
        return;
    }
    amend(f, &name, failed, total, outcomes, timeout(plan));
    let summary = f.summary.clone();
    if let Some(c) = report
        .checks
        .iter_mut()
        .find(|c| c.name == CheckName::Preflight && c.status == CheckStatus::Failed)
    {
        c.reason = Some(summary);
    }
    // The severity and order are unchanged: the verdict stands as decided.
}

/// Tells in `f` (the finding about `failed`, the first of `name`'s `total` addresses) what its
/// other addresses did.
pub(crate) fn amend(
    f: &mut Finding,
    name: &str,
    failed: SocketAddr,
    total: usize,
    outcomes: &[Outcome],
    timeout: Duration,
) {
    let live: Vec<String> = outcomes
        .iter()
        .filter(|o| o.connect_ms.is_some())
        .map(|o| o.addr.to_string())
        .collect();
    let note = format!(
        "{name} resolves to {total} addresses, {failed} first; the others: {}",
        outcomes
            .iter()
            .map(|o| o.describe(timeout))
            .collect::<Vec<_>>()
            .join("; ")
    );
    f.evidence.push(Evidence::Probe {
        probe: "other_addresses".to_string(),
        note,
    });
    let dead = failed.ip();
    // The failed address refused (a reset): clients move on at once, they do not wait.
    let refused = f.id == FindingId::ServerNotListening;
    f.fix = f.fix.replace(IN_URL, IN_RECORDS);
    if live.is_empty() {
        f.summary = format!(
            "{}; none of {name}'s {} other address{} accepted a connection either",
            f.summary,
            outcomes.len(),
            if outcomes.len() == 1 { "" } else { "es" }
        );
        f.explanation = format!(
            "{} {name} resolves to {total} addresses; the run tried the others too and none \
             accepted a connection (see the evidence), so the service is unreachable from here \
             on every address, not only on {dead}.",
            f.explanation
        );
        return;
    }
    f.summary = format!(
        "{}; {name} also resolves to {}, which accepts connections: {dead} is a dead address \
         among the name's records",
        f.summary,
        live.join(", ")
    );
    f.explanation = format!(
        "{} {name} resolves to {total} addresses and the resolver returned {dead} first; {} \
         accepted a connection, so the service is up and {dead} is a dead record of the name. \
         Clients that try {dead} first {}, or fail when they do not fall back; which clients \
         hit it depends on the order their resolver returns (round-robin DNS rotates it). The \
         run stopped here: it did not load the live address.",
        f.explanation,
        live.join(", "),
        if refused {
            "get a reset and fall back to the next address at once (a round trip more per new \
             connection)"
        } else {
            "wait for their connect timeout before they fall back to the next address (seconds \
             per new connection: slow requests, not errors)"
        }
    );
    f.fix = format!(
        "Remove {dead} from {name}'s records (its DNS A/AAAA records, or the /etc/hosts line) or \
         {}; check with `getent ahosts {name}`, and diagnose a live address directly \
         (`netdoctor diagnose` with {} in the URL and a Host header). For {dead} itself: {}",
        if refused {
            format!("start the service on {dead}")
        } else {
            format!("bring the host at {dead} back")
        },
        live[0],
        f.fix
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use netdoctor_core::finding::{Severity, Side};

    fn dead_finding() -> Finding {
        let mut f = Finding::new(
            FindingId::NeighbourUnreachable,
            Severity::Critical,
            Side::Network,
            "10.0.0.3 on the link of eth0 does not answer ARP: nobody holds that address",
        );
        f.fix = "Check that a host owns 10.0.0.3, or correct the address in the URL.".into();
        f
    }

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_live_other_address_makes_it_a_dead_record() {
        let mut f = dead_finding();
        let outcomes = [Outcome {
            addr: sa("10.0.0.2:80"),
            connect_ms: Some(0.2),
            refused: false,
            elapsed: Duration::from_micros(200),
        }];
        amend(
            &mut f,
            "web.example",
            sa("10.0.0.3:80"),
            2,
            &outcomes,
            CONNECT_TIMEOUT,
        );
        assert!(
            f.summary.contains("also resolves to 10.0.0.2:80"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("dead address"), "{}", f.summary);
        assert!(
            f.fix
                .starts_with("Remove 10.0.0.3 from web.example's records"),
            "{}",
            f.fix
        );
        assert!(!f.fix.contains("address in the URL"), "{}", f.fix);
        assert!(f.explanation.contains("fall back"), "{}", f.explanation);
        assert_eq!(f.side, Side::Network);
        assert!(matches!(&f.evidence[0], Evidence::Probe { probe, note }
            if probe == "other_addresses" && note.contains("10.0.0.2:80 accepted")));
    }

    #[test]
    fn a_refused_first_address_is_not_told_as_a_wait() {
        let mut f = Finding::new(
            FindingId::ServerNotListening,
            Severity::Critical,
            Side::Server,
            "Nothing listens on 10.0.0.3:80: connections are refused",
        );
        let outcomes = [Outcome {
            addr: sa("10.0.0.2:80"),
            connect_ms: Some(0.2),
            refused: false,
            elapsed: Duration::from_micros(200),
        }];
        amend(
            &mut f,
            "web.example",
            sa("10.0.0.3:80"),
            2,
            &outcomes,
            CONNECT_TIMEOUT,
        );
        assert!(f.explanation.contains("at once"), "{}", f.explanation);
        assert!(
            !f.explanation.contains("connect timeout"),
            "{}",
            f.explanation
        );
        assert!(f.fix.contains("start the service on 10.0.0.3"), "{}", f.fix);
        let mut g = dead_finding();
        amend(
            &mut g,
            "web.example",
            sa("10.0.0.3:80"),
            2,
            &outcomes,
            CONNECT_TIMEOUT,
        );
        assert!(
            g.explanation.contains("connect timeout"),
            "{}",
            g.explanation
        );
    }

    #[test]
    fn no_live_other_address_says_all_are_down() {
        let mut f = dead_finding();
        let outcomes = [
            Outcome {
                addr: sa("10.0.0.4:80"),
                connect_ms: None,
                refused: true,
                elapsed: Duration::from_micros(200),
            },
            Outcome {
                addr: sa("10.0.0.5:80"),
                connect_ms: None,
                refused: false,
                elapsed: CONNECT_TIMEOUT,
            },
        ];
        amend(
            &mut f,
            "web.example",
            sa("10.0.0.3:80"),
            3,
            &outcomes,
            CONNECT_TIMEOUT,
        );
        assert!(
            f.summary
                .contains("none of web.example's 2 other addresses"),
            "{}",
            f.summary
        );
        assert!(!f.summary.contains("dead address"), "{}", f.summary);
        assert!(f.fix.contains("correct the name's records"), "{}", f.fix);
        assert!(matches!(&f.evidence[0], Evidence::Probe { note, .. }
            if note.contains("10.0.0.4:80 refused") && note.contains("10.0.0.5:80 did not accept")));
    }
}

//! A name with several addresses whose first one failed the preflight.
//!
//! The run diagnoses the first address the resolver returns. When that one is dead (no ARP
//! answer, no route, no SYN/ACK, refused) the preflight ends the run with a finding about that
//! address, whose fix used to be "correct the address in the URL". But the URL holds a name,
//! and when the name's other addresses accept connections the service is up: the fault is a
//! dead record among live ones. Clients that try the dead address first wait for their connect
//! timeout before they fall back (curl: 4 s here, each new connection), or fail when they do
//! not fall back; which clients do depends on the order their resolver returns. So after such
//! a stop, each other address (at most [`MAX_OTHERS`]) gets one connect(), and the stopping
//! finding says what they did: a live one turns the story into the dead record and its fix
//! into the name's records; none live says the service answers on none of them. A refused
//! address goes past the preflight (the probes and the load find `server_not_listening`): that
//! finding gets the same look once the run is finished. The verdict stands (the severity is
//! the failed address's); the finding's text and evidence grow.
//!
//! A certificate the client rejects (`tls_verify_failed`) is not about one address: left as is.

use std::net::SocketAddr;
use std::time::Duration;

use netdoctor_core::finding::{Evidence, Finding, FindingId};
use netdoctor_probe::{SynProbe, SynProbeConfig};
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

/// One other address and what its connect() did.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub addr: SocketAddr,
    /// Connected: the handshake time in ms.
    pub connect_ms: Option<f64>,
    pub refused: bool,
}

impl Outcome {
    fn from_probe(addr: SocketAddr, p: &SynProbe) -> Outcome {
        Outcome {
            addr,
            connect_ms: (p.answered > 0).then(|| p.median_ms.unwrap_or(0.0)),
            refused: p.answered == 0 && p.refused > 0,
        }
    }

    fn describe(&self, timeout: Duration) -> String {
        match (self.connect_ms, self.refused) {
            (Some(ms), _) => format!("{} accepted a connection in {ms:.1} ms", self.addr),
            (None, true) => format!("{} refused the connection (RST)", self.addr),
            (None, false) => format!(
                "{} did not accept a connection within {:.0} s",
                self.addr,
                timeout.as_secs_f64()
            ),
        }
    }
}

/// After a preflight that stopped the run on `failed`: connects to the name's `others` and
/// tells in the stopping finding (the report's last) what they did.
pub(crate) fn check(
    plan: &DiagnosePlan,
    host: &dyn Host,
    failed: SocketAddr,
    others: &[SocketAddr],
    report: &mut Report,
    progress: &dyn Progress,
) {
    let Some(i) = report
        .findings
        .len()
        .checked_sub(1)
        .filter(|&i| report.findings[i].id != FindingId::TlsVerifyFailed)
    else {
        return;
    };
    tell(plan, host, failed, others, report, i, progress);
}

/// After a run whose address refused every connection (`server_not_listening`, found by the
/// probes and the load, not the preflight): the same look at the name's other addresses.
pub(crate) fn check_refused(
    plan: &DiagnosePlan,
    host: &dyn Host,
    failed: SocketAddr,
    others: &[SocketAddr],
    report: &mut Report,
    progress: &dyn Progress,
) {
    if let Some(i) = report
        .findings
        .iter()
        .position(|f| f.id == FindingId::ServerNotListening)
    {
        tell(plan, host, failed, others, report, i, progress);
    }
}

/// Connects to `others` and tells in finding `i` (about `failed`) what they did; nothing when
/// the URL holds an address, not a name.
fn tell(
    plan: &DiagnosePlan,
    host: &dyn Host,
    failed: SocketAddr,
    others: &[SocketAddr],
    report: &mut Report,
    i: usize,
    progress: &dyn Progress,
) {
    let name = plan.target.host.clone();
    if name.parse::<std::net::IpAddr>().is_ok() {
        return;
    }
    let f = &mut report.findings[i];
    // The URL holds a name: its records are what to correct, not the URL.
    f.fix = f.fix.replace(IN_URL, IN_RECORDS);
    if others.is_empty() {
        return;
    }
    let timeout = plan.load.timeout.min(CONNECT_TIMEOUT);
    let tried: Vec<SocketAddr> = others.iter().copied().take(MAX_OTHERS).collect();
    progress.stage(&format!(
        "{failed} failed: trying {name}'s other address{} ({})",
        if tried.len() == 1 { "" } else { "es" },
        tried
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let cfg = SynProbeConfig {
        count: 1,
        timeout,
        ..SynProbeConfig::default()
    };
    let outcomes: Vec<Outcome> = tried
        .iter()
        .map(|a| Outcome::from_probe(*a, &host.connect_probe(*a, &cfg)))
        .collect();
    let total = others.len() + 1;
    let f = &mut report.findings[i];
    amend(f, &name, failed, total, &outcomes, timeout);
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
            },
            Outcome {
                addr: sa("10.0.0.5:80"),
                connect_ms: None,
                refused: false,
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

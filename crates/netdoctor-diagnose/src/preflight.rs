//! Preflight: before any load, what `curl -v` would show — the route to the address, the
//! neighbour entry of the next hop (ARP; neighbour discovery for IPv6), connect, the TLS
//! verification and one request — and a
//! failure that is the client's or the path's ends the run here, in about a second, naming the
//! cause, the side, the evidence and the fix. The load never runs against such a target.
//!
//! | failure | finding | side |
//! |---|---|---|
//! | no route in the namespace's table, or `connect()` → ENETUNREACH without a gateway route | `no_route` | client |
//! | `connect()` → ENETUNREACH although the table routes it via a gateway (a router said so) | `neighbour_unreachable` | network |
//! | connect unfinished after [`CONNECT_LIMIT`] with the next hop's ARP/NDP entry unanswered, or EHOSTUNREACH | `neighbour_unreachable` | network |
//! | a certificate the client refuses (untrusted issuer, another name) | `tls_verify_failed` | client |
//! | an expired or revoked certificate | `tls_verify_failed` | server |
//!
//! An HTTP/1.1 request answered with HTTP/2 frames (an h2c-only port, such as nginx's
//! `listen … http2;` without `ssl`, asked with `--http1.1` or the cleartext default) ends the
//! run with an error that says to use `--http2`: the load would only count failed requests.
//!
//! Everything else goes on to the probes and the load, which diagnose it: a refused connect
//! (`server_not_listening`), a SYN dropped while the next hop answered (a full listen
//! queue, a firewall: `syn_retransmit`), a slow or failing answer. The name was resolved (and
//! the resolver checked) just before, by [`crate::route::resolve`]. A request that succeeded is
//! the first of the one-request probes, so a healthy run pays only the route and neighbour
//! and neighbour reads (a small file each; an IPv6 neighbour is an rtnetlink dump). The
//! findings are pure functions of what was seen, tested without
//! root below; `crates/netdoctor/tests/live/preflight.rs` builds each failure in namespaces.

use crate::host::Host;
use crate::plan::DiagnosePlan;
use crate::run::Progress;
use netdoctor_core::finding::{Evidence, Finding, FindingId, Severity, Side};
use netdoctor_core::verdict::VerdictInputs;
use netdoctor_probe::{CertificateProblem, Failure, HttpProbeConfig, HttpTiming, ProbeError};
use netdoctor_report::{Check, CheckName, Report};
use netdoctor_route::neighbour::{Neighbour, NeighbourState, protocol};
use netdoctor_route::route_table::NextHop;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// How long the preflight waits for `connect()` before it looks at the neighbour table: on a
/// link that answers, ARP takes well under a millisecond, and Linux repeats an unanswered
/// solicitation after 1 s; a SYN dropped once is repeated after 1 s, so this still sees it
/// complete.
pub const CONNECT_LIMIT: Duration = Duration::from_millis(1200);

/// What the stage decided.
pub(crate) enum Preflight {
    /// Go on; the request, when the preflight made one that succeeded (the first one-request
    /// probe).
    Passed(Option<HttpTiming>),
    /// The run ends: the report holds the finding, the checks and the verdict.
    Stopped,
    /// The run cannot go on as asked: the target speaks only HTTP/2 and the request was
    /// HTTP/1.1 (`--http1.1`, or the cleartext default); the message says to use `--http2`.
    Http2Only(String),
}

/// The route toward `ip`, in words.
fn describe_route(hop: &NextHop) -> String {
    match hop {
        NextHop::Local => "local address".to_string(),
        NextHop::Direct { iface } => format!("on the link of {iface}"),
        NextHop::Gateway { gateway, iface } => format!("via {gateway} on {iface}"),
        NextHop::NoRoute => "no route".to_string(),
    }
}

/// The address whose neighbour entry decides whether the next hop answers, and the interface
/// the entry is on.
fn next_hop_ip(hop: &NextHop, target: IpAddr) -> Option<(IpAddr, &str)> {
    match hop {
        NextHop::Direct { iface } => Some((target, iface)),
        NextHop::Gateway { gateway, iface } => Some((*gateway, iface)),
        NextHop::Local | NextHop::NoRoute => None,
    }
}

/// `ip`, with `%iface` when it is an IPv6 link-local address (which names nothing without it).
fn scoped(ip: IpAddr, iface: &str) -> String {
    match ip {
        IpAddr::V6(v6) if v6.is_unicast_link_local() => format!("{v6}%{iface}"),
        _ => ip.to_string(),
    }
}

fn probe(note: impl Into<String>) -> Evidence {
    Evidence::Probe {
        probe: "preflight".to_string(),
        note: note.into(),
    }
}

/// `no_route`: the client's routing table has no way to the address.
pub fn no_route(addr: SocketAddr, evidence: &str) -> Finding {
    let ip = addr.ip();
    let mut f = Finding::new(
        FindingId::NoRoute,
        Severity::Critical,
        Side::Client,
        format!("no route to {ip}: connect() failed before any packet left this host"),
    );
    f.explanation = format!(
        "The routing table of the network namespace the run is in has no route to {ip} (or a \
         reject route), so the kernel refuses the connection at once with \"network is \
         unreachable\" (ENETUNREACH). No packet reached the network and the server never saw \
         a request: it is not the server's doing. The load was not run."
    );
    f.fix = format!(
        "Add a route toward {ip} (`ip route add NETWORK via GATEWAY`, or a default route), or \
         correct the address in the URL; `ip route get {ip}` shows what the kernel would choose."
    );
    f.impact.affected_fraction = Some(1.0);
    f.evidence.push(probe(evidence));
    f
}

/// `neighbour_unreachable`: the next hop on the link never answered ARP (IPv4) or neighbour
/// discovery (IPv6).
pub fn neighbour_unreachable(
    addr: SocketAddr,
    hop: &NextHop,
    entry: Option<&Neighbour>,
    evidence: &str,
) -> Finding {
    let ip = addr.ip();
    let (nh, iface) = match hop {
        NextHop::Gateway { gateway, iface } => (*gateway, iface.as_str()),
        NextHop::Direct { iface } => (ip, iface.as_str()),
        _ => (ip, "?"),
    };
    let via_gateway = nh != ip;
    let answered = entry.is_some_and(|n| n.state != NeighbourState::Unanswered);
    let v6 = nh.to_canonical().is_ipv6();
    let arp = protocol(nh);
    let nh_text = scoped(nh, iface);
    let summary = if answered {
        format!("{ip} is unreachable: a router on the way reported \"host unreachable\"")
    } else if via_gateway {
        format!("the gateway {nh_text} on {iface} does not answer {arp}: {ip} cannot be reached")
    } else {
        format!("{ip} on the link of {iface} does not answer {arp}: nobody holds that address")
    };
    let mut f = Finding::new(
        FindingId::NeighbourUnreachable,
        Severity::Critical,
        Side::Network,
        summary,
    );
    f.explanation = if answered {
        format!(
            "The next hop {nh_text} answered {arp}, but the connection to {ip} failed with \"no \
             route to host\" (EHOSTUNREACH): a router further on could not reach the host (its \
             own {arp} went unanswered, or it filters the address). The server never saw a \
             request. The load was not run."
        )
    } else {
        format!(
            "{nh_text} is on a directly connected network of {iface}, but no device answered \
             the {} for it: the neighbour entry stays INCOMPLETE (FAILED once the kernel gives \
             up), so the SYN could not even be sent. The host is down or absent, the \
             address is wrong, or the link (cable, VLAN, bridge) between is broken. The server \
             never saw a request: it is not the server's doing. The load was not run.",
            if v6 {
                "neighbour solicitation (NDP)"
            } else {
                "ARP request"
            }
        )
    };
    f.fix = if answered {
        format!(
            "Check that {ip} is up and reachable from the last router (`netdoctor trace`, or \
             `traceroute -T` toward it), or correct the address in the URL."
        )
    } else if v6 {
        format!(
            "Check that a host owns {nh} and is up (`ip -6 neigh show {nh} dev {iface}`, \
             `ping -6 -c 1 -I {iface} {nh}`), the link and VLAN toward it, or correct the \
             address in the URL."
        )
    } else {
        format!(
            "Check that a host owns {nh} and is up (`ip neigh show {nh}`, `arping -I {iface} \
             {nh}`), the link and VLAN toward it, or correct the address in the URL."
        )
    };
    f.impact.affected_fraction = Some(1.0);
    f.evidence.push(probe(evidence));
    if let Some(n) = entry {
        let state = match n.state {
            NeighbourState::Resolved => "resolved",
            NeighbourState::Permanent => "permanent",
            NeighbourState::Unanswered if v6 => "INCOMPLETE/FAILED (no neighbour advertisement)",
            NeighbourState::Unanswered => "INCOMPLETE/FAILED (no ARP reply)",
        };
        f.evidence.push(probe(format!(
            "neighbour {} on {}: {state}, link-layer address {}",
            scoped(n.ip, &n.iface),
            n.iface,
            n.lladdr
        )));
    }
    f
}

/// `neighbour_unreachable` in its router form: this namespace routes `addr` through a gateway,
/// yet connect() failed with "network is unreachable" (ENETUNREACH): the kernel does not say
/// that with a route in hand, so a router on the way answered ICMP Destination Unreachable
/// (no route). The path's, not the client's `no_route`. (An IPv6 router that does not forward
/// answers so for every address it has no route to.)
pub fn router_no_route(addr: SocketAddr, hop: &NextHop, evidence: &str) -> Finding {
    let ip = addr.ip();
    let (gw, iface) = match hop {
        NextHop::Gateway { gateway, iface } => (scoped(*gateway, iface), iface.as_str()),
        _ => (ip.to_string(), "?"),
    };
    let mut f = Finding::new(
        FindingId::NeighbourUnreachable,
        Severity::Critical,
        Side::Network,
        format!("{ip} is unreachable: a router on the way reported \"network unreachable\""),
    );
    f.explanation = format!(
        "This namespace routes {ip} via {gw} on {iface}, but the connection failed with \
         \"network is unreachable\" (ENETUNREACH): a router on the way (the gateway, or one \
         behind it) has no route to {ip} and said so with ICMP Destination Unreachable. Nothing \
         is missing on this host, and the server never saw a request. The load was not run."
    );
    f.fix = format!(
        "Check the routes toward {ip} on the routers behind {gw} (`netdoctor trace {ip}` \
         names the hop that answers), or correct the address in the URL."
    );
    f.impact.affected_fraction = Some(1.0);
    f.evidence.push(probe(evidence));
    f.evidence.push(probe(format!(
        "route: via {gw} on {iface} in this namespace"
    )));
    f
}

/// `tls_verify_failed`: the certificate did not verify; the side depends on why.
pub fn tls_verify_failed(
    addr: SocketAddr,
    server_name: &str,
    problem: CertificateProblem,
    evidence: &str,
) -> Finding {
    let server_side = matches!(
        problem,
        CertificateProblem::Expired | CertificateProblem::Revoked
    );
    let (side, what) = match problem {
        CertificateProblem::Untrusted => (
            Side::Client,
            "its issuer is not trusted here (self-signed or a private CA)",
        ),
        CertificateProblem::WrongName => {
            (Side::Client, "it does not name the host the URL asks for")
        }
        CertificateProblem::Expired => (Side::Server, "it is out of its validity period"),
        CertificateProblem::Revoked => (Side::Server, "it is revoked"),
        CertificateProblem::Other => (Side::Client, "it does not verify"),
    };
    let mut f = Finding::new(
        FindingId::TlsVerifyFailed,
        Severity::Critical,
        side,
        format!("the server's certificate for {server_name} does not verify: {what}"),
    );
    f.explanation = format!(
        "The TLS handshake with {addr} was ended by this client while it verified the \
         certificate, before any HTTP request: {what}. {} The load was not run: every request \
         would have failed the same way, and the server would have been blamed for aborted \
         handshakes.",
        if server_side {
            "The server presents a certificate that no client should accept."
        } else {
            "The server answered; it is this client that does not accept the certificate."
        }
    );
    f.fix = match problem {
        CertificateProblem::Untrusted | CertificateProblem::Other => {
            "If the certificate is meant to be self-signed or from a private CA, pass -k \
             (--insecure) to skip verification, or add the CA to the system's trust store \
             (update-ca-certificates); otherwise have the server present a chain from a \
             public CA."
                .to_string()
        }
        CertificateProblem::WrongName => format!(
            "Use a name the certificate lists in the URL instead of {server_name}, or pass -k \
             (--insecure) to diagnose anyway; `openssl s_client -connect {addr}` shows the \
             names."
        ),
        CertificateProblem::Expired | CertificateProblem::Revoked => {
            "Renew or replace the server's certificate; pass -k (--insecure) to diagnose the \
             rest meanwhile."
                .to_string()
        }
    };
    f.impact.affected_fraction = Some(1.0);
    f.evidence.push(probe(evidence));
    f
}

/// Runs the stage; on a client or path failure it completes `report` and says `Stopped`.
pub(crate) fn run(
    plan: &DiagnosePlan,
    host: &dyn Host,
    addr: SocketAddr,
    report: &mut Report,
    progress: &dyn Progress,
    started: Instant,
) -> Preflight {
    let t = &plan.target;
    progress.stage(&format!(
        "preflight {addr}: route, neighbour, connect{}",
        match (t.is_http(), t.tls.is_some()) {
            (true, true) => ", TLS and one request",
            (true, false) => " and one request",
            _ => "",
        }
    ));
    let mut notes = Vec::new();
    // 1. The route.
    let hop = match host.next_hop(addr.ip()) {
        Ok(Some(NextHop::NoRoute)) => {
            let f = no_route(
                addr,
                &format!(
                    "route: the main table of this network namespace has no route to {}",
                    addr.ip()
                ),
            );
            return stop(report, f, started);
        }
        Ok(Some(hop)) => {
            notes.push(format!("route: {}", describe_route(&hop)));
            Some(hop)
        }
        Ok(None) => {
            notes.push("route: not read (IPv6 is off in this namespace)".to_string());
            None
        }
        Err(e) => {
            notes.push(format!("route: not read ({e})"));
            None
        }
    };
    // 2. Connect, TLS, one request (a tcp:// target: its SYN and connect probes are the
    // connect).
    if !t.is_http() {
        notes.push("connect: timed by the SYN and connect() probes (tcp:// target)".into());
        report
            .checks
            .push(Check::ok_with(CheckName::Preflight, notes.join("; ")));
        return Preflight::Passed(None);
    }
    let cfg = HttpProbeConfig {
        host: t.host_header.clone(),
        path: t.path.clone(),
        timeout: plan.load.timeout,
        connect_timeout: Some(CONNECT_LIMIT),
        tls: t.tls.clone(),
        protocol: plan.load.protocol,
    };
    let err = match host.http_probe(addr, &cfg) {
        Ok(timing) => {
            notes.push(format!("connect {:.1} ms", timing.connect_ms));
            if let Some(ms) = timing.tls_ms {
                notes.push(format!(
                    "TLS {} in {ms:.1} ms",
                    if t.tls.as_ref().is_some_and(|o| o.insecure) {
                        "unverified (-k)"
                    } else {
                        "verified"
                    }
                ));
            }
            notes.push(format!(
                "GET {} → {} in {:.1} ms",
                cfg.path, timing.status, timing.total_ms
            ));
            report
                .checks
                .push(Check::ok_with(CheckName::Preflight, notes.join("; ")));
            return Preflight::Passed(Some(timing));
        }
        Err(e) => e,
    };
    let said = error_chain(&err);
    match err.failure() {
        Failure::NoRoute => {
            let f = match &hop {
                Some(gw @ NextHop::Gateway { .. }) => router_no_route(addr, gw, &said),
                _ => no_route(addr, &said),
            };
            return stop(report, f, started);
        }
        Failure::Certificate(problem) => {
            let name = t.tls.as_ref().map_or(t.host.as_str(), |o| &o.server_name);
            return stop(
                report,
                tls_verify_failed(addr, name, problem, &said),
                started,
            );
        }
        Failure::HostUnreachable | Failure::ConnectTimeout => {
            let nh = hop.as_ref().and_then(|h| next_hop_ip(h, addr.ip()));
            let entry = match nh.map(|(ip, iface)| (ip, host.neighbour(ip, Some(iface)))) {
                Some((_, Ok(entry))) => entry,
                Some((ip, Err(e))) => {
                    notes.push(format!("neighbour {ip}: not read ({e})"));
                    None
                }
                None => None,
            };
            let unanswered = entry
                .as_ref()
                .is_some_and(|n| n.state == NeighbourState::Unanswered);
            if let Some(hop) = &hop
                && (unanswered || err.failure() == Failure::HostUnreachable)
            {
                let f = neighbour_unreachable(addr, hop, entry.as_ref(), &said);
                return stop(report, f, started);
            }
            notes.push(format!(
                "{said}{}: not the client's or the link's; the probes and the load go on",
                match &entry {
                    Some(n) => format!(
                        " (the next hop {} answered {})",
                        scoped(n.ip, &n.iface),
                        n.protocol()
                    ),
                    None => String::new(),
                }
            ));
        }
        // Not a fault of the target's or the path's: the run asked for the wrong protocol.
        Failure::Http2Only => return Preflight::Http2Only(said),
        Failure::Refused | Failure::Resolve | Failure::Other => {
            notes.push(format!(
                "{said}: the route and the next hop are fine; the probes and the load go on \
                 to find where it failed"
            ));
        }
    }
    report
        .checks
        .push(Check::ok_with(CheckName::Preflight, notes.join("; ")));
    Preflight::Passed(None)
}

/// Ends the run with `f`: the preflight check failed, every later stage skipped with the
/// reason, the verdict decided. `started`: when the run began.
fn stop(report: &mut Report, f: Finding, started: Instant) -> Preflight {
    let why = format!("preflight failed: {}", f.summary);
    report
        .checks
        .push(Check::failed(CheckName::Preflight, f.summary.clone()));
    for stage in [
        CheckName::SynProbe,
        CheckName::HttpProbe,
        CheckName::Trace,
        CheckName::Load,
        CheckName::Capture,
        CheckName::Counters,
    ] {
        report.checks.push(Check::skipped(stage, why.clone()));
    }
    report.findings.push(f);
    report.decide(&VerdictInputs::default());
    report.elapsed_s = started.elapsed().as_secs_f64();
    Preflight::Stopped
}

/// `op: cause: cause`, each cause once (the orchestration's formatter).
fn error_chain(e: &ProbeError) -> String {
    crate::run::error_chain(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> SocketAddr {
        "10.214.0.99:8080".parse().unwrap()
    }

    #[test]
    fn no_route_is_the_clients_and_names_the_route() {
        let f = no_route(addr(), "route: none");
        assert_eq!(
            (f.id, f.side, f.severity),
            (FindingId::NoRoute, Side::Client, Severity::Critical)
        );
        assert!(f.fix.contains("ip route get 10.214.0.99"), "{}", f.fix);
    }

    #[test]
    fn an_unanswered_neighbour_is_the_networks_and_a_router_is_told_apart() {
        let hop = NextHop::Direct {
            iface: "h-cli".into(),
        };
        let entry = Neighbour {
            ip: "10.214.0.99".parse().unwrap(),
            state: NeighbourState::Unanswered,
            lladdr: "00:00:00:00:00:00".into(),
            iface: "h-cli".into(),
        };
        let f = neighbour_unreachable(addr(), &hop, Some(&entry), "connect: timed out");
        assert_eq!((f.side, f.severity), (Side::Network, Severity::Critical));
        assert!(f.summary.contains("does not answer ARP"), "{}", f.summary);
        assert_eq!(f.evidence.len(), 2);
        // Via a gateway that answered ARP, EHOSTUNREACH came from a router.
        let gw = NextHop::Gateway {
            gateway: "10.214.0.1".parse().unwrap(),
            iface: "h-cli".into(),
        };
        let answered = Neighbour {
            ip: "10.214.0.1".parse().unwrap(),
            state: NeighbourState::Resolved,
            ..entry
        };
        let f = neighbour_unreachable(addr(), &gw, Some(&answered), "no route to host");
        assert!(f.summary.contains("a router on the way"), "{}", f.summary);
    }

    /// The IPv6 twin: the same finding, in neighbour discovery's words, and a link-local
    /// gateway named with its interface.
    #[test]
    fn an_unanswered_ipv6_neighbour_is_named_in_ndp_words() {
        let target: SocketAddr = "[fd00:214::99]:8080".parse().unwrap();
        let hop = NextHop::Direct {
            iface: "h-cli".into(),
        };
        let entry = Neighbour {
            ip: target.ip(),
            state: NeighbourState::Unanswered,
            lladdr: "00:00:00:00:00:00".into(),
            iface: "h-cli".into(),
        };
        let f = neighbour_unreachable(target, &hop, Some(&entry), "connect: timed out");
        assert_eq!((f.side, f.severity), (Side::Network, Severity::Critical));
        assert!(
            f.summary.contains("does not answer neighbour discovery"),
            "{}",
            f.summary
        );
        assert!(!f.summary.contains("ARP"), "{}", f.summary);
        assert!(f.fix.contains("ip -6 neigh show fd00:214::99"), "{}", f.fix);
        let Evidence::Probe { note, .. } = &f.evidence[1] else {
            panic!("{:?}", f.evidence)
        };
        assert!(note.contains("no neighbour advertisement"), "{note}");
        let gw = NextHop::Gateway {
            gateway: "fe80::1".parse().unwrap(),
            iface: "cli-r1".into(),
        };
        let f = neighbour_unreachable(target, &gw, None, "connect: timed out");
        assert!(
            f.summary.contains("gateway fe80::1%cli-r1"),
            "{}",
            f.summary
        );
    }

    /// ENETUNREACH with a route via a gateway in hand came from a router: the network's.
    #[test]
    fn a_routers_no_route_is_the_networks() {
        let gw = NextHop::Gateway {
            gateway: "fd00:214::1".parse().unwrap(),
            iface: "h-cli".into(),
        };
        let target: SocketAddr = "[fd00:215::99]:8080".parse().unwrap();
        let f = router_no_route(target, &gw, "connect: network is unreachable");
        assert_eq!(
            (f.id, f.side, f.severity),
            (
                FindingId::NeighbourUnreachable,
                Side::Network,
                Severity::Critical
            )
        );
        assert!(f.summary.contains("a router on the way"), "{}", f.summary);
        assert!(
            f.explanation.contains("via fd00:214::1 on h-cli"),
            "{}",
            f.explanation
        );
    }

    #[test]
    fn certificate_problems_name_their_side_and_fix() {
        let f = tls_verify_failed(addr(), "10.214.0.99", CertificateProblem::Untrusted, "x");
        assert_eq!((f.side, f.severity), (Side::Client, Severity::Critical));
        assert!(f.fix.contains("-k"), "{}", f.fix);
        let f = tls_verify_failed(addr(), "api.test", CertificateProblem::Expired, "x");
        assert_eq!(f.side, Side::Server);
        assert!(f.fix.starts_with("Renew"), "{}", f.fix);
        let f = tls_verify_failed(addr(), "api.test", CertificateProblem::WrongName, "x");
        assert_eq!(f.side, Side::Client);
        assert!(f.fix.contains("api.test"), "{}", f.fix);
    }
}

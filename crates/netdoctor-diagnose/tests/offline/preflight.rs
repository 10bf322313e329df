//! The preflight stage on a recorded host: which failures end the run before any load (and with
//! which finding, side and verdict), and which go on to the probes and the load. The real
//! failures are built in namespaces by `crates/netdoctor/tests/live/preflight.rs`.

use netdoctor_core::{FindingId, Side, Verdict};
use netdoctor_diagnose::fake::FakeHost;
use netdoctor_diagnose::{DiagnosePlan, Silent, TargetSpec, run};
use netdoctor_load::LoadResult;
use netdoctor_probe::{CertificateProblem, ProbeError};
use netdoctor_report::{CheckStatus, Report};
use netdoctor_route::neighbour::{Neighbour, NeighbourState};
use netdoctor_route::route_table::NextHop;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

const ADDR: &str = "10.214.0.99:8080";

fn plan(addr: SocketAddr) -> DiagnosePlan {
    DiagnosePlan::new(TargetSpec {
        input: format!("http://{addr}/"),
        host: addr.ip().to_string(),
        port: addr.port(),
        path: "/".into(),
        host_header: addr.to_string(),
        tls: None,
        scheme: netdoctor_load::target::Scheme::Http,
    })
}

fn host() -> FakeHost {
    let addr: SocketAddr = ADDR.parse().unwrap();
    let load = LoadResult {
        connections: 4,
        threads: 1,
        duration_s: 1.0,
        requests: 100,
        requests_per_s: 100.0,
        bytes_read: 0,
        transfer_per_s: 0.0,
        latency_ms: Default::default(),
        status: [(200, 100)].into_iter().collect(),
        errors: Default::default(),
        connects: 4,
        first_error: None,
        rate: None,
        latency_histogram: None,
        latency_curve: None,
        timeline: None,
        protocol: None,
        h2: None,
        cpu_wait: None,
        spin: None,
    };
    let mut h = FakeHost::answering(addr, load);
    h.next_hop = Ok(Some(NextHop::Direct {
        iface: "h-cli".into(),
    }));
    h
}

fn diagnose(h: &FakeHost) -> Report {
    run(&plan(h.addr), h, &Silent, &AtomicBool::new(false)).unwrap()
}

fn check(r: &Report, name: &str) -> (CheckStatus, String) {
    let c = r
        .checks
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("no check {name}: {:?}", r.checks));
    (c.status, c.reason.clone().unwrap_or_default())
}

/// The run stopped at the preflight: one finding, problem, every later stage skipped, no load.
fn assert_stopped(h: &FakeHost, r: &Report, id: FindingId, side: Side) {
    assert_eq!(r.findings.len(), 1, "{:?}", r.findings);
    let f = &r.findings[0];
    assert_eq!((f.id, f.side), (id, side), "{f:?}");
    assert_eq!(f.severity, netdoctor_core::Severity::Critical);
    assert_eq!(r.verdict, Verdict::Problem);
    assert_eq!(check(r, "preflight").0, CheckStatus::Failed);
    for stage in ["syn_probe", "http_probe", "load", "capture", "trace"] {
        let (status, reason) = check(r, stage);
        assert_eq!(status, CheckStatus::Skipped, "{stage}");
        assert!(
            reason.starts_with("preflight failed: "),
            "{stage}: {reason}"
        );
    }
    assert!(r.measurements.load.is_none());
    // One HTTP probe (the preflight's), no SYN probe, no load.
    assert!(h.sent.load(Ordering::Relaxed) <= 1, "{:?}", h.sent);
}

#[test]
fn no_route_in_the_table_stops_before_anything_is_sent() {
    let mut h = host();
    h.next_hop = Ok(Some(NextHop::NoRoute));
    let r = diagnose(&h);
    assert_stopped(&h, &r, FindingId::NoRoute, Side::Client);
    assert_eq!(h.sent.load(Ordering::Relaxed), 0);
}

#[test]
fn enetunreach_from_connect_is_no_route() {
    let mut h = host();
    h.http_error = Some(|addr| ProbeError::Io {
        op: "connect",
        addr,
        source: std::io::Error::from_raw_os_error(101 /* ENETUNREACH */),
    });
    let r = diagnose(&h);
    assert_stopped(&h, &r, FindingId::NoRoute, Side::Client);
    assert!(
        r.findings[0]
            .evidence
            .iter()
            .any(|e| format!("{e:?}").contains("unreachable")),
        "{:?}",
        r.findings[0].evidence
    );
}

/// The same errno with a route via a gateway in hand: a router said it, the path's.
#[test]
fn enetunreach_with_a_gateway_route_is_a_routers_not_the_clients() {
    let mut h = host();
    h.next_hop = Ok(Some(NextHop::Gateway {
        gateway: "10.214.0.1".parse().unwrap(),
        iface: "h-cli".into(),
    }));
    h.http_error = Some(|addr| ProbeError::Io {
        op: "connect",
        addr,
        source: std::io::Error::from_raw_os_error(101 /* ENETUNREACH */),
    });
    let r = diagnose(&h);
    assert_stopped(&h, &r, FindingId::NeighbourUnreachable, Side::Network);
    assert!(
        r.findings[0].summary.contains("a router on the way"),
        "{}",
        r.findings[0].summary
    );
}

fn unanswered(state: NeighbourState) -> Neighbour {
    Neighbour {
        ip: "10.214.0.99".parse().unwrap(),
        state,
        lladdr: "00:00:00:00:00:00".into(),
        iface: "h-cli".into(),
    }
}

#[test]
fn a_connect_timeout_with_an_unanswered_neighbour_stops_and_a_dropped_syn_does_not() {
    let timeout = |addr| ProbeError::Timeout {
        op: "connect",
        addr,
    };
    let mut h = host();
    h.http_error = Some(timeout);
    h.neighbour = Some(unanswered(NeighbourState::Unanswered));
    let r = diagnose(&h);
    assert_stopped(&h, &r, FindingId::NeighbourUnreachable, Side::Network);

    // The neighbour answered ARP: a dropped SYN (a full queue, a firewall) is for the probes
    // and the load to diagnose, not the preflight.
    let mut h = host();
    h.http_error = Some(timeout);
    h.neighbour = Some(unanswered(NeighbourState::Resolved));
    let r = diagnose(&h);
    let (status, reason) = check(&r, "preflight");
    assert_eq!(status, CheckStatus::Ok);
    assert!(reason.contains("answered ARP"), "{reason}");
    assert_eq!(check(&r, "load").0, CheckStatus::Ok);
    assert!(r.measurements.load.is_some());
}

#[test]
fn an_untrusted_certificate_is_the_clients_and_an_expired_one_the_servers() {
    for (problem, side) in [
        (CertificateProblem::Untrusted, Side::Client),
        (CertificateProblem::Expired, Side::Server),
    ] {
        let mut h = host();
        h.http_error = Some(match problem {
            CertificateProblem::Untrusted => |addr| ProbeError::Tls {
                addr,
                msg: "invalid peer certificate: UnknownIssuer".into(),
                certificate: Some(CertificateProblem::Untrusted),
            },
            _ => |addr| ProbeError::Tls {
                addr,
                msg: "invalid peer certificate: Expired".into(),
                certificate: Some(CertificateProblem::Expired),
            },
        });
        let r = diagnose(&h);
        assert_stopped(&h, &r, FindingId::TlsVerifyFailed, side);
    }
}

#[test]
fn a_healthy_target_passes_and_its_request_is_the_first_probe() {
    let h = host();
    let r = diagnose(&h);
    let (status, reason) = check(&r, "preflight");
    assert_eq!(status, CheckStatus::Ok);
    assert!(
        reason.starts_with("route: on the link of h-cli; connect"),
        "{reason}"
    );
    assert!(reason.contains("GET / → 200"), "{reason}");
    // SYN probe, three HTTP probes (the preflight's among them), the load.
    assert_eq!(h.sent.load(Ordering::Relaxed), 5);
}

#[test]
fn a_refused_connect_goes_on_to_server_not_listening() {
    let mut h = host();
    h.http = None; // refused
    let r = diagnose(&h);
    assert_eq!(check(&r, "preflight").0, CheckStatus::Ok);
    assert!(
        r.findings
            .iter()
            .any(|f| f.id == FindingId::ServerNotListening),
        "{:?}",
        r.findings
    );
}

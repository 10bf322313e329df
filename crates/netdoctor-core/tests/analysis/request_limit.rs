//! A server that ends each kept connection after a fixed number of requests. nginx with
//! `keepalive_requests 5` over +37 ms (`testdata/captures/keepalive-requests5.pcap.gz`, curl
//! asking 30 URLs on one kept connection; `tls-short/run.sh ka`) closed every connection after
//! its 5th answer, and one request in 5 paid a new handshake: told healthy, since the
//! connections carried more than the two requests `short_connections` allowed. The capture is
//! at the client, where curl's FIN (it read `Connection: close`) comes first: the server's FIN
//! does not acknowledge it, so the server had closed on its own.

use crate::common::{analyze, one, probe};
use netdoctor_core::detect::short_connections::LIMIT_EVIDENCE;
use netdoctor_core::finding::{FindingId, Severity, Side};

#[test]
fn a_server_closing_after_five_requests_is_its_request_limit() {
    let (an, _) = analyze("keepalive-requests5.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.side, Side::Server);
    assert_eq!(f.severity, Severity::Warning, "{}", f.summary);
    assert!(
        f.summary
            .starts_with("The server ends each kept connection after 5 requests: 6 of 6"),
        "{}",
        f.summary
    );
    assert_eq!(f.impact.affected_fraction, Some(0.2));
    assert!(f.fix.contains("keepalive_requests"), "{}", f.fix);
    assert_eq!(
        probe(f, LIMIT_EVIDENCE),
        Some(
            "6 of 6 connections the server closed right after an answer carried exactly 5 requests"
        )
    );
}

/// The look-alikes keep their stories: a server that closes after every answer
/// (`keepalive_timeout 0`: ≤ 2 requests a connection), one that closes after an idle time,
/// and kept connections the client ends (TLS, wrk) are not a request limit.
#[test]
fn closes_after_each_answer_or_after_idle_are_not_a_request_limit() {
    for name in [
        "idle-server-close.pcap.gz",
        "idle-timeout.pcap.gz",
        "tls-healthy.pcap",
        "lab-healthy.pcap",
    ] {
        let (an, _) = analyze(name);
        for f in an
            .findings
            .iter()
            .filter(|f| f.id == FindingId::ShortConnections)
        {
            assert!(
                !f.summary.contains("ends each kept connection"),
                "{name}: {}",
                f.summary
            );
        }
    }
}

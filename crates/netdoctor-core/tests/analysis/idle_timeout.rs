//! A server idle (keep-alive) timeout shorter than the client's wait before it reuses a
//! connection: the server's FIN comes a steady 1 s after each connection's last packet, and
//! the client opens a new connection for the next request. It was told as a client that does
//! not reuse connections. Real traffic between two namespaces (`testdata/captures/make-idle.sh`,
//! nginx 1.22 and a pooled Python client), captured at the client:
//! - `idle-timeout.pcap.gz`: nginx `keepalive_timeout 1s`, each connection reused after 1.5 s;
//! - `idle-lb-reset.pcap.gz`: the same client, a server that resets a connection idle for 1 s;
//! - `idle-midway.pcap.gz`: idle-timeout's capture without its first 60 packets;
//! - look-alikes: `idle-server-close.pcap.gz` (nginx `keepalive_timeout 0`: `Connection: close`
//!   and a FIN right after each answer), `idle-client-close.pcap.gz` (the client closes each
//!   connection after its answer), `idle-reuse-ok.pcap.gz` (reused within 0.3 s: kept).

use crate::common::{analyze, findings, one, probe};
use netdoctor_core::detect::short_connections::IDLE_EVIDENCE;
use netdoctor_core::finding::{Evidence, Finding, FindingId, Side};

/// The story of a server idle timeout of about 1 s, FIN or reset.
fn told_as_idle_timeout(f: &Finding, reset: bool) {
    assert_eq!(f.side, Side::Server, "{}", f.summary);
    assert!(f.summary.contains("after 1.00 s idle"), "{}", f.summary);
    assert!(
        f.summary.contains("shorter than the client's wait"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("the client closed"), "{}", f.summary);
    // Both knobs, with the measured value.
    assert!(f.fix.contains("now about 1.00 s"), "{}", f.fix);
    assert!(
        f.fix.contains("client's pool idle timeout below 1.00 s"),
        "{}",
        f.fix
    );
    assert!(
        !f.explanation.contains("closes after each response"),
        "{}",
        f.explanation
    );
    assert_eq!(f.fix.contains("load balancer"), reset, "{}", f.fix);
    assert_eq!(f.summary.contains("reset"), reset, "{}", f.summary);
    let note = probe(f, IDLE_EVIDENCE).unwrap_or_else(|| panic!("{:#?}", f.evidence));
    assert!(note.contains("1.00 s idle"), "{note}");
    // Every example shows its close and the silence before it.
    let packets: Vec<&str> = f
        .evidence
        .iter()
        .filter_map(|e| match e {
            Evidence::Packets { note, .. } => Some(note.as_str()),
            _ => None,
        })
        .collect();
    assert!(!packets.is_empty());
    for n in packets {
        assert!(n.contains("s after the connection's last packet"), "{n}");
        assert!(n.contains(if reset { "(RST)" } else { "(FIN)" }), "{n}");
    }
}

#[test]
fn a_server_idle_timeout_shorter_than_the_clients_reuse_gap_is_the_servers_setting() {
    let (an, _) = analyze("idle-timeout.pcap.gz");
    told_as_idle_timeout(one(&an, FindingId::ShortConnections), false);
}

#[test]
fn idle_connections_reset_after_a_steady_time_are_an_idle_timeout_too() {
    let (an, _) = analyze("idle-lb-reset.pcap.gz");
    told_as_idle_timeout(one(&an, FindingId::ShortConnections), true);
}

#[test]
fn a_capture_that_starts_mid_way_tells_the_same_from_the_connections_it_saw_open() {
    let (an, _) = analyze("idle-midway.pcap.gz");
    told_as_idle_timeout(one(&an, FindingId::ShortConnections), false);
}

#[test]
fn a_server_that_closes_after_each_answer_is_not_an_idle_timeout() {
    let (an, _) = analyze("idle-server-close.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.side, Side::Server, "{}", f.summary);
    assert!(
        f.summary.contains("the server closed 10 of them first"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("idle"), "{}", f.summary);
    assert!(probe(f, IDLE_EVIDENCE).is_none(), "{:#?}", f.evidence);
    assert!(f.fix.contains("Connection: close"), "{}", f.fix);
}

#[test]
fn a_client_that_closes_its_connections_is_still_the_clients() {
    let (an, _) = analyze("idle-client-close.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.side, Side::Client, "{}", f.summary);
    assert!(
        f.summary.contains("the client closed 10 of them first"),
        "{}",
        f.summary
    );
    assert!(probe(f, IDLE_EVIDENCE).is_none(), "{:#?}", f.evidence);
}

#[test]
fn a_client_that_reuses_within_the_servers_timeout_gets_no_finding() {
    let (an, _) = analyze("idle-reuse-ok.pcap.gz");
    assert!(
        findings(&an, FindingId::ShortConnections).is_empty(),
        "{:#?}",
        an.findings
    );
    assert!(an.exchanges.count >= 30, "{:?}", an.exchanges);
}

//! `short_connections` times the setup to the client's ACK of the SYN/ACK; what the client
//! does after it before writing its request is its own wait, said apart and never charged to
//! the setup (it was: a client that connected, then spent 16 ms before writing, was told as
//! 16 ms of setup, a warning on the server's side). Real traffic between two namespaces
//! (`testdata/captures/make-trust.sh`), captured at the client:
//! - `client-think.pcap.gz`: the client waits 16 ms after connecting, the server answers at
//!   once and closes;
//! - `slow-answer.pcap.gz`: the client writes at once, the server waits 16 ms before answering;
//! - `slow-handshake.pcap.gz`: the client writes at once, the SYN/ACK waits in a full queue on
//!   the server's egress (the path's setup cost);
//! - `short-connections.pcap` (the healthy case: a client that writes at once), and
//!   `tls-healthy.pcap` (TLS: its ClientHello is the first request byte).

use crate::common;

use common::{analyze, findings, one};
use netdoctor_core::finding::{Evidence, FindingId, Severity};

const THINK: &str = "the client then waited";

fn think_notes(f: &netdoctor_core::finding::Finding) -> usize {
    f.evidence
        .iter()
        .filter(
            |e| matches!(e, Evidence::Packets { note, .. } if note.contains("client's own wait")),
        )
        .count()
}

#[test]
fn the_clients_own_wait_is_not_setup() {
    let (an, _) = analyze("client-think.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    // The handshake on a veth is well under a millisecond; the 16 ms are the client's.
    let setup = f.impact.added_latency_ms.unwrap();
    assert!(setup < 1.0, "{setup}: {}", f.summary);
    assert_eq!(f.severity, Severity::Info, "{}", f.summary);
    assert!(f.summary.contains(THINK), "{}", f.summary);
    let waited: f64 = f
        .summary
        .split(THINK)
        .nth(1)
        .unwrap()
        .trim()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((14.0..40.0).contains(&waited), "{}", f.summary);
    assert!(
        f.explanation.contains("client application's own"),
        "{}",
        f.explanation
    );
    assert!(think_notes(f) > 0, "{:#?}", f.evidence);
    // Nothing else is made of it: the requests themselves were answered at once.
    assert!(
        findings(&an, FindingId::SlowServerProcessing).is_empty(),
        "{:#?}",
        an.findings
    );
}

#[test]
fn a_slow_server_or_a_slow_handshake_is_not_the_clients_wait() {
    // The server's 16 ms stay the server's (slow_server_processing), not the client's.
    let (an, _) = analyze("slow-answer.pcap.gz");
    assert_eq!(
        an.findings[0].id,
        FindingId::SlowServerProcessing,
        "{:#?}",
        an.findings
    );
    let f = one(&an, FindingId::ShortConnections);
    assert!(f.impact.added_latency_ms.unwrap() < 1.0, "{}", f.summary);
    // A SYN/ACK that waited in a queue on the path: the setup is the handshake, told in full.
    let (an, _) = analyze("slow-handshake.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    let setup = f.impact.added_latency_ms.unwrap();
    let rtt = an.exchanges.rtt_ms.unwrap_or_default();
    assert!(
        setup >= 5.0 && setup >= 0.8 * rtt,
        "{setup} vs rtt {rtt}: {}",
        f.summary
    );
    assert!(!f.summary.contains(THINK), "{}", f.summary);
    // An example whose client took a few ms of its own (the python client's first
    // connections) says so in its note, beside the handshake told in full.
    for e in &f.evidence {
        if let Evidence::Packets { note, .. } = e
            && note.contains("client's own wait")
        {
            let ack_ms: f64 = note
                .split("the handshake ACK ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("{note}"));
            assert!(ack_ms >= 5.0, "{note}");
        }
    }
}

#[test]
fn clients_that_write_at_once_are_told_as_before() {
    // Healthy short connections: a client that writes at once has no wait to name.
    let (an, _) = analyze("short-connections.pcap");
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.severity, Severity::Info);
    assert!(!f.summary.contains(THINK), "{}", f.summary);
    // TLS: the ClientHello follows the handshake ACK at once; no wait, no finding invented.
    let (an, _) = analyze("tls-healthy.pcap");
    assert!(
        findings(&an, FindingId::ShortConnections)
            .iter()
            .all(|f| !f.summary.contains(THINK)),
        "{:#?}",
        an.findings
    );
}

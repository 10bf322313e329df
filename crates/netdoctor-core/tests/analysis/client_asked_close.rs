//! Who asked for the close. A capture where the client's requests carry `Connection: close`
//! and the server's FIN follows each answer was told "the server closes after each response"
//! (side server). Real traffic between two namespaces (`testdata/captures/make-idle.sh`,
//! nginx with keep-alive on, a Python client), captured at the client:
//! - `idle-conn-close.pcap.gz`: HTTP/1.1 requests with `Connection: close`: side client;
//! - `idle-http10.pcap.gz`: HTTP/1.0 requests without keep-alive: side client;
//! - `idle-conn-close-snap.pcap.gz`: the first one cut to 90 bytes a packet (the header ends
//!   before its `Connection:` line): still the server, saying the capture cannot tell;
//! - `idle-server-close.pcap.gz`: nginx `keepalive_timeout 0` closes on its own: side server.

use crate::common::{analyze, one, probe};
use netdoctor_core::detect::short_connections::ASKED_CLOSE_EVIDENCE;
use netdoctor_core::finding::{FindingId, Side};

fn asked_by_client(name: &str, what: &str) {
    let (an, _) = analyze(name);
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.side, Side::Client, "{name}: {}", f.summary);
    assert!(
        f.summary
            .contains("the client asked for it: the server closed 10 of them first"),
        "{name}: {}",
        f.summary
    );
    assert!(f.summary.contains(what), "{name}: {}", f.summary);
    assert!(
        !f.explanation.contains("it closes after"),
        "{name}: {}",
        f.explanation
    );
    assert!(
        f.fix.starts_with("Let the client keep"),
        "{name}: {}",
        f.fix
    );
    let note =
        probe(f, ASKED_CLOSE_EVIDENCE).unwrap_or_else(|| panic!("{name}: {:#?}", f.evidence));
    assert!(note.contains(what), "{name}: {note}");
}

#[test]
fn a_server_fin_after_requests_with_connection_close_is_the_clients_choice() {
    asked_by_client("idle-conn-close.pcap.gz", "10 carried `Connection: close`");
}

#[test]
fn http_1_0_requests_without_keep_alive_ask_for_the_close_too() {
    asked_by_client(
        "idle-http10.pcap.gz",
        "10 were HTTP/1.0 without `Connection: keep-alive`",
    );
}

#[test]
fn a_header_cut_by_the_snap_length_is_said_not_guessed() {
    let (an, _) = analyze("idle-conn-close-snap.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.side, Side::Server, "{}", f.summary);
    assert!(f.summary.contains("snap length cut off"), "{}", f.summary);
    assert!(
        f.explanation.contains("or the client asked it to"),
        "{}",
        f.explanation
    );
    assert!(f.confidence < 0.9);
    assert!(probe(f, ASKED_CLOSE_EVIDENCE).is_none());
}

#[test]
fn a_server_that_closes_on_its_own_stays_the_server() {
    let (an, _) = analyze("idle-server-close.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.side, Side::Server, "{}", f.summary);
    assert!(
        f.summary.contains("the server closed 10 of them first"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("asked"), "{}", f.summary);
    assert!(f.explanation.contains("it closes after each response"));
    assert!(probe(f, ASKED_CLOSE_EVIDENCE).is_none());
}

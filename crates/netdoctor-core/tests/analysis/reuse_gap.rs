//! The client's reuse gap (an answer's last byte to its next request on the same connection)
//! put next to the idle timeout it is compared with. Captures from
//! `testdata/captures/make-idle.sh` (a pooled Python client, each connection idle 1.5 s
//! between its requests):
//! - `idle-lb-drop.pcap.gz`: a 1 s idle drop whose reset never reaches the client: the 12
//!   requests on dropped connections are reuses, 1.5 s after their answers;
//! - `idle-timeout.pcap.gz`: nginx closes each connection after 1 s; the client never reuses
//!   one, so its wait is not in the capture and the texts say so instead of a number;
//! - `idle-reuse-ok.pcap.gz`: gaps of 0.3 s, reused, nothing to tell.

use crate::common::{analyze, one, probe_note};
use netdoctor_core::detect::short_connections::IDLE_EVIDENCE;
use netdoctor_core::finding::FindingId;

#[test]
fn requests_on_dropped_connections_show_the_clients_reuse_gap() {
    let (an, _) = analyze("idle-lb-drop.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert!(
        f.explanation
            .contains("The client reused connections 1.51 s (median; 90th percentile 1.51 s"),
        "{}",
        f.explanation
    );
    assert!(
        f.explanation.contains("over 12 reuses"),
        "{}",
        f.explanation
    );
    assert!(
        f.fix.contains("the client now reuses after up to 1.51 s"),
        "{}",
        f.fix
    );
}

#[test]
fn a_client_that_never_reused_a_connection_has_no_gap_to_show() {
    let (an, _) = analyze("idle-timeout.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    let note = probe_note(f, IDLE_EVIDENCE);
    assert!(
        note.contains("no connection was reused, so the client's reuse gap is not in"),
        "{note}"
    );
    assert!(
        f.explanation
            .contains("no connection was reused in the capture"),
        "{}",
        f.explanation
    );
}

#[test]
fn connections_reused_within_the_timeout_tell_nothing() {
    let (an, _) = analyze("idle-reuse-ok.pcap.gz");
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::ConnectionReset && f.id != FindingId::ShortConnections),
        "{:#?}",
        an.findings
    );
}

//! Resets right after a complete answer: an abortive close (`SO_LINGER` 0 at close), not a
//! reset in the middle of a request/response. `idle-linger0` was told as a critical failure of
//! every request although each answer had arrived whole. Real traffic between two namespaces
//! (`testdata/captures/make-idle.sh`), captured at the client:
//! - `idle-linger0.pcap.gz`: a Python server answers (600 bytes by `Content-Length`) and
//!   resets at close; the client had acknowledged each answer: info, side server;
//! - `idle-client-linger0.pcap.gz`: nginx keeps the connection, the client resets it right
//!   after reading its answer: info, side client;
//! - `idle-noanswer.pcap.gz`: the server reads the request and resets without answering: a
//!   failed request, stays critical "in the middle";
//! - `idle-linger0-pipe.pcap.gz`: the client pipelines two requests in one segment, the server
//!   answers the first and resets: was told "no request was lost" (info); the second is lost;
//! - `idle-linger0-next.pcap.gz`: the server resets 20 ms after its answer, the client had
//!   written its next request at once: was told a reset "in the middle"; an abortive close
//!   that lost that request.

use crate::common::{analyze, one, probe};
use netdoctor_core::detect::connection_reset::{
    AFTER_ANSWER_EVIDENCE, AFTER_ANSWER_LOST_EVIDENCE, IDLE_RESET_EVIDENCE,
};
use netdoctor_core::finding::{Evidence, FindingId, Severity, Side};

#[test]
fn a_server_reset_right_after_a_complete_acknowledged_answer_is_an_abortive_close() {
    let (an, _) = analyze("idle-linger0.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Info, Side::Server),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("in the middle"), "{}", f.summary);
    assert!(
        f.summary
            .contains("closed 10 connections with a reset 0.03 ms after a complete answer"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("no request was lost"), "{}", f.summary);
    let note = probe(f, AFTER_ANSWER_EVIDENCE).unwrap_or_else(|| panic!("{:#?}", f.evidence));
    assert!(note.contains("0 of them before the client"), "{note}");
    assert!(probe(f, IDLE_RESET_EVIDENCE).is_none());
    assert!(f.fix.contains("SO_LINGER 0"), "{}", f.fix);
    // Every example shows the answer, then the reset, with the gap between them.
    let mut n = 0;
    for e in &f.evidence {
        if let Evidence::Packets { packets, note, .. } = e {
            assert_eq!(packets.len(), 2, "{note}");
            assert!(note.starts_with("the answer was complete"), "{note}");
            n += 1;
        }
    }
    assert!(n > 0, "{:#?}", f.evidence);
}

#[test]
fn a_client_reset_right_after_reading_its_answer_is_the_clients_abortive_close() {
    let (an, _) = analyze("idle-client-linger0.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Info, Side::Client),
        "{}",
        f.summary
    );
    assert!(
        f.summary
            .contains("The client closed 10 connections with a reset"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("while a response"), "{}", f.summary);
    assert!(probe(f, AFTER_ANSWER_EVIDENCE).is_some());
}

#[test]
fn a_server_reset_of_a_request_it_never_answered_stays_a_failure_in_the_middle() {
    let (an, _) = analyze("idle-noanswer.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Critical, Side::Server),
        "{}",
        f.summary
    );
    assert!(
        f.summary.contains("reset 10 connections in the middle"),
        "{}",
        f.summary
    );
    assert!(probe(f, AFTER_ANSWER_EVIDENCE).is_none());
}

/// An abortive close right after a complete answer that lost the client's next request:
/// critical (every connection lost one), on the side that sent the reset.
fn lost_next(name: &str, gap: &str) {
    let (an, _) = analyze(name);
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Critical, Side::Server),
        "{name}: {}",
        f.summary
    );
    assert!(
        !f.summary.contains("in the middle"),
        "{name}: {}",
        f.summary
    );
    assert!(
        !f.summary.contains("no request was lost"),
        "{name}: {}",
        f.summary
    );
    assert!(
        f.summary.contains(&format!(
            "closed 10 connections with a reset {gap} after a complete answer"
        )),
        "{name}: {}",
        f.summary
    );
    assert!(
        f.summary.contains(
            "on 10 of them the client had already sent its next request, and that request was lost"
        ),
        "{name}: {}",
        f.summary
    );
    let note =
        probe(f, AFTER_ANSWER_LOST_EVIDENCE).unwrap_or_else(|| panic!("{name}: {:#?}", f.evidence));
    assert!(
        note.contains("on 10 of them the client had already sent"),
        "{note}"
    );
    assert!(probe(f, AFTER_ANSWER_EVIDENCE).is_none(), "{name}");
    for e in &f.evidence {
        if let Evidence::Packets { note, .. } = e {
            assert!(
                note.contains("next request sent and unanswered"),
                "{name}: {note}"
            );
        }
    }
}

#[test]
fn a_reset_right_after_the_answer_loses_a_request_pipelined_with_it() {
    lost_next("idle-linger0-pipe.pcap.gz", "0.06 ms");
}

#[test]
fn a_reset_soon_after_the_answer_loses_the_request_written_after_it() {
    lost_next("idle-linger0-next.pcap.gz", "20.21 ms");
}

//! Answers complete by their HTTP/1.1 framing other than `Content-Length` (RFC 9112 §6.3), then
//! reset by a 1 s idle timer (a load balancer): told as idle resets, as after a
//! `Content-Length` answer, no longer as critical resets "in the middle". Real traffic between
//! two namespaces (`testdata/captures/make-idle.sh`, a Python server behind which the reset
//! comes 1 s after each answer, the pooled client), captured at the client:
//! - `idle-chunked-lb-reset.pcap.gz`: chunked answers (two chunks with the header, one alone,
//!   the `0` chunk alone), captured whole;
//! - `idle-head-lb-reset.pcap.gz`: HEAD answers (`Content-Length: 600`, no body);
//! - `idle-204-lb-reset.pcap.gz`: `204` answers and `304`s that carry a `Content-Length`;
//! - look-alikes: `idle-chunked-stall.pcap.gz` (a chunked answer that stops after its first
//!   chunk, reset 1 s later: stays a critical reset in the middle) and
//!   `idle-chunked-snap.pcap.gz` (the chunked capture cut to 256 bytes a packet: the second
//!   chunk's size line is past the snap length, so the end cannot be told: said so, and
//!   neither called complete nor an idle timeout).

use crate::common::{analyze, one, probe};
use netdoctor_core::detect::connection_reset::{ANSWER_UNSEEN_EVIDENCE, IDLE_RESET_EVIDENCE};
use netdoctor_core::detect::short_connections::IDLE_EVIDENCE;
use netdoctor_core::finding::{FindingId, Severity, Side};

fn idle_after_complete(name: &str) {
    let (an, _) = analyze(name);
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Info, Side::Network),
        "{name}: {}",
        f.summary
    );
    assert!(
        !f.summary.contains("in the middle"),
        "{name}: {}",
        f.summary
    );
    assert!(
        f.summary
            .contains("reset 15 idle connections, each after 1.00 s"),
        "{name}: {}",
        f.summary
    );
    let note = probe(f, IDLE_RESET_EVIDENCE).unwrap_or_else(|| panic!("{name}: {f:#?}"));
    assert!(
        note.contains("15 resets came after 1.00 s"),
        "{name}: {note}"
    );
}

#[test]
fn a_chunked_answer_ends_with_its_last_chunk() {
    idle_after_complete("idle-chunked-lb-reset.pcap.gz");
}

#[test]
fn a_head_answer_ends_with_its_header_whatever_its_content_length() {
    idle_after_complete("idle-head-lb-reset.pcap.gz");
}

#[test]
fn answers_204_and_304_end_with_their_header() {
    idle_after_complete("idle-204-lb-reset.pcap.gz");
}

#[test]
fn a_chunked_answer_that_stalls_before_its_last_chunk_is_cut_in_the_middle() {
    let (an, _) = analyze("idle-chunked-stall.pcap.gz");
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
    assert!(probe(f, IDLE_RESET_EVIDENCE).is_none());
    assert!(probe(f, ANSWER_UNSEEN_EVIDENCE).is_none());
    let s = one(&an, FindingId::ShortConnections);
    assert!(probe(s, IDLE_EVIDENCE).is_none(), "{}", s.summary);
}

#[test]
fn a_chunked_answer_whose_framing_the_snap_length_cut_is_not_called_complete() {
    let (an, _) = analyze("idle-chunked-snap.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(f.severity, Severity::Critical, "{}", f.summary);
    assert!(probe(f, IDLE_RESET_EVIDENCE).is_none(), "{}", f.summary);
    assert!(!f.summary.contains("idle"), "{}", f.summary);
    // Neither complete nor cut: it says the capture cannot tell.
    assert!(!f.summary.contains("in the middle"), "{}", f.summary);
    assert!(
        f.summary
            .contains("whether they were complete cannot be told"),
        "{}",
        f.summary
    );
    let note = probe(f, ANSWER_UNSEEN_EVIDENCE).unwrap_or_else(|| panic!("{:#?}", f.evidence));
    assert!(note.starts_with("15 of 15 resets"), "{note}");
    assert!(f.fix.contains("snap length"), "{}", f.fix);
    // Nor an idle timeout in short_connections.
    let s = one(&an, FindingId::ShortConnections);
    assert!(probe(s, IDLE_EVIDENCE).is_none(), "{}", s.summary);
    assert!(!s.summary.contains("idle"), "{}", s.summary);
}

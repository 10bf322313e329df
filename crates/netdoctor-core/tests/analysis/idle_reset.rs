//! Resets after an idle time, against resets that cut a response. A load balancer (or server)
//! that resets a connection after 1 s of silence following a complete, acknowledged answer
//! was told as a critical "reset in the middle of a request/response". Real traffic between
//! two namespaces (`testdata/captures/make-idle.sh`, Python servers and a pooled client),
//! captured at the client:
//! - `idle-lb-reset.pcap.gz`: each connection reset 1 s after its answer, none reused after;
//! - `idle-lb-drop.pcap.gz`: the same, but the idle reset never reaches the client: its next
//!   request on the connection gets a reset that acknowledges nothing (the harm);
//! - look-alikes that are not an idle timeout: `idle-stall-reset.pcap.gz` (the answer stalls
//!   at 200 of its 600 body bytes, reset 1 s later: a proxy's response timeout),
//!   `idle-crash.pcap.gz` (the server process dies mid-answer), `idle-vary-reset.pcap.gz`
//!   (resets after 0.3–1.3 s: no timer), `idle-linger0.pcap.gz` (reset right after the answer:
//!   an abortive close, told in `abortive_close.rs`).

use crate::common::{analyze, one, probe};
use netdoctor_core::detect::connection_reset::IDLE_RESET_EVIDENCE;
use netdoctor_core::detect::short_connections::IDLE_EVIDENCE;
use netdoctor_core::finding::{FindingId, Severity, Side};

#[test]
fn a_reset_after_a_steady_silence_following_a_complete_answer_is_an_idle_timeout() {
    let (an, _) = analyze("idle-lb-reset.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Info, Side::Network),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("in the middle"), "{}", f.summary);
    assert!(
        f.summary
            .contains("reset 15 idle connections, each after 1.00 s"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("none got a reset"), "{}", f.summary);
    let note = probe(f, IDLE_RESET_EVIDENCE).unwrap_or_else(|| panic!("{:#?}", f.evidence));
    assert!(note.contains("15 resets came after 1.00 s"), "{note}");
    assert!(f.fix.contains("below 1.00 s"), "{}", f.fix);
}

#[test]
fn requests_on_a_connection_dropped_while_idle_are_the_harm_and_set_the_severity() {
    let (an, _) = analyze("idle-lb-drop.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(f.severity, Severity::Critical, "{}", f.summary);
    assert!(
        f.summary.contains("reset 12 idle connections"),
        "{}",
        f.summary
    );
    assert!(
        f.summary.contains("12 requests sent on a connection"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("in the middle"), "{}", f.summary);
    // The reset answering a request is not the server closing after each response.
    let s = one(&an, FindingId::ShortConnections);
    assert!(!s.summary.contains("the server closed"), "{}", s.summary);
    assert!(
        !s.explanation.contains("closes after each"),
        "{}",
        s.explanation
    );
}

/// A reset that is not an idle timeout: told as a reset during the exchange, critical, and
/// short_connections does not tell an idle timeout either.
fn not_idle(name: &str, n: u64) {
    let (an, _) = analyze(name);
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Critical, Side::Server),
        "{name}: {}",
        f.summary
    );
    assert!(
        f.summary
            .contains(&format!("reset {n} connections in the middle")),
        "{name}: {}",
        f.summary
    );
    assert!(probe(f, IDLE_RESET_EVIDENCE).is_none(), "{name}");
    let s = one(&an, FindingId::ShortConnections);
    assert!(probe(s, IDLE_EVIDENCE).is_none(), "{name}: {}", s.summary);
    assert!(!s.summary.contains("idle"), "{name}: {}", s.summary);
}

#[test]
fn a_proxy_that_resets_a_stalled_answer_cuts_it_in_the_middle() {
    not_idle("idle-stall-reset.pcap.gz", 10);
}

#[test]
fn a_server_that_dies_mid_answer_cuts_it_in_the_middle() {
    not_idle("idle-crash.pcap.gz", 10);
}

#[test]
fn a_reset_right_after_the_answer_is_no_idle_timeout() {
    // Its own story (an abortive close): `abortive_close.rs`.
    let (an, _) = analyze("idle-linger0.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert!(probe(f, IDLE_RESET_EVIDENCE).is_none(), "{}", f.summary);
    assert!(!f.summary.contains("idle"), "{}", f.summary);
    let s = one(&an, FindingId::ShortConnections);
    assert!(probe(s, IDLE_EVIDENCE).is_none(), "{}", s.summary);
    assert!(!s.summary.contains("idle"), "{}", s.summary);
}

#[test]
fn resets_after_a_varying_silence_are_no_timer() {
    let (an, _) = analyze("idle-vary-reset.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(f.side, Side::Server, "{}", f.summary);
    assert!(
        f.summary.contains("idle connections between requests"),
        "{}",
        f.summary
    );
    assert!(
        f.explanation.contains("no single idle timer"),
        "{}",
        f.explanation
    );
    assert!(probe(f, IDLE_RESET_EVIDENCE).is_none());
    let s = one(&an, FindingId::ShortConnections);
    assert!(probe(s, IDLE_EVIDENCE).is_none(), "{}", s.summary);
}

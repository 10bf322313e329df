//! Requests written on a connection the server had already closed. nginx with
//! `keepalive_timeout 1s` and a pooled client reusing its connection every ~1.0 s
//! (`testdata/captures/make-keepalive-race.sh`, explore9): the request written right after
//! nginx's FIN gets a reset, and the client retries on a new connection. It was told as "the
//! end of a closed connection, not a request that failed" (info, verdict inconclusive)
//! although each of those requests failed. Look-alikes that stay the plain end of a closed
//! connection: a keep-alive probe answered by a reset after the FIN (`rst-after-fin.pcap`).

use crate::common::{analyze, one, probe};
use netdoctor_core::detect::connection_reset::REQUEST_AFTER_CLOSE_EVIDENCE;
use netdoctor_core::finding::{Evidence, FindingId, Severity, Side};

#[test]
fn a_request_written_just_after_the_servers_fin_failed_the_keepalive_race() {
    let (an, _) = analyze("keepalive-race.pcap.gz");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Critical, Side::Server),
        "{}",
        f.summary
    );
    assert!(
        f.summary
            .contains("The client sent 3 requests on connections the server had already closed"),
        "{}",
        f.summary
    );
    assert!(
        f.summary
            .contains("those requests failed (20% of requests)"),
        "{}",
        f.summary
    );
    assert!(
        !f.explanation.contains("not a request that failed"),
        "{}",
        f.explanation
    );
    assert!(
        f.explanation.contains("the keep-alive race"),
        "{}",
        f.explanation
    );
    let note = probe(f, REQUEST_AFTER_CLOSE_EVIDENCE).unwrap_or_else(|| panic!("{f:#?}"));
    assert!(note.contains("3 of them within 10 ms"), "{note}");
    assert!(f.fix.contains("keepalive_timeout"), "{}", f.fix);
    // Each example shows the FIN, the request after it and the reset.
    let examples: Vec<usize> = f
        .evidence
        .iter()
        .filter_map(|e| match e {
            Evidence::Packets { packets, .. } => Some(packets.len()),
            _ => None,
        })
        .collect();
    assert_eq!(examples, vec![3, 3, 3], "{:#?}", f.evidence);
}

#[test]
fn a_request_sent_long_after_the_fin_failed_too_and_is_told_as_a_client_not_noticing() {
    // make-quality-lab.sh: the client reads the server's FIN and writes another request 0.2 s
    // later (frames 13, 26, 39 are the server's resets).
    let (an, _) = analyze("rst-after-fin-lab.pcap");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(f.severity, Severity::Critical, "{}", f.summary);
    assert!(f.summary.contains("3 requests"), "{}", f.summary);
    assert!(
        f.explanation
            .contains("does not notice a closed connection"),
        "{}",
        f.explanation
    );
}

#[test]
fn a_keepalive_probe_after_the_fin_stays_the_end_of_a_closed_connection() {
    let (an, _) = analyze("rst-after-fin.pcap");
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(f.severity, Severity::Info, "{}", f.summary);
    assert!(
        f.summary
            .contains("reset 1 connections it had already closed"),
        "{}",
        f.summary
    );
    assert!(probe(f, REQUEST_AFTER_CLOSE_EVIDENCE).is_none(), "{f:#?}");
}

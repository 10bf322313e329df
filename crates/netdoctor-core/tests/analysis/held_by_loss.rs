//! A response segment lost before the capture point and resent when the client's delayed ACK
//! of the segment before it arrived is not Nagle holding it back. `out-drop-nagle.pcap.gz`:
//! three connections of `client_drop.rs`'s look-alike run (the built-in server, TCP_NODELAY
//! on, 5 % of its packets dropped in its OUTPUT chain; captured on the client's interface). In
//! each, the server sends a 256-byte header (IP id n), its 615-byte body (id n + 1) is dropped,
//! the client ACKs the header 41–43 ms later (a lone small segment: delayed ACK) and the body
//! leaves right after that ACK with id n + 2: a resend. The ids show the missing packet; the
//! Nagle captures keep their finding.

use crate::common;

use common::for_each_packet;
use netdoctor_core::finding::FindingId;
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze(name: &str) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

fn has(an: &Analysis, id: FindingId) -> bool {
    an.findings.iter().any(|f| f.id == id)
}

#[test]
fn a_body_lost_and_resent_after_a_delayed_ack_is_not_nagle() {
    let an = analyze("out-drop-nagle.pcap.gz");
    assert!(an.exchanges.count > 100, "{}", an.exchanges.count);
    assert!(!has(&an, FindingId::NagleDelayedAck), "{:#?}", an.findings);
    assert!(!has(&an, FindingId::DelayedAckStall), "{:#?}", an.findings);
}

#[test]
fn nagle_captures_keep_their_finding() {
    for name in [
        "nagle-eth.pcap",
        "nagle-sll.pcap",
        "nagle-sll2.pcap",
        "nagle-raw.pcap",
        "nagle-ipv6.pcap",
        "nagle-full.pcapng",
        "tls-nagle.pcap",
        "h2c-nagle.pcap",
    ] {
        let an = analyze(name);
        assert_eq!(
            an.findings.first().map(|f| f.id),
            Some(FindingId::NagleDelayedAck),
            "{name}: {:#?}",
            an.findings
        );
    }
}

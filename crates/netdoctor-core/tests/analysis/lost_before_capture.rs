//! A segment lost before the capture point and resent when the peer's delayed ACK of the data
//! before it arrived is a loss, with its count and its cost: not Nagle (`early_resend.rs`,
//! `held_by_loss.rs`) and not "healthy" either. The capture never saw the original, so nothing
//! flags the resend (tshark neither); the sender's IPv4 ids, counting one per packet, skipped
//! the packet that was lost. Before, the three `out-drop-nagle*` captures (the look-alike of
//! `crates/netdoctor/tests/live/client_drop.rs`: a server writing header and body in two
//! send()s with TCP_NODELAY on, 5 % of its packets dropped in its OUTPUT chain, captured on
//! the client's interface) were "healthy" while 2–5 requests each waited ~43 ms.
//!
//! Look-alikes that keep their story: real Nagle stalls (no id skip; also over IPv6, where
//! there is no id and a resend could not be told from new data), and losses the capture saw
//! (the originals captured: no "before the capture point").

use crate::common::{analyze, probe_note};
use netdoctor_core::finding::{FindingId, Severity, Side};

/// The `packet_loss_retransmission` finding of capture `name` told by IPv4 id skips: its
/// severity, side, summary and how many episodes its evidence counts.
fn lost_before_capture(name: &str) -> (Severity, Side, String, String) {
    let (an, _) = analyze(name);
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::PacketLossRetransmission)
        .unwrap_or_else(|| panic!("{name}: no packet_loss_retransmission: {:#?}", an.findings));
    let note = probe_note(f, "ip_id_skip").to_string();
    for id in [FindingId::NagleDelayedAck, FindingId::DelayedAckStall] {
        assert!(!an.findings.iter().any(|f| f.id == id), "{name}: {id:?}");
    }
    (f.severity, f.side, f.summary.clone(), note)
}

#[test]
fn resends_told_by_ip_id_skips_are_loss_before_the_capture_point_with_their_cost() {
    for (name, n, share) in [
        ("out-drop-nagle.pcap.gz", 5, "on 2% of requests"),
        ("out-drop-nagle-synack.pcap.gz", 2, "on 6% of requests"),
        ("out-drop-nagle-early.pcap.gz", 2, "on 3% of requests"),
    ] {
        let (severity, side, summary, note) = lost_before_capture(name);
        assert_eq!(
            (severity, side),
            (Severity::Warning, Side::Network),
            "{name}"
        );
        assert!(
            summary.starts_with(&format!(
                "Packet loss before the capture point: {n} segments of the server's data lost and resent"
            )),
            "{name}: {summary}"
        );
        // Each resend waited for the client's delayed ACK: ~40 ms.
        assert!(summary.contains("+4"), "{name}: {summary}");
        assert!(summary.contains(share), "{name}: {summary}");
        assert!(
            note.starts_with(&format!("{n} of {n} episode(s)")),
            "{name}: {note}"
        );
    }
}

#[test]
fn nagle_stalls_over_ipv4_and_ipv6_are_not_losses() {
    for name in ["nagle-eth.pcap", "nagle-ipv6.pcap", "nagle-full.pcapng"] {
        let (an, _) = analyze(name);
        assert_eq!(
            an.findings.first().map(|f| f.id),
            Some(FindingId::NagleDelayedAck),
            "{name}: {:#?}",
            an.findings
        );
        assert!(
            !an.findings.iter().any(|f| matches!(
                f.id,
                FindingId::PacketLossRetransmission | FindingId::RetransmissionTimeout
            )),
            "{name}: {:#?}",
            an.findings
        );
    }
}

//! A slow handshake whose request was acknowledged in under a millisecond: the round trip lies
//! beyond something near the capture point, and `high_base_rtt` says so. `ndpi-exe_download`
//! (the shared corpus; skipped when missing, never copied here): SYN → SYN/ACK 319.3 ms, the
//! client's ACK 0.2 ms later (captured at the client), the GET acknowledged 0.26 ms after it
//! left by the same peer (its IPv4 ids 0x05b0 on the SYN/ACK, 0x05b1 on that ACK; TTL 128 as
//! the client's own, no router between), the answer 298 ms after the GET. What answered is
//! near the capture point (a proxy, an accelerator, a firewall, or the server itself), so the
//! 319 ms is not the round trip to it: it went beyond that box (a proxy connecting onward
//! first) or in it. The ~300 ms is real (the answer waited it too), so the finding stays;
//! before, it said only "answered by their kernels in microseconds … the path's own
//! round-trip time". A slow setup (`syn_retransmit`) keeps its evidence as it was.
//!
//! Look-alikes: a slow path whose requests were acknowledged a round trip later
//! (`ppa-latency2`: 1155 ms) and a capture near the server (`arkime-http-500-head`: the
//! server's own kernel acknowledges in microseconds) get no such sentence.

use crate::common::{analyze, corpus_file, probe, probe_note};
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

fn high_base_rtt(name: &str) -> Option<Finding> {
    let path = corpus_file(name)?;
    let (an, _) = analyze(path.to_str().unwrap());
    an.findings
        .iter()
        .find(|f| f.id == FindingId::HighBaseRtt)
        .cloned()
        .or_else(|| panic!("{name}: no high_base_rtt: {:#?}", an.findings))
}

#[test]
fn a_request_acknowledged_in_a_quarter_millisecond_puts_the_round_trip_beyond_a_near_box() {
    let Some(f) = high_base_rtt("ndpi-exe_download.pcap") else {
        return;
    };
    assert_eq!((f.severity, f.side), (Severity::Warning, Side::Network));
    let note = probe_note(&f, "near_ack");
    assert!(note.starts_with("a request acknowledged 0.26 ms"), "{note}");
    assert!(
        f.explanation.contains(
            "acknowledged 0.26 ms after it left: what answered is near the capture point"
        ),
        "{}",
        f.explanation
    );
}

#[test]
fn slow_paths_acknowledged_a_round_trip_later_or_seen_at_the_server_say_nothing_of_it() {
    for name in ["ppa-latency2.pcapng", "arkime-http-500-head.pcap"] {
        let Some(f) = high_base_rtt(name) else {
            return;
        };
        assert!(probe(&f, "near_ack").is_none(), "{name}: {f:#?}");
        assert!(!f.explanation.contains("what answered is near"), "{name}");
    }
}

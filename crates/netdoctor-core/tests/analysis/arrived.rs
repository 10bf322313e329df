//! Loss on the client's own host vs loss on the path, on real captures taken on the client's
//! interface by `netdoctor diagnose` (so with [`Observation::RunConfig`], as a live run has):
//!
//! - `client-input-drop.pcap`: the built-in server in a namespace, 5 % of its packets dropped
//!   by an iptables INPUT rule in the client's namespace (`crates/netdoctor/tests/live/client_drop.rs`,
//!   `-c 2 -d 5s --rate 60 --snaplen 96`). The capture saw every first copy arrive; the client
//!   never acknowledged them; the server resent them on SACK, by a tail-loss probe or its timer.
//! - `route-lossy.pcap`: the route lab's lossy hop (the user-space bridge drops 20 % of frames
//!   each way; `lossy_path.rs`, `-c 8 -d 4s --no-keepalive`), captured in the client's
//!   namespace, so after the drop. `route-lossy-fin-gap.pcap` keeps its five connections where
//!   the bridge lost the response body and the server's bare FIN arrived after the gap: the
//!   body's resend fills a range the capture never saw (session 9 read it as a resend of
//!   captured data, 12 of 17 episodes in some runs).

use crate::common;

use common::for_each_packet;
use netdoctor_core::finding::{Finding, FindingId, Side};
use netdoctor_core::observation::Observation;
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze(name: &str, at_client: bool) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    if at_client {
        a.observe(Observation::RunConfig {
            keepalive: true,
            timeout_ms: 2000,
            connections: 8,
        });
    }
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

fn loss(an: &Analysis, id: FindingId) -> Option<&Finding> {
    an.findings.iter().find(|f| f.id == id)
}

const LOSS: [FindingId; 2] = [
    FindingId::PacketLossRetransmission,
    FindingId::RetransmissionTimeout,
];

#[test]
fn server_segments_dropped_after_they_reached_the_clients_interface_are_the_clients() {
    let an = analyze("client-input-drop.pcap", true);
    let fast = loss(&an, FindingId::PacketLossRetransmission)
        .unwrap_or_else(|| panic!("no fast loss: {:#?}", an.findings));
    for f in LOSS.iter().filter_map(|&id| loss(&an, id)) {
        assert_eq!(f.side, Side::Client, "{f:#?}");
        assert!(
            f.summary.contains("had reached the client's host"),
            "{f:#?}"
        );
        assert!(
            f.explanation.contains("dropped inside the client's host"),
            "{f:#?}"
        );
        assert!(f.fix.contains("INPUT"), "{f:#?}");
    }
    // The fast kind's sentence names how the server learnt of it, and its count is part of
    // the finding's own episodes.
    assert!(
        fast.explanation.contains("duplicate ACKs or SACK"),
        "{fast:#?}"
    );
    // Without a run config the capture's place is unknown: the path stays the suspect.
    let an = analyze("client-input-drop.pcap", false);
    for f in LOSS.iter().filter_map(|&id| loss(&an, id)) {
        assert_eq!(f.side, Side::Network, "{f:#?}");
    }
}

#[test]
fn a_lossy_path_before_the_clients_interface_stays_the_paths() {
    for name in ["route-lossy.pcap", "route-lossy-fin-gap.pcap"] {
        let an = analyze(name, true);
        let fast = loss(&an, FindingId::PacketLossRetransmission)
            .unwrap_or_else(|| panic!("{name}: no fast loss: {:#?}", an.findings));
        for f in LOSS.iter().filter_map(|&id| loss(&an, id)) {
            assert_eq!(f.side, Side::Network, "{name}: {f:#?}");
            assert!(!f.summary.contains("client's host"), "{name}: {f:#?}");
        }
        assert!(fast.summary.contains("server's data"), "{name}: {fast:#?}");
    }
}

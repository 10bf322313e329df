//! Which side a SYN nobody answered is told on by `analyze` with no counters (explore16,
//! session 28). `syn-lost-client.pcap.gz` and `syn-lost-server.pcap.gz` are one run captured
//! at each end (`make-syn-vantage.sh`): a server with a listen backlog of 1 that accepts nothing
//! for 2.5 s, so its host drops the SYNs of four of six connections, repeated every second.
//! From the client, a full listen queue and a hop dropping SYNs look the same: the side is the
//! network, said as not known, with a lower confidence. At the server the SYNs are seen
//! arriving with no SYN/ACK leaving: side server. A counter of the server's host (listen
//! overflows) makes it the host's. Look-alikes: a server that repeats its own SYN/ACK (it had
//! the SYN: `listen-full.pcap`), both ends on one host (`syn-tail.pcap`: no path), and loss on
//! the path the packets show (`route-lossy.pcap`: the path's, caused by that loss, and its
//! explanation says so instead of "cannot tell").

use crate::common::{analyze, one};
use netdoctor_core::finding::{FindingId, Side};
use netdoctor_core::observation::{CounterDelta, Observation};
use netdoctor_core::{Analyzer, AnalyzerConfig};

#[test]
fn a_lost_syn_seen_from_the_client_is_not_the_servers_without_a_counter() {
    let (an, _) = analyze("syn-lost-client.pcap.gz");
    let f = one(&an, FindingId::SynRetransmit);
    assert_eq!(f.side, Side::Network, "{f:#?}");
    assert!(f.confidence <= 0.6, "{}", f.confidence);
    assert!(
        f.summary.contains("the client had to repeat its SYN on 4"),
        "{}",
        f.summary
    );
    assert!(
        f.explanation.contains("the packets cannot tell")
            && f.explanation.contains("next to the client"),
        "{}",
        f.explanation
    );
}

#[test]
fn a_lost_syn_seen_at_the_server_is_the_servers() {
    let (an, _) = analyze("syn-lost-server.pcap.gz");
    let f = one(&an, FindingId::SynRetransmit);
    assert_eq!(f.side, Side::Server, "{f:#?}");
    assert!(
        f.explanation.contains("taken next to the server"),
        "{}",
        f.explanation
    );
}

#[test]
fn a_listen_counter_places_the_lost_syn_on_the_servers_host() {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    a.observe(Observation::Counters(vec![CounterDelta {
        name: "TcpExt.ListenOverflows".into(),
        before: 0,
        after: 8,
    }]));
    crate::common::for_each_packet("syn-lost-client.pcap.gz", |p| a.push(p));
    let an = a.finish();
    let f = one(&an, FindingId::SynRetransmit);
    assert_eq!(f.side, Side::Host, "{f:#?}");
    assert!(!f.explanation.contains("cannot tell"), "{}", f.explanation);
}

#[test]
fn look_alikes_keep_their_sides() {
    // The server repeated its SYN/ACK: it had the SYN.
    let (an, _) = analyze("listen-full.pcap");
    assert_eq!(one(&an, FindingId::SynRetransmit).side, Side::Server);
    // Both ends on one host: no path lost them.
    let (an, _) = analyze("syn-tail.pcap");
    assert_eq!(one(&an, FindingId::SynRetransmit).side, Side::Host);
    // Loss the packets show on the path: the path's, caused by it, its fix first.
    let (an, _) = analyze("route-lossy.pcap");
    let mut findings = an.findings.clone();
    netdoctor_core::relate::relate(&mut findings);
    let f = findings
        .iter()
        .find(|f| f.id == FindingId::SynRetransmit && f.summary.contains("repeat its SYN"))
        .expect("syn_retransmit");
    assert_eq!(f.side, Side::Network);
    assert_eq!(f.caused_by, Some(FindingId::PacketLossRetransmission));
    assert!(f.fix.starts_with("Caused by"), "{}", f.fix);
    // Its explanation agrees with that fix: the same path's loss, not "cannot tell"; the
    // listen queue is what to check after (session 30).
    assert!(
        !f.explanation.contains("cannot tell")
            && f.explanation.contains(
                "the same capture shows the path losing segments of connections already open \
                 (packet_loss_retransmission, above)"
            )
            && f.explanation.contains("most likely took these SYNs"),
        "{}",
        f.explanation
    );
    assert!(
        f.fix.contains(
            "If SYNs are still repeated once the path is clean, check the server's listen queue"
        ),
        "{}",
        f.fix
    );
    // Told once: relating again changes nothing.
    let once = findings.clone();
    netdoctor_core::relate::relate(&mut findings);
    assert_eq!(findings, once);
}

//! Nagle's algorithm meeting a delayed ACK, on real captures made on loopback by
//! `testdata/captures/make.sh`: every link type the reader knows, the latency breakdown it
//! explains, and its look-alikes (a slow reader's flow control; a server that set TCP_NODELAY).

use crate::common;

use common::{analyze, findings, for_each_packet, frames, one};
use netdoctor_core::finding::{FindingId, Severity, Side};
use netdoctor_core::{Analyzer, AnalyzerConfig, Evidence, LinkType};

fn assert_nagle(name: &str, expect_link: LinkType) {
    let (an, link) = analyze(name);
    assert_eq!(link, expect_link, "{name}: link type");
    let s = &an.stats;
    assert_eq!(s.decode_errors, 0, "{name}: {an:#?}");
    assert!(s.tcp_segments >= 500, "{name}: {s:?}");
    // wrk -c 10: one connection that wrk opens and closes at start, then 10 keep-alive ones.
    assert_eq!(s.connections_with_handshake, 11, "{name}: {s:?}");
    assert!(an.exchanges.count >= 50, "{name}: {:?}", an.exchanges);
    // The reference: p50 ≈ 44 ms with the stall, a fraction of a ms without.
    assert!(
        (35.0..=60.0).contains(&an.exchanges.latency_ms.p50),
        "{name}: {:?}",
        an.exchanges
    );

    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::NagleDelayedAck)
        .unwrap_or_else(|| panic!("{name}: no nagle finding: {:#?}", an.findings));
    assert_eq!(
        an.findings[0].id,
        FindingId::NagleDelayedAck,
        "{name}: ranked first"
    );
    assert_eq!(f.side, Side::Server);
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.fix.contains("tcp_nopush on") && f.fix.contains("sendfile on"),
        "{}",
        f.fix
    );
    let added = f.impact.added_latency_ms.unwrap();
    assert!((35.0..=60.0).contains(&added), "{name}: added {added}");
    let frac = f.impact.affected_fraction.unwrap();
    assert!(frac >= 0.7, "{name}: affected fraction {frac}");
    assert!(f.confidence >= 0.8, "{name}: confidence {}", f.confidence);
    assert_eq!(f.evidence.len(), 3);
    for e in &f.evidence {
        let Evidence::Packets {
            packets,
            note,
            connection,
        } = e
        else {
            panic!("{name}: evidence kind {e:?}");
        };
        assert!(connection.ends_with(":18081"), "{connection}");
        let dirs: Vec<&str> = packets.iter().map(|p| p.dir.as_str()).collect();
        assert_eq!(dirs, ["S→C", "C→S", "S→C"], "{name}");
        assert!(packets[1].desc.starts_with("[.] len=0"), "{:?}", packets[1]);
        let gap = packets[1].time - packets[0].time;
        assert!((0.030..0.25).contains(&gap), "{name}: ACK gap {gap}");
        assert!(packets[2].time - packets[1].time <= 0.001);
        assert!(note.contains("delayed ACK"), "{note}");
    }
    // The first response byte is prompt: this is not a slow server.
    assert!(
        !an.findings
            .iter()
            .any(|f| f.id == FindingId::SlowServerProcessing),
        "{name}: {:#?}",
        an.findings
    );
    assert!(
        an.exchanges.server_time_ms.p50 < 5.0,
        "{name}: {:?}",
        an.exchanges
    );
}

#[test]
fn nagle_ethernet() {
    assert_nagle("nagle-eth.pcap", LinkType::Ethernet);
}

#[test]
fn nagle_linux_sll2() {
    assert_nagle("nagle-sll2.pcap", LinkType::LinuxSll2);
}

#[test]
fn nagle_linux_sll() {
    assert_nagle("nagle-sll.pcap", LinkType::LinuxSll);
}

#[test]
fn nagle_ipv6() {
    assert_nagle("nagle-ipv6.pcap", LinkType::Ethernet);
    let (an, _) = analyze("nagle-ipv6.pcap");
    let Evidence::Packets { connection, .. } = &an.findings[0].evidence[0] else {
        panic!()
    };
    assert!(connection.starts_with("[::1]:"), "{connection}");
}

#[test]
fn nagle_raw_ip() {
    assert_nagle("nagle-raw.pcap", LinkType::Raw);
}

#[test]
fn nagle_pcapng_full_snaplen() {
    assert_nagle("nagle-full.pcapng", LinkType::Ethernet);
}

#[test]
fn nagle_breakdown_adds_up_to_the_median() {
    let (an, _) = analyze("nagle-eth.pcap");
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    // p50 ≈ 44 ms = a few µs of network + ~0.1 ms server + ~43 ms Nagle/delayed ACK.
    assert!(
        (b.latency - an.exchanges.latency_ms.p50).abs() < 0.2 * b.latency,
        "{b:?}"
    );
    assert!(b.stalls.get(FindingId::NagleDelayedAck) >= 35.0, "{b:?}");
    assert!(b.network < 1.0 && b.server < 1.0, "{b:?}");
    let sum = b.network + b.server + b.transfer + b.stalls_total();
    assert!((sum - b.latency).abs() < 1e-6, "{b:?}");
    let v = serde_json::to_value(&an.exchanges).unwrap();
    assert!(
        v["breakdown_p50_ms"]["stalls"]["nagle_delayed_ack"]
            .as_f64()
            .unwrap()
            >= 35.0
    );
}

/// nginx `tcp_nodelay on`, a client with SO_RCVBUF 4096 reading 1 KB every 60 ms
/// (`make-slow-reader.sh`): the server's small segments leave right after the client's late
/// window updates. That looked like Nagle (critical, "enable TCP_NODELAY") before the held
/// segment was checked against the advertised window; it is flow control by the client.
#[test]
fn slow_reader_is_flow_control_not_nagle() {
    let (an, _) = analyze("slow-reader.pcap");
    assert!(
        findings(&an, FindingId::NagleDelayedAck).is_empty(),
        "{:#?}",
        an.findings
    );
    let f = one(&an, FindingId::ZeroWindow);
    assert_eq!((f.side, f.severity), (Side::Client, Severity::Critical));
    assert!(
        f.summary.contains("its window was also full 24 times"),
        "{}",
        f.summary
    );
    // tshark: frame 31 opens the window to 18674 + 4096, frame 32 fills it (4096 bytes),
    // frame 33 ACKs it 40.8 ms later with window 2048, frame 34 sends 2048 bytes at once:
    // 22770..24818 lay past the old right edge 22770.
    assert!(frames(f).contains(&vec![32, 33, 34]), "{:?}", frames(f));
    assert_eq!(an.exchanges.count, 8);
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert_eq!(b.stalls.get(FindingId::NagleDelayedAck), 0.0, "{b:?}");
    assert!(b.stalls.get(FindingId::ZeroWindow) > 1000.0, "{b:?}");
    // Besides it only the two resends the client reported twice (D-SACK), as info.
    let others: Vec<_> = an
        .findings
        .iter()
        .filter(|f| f.id != FindingId::ZeroWindow)
        .map(|f| (f.id, f.severity))
        .collect();
    assert_eq!(
        others,
        [(FindingId::SpuriousRetransmission, Severity::Info)],
        "{:#?}",
        an.findings
    );
}

/// The server's sockets observed with TCP_NODELAY on contradict a server-side Nagle finding:
/// the pattern stays visible, as information that says why it is not the server's Nagle.
#[test]
fn nodelay_on_at_the_server_makes_a_nagle_finding_information() {
    use netdoctor_core::observation::{Observation, ServerSocket, SocketState};
    let observe = |nodelay: bool| {
        let mut a = Analyzer::new(AnalyzerConfig::default());
        a.observe(Observation::ServerSockets(vec![ServerSocket {
            pid: 4242,
            process: "nginx".into(),
            fd: 12,
            state: SocketState::Established,
            local: "127.0.0.1:18081".into(),
            tcp_nodelay: nodelay,
            tcp_cork: false,
            sndbuf: 2_626_560,
            rcvbuf: 131_072,
        }]));
        for_each_packet("nagle-eth.pcap", |p| a.push(p));
        a.finish()
    };
    let on = observe(true);
    let f = one(&on, FindingId::NagleDelayedAck);
    assert_eq!((f.side, f.severity), (Side::Server, Severity::Info));
    assert!(
        f.summary.contains("not the server's Nagle"),
        "{}",
        f.summary
    );
    assert!(
        matches!(&f.evidence[0], Evidence::SocketOption { option, value, .. }
        if option == "TCP_NODELAY" && value.starts_with('1'))
    );
    let off = observe(false);
    let f = one(&off, FindingId::NagleDelayedAck);
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.confidence >= 0.99);
}

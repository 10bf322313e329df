//! Exchanges found from direction turns on real non-HTTP captures made on loopback by
//! `testdata/captures/make-proto.sh`: TLS (nginx, 4 KiB records, 8 KiB page) with Nagle on
//! and off, and a line protocol whose connections began before the capture.

use crate::common;

use common::for_each_packet;
use netdoctor_core::analyze::ExchangeMethod;
use netdoctor_core::finding::{FindingId, Severity, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, Evidence};

fn analyze(name: &str, cfg: AnalyzerConfig) -> Analysis {
    let mut a = Analyzer::new(cfg);
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

/// `nagle_delayed_ack` side server, first and critical, with most exchanges hit.
fn assert_server_nagle(name: &str, an: &Analysis) {
    let f = &an.findings[0];
    assert_eq!(
        f.id,
        FindingId::NagleDelayedAck,
        "{name}: {:#?}",
        an.findings
    );
    assert_eq!(f.side, Side::Server, "{name}");
    assert_eq!(f.severity, Severity::Critical, "{name}");
    let added = f.impact.added_latency_ms.unwrap();
    assert!((35.0..=60.0).contains(&added), "{name}: added {added}");
    let frac = f.impact.affected_fraction.unwrap();
    assert!(frac >= 0.7, "{name}: affected fraction {frac}");
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert!(
        (35.0..=60.0).contains(&b.stalls.get(FindingId::NagleDelayedAck)),
        "{name}: {b:?}"
    );
}

#[test]
fn tls_with_nagle_is_server_nagle_from_turns() {
    let an = analyze("tls-nagle.pcap", AnalyzerConfig::default());
    assert_eq!(an.stats.decode_errors, 0);
    // wrk -c 4: one connection opened and closed at start, then 4 keep-alive ones.
    assert_eq!(an.stats.connections_with_handshake, 5, "{:?}", an.stats);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Turns));
    assert!(an.exchanges.count >= 40, "{:?}", an.exchanges);
    assert!(
        (35.0..=60.0).contains(&an.exchanges.latency_ms.p50),
        "{:?}",
        an.exchanges
    );
    assert_server_nagle("tls-nagle.pcap", &an);
    let Evidence::Packets { connection, .. } = &an.findings[0].evidence[0] else {
        panic!("{:#?}", an.findings[0].evidence)
    };
    assert!(connection.ends_with("→ 127.0.0.1:18443"), "{connection}");
    assert!(an.warnings.is_empty(), "{:?}", an.warnings);
}

#[test]
fn tls_with_nodelay_is_healthy() {
    let an = analyze("tls-healthy.pcap", AnalyzerConfig::default());
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Turns));
    assert!(an.exchanges.count >= 100, "{:?}", an.exchanges);
    assert!(an.exchanges.latency_ms.p50 < 5.0, "{:?}", an.exchanges);
    assert!(
        an.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        an.findings
    );
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::NagleDelayedAck),
        "{:#?}",
        an.findings
    );
}

#[test]
fn line_protocol_mid_stream_is_server_nagle() {
    // No handshake in the capture: the clients connected before tcpdump started.
    for cfg in [
        AnalyzerConfig::default(),
        AnalyzerConfig {
            server_ports: vec![18450],
            ..Default::default()
        },
    ] {
        let an = analyze("line-midstream.pcap", cfg);
        assert_eq!(an.stats.connections_with_handshake, 0, "{:?}", an.stats);
        assert_eq!(an.stats.connections, 4, "{:?}", an.stats);
        assert_eq!(an.stats.capture_gaps, 0, "mid-stream ACKs are not gaps");
        assert_eq!(an.exchanges.method, Some(ExchangeMethod::Turns));
        assert!(an.exchanges.count >= 40, "{:?}", an.exchanges);
        assert_eq!(an.exchanges.rtt_ms, None);
        assert_server_nagle("line-midstream.pcap", &an);
        assert!(an.warnings.is_empty(), "{:?}", an.warnings);
    }
}

#[test]
fn http_captures_keep_http1_method() {
    let an = analyze("nagle-eth.pcap", AnalyzerConfig::default());
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Http1));
    assert_eq!(an.stats.pipelined_connections, 0);
}

#[test]
fn redis_under_benchmark_is_healthy() {
    // redis-server (TCP_NODELAY on) under `redis-benchmark -P 1 -c 4 -t get,set`: RESP
    // request/response turns, sub-millisecond, nothing above info.
    let an = analyze("redis-healthy.pcap", AnalyzerConfig::default());
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Turns));
    assert!(an.exchanges.count >= 300, "{:?}", an.exchanges);
    assert!(an.exchanges.latency_ms.p50 < 2.0, "{:?}", an.exchanges);
    assert!(
        an.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        an.findings
    );
    assert_eq!(an.stats.pipelined_connections, 0);
}

#[test]
fn connections_inside_vxlan_are_read() {
    // tunnels.pcap (make-tunnels.sh): two HTTP/1.0 exchanges between 10.81.0.1 and
    // 10.81.0.2 over VXLAN, captured on the underlay: only UDP 4789 packets (and ARP and
    // ICMPv6 inside the tunnel). It read as "no TCP segments" before.
    let an = analyze("tunnels.pcap", AnalyzerConfig::default());
    assert_eq!(an.stats.tcp_segments, 20, "{:#?}", an.stats);
    assert_eq!(an.stats.connections_with_handshake, 2, "{:#?}", an.stats);
    assert_eq!(an.exchanges.count, 2, "{:#?}", an.exchanges);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Http1));
    assert!(
        an.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        an.findings
    );
}

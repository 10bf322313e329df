//! Exchanges from direction turns (non-HTTP payload), mid-stream orientation, pipelining.

use super::script::*;
use crate::analyze::{AnalyzerConfig, ExchangeMethod};
use crate::decode::TcpFlags as F;
use crate::finding::{Evidence, FindingId, Side};

/// A binary request/response protocol, replies in two writes held by the server's Nagle.
fn nagle_turns(s: &mut Script, n: usize) {
    for _ in 0..n {
        s.send(MS, true, F::PSH | F::ACK, &[0x2a, 1, 0, 9, 7]);
        s.send(100_000, false, F::PSH | F::ACK, &[0x2b; 40]);
        s.send(40 * MS, true, F::ACK, b"");
        s.send(100_000, false, F::PSH | F::ACK, &[0x2c; 300]);
    }
}

#[test]
fn non_http_exchanges_come_from_turns() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:6379");
    s.handshake();
    nagle_turns(&mut s, 10);
    s.close();
    let an = s.a.finish();
    assert_eq!(an.exchanges.count, 10);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Turns));
    let f = &an.findings[0];
    assert_eq!((f.id, f.side), (FindingId::NagleDelayedAck, Side::Server));
    assert_eq!(f.impact.affected_fraction, Some(1.0));
}

#[test]
fn http_and_turns_are_mixed() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    s.send(MS, true, F::PSH | F::ACK, REQ);
    s.send(100_000, false, F::PSH | F::ACK, HDR);
    nagle_turns(&mut s, 2);
    s.close();
    let an = s.a.finish();
    assert_eq!(an.exchanges.count, 3);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Mixed));
}

/// Servers on a HIGHER port than their clients, no handshakes: the lower-port guess is
/// wrong; the endpoint that several connections share is the server.
#[test]
fn shared_endpoint_is_the_server_mid_stream() {
    let server = "10.0.0.2:50000";
    let mut conns: Vec<Script> = Vec::new();
    let mut a = Script::new("10.0.0.1:4001", server).a;
    for k in 0..3u16 {
        let mut s = Script::new(&format!("10.0.0.1:{}", 4001 + k), server);
        std::mem::swap(&mut s.a, &mut a);
        // The first packet of each connection is the server's, mid-response.
        s.send(MS, false, F::PSH | F::ACK, &[0x2c; 300]);
        std::mem::swap(&mut s.a, &mut a);
        conns.push(s);
    }
    for s in conns.iter_mut() {
        std::mem::swap(&mut s.a, &mut a);
        nagle_turns(s, 6);
        std::mem::swap(&mut s.a, &mut a);
    }
    let an = a.finish();
    assert_eq!(an.stats.connections_with_handshake, 0);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Turns));
    // 3 × 6 requests, the last of each still in progress at the end (incomplete).
    assert_eq!(
        (an.exchanges.count, an.exchanges.incomplete),
        (18, 3),
        "{:?}",
        an.exchanges
    );
    let f = &an.findings[0];
    assert_eq!((f.id, f.side), (FindingId::NagleDelayedAck, Side::Server));
    let Evidence::Packets { connection, .. } = &f.evidence[0] else {
        panic!()
    };
    assert_eq!(connection, "10.0.0.1:4001 → 10.0.0.2:50000");
}

#[test]
fn configured_server_ports_orient_a_lone_connection() {
    let mut s = Script::new("10.0.0.1:4001", "10.0.0.2:50000");
    s.a = crate::analyze::Analyzer::new(AnalyzerConfig {
        server_ports: vec![443, 50000],
        ..Default::default()
    });
    nagle_turns(&mut s, 6);
    let an = s.a.finish();
    assert_eq!((an.exchanges.count, an.exchanges.incomplete), (6, 1));
    let f = &an.findings[0];
    assert_eq!((f.id, f.side), (FindingId::NagleDelayedAck, Side::Server));
}

#[test]
fn pipelining_is_flagged_approximate() {
    // HTTP/1 pipelining: a second request before the response.
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..3 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(10_000, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        s.send(10_000, false, F::PSH | F::ACK, HDR);
    }
    s.close();
    let an = s.a.finish();
    assert_eq!(an.stats.pipelined_connections, 1);
    assert!(
        an.warnings.iter().any(|w| w.contains("approximate")),
        "{:?}",
        an.warnings
    );

    // Plain keep-alive HTTP/1 is not flagged.
    let mut s = Script::new("10.0.0.1:40002", "10.0.0.2:80");
    s.handshake();
    for _ in 0..3 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
    }
    s.close();
    let an = s.a.finish();
    assert_eq!(an.stats.pipelined_connections, 0);
    assert!(an.warnings.is_empty(), "{:?}", an.warnings);
}

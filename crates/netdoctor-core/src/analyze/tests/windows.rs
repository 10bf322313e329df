//! Windows, idle eviction and observations without packets.

use std::time::Duration;

use super::script::*;
use crate::analyze::{Analyzer, AnalyzerConfig};
use crate::decode::TcpFlags as F;
use crate::finding::{Evidence, FindingId, Severity};
use crate::observation::Observation;

/// One keep-alive exchange whose response is held 40 ms by the server's Nagle.
fn nagle_exchange(s: &mut Script) {
    s.send(MS, true, F::PSH | F::ACK, REQ);
    s.send(100_000, false, F::PSH | F::ACK, HDR);
    s.send(40 * MS, true, F::ACK, b"");
    s.send(100_000, false, F::PSH | F::ACK, &[b'x'; 600]);
}

#[test]
fn a_window_reports_and_the_analyzer_goes_on() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..11 {
        nagle_exchange(&mut s);
    }
    // The 11th exchange completes with the next request.
    let w1 = s.a.take_window(s.t);
    assert_eq!(w1.exchanges.count, 10);
    assert_eq!(w1.findings[0].id, FindingId::NagleDelayedAck);
    assert_eq!(w1.findings[0].severity, Severity::Critical);
    // Evidence carries absolute timestamps (epoch seconds) next to the relative ones.
    let Evidence::Packets { packets, .. } = &w1.findings[0].evidence[0] else {
        panic!("{:?}", w1.findings[0].evidence)
    };
    assert!(
        packets[0].ts > 1.7e9 && packets[0].time < 1.0,
        "{packets:?}"
    );
    assert_eq!(s.a.window_start_ns(), Some(s.t));

    // The next window: fast exchanges only on the same, still open, connection.
    for _ in 0..5 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        s.send(50_000, true, F::ACK, b"");
    }
    s.close();
    let w2 = s.a.take_window(s.t);
    // The 11th exchange (its stall was reported in the window it happened in) and the 5
    // fast ones; no stall in this window.
    assert_eq!(w2.exchanges.count, 6);
    assert!(w2.findings.is_empty(), "{:?}", w2.findings);
    // Cumulative capture figures, per-window findings.
    assert_eq!(w2.stats.connections, 1);
    let end = s.a.finish();
    assert_eq!(end.exchanges.count, 0, "everything was reported already");
    assert!(end.findings.is_empty(), "{:?}", end.findings);
}

#[test]
fn idle_connections_are_evicted_and_counted() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.a = Analyzer::new(AnalyzerConfig::default()).idle_timeout(Duration::from_secs(30));
    for port in 0..3u16 {
        s.c.set_port(20000 + port);
        s.handshake();
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        s.send(50_000, true, F::ACK, b"");
        // no FIN: the connection stays open
    }
    assert_eq!(s.a.open_connections(), 3);
    // A minute later one new connection's packet arrives: the three idle ones go.
    s.t += 60_000 * MS;
    s.c.set_port(21000);
    s.handshake();
    assert_eq!(s.a.open_connections(), 1);
    let w = s.a.take_window(s.t);
    assert_eq!(w.stats.connections_evicted, 3);
    // Evicted connections' exchanges in their response phase were completed.
    assert_eq!(w.exchanges.count, 3);
    // A window taken much later evicts the last one too.
    let w = s.a.take_window(s.t + 31_000 * MS);
    assert_eq!(w.stats.connections_evicted, 4);
    assert_eq!(s.a.open_connections(), 0);
    let json = serde_json::to_string(&w.stats).unwrap();
    assert!(json.contains("\"connections_evicted\":4"), "{json}");
}

#[test]
fn without_a_timeout_nothing_is_evicted() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    s.send(MS, true, F::PSH | F::ACK, REQ);
    s.t += 3_600_000 * MS;
    s.c.set_port(20001);
    s.handshake();
    assert_eq!(s.a.open_connections(), 2);
    let an = s.a.finish();
    assert_eq!(an.stats.connections_evicted, 0);
    let json = serde_json::to_string(&an.stats).unwrap();
    assert!(
        !json.contains("connections_evicted"),
        "unchanged JSON: {json}"
    );
}

#[test]
fn observations_alone_make_findings() {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    a.observe(Observation::ConnectRefused {
        addr: "127.0.0.1:9".into(),
        syn_sent: 3,
        syn_refused: 3,
    });
    let an = a.finish();
    assert_eq!(an.stats.packets, 0);
    assert_eq!(an.exchanges.count, 0);
    assert_eq!(an.findings.len(), 1);
    assert_eq!(an.findings[0].id, FindingId::ServerNotListening);
    assert!(an.warnings.is_empty(), "{:?}", an.warnings);
    // Observations only: a problem, whatever the (missing) evidence.
    let mut findings = an.findings.clone();
    let o = crate::verdict::decide(&mut findings, &an.verdict_inputs());
    assert_eq!(o.verdict, crate::finding::Verdict::Problem);
}

#[test]
fn the_verdict_of_a_capture_needs_twenty_exchanges() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..crate::verdict::MIN_EXCHANGES {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        s.send(50_000, true, F::ACK, b"");
    }
    // The last exchange completes with the close: 20 in all.
    s.close();
    let an = s.a.finish();
    assert_eq!(an.exchanges.count, crate::verdict::MIN_EXCHANGES);
    let mut f = an.findings.clone();
    let o = crate::verdict::decide(&mut f, &an.verdict_inputs());
    assert_eq!(o.verdict, crate::finding::Verdict::Healthy, "{o:?}");
    let fewer = crate::verdict::VerdictInputs {
        exchanges: an.exchanges.count - 1,
        ..an.verdict_inputs()
    };
    assert_eq!(
        crate::verdict::decide(&mut f, &fewer).verdict,
        crate::finding::Verdict::Inconclusive
    );
}

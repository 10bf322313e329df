//! Exchanges from HTTP/2 frames on real cleartext (h2c) captures made in two namespaces by
//! `testdata/captures/make-h2.sh`: nginx 1.22 (`listen … http2;`) under
//! `h2load -n 200 -c 4 -m 10` with every other request a 404, and a python3-h2 server with
//! Nagle on that writes its headers and body apart, under `h2load -n 40 -c 1 -m 1`.

mod common;

use common::for_each_packet;
use netdoctor_core::analyze::ExchangeMethod;
use netdoctor_core::finding::{FindingId, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze(name: &str) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

#[test]
fn nginx_h2c_gives_one_exchange_per_request_with_its_status() {
    let an = analyze("h2c-nginx.pcap");
    assert_eq!(an.stats.decode_errors, 0);
    assert_eq!(an.stats.connections_with_handshake, 4, "{:?}", an.stats);
    // h2load sent 200 requests: 200 exchanges, none approximate.
    assert_eq!(an.exchanges.count, 200, "{:?}", an.exchanges);
    assert_eq!(an.exchanges.incomplete, 0);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::H2));
    assert_eq!(an.stats.pipelined_connections, 0);
    assert!(an.exchanges.latency_ms.p50 < 20.0, "{:?}", an.exchanges);
    // Half were 404 (HPACK-decoded `:status`): http_errors from the capture alone.
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::HttpErrors)
        .unwrap_or_else(|| panic!("{:#?}", an.findings));
    assert!(
        f.summary.contains("50.0%") || f.summary.contains("100 of 200"),
        "{}",
        f.summary
    );
    assert!(format!("{:?}", f.evidence).contains("HTTP 404"));
    assert!(an.warnings.is_empty(), "{:?}", an.warnings);
}

#[test]
fn nagle_on_h2_server_is_server_nagle_per_stream() {
    let an = analyze("h2c-nagle.pcap");
    assert_eq!(an.exchanges.count, 40, "{:?}", an.exchanges);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::H2));
    let f = &an.findings[0];
    assert_eq!(f.id, FindingId::NagleDelayedAck, "{:#?}", an.findings);
    assert_eq!(f.side, Side::Server);
    let frac = f.impact.affected_fraction.unwrap();
    assert!(frac >= 0.9, "affected fraction {frac}");
    assert!(
        (35.0..=60.0).contains(&an.exchanges.latency_ms.p50),
        "{:?}",
        an.exchanges
    );
}

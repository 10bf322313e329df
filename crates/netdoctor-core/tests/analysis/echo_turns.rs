//! An exchange is HTTP/1.x only when its answer is an HTTP status line: an echo service
//! (zeek-echo-connections from the shared corpus, `../shared/realworld-pcaps/`, skipped when
//! missing) is a plain request/response protocol, counted as exchanges found from turns. The
//! look-alikes keep their label: real HTTP on odd ports (committed lab captures on :18094 and
//! :8080), pipelined HTTP (zeek-pipelined-requests), a line protocol, and an HTTP server whose
//! answers are rewritten in memory into garbage (then the exchanges are not HTTP any more).

use crate::common;

use common::{corpus_file, for_each_packet};
use netdoctor_core::analyze::ExchangeMethod;
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, RawPacket};

/// Analyses `name` (a committed capture, or a path), each packet's bytes first passed to `edit`.
fn analyze_with(name: &str, edit: impl Fn(&mut Vec<u8>)) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| {
        let mut data = p.data.to_vec();
        edit(&mut data);
        a.push(&RawPacket { data: &data, ..*p });
    });
    a.finish()
}

#[test]
fn an_echo_service_is_not_http() {
    // 500 connections to :7000, each sending `a` and getting `a` back 52 times.
    let Some(path) = corpus_file("zeek-echo-connections.pcap.gz") else {
        return;
    };
    let an = analyze_with(path.to_str().unwrap(), |_| {});
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Turns));
    // Still every exchange, only not called HTTP.
    assert!(an.exchanges.count >= 25_000, "{}", an.exchanges.count);
}

#[test]
fn pipelined_http_stays_http() {
    let Some(path) = corpus_file("zeek-pipelined-requests.pcap") else {
        return;
    };
    let an = analyze_with(path.to_str().unwrap(), |_| {});
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Http1));
}

#[test]
fn http_on_odd_ports_stays_http_and_a_line_protocol_stays_turns() {
    for name in ["reset.pcap", "nagle-eth.pcap", "slow-eth.pcap"] {
        let an = analyze_with(name, |_| {});
        assert_eq!(an.exchanges.method, Some(ExchangeMethod::Http1), "{name}");
    }
    let an = analyze_with("line-midstream.pcap", |_| {});
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Turns));
}

#[test]
fn an_http_request_answered_with_garbage_is_not_an_http_exchange() {
    // nagle-eth.pcap with every `HTTP/1.1 ` status line turned into `XTTP/1.1 `: the
    // requests are HTTP, the answers are not.
    let garbled = |d: &mut Vec<u8>| {
        // Not the request line's `GET / HTTP/1.1` (after a space).
        if let Some(i) = d.windows(9).position(|w| w == b"HTTP/1.1 ")
            && !d[..i].ends_with(b" ")
        {
            d[i] = b'X';
        }
    };
    let plain = analyze_with("nagle-eth.pcap", |_| {});
    let an = analyze_with("nagle-eth.pcap", garbled);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::Turns));
    assert_eq!(an.exchanges.count, plain.exchanges.count);
}

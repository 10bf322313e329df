//! The round trip inside a request → first byte gap is the capture point's leg to the server
//! (SYN → SYN/ACK), not the whole handshake RTT: at the client they are the same, at the
//! server the gap holds no round trip at all, midway only the server's side. Subtracting the
//! whole RTT everywhere read a server-side capture's answers as network (corpus captures of
//! `../shared/realworld-pcaps/`, skipped when missing). No side is judged, so the
//! microsecond legs of a LAN decide nothing (unlike `SynState::near_client`).

use crate::common;

use common::{corpus_file, for_each_packet};
use netdoctor_core::finding::FindingId;
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze(name: &str) -> Option<Analysis> {
    let path = corpus_file(name)?;
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(path.to_str().unwrap(), |p| a.push(p));
    Some(a.finish())
}

#[test]
fn at_the_server_the_answer_time_is_the_servers() {
    // arkime-http-500-head: SYN → SYN/ACK 1.5 ms, SYN/ACK → ACK 383.8 ms (the client is far);
    // the request arrives, the server ACKs it 1.5 ms later and answers 2.8 ms after it.
    // Before: server time 0 ms, the 2.8 ms charged to network (a 385 ms RTT subtracted).
    let Some(an) = analyze("arkime-http-500-head.pcap") else {
        return;
    };
    let st = an.exchanges.server_time_ms.p50;
    assert!((1.0..=2.8).contains(&st), "server time {st} ms");
    let b = an.exchanges.breakdown_p50_ms.expect("a p50 breakdown");
    assert!(b.network < 2.0, "network {} ms", b.network);
    assert!(b.server > 1.0, "server {} ms", b.server);
}

#[test]
fn a_client_slow_to_ack_its_handshake_does_not_make_the_server_slow() {
    // ndpi-iphone, captured next to a phone: SYN → SYN/ACK 35–40 ms, but the phone ACKed some
    // SYN/ACKs 90–118 ms later. Judging those connections "captured at the server" (the legs
    // differ 3×) and subtracting nothing made a false 30.9 ms `slow_server_processing`; the
    // whole RTT (130 ms) hid the server's time. The server's leg keeps both right.
    let Some(an) = analyze("ndpi-iphone.pcap") else {
        return;
    };
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::SlowServerProcessing),
        "{:#?}",
        an.findings
    );
    let b = an.exchanges.breakdown_p50_ms.expect("a p50 breakdown");
    assert!(
        (30.0..45.0).contains(&b.network),
        "network {} ms",
        b.network
    );
}

#[test]
fn at_the_client_the_path_stays_network() {
    // The look-alikes at the client, where SYN → SYN/ACK is the whole RTT: zeek-get (70 ms
    // path, a quick server) and ppa-http_post (81 ms path, a server taking ~1 s).
    if let Some(an) = analyze("zeek-get.pcap") {
        let b = an.exchanges.breakdown_p50_ms.expect("a p50 breakdown");
        assert!(
            (69.0..71.0).contains(&b.network),
            "network {} ms",
            b.network
        );
        assert!(an.exchanges.server_time_ms.p50 < 1.0);
    }
    if let Some(an) = analyze("ppa-http_post.pcapng") {
        let st = an.exchanges.server_time_ms.p50;
        assert!((985.0..995.0).contains(&st), "server time {st} ms");
        assert!(
            an.findings
                .iter()
                .any(|f| f.id == FindingId::SlowServerProcessing),
            "{:#?}",
            an.findings
        );
    }
}

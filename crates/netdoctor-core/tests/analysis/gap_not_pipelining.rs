//! A capture gap is not HTTP pipelining. When the capture drops a server's whole answer, the
//! client's next request line arrives while the exchange still waits for that answer: from
//! the client's data alone that is a pipelined request. Its ACK tells them apart: it covers
//! the server data the capture missed, where a pipelining client has acknowledged nothing
//! beyond what was captured. Gaps are made here on real captures (three server data frames
//! dropped in every fifty, as a capture that drops under load does, ACKs kept); real
//! pipelining, HTTP/2, retransmissions and request bodies in several segments are the
//! look-alikes that must keep their reading.

use crate::common;

use common::{analyze, corpus_file, for_each_packet};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

/// `name` with three of every fifty frames dropped when they carry server data (Ethernet,
/// IPv4, server port `port`).
fn with_gap(name: &str, port: u16) -> Analysis {
    dropping(name, port, |frame, _| (frame - 1) % 50 < 3)
}

/// `name` without the server data frames `drop(frame number, server data frame number)`
/// picks (both from 1).
fn dropping(name: &str, port: u16, drop: impl Fn(u64, u64) -> bool) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    let (mut k, mut n) = (0u64, 0u64);
    for_each_packet(name, |p| {
        k += 1;
        let d = p.data;
        let ihl = usize::from(d.get(14).map_or(5, |b| b & 15)) * 4;
        let t = 14 + ihl;
        let server = d.len() > t + 13 && u16::from_be_bytes([d[t], d[t + 1]]) == port;
        let total = usize::from(u16::from_be_bytes([d[16], d[17]]));
        let payload =
            total.saturating_sub(ihl + usize::from(d.get(t + 12).map_or(0, |b| b >> 4)) * 4);
        if server && payload > 0 {
            n += 1;
            if drop(k, n) {
                return;
            }
        }
        a.push(p);
    });
    a.finish()
}

#[test]
fn answers_the_capture_dropped_are_not_pipelined_requests() {
    for (name, port) in [("healthy-eth.pcap", 18080), ("slow-eth.pcap", 18082)] {
        let whole = analyze(name).0;
        assert_eq!(whole.stats.pipelined_connections, 0, "{name}");
        let an = with_gap(name, port);
        // The gap is there and said (the frames were dropped)...
        assert!(an.stats.capture_gaps > 0, "{name}: {:?}", an.stats);
        // ...and it is not told as pipelining (it was: 6 and 8 connections).
        assert_eq!(
            an.stats.pipelined_connections, 0,
            "{name}: {:?}",
            an.warnings
        );
        assert!(
            !an.warnings.iter().any(|w| w.contains("pipelined")),
            "{name}: {:?}",
            an.warnings
        );
    }
}

#[test]
fn real_pipelining_is_still_said() {
    // Real HTTP/1.1 pipelining (`make-trust.sh`): three requests written before any answer,
    // on each of 5 connections.
    let whole = analyze("pipelined.pcap.gz").0;
    assert_eq!(whole.stats.pipelined_connections, 5, "{:?}", whole.stats);
    assert!(whole.warnings.iter().any(|w| w.contains("pipelined")));
    // With answers dropped by the capture too: the requests still went before any answer.
    // (The first of each connection's three answers: every third server data frame.)
    let an = dropping("pipelined.pcap.gz", 19303, |_, n| n % 3 == 1);
    assert!(an.stats.capture_gaps > 0, "{:?}", an.stats);
    assert_eq!(an.stats.pipelined_connections, 5, "{:?}", an.stats);
    // zeek-pipelined-requests (a browser's requests, each after the first segment of the
    // answer before it) is not pipelining either way.
    if let Some(path) = corpus_file("zeek-pipelined-requests.pcap") {
        assert_eq!(
            analyze(path.to_str().unwrap())
                .0
                .stats
                .pipelined_connections,
            0
        );
    }
}

#[test]
fn http2_retransmissions_and_bodies_in_segments_are_not_pipelining() {
    // HTTP/2 (the preface makes it an HTTP/2 connection, read per stream), retransmissions
    // (a resent request is not a second one), a body in several segments.
    for name in [
        "h2c-nginx.pcap",
        "loss.pcap",
        "rto.pcap",
        "tls-healthy.pcap",
    ] {
        let an = analyze(name).0;
        assert_eq!(an.stats.pipelined_connections, 0, "{name}");
    }
    if let Some(path) = corpus_file("ppa-http_post.pcapng") {
        let an = analyze(path.to_str().unwrap()).0;
        assert_eq!(an.stats.pipelined_connections, 0);
    }
}

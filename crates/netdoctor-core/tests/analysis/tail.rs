//! Where the tail goes, on real traffic: the breakdown bands (p50 … max) of the committed
//! captures charge each band's time to the cause the packets show: Nagle behind the delayed
//! ACK on every band of `nagle-eth.pcap`, the 1 s SYN retransmission on the slowest band of
//! `syn-tail.pcap` (the client waited for it before its first request), the RTO on the
//! slowest band of `rto.pcap`, and nothing stalled on `healthy-eth.pcap`.

use crate::common;

use common::for_each_packet;
use netdoctor_core::finding::FindingId;
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, Breakdown};

fn analyze(name: &str) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

fn add_up(b: &Breakdown) {
    let sum = b.network + b.server + b.transfer + b.stalls_total();
    assert!((sum - b.latency).abs() < 1e-6, "{b:?}");
}

/// The cause with most milliseconds in the band, with its milliseconds and share.
fn top(b: &Breakdown) -> (FindingId, f64, f64) {
    b.causes(0.0)[0]
}

#[test]
fn the_nagle_tail_is_nagle_on_almost_every_request_of_the_band() {
    let an = analyze("nagle-eth.pcap");
    let e = &an.exchanges;
    for b in [
        e.breakdown_p50_ms,
        e.breakdown_p90_ms,
        e.breakdown_p99_ms,
        e.breakdown_p999_ms,
        e.breakdown_max_ms,
    ] {
        let b = b.expect("band");
        add_up(&b);
        let (id, ms, share) = top(&b);
        assert_eq!(id, FindingId::NagleDelayedAck, "{b:?}");
        assert!(ms > 0.8 * b.latency && share > 0.9, "{b:?}");
        assert!(b.requests > 0 && b.requests <= e.count, "{b:?}");
    }
    // The p50 band is the same as before bands existed: 43.9 ms with 43.8 ms of Nagle.
    let p50 = e.breakdown_p50_ms.unwrap();
    assert!((p50.latency - 43.9).abs() < 0.5, "{p50:?}");
}

#[test]
fn the_slowest_band_of_a_syn_retransmit_run_is_the_syn_retransmission() {
    let an = analyze("syn-tail.pcap");
    let e = &an.exchanges;
    let max = e.breakdown_max_ms.expect("max band");
    add_up(&max);
    let (id, ms, share) = top(&max);
    assert_eq!(id, FindingId::SynRetransmit, "{max:?}");
    // Linux's first SYN retransmission comes after 1 s.
    assert!(ms >= 900.0 && share == 1.0, "{max:?}");
    assert!(max.latency >= ms, "{max:?}");
    // The exchange's own latency (first request byte → last response byte) leaves the wait
    // for the handshake out; the band's latency is what the client waited.
    assert!(
        e.latency_ms.max + 500.0 < max.latency,
        "{:?} {max:?}",
        e.latency_ms
    );
    // The typical request did not wait for a SYN.
    let p50 = e.breakdown_p50_ms.unwrap();
    assert_eq!(p50.stalls.get(FindingId::SynRetransmit), 0.0, "{p50:?}");
}

#[test]
fn the_slowest_band_of_an_rto_run_is_the_retransmission_timeout() {
    let an = analyze("rto.pcap");
    let max = an.exchanges.breakdown_max_ms.expect("max band");
    add_up(&max);
    let (id, ms, share) = top(&max);
    assert_eq!(id, FindingId::RetransmissionTimeout, "{max:?}");
    assert!(ms >= 200.0 && share > 0.5, "{max:?}");
}

#[test]
fn a_healthy_run_has_no_stall_in_any_band() {
    let an = analyze("healthy-eth.pcap");
    let e = &an.exchanges;
    for b in [e.breakdown_p50_ms, e.breakdown_p99_ms, e.breakdown_max_ms] {
        let b = b.expect("band");
        add_up(&b);
        assert!(b.stalls_total() < 0.01 * b.latency.max(1.0), "{b:?}");
    }
}

//! `analyze` on packets alone for a shaper with a deep queue (bufferbloat): captured with
//! `netdoctor diagnose --pcap FILE --snaplen 96` in the client's namespace (gzip'd), nginx
//! serving 50 KB behind `htb rate 50mbit` with a 5,000-packet `pfifo` on the server's veth
//! (`crates/netdoctor/tests/live/bloat.rs` builds the same lab):
//!
//! - `bloat-htb-pfifo.pcap.gz`: 16 connections for 2 s. Nothing is lost; the round trip under
//!   load (the client's timestamps echoed by the server's data) is tens of ms against a
//!   0.05 ms handshake: `shaper_limited` held by a deep queue, on the network (the capture
//!   cannot say on whose host the queue is), and the queue's wait is not server time;
//! - `bloat-low-load.pcap.gz`: the same queue, one connection: no queue of others' data, no
//!   finding.

use crate::common;

use common::for_each_packet;
use netdoctor_core::finding::{FindingId, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze(name: &str) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

/// A number after `key` in `text`.
fn number_after(text: &str, key: &str) -> f64 {
    text.split(key)
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no number after {key:?} in {text}"))
}

#[test]
fn a_deep_queue_behind_a_shaper_is_found_from_the_packets() {
    let an = analyze("bloat-htb-pfifo.pcap.gz");
    assert_eq!(an.stats.connections, 16, "{:?}", an.stats);
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::ShaperLimited)
        .unwrap_or_else(|| panic!("no shaper_limited: {:#?}", an.findings));
    assert_eq!(an.findings[0].id, FindingId::ShaperLimited);
    assert_eq!(f.side, Side::Network);
    assert!(f.summary.contains("deep queue"), "{}", f.summary);
    let rate = number_after(&f.summary, "a flat ");
    assert!((40.0..=52.0).contains(&rate), "{}", f.summary);
    let (loaded, idle, queue) = (
        number_after(&f.summary, "the round trip was "),
        number_after(&f.summary, "against "),
        number_after(&f.summary, "— "),
    );
    assert!(loaded >= 10.0 && idle < 1.0, "{}", f.summary);
    assert!((queue - (loaded - idle)).abs() <= 0.11, "{}", f.summary);
    assert_eq!(
        f.impact.added_latency_ms.map(|v| (v * 10.0).round()),
        Some((queue * 10.0).round())
    );
    // No loss in this capture: the finding does not rest on one.
    assert!(
        !an.findings
            .iter()
            .any(|f| f.id == FindingId::PacketLossRetransmission),
        "{:#?}",
        an.findings
    );
    // The typical request's breakdown agrees: the wait in the queue is transfer, not the
    // server's time.
    let b = an.exchanges.breakdown_p50_ms.expect("a p50 breakdown");
    assert!(b.transfer >= 0.5 * b.latency, "{b:?}");
    assert!(b.server < 0.25 * b.latency, "{b:?}");
}

#[test]
fn the_same_queue_at_low_load_is_healthy() {
    let an = analyze("bloat-low-load.pcap.gz");
    assert_eq!(an.stats.connections, 1, "{:?}", an.stats);
    assert!(an.exchanges.count >= 100, "{}", an.exchanges.count);
    assert!(
        an.findings.iter().all(|f| f.id != FindingId::ShaperLimited),
        "{:#?}",
        an.findings
    );
}

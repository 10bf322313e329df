//! Time a response's first byte spent in a queue after the server sent it (a token-bucket
//! shaper on the server's interface) is not server time: the server's TCP timestamp says when
//! the byte left (`track/tsclock.rs`). Captures made by `testdata/captures/make-queue.sh`
//! at the client: nginx behind tbf 20 Mbit/s; a server that really takes 15 ms, without and
//! with the same shaper.

use crate::common;

use common::for_each_packet;
use netdoctor_core::finding::FindingId;
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze(name: &str) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

#[test]
fn queue_wait_behind_a_shaper_is_not_server_time() {
    // nginx answers a 50 KB file at once; 4 connections share the 20 Mbit/s bucket, so each
    // response's first byte waits behind the others' data (tens of ms). Before: server time
    // p50 14.2 ms, p50 band 17.8 ms "server".
    let an = analyze("shaper-queue.pcap.gz");
    let x = &an.exchanges;
    assert!(x.count >= 40, "{}", x.count);
    assert!(x.server_time_ms.p50 < 3.0, "{:?}", x.server_time_ms);
    let b = x.breakdown_p50_ms.expect("p50 band");
    assert!(b.server < 3.0, "{b:?}");
    // The wait stays in the latency (as transfer): nothing is hidden.
    assert!(x.latency_ms.p50 > 20.0, "{:?}", x.latency_ms);
    assert!(b.transfer > 0.5 * b.latency, "{b:?}");
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::SlowServerProcessing),
        "{:#?}",
        an.findings
    );
}

#[test]
fn a_server_that_takes_15_ms_keeps_its_time_with_or_without_the_shaper() {
    // Look-alikes: the first byte is late because the server is (python3 sleeping 15 ms):
    // its TCP timestamp is late too, and the time stays the server's.
    let an = analyze("slow-server-15ms.pcap.gz");
    assert!(
        an.exchanges.server_time_ms.p50 >= 14.0,
        "{:?}",
        an.exchanges.server_time_ms
    );
    assert!(
        an.findings
            .iter()
            .any(|f| f.id == FindingId::SlowServerProcessing),
        "{:#?}",
        an.findings
    );
    let shaped = analyze("slow-server-shaped.pcap.gz");
    assert!(
        shaped.exchanges.server_time_ms.p50 >= 14.0,
        "{:?}",
        shaped.exchanges.server_time_ms
    );
}

#[test]
fn a_server_clock_of_100_hz_is_not_read_as_queueing() {
    // zeek-missing-syn (shared corpus, skipped when missing): the server's TSval ticks every
    // 10 ms; read as 1 ms ticks, its first byte would have "left" 166 ms before it arrived.
    // Its 184 ms first-byte time stays the server's.
    let path = std::env::var_os("NETDOCTOR_REALWORLD_PCAPS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/realworld-pcaps")
        })
        .join("zeek-missing-syn.pcap");
    if !path.exists() {
        eprintln!(
            "skipped: needs {} (the shared realworld-pcaps corpus)",
            path.display()
        );
        return;
    }
    let an = analyze(path.to_str().unwrap());
    let st = an.exchanges.server_time_ms.p50;
    assert!(
        (180.0..190.0).contains(&st),
        "{:?}",
        an.exchanges.server_time_ms
    );
}

//! After 101 Switching Protocols nothing on the connection is an HTTP exchange (session 29,
//! s29d's hunt). `websocket.pcap.gz` (`make-websocket.sh`): a WebSocket whose client sends 6
//! frames 250 ms apart, each echoed 20 ms later, while the server pushes a frame every 300 ms.
//! Read as direction turns, the pushes were an answer "written slowly": 7 exchanges and
//! `slow_server_processing` warning (confidence 0.82) on nd-start29. Now one exchange, the
//! upgrade itself.
//!
//! Look-alike: a server that really writes its answer slowly (`python-writer-40ms`, 8 KB every
//! 40 ms, no upgrade) keeps `slow_server_processing`.
use crate::common::analyze;
use netdoctor_core::finding::FindingId;

#[test]
fn a_websocket_after_its_upgrade_is_not_read_as_slow_answers() {
    let (an, _) = analyze("websocket.pcap.gz");
    assert_eq!(
        an.exchanges.count, 1,
        "only the upgrade request and its 101"
    );
    let ids: Vec<FindingId> = an.findings.iter().map(|f| f.id).collect();
    assert!(!ids.contains(&FindingId::SlowServerProcessing), "{ids:?}");
    let (writer, _) = analyze("python-writer-40ms.pcap.gz");
    assert!(
        writer
            .findings
            .iter()
            .any(|f| f.id == FindingId::SlowServerProcessing),
        "{:?}",
        writer.findings.iter().map(|f| f.id).collect::<Vec<_>>()
    );
}

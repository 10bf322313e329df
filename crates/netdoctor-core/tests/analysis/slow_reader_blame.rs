//! A client that reads slowly is charged to the client, not the server (session 29, s29a).
//! `make-python-reader.sh`: a python3 client reads nginx's 1 MB at ~200 KB/s.
//! - `python-reader-300ms`: 64 KB per recv, 300 ms asleep. The server filled the client's
//!   window, sent the last sub-MSS room when its persist timer fired (~220 ms later), then
//!   waited for the window update: nd-start29 read those pauses as "writes the body slowly",
//!   `slow_server_processing` critical (3.37 s). A segment that fills a window with no room for
//!   a full one waited for the window (`Conn::window_held`).
//! - `python-reader-40ms`: 8 KB per recv, 40 ms asleep. Its window updates (40 ms after the
//!   data, the window raised by a full segment or more) were `delayed_ack_stall` x8; and BBR's
//!   pacing after it (2-4 ms between segments of one write, no PSH) was 677 ms of server time.
//!
//! Look-alike: `python-writer-40ms`, a server writing 8 KB every 40 ms to a fast reader: its
//! pauses follow its pushed (PSH) write ends with the window open: slow_server_processing stays.
use crate::common::{analyze, one};
use netdoctor_core::Analysis;
use netdoctor_core::finding::{FindingId, Severity, Side};

fn ids(an: &Analysis) -> Vec<FindingId> {
    an.findings.iter().map(|f| f.id).collect()
}

#[test]
fn a_slow_reader_is_the_clients_window_not_a_slow_server() {
    for name in ["python-reader-300ms.pcap.gz", "python-reader-40ms.pcap.gz"] {
        let (an, _) = analyze(name);
        let z = one(&an, FindingId::ZeroWindow);
        assert_eq!(
            (z.severity, z.side),
            (Severity::Critical, Side::Client),
            "{name}"
        );
        assert!(
            !ids(&an).contains(&FindingId::SlowServerProcessing),
            "{name}: {:?}",
            ids(&an)
        );
        assert!(
            !ids(&an).contains(&FindingId::DelayedAckStall),
            "{name}: {:?}",
            ids(&an)
        );
    }
}

#[test]
fn a_server_that_writes_slowly_keeps_its_story() {
    let (an, _) = analyze("python-writer-40ms.pcap.gz");
    let s = one(&an, FindingId::SlowServerProcessing);
    assert_eq!((s.severity, s.side), (Severity::Critical, Side::Server));
    assert!(
        s.summary.contains("writes the body slowly"),
        "{}",
        s.summary
    );
    assert!(!ids(&an).contains(&FindingId::ZeroWindow), "{:?}", ids(&an));
}

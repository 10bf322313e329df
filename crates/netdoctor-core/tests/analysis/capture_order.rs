//! Frames captured out of timestamp order (a capture on several NIC queues or CPUs): read in
//! the file's order they looked like resent segments and ACKs of data never captured; put back
//! in timestamp order ([`TimeOrder`]) they are the healthy original. The file is
//! `testdata/captures/reorder-eth.pcap.gz` (`make-artefacts.py`: `healthy-eth.pcap` with
//! about one frame in seven swapped with the next, timestamps kept).

use crate::common;

use common::for_each_packet;
use netdoctor_core::analyze::order::TimeOrder;
use netdoctor_core::finding::{FindingId, Severity};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn in_file_order(name: &str) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

fn in_time_order(name: &str, sorted: u64) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    let mut order = TimeOrder::new();
    for_each_packet(name, |p| order.push(p, &mut |q| a.push(q)));
    order.finish(&mut |q| a.push(q));
    a.note_sorted_frames(sorted);
    a.finish()
}

fn ids(an: &Analysis) -> Vec<(FindingId, Severity)> {
    an.findings.iter().map(|f| (f.id, f.severity)).collect()
}

#[test]
fn frames_out_of_timestamp_order_are_counted_and_sorted_back_to_the_original() {
    let orig = in_file_order("healthy-eth.pcap");
    assert_eq!(orig.stats.quality.backdated_frames, 0);
    assert!(orig.findings.is_empty(), "{:#?}", orig.findings);

    // In the file's order: the swaps are counted and said, with what they may have faked.
    let raw = in_file_order("reorder-eth.pcap.gz");
    let back = raw.stats.quality.backdated_frames;
    assert!(back >= 100, "{:?}", raw.stats.quality);
    let said = raw.warnings.join("\n");
    assert!(
        said.contains(&format!("{back} frames are stamped earlier")) && said.contains("reordercap"),
        "{said}"
    );

    // In timestamp order: the original's analysis, the sorting said instead.
    let sorted = in_time_order("reorder-eth.pcap.gz", back);
    assert_eq!(ids(&sorted), ids(&orig), "{:#?}", sorted.findings);
    let (s, o) = (&sorted.stats, &orig.stats);
    assert_eq!(s.retransmitted_segments, o.retransmitted_segments);
    assert_eq!(s.spurious_retransmissions, 0);
    assert_eq!(s.out_of_order_segments, o.out_of_order_segments);
    assert_eq!(s.quality.missing_segments, o.quality.missing_segments);
    assert_eq!(s.quality.backdated_frames, 0);
    assert_eq!(sorted.exchanges.count, orig.exchanges.count);
    let said = sorted.warnings.join("\n");
    assert!(
        said.contains(&format!("{back} frames were stamped earlier")),
        "{said}"
    );
    assert!(!said.contains("never captured"), "{said}");
}

#[test]
fn a_capture_already_in_order_is_unchanged_by_sorting() {
    // The look-alike: real loss and retransmission, frames in order. Sorting changes nothing.
    for name in ["loss.pcap", "rto.pcap", "healthy-spurious.pcap"] {
        let a = in_file_order(name);
        let b = in_time_order(name, 0);
        assert_eq!(a.stats.quality.backdated_frames, 0, "{name}");
        assert_eq!(ids(&a), ids(&b), "{name}");
        assert_eq!(a.stats, b.stats, "{name}");
        assert_eq!(a.warnings, b.warnings, "{name}");
    }
}

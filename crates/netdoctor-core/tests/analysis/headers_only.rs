//! Captures cut to the headers (`tcpdump -s 54`): the TCP options of every segment are cut by
//! the snap length. Ports, sequence numbers, flags, window and (from the IP header) lengths are
//! whole, so the analysis reads them as tshark does; only a SYN (whose window scale would be
//! lost) is left undecoded and its connection read as one picked up mid-stream.

use crate::common;

use common::for_each_packet;
use netdoctor_core::finding::{FindingId, Severity};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, RawPacket};

fn analyze_cut(name: &str, snap: usize) -> (Analysis, u64) {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    let mut syns = 0;
    for_each_packet(name, |p| {
        // Ethernet, IPv4 with a 20-byte header: TCP flags at byte 14 + 20 + 13.
        syns += u64::from(p.data.get(47).is_some_and(|f| f & 0x02 != 0));
        let data = &p.data[..p.data.len().min(snap)];
        a.push(&RawPacket { data, ..*p });
    });
    (a.finish(), syns)
}

fn analyze(name: &str) -> Analysis {
    analyze_cut(name, usize::MAX).0
}

fn ids(an: &Analysis) -> Vec<(FindingId, Severity)> {
    an.findings.iter().map(|f| (f.id, f.severity)).collect()
}

#[test]
fn segments_whose_options_the_snap_length_cut_are_still_read() {
    for name in ["slow-eth.pcap", "loss.pcap", "nagle-eth.pcap"] {
        let whole = analyze(name);
        let (cut, syns) = analyze_cut(name, 54);
        assert!(syns > 0, "{name}");
        // Only the SYNs and SYN/ACKs are undecodable.
        assert_eq!(cut.stats.decode_errors, syns, "{name}: {:?}", cut.stats);
        assert_eq!(
            cut.stats.tcp_segments + syns,
            whole.stats.tcp_segments,
            "{name}"
        );
        assert_eq!(
            cut.findings.first().map(|f| f.id),
            whole.findings.first().map(|f| f.id),
            "{name}: {:#?}",
            cut.findings
        );
        assert_eq!(
            cut.stats.retransmitted_segments, whole.stats.retransmitted_segments,
            "{name}"
        );
    }
    // A healthy capture stays without findings (no window read unscaled, nothing invented).
    let (cut, _) = analyze_cut("healthy-eth.pcap", 54);
    assert!(ids(&cut).is_empty(), "{:#?}", cut.findings);
}

/// A SYN cut inside its options says what was lost and what it means, in one line, instead
/// of "could not be decoded"; a capture whose options all fit (snap length 96) says nothing,
/// and a frame cut for another reason still counts as undecodable.
#[test]
fn a_cut_syn_says_what_was_lost() {
    let (cut, syns) = analyze_cut("slow-eth.pcap", 54);
    assert_eq!(cut.stats.syns_cut, syns);
    let lines: Vec<_> = cut
        .warnings
        .iter()
        .filter(|w| w.contains("window scale is lost"))
        .collect();
    assert_eq!(lines.len(), 1, "{:#?}", cut.warnings);
    assert!(
        lines[0].starts_with(&format!("capture quality: {syns} SYN")),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("picked up mid-stream"), "{}", lines[0]);
    assert!(
        !cut.warnings
            .iter()
            .any(|w| w.contains("could not be decoded")),
        "{:#?}",
        cut.warnings
    );
    let (whole, _) = analyze_cut("slow-eth.pcap", 96);
    assert_eq!((whole.stats.syns_cut, whole.stats.decode_errors), (0, 0));
    assert!(whole.warnings.iter().all(|w| !w.contains("window scale")));
}

/// `analyze -j N` reads a headers-only capture as `-j 1` does: the worker that decodes a frame
/// knows its length on the wire, so a segment the snap length cut is read, and a cut SYN is
/// told as one (it was "could not be decoded" for every cut segment).
#[test]
fn workers_read_cut_segments_as_one_thread_does() {
    let cut = |jobs: usize| {
        let mut a =
            netdoctor_core::analyze::shard::ShardedAnalyzer::new(AnalyzerConfig::default(), jobs);
        for_each_packet("slow-eth.pcap", |p| {
            let data = &p.data[..p.data.len().min(54)];
            a.push(&RawPacket { data, ..*p });
        });
        a.finish()
    };
    let (one, two) = (cut(1), cut(2));
    assert!(one.stats.syns_cut > 0);
    assert_eq!(
        (
            two.stats.syns_cut,
            two.stats.decode_errors,
            two.stats.tcp_segments
        ),
        (
            one.stats.syns_cut,
            one.stats.decode_errors,
            one.stats.tcp_segments
        )
    );
    assert_eq!(one.warnings, two.warnings);
}

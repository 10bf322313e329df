//! Frames the capture lost are not a network story nor the end of the capture (s29c: a
//! full-snap tcpdump on loopback dropped frames of three 2 MB downloads that all finished, and
//! analyze said "2 cut by the end of the capture"). The `capture-drops-*` captures
//! (`testdata/captures/make-capture-drops.sh`) are one clean capture of three downloads with
//! frames deleted from it, so the truth is known: bytes the client ACKs that the file never
//! shows, with no retransmission after them, are the capture's drops (counted, not loss); an
//! answer that stopped mid-way with no close while the capture went on, in a capture that
//! shows such drops, ended in frames the capture missed (`ExchangeStats::lost_by_capture`),
//! not by the end of the capture.
//!
//! Look-alikes that keep their story: a capture really cut by its end (`editcap -r`), an answer
//! that stops mid-way in a capture without any missed segment (a server that stopped writing:
//! the file cannot tell, and nothing says the capture dropped), real loss (`loss.pcap`,
//! `bulk-loss.pcap.gz`: the sender resends, nothing is missed), and duplicated frames.

use crate::common::{analyze, for_each_packet};
use netdoctor_core::finding::FindingId;
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, RawPacket};

fn run(name: &str) -> Analysis {
    analyze(&format!("capture-drops-{name}.pcap.gz")).0
}

/// No finding blames the network or a side for what the capture lost.
fn no_loss_story(name: &str, an: &Analysis) {
    for id in [
        FindingId::PacketLossRetransmission,
        FindingId::RetransmissionTimeout,
    ] {
        assert!(
            an.findings.iter().all(|f| f.id != id),
            "{name}: {id:?} in {:#?}",
            an.findings
        );
    }
    assert_eq!(an.stats.retransmitted_segments, 0, "{name}: {:?}", an.stats);
}

#[test]
fn segments_the_capture_missed_are_counted_not_read_as_loss() {
    let clean = run("clean");
    let gaps = run("gaps");
    // tshark flags 61 frames "ACKed segment that wasn't captured" (one per ACK that covers
    // missed bytes); 69 data frames were deleted, each one segment here.
    // (one deleted frame here had a spurious resend of it captured: 68 missed.)
    let missed = gaps.stats.quality.missing_segments;
    assert!((60..=69).contains(&missed), "{:?}", gaps.stats);
    assert!(clean.stats.quality.is_clean(), "{:?}", clean.stats.quality);
    assert_eq!(
        gaps.stats.retransmitted_segments,
        clean.stats.retransmitted_segments
    );
    let ids = |an: &Analysis| an.findings.iter().map(|f| f.id).collect::<Vec<_>>();
    assert_eq!(ids(&gaps), ids(&clean));
    // The three downloads finished: three complete exchanges, none cut or lost.
    let e = &gaps.exchanges;
    assert_eq!(
        (e.count, e.incomplete, e.lost_by_capture),
        (3, 0, 0),
        "{e:?}"
    );
    assert_eq!(e.latency_ms.p99, clean.exchanges.latency_ms.p99);
    assert!(
        gaps.warnings.iter().any(|w| w
            .starts_with(&format!("capture quality: {missed} segments ("))
            && w.contains(
                "that the receiver acknowledged were never captured (dropped by the capture, \
                 not by the network)"
            )),
        "{:?}",
        gaps.warnings
    );
}

#[test]
fn answers_that_ended_in_frames_the_capture_missed_are_not_cut_by_its_end() {
    let an = run("tail");
    no_loss_story("tail", &an);
    assert!(an.stats.quality.missing_segments > 0, "{:?}", an.stats);
    // The first two downloads lost their ends (and FINs) to the capture; the third is cut by
    // the end of the capture.
    let e = &an.exchanges;
    assert_eq!(
        (e.count, e.incomplete, e.lost_by_capture),
        (3, 3, 2),
        "{e:?}"
    );
    assert!(
        an.warnings.iter().any(|w| w.starts_with(
            "capture quality: 2 exchanges ended in frames the capture \
                                    missed, not by the end of the capture"
        )),
        "{:?}",
        an.warnings
    );
}

#[test]
fn a_capture_really_cut_by_its_end_or_a_stop_without_drops_stays_cut_by_the_end() {
    for name in ["end", "stall"] {
        let an = run(name);
        assert!(
            an.stats.quality.is_clean(),
            "{name}: {:?}",
            an.stats.quality
        );
        let e = &an.exchanges;
        assert_eq!(
            (e.count, e.incomplete, e.lost_by_capture),
            (3, 1, 0),
            "{name}: {e:?}"
        );
        assert!(
            an.warnings
                .iter()
                .all(|w| !w.contains("frames the capture missed")),
            "{name}: {:?}",
            an.warnings
        );
    }
}

#[test]
fn real_loss_is_loss_and_nothing_the_capture_missed() {
    for name in ["loss.pcap", "bulk-loss.pcap.gz"] {
        let (an, _) = analyze(name);
        assert!(
            an.stats.retransmitted_segments > 0,
            "{name}: {:?}",
            an.stats
        );
        assert_eq!(an.stats.quality.missing_segments, 0, "{name}");
        assert_eq!(an.exchanges.lost_by_capture, 0, "{name}");
        assert!(
            an.findings
                .iter()
                .any(|f| f.id == FindingId::PacketLossRetransmission),
            "{name}: {:#?}",
            an.findings
        );
    }
}

#[test]
fn duplicated_frames_change_nothing_of_what_the_capture_missed() {
    let once = run("tail");
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet("capture-drops-tail.pcap.gz", |p| {
        a.push(p);
        a.push(&RawPacket { ..*p });
    });
    let twice = a.finish();
    assert!(twice.stats.quality.duplicate_frames > 0);
    let (o, t) = (&once.exchanges, &twice.exchanges);
    assert_eq!(
        (t.count, t.incomplete, t.lost_by_capture),
        (o.count, o.incomplete, o.lost_by_capture)
    );
    assert_eq!(
        twice.stats.quality.missing_segments,
        once.stats.quality.missing_segments
    );
    no_loss_story("tail twice", &twice);
}

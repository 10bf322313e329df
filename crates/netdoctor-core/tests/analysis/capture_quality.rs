//! The capture-quality layer on captures that have each problem (issue 19): duplicate frames,
//! capture gaps, fast retransmission on a long path, a timeout never acknowledged, a reset
//! after the close. The hand-made ones are written by `testdata/captures/make-quality.py`.

use crate::common;

use common::for_each_packet;
use netdoctor_core::analyze::SegFlags;
use netdoctor_core::finding::{FindingId, Severity, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, RawPacket};

fn analyze(name: &str) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

/// Every frame pushed twice, as `mergecap -w dup.pcap ok.pcap ok.pcap` or a port mirror that
/// copies each packet writes it.
fn analyze_doubled(name: &str) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| {
        a.push(p);
        a.push(&RawPacket { ..*p });
    });
    a.finish()
}

fn flags(name: &str) -> Vec<(u64, SegFlags)> {
    let mut a = Analyzer::new(AnalyzerConfig::default()).record_flags();
    for_each_packet(name, |p| a.push(p));
    a.take_flags()
}

fn ids(an: &Analysis) -> Vec<(FindingId, Severity)> {
    an.findings.iter().map(|f| (f.id, f.severity)).collect()
}

#[test]
fn duplicated_frames_change_nothing_but_the_quality_count() {
    for name in [
        "healthy-eth.pcap",
        "lab-healthy.pcap",
        "loss.pcap",
        "rto.pcap",
    ] {
        let ok = analyze(name);
        let dup = analyze_doubled(name);
        assert_eq!(ids(&dup), ids(&ok), "{name}: {:#?}", dup.findings);
        assert_eq!(dup.exchanges.count, ok.exchanges.count, "{name}");
        let (s, o) = (&dup.stats, &ok.stats);
        // Every copy but those of a connection's last packets (its state is gone after both
        // FINs or the RST, and the copy is ignored like the original).
        assert!(
            s.quality.duplicate_frames <= o.tcp_segments
                && s.quality.duplicate_frames + 2 * o.connections >= o.tcp_segments,
            "{name}: {s:?}"
        );
        assert_eq!(s.retransmitted_segments, o.retransmitted_segments, "{name}");
        assert_eq!(s.syn_retransmits, o.syn_retransmits, "{name}");
        assert_eq!(s.duplicate_acks, o.duplicate_acks, "{name}");
        assert!(s.retransmitted_segments <= s.data_segments, "{name}: {s:?}");
        // Same numbers in the stories (no 100 % or 200 % retransmissions).
        for (a, b) in dup.findings.iter().zip(&ok.findings) {
            assert_eq!(a.summary, b.summary, "{name}");
        }
        assert!(
            dup.warnings
                .iter()
                .any(|w| w.starts_with("capture quality:") && w.contains("duplicate frames")),
            "{name}: {:?}",
            dup.warnings
        );
        assert!(
            ok.stats.quality.is_clean(),
            "{name}: {:?}",
            ok.stats.quality
        );
    }
}

#[test]
fn a_resend_right_after_three_duplicate_acks_is_fast_retransmit_not_a_timeout() {
    // Captured at the server, RTT 166 ms: the server had been silent for an RTT, the
    // retransmission left 51 µs after the third duplicate ACK.
    let an = analyze("fast-retx-longrtt.pcap");
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::RetransmissionTimeout),
        "{:#?}",
        an.findings
    );
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::PacketLossRetransmission)
        .expect("packet_loss_retransmission");
    assert_eq!(f.side, Side::Network);
    // One request, stalled one RTT by the loss: critical on 100 % of requests.
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.summary
            .contains("1 segments of the server's data retransmitted"),
        "{}",
        f.summary
    );
    assert!(
        f.explanation.contains("duplicate ACKs"),
        "{}",
        f.explanation
    );
    let s = &an.stats;
    assert_eq!(
        (s.fast_retransmissions, s.rto_retransmissions),
        (1, 0),
        "{s:?}"
    );
    // Frame 20, as tshark: "fast retransmission"; frames 15–19, 21–24 duplicate ACKs.
    let fl = flags("fast-retx-longrtt.pcap");
    let at = |n: u64| {
        fl.iter()
            .find(|(f, _)| *f == n)
            .map(|x| x.1)
            .unwrap_or_default()
    };
    assert!(at(20).has(SegFlags::FAST_RETRANSMISSION), "{fl:?}");
    assert!(!at(20).has(SegFlags::RTO_RETRANSMISSION));
    for n in (15..=19).chain(21..=24) {
        assert!(at(n).has(SegFlags::DUPLICATE_ACK), "frame {n}: {fl:?}");
    }
}

#[test]
fn acks_of_data_the_capture_never_saw_are_not_delayed_acks() {
    // Each response's 7th segment is missing from the capture; the ACK that covers it comes
    // 565 ms after the 6th and releases the 8th.
    let an = analyze("gap-delack.pcap");
    assert!(
        an.findings.iter().all(|f| !matches!(
            f.id,
            FindingId::DelayedAckStall | FindingId::NagleDelayedAck
        )),
        "{:#?}",
        an.findings
    );
    let q = &an.stats.quality;
    assert_eq!(q.missing_segments, 3, "{q:?}");
    assert_eq!(q.missing_bytes, 3 * 1448, "{q:?}");
    assert!(
        (0.12..0.13).contains(&q.missing_share()),
        "3 of 24 segments: {}",
        q.missing_share()
    );
    let w = an
        .warnings
        .iter()
        .find(|w| w.starts_with("capture quality:"))
        .expect("a capture-quality line");
    assert!(
        w.contains("3 segments (4344 bytes, 12.47 % of the data)"),
        "{w}"
    );
    let fl = flags("gap-delack.pcap");
    let acked_unseen = fl
        .iter()
        .filter(|(_, f)| f.has(SegFlags::ACK_LOST_SEGMENT))
        .count();
    let prev_missing = fl
        .iter()
        .filter(|(_, f)| f.has(SegFlags::LOST_SEGMENT))
        .count();
    assert_eq!((acked_unseen, prev_missing), (3, 3), "{fl:?}");
}

#[test]
fn one_segment_resent_five_times_and_never_acked_is_a_long_stall() {
    let an = analyze("rto-unacked.pcap");
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::RetransmissionTimeout)
        .unwrap_or_else(|| panic!("{:#?}", an.findings));
    // Resent at +0.296, 0.888, 2.072, 4.44, 9.176 s after the request; nothing came back:
    // the peer went silent (detect/loss/silent.rs), said with the timer's count and span.
    assert!(
        f.summary.contains("timer fired 5 times over 8.9 s")
            && f.summary.contains("resent 5 times in all"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("+0.0 ms"), "{}", f.summary);
    assert_eq!(f.severity, Severity::Critical, "{}", f.summary);
    assert_eq!(an.stats.rto_retransmissions, 5, "{:?}", an.stats);
}

#[test]
fn a_reset_after_the_close_is_flagged_as_such() {
    // The server's FIN 15 s after the last response, the client's keep-alive probe 45 s later,
    // the server's reset.
    let fl = flags("rst-after-fin.pcap");
    let at = |n: u64| {
        fl.iter()
            .find(|(f, _)| *f == n)
            .map(|x| x.1)
            .unwrap_or_default()
    };
    assert!(at(15).has(SegFlags::KEEP_ALIVE), "{fl:?}");
    assert!(!at(15).has(SegFlags::RETRANSMISSION), "{fl:?}");
    assert!(at(16).has(SegFlags::RESET_AFTER_FIN), "{fl:?}");
    assert!(at(16).has(SegFlags::RESET_AFTER_IDLE), "{fl:?}");
    let an = analyze("rst-after-fin.pcap");
    assert_eq!(an.stats.keep_alives, 1);
    assert_eq!(an.stats.retransmitted_segments, 0);
}

#[test]
fn a_reset_after_the_servers_fin_on_real_traffic_is_flagged_and_its_request_failed() {
    // Made by make-quality-lab.sh between two namespaces: the server closes each of 3
    // connections (FIN) 0.3 s after its response; the client, 0.2 s after the FIN, sends
    // another request on it, and the server's kernel answers with a reset (frames 13, 26, 39).
    let fl = flags("rst-after-fin-lab.pcap");
    let resets: Vec<u64> = fl
        .iter()
        .filter(|(_, f)| f.has(SegFlags::RESET_AFTER_FIN))
        .map(|x| x.0)
        .collect();
    assert_eq!(resets, vec![13, 26, 39], "{fl:?}");
    // 0.2 s after the FIN: not an idle period.
    assert!(fl.iter().all(|(_, f)| !f.has(SegFlags::RESET_AFTER_IDLE)));
    // Those 3 requests failed (the story: `keepalive_race.rs`), not "in the middle" of one.
    let an = analyze("rst-after-fin-lab.pcap");
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::ConnectionReset)
        .unwrap_or_else(|| panic!("{:#?}", an.findings));
    assert_eq!(f.side, Side::Server);
    assert!(
        f.summary
            .contains("The client sent 3 requests on connections the server had already closed"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("middle"), "{}", f.summary);
}

/// A long run (`watch`) judges each window on its own counts: a capture gap and ring drops in
/// one window are not repeated in the next, clean window, and do not cut the confidence of
/// that window's findings. Window 1 is `gap-delack.pcap` (3 segments never captured) with
/// 50 ring drops noted; window 2 is `nagle-eth.pcap`, moved in time to follow it.
#[test]
fn a_gap_or_drops_in_one_window_are_not_repeated_in_the_next() {
    let alone = analyze("nagle-eth.pcap");
    let nagle = |an: &Analysis| {
        an.findings
            .iter()
            .find(|f| f.id == FindingId::NagleDelayedAck)
            .map(|f| f.confidence)
    };
    let clean = nagle(&alone).expect("nagle-eth.pcap alone finds Nagle");
    assert!(alone.warnings.is_empty(), "{:?}", alone.warnings);

    let mut a = Analyzer::new(AnalyzerConfig::default());
    let mut last = 0;
    let mut frame = 0;
    for_each_packet("gap-delack.pcap", |p| {
        last = p.ts_ns;
        frame = p.frame;
        a.push(p);
    });
    a.note_capture_drops(50);
    let w1 = a.take_window(last + 1);
    let joined = w1.warnings.join(" | ");
    assert!(joined.contains("capture dropped 50"), "{joined}");
    assert!(joined.contains("never captured"), "{joined}");

    let mut shift = None;
    for_each_packet("nagle-eth.pcap", |p| {
        let d = *shift.get_or_insert(last + 1_000_000_000 - p.ts_ns);
        a.push(&RawPacket {
            frame: frame + p.frame,
            ts_ns: p.ts_ns + d,
            ..*p
        });
    });
    let w2 = a.finish();
    assert!(w2.warnings.is_empty(), "{:?}", w2.warnings);
    assert_eq!(nagle(&w2), Some(clean), "{:?}", w2.findings);
    // The cumulative figures still hold the whole run.
    assert_eq!(w2.stats.capture_drops, 50);
    assert_eq!(w2.stats.quality.missing_segments, 3);
}

/// The frames of `name` as owned (link, ts_ns, data, orig_len).
fn frames(name: &str) -> Vec<(netdoctor_core::LinkType, i64, Vec<u8>, u32)> {
    let mut v = Vec::new();
    for_each_packet(name, |p| {
        v.push((p.link, p.ts_ns, p.data.to_vec(), p.orig_len))
    });
    v
}

fn analyze_frames(v: &[(netdoctor_core::LinkType, i64, Vec<u8>, u32)]) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for (i, (link, ts, d, orig)) in v.iter().enumerate() {
        a.push(&RawPacket {
            frame: i as u64 + 1,
            ts_ns: *ts,
            link: *link,
            data: d,
            orig_len: *orig,
        });
    }
    a.finish()
}

/// Capture artefacts made from real lab captures change no finding: a SPAN port that mirrors
/// each frame twice (once untagged, once 12 µs later with an 802.1Q tag), timestamps of a
/// multi-queue capture a few µs out of order (every 7th frame swapped with the next), and a
/// 96-byte snap length.
#[test]
fn span_copies_reordered_clocks_and_short_snaplens_are_not_findings() {
    for name in ["healthy-eth.pcap", "loss.pcap", "nagle-eth.pcap"] {
        let orig = frames(name);
        assert!(
            orig.iter()
                .all(|f| f.0 == netdoctor_core::LinkType::Ethernet),
            "{name}"
        );
        let ok = analyze_frames(&orig);
        let span: Vec<_> = orig
            .iter()
            .flat_map(|(l, ts, d, o)| {
                let mut tagged = d[..12].to_vec();
                tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a]);
                tagged.extend_from_slice(&d[12..]);
                [(*l, *ts, d.clone(), *o), (*l, ts + 12_000, tagged, o + 4)]
            })
            .collect();
        let mut reordered = orig.clone();
        for i in (3..reordered.len().saturating_sub(1)).step_by(7) {
            let t = reordered[i].1;
            reordered[i].1 = reordered[i + 1].1;
            reordered[i + 1].1 = t;
        }
        let snap: Vec<_> = orig
            .iter()
            .map(|(l, ts, d, o)| (*l, *ts, d[..d.len().min(96)].to_vec(), *o))
            .collect();
        for (kind, v) in [("span", span), ("reordered", reordered), ("snap96", snap)] {
            let an = analyze_frames(&v);
            assert_eq!(ids(&an), ids(&ok), "{name} {kind}: {:#?}", an.findings);
            assert_eq!(an.exchanges.count, ok.exchanges.count, "{name} {kind}");
            assert_eq!(
                an.stats.retransmitted_segments, ok.stats.retransmitted_segments,
                "{name} {kind}"
            );
        }
    }
}

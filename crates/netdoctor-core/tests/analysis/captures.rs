//! Detector tests on real captures made on loopback by `testdata/captures/make.sh`.
//!
//! The pcap/pcapng reader (`common`) is test-only (core does no I/O); netdoctor-observe has
//! the real one.

use crate::common;

use std::path::PathBuf;

use common::{analyze, findings, for_each_packet, frames, one};
use netdoctor_core::finding::{FindingId, Severity, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, Evidence, LinkType, RawPacket};

#[test]
fn healthy_has_nothing_above_info() {
    let (an, _) = analyze("healthy-eth.pcap");
    assert_eq!(an.stats.decode_errors, 0);
    assert!(an.exchanges.count >= 100, "{:?}", an.exchanges);
    assert!(an.exchanges.latency_ms.p50 < 5.0, "{:?}", an.exchanges);
    assert!(
        an.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        an.findings
    );
    assert!(
        !an.findings
            .iter()
            .any(|f| f.id == FindingId::NagleDelayedAck)
    );
    assert!(an.findings.is_empty(), "{:#?}", an.findings);
    assert_eq!(
        an.exchanges.breakdown_p50_ms.unwrap().stalls_total(),
        0.0,
        "{:?}",
        an.exchanges
    );
}

#[test]
fn slow_server_is_found_and_is_not_nagle() {
    let (an, _) = analyze("slow-eth.pcap");
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::SlowServerProcessing)
        .unwrap_or_else(|| panic!("{:#?} {:?}", an.findings, an.exchanges));
    assert_eq!(f.side, Side::Server);
    assert!(f.severity >= Severity::Warning);
    // The server sleeps 25 ms per request.
    let st = f.impact.added_latency_ms.unwrap();
    assert!((24.0..=80.0).contains(&st), "server time {st}");
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert!(b.server >= 24.0 && b.stalls_total() == 0.0, "{b:?}");
    assert!(!f.evidence.is_empty());
    assert!(
        !an.findings
            .iter()
            .any(|f| f.id == FindingId::NagleDelayedAck)
    );
}

#[test]
fn analysis_serializes_to_json() {
    let (an, _) = analyze("nagle-eth.pcap");
    let v = serde_json::to_value(&an).unwrap();
    assert_eq!(v["findings"][0]["id"], "nagle_delayed_ack");
    assert_eq!(v["findings"][0]["side"], "server");
    assert!(v["stats"]["duration_s"].as_f64().unwrap() > 0.0);
    let back: Analysis = serde_json::from_value(v).unwrap();
    assert_eq!(back.stats, an.stats);
}

#[test]
fn server_port_orients_mid_stream_captures() {
    // Drop the first 200 frames (all handshakes): orientation must come from elsewhere.
    for cfg in [
        AnalyzerConfig {
            server_port: Some(18081),
            ..Default::default()
        },
        AnalyzerConfig::default(),
    ] {
        let mut a = Analyzer::new(cfg.clone());
        for_each_packet("nagle-eth.pcap", |p| {
            if p.frame > 200 {
                a.push(p)
            }
        });
        let an = a.finish();
        assert_eq!(an.stats.connections_with_handshake, 0);
        let f = an
            .findings
            .iter()
            .find(|f| f.id == FindingId::NagleDelayedAck)
            .unwrap();
        assert_eq!(f.side, Side::Server, "{cfg:?}");
    }
}

#[test]
fn lab_healthy_has_no_finding() {
    // 10 × 64 KB over veth + router: no loss, no stall.
    let (an, _) = analyze("lab-healthy.pcap");
    assert_eq!(an.exchanges.count, 10, "{:?}", an.exchanges);
    assert_eq!(an.stats.retransmitted_segments, 0);
    assert!(an.findings.is_empty(), "{:#?}", an.findings);
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert_eq!(b.stalls_total(), 0.0);
    let sum = b.network + b.server + b.transfer;
    assert!((sum - b.latency).abs() < 1e-6, "{b:?}");
}

#[test]
fn spurious_retransmissions_do_not_make_a_healthy_server_lossy() {
    // nginx tcp_nodelay on under wrk -c 100: 31 retransmissions ~5 ms after the original while
    // the client was starved of CPU, each reported back with a D-SACK (tshark: 31 "suspected
    // retransmission", 31 "D-SACK Sequence", only 4 "spurious"). They cost nothing.
    let (an, _) = analyze("healthy-spurious.pcap");
    assert_eq!(an.stats.retransmitted_segments, 31, "{:?}", an.stats);
    assert_eq!(an.stats.spurious_retransmissions, 31, "{:?}", an.stats);
    assert!(an.exchanges.count >= 200, "{:?}", an.exchanges);
    // Said as what they were (info, no data lost), never as loss.
    let f = one(&an, FindingId::SpuriousRetransmission);
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("no data was lost"), "{}", f.summary);
    assert_eq!(an.findings.len(), 1, "{:#?}", an.findings);
    assert_eq!(an.exchanges.breakdown_p50_ms.unwrap().stalls_total(), 0.0);
}

#[test]
fn loss_is_fast_retransmission_not_reordering() {
    // Every 25th large server packet dropped in the router, before the capture point: 19 holes,
    // each filled by a retransmission (the IP ids prove it), plus one spurious retransmission
    // the client reported with a D-SACK. tshark calls 5 of the fills "out-of-order".
    let (an, _) = analyze("loss.pcap");
    let s = &an.stats;
    assert_eq!(s.retransmitted_segments, 20, "{s:?}");
    assert_eq!(s.out_of_order_segments, 0, "{s:?}");
    assert_eq!(s.spurious_retransmissions, 1, "{s:?}");
    assert_eq!(s.capture_gaps, 0);
    assert!(s.duplicate_acks >= 15, "{s:?}");
    let f = one(&an, FindingId::PacketLossRetransmission);
    assert_eq!(f.side, Side::Network);
    // 4.2% of data segments lost: a warning even though each loss costs < 1 ms here.
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.summary.contains("19 segments"), "{}", f.summary);
    assert_eq!(f.impact.affected_fraction, Some(1.0));
    let tshark_fills = [
        27, 54, 77, 106, 136, 173, 214, 251, 319, 321, 350, 380, 386, 414, 442, 480, 518, 551, 585,
        612,
    ];
    for ex in frames(f) {
        assert!(ex.iter().any(|fr| tshark_fills.contains(fr)), "{ex:?}");
    }
    assert!(findings(&an, FindingId::RetransmissionTimeout).is_empty());
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert!(
        b.stalls.get(FindingId::PacketLossRetransmission) > 0.0,
        "{b:?}"
    );
}

#[test]
fn rto_stalls_are_retransmission_timeouts() {
    // Every 4th one-segment response dropped after the capture point: the server resends it
    // after ~205 ms (frames 6→7, 14→16, 24→25, 31→32). The client's own resent request
    // (frame 15) was already acknowledged: spurious, D-SACKed in frame 17.
    let (an, _) = analyze("rto.pcap");
    assert_eq!(an.exchanges.count, 12);
    assert_eq!(an.stats.retransmitted_segments, 5);
    assert_eq!(an.stats.spurious_retransmissions, 1, "{:?}", an.stats);
    let f = one(&an, FindingId::RetransmissionTimeout);
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.summary.contains("4 stalls"), "{}", f.summary);
    let added = f.impact.added_latency_ms.unwrap();
    assert!((200.0..=260.0).contains(&added), "{added}");
    assert_eq!(f.impact.affected_fraction, Some(4.0 / 12.0));
    assert_eq!(frames(f)[0], [6, 7]);
    // The lost responses arrived only with their retransmission.
    assert!(an.exchanges.latency_ms.p90 >= 200.0, "{:?}", an.exchanges);
    assert!(findings(&an, FindingId::PacketLossRetransmission).is_empty());
    assert!(findings(&an, FindingId::DelayedAckStall).is_empty());
}

#[test]
fn zero_window_blames_the_client_that_does_not_read() {
    let (an, _) = analyze("zero-window.pcap");
    let f = one(&an, FindingId::ZeroWindow);
    assert_eq!(f.side, Side::Client);
    assert_eq!(f.severity, Severity::Critical);
    // The client sleeps 0.5 s before reading; its buffer is full after ~0.1 s.
    let d = f.impact.added_latency_ms.unwrap();
    assert!((250.0..=500.0).contains(&d), "{d}");
    // tshark: "TCP Zero Window segment" in frames 13 and 15 (one period).
    assert_eq!(frames(f)[0][0], 13);
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert!(b.stalls.get(FindingId::ZeroWindow) >= 250.0, "{b:?}");
    assert!(findings(&an, FindingId::DelayedAckStall).is_empty());
    assert!(findings(&an, FindingId::NagleDelayedAck).is_empty());
}

#[test]
fn syn_retransmits_say_which_packet_was_repeated() {
    let (an, _) = analyze("syn-retransmit.pcap");
    // tshark flags the same 9 SYNs and 1 SYN/ACK (and a FIN) as retransmissions.
    assert_eq!(an.stats.syn_retransmits, 10, "{:?}", an.stats);
    assert_eq!(an.stats.connections, 6);
    let f = one(&an, FindingId::SynRetransmit);
    // No counter, no capture at the server: the path's, said as not known (syn_side.rs).
    assert_eq!(f.side, Side::Network);
    // The three repeated SYNs never got an answer before the client gave up: failed
    // connects, not delayed setups (helper silent).
    assert!(
        f.summary
            .contains("failed on 3 of 6 connections: no answer to any SYN (the client sent up to 4 SYNs over 3.1 s)"),
        "{}",
        f.summary
    );
    // The SYN/ACK repeated after the router dropped the client's ACK (frames 20, 21) came on
    // a silent held connection: no data from either side, the client answered the repeat.
    // Nobody waited on it: named apart, not counted as a delayed setup (helper sweep).
    assert!(
        f.explanation
            .contains("Not counted either: on 1 connections"),
        "{}",
        f.explanation
    );
    assert_eq!(f.impact.affected_fraction, Some(3.0 / 6.0));
    // Nobody's request was slowed: the connections never opened (no added latency).
    assert_eq!(f.impact.added_latency_ms, None);
}

#[test]
fn resets_refused_and_mid_response() {
    let (an, _) = analyze("reset.pcap");
    assert_eq!(an.stats.resets, 5);
    // Refused SYNs are server_not_listening (nothing listens), one finding.
    let refused = one(&an, FindingId::ServerNotListening);
    assert_eq!(
        (refused.side, refused.severity),
        (Side::Server, Severity::Critical)
    );
    assert!(
        refused
            .summary
            .contains(": 2 connection attempts were answered with a reset"),
        "{}",
        refused.summary
    );
    let mid = one(&an, FindingId::ConnectionReset);
    assert_eq!(mid.side, Side::Server);
    assert!(
        mid.summary.contains("reset 3 connections in the middle"),
        "{}",
        mid.summary
    );
    assert_eq!(mid.severity, Severity::Critical);
}

#[test]
fn one_request_per_connection_is_found_but_cheap_on_a_lan() {
    let (an, _) = analyze("short-connections.pcap");
    assert_eq!(an.stats.connections_with_handshake, 40);
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.impact.affected_fraction, Some(1.0));
    // A handshake across a veth costs a fraction of a millisecond: info.
    assert_eq!(f.severity, Severity::Info);
    assert!(f.impact.added_latency_ms.unwrap() < 1.0);
    assert!(an.findings.iter().all(|f| f.severity == Severity::Info));
}

#[test]
fn delayed_ack_stall_on_real_traffic() {
    // The server's TCP retries a locally dropped full-size segment only when the client's
    // next ACK arrives, and the client delays that ACK 40 ms (one segment outstanding).
    let (an, _) = analyze("delack-stall.pcap");
    let f = one(&an, FindingId::DelayedAckStall);
    assert_eq!(f.side, Side::Client);
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.summary.contains("3 times"), "{}", f.summary);
    let added = f.impact.added_latency_ms.unwrap();
    assert!((40.0..=50.0).contains(&added), "{added}");
    assert_eq!(f.impact.affected_fraction, Some(0.3));
    assert_eq!(frames(f)[0], [210, 211, 212]);
    for e in &f.evidence {
        let Evidence::Packets { packets, .. } = e else {
            panic!()
        };
        // Full-size segments: Nagle had nothing to do with it.
        assert!(packets[2].desc.contains("len=1448"), "{packets:?}");
    }
    assert!(findings(&an, FindingId::NagleDelayedAck).is_empty());
    // tshark's expert info sees nothing here: no retransmission happened on the wire.
    assert_eq!(an.stats.retransmitted_segments, 0);
    assert!(an.exchanges.latency_ms.p90 >= 40.0, "{:?}", an.exchanges);
}

#[test]
fn capture_drops_are_warned_and_qualify_findings() {
    // Leave out 5 of the server's segments that did reach the client: the client ACKs data
    // the capture never saw.
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet("loss.pcap", |p| {
        if !(100..=104).contains(&p.frame) {
            a.push(p)
        }
    });
    let an = a.finish();
    assert!(an.stats.capture_gaps >= 1, "{:?}", an.stats);
    assert!(
        an.warnings
            .iter()
            .any(|w| w.starts_with("capture quality:") && w.contains("never captured")),
        "{:?}",
        an.warnings
    );
    let f = one(&an, FindingId::PacketLossRetransmission);
    assert!(f.explanation.contains("may be wrong"), "{}", f.explanation);

    // Ring drops reported by a live capture do the same.
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet("nagle-eth.pcap", |p| a.push(p));
    a.note_capture_drops(7);
    let an = a.finish();
    assert!(an.warnings.iter().any(|w| w.contains("dropped 7 packets")));
    assert!(an.findings[0].explanation.contains("may be wrong"));
}

/// `cargo test -p netdoctor-core --test analysis dump -- --ignored --nocapture NAME`-style
/// helper to eyeball an analysis (set NETDOCTOR_DUMP=file name).
#[test]
#[ignore]
fn dump() {
    let name = std::env::var("NETDOCTOR_DUMP").unwrap_or_else(|_| "nagle-eth.pcap".into());
    let (an, _) = analyze(&name);
    println!("{}", serde_json::to_string_pretty(&an).unwrap());
}

/// Throughput measurement (prints, asserts nothing about speed: the machine is shared).
/// `cargo test --release -p netdoctor-core --test analysis throughput -- --ignored --nocapture`
#[test]
#[ignore]
fn throughput() {
    let mut pkts: Vec<(Vec<u8>, i64, LinkType, u32)> = Vec::new();
    for_each_packet("nagle-eth.pcap", |p| {
        pkts.push((p.data.to_vec(), p.ts_ns, p.link, p.orig_len))
    });
    let rounds = 2000u64;
    let span = pkts.last().unwrap().1 - pkts[0].1 + 1_000_000_000;
    let t = std::time::Instant::now();
    let mut n = 0u64;
    for r in 0..rounds {
        for (i, (d, ts, link, ol)) in pkts.iter().enumerate() {
            let p = RawPacket {
                frame: i as u64,
                ts_ns: ts + r as i64 * span,
                link: *link,
                data: d,
                orig_len: *ol,
            };
            if netdoctor_core::decode(&p).ok().flatten().is_some() {
                n += 1;
            }
        }
    }
    let el = t.elapsed().as_secs_f64();
    println!(
        "decode only: {:.2} M packets/s ({n} segments)",
        n as f64 / el / 1e6
    );
    let t = std::time::Instant::now();
    let mut a = Analyzer::new(AnalyzerConfig::default());
    let mut frame = 0;
    for r in 0..rounds {
        for (d, ts, link, ol) in &pkts {
            frame += 1;
            a.push(&RawPacket {
                frame,
                ts_ns: ts + r as i64 * span,
                link: *link,
                data: d,
                orig_len: *ol,
            });
        }
    }
    let an = a.finish();
    let el = t.elapsed().as_secs_f64();
    println!(
        "decode + reconstruction + detectors: {:.2} M packets/s ({} exchanges, {} findings)",
        frame as f64 / el / 1e6,
        an.exchanges.count,
        an.findings.len()
    );
}

#[test]
fn absurd_timestamps_are_clamped_with_a_warning_and_no_overflow() {
    // A corrupt file: every 50th packet claims a time at the ends of the i64 range. Before the
    // clamp this overflowed in the Nagle detector (found by fuzzing).
    let mut an = Analyzer::new(AnalyzerConfig::default());
    let mut n = 0u64;
    for_each_packet("nagle-eth.pcap", |p| {
        n += 1;
        let ts_ns = match n % 100 {
            0 => i64::MAX,
            50 => i64::MIN,
            _ => p.ts_ns,
        };
        an.push(&RawPacket { ts_ns, ..*p });
    });
    let a = an.finish();
    assert!(
        a.warnings.iter().any(|w| w.contains("clamped")),
        "{:?}",
        a.warnings
    );
    // The rest of the capture still tells its story.
    assert_eq!(a.findings[0].id, FindingId::NagleDelayedAck);
    assert!(
        a.stats.duration_s < 3.0e7 * 2.5,
        "duration {}",
        a.stats.duration_s
    );
}

/// Every committed capture cut into 100 ms windows (no eviction): the windows' exchanges add
/// up to the single pass's, nothing panics, and each window's findings carry absolute
/// timestamps inside the capture.
#[test]
fn windows_add_up_to_the_whole_capture() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/captures");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".pcap") || n.ends_with(".pcapng"))
        .collect();
    names.sort();
    assert!(names.len() >= 18, "{names:?}");
    for name in &names {
        let (whole, _) = analyze(name);
        let mut a = Analyzer::new(AnalyzerConfig::default());
        let mut next: Option<i64> = None;
        let mut windows = Vec::new();
        for_each_packet(name, |p| {
            let due = *next.get_or_insert(p.ts_ns + 100_000_000);
            if p.ts_ns >= due {
                windows.push(a.take_window(p.ts_ns));
                next = Some(p.ts_ns + 100_000_000);
            }
            a.push(p);
        });
        windows.push(a.finish());
        let sum: u64 = windows.iter().map(|w| w.exchanges.count).sum();
        assert_eq!(
            sum,
            whole.exchanges.count,
            "{name}: {} windows",
            windows.len()
        );
        let (first, last) = (
            whole.stats.first_ts_ns.unwrap(),
            whole.stats.last_ts_ns.unwrap(),
        );
        for w in &windows {
            for f in &w.findings {
                for e in &f.evidence {
                    if let Evidence::Packets { packets, .. } = e {
                        for p in packets {
                            let ns = (p.ts * 1e9) as i64;
                            assert!(
                                (first - 1_000..=last + 1_000).contains(&ns),
                                "{name}: {p:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}

//! Detector tests on real captures made on loopback by `testdata/captures/make.sh`.
//!
//! The pcap/pcapng reader below is test-only (core does no I/O); netdoctor-observe has the
//! real one.

use std::path::PathBuf;

use netdoctor_core::finding::{FindingId, Severity, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, Evidence, LinkType, RawPacket};
use pcap_parser::{PcapBlockOwned, PcapError, create_reader};

fn capture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures")
        .join(name)
}

/// Reads a pcap or pcapng file and feeds every packet to `f` (frame numbers from 1).
fn for_each_packet(name: &str, mut f: impl FnMut(&RawPacket<'_>)) -> LinkType {
    let path = capture_path(name);
    let file =
        std::fs::File::open(&path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut reader = create_reader(1 << 20, file).expect("pcap reader");
    let mut frame = 0u64;
    let mut legacy: Option<(LinkType, bool)> = None; // link, nanosecond timestamps
    let mut ifaces: Vec<(LinkType, u64, i64)> = Vec::new(); // link, units per second, offset
    let mut link_seen = None;
    loop {
        match reader.next() {
            Ok((offset, block)) => {
                match block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        let link = LinkType::from_pcap(h.network.0 as u32).expect("link type");
                        legacy = Some((link, h.is_nanosecond_precision()));
                        link_seen = Some(link);
                    }
                    PcapBlockOwned::Legacy(b) => {
                        let (link, nanos) = legacy.expect("header before packets");
                        frame += 1;
                        let sub = if nanos { 1 } else { 1000 };
                        let data = &b.data[..(b.caplen as usize).min(b.data.len())];
                        f(&RawPacket {
                            frame,
                            ts_ns: i64::from(b.ts_sec) * 1_000_000_000 + i64::from(b.ts_usec) * sub,
                            link,
                            data,
                            orig_len: b.origlen,
                        });
                    }
                    PcapBlockOwned::NG(pcap_parser::Block::InterfaceDescription(idb)) => {
                        let link = LinkType::from_pcap(idb.linktype.0 as u32).expect("link type");
                        ifaces.push((
                            link,
                            idb.ts_resolution().unwrap_or(1_000_000),
                            idb.ts_offset(),
                        ));
                        link_seen = Some(link);
                    }
                    PcapBlockOwned::NG(pcap_parser::Block::EnhancedPacket(epb)) => {
                        let (link, res, off) = ifaces[epb.if_id as usize];
                        frame += 1;
                        let units = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                        let ts_ns = (units as i128 * 1_000_000_000 / res as i128) as i64
                            + off * 1_000_000_000;
                        let data = &epb.data[..(epb.caplen as usize).min(epb.data.len())];
                        f(&RawPacket {
                            frame,
                            ts_ns,
                            link,
                            data,
                            orig_len: epb.origlen,
                        });
                    }
                    _ => {}
                }
                reader.consume(offset);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => reader.refill().expect("refill"),
            Err(e) => panic!("read {}: {e:?}", path.display()),
        }
    }
    assert!(frame > 0, "{name}: no packets");
    link_seen.expect("link type")
}

fn analyze(name: &str) -> (Analysis, LinkType) {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    let link = for_each_packet(name, |p| a.push(p));
    (a.finish(), link)
}

fn assert_nagle(name: &str, expect_link: LinkType) {
    let (an, link) = analyze(name);
    assert_eq!(link, expect_link, "{name}: link type");
    let s = &an.stats;
    assert_eq!(s.decode_errors, 0, "{name}: {an:#?}");
    assert!(s.tcp_segments >= 500, "{name}: {s:?}");
    // wrk -c 10: one connection that wrk opens and closes at start, then 10 keep-alive ones.
    assert_eq!(s.connections_with_handshake, 11, "{name}: {s:?}");
    assert!(an.exchanges.count >= 50, "{name}: {:?}", an.exchanges);
    // The reference: p50 ≈ 44 ms with the stall, a fraction of a ms without.
    assert!(
        (35.0..=60.0).contains(&an.exchanges.latency_ms.p50),
        "{name}: {:?}",
        an.exchanges
    );

    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::NagleDelayedAck)
        .unwrap_or_else(|| panic!("{name}: no nagle finding: {:#?}", an.findings));
    assert_eq!(
        an.findings[0].id,
        FindingId::NagleDelayedAck,
        "{name}: ranked first"
    );
    assert_eq!(f.side, Side::Server);
    assert_eq!(f.severity, Severity::Critical);
    let added = f.impact.added_latency_ms.unwrap();
    assert!((35.0..=60.0).contains(&added), "{name}: added {added}");
    let frac = f.impact.affected_fraction.unwrap();
    assert!(frac >= 0.7, "{name}: affected fraction {frac}");
    assert!(f.confidence >= 0.8, "{name}: confidence {}", f.confidence);
    assert_eq!(f.evidence.len(), 3);
    for e in &f.evidence {
        let Evidence::Packets {
            packets,
            note,
            connection,
        } = e
        else {
            panic!("{name}: evidence kind {e:?}");
        };
        assert!(connection.ends_with(":18081"), "{connection}");
        let dirs: Vec<&str> = packets.iter().map(|p| p.dir.as_str()).collect();
        assert_eq!(dirs, ["S→C", "C→S", "S→C"], "{name}");
        assert!(packets[1].desc.starts_with("[.] len=0"), "{:?}", packets[1]);
        let gap = packets[1].time - packets[0].time;
        assert!((0.030..0.25).contains(&gap), "{name}: ACK gap {gap}");
        assert!(packets[2].time - packets[1].time <= 0.001);
        assert!(note.contains("delayed ACK"), "{note}");
    }
    // The first response byte is prompt: this is not a slow server.
    assert!(
        !an.findings
            .iter()
            .any(|f| f.id == FindingId::SlowServerProcessing),
        "{name}: {:#?}",
        an.findings
    );
    assert!(
        an.exchanges.server_time_ms.p50 < 5.0,
        "{name}: {:?}",
        an.exchanges
    );
}

#[test]
fn nagle_ethernet() {
    assert_nagle("nagle-eth.pcap", LinkType::Ethernet);
}

#[test]
fn nagle_linux_sll2() {
    assert_nagle("nagle-sll2.pcap", LinkType::LinuxSll2);
}

#[test]
fn nagle_linux_sll() {
    assert_nagle("nagle-sll.pcap", LinkType::LinuxSll);
}

#[test]
fn nagle_ipv6() {
    assert_nagle("nagle-ipv6.pcap", LinkType::Ethernet);
    let (an, _) = analyze("nagle-ipv6.pcap");
    let Evidence::Packets { connection, .. } = &an.findings[0].evidence[0] else {
        panic!()
    };
    assert!(connection.starts_with("[::1]:"), "{connection}");
}

#[test]
fn nagle_raw_ip() {
    assert_nagle("nagle-raw.pcap", LinkType::Raw);
}

#[test]
fn nagle_pcapng_full_snaplen() {
    assert_nagle("nagle-full.pcapng", LinkType::Ethernet);
}

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

/// `cargo test -p netdoctor-core --test captures dump -- --ignored --nocapture NAME`-style
/// helper to eyeball an analysis (set NETDOCTOR_DUMP=file name).
#[test]
#[ignore]
fn dump() {
    let name = std::env::var("NETDOCTOR_DUMP").unwrap_or_else(|_| "nagle-eth.pcap".into());
    let (an, _) = analyze(&name);
    println!("{}", serde_json::to_string_pretty(&an).unwrap());
}

/// Throughput measurement (prints, asserts nothing about speed: the machine is shared).
/// `cargo test --release -p netdoctor-core --test captures throughput -- --ignored --nocapture`
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

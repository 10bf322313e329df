//! A test-only pcap/pcapng reader for the committed captures (core does no I/O;
//! netdoctor-observe has the real reader).

use std::path::PathBuf;

use netdoctor_core::finding::{Finding, FindingId};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, Evidence, LinkType, RawPacket};
use pcap_parser::{PcapBlockOwned, PcapError, create_reader};

/// The shared third-party corpus: `NETDOCTOR_REALWORLD_PCAPS`, else `../shared/realworld-pcaps`
/// beside the repository (never copied into it).
#[allow(dead_code)] // not every test binary reads the corpus
pub fn corpus() -> PathBuf {
    std::env::var_os("NETDOCTOR_REALWORLD_PCAPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realworld-pcaps")
        })
}

/// The path of corpus file `name`, or `None` after a line saying the test is skipped.
#[allow(dead_code)] // not every test binary reads the corpus
pub fn corpus_file(name: &str) -> Option<PathBuf> {
    let path = corpus().join(name);
    if path.exists() {
        return Some(path);
    }
    eprintln!(
        "skipped: needs {} (the shared realworld-pcaps corpus)",
        path.display()
    );
    None
}

pub fn capture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures")
        .join(name)
}

/// Reads a pcap or pcapng file (gzip'd or not) and feeds every packet to `f` (frame numbers from 1).
pub fn for_each_packet(name: &str, mut f: impl FnMut(&RawPacket<'_>)) -> LinkType {
    let path = capture_path(name);
    let file =
        std::fs::File::open(&path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    // gzip'd captures (`.gz`) are read through a decoder.
    let file: Box<dyn std::io::Read + Send> = if name.ends_with(".gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
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

/// The analysis of committed capture `name` and its link type.
#[allow(dead_code)] // not every test binary uses it
pub fn analyze(name: &str) -> (Analysis, LinkType) {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    let link = for_each_packet(name, |p| a.push(p));
    (a.finish(), link)
}

/// The findings of `an` with id `id`.
#[allow(dead_code)] // not every test binary uses it
pub fn findings(an: &Analysis, id: FindingId) -> Vec<&Finding> {
    an.findings.iter().filter(|f| f.id == id).collect()
}

/// The one finding of `an` with id `id` (fails the test when there are none or several).
#[allow(dead_code)] // not every test binary uses it
pub fn one(an: &Analysis, id: FindingId) -> &Finding {
    let v = findings(an, id);
    assert_eq!(v.len(), 1, "{id}: {:#?}", an.findings);
    v[0]
}

/// Frame numbers of the evidence packets of a finding.
#[allow(dead_code)] // not every test binary uses it
pub fn frames(f: &Finding) -> Vec<Vec<u64>> {
    f.evidence
        .iter()
        .map(|e| match e {
            Evidence::Packets { packets, .. } => packets.iter().map(|p| p.frame).collect(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// The note of the finding's `Probe` evidence named `name`, if it has one.
#[allow(dead_code)] // not every test binary uses it
pub fn probe<'a>(f: &'a Finding, name: &str) -> Option<&'a str> {
    f.evidence.iter().find_map(|e| match e {
        Evidence::Probe { probe, note } if probe == name => Some(note.as_str()),
        _ => None,
    })
}

/// The note of the finding's `Probe` evidence named `name` (fails the test, listing the
/// evidence, when it has none).
#[allow(dead_code)] // not every test binary uses it
pub fn probe_note<'a>(f: &'a Finding, name: &str) -> &'a str {
    probe(f, name).unwrap_or_else(|| panic!("no {name} evidence: {:#?}", f.evidence))
}

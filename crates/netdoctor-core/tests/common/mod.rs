//! A test-only pcap/pcapng reader for the committed captures (core does no I/O;
//! netdoctor-observe has the real reader).

use std::path::PathBuf;

use netdoctor_core::{LinkType, RawPacket};
use pcap_parser::{PcapBlockOwned, PcapError, create_reader};

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

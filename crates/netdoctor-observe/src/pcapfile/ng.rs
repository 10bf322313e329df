//! pcapng: block checks before the parser sees a block, interfaces and their timestamp
//! resolution, and the packet loop. Split from `pcapfile.rs` along the format seam; the legacy
//! pcap loop and the shared helpers stay there.

use super::input::Input;
use super::{
    BOM_BE, BOM_LE, EPB_MAGIC, MAX_BLOCK_LEN, MAX_CAPLEN, MAX_INTERFACES, MAX_STALLED_REFILLS,
    SHB_MAGIC, SPB_MAGIC, bad, describe, read_u32, refill, truncated_warning,
};
use crate::{BadCaptureKind, ObserveError, SourceSummary};
use netdoctor_core::{LinkType, RawPacket};
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{Block, PcapBlockOwned, PcapError, PcapNGReader};
use std::ops::ControlFlow;

pub(super) struct NgState {
    pub(super) reader: PcapNGReader<Input>,
    pub(super) big_endian: bool,
    pub(super) interfaces: Vec<Interface>,
    /// Packets skipped because their interface's link type is not decoded: (link type, count).
    pub(super) skipped: Vec<(u32, u64)>,
    pub(super) spb_seen: bool,
}

pub(super) struct Interface {
    raw_link: u32,
    link: Option<LinkType>,
    snaplen: u32,
    /// Timestamp units per second, `None` for an unusable `if_tsresol`.
    units_per_sec: Option<u64>,
    tsresol: u8,
    offset_s: i64,
}

/// Checks the next pcapng block header in `data` before the parser sees it.
/// Returns the block length when it is known.
fn check_ng_block(
    path: &str,
    st: &mut NgState,
    data: &[u8],
    offset: usize,
) -> Result<Option<u32>, ObserveError> {
    if data.len() < 12 {
        return Ok(None);
    }
    let le_type = read_u32(&data[0..4], false);
    let big_endian = if le_type == SHB_MAGIC {
        match &data[8..12] {
            b if b == BOM_LE => false,
            b if b == BOM_BE => true,
            _ => {
                return Err(bad(
                    path,
                    BadCaptureKind::Malformed,
                    format!("section header at byte {offset}: bad byte-order magic"),
                ));
            }
        }
    } else {
        st.big_endian
    };
    let block_type = read_u32(&data[0..4], big_endian);
    let block_len = read_u32(&data[4..8], big_endian);
    if block_len < 12 || !block_len.is_multiple_of(4) {
        return Err(bad(
            path,
            BadCaptureKind::Malformed,
            format!("block at byte {offset}: invalid block length {block_len}"),
        ));
    }
    if block_len > MAX_BLOCK_LEN {
        return Err(bad(
            path,
            BadCaptureKind::HostileLength,
            format!(
                "block at byte {offset}: length {block_len} exceeds the limit of {MAX_BLOCK_LEN} bytes"
            ),
        ));
    }
    let packet = match block_type {
        EPB_MAGIC if data.len() >= 28 => {
            let if_id = read_u32(&data[8..12], big_endian);
            let caplen = read_u32(&data[20..24], big_endian);
            if caplen > block_len.saturating_sub(32) {
                return Err(bad(
                    path,
                    BadCaptureKind::Malformed,
                    format!(
                        "packet block at byte {offset}: captured length {caplen} does not fit in block length {block_len}"
                    ),
                ));
            }
            Some((if_id, caplen))
        }
        SPB_MAGIC => Some((0, block_len - 16)),
        _ => None,
    };
    if let Some((if_id, caplen)) = packet {
        let Some(iface) = st.interfaces.get(if_id as usize) else {
            return Err(bad(
                path,
                BadCaptureKind::Malformed,
                format!(
                    "packet block at byte {offset}: interface {if_id} is not described ({} interfaces in this section)",
                    st.interfaces.len()
                ),
            ));
        };
        let limit = if iface.snaplen == 0 {
            MAX_CAPLEN
        } else {
            iface.snaplen.min(MAX_CAPLEN)
        };
        // A simple packet block's length is padded; only its declared packet length counts.
        let caplen = if block_type == SPB_MAGIC {
            read_u32(&data[8..12], big_endian).min(caplen)
        } else {
            caplen
        };
        if caplen > limit {
            return Err(bad(
                path,
                BadCaptureKind::HostileLength,
                format!(
                    "packet block at byte {offset}: captured length {caplen} exceeds the limit of {limit} bytes (snap length {}, max {MAX_CAPLEN})",
                    iface.snaplen
                ),
            ));
        }
    }
    Ok(Some(block_len))
}

/// Nanoseconds since the epoch of a pcapng timestamp.
fn ng_timestamp(ts: u64, units_per_sec: u64, offset_s: i64) -> i64 {
    let units = u128::from(units_per_sec.max(1));
    let ts = u128::from(ts);
    let ns = (ts / units) * 1_000_000_000 + (ts % units) * 1_000_000_000 / units;
    let ns = i128::try_from(ns).unwrap_or(i128::MAX) + i128::from(offset_s) * 1_000_000_000;
    i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX })
}

/// Units per second for an `if_tsresol` value (10^-n or 2^-n seconds).
fn units_per_sec(tsresol: u8) -> Option<u64> {
    if tsresol & 0x80 == 0 {
        (tsresol <= 19).then(|| 10u64.pow(u32::from(tsresol)))
    } else {
        let exp = tsresol & 0x7f;
        (exp <= 63).then(|| 1u64 << exp)
    }
}

pub(super) fn read_ng(
    path: &str,
    st: &mut NgState,
    f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
) -> Result<SourceSummary, ObserveError> {
    let mut summary = SourceSummary::default();
    let mut stalled = 0u32;
    // Wireshark's frame number: every packet block counts, also those skipped.
    let mut frame = 0u64;
    loop {
        let offset = st.reader.consumed();
        let data = st.reader.data();
        let avail = data.len();
        // Copy out the few header bytes the check needs (the check borrows the state mutably).
        let mut head = [0u8; 28];
        let n = avail.min(28);
        head[..n].copy_from_slice(&data[..n]);
        let block_len = check_ng_block(path, st, &head[..n], offset)?;
        match st.reader.next() {
            Ok((len, PcapBlockOwned::NG(block))) => {
                stalled = 0;
                let mut packet: Option<(u32, u64, &[u8], u32)> = None;
                match &block {
                    Block::SectionHeader(shb) => {
                        st.big_endian = shb.big_endian();
                        st.interfaces.clear();
                    }
                    Block::InterfaceDescription(idb) => {
                        if st.interfaces.len() >= MAX_INTERFACES {
                            return Err(bad(
                                path,
                                BadCaptureKind::Malformed,
                                format!(
                                    "block at byte {offset}: more than {MAX_INTERFACES} interfaces in one section"
                                ),
                            ));
                        }
                        let raw_link = (idb.linktype.0 as u32) & 0x03FF_FFFF;
                        let mut tsresol = 6u8;
                        let mut offset_s = 0i64;
                        for opt in &idb.options {
                            let v = opt.value();
                            if opt.code.0 == 9 && !v.is_empty() {
                                tsresol = v[0];
                            } else if opt.code.0 == 14 && v.len() >= 8 {
                                let a = [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
                                offset_s = if st.big_endian {
                                    i64::from_be_bytes(a)
                                } else {
                                    i64::from_le_bytes(a)
                                };
                            }
                        }
                        st.interfaces.push(Interface {
                            raw_link,
                            link: LinkType::from_pcap(raw_link),
                            snaplen: idb.snaplen,
                            units_per_sec: units_per_sec(tsresol),
                            tsresol,
                            offset_s,
                        });
                    }
                    Block::EnhancedPacket(epb) => {
                        let ts = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                        let caplen = (epb.caplen as usize).min(epb.data.len());
                        packet = Some((epb.if_id, ts, &epb.data[..caplen], epb.origlen));
                    }
                    Block::SimplePacket(spb) => {
                        st.spb_seen = true;
                        let caplen = (spb.origlen as usize).min(spb.data.len());
                        let snap = st.interfaces.first().map_or(0, |i| i.snaplen);
                        let caplen = if snap > 0 {
                            caplen.min(snap as usize)
                        } else {
                            caplen
                        };
                        packet = Some((0, 0, &spb.data[..caplen], spb.origlen));
                    }
                    _ => {}
                }
                let mut flow = ControlFlow::Continue(());
                if let Some((if_id, ts, data, orig_len)) = packet {
                    frame += 1;
                    // check_ng_block made sure the interface exists.
                    let Some(iface) = st.interfaces.get(if_id as usize) else {
                        return Err(bad(
                            path,
                            BadCaptureKind::Malformed,
                            format!(
                                "packet block at byte {offset}: interface {if_id} is not described"
                            ),
                        ));
                    };
                    match iface.link {
                        None => {
                            let raw = iface.raw_link;
                            match st.skipped.iter_mut().find(|(l, _)| *l == raw) {
                                Some((_, c)) => *c += 1,
                                None => st.skipped.push((raw, 1)),
                            }
                        }
                        Some(link) => {
                            let Some(units) = iface.units_per_sec else {
                                return Err(bad(
                                    path,
                                    BadCaptureKind::Malformed,
                                    format!(
                                        "interface {if_id}: unsupported timestamp resolution if_tsresol={:#04x}",
                                        iface.tsresol
                                    ),
                                ));
                            };
                            summary.packets += 1;
                            let pkt = RawPacket {
                                frame,
                                ts_ns: ng_timestamp(ts, units, iface.offset_s),
                                link,
                                data,
                                orig_len,
                            };
                            flow = f(&pkt);
                        }
                    }
                }
                st.reader.consume(len);
                if flow.is_break() {
                    break;
                }
            }
            Ok((len, _)) => {
                stalled = 0;
                st.reader.consume(len);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => {
                stalled += 1;
                let complete = block_len.is_some_and(|l| avail >= l as usize);
                if complete || stalled > MAX_STALLED_REFILLS {
                    return Err(bad(
                        path,
                        BadCaptureKind::Malformed,
                        format!("block at byte {offset}: inconsistent lengths inside the block"),
                    ));
                }
                if refill(&mut st.reader, path, offset)? {
                    stalled = 0;
                }
            }
            Err(PcapError::UnexpectedEof) => {
                let complete = block_len.is_some_and(|l| avail >= l as usize);
                if complete {
                    return Err(bad(
                        path,
                        BadCaptureKind::Malformed,
                        format!("block at byte {offset}: inconsistent lengths inside the block"),
                    ));
                }
                summary.warnings.push(truncated_warning(summary.packets));
                break;
            }
            Err(e) => {
                let msg = describe(&e);
                return Err(bad(
                    path,
                    BadCaptureKind::Malformed,
                    format!("block at byte {offset}: {msg}"),
                ));
            }
        }
    }
    for (link, count) in &st.skipped {
        summary.warnings.push(format!(
            "skipped {count} packets with unsupported link type {link}"
        ));
    }
    if st.spb_seen {
        summary
            .warnings
            .push("simple packet blocks carry no timestamps (reported as 0)".into());
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_units() {
        assert_eq!(units_per_sec(6), Some(1_000_000));
        assert_eq!(units_per_sec(9), Some(1_000_000_000));
        assert_eq!(units_per_sec(0x80 | 20), Some(1 << 20));
        assert_eq!(units_per_sec(20), None);
        // 1.5 s in microseconds, plus a 10 s offset.
        assert_eq!(ng_timestamp(1_500_000, 1_000_000, 10), 11_500_000_000);
        // 2^-20 s units: 3 * 2^20 + 2^19 units = 3.5 s.
        assert_eq!(
            ng_timestamp(3 * (1 << 20) + (1 << 19), 1 << 20, 0),
            3_500_000_000
        );
        assert_eq!(ng_timestamp(u64::MAX, 1, 0), i64::MAX);
    }
}

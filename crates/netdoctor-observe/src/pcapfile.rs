//! Reading capture files: classic pcap (both byte orders, micro- and nanosecond timestamps, the
//! old "modified" format) and pcapng (several sections and interfaces, `if_tsresol`,
//! `if_tsoffset`), through `pcap-parser`'s streaming readers: memory stays constant whatever the
//! file size.
//!
//! The parser is given a bounded buffer and this module checks every record header *before* the
//! parser sees it, because a hostile length would otherwise either make the reader ask for more
//! and more data or be reported as a mere truncation. Limits: a packet's captured length must not
//! exceed the file's (or interface's) snap length nor 256 KiB; any pcapng block must be at most
//! 512 KiB. Nothing is allocated from a length field. A file that ends in the middle of a record
//! is not an error: the packets read so far are delivered and the summary carries a warning.
//!
//! Two things are done by hand although the crate has helpers: pcapng timestamps (the crate's
//! `build_ts_resolution` rejects every binary `if_tsresol` and its `if_tsoffset` is always read
//! little-endian), and format sniffing (to name what the file starts with in the error).
//!
//! The bytes come through [`input`]: files, FIFOs and standard input (`-`) alike, gzip'd or not
//! (detected by magic), and with [`Follow`] a file that is still being written (`tail -f`). No
//! seek is ever made.

mod input;

pub use input::Follow;

use crate::error::io_error;
use crate::{BadCaptureKind, ObserveError, PacketSource, SourceSummary};
use input::{Input, Shared};
use netdoctor_core::{LinkType, RawPacket};
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{Block, LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};
use std::fs::File;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::Path;

/// Largest captured length accepted for one packet.
pub const MAX_CAPLEN: u32 = 256 * 1024;
/// Largest pcapng block accepted (packet blocks are also bound by [`MAX_CAPLEN`]).
pub const MAX_BLOCK_LEN: u32 = 512 * 1024;
/// Reader buffer: one maximal block fits with room to spare.
const BUFFER_SIZE: usize = MAX_BLOCK_LEN as usize + 128 * 1024;
/// Interfaces per pcapng section (keeps memory bounded on hostile files).
const MAX_INTERFACES: usize = 4096;
/// Refills in a row without progress before the file is declared malformed.
const MAX_STALLED_REFILLS: u32 = 64;

const SHB_MAGIC: u32 = 0x0A0D_0D0A;
const EPB_MAGIC: u32 = 6;
const SPB_MAGIC: u32 = 3;
const BOM_LE: [u8; 4] = [0x4d, 0x3c, 0x2b, 0x1a];
const BOM_BE: [u8; 4] = [0x1a, 0x2b, 0x3c, 0x4d];

/// A pcap or pcapng capture opened for reading; a one-shot [`PacketSource`].
pub struct CaptureFile {
    path: String,
    inner: Inner,
    gzip: bool,
    input: Shared,
}

enum Inner {
    Legacy(Box<LegacyState>),
    Ng(Box<NgState>),
}

struct LegacyState {
    reader: LegacyPcapReader<Input>,
    link: LinkType,
    snaplen: u32,
    nanos: bool,
    big_endian: bool,
}

struct NgState {
    reader: PcapNGReader<Input>,
    big_endian: bool,
    interfaces: Vec<Interface>,
    /// Packets skipped because their interface's link type is not decoded: (link type, count).
    skipped: Vec<(u32, u64)>,
    spb_seen: bool,
}

struct Interface {
    raw_link: u32,
    link: Option<LinkType>,
    snaplen: u32,
    /// Timestamp units per second, `None` for an unusable `if_tsresol`.
    units_per_sec: Option<u64>,
    tsresol: u8,
    offset_s: i64,
}

impl CaptureFile {
    /// Opens `path` (a file, a FIFO, `/dev/stdin`; `-` is standard input) and checks its file
    /// header.
    pub fn open(path: &Path) -> Result<CaptureFile, ObserveError> {
        CaptureFile::open_with(path, None)
    }

    /// [`CaptureFile::open`], following the file as it grows when `follow` is given.
    pub fn open_with(path: &Path, follow: Option<Follow>) -> Result<CaptureFile, ObserveError> {
        if path.as_os_str() == "-" {
            return CaptureFile::from_reader("stdin", Box::new(std::io::stdin()), follow);
        }
        let file = File::open(path).map_err(|e| io_error("open", path, &e))?;
        CaptureFile::from_reader(&path.display().to_string(), Box::new(file), follow)
    }

    /// Reads a capture from any byte stream; `name` is used in messages.
    pub fn from_reader(
        name: &str,
        reader: Box<dyn Read + Send>,
        follow: Option<Follow>,
    ) -> Result<CaptureFile, ObserveError> {
        let shown = name.to_string();
        let bad = |kind, message: String| ObserveError::BadCapture {
            path: shown.clone(),
            kind,
            message,
        };
        let (file, gzip, head) = Input::open(reader, follow, 24);
        let input = file.state();
        let state_error = || {
            let st = input.lock().unwrap_or_else(|e| e.into_inner());
            st.error
                .as_ref()
                .map(|e| input::describe_input_error(e, gzip).1)
        };
        if let Some(msg) = state_error() {
            return Err(bad(BadCaptureKind::Malformed, msg));
        }
        let head = &head[..];
        if head.is_empty() {
            let what = if gzip {
                "empty gzip'd data (0 bytes after decompression)"
            } else {
                "empty file (0 bytes)"
            };
            return Err(bad(BadCaptureKind::Empty, what.into()));
        }
        let magic = head.get(..4).map(|m| [m[0], m[1], m[2], m[3]]);
        let inner = match magic {
            Some(m) if u32::from_le_bytes(m) == SHB_MAGIC => {
                let big_endian = head.get(8..12) == Some(&BOM_BE[..]);
                let reader = PcapNGReader::new(BUFFER_SIZE, file).map_err(|e| {
                    bad(
                        BadCaptureKind::Malformed,
                        format!("bad pcapng section header ({})", describe(&e)),
                    )
                })?;
                Inner::Ng(Box::new(NgState {
                    reader,
                    big_endian,
                    interfaces: Vec::new(),
                    skipped: Vec::new(),
                    spb_seen: false,
                }))
            }
            Some(m) if is_pcap_magic(m) => {
                if head.len() < 24 {
                    return Err(bad(
                        BadCaptureKind::Malformed,
                        format!("pcap file header cut short ({} of 24 bytes)", head.len()),
                    ));
                }
                let reader = LegacyPcapReader::new(BUFFER_SIZE, file).map_err(|e| {
                    bad(
                        BadCaptureKind::Malformed,
                        format!("bad pcap file header ({})", describe(&e)),
                    )
                })?;
                let big_endian = m[0] == 0xa1;
                let u32_at = |o: usize| read_u32(&head[o..o + 4], big_endian);
                let snaplen = u32_at(16);
                // Bits 28..31 of the link type field may carry FCS information (libpcap's LT_LINKTYPE).
                let raw_link = u32_at(20) & 0x03FF_FFFF;
                let link = LinkType::from_pcap(raw_link).ok_or_else(|| {
                    bad(
                        BadCaptureKind::UnsupportedLinkType(raw_link),
                        format!("unsupported link type {raw_link} (netdoctor decodes Ethernet, Linux cooked, raw IP and loopback captures)"),
                    )
                })?;
                let nanos = matches!(m, [0x4d, 0x3c, 0xb2, 0xa1] | [0xa1, 0xb2, 0x3c, 0x4d]);
                Inner::Legacy(Box::new(LegacyState {
                    reader,
                    link,
                    snaplen,
                    nanos,
                    big_endian,
                }))
            }
            _ => {
                return Err(bad(
                    BadCaptureKind::NotCapture,
                    format!(
                        "not a pcap or pcapng file{} (starts with {})",
                        if gzip { " inside the gzip data" } else { "" },
                        preview(head)
                    ),
                ));
            }
        };
        Ok(CaptureFile {
            path: shown,
            inner,
            gzip,
            input,
        })
    }

    /// Whether the data was gzip'd.
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// Why following the file ended (`--follow`), once it has.
    pub fn follow_end(&self) -> Option<String> {
        self.input
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .follow_end
            .clone()
    }

    /// Turns an error under the parser into a warning (a cut-short gzip: the packets read so
    /// far stand) or an error.
    fn finish_input(&self, mut summary: SourceSummary) -> Result<SourceSummary, ObserveError> {
        let st = self.input.lock().unwrap_or_else(|e| e.into_inner());
        let Some(e) = &st.error else {
            return Ok(summary);
        };
        let (truncated, msg) = input::describe_input_error(e, self.gzip);
        if !truncated {
            return Err(ObserveError::Io {
                op: "read",
                path: self.path.clone(),
                kind: e.kind(),
                message: format!("{msg} (after {} packets)", summary.packets),
            });
        }
        let cut = truncated_warning(summary.packets);
        summary.warnings.retain(|w| *w != cut);
        summary.warnings.push(format!(
            "{msg}: analyzed the {} packets before the cut",
            summary.packets
        ));
        Ok(summary)
    }

    fn bad(&self, kind: BadCaptureKind, message: String) -> ObserveError {
        ObserveError::BadCapture {
            path: self.path.clone(),
            kind,
            message,
        }
    }
}

fn is_pcap_magic(m: [u8; 4]) -> bool {
    matches!(
        u32::from_le_bytes(m),
        0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 | 0xa1b2_cd34
    )
}

fn read_u32(b: &[u8], big_endian: bool) -> u32 {
    let a = [b[0], b[1], b[2], b[3]];
    if big_endian {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

/// The first bytes of a file for an error message: `'hello'` when printable, else hex.
fn preview(head: &[u8]) -> String {
    let text: Vec<u8> = head
        .iter()
        .copied()
        .take(8)
        .take_while(|b| b.is_ascii_graphic())
        .collect();
    if text.len() >= 2 {
        format!("'{}'", String::from_utf8_lossy(&text))
    } else {
        let hex: Vec<String> = head.iter().take(4).map(|b| format!("{b:02x}")).collect();
        format!("0x{}", hex.join(""))
    }
}

/// A parser error in words, without dumping the input bytes it carries.
fn describe<I>(e: &PcapError<I>) -> String {
    match e {
        PcapError::Eof => "end of file".into(),
        PcapError::BufferTooSmall => "record larger than the read buffer".into(),
        PcapError::UnexpectedEof => "unexpected end of file".into(),
        PcapError::ReadError => "read error".into(),
        PcapError::Incomplete(_) => "incomplete data".into(),
        PcapError::HeaderNotRecognized => "header not recognized".into(),
        PcapError::NomError(_, k) | PcapError::OwnedNomError(_, k) => {
            format!("parse error: {}", k.description())
        }
    }
}

fn truncated_warning(packets: u64) -> String {
    format!("capture file ends in the middle of a packet after {packets} packets (truncated?)")
}

impl PacketSource for CaptureFile {
    fn for_each_packet(
        &mut self,
        f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
    ) -> Result<SourceSummary, ObserveError> {
        let summary = match &mut self.inner {
            Inner::Legacy(st) => {
                let path = self.path.clone();
                read_legacy(&path, st, f)?
            }
            Inner::Ng(st) => {
                let path = self.path.clone();
                let summary = read_ng(&path, st, f)?;
                if summary.packets == 0
                    && let Some(&(link, _)) = st.skipped.first()
                {
                    return Err(self.bad(
                        BadCaptureKind::UnsupportedLinkType(link),
                        format!("unsupported link type {link} (netdoctor decodes Ethernet, Linux cooked, raw IP and loopback captures)"),
                    ));
                }
                summary
            }
        };
        self.finish_input(summary)
    }
}

fn bad(path: &str, kind: BadCaptureKind, message: String) -> ObserveError {
    ObserveError::BadCapture {
        path: path.to_string(),
        kind,
        message,
    }
}

fn read_error(path: &str, offset: usize) -> ObserveError {
    ObserveError::Io {
        op: "read",
        path: path.to_string(),
        kind: std::io::ErrorKind::Other,
        message: format!("read failed at byte {offset}"),
    }
}

fn read_legacy(
    path: &str,
    st: &mut LegacyState,
    f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
) -> Result<SourceSummary, ObserveError> {
    let mut summary = SourceSummary::default();
    let mut stalled = 0u32;
    let limit = if st.snaplen == 0 {
        MAX_CAPLEN
    } else {
        st.snaplen.min(MAX_CAPLEN)
    };
    loop {
        let offset = st.reader.consumed();
        // The pcap file header is the first "block"; records follow.
        if offset > 0 {
            let data = st.reader.data();
            if data.len() >= 16 {
                let caplen = read_u32(&data[8..12], st.big_endian);
                if caplen > limit {
                    return Err(bad(
                        path,
                        BadCaptureKind::HostileLength,
                        format!(
                            "packet {} at byte {offset}: captured length {caplen} exceeds the limit of {limit} bytes (snap length {}, max {MAX_CAPLEN})",
                            summary.packets + 1,
                            st.snaplen
                        ),
                    ));
                }
            }
        }
        match st.reader.next() {
            Ok((len, PcapBlockOwned::Legacy(b))) => {
                stalled = 0;
                let frac = if st.nanos {
                    i64::from(b.ts_usec)
                } else {
                    i64::from(b.ts_usec) * 1000
                };
                summary.packets += 1;
                let pkt = RawPacket {
                    frame: summary.packets,
                    ts_ns: i64::from(b.ts_sec) * 1_000_000_000 + frac,
                    link: st.link,
                    data: b.data,
                    orig_len: b.origlen,
                };
                let flow = f(&pkt);
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
                if stalled > MAX_STALLED_REFILLS {
                    return Err(bad(
                        path,
                        BadCaptureKind::Malformed,
                        format!("record at byte {offset} cannot be parsed"),
                    ));
                }
                let before = st.reader.data().len();
                st.reader.refill().map_err(|_| read_error(path, offset))?;
                if st.reader.data().len() > before {
                    // New bytes (a pipe or a followed file delivers a record in pieces).
                    stalled = 0;
                }
            }
            Err(PcapError::UnexpectedEof) => {
                summary.warnings.push(truncated_warning(summary.packets));
                break;
            }
            Err(e) => {
                let msg = describe(&e);
                return Err(bad(
                    path,
                    BadCaptureKind::Malformed,
                    format!("record at byte {offset}: {msg}"),
                ));
            }
        }
    }
    Ok(summary)
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

fn read_ng(
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
                let before = st.reader.data().len();
                st.reader.refill().map_err(|_| read_error(path, offset))?;
                if st.reader.data().len() > before {
                    // New bytes (a pipe or a followed file delivers a record in pieces).
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

    #[test]
    fn preview_text_and_binary() {
        assert_eq!(preview(b"hello world"), "'hello'");
        assert_eq!(preview(&[0, 1, 2, 3, 4]), "0x00010203");
    }
}

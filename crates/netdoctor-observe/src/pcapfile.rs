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
mod mapped;
mod ng;
mod runs;
mod stream;

pub use input::Follow;
use ng::{NgState, read_ng};
pub use runs::{Backdated, RUN_BYTES, TimeRuns};
pub use stream::{Abort, LEAD, Streamed};

use crate::error::io_error;
use crate::{BadCaptureKind, ObserveError, PacketSource, SourceSummary};
use input::{Input, Shared};
use mapped::{MappedState, read_mapped};
pub use mapped::{PageHold, SharedMap};
use netdoctor_core::{LinkType, RawPacket};
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};
use std::fs::File;
use std::io::{IsTerminal, Read};
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
    Mapped(Box<MappedState>),
}

struct LegacyState {
    reader: LegacyPcapReader<Input>,
    header: LegacyHeader,
}

/// What a classic pcap file header says about its records.
struct LegacyHeader {
    link: LinkType,
    snaplen: u32,
    nanos: bool,
    big_endian: bool,
}

impl LegacyHeader {
    /// From the 24-byte file header (its magic already known to be a pcap one).
    fn of(head: &[u8]) -> Result<LegacyHeader, (BadCaptureKind, String)> {
        let m = [head[0], head[1], head[2], head[3]];
        let big_endian = m[0] == 0xa1;
        let u32_at = |o: usize| read_u32(&head[o..o + 4], big_endian);
        let snaplen = u32_at(16);
        // Bits 28..31 of the link type field may carry FCS information (libpcap's LT_LINKTYPE).
        let raw_link = u32_at(20) & 0x03FF_FFFF;
        let link = LinkType::from_pcap(raw_link).ok_or_else(|| {
            (
                BadCaptureKind::UnsupportedLinkType(raw_link),
                format!("unsupported link type {raw_link} (netdoctor decodes Ethernet, Linux cooked, raw IP, loopback, 802.11 and NFLOG captures)"),
            )
        })?;
        let nanos = matches!(m, [0x4d, 0x3c, 0xb2, 0xa1] | [0xa1, 0xb2, 0x3c, 0x4d]);
        Ok(LegacyHeader {
            link,
            snaplen,
            nanos,
            big_endian,
        })
    }
}

impl CaptureFile {
    /// Opens `path` (a file, a FIFO, `/dev/stdin`; `-` is standard input) and checks its file
    /// header.
    pub fn open(path: &Path) -> Result<CaptureFile, ObserveError> {
        CaptureFile::open_with(path, None)
    }

    /// [`CaptureFile::open`], following the file as it grows when `follow` is given. Only a
    /// regular file is followed: the end of a pipe or FIFO is final (as with `tail -f`).
    pub fn open_with(path: &Path, follow: Option<Follow>) -> Result<CaptureFile, ObserveError> {
        if path.as_os_str() == "-" {
            if std::io::stdin().is_terminal() {
                return Err(ObserveError::BadCapture {
                    path: "stdin".into(),
                    kind: BadCaptureKind::NotCapture,
                    message: "standard input is a terminal; pipe a capture into it \
                              (tcpdump -w - | netdoctor analyze -)"
                        .into(),
                });
            }
            return CaptureFile::from_reader("stdin", Box::new(std::io::stdin()), None);
        }
        let file = File::open(path).map_err(|e| io_error("open", path, &e))?;
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        let follow = follow.filter(|_| regular);
        if regular
            && follow.is_none()
            && let Some(st) = MappedState::open(&file)
        {
            return Ok(CaptureFile {
                path: path.display().to_string(),
                inner: Inner::Mapped(Box::new(st)),
                gzip: false,
                input: Shared::default(),
            });
        }
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
                let header = LegacyHeader::of(head).map_err(|(kind, msg)| bad(kind, msg))?;
                Inner::Legacy(Box::new(LegacyState { reader, header }))
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

    /// The runs of frames in timestamp order that make up the file, for reading it merged by
    /// timestamp ([`TimeRuns`]), and how many frames `backdated` (first, previous, this
    /// stamp) calls backdated; the walk goes in `parts` at once on a large file. Only a
    /// classic pcap file read through a map, with no record cut short or too long and at most
    /// `max_runs` runs; `None` otherwise.
    pub fn time_runs(
        &self,
        max_runs: usize,
        parts: usize,
        backdated: &runs::Backdated,
    ) -> Option<(TimeRuns<'_>, u64)> {
        match &self.inner {
            Inner::Mapped(st) => runs::walk(st, max_runs, parts, backdated),
            _ => None,
        }
    }

    /// Hands every frame to `f` merged by timestamp as [`TimeRuns::for_each`] does (in file
    /// order for a file in order) while the record headers are walked a chunk ahead on this
    /// thread: the analysis starts at once and reads each page right after the walk, in one
    /// pass over memory (`stream`'s module docs). `Err` when the merge had to stop (the frames
    /// handed on so far are to be dropped and the file read as before); `None` for a file not
    /// read through a map.
    pub fn merge_walking(
        &self,
        max_runs: usize,
        backdated: &runs::Backdated,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Option<Result<Streamed, Abort>> {
        match &self.inner {
            Inner::Mapped(st) => Some(stream::merge_walking(st, max_runs, backdated, f)),
            _ => None,
        }
    }

    /// The map of a file read in place, for a consumer that reads frames after the
    /// callback returns (pages are then released only behind it); `None` for a file read
    /// through a stream (its frames are gone when the callback returns).
    pub fn share_map(&self) -> Option<SharedMap> {
        match &self.inner {
            Inner::Mapped(st) => Some(st.share()),
            _ => None,
        }
    }

    /// Whether the file is read in place through a map (a classic pcap regular file).
    pub fn is_mapped(&self) -> bool {
        matches!(self.inner, Inner::Mapped(_))
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
            Inner::Mapped(st) => read_mapped(&self.path, st, f)?,
            Inner::Ng(st) => {
                let path = self.path.clone();
                let summary = read_ng(&path, st, f)?;
                if summary.packets == 0
                    && let Some(&(link, _)) = st.skipped.first()
                {
                    return Err(self.bad(
                        BadCaptureKind::UnsupportedLinkType(link),
                        format!("unsupported link type {link} (netdoctor decodes Ethernet, Linux cooked, raw IP, loopback, 802.11 and NFLOG captures)"),
                    ));
                }
                summary
            }
        };
        self.finish_input(summary)
    }
}

/// The error for pcap record `at` (its number and byte offset) with an odd captured length
/// (0, or over `limit`), if it is one; `rec` its first bytes. A record that starts with a pcap
/// file header's magic number is a second capture appended with `cat` (its header read as a
/// record has the time zone field, 0, as captured length), which no pcap reader takes as one
/// file (tshark calls it corrupt): the message says so and how captures are joined. Checked
/// only for those lengths, so the loop over records pays one compare.
fn odd_record(
    path: &str,
    rec: &[u8],
    at: (u64, u64),
    caplen: u32,
    limit: u32,
    snaplen: u32,
) -> Option<ObserveError> {
    let (packet, pos) = at;
    if let Some(&[a, b, c, d]) = rec.get(..4)
        && is_pcap_magic([a, b, c, d])
    {
        return Some(bad(
            path,
            BadCaptureKind::Malformed,
            format!(
                "byte {pos}: a second pcap file header after packet {}: two captures joined with `cat`? Join captures with `mergecap -w joined.pcap a.pcap b.pcap`",
                packet - 1
            ),
        ));
    }
    (caplen > limit).then(|| {
        bad(
            path,
            BadCaptureKind::HostileLength,
            format!(
                "packet {packet} at byte {pos}: captured length {caplen} exceeds the limit of {limit} bytes (snap length {snaplen}, max {MAX_CAPLEN})"
            ),
        )
    })
}

fn bad(path: &str, kind: BadCaptureKind, message: String) -> ObserveError {
    ObserveError::BadCapture {
        path: path.to_string(),
        kind,
        message,
    }
}

/// Reads more input into the reader's buffer; true when new bytes arrived (a pipe or a followed
/// file delivers a record in pieces), so the caller's count of fruitless refills starts over.
fn refill<R: PcapReaderIterator>(
    reader: &mut R,
    path: &str,
    offset: usize,
) -> Result<bool, ObserveError> {
    let before = reader.data().len();
    reader.refill().map_err(|_| read_error(path, offset))?;
    Ok(reader.data().len() > before)
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
    let h = &st.header;
    let limit = if h.snaplen == 0 {
        MAX_CAPLEN
    } else {
        h.snaplen.min(MAX_CAPLEN)
    };
    loop {
        let offset = st.reader.consumed();
        // The pcap file header is the first "block"; records follow.
        if offset > 0 {
            let data = st.reader.data();
            if data.len() >= 16 {
                let caplen = read_u32(&data[8..12], h.big_endian);
                if caplen == 0 || caplen > limit {
                    let at = (summary.packets + 1, offset as u64);
                    if let Some(e) = odd_record(path, data, at, caplen, limit, h.snaplen) {
                        return Err(e);
                    }
                }
            }
        }
        match st.reader.next() {
            Ok((len, PcapBlockOwned::Legacy(b))) => {
                stalled = 0;
                let frac = if h.nanos {
                    i64::from(b.ts_usec)
                } else {
                    i64::from(b.ts_usec) * 1000
                };
                summary.packets += 1;
                let pkt = RawPacket {
                    frame: summary.packets,
                    ts_ns: i64::from(b.ts_sec) * 1_000_000_000 + frac,
                    link: h.link,
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
                if refill(&mut st.reader, path, offset)? {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_text_and_binary() {
        assert_eq!(preview(b"hello world"), "'hello'");
        assert_eq!(preview(&[0, 1, 2, 3, 4]), "0x00010203");
    }
}

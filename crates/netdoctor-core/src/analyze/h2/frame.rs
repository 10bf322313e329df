//! HTTP/2 framing of one direction of a cleartext connection (RFC 9113 §4), read from the
//! captured segments in sequence order.
//!
//! Hand-written: framing crates (`h2`, the load engine's own `h2` module) parse the complete
//! byte stream of a live connection. Here bytes may be missing (past the snap length, or in a
//! capture gap: holes that a retransmission fills are replayed in order before this reader
//! by `crate::analyze::reasm`), and only frame headers, small control payloads and header
//! blocks are wanted, without keeping the stream's bytes. Missing bytes inside a frame's payload only make that payload unknown; missing bytes
//! over a frame header lose the framing, which is found again at the first later segment that
//! starts with a plausible frame header ([`Head::plausible`]).

use crate::event::Pkt;

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY: u8 = 0x20;

/// The client connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Payload bytes kept of one frame (header blocks, SETTINGS, GOAWAY...); DATA is never kept.
const MAX_KEPT: usize = 16 * 1024;

/// The largest frame any peer may send (2^24 − 1); the default limit is 16 384.
const MAX_FRAME: u32 = (1 << 24) - 1;

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    fn parse(b: &[u8; 9]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    /// Whether this can be a frame header at all, given the largest frame size `max` the
    /// receiver allowed: a known type, on stream 0 exactly when the type says so, with the
    /// length its type requires.
    pub(crate) fn plausible(&self, max: u32) -> bool {
        let on_stream = self.stream != 0;
        self.len <= max
            && match self.kind {
                DATA | HEADERS | 0x2 | PUSH_PROMISE | CONTINUATION => on_stream,
                RST_STREAM => on_stream && self.len == 4,
                SETTINGS => !on_stream && self.len.is_multiple_of(6),
                PING => !on_stream && self.len == 8,
                GOAWAY => !on_stream && self.len >= 8,
                WINDOW_UPDATE => self.len == 4,
                _ => false,
            }
    }
}

/// A frame read whole: its header, the segments its first and last bytes came in, and its
/// payload when every byte of it was captured (never for DATA, nor past [`MAX_KEPT`]).
pub(crate) struct Frame<'a> {
    pub head: Head,
    pub first: Pkt,
    pub last: Pkt,
    pub payload: Option<&'a [u8]>,
    /// The first frame read after the framing was lost and found again: frames before it
    /// (back to the loss) were missed.
    pub resync: bool,
}

/// The frame reader of one direction.
pub(crate) struct Reader {
    /// Bytes of the client preface still to pass over.
    preface: u8,
    next_seq: Option<u32>,
    hdr: [u8; 9],
    have: u8,
    /// The frame whose payload is being read, its bytes left and its first segment.
    head: Option<Head>,
    left: u32,
    first: Option<Pkt>,
    buf: Vec<u8>,
    whole: bool,
    /// The framing was lost (missing bytes over a frame header): waiting for a segment that
    /// starts with a plausible one.
    lost: bool,
    /// The framing was found again after a loss, and no frame was read since.
    resynced: bool,
    /// The largest frame the receiver allows (its SETTINGS_MAX_FRAME_SIZE, for resyncing).
    pub max_frame: u32,
    /// Times the framing was lost.
    pub losses: u32,
}

impl Reader {
    /// A reader of the client's direction (starts with the preface) or the server's.
    pub(crate) fn new(client: bool) -> Reader {
        Reader {
            preface: if client { PREFACE.len() as u8 } else { 0 },
            next_seq: None,
            hdr: [0; 9],
            have: 0,
            head: None,
            left: 0,
            first: None,
            buf: Vec::new(),
            whole: true,
            lost: false,
            resynced: false,
            max_frame: 16_384,
            losses: 0,
        }
    }

    /// New data of this direction: segment `pkt` starting at sequence number `seq`, `len`
    /// bytes long, of which `captured` (a prefix) were captured. Every frame it completes goes
    /// to `out`, in order.
    pub(crate) fn feed(
        &mut self,
        pkt: Pkt,
        seq: u32,
        mut captured: &[u8],
        mut len: u32,
        out: &mut impl FnMut(&Frame<'_>),
    ) {
        let end = seq.wrapping_add(len);
        if captured.len() > len as usize {
            captured = &captured[..len as usize];
        }
        if let Some(n) = self.next_seq {
            let d = seq.wrapping_sub(n) as i32;
            if d > 0 {
                // A hole (a retransmission fills it later; its bytes are not replayed).
                self.unknown(pkt, d as u32, out);
            } else if d < 0 {
                // Overlaps what was read already.
                let over = d.unsigned_abs();
                if over >= len {
                    return;
                }
                captured = &captured[(over as usize).min(captured.len())..];
                len -= over;
            }
        }
        self.next_seq = Some(end);
        if self.lost {
            let Some(h) = captured.first_chunk::<9>().map(Head::parse) else {
                return;
            };
            if !h.plausible(self.max_frame.max(16_384)) {
                return;
            }
            self.lost = false;
            self.resynced = true;
            self.have = 0;
            self.head = None;
        }
        let missing = len - captured.len() as u32;
        while !captured.is_empty() && !self.lost {
            if self.preface > 0 {
                let n = usize::from(self.preface).min(captured.len());
                self.preface -= n as u8;
                captured = &captured[n..];
                continue;
            }
            match self.head {
                None => {
                    let have = usize::from(self.have);
                    let n = (9 - have).min(captured.len());
                    self.hdr[have..have + n].copy_from_slice(&captured[..n]);
                    self.have += n as u8;
                    captured = &captured[n..];
                    if self.have == 9 {
                        self.have = 0;
                        let h = Head::parse(&self.hdr);
                        if !h.plausible(MAX_FRAME) {
                            self.lose();
                            return;
                        }
                        self.head = Some(h);
                        self.left = h.len;
                        self.first = Some(pkt);
                        self.buf.clear();
                        self.whole = h.kind != DATA && h.len as usize <= MAX_KEPT;
                        if h.len == 0 {
                            self.complete(pkt, out);
                        }
                    }
                }
                Some(_) => {
                    let n = (self.left as usize).min(captured.len());
                    if self.whole {
                        self.buf.extend_from_slice(&captured[..n]);
                    }
                    self.left -= n as u32;
                    captured = &captured[n..];
                    if self.left == 0 {
                        self.complete(pkt, out);
                    }
                }
            }
        }
        self.unknown(pkt, missing, out);
    }

    /// `n` bytes that were not captured.
    fn unknown(&mut self, pkt: Pkt, mut n: u32, out: &mut impl FnMut(&Frame<'_>)) {
        if n == 0 || self.lost {
            return;
        }
        if self.preface > 0 {
            let k = u32::from(self.preface).min(n);
            self.preface -= k as u8;
            n -= k;
            if n == 0 {
                return;
            }
        }
        if self.head.is_some() && self.left >= n {
            self.left -= n;
            self.whole = false;
            if self.left == 0 {
                self.complete(pkt, out);
            }
        } else {
            self.lose();
        }
    }

    /// The framing is lost now (frames are being missed until a segment starts with one).
    pub(crate) fn is_lost(&self) -> bool {
        self.lost
    }

    fn lose(&mut self) {
        self.lost = true;
        self.losses += 1;
        self.head = None;
        self.have = 0;
    }

    fn complete(&mut self, pkt: Pkt, out: &mut impl FnMut(&Frame<'_>)) {
        let Some(head) = self.head.take() else {
            return;
        };
        let frame = Frame {
            head,
            first: self.first.unwrap_or(pkt),
            last: pkt,
            payload: self.whole.then_some(&self.buf[..]),
            resync: std::mem::take(&mut self.resynced),
        };
        out(&frame);
    }
}

/// A header block fragment without the padding and priority fields of its HEADERS frame.
pub(crate) fn strip(p: &[u8], flags: u8) -> Option<&[u8]> {
    let mut p = p;
    if flags & PADDED != 0 {
        let pad = usize::from(*p.first()?);
        p = p.get(1..p.len().checked_sub(pad)?)?;
    }
    if flags & PRIORITY != 0 {
        p = p.get(5..)?;
    }
    Some(p)
}

/// An error code (the first four bytes of `p`).
pub(crate) fn code(p: &[u8]) -> Option<u32> {
    p.first_chunk::<4>().map(|b| u32::from_be_bytes(*b))
}

/// The name of an HTTP/2 error code (RFC 9113 §7).
pub fn error_name(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        u32::MAX => "unknown (not captured)",
        _ => "unknown code",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags;

    fn pkt(frame: u64) -> Pkt {
        Pkt {
            frame,
            ts_ns: frame as i64,
            from_server: false,
            flags: TcpFlags(0x18),
            len: 0,
        }
    }

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut v = len.to_be_bytes()[1..].to_vec();
        v.extend([kind, flags]);
        v.extend(stream.to_be_bytes());
        v.extend(payload);
        v
    }

    fn read(r: &mut Reader, segs: &[(u32, &[u8], u32)]) -> Vec<(u8, u32, u64, u64, bool)> {
        let mut got = Vec::new();
        for (k, (seq, cap, len)) in segs.iter().enumerate() {
            r.feed(pkt(k as u64 + 1), *seq, cap, *len, &mut |f| {
                got.push((
                    f.head.kind,
                    f.head.stream,
                    f.first.frame,
                    f.last.frame,
                    f.payload.is_some(),
                ))
            });
        }
        got
    }

    #[test]
    fn frames_split_over_segments_come_whole_with_their_first_and_last_segment() {
        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]));
        bytes.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x82\x86"));
        bytes.extend(frame(DATA, 0, 1, &[7; 100]));
        let (a, b) = bytes.split_at(40);
        let mut r = Reader::new(true);
        let got = read(
            &mut r,
            &[(1000, a, a.len() as u32), (1040, b, b.len() as u32)],
        );
        assert_eq!(
            got,
            [
                (SETTINGS, 0, 1, 1, true),
                (HEADERS, 1, 2, 2, true),
                (DATA, 1, 2, 2, false)
            ]
        );
    }

    #[test]
    fn a_hole_inside_a_payload_keeps_the_framing_and_one_over_a_header_resyncs() {
        let d1 = frame(DATA, 0, 1, &[0; 1000]);
        let d2 = frame(DATA, END_STREAM, 1, &[0; 10]);
        let h3 = frame(HEADERS, END_HEADERS, 3, b"\x88");
        let mut r = Reader::new(false);
        // d1's middle is missing: d1 still completes, then d2.
        let mut tail = d1[600..].to_vec();
        tail.extend(&d2);
        let got = read(
            &mut r,
            &[(0, &d1[..500], 500), (600, &tail, tail.len() as u32)],
        );
        assert_eq!(got, [(DATA, 1, 1, 2, false), (DATA, 1, 2, 2, false)]);
        // A hole over d2's header: lost until a segment starts with a frame header.
        let mut r = Reader::new(false);
        let got = read(
            &mut r,
            &[
                (0, &d1, d1.len() as u32),
                (d1.len() as u32 + 5, &d2[5..], d2.len() as u32 - 5),
                (d1.len() as u32 + d2.len() as u32, &h3, h3.len() as u32),
            ],
        );
        assert_eq!(got, [(DATA, 1, 1, 1, false), (HEADERS, 3, 3, 3, true)]);
        assert_eq!(r.losses, 1);
    }

    #[test]
    fn a_truncated_segment_counts_its_missing_bytes() {
        let d1 = frame(DATA, 0, 1, &[0; 1000]);
        let h3 = frame(HEADERS, END_HEADERS, 3, b"\x88");
        let mut r = Reader::new(false);
        let got = read(
            &mut r,
            &[(0, &d1[..256], d1.len() as u32), (d1.len() as u32, &h3, 10)],
        );
        assert_eq!(got, [(DATA, 1, 1, 1, false), (HEADERS, 3, 2, 2, true)]);
        assert_eq!(r.losses, 0);
    }
}

//! Where an HTTP/1.x answer ends, by its message framing (RFC 9112 §6.3), as far as the
//! capture shows it. A reset soon after an answer is told by whether that answer was
//! complete (`hub::reset_kind`): an idle timeout or an abortive close after a complete
//! answer, a failure when it was cut. `Content-Length` alone left out the answers that are
//! just as complete by other rules (a chunked answer's terminating `0` chunk, a HEAD answer,
//! a `204` or `304`): a load balancer's idle reset after them was told as a critical reset
//! "in the middle". The rules, in the RFC's order:
//! - an answer to HEAD, a `1xx` (not final: its end says nothing), `204` or `304` has no body:
//!   it ends with its header (a `2xx` to CONNECT turns the connection into a tunnel: no end);
//! - `Transfer-Encoding` whose last coding is `chunked`: the chunks are followed (this module's
//!   decoder) to the `0` chunk and its trailer section; any other coding: read until close;
//! - a valid `Content-Length` (a list of equal values too; different ones are invalid);
//! - otherwise the body runs until the connection closes: no end to be complete by.
//!
//! The capture must show the framing: the header whole in the answer's first segment, and
//! every chunk-size line and the trailer section. Bytes the snap length cut inside a chunk's
//! data are known to be data, and the CRLF that closes a chunk's data goes where the framing
//! puts it (the size line after it, when captured, confirms the chunks go on). A snap length
//! that cut a size line (a segment holding two chunks), or data the capture missed, makes
//! the end unknown ([`Framing::Unseen`]): the story says so and does not call the answer
//! complete. The decoder skips chunk data without reading it, so it costs a few steps per
//! segment of a chunked answer and nothing for the others.
//!
//! The header is searched with the `memchr` crate (SIMD) for its blank line and line ends, and
//! only lines starting like the two names read are compared: a byte-by-byte search cost ~8 %
//! of `analyze` on a keep-alive capture (session 18, callgrind: 3,064 → 2,903 M instructions
//! on the bench capture, identical output).

use std::sync::LazyLock;

use memchr::memmem;

/// How the end of an answer is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    /// Not before the connection closes (no length, a coding other than chunked, an interim
    /// or tunnel answer), or not readable here (a header not whole in the first segment).
    Open,
    /// The message's whole size (header and body) in bytes.
    Length(u64),
    /// A chunked body, followed as it arrives.
    Chunked(Chunked),
    /// The capture did not keep bytes the framing needed (snap length, a capture gap).
    Unseen,
    /// The snap length cut the header itself: nothing of the framing is known (nearly every
    /// live capture at the default 256-byte snap length of an answer with a header over ~190
    /// bytes, such as nginx's). Told as [`Framing::Unseen`] by the reset stories, but the
    /// silence before a close still counts as the connection's idle time (`tcp.rs`).
    HeadUnseen,
}

/// The chunked decoder's state (RFC 9112 §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Chunked {
    /// In a chunk-size line: its value so far, its hex digits, and whether an extension (or
    /// whitespace) started (the rest of the line is skipped).
    Size {
        val: u64,
        digits: u8,
        ext: bool,
    },
    /// In a chunk's data: the bytes left.
    Data(u64),
    /// The CR, then the LF, after a chunk's data.
    DataCr,
    DataLf,
    /// In the trailer section after the last chunk; `empty`: nothing yet on this line.
    Trailer {
        empty: bool,
    },
    /// The message ended.
    Done,
    /// Not chunked framing after all (a bad size line): no end known.
    Bad,
}

const SIZE_START: Chunked = Chunked::Size {
    val: 0,
    digits: 0,
    ext: false,
};

/// The request method, as far as the answer's framing depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(super) enum Method {
    #[default]
    Other,
    Head,
    Connect,
}

impl Method {
    /// From the start of a request's first segment.
    pub(super) fn of(payload: &[u8]) -> Method {
        if payload.starts_with(b"HEAD ") {
            Method::Head
        } else if payload.starts_with(b"CONNECT ") {
            Method::Connect
        } else {
            Method::Other
        }
    }
}

/// The position just past the header's blank line in `payload`, if it is there.
pub(super) fn header_end(payload: &[u8]) -> Option<usize> {
    /// Built once: building a finder per answer cost more than the search itself.
    static BLANK_LINE: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\r\n\r\n"));
    BLANK_LINE.find(payload).map(|e| e + 4)
}

/// `payload` (of a `wire`-byte segment, captured whole) is a `100 Continue` head and nothing
/// else: an interim answer to a request's `Expect: 100-continue`, its body still to come.
pub(super) fn interim_continue(payload: &[u8], wire: u32) -> bool {
    payload.len() == wire as usize
        && super::http::http_status(payload) == Some(100)
        && header_end(payload) == Some(payload.len())
}

/// The framing of an HTTP/1.x answer with status `status` to a `method` request, from its
/// first segment: `payload` the captured bytes, `wire` the segment's payload length.
pub(super) fn answer_framing(payload: &[u8], wire: u32, status: u16, method: Method) -> Framing {
    let missing = u64::from(wire).saturating_sub(payload.len() as u64);
    let Some(end) = header_end(payload) else {
        return if missing > 0 {
            Framing::HeadUnseen
        } else {
            Framing::Open
        };
    };
    if status < 200 || (method == Method::Connect && status < 300) {
        return Framing::Open;
    }
    if method == Method::Head || status == 204 || status == 304 {
        return Framing::Length(end as u64);
    }
    let mut len: Option<u64> = None;
    let head = &payload[..end];
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', head).chain(std::iter::once(head.len()));
    for nl in ends {
        let line = &head[start..nl];
        start = nl + 1;
        // Only the two names below are read: a line starting otherwise is skipped unread.
        if !matches!(line.first(), Some(b't' | b'T' | b'c' | b'C')) {
            continue;
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // Its last coding decides; the header may list them on several lines, the last
            // line's last one is the last applied.
            let last = value.rsplit(|&b| b == b',').next().unwrap_or_default();
            if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                return Framing::Open;
            }
            let mut c = Framing::Chunked(SIZE_START);
            c.feed(&payload[end..], missing);
            return c;
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            for v in value.split(|&b| b == b',') {
                let Some(n) = std::str::from_utf8(v.trim_ascii())
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                else {
                    return Framing::Open;
                };
                if len.is_some_and(|l| l != n) {
                    return Framing::Open;
                }
                len = Some(n);
            }
        }
    }
    len.map_or(Framing::Open, |n| Framing::Length(end as u64 + n))
}

impl Framing {
    /// More of a chunked answer: `payload` the captured bytes, then `missing` bytes of the
    /// segment the capture did not keep. Other framings need nothing per segment.
    #[inline]
    pub(super) fn feed(&mut self, payload: &[u8], missing: u64) {
        let Framing::Chunked(c) = self else {
            return;
        };
        if *c == Chunked::Done {
            return;
        }
        let mut s = *c;
        let mut i = 0;
        while i < payload.len() {
            if let Chunked::Data(n) = s {
                let take = n.min((payload.len() - i) as u64);
                i += take as usize;
                s = if take == n {
                    Chunked::DataCr
                } else {
                    Chunked::Data(n - take)
                };
                continue;
            }
            s = s.step(payload[i]);
            i += 1;
            if matches!(s, Chunked::Done | Chunked::Bad) {
                break;
            }
        }
        *self = match s {
            Chunked::Bad => Framing::Open,
            Chunked::Done => Framing::Chunked(Chunked::Done),
            _ if missing == 0 => Framing::Chunked(s),
            Chunked::Data(n) if missing < n => Framing::Chunked(Chunked::Data(n - missing)),
            // Cut at the data's end or inside the CRLF after it: the framing puts that CRLF
            // there (the next size line, read, confirms the chunks go on).
            Chunked::Data(n) if missing <= n + 2 => Framing::Chunked(after_crlf(missing - n, 2)),
            Chunked::DataCr if missing <= 2 => Framing::Chunked(after_crlf(missing, 2)),
            Chunked::DataLf if missing == 1 => Framing::Chunked(SIZE_START),
            // The capture cut framing bytes that say something (a size line, a trailer):
            // not known.
            _ => Framing::Unseen,
        };
    }

    /// The capture missed data of the answer before this segment: a chunked answer's end
    /// can no longer be followed.
    pub(super) fn lost(&mut self) {
        if matches!(self, Framing::Chunked(c) if *c != Chunked::Done) {
            *self = Framing::Unseen;
        }
    }

    /// The answer is known to be unfinished, `bytes` of it having arrived: fewer than its
    /// length, or a chunked body before its last chunk (not an answer read to its close, nor
    /// one whose head was not seen).
    pub(super) fn short(self, bytes: u64) -> bool {
        match self {
            Framing::Length(w) => bytes < w,
            Framing::Chunked(c) => !matches!(c, Chunked::Done | Chunked::Bad),
            Framing::Open | Framing::Unseen | Framing::HeadUnseen => false,
        }
    }

    /// The answer is complete, `bytes` of it (header and body) having arrived.
    #[inline]
    pub(super) fn complete(self, bytes: u64) -> bool {
        match self {
            Framing::Length(w) => bytes >= w,
            Framing::Chunked(c) => c == Chunked::Done,
            Framing::Open | Framing::Unseen | Framing::HeadUnseen => false,
        }
    }
}

/// The decoder's state once `cut` of the `left` bytes of a chunk's closing CRLF went by.
fn after_crlf(cut: u64, left: u64) -> Chunked {
    match left - cut {
        0 => SIZE_START,
        1 => Chunked::DataLf,
        _ => Chunked::DataCr,
    }
}

impl Chunked {
    /// One framing byte (not chunk data).
    fn step(self, b: u8) -> Chunked {
        match self {
            Chunked::Size { val, digits, ext } => match b {
                b'\n' if digits == 0 => Chunked::Bad,
                b'\n' if val == 0 => Chunked::Trailer { empty: true },
                b'\n' => Chunked::Data(val),
                b'\r' | b';' | b' ' | b'\t' => Chunked::Size {
                    val,
                    digits,
                    ext: true,
                },
                _ if ext => self,
                _ => match (b as char).to_digit(16) {
                    // 15 hex digits: over 2^60 bytes is no chunk.
                    Some(d) if digits < 15 => Chunked::Size {
                        val: val << 4 | u64::from(d),
                        digits: digits + 1,
                        ext,
                    },
                    _ => Chunked::Bad,
                },
            },
            Chunked::DataCr if b == b'\r' => Chunked::DataLf,
            Chunked::DataLf if b == b'\n' => SIZE_START,
            Chunked::DataCr | Chunked::DataLf => Chunked::Bad,
            Chunked::Trailer { empty } => match b {
                b'\n' if empty => Chunked::Done,
                b'\n' => Chunked::Trailer { empty: true },
                b'\r' => Chunked::Trailer { empty },
                _ => Chunked::Trailer { empty: false },
            },
            Chunked::Data(_) | Chunked::Done | Chunked::Bad => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framing(p: &[u8], status: u16, m: Method) -> Framing {
        answer_framing(p, p.len() as u32, status, m)
    }

    #[test]
    fn bodyless_answers_end_with_their_header() {
        let h = b"HTTP/1.1 200 OK\r\nContent-Length: 600\r\n\r\n";
        assert_eq!(
            framing(h, 200, Method::Head),
            Framing::Length(h.len() as u64)
        );
        assert!(framing(h, 200, Method::Head).complete(h.len() as u64));
        let nc = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert!(framing(nc, 204, Method::Other).complete(nc.len() as u64));
        let nm = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 600\r\n\r\n";
        assert!(framing(nm, 304, Method::Other).complete(nm.len() as u64));
        // Interim answers and tunnels end nothing.
        assert_eq!(
            framing(b"HTTP/1.1 100 Continue\r\n\r\n", 100, Method::Other),
            Framing::Open
        );
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\n\r\n", 200, Method::Connect),
            Framing::Open
        );
        // No length: read until close.
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\n\r\nabc", 200, Method::Other),
            Framing::Open
        );
    }

    #[test]
    fn content_length_rules() {
        let p = b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello";
        assert_eq!(
            framing(p, 200, Method::Other),
            Framing::Length(p.len() as u64)
        );
        let bad = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n";
        assert_eq!(framing(bad, 200, Method::Other), Framing::Open);
        // Transfer-Encoding overrides it.
        let te = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(matches!(
            framing(te, 200, Method::Other),
            Framing::Chunked(_)
        ));
        let gz = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n";
        assert_eq!(framing(gz, 200, Method::Other), Framing::Open);
        // Names in any case, among other lines that start alike (`Cache-…`, `trailer`).
        let lower =
            b"HTTP/1.1 200 OK\r\ncache-control: no\r\ntrailer: x\r\ncontent-length: 5\r\n\r\nhello";
        assert_eq!(
            framing(lower, 200, Method::Other),
            Framing::Length(lower.len() as u64)
        );
        let upper = b"HTTP/1.1 200 OK\r\nCONTENT-LENGTH: 0\r\nTRANSFER-ENCODING: chunked\r\n\r\n";
        assert!(matches!(
            framing(upper, 200, Method::Other),
            Framing::Chunked(_)
        ));
        // The header's last line, without a value: no length.
        let bare = b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n";
        assert_eq!(framing(bare, 200, Method::Other), Framing::Open);
    }

    #[test]
    fn chunks_are_followed_across_segments_to_the_last_one_and_its_trailers() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let mut first = head.to_vec();
        first.extend_from_slice(b"5;name=v\r\nhel");
        let mut f = framing(&first, 200, Method::Other);
        assert!(!f.complete(0));
        f.feed(b"lo\r\n1", 0);
        f.feed(b"0\r\n", 0);
        f.feed(&[b'x'; 16], 0);
        assert!(!f.complete(0));
        // A chunk body that holds the terminator's bytes is data, not the end.
        let mut g = Framing::Chunked(SIZE_START);
        g.feed(b"7\r\n0\r\n\r\n\r\n", 0);
        assert!(!g.complete(0));
        f.feed(b"\r\n0\r\nExpires: 0\r\n", 0);
        assert!(!f.complete(0));
        f.feed(b"\r\n", 0);
        assert!(f.complete(0));
        // A bad size line: not chunked after all.
        let mut b = Framing::Chunked(SIZE_START);
        b.feed(b"zz\r\n", 0);
        assert_eq!(b, Framing::Open);
    }

    #[test]
    fn bytes_the_capture_cut_are_skipped_inside_data_and_unknown_elsewhere() {
        // Cut inside a chunk's data, the rest of it missing: followed.
        let mut f = Framing::Chunked(SIZE_START);
        f.feed(b"c8\r\nxxxx", 196);
        assert_eq!(f, Framing::Chunked(Chunked::DataCr));
        f.feed(b"\r\n0\r\n\r\n", 0);
        assert!(f.complete(0));
        // The data and its CRLF cut: followed; the next size line cut too: unknown.
        let mut d = Framing::Chunked(SIZE_START);
        d.feed(b"c8\r\nxxxx", 198);
        assert_eq!(d, Framing::Chunked(SIZE_START));
        d.feed(b"0\r\n\r\n", 0);
        assert!(d.complete(0));
        let mut g = Framing::Chunked(SIZE_START);
        g.feed(b"c8\r\nxxxx", 200);
        assert_eq!(g, Framing::Unseen);
        let mut r = Framing::Chunked(SIZE_START);
        r.feed(b"c8\r\nxxxx", 197);
        assert_eq!(r, Framing::Chunked(Chunked::DataLf));
        // A header cut by the snap length: unknown; one going on in the next segment: open.
        let h = b"HTTP/1.1 200 OK\r\nTransfer-Enc";
        assert_eq!(
            answer_framing(h, 80, 200, Method::Other),
            Framing::HeadUnseen
        );
        assert_eq!(
            answer_framing(h, h.len() as u32, 200, Method::Other),
            Framing::Open
        );
        let mut l = Framing::Chunked(Chunked::Data(3));
        l.lost();
        assert_eq!(l, Framing::Unseen);
    }
}

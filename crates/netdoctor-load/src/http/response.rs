//! The incremental response parser.
//!
//! The status line and headers are parsed with `httparse`. The body framing (Content-Length,
//! chunked, until-close) is a small hand-written state machine because the engine never keeps the
//! body: it only needs to know where a response ends, byte by byte across arbitrary read
//! boundaries, without copying or allocating. `httparse::parse_chunk_size` needs the whole size
//! line in one slice, which a split read does not give.
//!
//! Header bytes that arrive split across reads are copied into a per-connection buffer that is
//! reused for the whole run (its capacity stays), so the steady state allocates nothing.
//!
//! A head equal to the last one but for its Date value is not parsed again (`head_memo`).

use super::head_memo::{HeadMemo, range_in};

/// Largest response header block accepted; beyond it the response is treated as invalid.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

/// Why a response could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The status line or a header is malformed.
    Header(httparse::Error),
    /// The header block is larger than [`MAX_HEADER_BYTES`].
    HeaderTooLarge,
    /// A Content-Length that is not a number, or two that differ.
    ContentLength,
    /// Chunked framing that does not follow the format.
    Chunk,
}

impl std::error::Error for ParseError {}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Header(e) => write!(f, "invalid response header: {e}"),
            ParseError::HeaderTooLarge => {
                write!(f, "response header larger than {MAX_HEADER_BYTES} bytes")
            }
            ParseError::ContentLength => write!(f, "invalid Content-Length"),
            ParseError::Chunk => write!(f, "invalid chunked encoding"),
        }
    }
}

/// Outcome of feeding bytes to the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// All bytes consumed; the response is not complete yet.
    NeedMore,
    /// The response ended after `consumed` bytes of the slice.
    Complete { consumed: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    Size { val: u64, digits: u8 },
    Ext { val: u64 },
    SizeLf { val: u64 },
    Data(u64),
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    FinalLf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Headers,
    Body(u64),
    Chunked(Chunk),
    UntilClose,
}

/// Incremental parser for one response at a time; `reset` before the next response.
#[derive(Debug)]
pub struct ResponseParser {
    phase: Phase,
    /// The last final response's header block and what it decided: (status, close, phase).
    memo: HeadMemo<(u16, bool, Phase)>,
    partial: Vec<u8>,
    head: bool,
    /// Status code of the current response (valid once the headers are parsed).
    pub status: u16,
    /// The server will close the connection after this response.
    pub close: bool,
    /// Some byte of the current response was seen.
    pub started: bool,
    /// Bytes of status lines and headers of the current response, skipped interim (1xx)
    /// responses included.
    pub header_bytes: u64,
    /// Body bytes of the current response so far, after transfer decoding (chunk framing is not
    /// counted).
    pub body_bytes: u64,
}

impl ResponseParser {
    /// `head`: the request was HEAD (the response has no body whatever its headers say).
    pub fn new(head: bool) -> Self {
        ResponseParser {
            phase: Phase::Headers,
            memo: HeadMemo::new(),
            partial: Vec::new(),
            head,
            status: 0,
            close: false,
            started: false,
            header_bytes: 0,
            body_bytes: 0,
        }
    }

    pub fn reset(&mut self) {
        self.phase = Phase::Headers;
        self.partial.clear();
        self.status = 0;
        self.close = false;
        self.started = false;
        self.header_bytes = 0;
        self.body_bytes = 0;
    }

    /// True while the status line and headers are not complete yet.
    pub fn in_headers(&self) -> bool {
        matches!(self.phase, Phase::Headers)
    }

    /// Body bytes still expected, when the body is framed by Content-Length.
    pub fn body_remaining(&self) -> Option<u64> {
        match self.phase {
            Phase::Body(n) => Some(n),
            _ => None,
        }
    }

    /// Feeds the next bytes of the stream.
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, ParseError> {
        if !data.is_empty() {
            self.started = true;
        }
        let mut pos = 0;
        loop {
            match self.phase {
                Phase::Headers => {
                    let rest = &data[pos..];
                    if rest.is_empty() {
                        return Ok(Feed::NeedMore);
                    }
                    let used = if self.partial.is_empty() {
                        match self.parse_head(rest)? {
                            Some(n) => n,
                            None => {
                                if rest.len() > MAX_HEADER_BYTES {
                                    return Err(ParseError::HeaderTooLarge);
                                }
                                self.partial.extend_from_slice(rest);
                                return Ok(Feed::NeedMore);
                            }
                        }
                    } else {
                        let before = self.partial.len();
                        self.partial.extend_from_slice(rest);
                        let buf = std::mem::take(&mut self.partial);
                        let parsed = self.parse_head(&buf);
                        self.partial = buf;
                        match parsed? {
                            Some(n) => {
                                self.partial.clear();
                                // `n > before` always: the old bytes alone were incomplete.
                                n - before
                            }
                            None => {
                                if self.partial.len() > MAX_HEADER_BYTES {
                                    return Err(ParseError::HeaderTooLarge);
                                }
                                return Ok(Feed::NeedMore);
                            }
                        }
                    };
                    pos += used;
                    if matches!(self.phase, Phase::Headers) && self.status != 0 {
                        // A complete response without body.
                        return Ok(Feed::Complete { consumed: pos });
                    }
                }
                Phase::Body(remaining) => {
                    let avail = (data.len() - pos) as u64;
                    if avail >= remaining {
                        self.body_bytes += remaining;
                        return Ok(Feed::Complete {
                            consumed: pos + remaining as usize,
                        });
                    }
                    self.body_bytes += avail;
                    self.phase = Phase::Body(remaining - avail);
                    return Ok(Feed::NeedMore);
                }
                Phase::UntilClose => {
                    self.body_bytes += (data.len() - pos) as u64;
                    return Ok(Feed::NeedMore);
                }
                Phase::Chunked(state) => {
                    return match self.chunked(state, data, &mut pos)? {
                        true => Ok(Feed::Complete { consumed: pos }),
                        false => Ok(Feed::NeedMore),
                    };
                }
            }
        }
    }

    /// The peer closed the stream: true when that completes the current response.
    pub fn eof_completes(&self) -> bool {
        matches!(self.phase, Phase::UntilClose)
    }

    /// Parses a header block. `Ok(None)` = incomplete. On a complete final response sets
    /// `status` and the body phase (a 1xx interim response is skipped: phase stays Headers,
    /// status stays 0).
    fn parse_head(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        if let Some((n, (status, close, phase))) = self.memo.recall(buf) {
            self.header_bytes += n as u64;
            self.status = status;
            self.close = close;
            self.phase = phase;
            return Ok(Some(n));
        }
        // Uninitialized header slots: no 2 KiB memset per response.
        let mut headers =
            [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
        let mut res = httparse::Response::new(&mut []);
        let n = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut res,
            buf,
            &mut headers,
        ) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(ParseError::Header(e)),
        };
        self.header_bytes += n as u64;
        let code = res.code.unwrap_or(0);
        if (100..200).contains(&code) && code != 101 {
            // Interim response (100 Continue, 103 Early Hints): the real one follows.
            return Ok(Some(n));
        }
        let mut content_length: Option<u64> = None;
        let mut chunked = false;
        let mut close = res.version == Some(0);
        let mut date = None;
        for h in res.headers.iter() {
            if h.name.eq_ignore_ascii_case("date") {
                date = range_in(buf, h.value);
            } else if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .ok_or(ParseError::ContentLength)?;
                if content_length.is_some_and(|old| old != v) {
                    return Err(ParseError::ContentLength);
                }
                content_length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    if token.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && res.version == Some(0) {
                        close = false;
                    }
                }
            }
        }
        self.status = code;
        self.close = close;
        let no_body = self.head || code == 204 || code == 304 || (100..200).contains(&code);
        self.phase = if no_body {
            Phase::Headers
        } else if chunked {
            Phase::Chunked(Chunk::Size { val: 0, digits: 0 })
        } else if let Some(len) = content_length {
            if len == 0 {
                Phase::Headers
            } else {
                Phase::Body(len)
            }
        } else {
            self.close = true;
            Phase::UntilClose
        };
        self.memo
            .keep(&buf[..n], date, (self.status, self.close, self.phase));
        Ok(Some(n))
    }

    /// Runs the chunk framing machine over `data[*pos..]`; true when the body ended.
    fn chunked(&mut self, mut st: Chunk, data: &[u8], pos: &mut usize) -> Result<bool, ParseError> {
        while *pos < data.len() {
            let b = data[*pos];
            *pos += 1;
            st = match st {
                Chunk::Size { val, digits } => match b {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        let d = (b as char).to_digit(16).unwrap_or(0) as u64;
                        if digits >= 15 {
                            return Err(ParseError::Chunk);
                        }
                        Chunk::Size {
                            val: val * 16 + d,
                            digits: digits + 1,
                        }
                    }
                    b';' | b' ' | b'\t' if digits > 0 => Chunk::Ext { val },
                    b'\r' if digits > 0 => Chunk::SizeLf { val },
                    b'\n' if digits > 0 => Self::after_size(val),
                    _ => return Err(ParseError::Chunk),
                },
                Chunk::Ext { val } => match b {
                    b'\r' => Chunk::SizeLf { val },
                    b'\n' => Self::after_size(val),
                    _ => Chunk::Ext { val },
                },
                Chunk::SizeLf { val } => match b {
                    b'\n' => Self::after_size(val),
                    _ => return Err(ParseError::Chunk),
                },
                Chunk::Data(n) => {
                    // Skip the chunk's data in bulk (this byte is its first one).
                    let avail = (data.len() - *pos) as u64 + 1;
                    let take = avail.min(n);
                    *pos += take as usize - 1;
                    self.body_bytes += take;
                    if take == n {
                        Chunk::DataCr
                    } else {
                        Chunk::Data(n - take)
                    }
                }
                Chunk::DataCr => match b {
                    b'\r' => Chunk::DataLf,
                    b'\n' => Chunk::Size { val: 0, digits: 0 },
                    _ => return Err(ParseError::Chunk),
                },
                Chunk::DataLf => match b {
                    b'\n' => Chunk::Size { val: 0, digits: 0 },
                    _ => return Err(ParseError::Chunk),
                },
                Chunk::TrailerStart => match b {
                    b'\r' => Chunk::FinalLf,
                    b'\n' => {
                        self.phase = Phase::Headers;
                        return Ok(true);
                    }
                    _ => Chunk::TrailerLine,
                },
                Chunk::TrailerLine => match b {
                    b'\n' => Chunk::TrailerStart,
                    _ => Chunk::TrailerLine,
                },
                Chunk::FinalLf => match b {
                    b'\n' => {
                        self.phase = Phase::Headers;
                        return Ok(true);
                    }
                    _ => return Err(ParseError::Chunk),
                },
            };
        }
        self.phase = Phase::Chunked(st);
        Ok(false)
    }

    fn after_size(val: u64) -> Chunk {
        if val == 0 {
            Chunk::TrailerStart
        } else {
            Chunk::Data(val)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` split at every position (and byte by byte); returns the complete responses'
    /// (status, close, consumed-from-stream-start) and asserts every split gives the same.
    fn parse_all(wire: &[u8], head: bool) -> Vec<(u16, bool, usize)> {
        let whole = run_chunks(&[wire], head);
        for cut in 0..=wire.len() {
            let (a, b) = wire.split_at(cut);
            assert_eq!(run_chunks(&[a, b], head), whole, "split at {cut}");
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(run_chunks(&bytes, head), whole, "byte by byte");
        whole
    }

    fn run_chunks(chunks: &[&[u8]], head: bool) -> Vec<(u16, bool, usize)> {
        let mut p = ResponseParser::new(head);
        let mut out = Vec::new();
        let mut offset = 0;
        for chunk in chunks {
            let mut data = *chunk;
            while !data.is_empty() {
                match p.feed(data).expect("valid response") {
                    Feed::NeedMore => {
                        offset += data.len();
                        data = &[];
                    }
                    Feed::Complete { consumed } => {
                        offset += consumed;
                        out.push((p.status, p.close, offset));
                        p.reset();
                        data = &data[consumed..];
                    }
                }
            }
        }
        out
    }

    #[test]
    fn content_length_responses_split_anywhere() {
        let one = b"HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 5\r\n\r\nhello";
        let mut wire = one.to_vec();
        wire.extend_from_slice(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
        wire.extend_from_slice(
            b"HTTP/1.1 500 E\r\nConnection: close\r\nContent-Length: 2\r\n\r\nab",
        );
        let got = parse_all(&wire, false);
        let n1 = one.len();
        let n2 = n1 + b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".len();
        assert_eq!(
            got,
            vec![(200, false, n1), (404, false, n2), (500, true, wire.len())]
        );
    }

    #[test]
    fn a_repeated_head_with_a_new_date_frames_like_a_parsed_one() {
        let head = |date: &str, len: &str, conn: &str| {
            format!(
                "HTTP/1.1 200 OK\r\nDate: {date}\r\nContent-Length: {len}\r\nConnection: {conn}\r\n\r\n"
            )
        };
        let d1 = "Thu, 26 Nov 2026 13:00:00 GMT";
        let d2 = "Thu, 26 Nov 2026 13:00:01 GMT";
        // Same head but the date (recalled), then another length, then close (both parsed).
        let parts = [
            head(d1, "5", "keep-alive") + "hello",
            head(d2, "5", "keep-alive") + "world",
            head(d2, "7", "keep-alive") + "goodbye",
            head(d2, "7", "close") + "goodbye",
        ];
        let wire = parts.concat();
        let ends: Vec<usize> = parts
            .iter()
            .scan(0, |n, p| {
                *n += p.len();
                Some(*n)
            })
            .collect();
        let got = parse_all(wire.as_bytes(), false);
        let want: Vec<_> = ends
            .iter()
            .enumerate()
            .map(|(i, &e)| (200, i == 3, e))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n\
            5;name=v\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n\r\n\
            HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        let got = parse_all(wire, false);
        let first_end = wire.len()
            - b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".len();
        assert_eq!(got, vec![(200, false, first_end), (201, false, wire.len())]);
    }

    #[test]
    fn interim_head_204_and_http10() {
        let wire =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n";
        assert_eq!(parse_all(wire, false), vec![(204, false, wire.len())]);
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 615\r\n\r\n";
        assert_eq!(parse_all(head, true), vec![(200, false, head.len())]);
        let v10 = b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(parse_all(v10, false), vec![(200, true, v10.len())]);
        let v10ka = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(parse_all(v10ka, false), vec![(200, false, v10ka.len())]);
    }

    /// (header_bytes, body_bytes) of the one response in `wire`, fed in two pieces split at
    /// every position; asserts every split gives the same.
    fn sizes(wire: &[u8], eof: bool) -> (u64, u64) {
        let mut seen = None;
        for cut in 0..=wire.len() {
            let mut p = ResponseParser::new(false);
            let mut done = false;
            for piece in [&wire[..cut], &wire[cut..]] {
                if !done && p.feed(piece).unwrap() != Feed::NeedMore {
                    done = true;
                }
            }
            assert!(done || (eof && p.eof_completes()), "split at {cut}");
            let got = (p.header_bytes, p.body_bytes);
            assert_eq!(*seen.get_or_insert(got), got, "split at {cut}");
        }
        seen.unwrap_or_default()
    }

    #[test]
    fn counts_header_and_decoded_body_bytes() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n";
        let wire = [&head[..], b"hello world"].concat();
        assert_eq!(sizes(&wire, false), (head.len() as u64, 11));
        let head = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n";
        let body = b"5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n";
        let wire = [&head[..], body].concat();
        assert_eq!(sizes(&wire, false), (head.len() as u64, 5 + 26));
        let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
        let head = b"HTTP/1.0 200 OK\r\n\r\n";
        let wire = [&interim[..], head, &[b'x'; 300]].concat();
        assert_eq!(
            sizes(&wire, true),
            ((interim.len() + head.len()) as u64, 300)
        );
        let mut p = ResponseParser::new(false);
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
            .unwrap();
        assert_eq!((p.body_bytes, p.body_remaining()), (3, Some(7)));
        p.reset();
        assert_eq!((p.header_bytes, p.body_bytes, p.in_headers()), (0, 0, true));
    }

    #[test]
    fn body_until_close_completes_only_at_eof() {
        let mut p = ResponseParser::new(false);
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\n\r\nsome body").unwrap(),
            Feed::NeedMore
        );
        assert!(p.close);
        assert!(p.eof_completes());
        let mut q = ResponseParser::new(false);
        q.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
            .unwrap();
        assert!(!q.eof_completes());
    }

    #[test]
    fn malformed_responses_are_errors_not_panics() {
        let bad: [&[u8]; 5] = [
            b"NOT HTTP\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
        ];
        for wire in bad {
            assert!(ResponseParser::new(false).feed(wire).is_err(), "{wire:?}");
        }
        let mut p = ResponseParser::new(false);
        let big = vec![b'a'; 1000];
        p.feed(b"HTTP/1.1 200 OK\r\nX: ").unwrap();
        let mut result = Ok(Feed::NeedMore);
        for _ in 0..100 {
            result = p.feed(&big);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(ParseError::HeaderTooLarge));
    }
}

//! HTTP/2 framing for the load engine (RFC 9113): the 9-byte frame header, the few frames a
//! client writes (SETTINGS, WINDOW_UPDATE, HEADERS, DATA, PING and SETTINGS acknowledgements),
//! the settings and error codes it reads, and the request's header block.
//!
//! HPACK is the `httlib-hpack` crate (no async runtime; Huffman decoding by precomputed
//! 5-bits-at-a-time tables). `loona-hpack` (the maintained fork of `hpack`) was tried first and
//! dropped for speed: it rebuilds a HashMap of the Huffman code for every Huffman string it
//! decodes, which was 80 % of the client's CPU against nginx (perf) and held the load to
//! ~1,300 req/s on one connection. The `h2` crate's codec is excellent but tied to tokio's
//! `AsyncRead`, and its HPACK and frame types are only public behind an "unstable" feature, so
//! the mio engine would have had to carry tokio for a codec it drives by hand anyway. The frame layer itself is
//! nine bytes of header and a handful of fixed-layout payloads; it is written here because the
//! engine reads frames straight out of its socket buffer and skips DATA payloads without
//! copying them (a load generator never looks at response bodies), which no framing crate
//! offers.
//!
//! Every request of a run has the same headers, so the header block is encoded twice with one
//! HPACK encoder: the first request of a connection carries literals that the server's decoder
//! adds to its dynamic table, and every later one is the short fully indexed form (a few bytes).
//! No encoder runs per request.

use std::fmt::Write as _;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const FLAG_END_STREAM: u8 = 0x1;
pub const FLAG_ACK: u8 = 0x1;
pub const FLAG_END_HEADERS: u8 = 0x4;
pub const FLAG_PADDED: u8 = 0x8;
pub const FLAG_PRIORITY: u8 = 0x20;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// Error code REFUSED_STREAM: the server did not process the stream; it may be retried.
pub const REFUSED_STREAM: u32 = 0x7;

/// The default SETTINGS_MAX_FRAME_SIZE (the largest frame we accept: we never raise it).
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The initial flow-control window of every stream and connection (RFC 9113 §6.9.2).
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The client's receive window for each stream and for the connection: 2^30 − 1, as h2load's
/// defaults (`-w 30 -W 30`), so the load measures the server, not our flow control.
pub const CLIENT_WINDOW: u32 = (1 << 30) - 1;

/// A frame header (RFC 9113 §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl FrameHeader {
    pub const SIZE: usize = 9;

    /// Reads a header from the first nine bytes of `b` (`None` if shorter).
    #[inline]
    pub fn parse(b: &[u8]) -> Option<FrameHeader> {
        let h: &[u8; 9] = b.get(..9)?.try_into().ok()?;
        Some(FrameHeader {
            len: (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        })
    }
}

/// Appends a frame header.
#[inline]
pub fn put_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// The client's opening: preface, SETTINGS (no push, our windows, no HPACK dynamic table for
/// the responses: see [`response_status`]) and the connection's WINDOW_UPDATE up to
/// [`CLIENT_WINDOW`].
pub fn put_opening(out: &mut Vec<u8>, max_streams: u32) {
    out.extend_from_slice(PREFACE);
    let settings: [(u16, u32); 4] = [
        (SETTINGS_HEADER_TABLE_SIZE, 0),
        (SETTINGS_ENABLE_PUSH, 0),
        (SETTINGS_MAX_CONCURRENT_STREAMS, max_streams),
        (SETTINGS_INITIAL_WINDOW_SIZE, CLIENT_WINDOW),
    ];
    put_header(out, settings.len() * 6, SETTINGS, 0, 0);
    for (id, v) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
    put_window_update(out, 0, CLIENT_WINDOW - DEFAULT_WINDOW);
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_header(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

pub fn put_settings_ack(out: &mut Vec<u8>) {
    put_header(out, 0, SETTINGS, FLAG_ACK, 0);
}

pub fn put_ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    put_header(out, payload.len(), PING, FLAG_ACK, 0);
    out.extend_from_slice(payload);
}

pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_header(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends one request: HEADERS (END_STREAM when there is no body) and, with a body, one DATA
/// frame with END_STREAM (bodies are limited to one frame: [`RequestBlocks::new`] checks).
#[inline]
pub fn put_request(out: &mut Vec<u8>, stream: u32, block: &[u8], body: Option<&[u8]>) {
    let end = if body.is_none() { FLAG_END_STREAM } else { 0 };
    put_header(out, block.len(), HEADERS, FLAG_END_HEADERS | end, stream);
    out.extend_from_slice(block);
    if let Some(b) = body {
        put_header(out, b.len(), DATA, FLAG_END_STREAM, stream);
        out.extend_from_slice(b);
    }
}

/// The `:status` of a response header block, read without HPACK-decoding the block (`Some(0)`:
/// the block has none, e.g. trailers), or `None` when the block needs the full decoder: it
/// updates the dynamic table's size, refers to a dynamic entry, its status value (or a name
/// before it) is Huffman-coded, or it is malformed.
///
/// Valid only while the decoder's dynamic table is capped at 0 bytes (the client announces
/// SETTINGS_HEADER_TABLE_SIZE = 0 and the server has confirmed it with a size update, which
/// goes through the full decoder): literals "with incremental indexing" then store nothing, so
/// skipping them keeps the decoder's state. Decoding every field (Huffman, two allocations a
/// field) was a fifth of the client's CPU against nginx, which sends 7–8 fields a response;
/// the load needs only `:status`. Pseudo-header fields come first (RFC 9113 §8.3), so once
/// the status is found the rest is skipped by length.
pub fn response_status(block: &[u8]) -> Option<u16> {
    let mut p = 0;
    let mut status = 0u16;
    while let Some(&b) = block.get(p) {
        if b & 0x80 != 0 {
            // Indexed field (RFC 7541 §6.1): static :status entries 8–14.
            let (idx, n) = hpack_int(&block[p..], 7)?;
            p += n;
            let code = match idx {
                8 => 200,
                9 => 204,
                10 => 206,
                11 => 304,
                12 => 400,
                13 => 404,
                14 => 500,
                1..=61 => 0,
                _ => return None,
            };
            if status == 0 {
                status = code;
            }
            continue;
        }
        let prefix = match b {
            0x40.. => 6,
            0x20.. => return None, // dynamic table size update
            _ => 4,
        };
        let (idx, n) = hpack_int(&block[p..], prefix)?;
        p += n;
        let status_name = match idx {
            0 => {
                let (name, huffman, n) = hpack_string(&block[p..])?;
                p += n;
                if huffman && status == 0 {
                    return None;
                }
                !huffman && name == b":status"
            }
            8..=14 => true,
            1..=61 => false,
            _ => return None,
        };
        let (value, huffman, n) = hpack_string(&block[p..])?;
        p += n;
        if status_name && status == 0 {
            if huffman || value.len() != 3 || !value.iter().all(u8::is_ascii_digit) {
                return None;
            }
            status = value.iter().fold(0, |a, d| a * 10 + u16::from(d - b'0'));
        }
    }
    Some(status)
}

/// An HPACK integer with a `prefix`-bit prefix (RFC 7541 §5.1): its value and length.
fn hpack_int(b: &[u8], prefix: u32) -> Option<(usize, usize)> {
    let max = (1usize << prefix) - 1;
    let v = usize::from(*b.first()?) & max;
    if v < max {
        return Some((v, 1));
    }
    let mut v = v;
    for (i, &byte) in b.iter().enumerate().skip(1).take(4) {
        v += usize::from(byte & 0x7f) << (7 * (i - 1));
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// An HPACK string literal (RFC 7541 §5.2): its bytes (still Huffman-coded when the flag says
/// so), the flag, and the literal's length.
fn hpack_string(b: &[u8]) -> Option<(&[u8], bool, usize)> {
    let huffman = *b.first()? & 0x80 != 0;
    let (len, n) = hpack_int(b, 7)?;
    let s = b.get(n..n.checked_add(len)?)?;
    Some((s, huffman, n + len))
}

/// The name of an HTTP/2 error code (RFC 9113 §7), or `0xNN` for an unknown one.
pub fn error_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    match NAMES.get(code as usize) {
        Some(n) => (*n).to_string(),
        None => {
            let mut s = String::new();
            let _ = write!(s, "0x{code:x}");
            s
        }
    }
}

/// The request's HPACK header blocks: the first one a connection sends, and every later one.
#[derive(Clone, Debug)]
pub struct RequestBlocks {
    pub first: Vec<u8>,
    pub next: Vec<u8>,
    /// Dynamic-table bytes the blocks rely on (RFC 7541 §4.1 sizes); a server that allows
    /// less (SETTINGS_HEADER_TABLE_SIZE) cannot be loaded with them.
    pub table_bytes: usize,
}

/// What one HTTP/2 request is.
#[derive(Clone, Debug)]
pub struct H2Request<'a> {
    pub method: &'a str,
    /// `http` or `https`.
    pub scheme: &'a str,
    pub authority: &'a str,
    pub path: &'a str,
    /// Regular headers (names are lower-cased; `host`, `connection` and other
    /// connection-specific headers are dropped, as RFC 9113 §8.2.2 requires).
    pub headers: &'a [(String, String)],
    pub body: Option<&'a [u8]>,
}

impl RequestBlocks {
    pub fn new(req: &H2Request<'_>) -> Result<RequestBlocks, String> {
        if let Some(b) = req.body
            && b.len() > DEFAULT_MAX_FRAME
        {
            return Err(format!(
                "a request body over HTTP/2 is limited to {DEFAULT_MAX_FRAME} bytes (one DATA \
                 frame); this one has {}",
                b.len()
            ));
        }
        let mut list: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b":method".to_vec(), req.method.as_bytes().to_vec()),
            (b":scheme".to_vec(), req.scheme.as_bytes().to_vec()),
            (b":authority".to_vec(), req.authority.as_bytes().to_vec()),
            (b":path".to_vec(), req.path.as_bytes().to_vec()),
        ];
        let mut authority_override = None;
        for (name, value) in req.headers {
            let n = name.to_ascii_lowercase();
            if n.bytes().any(|c| c <= b' ' || c == b':') && !n.is_empty() {
                return Err(format!("header name '{name}' is not valid in HTTP/2"));
            }
            match n.as_str() {
                "" => return Err("empty header name".into()),
                "host" => authority_override = Some(value.clone()),
                "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding"
                | "upgrade" => {}
                _ => list.push((n.into_bytes(), value.as_bytes().to_vec())),
            }
        }
        if let Some(a) = authority_override {
            list[2].1 = a.into_bytes();
        }
        if let Some(b) = req.body
            && !list.iter().any(|(n, _)| n == b"content-length")
        {
            list.push((b"content-length".to_vec(), b.len().to_string().into_bytes()));
        }
        let mut enc = httlib_hpack::Encoder::default();
        let mut encode = || -> Result<Vec<u8>, String> {
            let mut dst = Vec::new();
            for (n, v) in &list {
                let flags = httlib_hpack::Encoder::BEST_FORMAT
                    | httlib_hpack::Encoder::WITH_INDEXING
                    | httlib_hpack::Encoder::HUFFMAN_VALUE;
                enc.encode((n.clone(), v.clone(), flags), &mut dst)
                    .map_err(|e| {
                        format!(
                            "HPACK encoding of header '{}': {e:?}",
                            String::from_utf8_lossy(n)
                        )
                    })?;
            }
            Ok(dst)
        };
        let first = encode()?;
        let next = encode()?;
        let table_bytes = list.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        if first.len() > DEFAULT_MAX_FRAME {
            return Err(format!(
                "the request headers take {} bytes, over HTTP/2's {DEFAULT_MAX_FRAME}-byte frame",
                first.len()
            ));
        }
        Ok(RequestBlocks {
            first,
            next,
            table_bytes,
        })
    }
}

/// A gRPC message frame: the 5-byte prefix (not compressed, big-endian length) and `msg`.
pub fn grpc_message(msg: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(5 + msg.len());
    v.push(0);
    v.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    v.extend_from_slice(msg);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(String, String)]) -> RequestBlocks {
        RequestBlocks::new(&H2Request {
            method: "GET",
            scheme: "http",
            authority: "127.0.0.1:8080",
            path: "/index.html",
            headers,
            body: None,
        })
        .unwrap()
    }

    #[test]
    fn header_round_trip() {
        let mut out = Vec::new();
        put_header(&mut out, 0x12345, HEADERS, FLAG_END_HEADERS, 7);
        assert_eq!(
            FrameHeader::parse(&out),
            Some(FrameHeader {
                len: 0x12345,
                kind: HEADERS,
                flags: FLAG_END_HEADERS,
                stream: 7
            })
        );
        assert_eq!(FrameHeader::parse(&out[..8]), None);
    }

    #[test]
    fn request_blocks_decode_to_the_request_and_later_ones_are_indexed() {
        let blocks = req(&[
            ("Host".into(), "example.org".into()),
            ("X-Test".into(), "1".into()),
            ("Connection".into(), "close".into()),
        ]);
        assert!(blocks.next.len() < blocks.first.len());
        assert!(blocks.next.len() <= 6, "{:?}", blocks.next);
        let mut dec = httlib_hpack::Decoder::default();
        for block in [&blocks.first, &blocks.next, &blocks.next] {
            let mut got = Vec::new();
            dec.decode(&mut block.clone(), &mut got).unwrap();
            let got: Vec<(String, String)> = got
                .into_iter()
                .map(|(n, v, _)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
                .collect();
            assert_eq!(
                got,
                [
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":authority", "example.org"),
                    (":path", "/index.html"),
                    ("x-test", "1"),
                ]
                .map(|(a, b)| (a.to_string(), b.to_string()))
            );
        }
    }

    #[test]
    fn opening_is_preface_settings_and_window_update() {
        let mut out = Vec::new();
        put_opening(&mut out, 100);
        assert!(out.starts_with(PREFACE));
        let h = FrameHeader::parse(&out[PREFACE.len()..]).unwrap();
        assert_eq!((h.kind, h.len, h.stream), (SETTINGS, 24, 0));
        // The first setting turns the responses' HPACK dynamic table off.
        let first = &out[PREFACE.len() + 9..PREFACE.len() + 9 + 6];
        assert_eq!(first, &[0, 1, 0, 0, 0, 0]);
        let w = FrameHeader::parse(&out[PREFACE.len() + 9 + 24..]).unwrap();
        assert_eq!((w.kind, w.len), (WINDOW_UPDATE, 4));
        assert_eq!(out.len(), PREFACE.len() + 9 + 24 + 9 + 4);
    }

    /// Encodes `fields` with an encoder whose dynamic table is capped at 0 (as the server's is
    /// after our SETTINGS), Huffman-coded or not.
    fn encode(fields: &[(&str, &str)], huffman: bool, indexing: bool) -> Vec<u8> {
        let mut enc = httlib_hpack::Encoder::with_dynamic_size(0);
        let mut flags = if indexing {
            httlib_hpack::Encoder::WITH_INDEXING
        } else {
            0
        };
        if huffman {
            flags |= httlib_hpack::Encoder::HUFFMAN_VALUE | httlib_hpack::Encoder::HUFFMAN_NAME;
        }
        let mut out = Vec::new();
        for (n, v) in fields {
            let f = if *n == ":status" && *v == "200" {
                httlib_hpack::Encoder::BEST_FORMAT
            } else {
                flags
            };
            enc.encode((n.as_bytes().to_vec(), v.as_bytes().to_vec(), f), &mut out)
                .unwrap();
        }
        out
    }

    /// What the full decoder says the status is (with its table capped at 0).
    fn decoded_status(block: &[u8]) -> u16 {
        let mut dec = httlib_hpack::Decoder::with_dynamic_size(0);
        let mut fields = Vec::new();
        dec.decode(&mut block.to_vec(), &mut fields).unwrap();
        fields
            .iter()
            .find(|(n, _, _)| n == b":status")
            .map_or(0, |(_, v, _)| {
                std::str::from_utf8(v).unwrap().parse().unwrap()
            })
    }

    #[test]
    fn response_status_agrees_with_the_decoder() {
        let nginx_like = [
            ("server", "nginx/1.22.1"),
            ("date", "Wed, 25 Nov 2026 18:00:00 GMT"),
            ("content-type", "text/html"),
            ("content-length", "615"),
            ("x-custom", "yes"),
        ];
        for status in ["200", "404", "503", "418"] {
            for (huffman, indexing) in [(false, false), (false, true), (true, false), (true, true)]
            {
                let mut fields = vec![(":status", status)];
                fields.extend_from_slice(&nginx_like);
                let block = encode(&fields, huffman, indexing);
                let fast = response_status(&block);
                if huffman && status != "200" {
                    // A Huffman-coded status value is left to the decoder.
                    assert_eq!(fast, None, "{status} {huffman} {indexing}");
                } else {
                    assert_eq!(fast, Some(decoded_status(&block)), "{status}");
                    assert_eq!(fast, Some(status.parse().unwrap()));
                }
            }
        }
        // Trailers: no status.
        let trailers = encode(&[("grpc-status", "0")], false, true);
        assert_eq!(response_status(&trailers), Some(0));
    }

    #[test]
    fn response_status_leaves_table_use_and_bad_blocks_to_the_decoder() {
        // Dynamic table size update (to 0), then :status 200.
        assert_eq!(response_status(&[0x20, 0x88]), None);
        // A reference to a dynamic entry (index 62).
        assert_eq!(response_status(&[0x88, 0x80 | 62]), None);
        // Truncated: a literal whose value length runs past the block.
        assert_eq!(response_status(&[0x08, 0x03, b'2', b'0']), None);
        // A literal with a static :status name and a plain value.
        assert_eq!(response_status(&[0x08, 0x03, b'2', b'0', b'4']), Some(204));
        // Index 127 (a multi-byte integer) is in the dynamic table.
        assert_eq!(response_status(&[0xff, 0x00]), None);
        // A 200-byte value (multi-byte length) is skipped, then the indexed :status 200.
        let mut block = vec![0x01, 0x7f, 200 - 127];
        block.extend_from_slice(&[b'a'; 200]);
        block.push(0x88);
        assert_eq!(response_status(&block), Some(200));
    }

    #[test]
    fn error_names() {
        assert_eq!(error_name(0), "NO_ERROR");
        assert_eq!(error_name(7), "REFUSED_STREAM");
        assert_eq!(error_name(0x42), "0x42");
    }

    #[test]
    fn big_bodies_are_refused_with_a_reason() {
        let body = vec![0u8; DEFAULT_MAX_FRAME + 1];
        let e = RequestBlocks::new(&H2Request {
            method: "POST",
            scheme: "http",
            authority: "a",
            path: "/",
            headers: &[],
            body: Some(&body),
        })
        .unwrap_err();
        assert!(e.contains("limited to 16384 bytes"), "{e}");
    }

    #[test]
    fn grpc_prefix() {
        assert_eq!(grpc_message(b""), [0, 0, 0, 0, 0]);
        assert_eq!(grpc_message(b"ab"), [0, 0, 0, 0, 2, b'a', b'b']);
    }
}

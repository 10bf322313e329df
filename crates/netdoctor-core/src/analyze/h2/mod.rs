//! The HTTP/2 exchange source: a cleartext connection that opens with the client preface
//! (h2c with prior knowledge, or after an `Upgrade`-less start) is read frame by frame
//! ([`frame`]), and each stream is one exchange, timed like an HTTP/1 exchange: its request
//! from the client's first HEADERS frame to the frame that ends the client's side, its
//! response from the server's first HEADERS frame to the frame that ends the server's side
//! (END_STREAM, or a RST_STREAM after a response began). The status is the HPACK-decoded
//! `:status` (by `httlib-hpack`, the crate the load engine uses; a header block that was not
//! captured whole desynchronises the dynamic table, after which only statuses that are a
//! static-table index are read).
//!
//! It sits beside the direction-turns source (`super::http`: HTTP/1, TLS records, any other
//! request/response protocol) behind the connection's [`super::conn::Source`]; TLS-wrapped
//! HTTP/2 cannot be read and stays with turns. A connection picked up after its preface
//! stays with turns too. Connection-level facts (settings, resets and GOAWAYs by code, peak
//! concurrency, flow-control waits) are kept for the HTTP/2 findings.

pub(crate) mod frame;

use frame::{
    CONTINUATION, DATA, END_HEADERS, END_STREAM, Frame, GOAWAY, HEADERS, PADDED, PRIORITY,
    RST_STREAM, Reader, SETTINGS,
};

use super::http::{Exchange, Found, Phase};
use crate::breakdown::ExchangeParts;
use crate::event::Pkt;

/// One request/response stream in progress.
struct Stream {
    id: u32,
    x: Exchange,
    req_done: bool,
}

/// A header block being read across CONTINUATION frames.
struct Block {
    stream: u32,
    from_server: bool,
    end_stream: bool,
    first: Pkt,
    bytes: Vec<u8>,
    whole: bool,
}

/// What the connection's SETTINGS said, per sender (0: client, 1: server).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct H2Settings {
    pub max_concurrent_streams: [Option<u32>; 2],
    pub initial_window: [Option<u32>; 2],
}

pub(crate) struct H2Conn {
    /// Frame readers: 0 the client's direction, 1 the server's.
    readers: [Reader; 2],
    streams: Vec<Stream>,
    block: Option<Block>,
    hpack: httlib_hpack::Decoder<'static>,
    /// The server's header blocks were all captured whole so far (the dynamic table is right).
    hpack_ok: bool,
    pub settings: H2Settings,
    /// RST_STREAM and GOAWAY frames: (sent by the server, error code).
    pub rst: Vec<(bool, u32)>,
    pub goaway: Vec<(bool, u32, Pkt)>,
    /// Streams open at once, at most.
    pub peak_open: u32,
}

impl H2Conn {
    pub(crate) fn new() -> Box<H2Conn> {
        Box::new(H2Conn {
            readers: [Reader::new(true), Reader::new(false)],
            streams: Vec::new(),
            block: None,
            hpack: httlib_hpack::Decoder::default(),
            hpack_ok: true,
            settings: H2Settings::default(),
            rst: Vec::new(),
            goaway: Vec::new(),
            peak_open: 0,
        })
    }

    /// New data (`pkt` oriented) at `seq`, `len` bytes of which `payload` was captured: the
    /// exchanges it completes go to `done`.
    pub(crate) fn on_data(
        &mut self,
        pkt: Pkt,
        seq: u32,
        payload: &[u8],
        len: u32,
        done: &mut Vec<Exchange>,
    ) {
        let side = usize::from(pkt.from_server);
        let mut reader = std::mem::replace(&mut self.readers[side], Reader::new(false));
        reader.feed(pkt, seq, payload, len, &mut |f| self.on_frame(f, pkt, done));
        self.readers[side] = reader;
    }

    /// Where the connection stands, in the turns source's terms (for resets).
    pub(crate) fn phase(&self) -> Phase {
        if self.streams.is_empty() {
            Phase::Idle
        } else if self.streams.iter().any(|s| s.x.first_resp.is_none()) {
            Phase::Request
        } else {
            Phase::Response
        }
    }

    /// The exchanges in progress (to charge stalls to).
    pub(crate) fn in_progress(&mut self) -> impl Iterator<Item = &mut Exchange> {
        self.streams.iter_mut().map(|s| &mut s.x)
    }

    /// The streams whose response began, taken out when the connection ends.
    pub(crate) fn take_answered(&mut self) -> Vec<Exchange> {
        self.streams
            .drain(..)
            .filter(|s| s.x.first_resp.is_some())
            .map(|s| s.x)
            .collect()
    }

    fn on_frame(&mut self, f: &Frame<'_>, pkt: Pkt, done: &mut Vec<Exchange>) {
        let server = pkt.from_server;
        let h = f.head;
        match h.kind {
            HEADERS => {
                let block = f.payload.and_then(|p| strip(p, h.flags));
                let b = Block {
                    stream: h.stream,
                    from_server: server,
                    end_stream: h.flags & END_STREAM != 0,
                    first: f.first,
                    bytes: block.unwrap_or_default().to_vec(),
                    whole: block.is_some(),
                };
                if h.flags & END_HEADERS != 0 {
                    self.on_headers(b, f.last, done);
                } else {
                    self.block = Some(b);
                }
            }
            CONTINUATION => {
                let Some(mut b) = self.block.take() else {
                    return;
                };
                match f.payload {
                    Some(p) if b.whole => b.bytes.extend_from_slice(p),
                    _ => b.whole = false,
                }
                if h.flags & END_HEADERS != 0 {
                    self.on_headers(b, f.last, done);
                } else {
                    self.block = Some(b);
                }
            }
            DATA => {
                let Some(k) = self.streams.iter().position(|s| s.id == h.stream) else {
                    return;
                };
                let s = &mut self.streams[k];
                if server {
                    s.x.first_resp.get_or_insert(f.first);
                    s.x.last_resp = f.last;
                    if h.flags & END_STREAM != 0 {
                        done.push(self.streams.remove(k).x);
                    }
                } else {
                    s.x.last_req = f.last;
                    s.req_done |= h.flags & END_STREAM != 0;
                }
            }
            RST_STREAM => {
                let code = f.payload.and_then(code).unwrap_or(u32::MAX);
                self.rst.push((server, code));
                if let Some(k) = self.streams.iter().position(|s| s.id == h.stream) {
                    let s = self.streams.remove(k);
                    if s.x.first_resp.is_some() {
                        let mut x = s.x;
                        if server {
                            x.last_resp = f.last;
                        }
                        done.push(x);
                    }
                }
            }
            GOAWAY => {
                let code = f
                    .payload
                    .and_then(|p| code(p.get(4..)?))
                    .unwrap_or(u32::MAX);
                self.goaway.push((server, code, f.first));
            }
            SETTINGS if h.flags & frame::ACK == 0 => {
                if let Some(p) = f.payload {
                    self.on_settings(usize::from(server), p);
                }
            }
            _ => {}
        }
    }

    fn on_settings(&mut self, side: usize, p: &[u8]) {
        for s in p.chunks_exact(6) {
            let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match u16::from_be_bytes([s[0], s[1]]) {
                // HEADER_TABLE_SIZE of the client: how large the server's encoder may go.
                0x1 if side == 0 => self.hpack.set_max_dynamic_size(v),
                0x3 => self.settings.max_concurrent_streams[side] = Some(v),
                0x4 => self.settings.initial_window[side] = Some(v),
                // MAX_FRAME_SIZE: what the peer may send.
                0x5 => self.readers[1 - side].max_frame = v,
                _ => {}
            }
        }
    }

    fn on_headers(&mut self, b: Block, last: Pkt, done: &mut Vec<Exchange>) {
        if !b.from_server {
            // A new request (odd stream ids), or the request's trailers.
            if let Some(s) = self.streams.iter_mut().find(|s| s.id == b.stream) {
                s.x.last_req = last;
                s.req_done |= b.end_stream;
                return;
            }
            self.streams.push(Stream {
                id: b.stream,
                x: Exchange {
                    first_req: b.first,
                    last_req: last,
                    first_resp: None,
                    last_resp: last,
                    found: Found::H2,
                    parts: ExchangeParts::default(),
                    delivered_ns: i64::MIN,
                    req_end: 0,
                    req_ack: None,
                    status: 0,
                },
                req_done: b.end_stream,
            });
            self.peak_open = self.peak_open.max(self.streams.len() as u32);
            return;
        }
        let status = self.status(b.whole.then_some(&b.bytes[..]));
        let Some(k) = self.streams.iter().position(|s| s.id == b.stream) else {
            return;
        };
        let x = &mut self.streams[k].x;
        // A final status replaces an informational (1xx) one; trailers keep it.
        if x.first_resp.is_none() || (100..200).contains(&x.status) {
            x.status = status.unwrap_or(0);
        }
        x.first_resp.get_or_insert(b.first);
        x.last_resp = last;
        if b.end_stream {
            done.push(self.streams.remove(k).x);
        }
    }

    /// The `:status` of a server header block (`None` when it was not captured whole).
    fn status(&mut self, block: Option<&[u8]>) -> Option<u16> {
        let Some(block) = block else {
            self.hpack_ok = false;
            return None;
        };
        if self.hpack_ok {
            let mut buf = block.to_vec();
            let mut fields = Vec::new();
            match self.hpack.decode(&mut buf, &mut fields) {
                Ok(_) => {
                    return fields
                        .iter()
                        .find(|(n, _, _)| n == b":status")
                        .and_then(|(_, v, _)| std::str::from_utf8(v).ok()?.parse().ok());
                }
                Err(_) => self.hpack_ok = false,
            }
        }
        // The static table's statuses (RFC 7541 appendix A, indices 8-14), as an indexed field.
        const STATIC: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
        let first = *block.first()?;
        (first & 0x80 != 0)
            .then(|| {
                STATIC
                    .get(usize::from(first & 0x7f).checked_sub(8)?)
                    .copied()
            })
            .flatten()
    }
}

/// A header block fragment without the padding and priority fields of its HEADERS frame.
fn strip(p: &[u8], flags: u8) -> Option<&[u8]> {
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
fn code(p: &[u8]) -> Option<u32> {
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

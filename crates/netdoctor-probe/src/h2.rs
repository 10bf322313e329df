//! One HTTP/2 request, timed like [`crate::http::http_timing`]: cleartext h2 with prior
//! knowledge, or TLS whose ALPN picked `h2`. The client's opening (preface, SETTINGS, the
//! connection window) and one HEADERS frame (stream 1, END_STREAM) go out in one write; the
//! server's SETTINGS are acknowledged and its PINGs answered; the answer ends at END_STREAM on
//! stream 1. `ttfb_ms` runs from the request written to the response's HEADERS frame (the
//! server's SETTINGS, sent at once on connect, are not an answer).
//!
//! Framing and request encoding are the load engine's (`netdoctor_load::h2`), the response
//! header block goes through `httlib_hpack`'s decoder (the load engine's HPACK crate): one
//! request needs no fast path, and an HTTP/2 client crate would hide the timings measured here.

use std::time::{Duration, Instant};

use netdoctor_load::h2 as f;

use crate::error::ProbeError;
use crate::http::{Conn, HttpProbeConfig, HttpTiming, ms};

/// The request's stream.
const STREAM: u32 = 1;
/// Header blocks larger than this are an error (a probe needs only the status).
const MAX_BLOCK: usize = 256 * 1024;

/// What the answer to stream 1 was so far.
#[derive(Default)]
struct Answer {
    block: Vec<u8>,
    in_block: bool,
    end_after_block: bool,
    status: u16,
    header_bytes: u64,
    body_bytes: u64,
    first_headers: Option<Instant>,
    done: bool,
}

/// The request on stream 1 of `conn` (connected, TLS done when `cfg.tls` is set: then its
/// ALPN picked `h2`), and its answer timed: `start` is when connect() began, `connect` and
/// `tls` what those took.
pub(crate) fn exchange(
    mut conn: Conn,
    cfg: &HttpProbeConfig,
    start: Instant,
    connect: Duration,
    tls: Option<f64>,
) -> Result<HttpTiming, ProbeError> {
    let addr = conn.addr;
    let http_err = |msg: String| ProbeError::Http { addr, msg };
    let path = if cfg.path.is_empty() { "/" } else { &cfg.path };
    let authority = if cfg.host.is_empty() {
        addr.to_string()
    } else {
        cfg.host.clone()
    };
    let blocks = f::RequestBlocks::new(&f::H2Request {
        method: "GET",
        scheme: if cfg.tls.is_some() { "https" } else { "http" },
        authority: &authority,
        path,
        headers: &[("user-agent".to_string(), "netdoctor/0.1".to_string())],
        body: None,
    })
    .map_err(http_err)?;
    let mut out = Vec::with_capacity(256);
    f::put_opening(&mut out, 1);
    f::put_request(&mut out, STREAM, &blocks.first, None);
    conn.write_all(&out)?;
    let written = Instant::now();

    let mut hpack = httlib_hpack::Decoder::default();
    let mut a = Answer::default();
    let mut at = 0usize;
    while !a.done {
        if conn.fill()? == 0 {
            return Err(http_err(if a.first_headers.is_none() {
                "connection closed before the response's HEADERS".into()
            } else {
                format!(
                    "connection closed after {} body bytes, before END_STREAM",
                    a.body_bytes
                )
            }));
        }
        let mut reply = Vec::new();
        while let Some(h) = f::FrameHeader::parse(&conn.buf[at..]) {
            let end = at + f::FrameHeader::SIZE + h.len;
            if conn.buf.len() < end {
                break;
            }
            let payload = conn.buf[at + f::FrameHeader::SIZE..end].to_vec();
            at = end;
            on_frame(h, &payload, &mut a, &mut hpack, &mut reply).map_err(http_err)?;
        }
        conn.buf.drain(..at);
        at = 0;
        if !reply.is_empty() && !a.done {
            conn.write_all(&reply)?;
        }
    }
    let first = a.first_headers.unwrap_or(written);
    let total = start.elapsed();
    Ok(HttpTiming {
        connect_ms: ms(connect),
        tls_ms: tls,
        ttfb_ms: ms(first.duration_since(written)),
        first_byte_ms: ms(first.duration_since(start)),
        total_ms: ms(total),
        status: a.status,
        header_bytes: a.header_bytes,
        body_bytes: a.body_bytes,
        protocol: Some(if cfg.tls.is_some() { "h2" } else { "h2c" }.to_string()),
    })
}

/// One frame from the server; `reply` collects what to answer (SETTINGS ACK, PING ACK).
fn on_frame(
    h: f::FrameHeader,
    payload: &[u8],
    a: &mut Answer,
    hpack: &mut httlib_hpack::Decoder<'static>,
    reply: &mut Vec<u8>,
) -> Result<(), String> {
    match h.kind {
        f::SETTINGS if h.flags & f::FLAG_ACK == 0 => f::put_settings_ack(reply),
        f::PING if h.flags & f::FLAG_ACK == 0 => f::put_ping_ack(reply, payload),
        f::GOAWAY => {
            let code = payload
                .get(4..8)
                .map_or(0, |c| u32::from_be_bytes(c.try_into().expect("four bytes")));
            let last = payload.get(..4).map_or(0, |c| {
                u32::from_be_bytes(c.try_into().expect("four bytes")) & 0x7fff_ffff
            });
            if last < STREAM || code != 0 {
                return Err(format!(
                    "the server sent GOAWAY {} before answering",
                    f::error_name(code)
                ));
            }
        }
        f::RST_STREAM if h.stream == STREAM => {
            let code = payload
                .get(..4)
                .map_or(0, |c| u32::from_be_bytes(c.try_into().expect("four bytes")));
            return Err(format!(
                "the server reset the request's stream (RST_STREAM {})",
                f::error_name(code)
            ));
        }
        f::HEADERS | f::CONTINUATION if h.stream == STREAM => {
            let mut p = payload;
            if h.kind == f::HEADERS {
                a.first_headers.get_or_insert_with(Instant::now);
                a.in_block = true;
                a.end_after_block = h.flags & f::FLAG_END_STREAM != 0;
                a.block.clear();
                p = unpad(h.flags, p)?;
                if h.flags & f::FLAG_PRIORITY != 0 {
                    p = p
                        .get(5..)
                        .ok_or("a HEADERS frame too short for its priority")?;
                }
            }
            a.header_bytes += p.len() as u64;
            a.block.extend_from_slice(p);
            if a.block.len() > MAX_BLOCK {
                return Err(format!("a response header block over {MAX_BLOCK} bytes"));
            }
            if h.flags & f::FLAG_END_HEADERS != 0 {
                a.in_block = false;
                let mut fields = Vec::new();
                hpack
                    .decode(&mut a.block, &mut fields)
                    .map_err(|e| format!("HPACK: {e:?}"))?;
                for (n, v, _) in &fields {
                    if n == b":status" {
                        let s: u16 = std::str::from_utf8(v)
                            .ok()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(0);
                        // A final status replaces an informational one; trailers keep it.
                        if a.status < 200 {
                            a.status = s;
                        }
                    }
                }
                a.done |= a.end_after_block;
            }
        }
        f::DATA if h.stream == STREAM => {
            a.body_bytes += unpad(h.flags, payload)?.len() as u64;
            a.done |= h.flags & f::FLAG_END_STREAM != 0;
        }
        _ => {}
    }
    Ok(())
}

/// A frame's payload without its padding (PADDED flag: a length byte first, padding last).
fn unpad(flags: u8, p: &[u8]) -> Result<&[u8], String> {
    if flags & f::FLAG_PADDED == 0 {
        return Ok(p);
    }
    let pad = usize::from(*p.first().ok_or("a padded frame without its length")?);
    p.get(1..p.len().saturating_sub(pad))
        .filter(|_| pad < p.len())
        .ok_or_else(|| "a frame's padding is longer than the frame".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_is_removed_and_bad_padding_is_an_error() {
        assert_eq!(unpad(0, b"abc").unwrap(), b"abc");
        assert_eq!(unpad(f::FLAG_PADDED, b"\x02abcXX").unwrap(), b"abc");
        assert!(unpad(f::FLAG_PADDED, b"\x09ab").is_err());
        assert!(unpad(f::FLAG_PADDED, b"").is_err());
    }
}

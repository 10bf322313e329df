//! Orientation: which endpoint of a connection is the server. The receiver of the SYN;
//! without a captured handshake, `server_port` when given, else the side whose payload starts
//! with an HTTP status line (or the peer of the side that sends a request line), else the
//! lower port. A guess from ports may be overridden by the first telling payload.

use super::AnalyzerConfig;
use super::flow::ConnKey;
use crate::decode::TcpSegment;

/// How the server side was decided; a stronger reason may override a weaker one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(super) enum Reason {
    LowerPort,
    Payload,
    Port,
    Handshake,
}

/// Request-line methods of HTTP/1.x (with the following space).
const METHODS: [&[u8]; 9] = [
    b"GET ",
    b"POST ",
    b"PUT ",
    b"HEAD ",
    b"DELETE ",
    b"OPTIONS ",
    b"PATCH ",
    b"CONNECT ",
    b"TRACE ",
];

/// At least 4 captured bytes that start (a prefix of) a request line.
pub(super) fn looks_like_request(p: &[u8]) -> bool {
    p.len() >= 4
        && METHODS.iter().any(|m| {
            let n = p.len().min(m.len());
            m[..n] == p[..n]
        })
}

pub(super) fn looks_like_response(p: &[u8]) -> bool {
    let n = p.len().min(7);
    n >= 4 && b"HTTP/1."[..n] == p[..n]
}

/// The server's index (0: `key.lo`, 1: `key.hi`) for a connection opened by `seg`, sent by
/// endpoint `i`.
pub(super) fn orient(
    cfg: &AnalyzerConfig,
    key: ConnKey,
    i: usize,
    seg: &TcpSegment<'_>,
) -> (usize, Reason) {
    let f = seg.flags;
    if f.syn() && !f.ack() {
        (1 - i, Reason::Handshake)
    } else if f.syn() {
        (i, Reason::Handshake)
    } else if let Some(p) = cfg.server_port
        && (key.lo.port == p) != (key.hi.port == p)
    {
        (usize::from(key.hi.port == p), Reason::Port)
    } else if looks_like_response(seg.payload) {
        (i, Reason::Payload)
    } else if looks_like_request(seg.payload) {
        (1 - i, Reason::Payload)
    } else {
        (usize::from(key.hi.port < key.lo.port), Reason::LowerPort)
    }
}

/// A new payload from endpoint `i` of a connection oriented by a guess: the server's index
/// when the payload tells.
pub(super) fn reorient(i: usize, payload: &[u8]) -> Option<usize> {
    if looks_like_response(payload) {
        Some(i)
    } else if looks_like_request(payload) {
        Some(1 - i)
    } else {
        None
    }
}

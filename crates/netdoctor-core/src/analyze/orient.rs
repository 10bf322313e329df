//! Orientation: which endpoint of a connection is the server. The receiver of the SYN;
//! without a captured handshake (a connection that began before the capture), an end on a
//! configured server port (`server_port`, `server_ports`: e.g. this host's listening
//! sockets), else the side whose payload starts with an HTTP status line (or the peer of the
//! side that sends a request line), else the end that more connections share (a server's
//! address:port appears in many connections, a client's ephemeral one in few), else the
//! lower port. A guess from the lower port is revised while the connection has no completed
//! exchange, when its ends become shared unequally or a telling payload comes; a guess from
//! sharing is revised by a telling payload.

use std::collections::BTreeMap;

use super::AnalyzerConfig;
use super::flow::{ConnKey, Endpoint};
use crate::decode::TcpSegment;

/// Endpoints remembered for [`Shared`] at most (client ends of mid-stream connections are
/// counted too; past this, new endpoints are not).
const MAX_SHARED: usize = 65_536;

/// How many connections each endpoint was seen in. Updated once per connection, never per
/// packet. A `BTreeMap`: a second hash-map instantiation in the crate moved the code
/// generation units so that the per-packet path lost its inlining (measured with callgrind).
/// In a shard worker the counts are the capture's, kept by [`super::shard::shared`] across the
/// workers (`global`).
#[derive(Default)]
pub(super) struct Shared {
    map: BTreeMap<Endpoint, u32>,
    global: Option<super::shard::shared::Handle>,
}

impl Shared {
    /// A shard worker's view of the capture-wide counts.
    pub(super) fn global(h: super::shard::shared::Handle) -> Self {
        Shared {
            map: BTreeMap::new(),
            global: Some(h),
        }
    }

    /// The shard worker's handle, if this is one.
    pub(super) fn handle(&self) -> Option<&super::shard::shared::Handle> {
        self.global.as_ref()
    }

    pub(super) fn note(&mut self, e: Endpoint) {
        if let Some(g) = &self.global {
            g.note(e);
        } else {
            note(&mut self.map, e);
        }
    }

    /// The index (0: `key.lo`, 1: `key.hi`) of the end more connections share, if one does.
    pub(super) fn server(&self, key: &ConnKey) -> Option<usize> {
        let (lo, hi) = match &self.global {
            Some(g) => g.uses(&key.lo, &key.hi),
            None => (uses(&self.map, &key.lo), uses(&self.map, &key.hi)),
        };
        (lo != hi && lo.max(hi) >= 2).then_some(usize::from(hi > lo))
    }
}

/// One more connection of `e` (past [`MAX_SHARED`] endpoints, new ones are not counted).
pub(super) fn note(map: &mut BTreeMap<Endpoint, u32>, e: Endpoint) {
    if let Some(n) = map.get_mut(&e) {
        *n = n.saturating_add(1);
    } else if map.len() < MAX_SHARED {
        map.insert(e, 1);
    }
}

pub(super) fn uses(map: &BTreeMap<Endpoint, u32>, e: &Endpoint) -> u32 {
    map.get(e).copied().unwrap_or(0)
}

/// How the server side was decided; a stronger reason may override a weaker one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(super) enum Reason {
    LowerPort,
    Shared,
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
    shared: &Shared,
    key: ConnKey,
    i: usize,
    seg: &TcpSegment<'_>,
) -> (usize, Reason) {
    let f = seg.flags;
    let is_server = |p: u16| cfg.server_port == Some(p) || cfg.server_ports.contains(&p);
    if f.syn() && !f.ack() {
        (1 - i, Reason::Handshake)
    } else if f.syn() {
        (i, Reason::Handshake)
    } else if is_server(key.lo.port) != is_server(key.hi.port) {
        (usize::from(is_server(key.hi.port)), Reason::Port)
    } else if looks_like_response(seg.payload) {
        (i, Reason::Payload)
    } else if looks_like_request(seg.payload) {
        (1 - i, Reason::Payload)
    } else if let Some(s) = shared.server(&key) {
        (s, Reason::Shared)
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

//! Exchange splitting by direction turns: a request starts with the client's first new data
//! after the server's response (or on an idle connection), the response with the server's
//! first new data after it; the exchange completes when the next request starts or the
//! connection closes. Exchanges still in progress at the end of the capture are not counted
//! (their response may be incomplete).
//!
//! This works for any request/response protocol (TLS records, RESP, memcached, MySQL, a
//! custom RPC): the payload is only looked at to say how the exchange was found. A request
//! that starts with an HTTP/1.x method is an `http1` exchange; any other is a `turns`
//! exchange. Pipelined or multiplexed traffic (a second HTTP/1 request line before the
//! response, the HTTP/2 preface) makes turns ambiguous: the connection is marked and the
//! report says that per-request figures are approximate there.

use super::conn::Conn;
use super::orient::looks_like_request;
use crate::breakdown::ExchangeParts;
use crate::event::{Pkt, side_bit};

/// The start of the HTTP/2 connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2";

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Idle,
    Request,
    Response,
}

#[derive(Clone, Copy)]
pub(super) struct Exchange {
    pub first_req: Pkt,
    pub last_req: Pkt,
    pub first_resp: Option<Pkt>,
    pub last_resp: Pkt,
    /// How the exchange was found: the captured request start is an HTTP/1.x method.
    pub http: bool,
    /// Stall time per cause and the sides hit.
    pub parts: ExchangeParts,
    /// The last (needed, not spurious) retransmission of response data: the response was
    /// delivered then, not when its original left.
    pub delivered_ns: i64,
}

impl Exchange {
    /// Charges `[start, end]` to stall cause `cause` (an index of
    /// [`crate::breakdown::STALL_CAUSES`]) on a side.
    pub(super) fn add_stall(&mut self, cause: usize, server_side: bool, start: i64, end: i64) {
        self.parts.add(cause, self.first_req.ts_ns, start, end);
        self.parts.sides[cause] |= side_bit(server_side);
    }
}

impl Conn {
    /// New data `pkt` (oriented) with its captured `payload`: advances the exchange state and
    /// returns the exchange this data completed (a new request ends the previous exchange).
    pub(super) fn on_http_data(&mut self, pkt: Pkt, payload: &[u8]) -> Option<Exchange> {
        let mut finished = None;
        if pkt.from_server {
            match self.phase {
                Phase::Request => {
                    if let Some(x) = self.cur.as_mut() {
                        x.first_resp = Some(pkt);
                        x.last_resp = pkt;
                    }
                    self.phase = Phase::Response;
                }
                Phase::Response => {
                    if let Some(x) = self.cur.as_mut() {
                        x.last_resp = pkt;
                    }
                }
                Phase::Idle => {}
            }
        } else {
            match self.phase {
                Phase::Request => {
                    if let Some(x) = self.cur.as_mut() {
                        x.last_req = pkt;
                    }
                }
                Phase::Idle | Phase::Response => {
                    finished = self.cur.take();
                    self.first_req.get_or_insert(pkt);
                    self.cur = Some(Exchange {
                        first_req: pkt,
                        last_req: pkt,
                        first_resp: None,
                        last_resp: pkt,
                        http: payload.len() < 4 || looks_like_request(payload),
                        parts: ExchangeParts::default(),
                        delivered_ns: i64::MIN,
                    });
                    self.phase = Phase::Request;
                }
            }
        }
        finished
    }
}

impl Conn {
    /// Client data `payload` about to go through [`Conn::on_http_data`]: marks the connection
    /// when it shows pipelining (a second HTTP/1 request line before any response) or
    /// multiplexing (the HTTP/2 preface as the first request). Kept apart from the exchange
    /// state machine (and out of line) so the per-packet path stays as it was.
    #[inline(never)]
    pub(super) fn check_ambiguous(&mut self, payload: &[u8]) {
        self.ambiguous = match (self.phase, self.cur) {
            (Phase::Request, Some(x)) => x.http && looks_like_request(payload),
            _ => self.first_req.is_none() && payload.starts_with(H2_PREFACE),
        };
    }
}

//! Exchange splitting by direction turns: a request starts with the client's first new data
//! after the server's response (or on an idle connection), the response with the server's
//! first new data after it; the exchange completes when the next request starts or the
//! connection closes. An exchange cut by the end of the capture still has its request time and
//! its first-byte time: it is counted as incomplete (no latency, its server time and stalls
//! do count). A request the server acknowledged only much later than the handshake RTT says
//! the path was slow for it: that time is not the server's ([`path_rtt_ns`]).
//!
//! This works for any request/response protocol (TLS records, RESP, memcached, MySQL, a
//! custom RPC): the payload is only looked at to say how the exchange was found. A request
//! that starts with an HTTP/1.x method (or is too short to tell) and is answered by an HTTP
//! status line is an `http1` exchange; any other is a `turns` exchange. Pipelined traffic (a second HTTP/1 request line before the response) makes
//! turns ambiguous: the connection is marked and the report says that per-request figures
//! are approximate there. A connection that opens with the HTTP/2 preface is not read here
//! but by the HTTP/2 source (`super::h2`), chosen per connection by [`super::conn::Source`].

use super::conn::Conn;
use super::framing::{Framing, Method, answer_framing, header_end, interim_continue};
use super::orient::looks_like_request;
use crate::breakdown::ExchangeParts;
use crate::event::{ClientAsked, Pkt, side_bit};
use crate::track::tsclock::TsClock;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Idle,
    Request,
    Response,
}

/// How an exchange was found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Found {
    /// From direction turns alone.
    Turns,
    /// From turns, and the captured request start is an HTTP/1.x method.
    Http1,
    /// An HTTP/2 stream (`super::h2`).
    H2,
    /// A TLS handshake turn (`super::tls`): setup, not an exchange (never counted as one).
    TlsSetup,
}

#[derive(Clone, Copy)]
pub(super) struct Exchange {
    pub first_req: Pkt,
    pub last_req: Pkt,
    pub first_resp: Option<Pkt>,
    pub last_resp: Pkt,
    /// How the exchange was found.
    pub found: Found,
    /// Stall time per cause and the sides hit.
    pub parts: ExchangeParts,
    /// The last (needed, not spurious) retransmission of response data: the response was
    /// delivered then, not when its original left.
    pub delivered_ns: i64,
    /// Sequence number after the request's last byte, and the server's first ACK of it (the
    /// request had arrived by then: see [`path_rtt_ns`]).
    pub req_end: u32,
    pub req_ack: Option<Pkt>,
    /// The HTTP status code of the response (0: not HTTP, or not seen).
    pub status: u16,
    /// Its end fell in a capture gap (an HTTP/2 stream whose END_STREAM the capture missed):
    /// counted as cut, like an exchange the end of the capture cut.
    pub gap_cut: bool,
    /// The response's bytes (new data), and the smallest round trip under load seen while it
    /// arrived (`track::echo`; `i64::MAX`: none).
    pub resp_bytes: u64,
    /// Where the response ends by its HTTP/1.x framing (`super::framing`), when its
    /// captured first segment held the whole header ([`Exchange::answered`]).
    pub framing: Framing,
    /// The request's method, as far as the answer's framing depends on it.
    pub method: Method,
    /// The request's first segment held the start of another request after it (pipelined
    /// in one segment: read on a connection's first requests, and on every one of a
    /// connection that showed it, [`Conn::pipelines`]).
    pub pipelined: bool,
    /// The connection's previous answer was complete by its framing (this request followed
    /// a whole answer).
    pub prev_answered: bool,
    /// The connection's silence before the request's first byte (0: its first packet).
    pub idle_before_ns: i64,
    pub echo_min_ns: i64,
    /// The first response byte's TSval (ticks since the server's first one), when stamped:
    /// when it left the server (`track::tsclock`).
    pub first_resp_ts: Option<i64>,
    /// The latest response segment's TSval (same ticks), and the time the server spent
    /// between its response segments with nothing making it wait ([`paced_ns`]).
    pub last_resp_ts: Option<i64>,
    pub body_wait_ns: i64,
    /// On a reused connection: the time from the previous answer's last byte to this
    /// request's first (the client's reuse gap).
    pub reuse_gap_ns: Option<i64>,
    /// The response's opening flights (slow start, [`super::flights`]).
    pub flights: super::flights::Flights,
    /// A TLS handshake turn (`super::tls`): setup, not an exchange.
    pub tls_setup: bool,
}

/// The status code of an HTTP/1.x status line at the start of `payload`
/// (`HTTP/1.1 500 Internal Server Error`), if it is one.
pub(super) fn http_status(payload: &[u8]) -> Option<u16> {
    let rest = payload.strip_prefix(b"HTTP/1.")?;
    let code = rest.get(2..5)?;
    if rest.get(1) != Some(&b' ') || !code.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = code.iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
    (100..600).contains(&n).then_some(n)
}

/// How an exchange whose request looked like HTTP/1.x (or was too short to tell) was found,
/// given its answer's status code (0: none): an HTTP/1.x exchange only when the answer is an
/// HTTP status line, or its start cannot be read (`unreadable`: the capture missed the bytes
/// before it, or cut the segment inside `HTTP/`). Any other answer makes it a plain
/// request/response exchange: an echo service answering `a` with `a` (zeek-echo-connections;
/// its `H` too) is not HTTP. `answered`: the connection's answers included a status line
/// before; then a misplaced turn (pipelined requests answered mid-body) stays HTTP.
fn http_answer(status: u16, unreadable: bool, answered: &mut bool) -> Found {
    *answered |= status > 0;
    if status > 0 || unreadable || *answered {
        Found::Http1
    } else {
        Found::Turns
    }
}

/// The captured bytes are all a prefix of `HTTP/` (nothing captured counts).
fn is_prefix_of_http(payload: &[u8]) -> bool {
    let n = payload.len().min(5);
    payload[..n] == b"HTTP/"[..n]
}

/// A delayed ACK (Linux 40 ms up to 200 ms, Windows 200 ms) waits at most this long: a
/// server's ACK of a request that comes later than the handshake RTT plus this says the path
/// (or the capture point's view of it) was slower for the request than for the handshake.
const ACK_DELAY_MAX_NS: i64 = 200_000_000;

/// The round trip to subtract from an exchange's first-byte time: the handshake RTT, or the
/// time the server took to acknowledge the request when that is longer than the handshake
/// RTT plus any delayed ACK (the request was still on its way; the server cannot have started
/// before it arrived).
pub(super) fn path_rtt_ns(rtt: Option<i64>, last_req: &Pkt, req_ack: Option<Pkt>) -> i64 {
    let rtt = rtt.unwrap_or(0);
    match req_ack {
        Some(a) if a.ts_ns - last_req.ts_ns > rtt + ACK_DELAY_MAX_NS => a.ts_ns - last_req.ts_ns,
        _ => rtt,
    }
}

const MS: i64 = 1_000_000;
/// A gap between two response segments shorter than this is not told from scheduling noise
/// (and the TSval's 1 ms ticks cannot confirm it).
const MIN_PACE_NS: i64 = 2 * MS;

/// How long the server itself kept the next piece of its answer: the gap between two of its
/// response segments (`prev`, `next`: arrival at the capture point and TSval ticks), counted
/// only when nothing on the wire made it wait and its own clock agrees:
/// - the gap is [`MIN_PACE_NS`] or more;
/// - no packet of the client came within a round trip (`rtt_ns`, the handshake's, plus a
///   quarter and 1 ms) before `next`: a sender held by its congestion window, the receive
///   window, a zero window, loss recovery or Nagle sends right when the client's ACK (or
///   window update) reaches it;
/// - the server's TCP timestamps moved by about the same time (0.7–1.4× the gap, ± 1 ms):
///   segments that left together and were spread on the way by a shaper or a slow link arrive
///   apart but were stamped close;
/// - `next` did not wait on the way (its arrival against its TSval, [`TsClock::wait_ns`],
///   under 2 ms beyond the direction's least-delayed packet): behind a full bottleneck the
///   ACK clock spaces departures like arrivals, but every segment arrives late. A clock that
///   is not a 1 ms one (or none, or too few packets yet) says nothing, and nothing is counted.
///
/// Data the capture missed before `next` (a capture gap) makes the gap unknown: not counted.
/// (The round trip under load from echoed timestamps is not used: a server that pauses makes
/// its echoes late too.)
///
/// That time is the application writing its answer slowly (a chunked stream, a slow upstream
/// proxied as it arrives, a generator): the server's time, not the transfer's.
pub(super) fn paced_ns(
    prev: (i64, Option<i64>),
    next: (i64, Option<i64>),
    client_ns: i64,
    rtt_ns: i64,
    clock: &TsClock,
) -> i64 {
    let gap = next.0 - prev.0;
    if gap < MIN_PACE_NS {
        return 0;
    }
    let released = client_ns > prev.0 && next.0 - client_ns <= rtt_ns + rtt_ns / 4 + MS;
    let (Some(a), Some(b)) = (prev.1, next.1) else {
        return 0;
    };
    let left = (b - a) * MS;
    let agrees = left * 10 >= gap * 7 - 10 * MS && left * 10 <= gap * 14 + 10 * MS;
    let on_time = clock.wait_ns(b, next.0).is_some_and(|w| w < MIN_PACE_NS);
    if released || !agrees || !on_time {
        0
    } else {
        gap
    }
}

/// More of a chunked answer (`payload` captured of `wire` bytes, the first `old` of them seen
/// before) for its decoder. Out of line: only chunked answers come here.
#[inline(never)]
fn chunk_data(f: &mut Framing, payload: &[u8], wire: u32, old: u32) {
    let new = &payload[(old as usize).min(payload.len())..];
    let missing = u64::from(wire.saturating_sub(old)).saturating_sub(new.len() as u64);
    f.feed(new, missing);
}

/// A request's first segment `payload` holds the start of another request after its
/// header (a body-less request pipelined with the next one in one segment). A request with a
/// body whose bytes look like a request line would look the same; rare enough.
fn next_request_follows(payload: &[u8]) -> bool {
    header_end(payload).is_some_and(|e| looks_like_request(&payload[e..]))
}

/// What an HTTP/1.x request's header at the start of its first segment `payload` asked
/// about the connection. `cut`: the capture kept fewer bytes than the segment carried.
pub(super) fn client_asked(payload: &[u8], cut: bool) -> ClientAsked {
    let Some(line_end) = payload.iter().position(|&b| b == b'\n') else {
        return if cut {
            ClientAsked::Cut
        } else {
            ClientAsked::Unknown
        };
    };
    let http10 = payload[..line_end].trim_ascii_end().ends_with(b"HTTP/1.0");
    let end = payload.windows(4).position(|w| w == b"\r\n\r\n");
    let head = &payload[line_end + 1..end.map_or(payload.len(), |e| e + 2)];
    // Whole lines only: the last one may be cut.
    let whole = head.len()
        - head
            .iter()
            .rev()
            .position(|&b| b == b'\n')
            .unwrap_or(head.len());
    for line in head[..whole].split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if !line[..colon].eq_ignore_ascii_case(b"connection") {
            continue;
        }
        let value = line[colon + 1..].trim_ascii();
        // A list (`keep-alive, Upgrade`): each token.
        for token in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
            if token.eq_ignore_ascii_case(b"close") {
                return ClientAsked::Close;
            }
            if token.eq_ignore_ascii_case(b"keep-alive") {
                return ClientAsked::KeepAlive;
            }
        }
    }
    match end {
        Some(_) if http10 => ClientAsked::Http10,
        Some(_) => ClientAsked::KeepAlive,
        None if cut => ClientAsked::Cut,
        // The header goes on in the next segment.
        None => ClientAsked::Unknown,
    }
}

impl Exchange {
    /// The response arrived whole by its framing (see [`super::framing`]).
    pub(super) fn answered(&self) -> bool {
        self.first_resp.is_some() && self.framing.complete(self.resp_bytes)
    }

    /// Charges `[start, end]` to stall cause `cause` (an index of
    /// [`crate::breakdown::STALL_CAUSES`]) on a side.
    pub(super) fn add_stall(&mut self, cause: usize, server_side: bool, start: i64, end: i64) {
        self.parts.add(cause, self.first_req.ts_ns, start, end);
        self.parts.sides[cause] |= side_bit(server_side);
    }
}

impl Conn {
    /// A response's flights are followed on this connection: its RTT is long enough for a
    /// small initial window to cost something ([`super::flights::MIN_RTT_NS`]).
    #[inline]
    fn follows_flights(&self) -> bool {
        self.rtt_ns.is_some_and(|r| r >= super::flights::MIN_RTT_NS)
    }

    /// The server's new data `pkt` ended at the right edge of the window the client
    /// advertised, which had no room for a full segment: the server waited for the client's
    /// window (a reader that reads slowly, sender-side silly-window avoidance, the persist
    /// timer's probe), not on its own writes. Known only when both SYNs (the window scale)
    /// were captured.
    fn window_held(&self, pkt: Pkt) -> bool {
        let (srv, cli) = (&self.dirs[self.server], &self.dirs[1 - self.server]);
        let Some(acked) = srv.acked.filter(|_| srv.syn_seen && cli.syn_seen) else {
            return false;
        };
        let edge = acked.wrapping_add(cli.window);
        let start = srv.nxt.wrapping_sub(pkt.len);
        let full = u32::from(cli.mss.unwrap_or(536)).saturating_sub(40);
        !super::flow::seq_gt(edge, srv.nxt) && edge.wrapping_sub(start) as i32 <= full as i32
    }

    /// What [`super::flights::Flights`] needs of the connection at a response segment.
    #[inline]
    fn flight_ctx(&self) -> super::flights::SegCtx {
        let rtt_ns = self.rtt_ns.unwrap_or(0);
        let client = &self.dirs[1 - self.server];
        let known = client.syn_seen && self.dirs[self.server].syn_seen;
        super::flights::SegCtx {
            rtt_ns,
            leg_ns: self.syn.server_leg_ns().unwrap_or(rtt_ns),
            client_ns: client.last_ns,
            window: known.then_some(client.window),
            mss: client.mss.map_or(1460, u32::from),
        }
    }

    /// New data `pkt` (oriented) with its captured `payload`: advances the exchange state and
    /// puts the exchange this data completed in `finished` (a new request ends the previous
    /// exchange; left as it was otherwise). (An out parameter: returned, the `Option<Exchange>`
    /// was copied into the caller's slot on every segment, `None` too.)
    /// `gap`: the capture missed data of this direction just before `pkt`; `old`: bytes at
    /// its start that were seen before (a segment re-cut after a loss). `#[inline]`: its one
    /// caller is the hub's per-segment path (`Hub::on_new_data`); compiled apart, it cost
    /// ~45 M instructions more on the bench capture (callgrind: a copy of the exchange more).
    #[inline]
    pub(super) fn on_http_data(
        &mut self,
        pkt: Pkt,
        payload: &[u8],
        gap: bool,
        old: u32,
        finished: &mut Option<Exchange>,
    ) {
        if self.upgraded {
            return;
        }
        if pkt.from_server {
            match self.phase {
                // An interim `100 Continue` alone in its segment, the answer to a request's
                // `Expect: 100-continue`: the request goes on with its body and its answer is
                // still to come (before, the body was read as a request of its own).
                Phase::Request
                    if !gap
                        && self.cur.as_ref().is_some_and(|x| x.found == Found::Http1)
                        && interim_continue(payload, pkt.len) => {}
                Phase::Request => {
                    let seg = self.follows_flights().then(|| self.flight_ctx());
                    if let Some(x) = self.cur.as_mut() {
                        if let Some(seg) = seg {
                            x.flights.on_segment(pkt, &seg);
                        }
                        x.first_resp = Some(pkt);
                        x.first_resp_ts = self.dirs[self.server].ts.last();
                        x.last_resp_ts = x.first_resp_ts;
                        x.last_resp = pkt;
                        x.resp_bytes += u64::from(pkt.len);
                        if x.found == Found::Http1 {
                            x.status = http_status(payload).unwrap_or(0);
                            if x.status > 0 && !gap {
                                x.framing = answer_framing(payload, pkt.len, x.status, x.method);
                            }
                            let cut = (payload.len() as u64) < u64::from(pkt.len);
                            let unreadable = gap || (cut && is_prefix_of_http(payload));
                            x.found = http_answer(x.status, unreadable, &mut self.http_answered);
                        }
                    }
                    if self.tls.asked {
                        self.tls.asked = false;
                        if self.tls.hello & super::tls::ALPN_OFFERED_H2 != 0 {
                            self.tls_server_hello(payload);
                        }
                        self.tls.answered =
                            self.tls.finished || super::tls::tls_setup_answer(payload);
                        if let Some(x) = self.cur.as_mut() {
                            x.tls_setup = self.tls.answered;
                        }
                    } else if self.tls.hello & super::tls::EARLY_DATA != 0 {
                        self.tls_early_answer(payload, pkt.len);
                    }
                    self.phase = Phase::Response;
                    self.resp_ack = self.dirs[1 - self.server].acked;
                    if self.cur.as_ref().is_some_and(|x| x.status == 101) {
                        self.switched();
                        *finished = self.cur.take();
                    }
                }
                Phase::Response if self.request_unseen() => {
                    // The answer to a request the capture missed: the exchange in progress
                    // ended with its last captured answer byte, and this one cannot be timed
                    // (its request's first byte is unknown). Before, it ran on as the earlier
                    // answer's body: zeek-zero-length-bodies-with-drops showed a 15.2 s
                    // exchange of two 0.1 s ones 15 s apart.
                    *finished = self.cur.take();
                    self.phase = Phase::Idle;
                }
                // The answer to early data (0-RTT) starts after its ServerHello flight.
                Phase::Response
                    if self.tls.hello & super::tls::IN_FLIGHT != 0
                        && self.tls.response_starts(payload, pkt.len, gap) =>
                {
                    self.response_after_flight(pkt);
                }
                Phase::Response => {
                    let rel = self.dirs[self.server].ts.last();
                    let client_ns = self.dirs[1 - self.server].last_ns;
                    let rtt = self.rtt_ns.unwrap_or(0);
                    let window_held = self.window_held(pkt);
                    let clock = &self.dirs[self.server].ts;
                    // Only a pause after the end of one of the server's writes (its segment
                    // pushed, PSH) can be a write that came late: inside one write the bytes
                    // were in its socket already and the kernel held them (pacing, as BBR
                    // does after a slow reader taught it a low rate: python-reader-40ms, 2-4 ms
                    // between its segments); nor one whose segment filled a window that had
                    // no room for a full one (the client's, [`Conn::window_held`]).
                    if let Some(x) = self.cur.as_mut()
                        && !gap
                        && x.last_resp.flags.psh()
                        && !window_held
                    {
                        x.body_wait_ns += paced_ns(
                            (x.last_resp.ts_ns, x.last_resp_ts),
                            (pkt.ts_ns, rel),
                            client_ns,
                            rtt,
                            clock,
                        );
                    }
                    let seg = self.follows_flights().then(|| self.flight_ctx());
                    if let Some(x) = self.cur.as_mut() {
                        if gap {
                            x.flights.spoil();
                        } else if let Some(seg) = seg {
                            x.flights.on_segment(pkt, &seg);
                        }
                        x.last_resp_ts = rel;
                        x.last_resp = pkt;
                        x.resp_bytes += u64::from(pkt.len);
                        if let Framing::Chunked(_) = x.framing {
                            if gap {
                                x.framing.lost();
                            } else {
                                chunk_data(&mut x.framing, payload, pkt.len, old);
                            }
                        }
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
                    if self.tls.asked {
                        self.tls_records(payload, pkt.len, gap || old > 0);
                    }
                }
                // The client's EndOfEarlyData + Finished after its early data (0-RTT), before
                // the response began: setup, not a request; the exchange goes on.
                Phase::Response
                    if self.tls.hello & super::tls::IN_FLIGHT != 0
                        && super::tls::client_finished_after_early(payload, pkt.len) => {}
                // A TLS alert alone (the client's close_notify as it closes): no request; the
                // exchange in progress is complete and the connection idle (`super::tls`).
                Phase::Idle | Phase::Response if super::tls::alert_alone(payload, pkt.len) => {
                    *finished = self.cur.take();
                    self.phase = Phase::Idle;
                }
                Phase::Idle | Phase::Response => {
                    *finished = self.cur.take();
                    let reuse_gap_ns = finished
                        .as_ref()
                        .filter(|p| p.first_resp.is_some())
                        .map(|p| (pkt.ts_ns - p.last_resp.ts_ns).max(0));
                    let prev_answered = finished.as_ref().is_some_and(Exchange::answered);
                    self.first_req.get_or_insert(pkt);
                    // Handshake turns are not exchanges: this reads them and the first three
                    // requests after them (`super::tls`).
                    if self.exchanges <= 2 {
                        self.tls_turn(pkt, payload);
                    }
                    // Read on a connection's first requests only: `short_connections` asks it of
                    // connections with up to two, and reading every request of long keep-alive
                    // connections cost a fifth of the analysis (healthy-big).
                    let mut pipelined = false;
                    if (self.exchanges <= 2 || self.pipelines) && looks_like_request(payload) {
                        if self.exchanges <= 2 {
                            self.asked =
                                client_asked(payload, (payload.len() as u64) < u64::from(pkt.len));
                        }
                        pipelined = next_request_follows(payload);
                        self.pipelines |= pipelined;
                    }
                    self.cur = Some(Exchange {
                        first_req: pkt,
                        last_req: pkt,
                        first_resp: None,
                        last_resp: pkt,
                        found: if payload.len() < 4 || looks_like_request(payload) {
                            Found::Http1
                        } else {
                            Found::Turns
                        },
                        parts: ExchangeParts::default(),
                        delivered_ns: i64::MIN,
                        req_end: 0,
                        req_ack: None,
                        status: 0,
                        gap_cut: false,
                        resp_bytes: 0,
                        framing: Framing::Open,
                        method: Method::of(payload),
                        pipelined,
                        prev_answered,
                        idle_before_ns: self.prev_active_ns.map_or(0, |t| (pkt.ts_ns - t).max(0)),
                        echo_min_ns: i64::MAX,
                        first_resp_ts: None,
                        last_resp_ts: None,
                        body_wait_ns: 0,
                        reuse_gap_ns,
                        flights: Default::default(),
                        tls_setup: false,
                    });
                    self.phase = Phase::Request;
                }
            }
        }
    }
}

impl Conn {
    /// The server answered 101 Switching Protocols: the exchange that asked ends with the
    /// 101's first segment and the connection reads no more exchanges (a WebSocket's server
    /// pushes follow no request: read as turns, they were an answer "written slowly", a
    /// warning on a capture s29d made in session 29).
    #[cold]
    fn switched(&mut self) {
        self.upgraded = true;
        self.phase = Phase::Idle;
    }

    /// Client data `payload` about to go through [`Conn::on_http_data`]: marks the connection
    /// when it shows pipelining (a second HTTP/1 request line before any response). Kept
    /// apart from the exchange state machine (and out of line) so the per-packet path stays
    /// as it was. (A connection that opens with the HTTP/2 preface is read by `super::h2`.)
    ///
    /// A request line that follows an answer the capture dropped looks the same from the
    /// client's packets alone; its ACK tells them apart: a pipelining client has acknowledged
    /// no server data beyond what was captured, one whose answer went uncaptured has.
    #[inline(never)]
    pub(super) fn check_ambiguous(&mut self, payload: &[u8]) {
        self.ambiguous = match (self.phase, self.cur) {
            (Phase::Request, Some(x)) => {
                x.found == Found::Http1 && looks_like_request(payload) && !self.answer_unseen()
            }
            _ => false,
        };
    }

    /// The answer to early data (0-RTT) began with the server's ServerHello flight, and `pkt`
    /// is the response's first segment after it: the response starts here (its first byte,
    /// bytes and opening flights), not at the flight (`super::tls`).
    #[cold]
    fn response_after_flight(&mut self, pkt: Pkt) {
        let seg = self.follows_flights().then(|| self.flight_ctx());
        let rel = self.dirs[self.server].ts.last();
        if let Some(x) = self.cur.as_mut() {
            x.flights = Default::default();
            if let Some(seg) = seg {
                x.flights.on_segment(pkt, &seg);
            }
            x.first_resp = Some(pkt);
            x.first_resp_ts = rel;
            x.last_resp_ts = rel;
            x.last_resp = pkt;
            x.resp_bytes = u64::from(pkt.len);
            x.body_wait_ns = 0;
        }
    }

    /// The server acknowledged more than a FIN's worth of client data the capture never saw,
    /// past what it had acknowledged when its answer in progress began: the client sent a
    /// request in between (the mirror of [`Conn::answer_unseen`]). Client bytes missed
    /// before the answer began (a request's uncaptured tail) are under `resp_ack` and do not
    /// count: that answer is still the request's.
    fn request_unseen(&self) -> bool {
        let cli = &self.dirs[1 - self.server];
        match (cli.acked, cli.seen_nxt, self.resp_ack) {
            (Some(a), Some(s), Some(r)) => {
                super::flow::seq_gt(a, s.wrapping_add(1)) && super::flow::seq_gt(a, r)
            }
            _ => false,
        }
    }

    /// The client acknowledged server data the capture never saw (a capture gap).
    fn answer_unseen(&self) -> bool {
        let srv = &self.dirs[self.server];
        match (srv.acked, srv.seen_nxt) {
            (Some(a), Some(s)) => super::flow::seq_gt(a, s),
            // No server data captured: past the SYN/ACK, when it was seen.
            (Some(a), None) => srv.syn_seen && super::flow::seq_gt(a, srv.isn.wrapping_add(1)),
            (None, _) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_request_header_asks_about_its_connection() {
        use ClientAsked as A;
        let ask = |p: &[u8]| client_asked(p, false);
        assert_eq!(ask(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"), A::KeepAlive);
        assert_eq!(
            ask(b"GET / HTTP/1.1\r\nconnection: Close\r\n\r\n"),
            A::Close
        );
        assert_eq!(ask(b"GET / HTTP/1.0\r\nHost: a\r\n\r\n"), A::Http10);
        assert_eq!(
            ask(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"),
            A::KeepAlive
        );
        assert_eq!(
            ask(b"GET / HTTP/1.1\r\nConnection: TE, close\r\n\r\n"),
            A::Close
        );
        // A `Connection:` line inside the body is not the header's.
        assert_eq!(
            ask(b"POST / HTTP/1.1\r\nHost: a\r\n\r\nConnection: close\r\n"),
            A::KeepAlive
        );
        // Cut by the snap length before the header said; a partial last line says nothing.
        let cut = b"GET / HTTP/1.1\r\nHost: a\r\nConnec";
        assert_eq!(client_asked(cut, true), A::Cut);
        assert_eq!(client_asked(cut, false), A::Unknown);
        assert_eq!(
            client_asked(b"GET / HTTP/1.1\r\nConnection: close\r\nHo", true),
            A::Close
        );
        assert_eq!(client_asked(b"GET / HT", true), A::Cut);
    }

    /// A server clock ticking 1 ms per ms, every packet on time, spanning a second.
    fn clock() -> TsClock {
        let mut c = TsClock::default();
        for k in 0..10u32 {
            c.note(Some(1000 + 100 * k), i64::from(k) * 100 * MS);
        }
        c
    }

    #[test]
    fn a_pause_the_servers_clock_confirms_is_its_own() {
        let c = clock();
        // 50 ms apart, stamped 50 ticks apart, the client's last packet 49 ms before.
        let prev = (1000 * MS, Some(1000));
        assert_eq!(
            paced_ns(prev, (1050 * MS, Some(1050)), 1001 * MS, 0, &c),
            50 * MS
        );
        // Released by the client's packet right before it (an ACK that opened a window).
        assert_eq!(
            paced_ns(prev, (1050 * MS, Some(1050)), 1049 * MS + MS / 2, 0, &c),
            0
        );
        // Stamped together, arrived apart: a shaper or a slow link spread them.
        assert_eq!(paced_ns(prev, (1050 * MS, Some(1001)), 1001 * MS, 0, &c), 0);
        // Stamped 50 ticks apart but arriving 30 ms late (queued behind a bottleneck, the ACK
        // clock spacing departures like arrivals).
        assert_eq!(
            paced_ns(
                (1030 * MS, Some(1000)),
                (1080 * MS, Some(1050)),
                1031 * MS,
                0,
                &c
            ),
            0
        );
        // Shorter than 2 ms, or no timestamps: nothing.
        assert_eq!(paced_ns(prev, (1001 * MS, Some(1001)), 0, 0, &c), 0);
        assert_eq!(paced_ns((1000 * MS, None), (1050 * MS, None), 0, 0, &c), 0);
        // A clock not yet trusted (too few packets) says nothing.
        assert_eq!(
            paced_ns(prev, (1050 * MS, Some(1050)), 0, 0, &TsClock::default()),
            0
        );
    }
}

//! Typed events: what the per-connection trackers saw, raised once per episode, exchange or
//! connection (never per packet), plus the observations from outside the packets. Detectors
//! ([`crate::detect::Detector`]) consume them and emit findings.
//!
//! The per-packet path ([`crate::analyze`]) is statically dispatched: the trackers of each
//! direction ([`crate::track`]) are plain structs updated in place; only what they conclude
//! becomes an [`Event`], handed to every registered detector in turn.

use std::net::SocketAddr;

pub use crate::analyze::h2::{FlowWait, H2Done, H2Settings, HolEpisode};
use crate::breakdown::{CAUSES, ExchangeParts, cause_index};
use crate::decode::TcpFlags;
use crate::finding::{FindingId, PacketRef};
use crate::observation::Observation;
pub use crate::track::loss::Episode;
pub use crate::track::nagle::{Stall, StallKind};
pub use crate::track::syn::SynState;
pub use crate::track::zero::ZeroPeriod;

/// A packet remembered for evidence. `Copy`: strings are only built for the findings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pkt {
    /// Frame number in the capture (1-based).
    pub frame: u64,
    /// Capture timestamp, ns since the Unix epoch.
    pub ts_ns: i64,
    pub from_server: bool,
    pub flags: TcpFlags,
    /// Payload length.
    pub len: u32,
}

impl Pkt {
    /// Evidence form: time relative to `t0_ns` (the first packet of the capture) and absolute.
    pub fn to_ref(self, t0_ns: i64) -> PacketRef {
        PacketRef {
            frame: self.frame,
            time: (self.ts_ns - t0_ns) as f64 / 1e9,
            ts: self.ts_ns as f64 / 1e9,
            dir: if self.from_server { "S→C" } else { "C→S" }.to_string(),
            desc: format!("{} len={}", self.flags, self.len),
        }
    }
}

/// The two ends of a connection, as oriented by the analyzer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ends {
    pub client: SocketAddr,
    pub server: SocketAddr,
}

/// Why a TCP reset was sent, judged by when it came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetKind {
    /// Instead of a handshake: nothing listens (or a firewall rejects).
    Refused,
    /// A request was sent and its response was not complete.
    DuringExchange,
    /// The client reset while a response was arriving.
    ClientAbort,
    /// Right after a response that was complete by its `Content-Length`, with no request
    /// waiting: an abortive close (`SO_LINGER` 0, or a close with unread data) instead of a
    /// FIN. Nothing was in the middle; [`ResetContext::unacked`] tells whether the receiver
    /// had acknowledged the whole answer before it.
    AfterAnswer,
    /// Between exchanges.
    Idle,
    /// After its sender had closed its side (FIN): the peer's later segment (a keep-alive
    /// probe, data after the close) found no socket. The end of a closed connection.
    AfterClose,
    /// After the handshake, before any byte in either direction: a refusal or an abort at
    /// setup (accept-queue overflow with `tcp_abort_on_overflow`, a server that accepts and
    /// closes with `SO_LINGER` 0, a middlebox), not an idle timeout.
    Setup,
    /// After the handshake, before any byte, and after the *other* side's FIN: the peer
    /// closed a connection it never used (a losing Happy Eyeballs attempt, a connect timeout
    /// that fired during a slow handshake, a pre-connect pool) and the reset answers that
    /// close. No request failed.
    UnusedClosed,
    /// After the *other* side's FIN on a connection that carried exchanges, with no request
    /// in progress and 200 ms or more of silence before that FIN: the peer closed the idle
    /// connection first (its keep-alive timeout), and
    /// the reset ended what was left (its sender closed its socket with `SO_LINGER` 0 or
    /// unread bytes, or answered a segment after its own close). No request failed, and the
    /// sender of the reset did not time the connection out: the peer did.
    AfterPeerClose,
    /// Not sent by the host whose address it carries: its IP header differs from every other
    /// packet of that host on the connection ([`ResetContext::forged`]): a middlebox on the path
    /// injected it.
    Injected,
}

/// How a reset differs from every other packet its apparent sender sent on the connection
/// (their TTLs, hop limits and reserved bits): it came from somewhere else on the path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Forged {
    /// The reset's IP TTL (hop limit), and the range of the sender's other packets' (`others`
    /// packets, before and, for an ignored reset, after it).
    pub ttl: u8,
    pub ttl_lo: u8,
    pub ttl_hi: u8,
    pub others: u32,
    /// Reserved TCP header bits set on the reset, on none of the others.
    pub reserved: bool,
    /// The receiver could not accept it (in SYN-SENT it did not acknowledge the SYN) and the
    /// connection went on after it: it ended nothing.
    pub ignored: bool,
}

impl Forged {
    /// The reset's TTL is outside its sender's usual range.
    pub fn ttl_differs(&self) -> bool {
        self.ttl < self.ttl_lo || self.ttl > self.ttl_hi
    }
}

/// What preceded a reset on its connection, from the trackers: tells a reset after the
/// close, or after a long silence, from one in the middle of an exchange.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ResetContext {
    /// The connection's first FIN, when one was sent (by either side) before the reset.
    pub after_fin: Option<Pkt>,
    /// Time since the connection's previous packet other than a keep-alive probe (0 when the
    /// reset is its first).
    /// [`crate::track::flags::IDLE_RESET_NS`] or more is a reset after an idle period.
    pub idle_ns: i64,
    /// The reset's header differs from every other packet of its apparent sender on the
    /// connection: injected by a middlebox ([`ResetKind::Injected`]).
    pub forged: Option<Forged>,
    /// [`ResetKind::AfterAnswer`]: the reset came before the client had acknowledged the
    /// whole answer (a reset can overtake or discard its tail).
    pub unacked: bool,
    /// A request was waiting: the time from the connection's previous answer's last byte to
    /// that request (the client's reuse gap), when it reused the connection.
    pub reuse_gap_ns: Option<i64>,
    /// A reset during an answer whose end the capture cannot tell: it did not keep bytes the
    /// answer's framing needed (a snap length that cut a chunk-size line, missed data), so
    /// the answer may have been complete.
    pub answer_unseen: bool,
    /// [`ResetKind::AfterAnswer`]: the client had already sent its next request (pipelined
    /// with the answered one, or written right after the answer), and got no answer: lost.
    pub lost_request: bool,
    /// [`ResetKind::AfterAnswer`]: the time from the answer's last byte to the reset.
    pub answer_gap_ns: Option<i64>,
    /// [`ResetKind::AfterClose`] by the server that answered a request the client wrote after
    /// the server's FIN: the time from that FIN to the request (a pool that reused a
    /// connection the server was closing: that request failed).
    pub request_after_close_ns: Option<i64>,
}

impl ResetContext {
    /// The reset came after a FIN, or after [`crate::track::flags::IDLE_RESET_NS`] of silence.
    pub fn after_close_or_idle(&self) -> bool {
        self.after_fin.is_some() || self.idle_ns >= crate::track::flags::IDLE_RESET_NS
    }
}

/// A completed request/response exchange (HTTP/1.x or found from turns), or one cut by the
/// end of the capture after its first response byte (`cut`).
#[derive(Clone, Copy, Debug)]
pub struct ExchangeDone {
    pub ends: Ends,
    /// On a reused connection: the time from the previous answer's last byte to this
    /// request's first packet (the client's reuse gap).
    pub reuse_gap_ns: Option<i64>,
    pub first_req: Pkt,
    pub last_req: Pkt,
    pub first_resp: Pkt,
    pub last_resp: Pkt,
    /// Last response byte (or the last needed retransmission of it) − first request byte.
    pub latency_ns: i64,
    /// First response byte − last request byte − the capture point's round trip to the
    /// server (`leg_ns`; ≥ 0).
    pub server_time_ns: i64,
    /// The connection's handshake RTT, when captured.
    pub rtt_ns: Option<i64>,
    /// The round trip from the capture point to the server and back (SYN → SYN/ACK,
    /// `SynState::server_leg_ns`; else the handshake RTT): the network's part of the gap
    /// between request and answer at the capture point (the breakdown's network).
    pub leg_ns: Option<i64>,
    pub(crate) parts: ExchangeParts,
    /// The HTTP/1.x status code of the response, when it is one.
    pub status: Option<u16>,
    /// The server's first pure ACK of the whole request, when captured.
    pub req_ack: Option<Pkt>,
    /// The capture ended while the response was arriving: `last_resp` is the last byte
    /// captured, `latency_ns` a lower bound (not counted in latency figures).
    pub cut: bool,
    /// The response's bytes (new data; 0 when not counted: HTTP/2 streams).
    pub resp_bytes: u64,
    /// The smallest round trip seen while the response arrived, from the client's timestamps
    /// echoed by the server's data (`track::echo`): the path's round trip under load.
    pub echo_rtt_ns: Option<i64>,
    /// After the first response byte, the time the server kept the rest of its answer with
    /// nothing on the wire making it wait (`analyze::http::paced_ns`): a body written
    /// slowly. Server time, like `server_time_ns`, but after the first byte.
    pub body_wait_ns: i64,
    /// The response opened with a slow-start ramp from a small window that cost round trips
    /// against an initial window of 10 (`analyze::flights`; not on cut exchanges).
    pub slow_start: Option<crate::analyze::flights::SlowStart>,
}

impl ExchangeDone {
    /// An exchange without stalls (for detectors' tests and synthetic streams).
    pub fn new(ends: Ends, req: Pkt, resp: Pkt) -> Self {
        ExchangeDone {
            ends,
            first_req: req,
            last_req: req,
            first_resp: resp,
            last_resp: resp,
            latency_ns: resp.ts_ns - req.ts_ns,
            server_time_ns: (resp.ts_ns - req.ts_ns).max(0),
            rtt_ns: None,
            leg_ns: None,
            parts: ExchangeParts::default(),
            status: None,
            req_ack: None,
            cut: false,
            resp_bytes: 0,
            echo_rtt_ns: None,
            body_wait_ns: 0,
            reuse_gap_ns: None,
            slow_start: None,
        }
    }

    /// On a reused connection, the server's silence before this response: from the previous
    /// answer's last byte to this one's first (what Linux measures for slow start after idle,
    /// from its last data sent); 0 on a connection's first exchange.
    #[inline]
    pub fn sender_idle_ns(&self) -> i64 {
        self.reuse_gap_ns.map_or(0, |g| {
            g + (self.first_resp.ts_ns - self.first_req.ts_ns).max(0)
        })
    }

    /// The server's whole time: the wait for its first byte and the body it wrote slowly.
    #[inline]
    pub fn server_total_ns(&self) -> i64 {
        self.server_time_ns + self.body_wait_ns
    }

    /// Stall time charged to cause `id` during this exchange (ns, overlaps counted once).
    #[inline]
    pub fn stall_ns(&self, id: FindingId) -> i64 {
        cause_index(id).map_or(0, |k| self.parts.stalls[k])
    }

    /// Whether a stall of cause `id` hit this exchange on the given side (what "side" means
    /// is the cause's: whose data was held for Nagle/delayed-ACK stalls, who stopped reading
    /// for zero-window ones).
    #[inline]
    pub fn stalled(&self, id: FindingId, server_side: bool) -> bool {
        cause_index(id).is_some_and(|k| self.parts.sides[k] & side_bit(server_side) != 0)
    }

    /// Charges `ns` of stall to cause `id` on a side (synthetic streams).
    pub fn charge(&mut self, id: FindingId, server_side: bool, ns: i64) {
        if let Some(k) = cause_index(id) {
            self.parts.stalls[k] += ns;
            self.parts.sides[k] |= side_bit(server_side);
        }
    }
}

#[inline]
pub(crate) fn side_bit(server_side: bool) -> u8 {
    if server_side { 1 } else { 2 }
}

const _: () = assert!(CAUSES <= 8);

/// A connection's state was dropped (both FINs, RST, reuse, eviction or the end of the
/// capture), after its last exchange was finished.
#[derive(Clone, Copy, Debug)]
pub struct ConnDone {
    pub ends: Ends,
    pub syn: SynState,
    /// The first request's first packet.
    pub first_req: Option<Pkt>,
    /// Completed exchanges on the connection (requests: a TLS handshake's turns are not
    /// exchanges, they are counted in `tls`).
    pub exchanges: u32,
    /// The first FIN or RST on the connection: who closed first.
    pub first_close: Option<Pkt>,
    /// The silence before that first FIN/RST: its time minus the connection's previous
    /// packet other than a TCP keep-alive probe (how long it sat idle before it was closed:
    /// a server's idle timeout shows as one steady value).
    pub idle_before_close_ns: Option<i64>,
    /// What the connection's last HTTP/1.x request said about keeping the connection (read
    /// on its first three requests only: a longer connection's close is not per request).
    pub asked: ClientAsked,
    /// The TLS handshake's round trips (not among `exchanges`).
    pub tls: TlsSetup,
    /// The client's FIN was `first_close` at the capture point, but the server's FIN did not
    /// acknowledge it: the server had closed on its own before it arrived (a capture at the
    /// client sees a crossing close as the client's).
    pub crossed_fin: bool,
}

/// A connection's TLS handshake, read from its first turns (`analyze::tls`): a turn whose
/// client data opens with a plaintext TLS handshake record (`0x16 0x03 0x0?`: ClientHello, or
/// TLS 1.2's ClientKeyExchange) answered by a handshake or ChangeCipherSpec record
/// (`0x16`/`0x14`) carried no request, unless application data followed its handshake
/// records (TLS 1.3 early data, TLS 1.2 False Start). TLS 1.3's second flight and TLS 1.2's
/// resumed one open with ChangeCipherSpec or application data and carry the request: not
/// counted. Each handshake turn is an [`Event::TlsTurn`], never an exchange.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlsSetup {
    /// Completed handshake turns.
    pub turns: u8,
    /// From the first turn's start to the first request's (the turn after the handshake's),
    /// in µs; 0 until known (kept small: the event log copies every `ConnDone`).
    pub handshake_us: u32,
    /// The turn in progress opened with a handshake record, its answer not seen yet.
    pub(crate) asked: bool,
    /// The turn in progress was answered with a handshake record: a setup turn, counted when
    /// the next turn starts or the connection ends.
    pub(crate) answered: bool,
    /// The records of the handshake turn in progress are being walked (`analyze::tls`), and
    /// the next record header starts this many bytes into the turn's next segment.
    pub(crate) scan: bool,
    pub(crate) skip: u16,
    /// The turn in progress is TLS 1.3's client Finished alone (`analyze::tls`): setup
    /// whatever answers it (the server's session tickets), not a round trip of the handshake.
    pub(crate) finished: bool,
    /// What the hellos said (`analyze::tls`'s bits): of HTTP/2 (`ALPN_*`: the ClientHello
    /// offered `h2`, the ServerHello chose it, the choice was read or TLS 1.3 hid it), and
    /// whether the ClientHello carried early data (`EARLY_DATA`).
    pub(crate) hello: u8,
}

/// What a client's HTTP/1.x request said about keeping its connection, from the captured
/// header: who asked for the close after the answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientAsked {
    /// No HTTP/1.x request header seen (another protocol, TLS, no payload captured).
    #[default]
    Unknown,
    /// The capture's snap length cut the header before its end and before any `Connection:`
    /// line: what it asked is not in the capture.
    Cut,
    /// `Connection: close`.
    Close,
    /// HTTP/1.0 without `Connection: keep-alive` (closes after the answer by default).
    Http10,
    /// Keep-alive asked (HTTP/1.1 without `Connection: close`, HTTP/1.0 with keep-alive).
    KeepAlive,
}

/// Which kinds of [`Event`] a detector wants ([`crate::detect::Detector::interests`]): the
/// analyzer hands each event only to the detectors that asked for its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interests(u16);

impl Interests {
    pub const STALL: Interests = Interests(1 << 0);
    pub const LOSS_EPISODE: Interests = Interests(1 << 1);
    pub const ZERO_WINDOW: Interests = Interests(1 << 2);
    pub const RESET: Interests = Interests(1 << 3);
    pub const EXCHANGE_DONE: Interests = Interests(1 << 4);
    pub const CONN_DONE: Interests = Interests(1 << 5);
    pub const OBSERVED: Interests = Interests(1 << 6);
    pub const EXCHANGE_CUT: Interests = Interests(1 << 7);
    pub const H2: Interests = Interests(1 << 8);
    pub const BULK: Interests = Interests(1 << 9);
    pub const TLS_TURN: Interests = Interests(1 << 10);
    pub const ALL: Interests = Interests(0x7ff);
    pub(crate) const KINDS: usize = 11;

    /// Both sets.
    pub const fn and(self, other: Interests) -> Interests {
        Interests(self.0 | other.0)
    }

    /// Whether events of kind index `kind` (see [`Event::kind`]) are wanted.
    pub(crate) fn wants(self, kind: usize) -> bool {
        self.0 & (1 << kind) != 0
    }
}

/// What detectors consume.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A sender's data waited for a late pure ACK from the peer (Nagle, a delayed ACK, or a
    /// window that only that ACK opened: see [`StallKind`]).
    Stall {
        ends: Ends,
        stall: Stall,
    },
    /// A loss episode ended (cumulative ACK past it, or the connection ended).
    LossEpisode {
        ends: Ends,
        episode: Episode,
    },
    /// An endpoint reopened its receive window after advertising zero (or a window below one
    /// MSS, `near_zero`), or the connection or capture ended first.
    ZeroWindow {
        ends: Ends,
        /// The endpoint that advertised the zero window is the server.
        reader_is_server: bool,
        period: ZeroPeriod,
        /// The window never reached zero but stayed below one MSS (the sender could not send
        /// a full segment): the smallest window advertised, bytes.
        near_zero: Option<u32>,
    },
    /// A reset, with the exchange packet before it when there was one.
    Reset {
        ends: Ends,
        kind: ResetKind,
        before: Option<Pkt>,
        rst: Pkt,
        /// The first packet of the request in progress, if any (how long it had waited).
        req: Option<Pkt>,
        /// After a FIN, after an idle period ([`ResetContext`]).
        context: ResetContext,
    },
    ExchangeDone(&'a ExchangeDone),
    /// A TLS handshake turn (ClientHello → ServerHello …; TLS 1.2's ClientKeyExchange →
    /// Finished), complete or cut: connection setup, not an exchange ([`TlsSetup`]). Its
    /// server time is the server's work on the handshake.
    TlsTurn(&'a ExchangeDone),
    /// An exchange cut by the end of the capture after its first response byte (`cut` set):
    /// its first-byte time and status are known, its latency and later stalls are not. Apart
    /// from [`Event::ExchangeDone`] so that shares of completed exchanges stay what they were.
    ExchangeCut(&'a ExchangeDone),
    ConnDone(&'a ConnDone),
    /// An HTTP/2 connection (cleartext, read frame by frame) ended: what its frames showed.
    H2 {
        ends: Ends,
        /// The connection's handshake RTT, when captured.
        rtt_ns: Option<i64>,
        done: &'a H2Done,
    },
    /// Something seen outside the packets.
    Observed(&'a Observation),
    /// A direction of a connection that carried a bulk transfer ended (the connection closed
    /// or the capture ended): in flight against the window, idle time, retransmissions.
    Bulk(&'a crate::analyze::bulk::BulkTransfer),
}

impl Event<'_> {
    /// The kind's index (the bit of [`Interests`]).
    #[inline]
    pub(crate) fn kind(&self) -> usize {
        match self {
            Event::Stall { .. } => 0,
            Event::LossEpisode { .. } => 1,
            Event::ZeroWindow { .. } => 2,
            Event::Reset { .. } => 3,
            Event::ExchangeDone(_) => 4,
            Event::ConnDone(_) => 5,
            Event::Observed(_) => 6,
            Event::ExchangeCut(_) => 7,
            Event::H2 { .. } => 8,
            Event::Bulk(_) => 9,
            Event::TlsTurn(_) => 10,
        }
    }
}

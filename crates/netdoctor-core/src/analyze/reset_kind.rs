//! Why a reset after the handshake came ([`reset_kind`]), from the trackers' context and the
//! exchange in progress (moved out of `hub`, which had reached 700 lines).

use super::conn::Conn;
use super::http::Phase;
use crate::event::{Pkt, ResetContext, ResetKind};
use crate::track::flags::IDLE_RESET_NS;

/// Every byte the server sent was acknowledged by the client.
pub(super) fn answer_acked(c: &Conn) -> bool {
    let d = &c.dirs[c.server];
    d.acked.is_some_and(|a| !super::flow::seq_gt(d.nxt, a))
}

/// The silence after a complete, acknowledged response from which a reset ended an idle
/// connection (the floor of `short_connections`' idle timeout,
/// [`crate::detect::short_connections::IDLE_MIN_MS`]).
pub const ANSWERED_IDLE_NS: i64 = 200_000_000;

/// Why a reset after the handshake came, from what the trackers saw before it
/// ([`ResetContext`]) and the exchange in progress:
/// - after its own sender's FIN (its socket is gone: the peer's late keep-alive probe or data
///   got the reset): the end of a closed connection ([`ResetKind::AfterClose`]);
/// - after [`IDLE_RESET_NS`] of silence with no request waiting and every response byte
///   acknowledged, or between exchanges: an idle connection ended ([`ResetKind::Idle`]);
///   so is one after [`ANSWERED_IDLE_NS`] of silence when the response was complete by its
///   framing (`super::framing`: `Content-Length`, the last chunk, no body for HEAD, 204 and
///   304) and acknowledged (a load balancer's 1 s idle timeout: nothing was in the middle).
///   A reset right after the answer (`SO_LINGER` 0 at close) is not idle (an abortive close,
///   below); a response short of its framing's end (a proxy timing out a stalled answer, a
///   crash) is cut, and one whose end the capture cannot tell is not called complete;
///   and so is the reset that answered a request sent after that much silence when the
///   reset acknowledges nothing (no ACK flag: the answer of a host that holds no state for
///   the connection any more, not an abortive close of a live socket): the client reused a
///   connection that had been dropped while idle, and that request failed;
/// - a reset (either side's) less than [`ANSWERED_IDLE_NS`] after a response complete by its
///   framing, on a connection that showed no pipelining across segments: an abortive close
///   after the answer ([`ResetKind::AfterAnswer`]: `SO_LINGER` 0 at close, or a close with
///   unread data); so is the server's reset that soon after a complete answer when the
///   client had already written its next request (the story tells that request as lost, as
///   one pipelined in the answered request's segment);
/// - otherwise, by the exchange's phase: during a request or its response, or the client
///   giving up on a response;
/// - and an idle one after the *other* side's FIN that ended [`ANSWERED_IDLE_NS`] or more of
///   silence: that side closed the idle connection first ([`ResetKind::AfterPeerClose`]).
pub(super) fn reset_kind(c: &Conn, rst: Pkt, cx: &ResetContext) -> ResetKind {
    let delivered = answer_acked(c);
    if cx
        .after_fin
        .is_some_and(|fin| fin.from_server == rst.from_server)
    {
        return ResetKind::AfterClose;
    }
    let answered = c.cur.is_some_and(|x| x.answered()) && cx.idle_ns >= ANSWERED_IDLE_NS;
    let idle = cx.idle_ns >= IDLE_RESET_NS || answered;
    let kind = match (c.phase, rst.from_server) {
        (Phase::Idle, _) => ResetKind::Idle,
        (Phase::Request, true)
            if !rst.flags.ack()
                && c.carried_turns()
                && c.cur.is_some_and(|x| x.idle_before_ns >= ANSWERED_IDLE_NS) =>
        {
            ResetKind::Idle
        }
        // The client wrote its next request right after a complete answer, and the server
        // reset soon after that answer: an abortive close that lost the request.
        (Phase::Request, true) if next_request_lost(c, rst) => ResetKind::AfterAnswer,
        (Phase::Response, _) if idle && delivered => ResetKind::Idle,
        // The turn in progress is TLS setup after an answered request (TLS 1.3's client
        // Finished after early data, answered by the server's close_notify: nginx resets as it
        // closes with that flight unread): no request was in progress.
        (Phase::Response, _) if c.exchanges > 0 && c.cur.is_some_and(|x| x.tls_setup) => {
            ResetKind::Idle
        }
        // Complete by its framing, no pipelined request possibly unread (one pipelined in
        // the answered request's segment is lost: told by the story): an abortive close
        // after the answer, not a failure in the middle of it.
        // (After a longer silence with the answer unacknowledged, the peer may be gone:
        // not told as an abortive close.)
        (Phase::Response, _) if !idle && c.cur.is_some_and(|x| x.answered()) && !c.ambiguous => {
            ResetKind::AfterAnswer
        }
        (Phase::Request, _) | (Phase::Response, true) => ResetKind::DuringExchange,
        (Phase::Response, false) => ResetKind::ClientAbort,
    };
    // Idle, after the other side's FIN (the same side's returned above) that ended 200 ms or
    // more of silence: that side closed the idle connection first.
    let closed_idle = c
        .idle_before_close_ns
        .is_some_and(|n| n >= ANSWERED_IDLE_NS);
    match cx.after_fin {
        Some(_) if kind == ResetKind::Idle && c.phase != Phase::Request && closed_idle => {
            ResetKind::AfterPeerClose
        }
        _ => kind,
    }
}

/// A server's reset less than [`ANSWERED_IDLE_NS`] after the connection's previous answer,
/// complete by its framing, while the request the client wrote after it waited unanswered.
fn next_request_lost(c: &Conn, rst: Pkt) -> bool {
    c.cur.is_some_and(|x| {
        x.prev_answered
            && x.first_resp.is_none()
            && x.reuse_gap_ns
                .is_some_and(|g| g + (rst.ts_ns - x.first_req.ts_ns) < ANSWERED_IDLE_NS)
    })
}

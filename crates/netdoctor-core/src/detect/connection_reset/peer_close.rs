//! The story of resets after the *other* side closed an idle connection first
//! ([`ResetKind::AfterPeerClose`](crate::event::ResetKind)).
//!
//! The last answer was complete, the connection sat idle, and one side closed it with a FIN:
//! its own keep-alive timeout. The other side acknowledged the FIN and later ended its half
//! with a reset instead of a FIN (a socket closed with `SO_LINGER` 0 or with unread bytes, a
//! process that exited). Told as plain idle resets, the story blamed the side that reset
//! ("close idle connections before the server") and timed the silence from the wrong packet
//! (`zeek-m57-long`: the server's FIN #222 came 2.90 s after the last answer, the client's
//! reset 1.35 s after that FIN). Info, on the side that closed: no request failed.

use super::KindAgg;
use crate::detect::short_connections::reuse::secs;
use crate::finding::Severity;
use crate::stats::Hist;

/// The evidence entry of these resets (the zh texts key on it).
pub const PEER_CLOSED_FIRST_EVIDENCE: &str = "closed_by_peer_first";

/// The time from the last answer to the closer's FIN, and from that FIN to the reset, over
/// the examples (ms): (idle before the FIN, FIN to reset), each a median.
pub(super) fn gaps(k: &KindAgg) -> (f64, f64) {
    let mut idle = Hist::new();
    let mut after = Hist::new();
    for e in &k.examples {
        if let Some(fin) = e.peer_fin {
            if let Some(b) = e.before {
                idle.record_ns((fin.ts_ns - b.ts_ns).max(0));
            }
            after.record_ns((e.rst.ts_ns - fin.ts_ns).max(0));
        }
    }
    let median = |h: &Hist| {
        if h.len() == 0 {
            0.0
        } else {
            h.quantile_ms(0.5)
        }
    };
    (median(&idle), median(&after))
}

/// The side that closed first, given the side `who` that reset.
pub(super) fn closer(who: &str) -> &'static str {
    if who == "server" { "client" } else { "server" }
}

/// The evidence note of `n` such resets by `who`.
pub(super) fn note(who: &str, n: u64, k: &KindAgg) -> String {
    let (idle, after) = gaps(k);
    format!(
        "{n} of {n} resets by the {who} came after the {} had closed the idle connection \
         (FIN {} after the last answer, median); the {who} reset {} after that FIN; no request \
         was in progress",
        closer(who),
        secs(idle),
        secs(after)
    )
}

/// The story of `n` resets by `who` after the other side's FIN: fraction, severity, summary,
/// explanation, fix.
pub(super) fn story(
    who: &str,
    n: u64,
    k: &KindAgg,
    connections: u64,
) -> (f64, Severity, String, String, String) {
    let closer = closer(who);
    let (idle, after) = gaps(k);
    let (idle, after) = (secs(idle), secs(after));
    (
        (n as f64 / connections.max(1) as f64).min(1.0),
        Severity::Info,
        format!(
            "The {closer} closed {n} idle connections first (FIN {idle} after the last answer, \
             median), and the {who} ended each with a reset {after} later: no request failed"
        ),
        format!(
            "Each connection's last answer was complete; the connection then sat idle and the \
             {closer} closed it with a FIN: most likely the {closer}'s own idle (keep-alive) \
             timeout; the {who} did not time the connection out. The {who} later ended its \
             side with a reset instead of a FIN (a socket closed with SO_LINGER 0 or with \
             unread bytes, or a process that exited). No request was in progress and none \
             failed: the reset only ended a connection the {closer} had already closed."
        ),
        format!(
            "Nothing to fix in the resets: the {closer} closed idle connections first, as a \
             keep-alive timeout does. If the {who} should reuse connections longer, raise the \
             {closer}'s keep-alive timeout (nginx `keepalive_timeout`, Apache \
             `KeepAliveTimeout`); if the resets clutter logs, make the {who} close with a FIN \
             (no SO_LINGER 0)."
        ),
    )
}

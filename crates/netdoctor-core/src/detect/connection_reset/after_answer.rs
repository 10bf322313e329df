//! The story of resets right after a complete answer
//! ([`ResetKind::AfterAnswer`](crate::event::ResetKind)).
//!
//! An answer complete by its `Content-Length`, no request waiting, then a reset instead of a
//! FIN: an abortive close (`SO_LINGER` 0, or a close with unread bytes in the socket). Nothing
//! was in the middle, so it is not "a reset during a request/response" (critical): no request
//! failed. The harm is narrower and is what sets the severity: a reset sent before the client
//! had acknowledged the whole answer can overtake its tail or make a stack that drops its
//! receive queue on a reset discard it (warning); acknowledged answers lost nothing (info).
//! A client that resets after reading the answer is its own side's story (info).
//!
//! A client that had already written its next request (pipelined in the answered request's
//! segment, or sent right after the answer, before the reset) gets no answer for it: that
//! request is lost, and the lost requests set the severity as failed requests do (critical
//! from 5 % of the requests). `idle-linger0-pipe` was told as "no request was lost" and
//! `idle-linger0-next` as a reset "in the middle" of a request the server never started.

use crate::finding::{Severity, Side};
use crate::stats::Hist;

/// The evidence entry that carries the measured gap (the zh texts key on it).
pub const AFTER_ANSWER_EVIDENCE: &str = "abortive_close";
/// The same, when the client's next request was lost to some of the resets.
pub const AFTER_ANSWER_LOST_EVIDENCE: &str = "abortive_close_lost";

/// The resets right after a complete answer.
#[derive(Default)]
pub(super) struct AfterAnswer {
    /// Sent before the client had acknowledged the whole answer.
    pub unacked: u64,
    /// With the client's next request written and unanswered (lost).
    pub lost: u64,
    /// Time from the answer's last byte to the reset.
    gap: Option<Hist>,
}

/// What the arm of the report needs: (fraction, severity, summary, explanation, fix).
pub(super) type Story = (f64, Severity, String, String, String);

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.2} ms")
    }
}

impl AfterAnswer {
    pub(super) fn record(&mut self, gap_ns: Option<i64>, unacked: bool, lost: bool) {
        self.unacked += u64::from(unacked);
        self.lost += u64::from(lost);
        if let Some(g) = gap_ns {
            self.gap.get_or_insert_with(Hist::new).record_ns(g.max(0));
        }
    }

    /// The median and 90th percentile gap (ms) from the answer's end to the reset.
    fn gap_ms(&self) -> Option<(f64, f64)> {
        let h = self.gap.as_ref()?;
        Some((h.quantile_ms(0.5), h.quantile_ms(0.9)))
    }

    /// The evidence note of the measured gap and what was acknowledged.
    pub(super) fn note(&self, who: &str, n: u64) -> String {
        let gap = self.gap_ms().map_or(String::new(), |(p50, p90)| {
            format!(
                " {} (median; 90th percentile {}) after the answer's last byte;",
                ms(p50),
                ms(p90)
            )
        });
        let waiting = match self.lost {
            0 => "no request was waiting on these connections".to_string(),
            l => format!(
                "on {l} of them the client had already sent its next request, which got no \
                 answer (lost)"
            ),
        };
        format!(
            "{n} resets by the {who}{gap} {} of them before the client had acknowledged the \
             whole answer; {waiting}",
            self.unacked
        )
    }

    /// The finding's parts for `n` resets by `who` right after a complete answer.
    pub(super) fn story(
        &self,
        who: &str,
        side: Side,
        n: u64,
        connections: u64,
        exchanges: u64,
    ) -> Story {
        let fraction = (n as f64 / connections.max(1) as f64).min(1.0);
        let gap = self
            .gap_ms()
            .map_or(String::new(), |(p50, _)| format!(" {} after", ms(p50)));
        if side == Side::Client {
            return (
                fraction,
                Severity::Info,
                format!(
                    "The client closed {n} connections with a reset{gap} a complete answer \
                     (an abortive close, not a failure): no request failed"
                ),
                "Each answer had arrived whole (by its framing) and no request was \
                 waiting; then the client ended the connection with a reset instead of a FIN. \
                 Clients do this when they close with SO_LINGER 0 (some HTTP clients and load \
                 generators, to leave no TIME_WAIT socket behind) or close a socket that still \
                 holds unread bytes. The server sees \"connection reset by peer\" errors that \
                 are not its fault; nothing was lost."
                    .to_string(),
                "Nothing to fix for the requests. To quiet the server's reset errors, let the \
                 client close with a FIN (no SO_LINGER 0) or keep its connections for reuse \
                 (keep-alive)."
                    .to_string(),
            );
        }
        let lost = self.lost.min(n);
        let (severity, harm) = if lost > 0 {
            let share = lost as f64 / (exchanges + lost).max(1) as f64;
            (
                if share >= 0.05 {
                    Severity::Critical
                } else {
                    Severity::Warning
                },
                format!(
                    "; on {lost} of them the client had already sent its next request, and \
                     that request was lost"
                ),
            )
        } else if self.unacked == 0 {
            (
                Severity::Info,
                "; every answer was complete and acknowledged before it, and no request was lost"
                    .to_string(),
            )
        } else {
            (
                Severity::Warning,
                format!(
                    "; {} came before the client had acknowledged the whole answer (its tail \
                     can be lost)",
                    self.unacked
                ),
            )
        };
        (
            fraction,
            severity,
            format!(
                "The {who} closed {n} connections with a reset{gap} a complete answer (an \
                 abortive close, SO_LINGER 0) instead of a FIN{harm}"
            ),
            format!(
                "Each answer was complete by its framing (Content-Length, the last chunk, or \
                 no body){}; then the {who} ended the connection with a reset instead of a FIN: \
                 an abortive close, not a failure in the middle of an exchange. A server does this \
                 when it closes its socket with SO_LINGER 0 (to leave no TIME_WAIT behind) or \
                 closes one that still holds unread bytes from the client; a proxy in front of \
                 it can do it in its name. What it risks: a reset that overtakes the answer's \
                 last segments (lost or reordered on the way), or reaches a client stack that \
                 drops unread data on a reset, turns a complete answer into an error; and a \
                 client that had already written its next request on the connection (pipelined, \
                 or a pool that reuses it at once) gets an error for that request. {}",
                if lost > 0 {
                    ""
                } else {
                    " and no next request was waiting"
                },
                if lost > 0 {
                    format!(
                        "Here on {lost} of {n} connections the client had already written its \
                         next request (pipelined with the answered one, or sent right after the \
                         answer) when the reset came: those requests got no answer and failed; \
                         a client that retries them may send them twice."
                    )
                } else if self.unacked == 0 {
                    "Here the client had acknowledged every answer before the reset: nothing \
                     was lost."
                        .to_string()
                } else {
                    format!(
                        "Here {} of {n} resets came before the client had acknowledged the \
                         whole answer.",
                        self.unacked
                    )
                }
            ),
            format!(
                "Let the {who} close with a FIN: drop SO_LINGER 0 from its sockets, or shut \
                 down the write side (shutdown(SHUT_WR)) and read until the client closes \
                 before close(). If it means to close after each answer, say so with \
                 `Connection: close` so the client never reuses the connection."
            ),
        )
    }
}

//! The story of requests written on a connection the server had already closed
//! ([`ResetKind::AfterClose`](crate::event::ResetKind) with
//! [`ResetContext::request_after_close_ns`](crate::event::ResetContext)).
//!
//! The server closes an idle keep-alive connection with a FIN; a client whose pool picks that
//! connection (it has not read the FIN yet, or never checks for it) writes its request there,
//! and the server's kernel, whose socket is gone, answers it with a reset. That request
//! failed: the client sees "connection reset by peer" (Python's `RemoteDisconnected`), and
//! only a client that retries idempotent requests on a new connection hides it. Written
//! within a few milliseconds of the FIN, it is the keep-alive race (the client reuses its
//! connections after about as long as the server keeps them); written later, a client that
//! does not notice the close. Either way the requests set the severity, as idle resets that
//! hit a request do ([`super::idle`]). A keep-alive probe or a late byte after the close stays
//! the plain end of a closed connection (info).

use crate::finding::Severity;
use crate::stats::Hist;

/// The evidence entry with the count and the FIN-to-request times (the zh texts key on it).
pub const REQUEST_AFTER_CLOSE_EVIDENCE: &str = "request_after_close";

/// A request written this soon after the server's FIN was racing it: the client could not
/// have read the FIN before it chose the connection.
const RACE_NS: i64 = 10_000_000;

/// Requests that got a reset because the server had closed their connection.
#[derive(Default)]
pub(super) struct AfterCloseRequests {
    /// How many, and the time from the server's FIN to each.
    pub failed: u64,
    gaps: Option<Hist>,
    raced: u64,
}

/// One story: fraction, severity, summary, explanation, fix.
pub(super) type Story = (f64, Severity, String, String, String);

impl AfterCloseRequests {
    pub fn record(&mut self, gap_ns: i64) {
        self.failed += 1;
        self.raced += u64::from(gap_ns < RACE_NS);
        self.gaps.get_or_insert_with(Hist::new).record_ns(gap_ns);
    }

    fn median_ms(&self) -> f64 {
        self.gaps.as_ref().map_or(0.0, |h| h.quantile_ms(0.5))
    }

    /// The evidence note of `n` resets after the server's FIN: how many answered a request
    /// (it starts "N of M", for the zh texts), and how long after the FIN those came.
    pub fn note(&self, n: u64) -> String {
        format!(
            "{} of {n} resets after the server's FIN answered a request written on the closed \
             connection, which failed; each request came {:.2} ms (median; longest {:.2} ms) \
             after the server's FIN, {} of them within {} ms of it",
            self.failed.min(n),
            self.median_ms(),
            self.gaps.as_ref().map_or(0.0, Hist::max_ms),
            self.raced,
            RACE_NS / 1_000_000
        )
    }

    /// The story of `n` server resets after its FIN, `self.failed` of them answering a request,
    /// against the `exchanges` that were answered.
    pub fn story(&self, n: u64, exchanges: u64) -> Story {
        let failed = self.failed.min(n);
        let share = (failed as f64 / (exchanges + failed).max(1) as f64).min(1.0);
        let severity = if share >= 0.05 {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let median = self.median_ms();
        let summary = format!(
            "The client sent {failed} requests on connections the server had already closed \
             (its FIN came {median:.2} ms before, median): the server reset them and those \
             requests failed ({:.0}% of requests)",
            share * 100.0
        );
        let when = if self.raced * 2 >= failed {
            "Most were written within a few milliseconds of the FIN: the client's pool picked \
             a connection just as the server was closing it, the keep-alive race. It happens \
             when the client reuses a connection after about as long as the server keeps an \
             idle one (its keep-alive timeout): the two idle timeouts race."
        } else {
            "They were written well after the FIN had arrived: the client does not notice a \
             closed connection (it does not check a pooled connection for the server's FIN, \
             end of stream, before it reuses it)."
        };
        let mut explanation = format!(
            "The server closed these connections with a FIN, and the client then wrote a new \
             request on them. The server's socket was gone, so its kernel answered the request \
             with a reset: the request got no answer. The client sees an error (\"connection \
             reset by peer\", Python's RemoteDisconnected, Go's \"server closed idle \
             connection\"); only a client that retries idempotent requests on a new \
             connection hides it, at the cost of a new handshake. {when}"
        );
        if n > failed {
            explanation.push_str(&format!(
                " The other {} resets answered something else sent after the close (a TCP \
                 keep-alive probe, a late byte): the end of a closed connection.",
                n - failed
            ));
        }
        let fix = "Make the client drop idle connections before the server does: its pool's \
                   idle timeout (Go `IdleConnTimeout`, OkHttp `keepAliveDuration`, Apache \
                   HttpClient `evictIdleConnections`) below the server's keep-alive timeout \
                   (nginx `keepalive_timeout`, a load balancer's idle timeout), or raise the \
                   server's above the client's; and retry idempotent requests that fail on a \
                   reused connection."
            .to_string();
        (share, severity, summary, explanation, fix)
    }
}

//! The story of resets of idle connections ([`ResetKind::Idle`](crate::event::ResetKind)).
//!
//! A load balancer, NAT or firewall (or the server itself) that drops a connection after a
//! fixed time of silence sends its reset after a complete, acknowledged answer: nothing was in
//! the middle, and the reset alone fails no request. The steady silence before the resets is
//! the timer's value (the same clustering rule as `short_connections`' idle timeout); a
//! silence that varies is no timer and is told as plain resets of idle connections. What
//! clients suffer is a request on a connection that was already dropped: the host without
//! state for it answers that request with a reset that acknowledges nothing. Those are
//! counted (`failed`) and set the severity; without them the finding is info.

use crate::detect::short_connections::reuse::{Gaps, ReuseGaps, secs};
use crate::finding::{Severity, Side};
use crate::stats::Hist;

/// The evidence entry that carries the measured silence (the zh texts key on it).
pub const IDLE_RESET_EVIDENCE: &str = "idle_reset";
/// Resets after one clustered silence from which it is told as a timer.
const MIN_STEADY: u64 = 5;

/// The resets of idle connections.
#[derive(Default)]
pub(super) struct IdleResets {
    /// The silence before each reset that came with no request waiting.
    silence: Option<Hist>,
    /// Resets that answered a request sent on a connection dropped while idle.
    pub failed: u64,
    /// The reuse gaps of the requests that hit a dropped connection (those of the window's
    /// complete exchanges come from `Context::reuse_gaps`).
    pub reuse: ReuseGaps,
    /// Both, set when the window ends.
    pub gaps: Option<Gaps>,
}

/// The steady silence: 10th, 50th, 90th percentile (ms) and the count.
#[derive(Clone, Copy)]
pub(super) struct Steady {
    pub n: u64,
    pub p10_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
}

/// What the idle arm of the report needs: (fraction, severity, side, summary, explanation,
/// fix).
pub(super) type Story = (f64, Severity, Side, String, String, String);

impl IdleResets {
    pub(super) fn record(&mut self, silence_ns: i64, hit_request: bool) {
        if hit_request {
            self.failed += 1;
        } else {
            self.silence
                .get_or_insert_with(Hist::new)
                .record_ns(silence_ns);
        }
    }

    /// The silence before the resets, when it is one timer's.
    pub(super) fn steady(&self) -> Option<Steady> {
        let h = self.silence.as_ref()?;
        let s = Steady {
            n: h.len(),
            p10_ms: h.quantile_ms(0.1),
            p50_ms: h.quantile_ms(0.5),
            p90_ms: h.quantile_ms(0.9),
        };
        (s.n >= MIN_STEADY
            && crate::detect::short_connections::steady(s.p10_ms, s.p50_ms, s.p90_ms))
        .then_some(s)
    }

    /// The 10th and 90th percentile silence (ms) when there were enough to judge and they
    /// were not one timer's.
    fn varying(&self) -> Option<(f64, f64)> {
        let h = self.silence.as_ref()?;
        (h.len() >= MIN_STEADY && self.steady().is_none())
            .then(|| (h.quantile_ms(0.1), h.quantile_ms(0.9)))
    }

    /// The evidence note of the measured silence.
    pub(super) fn note(&self, s: &Steady) -> String {
        format!(
            "{} resets came after {} of silence (median; 10th–90th percentile {}–{}) that \
             followed an acknowledged answer; {} requests sent on a connection already dropped \
             got a reset; {}",
            s.n,
            secs(s.p50_ms),
            secs(s.p10_ms),
            secs(s.p90_ms),
            self.failed,
            self.gaps.map_or_else(
                || "no connection was reused, so the client's reuse gap is not in the capture"
                    .to_string(),
                |g| g.note()
            )
        )
    }

    /// The finding's parts for `n` resets of idle connections by `who`.
    pub(super) fn story(
        &self,
        who: &str,
        side: Side,
        n: u64,
        exchanges: u64,
        connections: u64,
    ) -> Story {
        let failed = self.failed;
        // The share of requests that failed on a dropped connection.
        let failed_share = (failed as f64 / (exchanges + failed).max(1) as f64).min(1.0);
        let severity = match failed_share {
            _ if failed == 0 => Severity::Info,
            f if f >= 0.05 => Severity::Critical,
            _ => Severity::Warning,
        };
        let harm = if failed == 0 {
            "; no request was in progress and none got a reset in this capture".to_string()
        } else {
            format!(
                "; {failed} requests sent on a connection that had already been dropped got a \
                 reset instead of an answer"
            )
        };
        let harm_why = if failed == 0 {
            " No request failed here: none was sent on a connection after its reset. A \
             pooled client that picks such a connection at the wrong moment \
             gets an error on its next request (and must retry it)."
                .to_string()
        } else {
            format!(
                " {failed} requests were sent on a connection after it had been dropped, and \
                 the reset that answered them acknowledged nothing (a host that no longer holds \
                 the connection's state): those requests failed, a pooled client's error on its \
                 next request."
            )
        };
        let fraction = if failed > 0 {
            failed_share
        } else {
            (n as f64 / connections.max(1) as f64).min(1.0)
        };
        // The client's wait, measured: when it reused connections.
        let gaps = self.gaps;
        let (wait, now) = gaps.map_or((String::new(), String::new()), |g| {
            (
                format!(
                    " The client reused connections {} after an answer's last byte",
                    g.text()
                ),
                format!(" (the client now reuses after up to {})", secs(g.max_ms)),
            )
        });
        match self.steady().filter(|_| side == Side::Server) {
            Some(s) => {
                let x = secs(s.p50_ms);
                let wait = match gaps {
                    Some(_) => format!("{wait}, against the {x} timer."),
                    None => String::new(),
                };
                (
                    fraction,
                    severity,
                    Side::Network,
                    format!(
                        "The server's side reset {n} idle connections, each after {x} of \
                         silence (10th–90th percentile {}–{}) that followed a complete, \
                         acknowledged answer: an idle timeout, most likely of a load balancer, \
                         NAT or firewall in front of the server{harm}",
                        secs(s.p10_ms),
                        secs(s.p90_ms)
                    ),
                    format!(
                        "Each answer was complete and acknowledged, then the connection was \
                         silent for {x} (steady: 10th–90th percentile {}–{} over {} resets), \
                         then a reset came from the server's side: a timer that drops idle \
                         connections, not a failure in the middle of an exchange. A reset with \
                         the server's address comes from whatever holds the connection there: \
                         a load balancer, NAT or firewall with an idle timeout, or the server \
                         itself closing idle connections with SO_LINGER 0; the packets alone \
                         do not tell which (nothing in their headers differs from the \
                         server's).{harm_why}{wait}",
                        secs(s.p10_ms),
                        secs(s.p90_ms),
                        s.n
                    ),
                    format!(
                        "Make the client drop idle connections before they are reset: a pool \
                         idle timeout below {x}{now} (Go `IdleConnTimeout`, OkHttp \
                         `keepAliveDuration`, Apache HttpClient `evictIdleConnections`), or \
                         raise the idle timeout of the load balancer, NAT or firewall (or the \
                         server's) above the client's; let the client retry idempotent requests \
                         that fail on a reused connection."
                    ),
                )
            }
            None => (
                fraction,
                severity,
                side,
                format!("The {who} reset {n} idle connections between requests{harm}"),
                format!(
                    "A connection with no request in progress was reset by the {who}{}. \
                     {}{harm_why}{}",
                    self.varying().map_or(String::new(), |(lo, hi)| format!(
                        ", after silences that were not one steady value (10th–90th \
                         percentile {}–{}: no single idle timer)",
                        secs(lo),
                        secs(hi)
                    )),
                    if side == Side::Server {
                        "Proxies and NAT devices reset idle connections after their timeout; \
                         servers when they close idle connections with SO_LINGER 0."
                    } else {
                        "Clients do this when they close pooled connections with SO_LINGER 0 \
                         or exit with connections open (a middlebox's idle timeout can reset \
                         in the client's name too)."
                    },
                    if wait.is_empty() {
                        String::new()
                    } else {
                        format!("{wait}.")
                    }
                ),
                format!(
                    "Align idle timeouts: the client should close idle keep-alive connections \
                     before the server or a middlebox drops them{now}, and retry idempotent \
                     requests that fail on a reused connection."
                ),
            ),
        }
    }
}

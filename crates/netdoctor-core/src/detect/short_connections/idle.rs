//! The server's idle (keep-alive) timeout, told apart from a server that closes after each
//! response. Both send the first FIN, so "who closed" alone blamed the wrong knob: a client
//! that reuses its connections after a few seconds of idle (a pool, an open-loop load spread
//! over many connections) against nginx's `keepalive_timeout 1s` gets a new connection per
//! request, and the server's FIN comes a steady 1 s after the last packet, not right after the
//! answer. What tells them apart is the silence before each server FIN: one value, the same
//! on every connection (its median at least [`IDLE_MIN_MS`], the 10th–90th percentile spread
//! within [`SPREAD_MAX`] of it or [`SPREAD_FLOOR_MS`]), is a timer; a close after each
//! answer (`Connection: close`, `keepalive_timeout 0`) follows the response within
//! milliseconds. A closed-loop keep-alive probe never idles, so it does not contradict it.
//! Resets instead of FINs after that steady silence are an idle timeout too, often a load
//! balancer's, NAT's or firewall's rather than the server's own.

use super::reuse::{Gaps, secs};
use crate::stats::Hist;

/// The median silence before the server's FIN from which it is a timer, not a close after
/// the answer.
pub const IDLE_MIN_MS: f64 = 200.0;
/// The largest 10th–90th percentile spread of those silences, relative to their median
/// (or [`SPREAD_FLOOR_MS`], whichever is larger), for one steady timeout.
pub const SPREAD_MAX: f64 = 0.1;
pub const SPREAD_FLOOR_MS: f64 = 50.0;
/// The name of the evidence entry that carries the measured timeout (the zh text keys on it).
pub const IDLE_EVIDENCE: &str = "idle_timeout";

/// The silences before the server's first FIN/RST, over the connections it closed.
#[derive(Default)]
pub(super) struct IdleCloses {
    hist: Option<Hist>,
    resets: u64,
}

/// A steady idle time before the server's closes.
#[derive(Clone, Copy, Debug)]
pub(super) struct IdleTimeout {
    pub n: u64,
    pub resets: u64,
    pub p10_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
}

impl IdleCloses {
    pub(super) fn record(&mut self, idle_ns: i64, rst: bool) {
        self.hist.get_or_insert_with(Hist::new).record_ns(idle_ns);
        self.resets += u64::from(rst);
    }

    /// The steady timeout, when at least `min` server closes came after one clustered
    /// silence.
    pub(super) fn timeout(&self, min: u64) -> Option<IdleTimeout> {
        let h = self.hist.as_ref()?;
        let t = IdleTimeout {
            n: h.len(),
            resets: self.resets,
            p10_ms: h.quantile_ms(0.1),
            p50_ms: h.quantile_ms(0.5),
            p90_ms: h.quantile_ms(0.9),
        };
        (t.n >= min && steady(t.p10_ms, t.p50_ms, t.p90_ms)).then_some(t)
    }
}

/// Silences before closes (10th, 50th, 90th percentile, ms) that are one timer's: long
/// enough ([`IDLE_MIN_MS`]) and clustered ([`SPREAD_MAX`], [`SPREAD_FLOOR_MS`]).
pub(crate) fn steady(p10_ms: f64, p50_ms: f64, p90_ms: f64) -> bool {
    p50_ms >= IDLE_MIN_MS && p90_ms - p10_ms <= (SPREAD_MAX * p50_ms).max(SPREAD_FLOOR_MS)
}

impl IdleTimeout {
    fn resets_most(&self) -> bool {
        self.resets * 2 > self.n
    }

    /// Who closes: the server, or (resets) whatever sits in front of it too.
    fn closer(&self) -> &'static str {
        if self.resets_most() {
            "the server's side reset"
        } else {
            "the server closed"
        }
    }

    /// The summary's clause on who closed.
    pub(super) fn summary(&self, closed_by_server: u64) -> String {
        format!(
            "; {} {closed_by_server} of them first, each after {} idle (10th–90th percentile \
             {}–{}): an idle (keep-alive) timeout shorter than the client's wait before it \
             reused a connection, so the client opened new ones",
            self.closer(),
            secs(self.p50_ms),
            secs(self.p10_ms),
            secs(self.p90_ms)
        )
    }

    /// The explanation's sentences on it; `probe` is the closed-loop keep-alive probe's
    /// (requests, connections) when it kept connections.
    /// `gaps`: the client's measured reuse gaps.
    pub(super) fn explanation(
        &self,
        conns: u64,
        gaps: Option<Gaps>,
        probe: Option<(u32, u32)>,
    ) -> String {
        let by = if self.resets_most() {
            format!(
                "The server's side reset (RST, not FIN) {} of {conns} connections, each after the \
                 connection had been idle for {} (median; 10th–90th percentile {}–{}): that \
                 steady value is an idle timeout, of the server or of a load balancer, NAT or \
                 firewall in front of it that drops idle connections with a reset",
                self.n,
                secs(self.p50_ms),
                secs(self.p10_ms),
                secs(self.p90_ms)
            )
        } else {
            format!(
                "The server sent the first FIN on {} of {conns} connections, each after the \
                 connection had been idle for {} (median; 10th–90th percentile {}–{}): that \
                 steady value is the server's idle (keep-alive) timeout (nginx \
                 `keepalive_timeout`)",
                self.n,
                secs(self.p50_ms),
                secs(self.p10_ms),
                secs(self.p90_ms)
            )
        };
        let wait = match gaps {
            Some(g) => format!(
                "The client reused the connections it did reuse {} after an answer's last byte; \
                 those it came back to after more than {} had been closed, so those requests \
                 paid for a new connection",
                g.text(),
                secs(self.p50_ms)
            ),
            None => "The client waited longer than that before it reused a connection (no \
                     connection was reused in the capture to time that wait: each was closed \
                     before the client came back), so each request found its connection closed \
                     and paid for a new one"
                .to_string(),
        };
        format!(
            " {by}, not a close after each response (that follows the answer within \
             milliseconds). {wait}: neither side alone is wrong, the two idle settings do not \
             fit.{}",
            probe.map_or(String::new(), |(requests, connections)| format!(
                " A short keep-alive probe afterwards, which never leaves a connection idle, got \
                 {requests} requests answered on {connections} connections: consistent with an \
                 idle timeout, not with a server that refuses keep-alive."
            ))
        )
    }

    pub(super) fn fix(&self) -> String {
        let x = secs(self.p50_ms);
        let server = if self.resets_most() {
            format!(
                "raise the idle timeout of whatever resets the connections (a load balancer's \
                 idle timeout, a NAT or firewall's TCP idle timeout; the server's own: nginx \
                 `keepalive_timeout`, now about {x})"
            )
        } else {
            format!(
                "raise the server's idle timeout (nginx `keepalive_timeout`, now about {x}; \
                 Apache `KeepAliveTimeout`; a proxy's upstream idle timeout)"
            )
        };
        format!(
            "Make the two idle settings fit: {server} above the longest gap after which the \
             client reuses a connection, or lower the client's pool idle timeout below {x} \
             (e.g. Go `IdleConnTimeout`, Java/OkHttp `keepAliveDuration`, a fixed pool sized to \
             the request rate) so it drops a connection before the server does and never \
             picks one that is being closed."
        )
    }

    /// The evidence entry: the measured timeout.
    pub(super) fn note(&self, gaps: Option<Gaps>) -> String {
        format!(
            "{} first closes by the server's side ({} of them resets) came after {} idle \
             (median; 10th–90th percentile {}–{}); silence measured from the connection's \
             previous packet (TCP keep-alive probes aside); {}",
            self.n,
            self.resets,
            secs(self.p50_ms),
            secs(self.p10_ms),
            secs(self.p90_ms),
            gaps.map_or_else(
                || "no connection was reused, so the client's reuse gap is not in the capture"
                    .to_string(),
                |g| g.note()
            )
        )
    }
}

//! The client's reuse gap: on a connection it reused, the time from an answer's last byte to
//! its next request. The idle stories compare the server's (or a middlebox's) idle timeout
//! with how long the client waits before it reuses a connection; this is that wait, measured,
//! so the fix has two numbers to compare. Requests sent on a connection already dropped while
//! idle count too (their gap is the one that lost). A client that never reused a connection
//! (the server closed each one first) leaves nothing to measure, and the texts say so.
//!
//! The gaps of complete exchanges are recorded once per exchange by the window's aggregates
//! and handed to both detectors that tell them (`Context::reuse_gaps`): each recorded every
//! gap into its own histogram before (+58 M instructions of 3,125 M on the bench capture).
//! `connection_reset` adds the gaps of the requests that hit a dropped connection
//! ([`ReuseGaps::with`]).

use crate::stats::Hist;

/// Reuse gaps from which the percentiles are told.
const MIN_GAPS: u64 = 3;

/// Reuse gaps a detector saw itself (beyond the window's).
#[derive(Default)]
pub(crate) struct ReuseGaps {
    hist: Option<Hist>,
}

/// The measured gaps: count, 50th and 90th percentile, largest (ms).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gaps {
    pub n: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub max_ms: f64,
}

/// A duration of `ms` milliseconds in seconds, as the idle stories write it: "1.50 s".
pub(crate) fn secs(ms: f64) -> String {
    format!("{:.2} s", ms / 1000.0)
}

impl ReuseGaps {
    pub(crate) fn record(&mut self, gap_ns: i64) {
        self.hist.get_or_insert_with(Hist::new).record_ns(gap_ns);
    }

    /// The gaps of the window's exchanges (`shared`) with these.
    pub(crate) fn with(&self, shared: Option<&Hist>) -> Option<Gaps> {
        match (shared, &self.hist) {
            (Some(s), Some(own)) => {
                let mut all = s.clone();
                all.add(own);
                gaps(Some(&all))
            }
            (s, own) => gaps(s.or(own.as_ref())),
        }
    }
}

/// The told figures of the gaps in `h`, when there are enough of them.
pub(crate) fn gaps(h: Option<&Hist>) -> Option<Gaps> {
    let h = h?;
    (h.len() >= MIN_GAPS).then(|| Gaps {
        n: h.len(),
        p50_ms: h.quantile_ms(0.5),
        p90_ms: h.quantile_ms(0.9),
        max_ms: h.quantile_ms(1.0),
    })
}

impl Gaps {
    /// "1.50 s (median; 90th percentile 1.50 s, largest 1.51 s, over 12 reuses)".
    pub(crate) fn text(&self) -> String {
        format!(
            "{} (median; 90th percentile {}, largest {}, over {} reuses)",
            secs(self.p50_ms),
            secs(self.p90_ms),
            secs(self.max_ms),
            self.n
        )
    }

    /// The evidence clause: the client's gap next to the idle timeout.
    pub(crate) fn note(&self) -> String {
        format!(
            "the client reused a connection {} after an answer's last byte",
            self.text()
        )
    }
}

//! The SYN probe's data: its settings, how the round trips were measured, the result, and the
//! per-probe outcome both methods (the raw socket in `raw`, `connect()` in `syn`) produce. Kept
//! apart from both so `raw` and `syn` do not import each other.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Settings of a SYN RTT measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynProbeConfig {
    /// Number of probes (default 5).
    pub count: u32,
    /// How long to wait for each answer (default 1 s).
    pub timeout: Duration,
    /// Pause between probes (default 20 ms).
    pub interval: Duration,
}

impl Default for SynProbeConfig {
    fn default() -> Self {
        SynProbeConfig {
            count: 5,
            timeout: Duration::from_secs(1),
            interval: Duration::from_millis(20),
        }
    }
}

/// How the round trips were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SynMethod {
    /// Hand-built SYN on a raw socket, SYN/ACK matched on the same socket (needs CAP_NET_RAW).
    RawSyn,
    /// Non-blocking `connect()`, time until writable.
    Connect,
}

/// The result of a SYN RTT measurement. `sent == answered + refused + lost`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynProbe {
    /// How the probes were made.
    pub method: SynMethod,
    /// Why the raw-socket method was not used, when it was not.
    pub fallback_reason: Option<String>,
    /// Probes sent.
    pub sent: u32,
    /// Probes answered with SYN/ACK (connect succeeded).
    pub answered: u32,
    /// Probes answered with RST: nothing listens on the port.
    pub refused: u32,
    /// Probes without an answer within the timeout (or that could not be sent).
    pub lost: u32,
    /// One round-trip time per answered probe, in milliseconds, in probe order.
    pub rtt_ms: Vec<f64>,
    /// Smallest of `rtt_ms`.
    pub min_ms: Option<f64>,
    /// Median of `rtt_ms` (mean of the two middle values for an even count).
    pub median_ms: Option<f64>,
    /// Largest of `rtt_ms`.
    pub max_ms: Option<f64>,
}

/// What one probe found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Outcome {
    Answered(Duration),
    Refused,
    Lost,
}

impl SynProbe {
    /// Builds the result from per-probe outcomes.
    pub(crate) fn from_outcomes(method: SynMethod, outcomes: &[Outcome]) -> SynProbe {
        let mut p = SynProbe {
            method,
            fallback_reason: None,
            sent: outcomes.len() as u32,
            answered: 0,
            refused: 0,
            lost: 0,
            rtt_ms: Vec::new(),
            min_ms: None,
            median_ms: None,
            max_ms: None,
        };
        for o in outcomes {
            match o {
                Outcome::Answered(d) => {
                    p.answered += 1;
                    p.rtt_ms.push(d.as_secs_f64() * 1e3);
                }
                Outcome::Refused => p.refused += 1,
                Outcome::Lost => p.lost += 1,
            }
        }
        let mut sorted = p.rtt_ms.clone();
        sorted.sort_by(f64::total_cmp);
        p.min_ms = sorted.first().copied();
        p.max_ms = sorted.last().copied();
        p.median_ms = match sorted.len() {
            0 => None,
            n if n % 2 == 1 => Some(sorted[n / 2]),
            n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
        };
        p
    }
}

/// The shortest wait we ever pass to the kernel: a zero timeout means "forever" to SO_RCVTIMEO.
pub(crate) const MIN_WAIT: Duration = Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_from_outcomes() {
        let ms = Duration::from_millis;
        let p = SynProbe::from_outcomes(
            SynMethod::RawSyn,
            &[
                Outcome::Answered(ms(3)),
                Outcome::Lost,
                Outcome::Answered(ms(1)),
                Outcome::Refused,
                Outcome::Answered(ms(10)),
                Outcome::Answered(ms(2)),
            ],
        );
        assert_eq!((p.sent, p.answered, p.refused, p.lost), (6, 4, 1, 1));
        assert_eq!(p.rtt_ms, vec![3.0, 1.0, 10.0, 2.0]);
        assert_eq!(p.min_ms, Some(1.0));
        assert_eq!(p.max_ms, Some(10.0));
        assert_eq!(p.median_ms, Some(2.5));
        let odd = SynProbe::from_outcomes(
            SynMethod::Connect,
            &[
                Outcome::Answered(ms(5)),
                Outcome::Answered(ms(1)),
                Outcome::Answered(ms(4)),
            ],
        );
        assert_eq!(odd.median_ms, Some(4.0));
        let none = SynProbe::from_outcomes(SynMethod::Connect, &[Outcome::Lost]);
        assert_eq!(
            (none.min_ms, none.median_ms, none.max_ms),
            (None, None, None)
        );
    }

    #[test]
    fn serializes_with_snake_case_method() {
        let mut p = SynProbe::from_outcomes(SynMethod::RawSyn, &[Outcome::Refused]);
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["method"], "raw_syn");
        assert_eq!(v["refused"], 1);
        p.method = SynMethod::Connect;
        let back: SynProbe = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        assert_eq!(serde_json::to_value(&p).unwrap()["method"], "connect");
    }
}

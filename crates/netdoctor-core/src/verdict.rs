//! The one verdict rule, for live runs (`diagnose`) and offline ones (`analyze`) alike.
//!
//! DESIGN.md's contract: **problem** when any finding is above `info`; **healthy** only with
//! enough evidence ([`MIN_EXCHANGES`] completed exchanges in the capture) and nothing that
//! makes the evidence doubtful; **inconclusive** otherwise. The inputs are a struct so that
//! later checks (failed requests, an interrupted run, a client-limited load, a run without
//! capture, latency no finding explains) extend it without changing callers; the outcome
//! says which checks kept the run from being healthy, so the report can show why.
//!
//! Ranking happens here too ([`decide`] ranks the findings once, with
//! [`crate::finding::rank`]), so callers do not rank again.

use serde::{Deserialize, Serialize};

use crate::finding::{Finding, FindingId, Severity, Verdict, rank};

/// Completed HTTP exchanges a run needs before "no findings" means healthy (the same number
/// for live and offline runs).
pub const MIN_EXCHANGES: u64 = 20;

/// What the verdict is decided from besides the findings. Build with
/// `VerdictInputs { exchanges: n, capture_present: true, ..Default::default() }`; fields
/// are added as checks grow, never repurposed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VerdictInputs {
    /// Completed HTTP/1.x exchanges the capture showed.
    pub exchanges: u64,
    /// Requests that failed (errors, resets, timeouts) during the run.
    pub requests_failed: u64,
    /// The run was cut short (Ctrl-C, a deadline, a stage that failed).
    pub interrupted: bool,
    /// The load generator, not the target, limited the rate (its own CPU was saturated).
    pub client_limited: bool,
    /// Packets were captured and analyzed (without them, transport causes cannot be ruled
    /// out).
    pub capture_present: bool,
    /// Latency that no finding explains, with the figures (e.g. "p50 44 ms under load vs
    /// 0.1 ms for one request").
    pub unexplained_latency: Option<String>,
    /// The capture itself missed a large part of the data (a share of the bytes the receivers
    /// acknowledged were never captured): what was not seen cannot be called healthy.
    pub capture_incomplete: Option<String>,
    /// Nearly every answer of the load was a redirect (3xx), with the figures: what was timed
    /// is the redirect, not the page it points to, so the page cannot be called healthy.
    pub redirected: Option<String>,
    /// A probe-only run (`netdoctor dns`, `netdoctor trace`): no load and no capture are
    /// expected, so the capture and exchange checks do not apply; the probes having been
    /// answered is the evidence instead.
    pub probe_run: Option<ProbeRun>,
}

/// The evidence of a probe-only run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeRun {
    /// Why the probes do not allow a judgement (nothing answered), when they do not.
    pub unanswered: Option<String>,
}

/// Why a run is not healthy: one entry per check that did not pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "check", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reason {
    /// A finding above `info`.
    Finding {
        id: FindingId,
        severity: Severity,
    },
    /// Requests failed and no finding above `info` explains it.
    RequestsFailed {
        count: u64,
    },
    /// Fewer completed exchanges than [`MIN_EXCHANGES`].
    TooFewExchanges {
        seen: u64,
        needed: u64,
    },
    Interrupted,
    ClientLimited,
    NoCapture,
    UnexplainedLatency {
        detail: String,
    },
    /// A probe-only run whose probes got no answer to judge by.
    ProbesUnanswered {
        detail: String,
    },
    /// The capture missed too much of the traffic to rule problems out.
    CaptureIncomplete {
        detail: String,
    },
    /// The load timed redirects, not the page they point to.
    Redirected {
        detail: String,
    },
}

impl Reason {
    /// One line for the report.
    pub fn message(&self) -> String {
        match self {
            Reason::Finding { id, severity } => format!("{id} ({severity:?})").to_lowercase(),
            Reason::RequestsFailed { count } => {
                format!("{count} requests failed; a run with failed requests is never healthy")
            }
            Reason::TooFewExchanges { seen, needed } => format!(
                "{seen} completed request/response exchanges seen, at least {needed} are \
                 needed to call the target healthy"
            ),
            Reason::Interrupted => "the run was interrupted".to_string(),
            Reason::ClientLimited => {
                "the load generator, not the target, limited the rate".to_string()
            }
            Reason::NoCapture => {
                "without a packet capture transport-level causes cannot be ruled out".to_string()
            }
            Reason::UnexplainedLatency { detail } => {
                format!("latency that no finding explains: {detail}")
            }
            Reason::ProbesUnanswered { detail } => {
                format!("nothing to judge by: {detail}")
            }
            Reason::CaptureIncomplete { detail } => {
                format!("the capture is incomplete: {detail}")
            }
            Reason::Redirected { detail } => format!(
                "the run timed redirects, not the page they point to: {detail}; diagnose the \
                 URL of their Location header (`curl -sI URL` shows it)"
            ),
        }
    }
}

/// The verdict and the reasons behind it (empty for healthy).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    pub reasons: Vec<Reason>,
}

/// Ranks `findings` (most important first) and decides the verdict.
pub fn decide(findings: &mut [Finding], inputs: &VerdictInputs) -> Outcome {
    rank(findings);
    let problems: Vec<Reason> = findings
        .iter()
        .filter(|f| f.severity > Severity::Info)
        .map(|f| Reason::Finding {
            id: f.id,
            severity: f.severity,
        })
        .collect();
    if !problems.is_empty() {
        return Outcome {
            verdict: Verdict::Problem,
            reasons: problems,
        };
    }
    let mut reasons = Vec::new();
    if inputs.requests_failed > 0 {
        reasons.push(Reason::RequestsFailed {
            count: inputs.requests_failed,
        });
    }
    if inputs.interrupted {
        reasons.push(Reason::Interrupted);
    }
    if inputs.client_limited {
        reasons.push(Reason::ClientLimited);
    }
    match &inputs.probe_run {
        Some(p) => {
            if let Some(detail) = &p.unanswered {
                reasons.push(Reason::ProbesUnanswered {
                    detail: detail.clone(),
                });
            }
        }
        None => {
            if !inputs.capture_present {
                reasons.push(Reason::NoCapture);
            }
            if inputs.exchanges < MIN_EXCHANGES {
                reasons.push(Reason::TooFewExchanges {
                    seen: inputs.exchanges,
                    needed: MIN_EXCHANGES,
                });
            }
        }
    }
    if let Some(detail) = &inputs.capture_incomplete {
        reasons.push(Reason::CaptureIncomplete {
            detail: detail.clone(),
        });
    }
    if let Some(detail) = &inputs.redirected {
        reasons.push(Reason::Redirected {
            detail: detail.clone(),
        });
    }
    if let Some(detail) = &inputs.unexplained_latency {
        reasons.push(Reason::UnexplainedLatency {
            detail: detail.clone(),
        });
    }
    let verdict = if reasons.is_empty() {
        Verdict::Healthy
    } else {
        Verdict::Inconclusive
    };
    Outcome { verdict, reasons }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Side;

    fn ok_inputs() -> VerdictInputs {
        VerdictInputs {
            exchanges: MIN_EXCHANGES,
            capture_present: true,
            ..Default::default()
        }
    }

    fn finding(id: FindingId, severity: Severity, latency: f64) -> Finding {
        let mut f = Finding::new(id, severity, Side::Server, "x");
        f.impact.added_latency_ms = Some(latency);
        f
    }

    #[test]
    fn healthy_needs_enough_exchanges_and_nothing_above_info() {
        let mut info = vec![finding(FindingId::ShortConnections, Severity::Info, 0.1)];
        let o = decide(&mut info, &ok_inputs());
        assert_eq!(o.verdict, Verdict::Healthy);
        assert!(o.reasons.is_empty());
        let few = VerdictInputs {
            exchanges: MIN_EXCHANGES - 1,
            ..ok_inputs()
        };
        let o = decide(&mut info, &few);
        assert_eq!(o.verdict, Verdict::Inconclusive);
        assert_eq!(
            o.reasons,
            vec![Reason::TooFewExchanges {
                seen: MIN_EXCHANGES - 1,
                needed: MIN_EXCHANGES
            }]
        );
        assert!(o.reasons[0].message().contains("at least 20"));
    }

    #[test]
    fn a_finding_above_info_is_a_problem_whatever_the_evidence() {
        let mut v = vec![
            finding(FindingId::ShortConnections, Severity::Info, 0.1),
            finding(FindingId::NagleDelayedAck, Severity::Critical, 40.0),
        ];
        let o = decide(&mut v, &VerdictInputs::default());
        assert_eq!(o.verdict, Verdict::Problem);
        assert_eq!(
            o.reasons,
            vec![Reason::Finding {
                id: FindingId::NagleDelayedAck,
                severity: Severity::Critical
            }]
        );
        // Ranked once, here: the critical finding first.
        assert_eq!(v[0].id, FindingId::NagleDelayedAck);
    }

    #[test]
    fn each_doubt_is_named_and_keeps_the_run_from_healthy() {
        let cases: Vec<(VerdictInputs, Reason)> = vec![
            (
                VerdictInputs {
                    requests_failed: 3,
                    ..ok_inputs()
                },
                Reason::RequestsFailed { count: 3 },
            ),
            (
                VerdictInputs {
                    interrupted: true,
                    ..ok_inputs()
                },
                Reason::Interrupted,
            ),
            (
                VerdictInputs {
                    client_limited: true,
                    ..ok_inputs()
                },
                Reason::ClientLimited,
            ),
            (
                VerdictInputs {
                    capture_present: false,
                    ..ok_inputs()
                },
                Reason::NoCapture,
            ),
            (
                VerdictInputs {
                    unexplained_latency: Some("p50 44 ms".into()),
                    ..ok_inputs()
                },
                Reason::UnexplainedLatency {
                    detail: "p50 44 ms".into(),
                },
            ),
        ];
        for (inputs, why) in cases {
            let o = decide(&mut [], &inputs);
            assert_eq!(o.verdict, Verdict::Inconclusive, "{inputs:?}");
            assert_eq!(o.reasons, vec![why], "{inputs:?}");
        }
    }

    #[test]
    fn probe_runs_are_judged_by_their_answers_not_by_a_capture() {
        let answered = VerdictInputs {
            probe_run: Some(ProbeRun::default()),
            ..Default::default()
        };
        let o = decide(&mut [], &answered);
        assert_eq!((o.verdict, o.reasons), (Verdict::Healthy, vec![]));
        let info = || vec![finding(FindingId::HighBaseRtt, Severity::Info, 25.0)];
        assert_eq!(decide(&mut info(), &answered).verdict, Verdict::Healthy);
        let silent = VerdictInputs {
            probe_run: Some(ProbeRun {
                unanswered: Some("the destination did not answer".into()),
            }),
            ..Default::default()
        };
        let o = decide(&mut info(), &silent);
        assert_eq!(o.verdict, Verdict::Inconclusive);
        assert_eq!(
            o.reasons[0].message(),
            "nothing to judge by: the destination did not answer"
        );
        let mut v = vec![finding(FindingId::DnsSlow, Severity::Warning, 300.0)];
        assert_eq!(decide(&mut v, &silent).verdict, Verdict::Problem);
    }

    #[test]
    fn a_run_that_timed_only_redirects_is_not_healthy_but_a_problem_stays_one() {
        let redirected = VerdictInputs {
            redirected: Some("HTTP 301 on 100 % of 5,000 answers".into()),
            ..ok_inputs()
        };
        let o = decide(&mut [], &redirected);
        assert_eq!(o.verdict, Verdict::Inconclusive);
        assert!(o.reasons[0].message().contains("Location"), "{o:?}");
        let mut v = vec![finding(
            FindingId::NagleDelayedAck,
            Severity::Critical,
            40.0,
        )];
        assert_eq!(decide(&mut v, &redirected).verdict, Verdict::Problem);
        assert_eq!(decide(&mut [], &ok_inputs()).verdict, Verdict::Healthy);
    }

    #[test]
    fn reasons_serialize_tagged_by_check() {
        let r = Reason::TooFewExchanges {
            seen: 3,
            needed: 20,
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            "{\"check\":\"too_few_exchanges\",\"seen\":3,\"needed\":20}"
        );
    }
}

//! Shared output of `dns` and `trace`: the report envelope (the `netdoctor.report/v1` top level:
//! schema, command, target, verdict, findings, measurements, checks, elapsed) and a plain
//! terminal rendering of findings. Kept apart from `netdoctor-report` until the lead folds these
//! commands into its sinks.

use netdoctor_core::finding::{Evidence, Finding, Verdict};
use netdoctor_core::verdict::{self, ProbeRun, Reason, VerdictInputs};
use serde_json::json;
use std::io::{self, Write};

/// What a `dns`/`trace` run puts around its findings.
pub struct Run<'a> {
    pub command: &'a str,
    pub input: &'a str,
    pub address: Option<String>,
    /// The verdict and its reasons, from [`conclude`].
    pub verdict: &'a verdict::Outcome,
    pub measurements: serde_json::Value,
    /// Check notes: `(status, reason)`.
    pub checks: Vec<(&'static str, String)>,
    pub elapsed_s: f64,
}

/// The JSON document of a `dns`/`trace` run.
pub fn envelope(run: Run<'_>, findings: &[Finding]) -> serde_json::Value {
    let verdict = run.verdict.verdict;
    let mut target = json!({ "input": run.input });
    if let Some(a) = run.address {
        target["address"] = json!(a);
    }
    let mut checks: Vec<serde_json::Value> = run
        .checks
        .into_iter()
        .map(|(status, reason)| json!({"name": run.command, "status": status, "reason": reason}))
        .collect();
    // As `Report::decide` does: a reason other than a finding is a skipped `verdict` check.
    checks.extend(
        run.verdict
            .reasons
            .iter()
            .filter(|r| !matches!(r, Reason::Finding { .. }))
            .map(|r| json!({"name": "verdict", "status": "skipped", "reason": r.message()})),
    );
    json!({
        "schema": "netdoctor.report/v1",
        "command": run.command,
        "target": target,
        "verdict": verdict,
        "findings": findings,
        "measurements": run.measurements,
        "checks": checks,
        "elapsed_s": run.elapsed_s,
    })
}

/// Ranks the findings and decides the verdict with core's one rule, as a probe-only run:
/// `unanswered` says why the probes allow no judgement, when they do not.
pub fn conclude(findings: &mut [Finding], unanswered: Option<String>) -> verdict::Outcome {
    verdict::decide(
        findings,
        &VerdictInputs {
            probe_run: Some(ProbeRun { unanswered }),
            ..Default::default()
        },
    )
}

/// Findings as a short terminal list: severity, id, summary, explanation, fix, evidence.
pub fn write_findings(
    out: &mut dyn Write,
    findings: &[Finding],
    verdict: Verdict,
) -> io::Result<()> {
    writeln!(out)?;
    let v = format!("{verdict:?}").to_lowercase();
    if findings.is_empty() {
        return writeln!(out, "verdict: {v} — no finding");
    }
    writeln!(out, "verdict: {v}")?;
    for f in findings {
        let sev = format!("{:?}", f.severity).to_lowercase();
        writeln!(out, "\n[{sev}] {}: {}", f.id, f.summary)?;
        writeln!(out, "  why: {}", f.explanation)?;
        writeln!(out, "  fix: {}", f.fix)?;
        for e in &f.evidence {
            if let Evidence::Probe { probe, note } = e {
                writeln!(out, "  evidence ({probe}): {note}")?;
            }
        }
    }
    Ok(())
}

pub fn ms(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

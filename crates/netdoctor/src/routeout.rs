//! Shared output of `dns` and `trace`: the report envelope (the `netdoctor.report/v1` top level:
//! schema, command, target, verdict, findings, measurements, checks, elapsed) and a plain
//! terminal rendering of findings. Kept apart from `netdoctor-report` until the lead folds these
//! commands into its sinks.

use netdoctor_core::finding::{Evidence, Finding, Verdict, rank};
use serde_json::json;
use std::io::{self, Write};

/// What a `dns`/`trace` run puts around its findings.
pub struct Run<'a> {
    pub command: &'a str,
    pub input: &'a str,
    pub address: Option<String>,
    pub conclusive: bool,
    pub measurements: serde_json::Value,
    /// Check notes: `(status, reason)`.
    pub checks: Vec<(&'static str, String)>,
    pub elapsed_s: f64,
}

/// The JSON document of a `dns`/`trace` run.
pub fn envelope(run: Run<'_>, findings: &[Finding]) -> serde_json::Value {
    let verdict = Verdict::from_findings(findings, run.conclusive);
    let mut target = json!({ "input": run.input });
    if let Some(a) = run.address {
        target["address"] = json!(a);
    }
    let checks: Vec<serde_json::Value> = run
        .checks
        .into_iter()
        .map(|(status, reason)| json!({"name": run.command, "status": status, "reason": reason}))
        .collect();
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

/// Ranks findings and returns the verdict's exit code.
pub fn conclude(findings: &mut [Finding], conclusive: bool) -> (Verdict, i32) {
    rank(findings);
    let v = Verdict::from_findings(findings, conclusive);
    (v, v.exit_code())
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

//! Service-level objectives (`--slo 'p99<50ms,errors<0.1%'`): each objective is judged on a
//! [`Report`] — pass, fail, or inconclusive when the run holds too few requests to judge it —
//! with its margin, and the set decides the exit code (pass 0, fail 1, inconclusive 3).
//!
//! Objectives (comma-separated, spaces allowed):
//!
//! | name | value | unit |
//! |---|---|---|
//! | `p50` `p75` `p90` `p99` `p999` (`p99.9`) `max` `mean` | latency | `us`, `ms`, `s` (required) |
//! | `errors` | failed requests ÷ requests attempted | `%` (required) |
//! | `stalled` | share of requests a stall cause (Nagle, loss, RTO, …) held (capture) | `%` |
//! | `rps` | requests per second | none, or `/s` |
//!
//! with `<`, `<=`, `>`, `>=`. Where the values come from: the load (diagnose) when the report
//! has one, else the capture's exchanges (`analyze`, `--passive`, `watch`), whose latency is
//! first request byte → last response byte at the capture point. A capture has no request
//! outcomes, so `errors` is inconclusive there.
//!
//! **Inconclusive** is a real answer, not a failure to parse: a percentile needs at least one
//! request above it (p99: 100 requests, p999: 1 000); `errors < x%` passes only over enough
//! requests that one error would have been above x% (fewer, with no error, is inconclusive; any
//! error above the limit fails at once). The set: any fail → fail; else any inconclusive →
//! inconclusive; else pass.
//!
//! The grammar is small enough that a hand-written parser gives better one-line errors than a
//! parser crate would (each names the objective and what was wrong in it).

use crate::model::Report;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A measured quantity an objective is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    P50,
    P75,
    P90,
    P99,
    P999,
    Max,
    Mean,
    Errors,
    Stalled,
    Rps,
}

impl Metric {
    /// The stable name (JSON `metric`, metric labels).
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P75 => "p75",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::P999 => "p999",
            Metric::Max => "max",
            Metric::Mean => "mean",
            Metric::Errors => "errors",
            Metric::Stalled => "stalled",
            Metric::Rps => "rps",
        }
    }

    fn parse(s: &str) -> Option<Metric> {
        Some(match s.to_ascii_lowercase().as_str() {
            "p50" | "median" => Metric::P50,
            "p75" => Metric::P75,
            "p90" => Metric::P90,
            "p99" => Metric::P99,
            "p999" | "p99.9" => Metric::P999,
            "max" => Metric::Max,
            "mean" | "avg" => Metric::Mean,
            "errors" | "error_rate" => Metric::Errors,
            "stalled" => Metric::Stalled,
            "rps" | "throughput" => Metric::Rps,
            _ => return None,
        })
    }

    /// The quantile of a latency percentile (max: 1).
    fn quantile(self) -> Option<f64> {
        Some(match self {
            Metric::P50 => 0.5,
            Metric::P75 => 0.75,
            Metric::P90 => 0.9,
            Metric::P99 => 0.99,
            Metric::P999 => 0.999,
            Metric::Max | Metric::Mean => 1.0,
            _ => return None,
        })
    }

    /// The unit values and limits are held in: `ms`, `fraction`, `req/s`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Errors | Metric::Stalled => "fraction",
            Metric::Rps => "req/s",
            _ => "ms",
        }
    }
}

/// The comparison an objective asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Lt => value < limit,
            Op::Le => value <= limit,
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
        }
    }

    fn upper(self) -> bool {
        matches!(self, Op::Lt | Op::Le)
    }
}

/// One objective: `metric op limit` (limit in [`Metric::unit`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    /// As written (trimmed), e.g. `p99<50ms`.
    pub text: String,
    pub metric: Metric,
    pub op: Op,
    pub limit: f64,
}

/// A set of objectives, parsed from `--slo`.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    pub spec: String,
    pub objectives: Vec<Objective>,
}

/// What was wrong in an `--slo` string, in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SloError(pub String);

impl fmt::Display for SloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SloError {}

const NAMES: &str = "p50, p75, p90, p99, p999, max, mean, errors, stalled, rps";

fn parse_objective(text: &str) -> Result<Objective, SloError> {
    let err = |why: String| SloError(format!("--slo objective '{text}': {why}"));
    let at = text
        .find(['<', '>', '='])
        .ok_or_else(|| err("no comparison: write it as NAME<VALUE, e.g. p99<50ms".into()))?;
    let name = text[..at].trim();
    let rest = &text[at..];
    let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
        (Op::Le, v)
    } else if let Some(v) = rest.strip_prefix(">=") {
        (Op::Ge, v)
    } else if let Some(v) = rest.strip_prefix('<') {
        (Op::Lt, v)
    } else if let Some(v) = rest.strip_prefix('>') {
        (Op::Gt, v)
    } else {
        return Err(err("the comparison must be <, <=, > or >=".into()));
    };
    if name.is_empty() {
        return Err(err(format!(
            "no name before '{}' (one of {NAMES})",
            op.as_str()
        )));
    }
    let metric = Metric::parse(name)
        .ok_or_else(|| err(format!("unknown objective '{name}' (one of {NAMES})")))?;
    let value = value.trim();
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (num, unit) = (&value[..split], value[split..].trim());
    let n: f64 = num
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite())
        .ok_or_else(|| {
            err(format!(
                "'{value}' is not a number with a unit (e.g. 50ms, 0.1%)"
            ))
        })?;
    let limit = match metric {
        Metric::Errors | Metric::Stalled => match unit {
            "%" => {
                if n > 100.0 {
                    return Err(err(format!("{n}% is more than 100%")));
                }
                n / 100.0
            }
            "" => return Err(err(format!("give {name} in percent, e.g. {name}<0.1%"))),
            u => {
                return Err(err(format!(
                    "unit '{u}' for {name}: use % (e.g. {name}<0.1%)"
                )));
            }
        },
        Metric::Rps => match unit {
            "" | "/s" | "rps" => n,
            u => {
                return Err(err(format!(
                    "unit '{u}' for rps: none or /s (e.g. rps>1000)"
                )));
            }
        },
        _ => match unit {
            "ms" => n,
            "s" => n * 1000.0,
            "us" | "µs" => n / 1000.0,
            "" => {
                return Err(err(format!(
                    "give {name} a unit: ms, s or us (e.g. {name}<50ms)"
                )));
            }
            u => return Err(err(format!("unit '{u}' for {name}: use ms, s or us"))),
        },
    };
    // A latency or an error rate below 0 or "< 0" can never pass: a mistake, said now.
    if op == Op::Lt && n == 0.0 {
        return Err(err(format!(
            "{name}<0 can never be met (did you mean {name}<=0?)"
        )));
    }
    Ok(Objective {
        text: text.to_string(),
        metric,
        op,
        limit,
    })
}

impl FromStr for Slo {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Slo, SloError> {
        let spec = s.trim();
        if spec.is_empty() {
            return Err(SloError(
                "--slo is empty: give objectives like 'p99<50ms,errors<0.1%'".into(),
            ));
        }
        let mut objectives = Vec::new();
        for part in spec.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(SloError(format!(
                    "--slo '{spec}': an empty objective (two commas, or one at an end)"
                )));
            }
            objectives.push(parse_objective(part)?);
        }
        Ok(Slo {
            spec: spec.to_string(),
            objectives,
        })
    }
}

/// The outcome of one objective or of the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloResult {
    Pass,
    Fail,
    Inconclusive,
}

impl SloResult {
    pub fn as_str(self) -> &'static str {
        match self {
            SloResult::Pass => "pass",
            SloResult::Fail => "fail",
            SloResult::Inconclusive => "inconclusive",
        }
    }

    /// 0 pass, 1 fail, 3 inconclusive (the exit codes of the commands).
    pub fn exit_code(self) -> i32 {
        match self {
            SloResult::Pass => 0,
            SloResult::Fail => 1,
            SloResult::Inconclusive => 3,
        }
    }

    /// Any fail, else any inconclusive, else pass (pass for none).
    pub fn combine(results: impl IntoIterator<Item = SloResult>) -> SloResult {
        let mut out = SloResult::Pass;
        for r in results {
            match r {
                SloResult::Fail => return SloResult::Fail,
                SloResult::Inconclusive => out = SloResult::Inconclusive,
                SloResult::Pass => {}
            }
        }
        out
    }
}

/// One objective judged on a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveResult {
    /// As written, e.g. `p99<50ms`.
    pub objective: String,
    /// [`Metric::as_str`].
    pub metric: String,
    /// `<`, `<=`, `>`, `>=`.
    pub op: String,
    /// In `unit`.
    pub limit: f64,
    /// `ms`, `fraction` or `req/s`.
    pub unit: String,
    /// The measured value (absent when nothing measured it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// How far the value is on the good side of the limit (negative: how far over it), in
    /// `unit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margin: Option<f64>,
    pub result: SloResult,
    /// Where the value came from: `load` or `capture`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Why it is inconclusive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The objectives judged on one report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloReport {
    /// The `--slo` string.
    pub spec: String,
    pub result: SloResult,
    pub objectives: Vec<ObjectiveResult>,
}

/// What a report measured, in the units objectives use.
struct Measured {
    source: &'static str,
    latency: netdoctor_core::Percentiles,
    /// Requests with a latency (completed).
    requests: u64,
    /// Failed requests and attempts (load only).
    errors: Option<u64>,
    stalled: Option<f64>,
    rps: Option<f64>,
}

fn measured(r: &Report) -> Option<Measured> {
    let stalled = r
        .measurements
        .capture
        .as_ref()
        .and_then(|c| c.exchanges.breakdown_mean_ms)
        .map(|b| b.stalled);
    if let Some(l) = &r.measurements.load {
        return Some(Measured {
            source: "load",
            latency: l.latency_ms,
            requests: l.requests,
            errors: Some(l.errors.total()),
            stalled,
            rps: Some(l.requests_per_s),
        });
    }
    let c = r.measurements.capture.as_ref()?;
    let e = &c.exchanges;
    Some(Measured {
        source: "capture",
        latency: e.latency_ms,
        // Exchanges cut by the capture's end have no latency: the percentiles leave them out.
        requests: e.count.saturating_sub(e.incomplete),
        errors: None,
        stalled,
        rps: (c.stats.duration_s > 0.0).then(|| e.count as f64 / c.stats.duration_s),
    })
}

fn judge(o: &Objective, m: Option<&Measured>) -> ObjectiveResult {
    let mut out = ObjectiveResult {
        objective: o.text.clone(),
        metric: o.metric.as_str().into(),
        op: o.op.as_str().into(),
        limit: o.limit,
        unit: o.metric.unit().into(),
        value: None,
        margin: None,
        result: SloResult::Inconclusive,
        source: m.map(|m| m.source.to_string()),
        reason: None,
    };
    let Some(m) = m else {
        out.reason = Some("no requests were measured (no load and no capture)".into());
        return out;
    };
    let margin = |v: f64| {
        if o.op.upper() {
            o.limit - v
        } else {
            v - o.limit
        }
    };
    let decided = |out: &mut ObjectiveResult, v: f64| {
        out.value = Some(v);
        out.margin = Some(margin(v));
        out.result = if o.op.holds(v, o.limit) {
            SloResult::Pass
        } else {
            SloResult::Fail
        };
    };
    match o.metric {
        Metric::Errors => {
            let Some(errors) = m.errors else {
                out.reason = Some(
                    "a capture has no request outcomes: errors are counted by diagnose's load"
                        .into(),
                );
                return out;
            };
            let attempts = m.requests + errors;
            if attempts == 0 {
                out.reason = Some("no request was attempted".into());
                return out;
            }
            let rate = errors as f64 / attempts as f64;
            decided(&mut out, rate);
            // A pass needs enough requests that one error would have broken the limit.
            if out.result == SloResult::Pass && o.op.upper() && o.limit > 0.0 {
                let needed = (1.0 / o.limit).ceil() as u64;
                if errors == 0 && attempts < needed {
                    out.result = SloResult::Inconclusive;
                    out.reason = Some(format!(
                        "{attempts} requests, no error: {needed} are needed to show a rate below {}",
                        percent(o.limit)
                    ));
                }
            }
        }
        Metric::Stalled => match m.stalled {
            Some(s) if m.requests > 0 => decided(&mut out, s),
            _ => out.reason = Some("stalls are measured from a capture; this run has none".into()),
        },
        Metric::Rps => match m.rps {
            Some(v) => decided(&mut out, v),
            None => out.reason = Some("the run's duration is unknown".into()),
        },
        _ => {
            let q = o.metric.quantile().unwrap_or(1.0);
            let needed = if q < 1.0 {
                (1.0 / (1.0 - q)).round() as u64
            } else {
                1
            };
            let l = &m.latency;
            let v = match o.metric {
                Metric::P50 => l.p50,
                Metric::P75 => l.p75,
                Metric::P90 => l.p90,
                Metric::P99 => l.p99,
                Metric::P999 => l.p999,
                Metric::Max => l.max,
                _ => l.mean,
            };
            if m.requests < needed {
                out.value = (m.requests > 0).then_some(v);
                out.reason = Some(format!(
                    "{} requests measured: {} needs at least {needed}",
                    m.requests,
                    o.metric.as_str()
                ));
                return out;
            }
            decided(&mut out, v);
        }
    }
    out
}

fn percent(f: f64) -> String {
    let p = f * 100.0;
    if p >= 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.3}%")
    }
}

impl Slo {
    /// Judges every objective on `r`.
    pub fn evaluate(&self, r: &Report) -> SloReport {
        let m = measured(r);
        let objectives: Vec<ObjectiveResult> = self
            .objectives
            .iter()
            .map(|o| judge(o, m.as_ref()))
            .collect();
        SloReport {
            spec: self.spec.clone(),
            result: SloResult::combine(objectives.iter().map(|o| o.result)),
            objectives,
        }
    }
}

impl ObjectiveResult {
    /// A value in this objective's unit, for people: `51.2 ms`, `0.02%`, `1,234 req/s`.
    pub fn show(&self, v: f64) -> String {
        match self.unit.as_str() {
            "ms" => crate::terminal::ms(v),
            "fraction" => percent(v),
            _ => format!(
                "{} req/s",
                crate::terminal::thousands(v.max(0.0).round() as u64)
            ),
        }
    }

    /// The margin in words (English; the terminal view builds its own in the report's
    /// language): `8.8 ms to spare`, `1.2 ms over`.
    pub fn margin_text(&self) -> Option<String> {
        let m = self.margin?;
        let shown = match self.unit.as_str() {
            "fraction" => format!("{:.3} points", (m * 100.0).abs()),
            _ => self.show(m.abs()),
        };
        Some(if m >= 0.0 {
            format!("{shown} to spare")
        } else {
            format!("{shown} over")
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{ReportCommand, Target};

    /// A diagnose report whose load measured these (p50 1 ms), for tests of SLO views.
    pub(crate) fn report(p99: f64, p999: f64, requests: u64, errors: u64) -> Report {
        let mut r = Report::new(
            ReportCommand::Diagnose,
            Target {
                input: "http://127.0.0.1:8080/".into(),
                address: None,
                protocol: None,
            },
        );
        let load: netdoctor_load::LoadResult = serde_json::from_value(serde_json::json!({
            "connections": 10, "threads": 1, "duration_s": 10.0,
            "requests": requests, "requests_per_s": requests as f64 / 10.0,
            "bytes_read": 0, "transfer_per_s": 0.0,
            "latency_ms": {"mean": 2.0, "p50": 1.0, "p75": 1.5, "p90": 3.0, "p99": p99,
                           "p999": p999, "max": p999 * 2.0, "stdev": 1.0},
            "status": {}, "connects": 10,
            "errors": {"connect": 0, "read": 0, "write": 0, "timeout": 0, "status": errors}
        }))
        .expect("load section");
        r.measurements.load = Some(load);
        r
    }

    #[test]
    fn parses_what_people_write() {
        let s: Slo = " p99 < 50ms , errors<0.1%,p99.9<=1s, rps>=1000, max<900us"
            .parse()
            .unwrap();
        let got: Vec<(Metric, Op, f64)> = s
            .objectives
            .iter()
            .map(|o| (o.metric, o.op, o.limit))
            .collect();
        assert_eq!(
            got,
            vec![
                (Metric::P99, Op::Lt, 50.0),
                (Metric::Errors, Op::Lt, 0.001),
                (Metric::P999, Op::Le, 1000.0),
                (Metric::Rps, Op::Ge, 1000.0),
                (Metric::Max, Op::Lt, 0.9),
            ]
        );
        assert_eq!(s.objectives[0].text, "p99 < 50ms");
    }

    #[test]
    fn bad_input_is_one_line_naming_what_is_wrong() {
        for (spec, want) in [
            ("", "--slo is empty"),
            ("p99<50ms,,errors<1%", "an empty objective"),
            ("p98<50ms", "unknown objective 'p98'"),
            ("p99 50ms", "no comparison"),
            ("p99=50ms", "must be <, <=, > or >="),
            ("p99<50", "give p99 a unit"),
            ("p99<50 parsecs", "unit 'parsecs'"),
            ("p99<fast", "'fast' is not a number"),
            ("errors<0.1", "give errors in percent"),
            ("errors<120%", "more than 100%"),
            ("<50ms", "no name before '<'"),
            ("p99<0ms", "can never be met"),
            ("rps>10ms", "unit 'ms' for rps"),
        ] {
            let e = spec.parse::<Slo>().unwrap_err().to_string();
            assert!(e.contains(want), "{spec:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn pass_fail_and_inconclusive_with_margins() {
        let slo: Slo = "p99<50ms,errors<1%".parse().unwrap();
        // 10,000 requests, p99 41.2 ms, 5 errors (0.05 %): both pass.
        let r = slo.evaluate(&report(41.2, 60.0, 10_000, 5));
        assert_eq!(r.result, SloResult::Pass, "{r:#?}");
        assert!((r.objectives[0].margin.unwrap() - 8.8).abs() < 1e-9);
        assert_eq!(r.objectives[0].margin_text().unwrap(), "8.80 ms to spare");
        assert_eq!(r.objectives[0].source.as_deref(), Some("load"));
        // p99 over the limit: fail, the margin says by how much.
        let r = slo.evaluate(&report(51.2, 60.0, 10_000, 5));
        assert_eq!(r.result, SloResult::Fail);
        assert_eq!(r.objectives[0].result, SloResult::Fail);
        assert_eq!(r.objectives[0].margin_text().unwrap(), "1.20 ms over");
        assert_eq!(r.objectives[1].result, SloResult::Pass);
        // Too few requests for a p999 (and no error in too few for 0.1 %): inconclusive.
        let slo: Slo = "p999<100ms,errors<0.1%".parse().unwrap();
        let r = slo.evaluate(&report(41.2, 60.0, 420, 0));
        assert_eq!(r.result, SloResult::Inconclusive, "{r:#?}");
        assert!(
            r.objectives[0]
                .reason
                .as_deref()
                .unwrap()
                .contains("p999 needs at least 1000"),
            "{r:#?}"
        );
        assert!(
            r.objectives[1]
                .reason
                .as_deref()
                .unwrap()
                .contains("1000 are needed")
        );
        // ... but errors already above the limit fail at once, and a fail wins.
        let r = slo.evaluate(&report(41.2, 60.0, 420, 3));
        assert_eq!(r.objectives[1].result, SloResult::Fail);
        assert_eq!(r.result, SloResult::Fail);
        assert_eq!(
            [SloResult::Pass, SloResult::Fail, SloResult::Inconclusive].map(SloResult::exit_code),
            [0, 1, 3]
        );
    }

    #[test]
    fn without_a_load_the_capture_is_judged_and_errors_are_inconclusive() {
        let mut r = report(1.0, 1.0, 1, 0);
        r.measurements.load = None;
        let slo: Slo = "p50<50ms,errors<1%".parse().unwrap();
        let out = slo.evaluate(&r);
        assert_eq!(out.result, SloResult::Inconclusive);
        assert!(
            out.objectives[0]
                .reason
                .as_deref()
                .unwrap()
                .contains("no requests")
        );
    }
}

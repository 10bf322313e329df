//! From findings and measurements to the verdict (to be replaced by core's one rule).

use netdoctor_report::terminal::ms;
use netdoctor_report::{Check, Report};

/// Fewer exchanges than this in the capture and a run without findings is inconclusive.
const MIN_EXCHANGES: u64 = 20;

pub fn conclude(report: &mut Report) {
    let exchanges = report
        .measurements
        .capture
        .as_ref()
        .map_or(0, |c| c.exchanges.count);
    let mut conclusive = exchanges >= MIN_EXCHANGES;
    if report.findings.is_empty()
        && conclusive
        && let Some(why) = unexplained_latency(report)
    {
        report.checks.push(Check::failed("explained", why));
        conclusive = false;
    }
    if !conclusive && report.measurements.capture.is_none() {
        report.checks.push(Check::skipped(
            "verdict",
            "without a packet capture transport-level causes cannot be ruled out",
        ));
    }
    report.conclude(conclusive);
}

/// A healthy verdict must not hide latency nothing explains: when p50 under load is far above
/// the unloaded request time and no detector fired, say so instead of calling it healthy.
fn unexplained_latency(report: &Report) -> Option<String> {
    let load = report.measurements.load.as_ref()?;
    let probe = report.measurements.probe.as_ref()?;
    let base = probe
        .http
        .as_ref()
        .map(|h| h.total_ms)
        .or(probe.syn.as_ref().and_then(|s| s.median_ms))?;
    let p50 = load.latency_ms.p50;
    (p50 >= 20.0 && p50 > 10.0 * base.max(0.5)).then(|| {
        format!(
            "p50 under load is {} against {} for one request, and no detector explained it \
             (server saturated? CPU-bound client?)",
            ms(p50),
            ms(base)
        )
    })
}

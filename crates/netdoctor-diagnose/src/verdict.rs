//! From what the run saw to findings and the verdict: the observations join the packets in
//! the analyzer, the detectors conclude, and core's one verdict rule decides.

use crate::observer::Outcome;
use netdoctor_core::analyze::{Analyzer, AnalyzerConfig};
use netdoctor_core::verdict::VerdictInputs;
use netdoctor_report::terminal::ms;
use netdoctor_report::{CaptureSection, CaptureSource, Report};

/// Runs the detectors over the packets and observations and sets findings and verdict.
pub fn conclude(report: &mut Report, mut outcome: Outcome, snaplen: u32, max_packets: u64) {
    let captured = outcome.capture.take();
    let capture_present = captured.is_some();
    let (mut analyzer, summary, pcap_file) = match captured {
        Some(c) => (c.analyzer, Some(c.summary), c.pcap_file),
        None => (Analyzer::new(AnalyzerConfig::default()), None, None),
    };
    for obs in outcome.observations.drain(..) {
        analyzer.observe(obs);
    }
    let mut analysis = analyzer.finish();
    if let Some(summary) = summary {
        let mut warnings = summary.warnings.clone();
        warnings.extend(analysis.warnings.iter().cloned());
        if summary.packets >= max_packets {
            warnings.push(format!(
                "capture stopped after {max_packets} packets; the rest of the load was not analyzed"
            ));
        }
        report.measurements.capture = Some(CaptureSection {
            source: CaptureSource::Live,
            snaplen: Some(snaplen),
            pcap_file: pcap_file.map(|p| p.display().to_string()),
            stats: analysis.stats.clone(),
            exchanges: analysis.exchanges.clone(),
            warnings,
        });
    }
    report.checks.extend(outcome.checks);
    let mut findings = std::mem::take(&mut analysis.findings);
    findings.append(&mut outcome.findings);
    findings.append(&mut report.findings);
    crate::base_rtt::apply(report, &analysis, &outcome.client_tcp_info, &mut findings);
    crate::lost_answer::apply(
        report,
        &outcome.client_tcp_info,
        outcome.pmtu.as_ref(),
        &mut findings,
    );
    // Loss the kernel dropped in a qdisc of the server's host is that queue's (a shaper's).
    crate::qdisc::apply(report.measurements.kernel.as_ref(), &mut findings);
    // Repeated SYNs the server's kernel never saw are the path's.
    crate::syn_path::apply(
        report.measurements.kernel.as_ref(),
        Some(&analysis.stats).filter(|_| capture_present),
        &mut findings,
    );
    let load = report
        .measurements
        .load
        .as_ref()
        .map(crate::run::load_outcome);
    let inputs = VerdictInputs {
        exchanges: analysis.exchanges.count,
        capture_present,
        interrupted: report.interrupted,
        unexplained_latency: unexplained_latency(report),
        capture_incomplete: analysis.verdict_inputs().capture_incomplete,
        // Failures of a load generator that hit its own limits are the client's: they hold
        // the verdict back as `client_limited`, not as failed requests of the server.
        requests_failed: load
            .as_ref()
            .filter(|l| l.client_limits.is_empty())
            .map_or(0, |l| l.failed()),
        client_limited: load.as_ref().is_some_and(|l| !l.client_limits.is_empty()),
        redirected: load.as_ref().and_then(redirected),
        probe_run: None,
    };
    report.findings = findings;
    report.decide(&inputs);
}

/// The redirect statuses (304 Not Modified is an answer about the page, not a redirect).
const REDIRECTS: [u16; 5] = [301, 302, 303, 307, 308];

/// Nearly every answer of the load (9 in 10 or more) was a redirect: the figures are those of
/// the redirects (a 301 to HTTPS, to a trailing slash, to a login page), not of the page the
/// user meant, so the run cannot call that page healthy.
fn redirected(l: &netdoctor_core::observation::LoadOutcome) -> Option<String> {
    let redirects: u64 = l
        .status
        .iter()
        .filter(|(c, _)| REDIRECTS.contains(*c))
        .map(|(_, n)| *n)
        .sum();
    if l.responses == 0 || redirects * 10 < l.responses * 9 {
        return None;
    }
    let mut codes: Vec<String> = l
        .status
        .keys()
        .filter(|c| REDIRECTS.contains(*c))
        .map(|c| c.to_string())
        .collect();
    codes.sort();
    Some(format!(
        "HTTP {} on {:.0}% of {} answers",
        codes.join("/"),
        redirects as f64 * 100.0 / l.responses as f64,
        l.responses
    ))
}

/// A healthy verdict must not hide latency nothing explains: when p50 under load is far above
/// the unloaded request time, say so (it only counts when no finding explains it).
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

#[cfg(test)]
mod tests {
    use super::*;
    use netdoctor_core::observation::LoadOutcome;

    fn load(status: &[(u16, u64)]) -> LoadOutcome {
        LoadOutcome {
            responses: status.iter().map(|s| s.1).sum(),
            status: status.iter().copied().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn only_redirects_are_told_and_a_page_with_some_redirects_is_not() {
        assert_eq!(
            redirected(&load(&[(301, 4000)])).as_deref(),
            Some("HTTP 301 on 100% of 4000 answers")
        );
        assert_eq!(
            redirected(&load(&[(200, 5), (302, 95), (307, 5)])).as_deref(),
            Some("HTTP 302/307 on 95% of 105 answers")
        );
        assert_eq!(redirected(&load(&[(200, 20), (301, 80)])), None);
        assert_eq!(redirected(&load(&[(304, 1000)])), None);
        assert_eq!(redirected(&load(&[])), None);
    }
}

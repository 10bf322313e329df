//! The base round trip from every source a diagnosis has (issue 20): the SYN probe, the
//! handshakes of the captured connections and, when the target is behind routers, the trace.
//! A path without routers (a VPN, a stretched VLAN, a bridge) has no trace, yet its round trip
//! can be most of the request latency; `high_base_rtt` then comes from the other sources.
//! When the trace already made the finding, the other sources join it as evidence.

use netdoctor_core::analyze::Analysis;
use netdoctor_core::finding::{Evidence, Finding, FindingId};
use netdoctor_report::Report;
use netdoctor_route::findings::{RttSource, Thresholds, high_base_rtt_from};

/// The round trips the run measured outside the trace.
pub fn sources(report: &Report, analysis: &Analysis) -> Vec<RttSource> {
    let mut v = Vec::new();
    if let Some(syn) = report
        .measurements
        .probe
        .as_ref()
        .and_then(|p| p.syn.as_ref())
        && let Some(min) = syn.min_ms
    {
        v.push(RttSource {
            source: "syn probe".into(),
            ms: min,
            note: format!(
                "{} of {} SYNs answered: best {min:.1} ms, median {:.1} ms ({})",
                syn.answered,
                syn.sent,
                syn.median_ms.unwrap_or(min),
                match syn.method {
                    netdoctor_probe::SynMethod::RawSyn => "raw SYN",
                    _ => "connect() timing",
                }
            ),
        });
    }
    if let Some(rtt) = analysis.exchanges.rtt_ms {
        v.push(RttSource {
            source: "captured handshakes".into(),
            ms: rtt,
            note: format!(
                "median handshake round trip (SYN to the ACK of the SYN/ACK) {rtt:.1} ms over {} connections",
                analysis.stats.connections_with_handshake
            ),
        });
    }
    v
}

/// Adds `high_base_rtt` from the SYN probe and the handshakes when the trace did not make
/// it, or their evidence to the trace's finding.
pub fn apply(report: &Report, analysis: &Analysis, findings: &mut Vec<Finding>) {
    let src = sources(report, analysis);
    if src.is_empty() {
        return;
    }
    if let Some(f) = findings.iter_mut().find(|f| f.id == FindingId::HighBaseRtt) {
        f.evidence.extend(src.into_iter().map(|s| Evidence::Probe {
            probe: s.source,
            note: s.note,
        }));
        return;
    }
    let request_ms = report
        .measurements
        .load
        .as_ref()
        .map(|l| l.latency_ms.p50)
        .or_else(|| (analysis.exchanges.count > 0).then_some(analysis.exchanges.latency_ms.p50));
    let target = report
        .target
        .address
        .clone()
        .unwrap_or_else(|| report.target.input.clone());
    findings.extend(high_base_rtt_from(
        &target,
        &src,
        request_ms,
        &Thresholds::default(),
    ));
}

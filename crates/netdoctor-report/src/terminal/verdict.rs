//! The verdict line's claim about the finding named first. "The first one explains most of the
//! latency" is said only when it is not contradicted by the capture's own breakdown of a
//! typical (p50) request: when the first finding's part of that request (its stall cause, the
//! transfer for a bulk-transfer limit, the server's time for a slow server, plus the stalls of
//! its consequences) is under half of it, the line says how much it accounts for and which part
//! is the largest, and whether another finding explains that part or none does. A first
//! finding whose part the breakdown does not measure (errors, resets, host findings) keeps the
//! old sentence: nothing contradicts it. A typical request under 1 ms is judged the same way
//! (a lossy run whose first finding, `syn_retransmit`, stalls only the tail of requests of
//! 0.10 ms does not explain them), except for a bulk-transfer limit: requests that short are a
//! throughput test's control turns, not the transfer the limit is about, and the breakdown
//! does not see that transfer.

use super::{a, ms};
use crate::i18n::Lang;
use crate::model::Report;
use netdoctor_core::breakdown::cause_index;
use netdoctor_core::{Breakdown, Finding, FindingId};

/// The part of a typical request a finding's id accounts for: `None` when the breakdown has no
/// part that is this finding's.
fn own_part(id: FindingId, b: &Breakdown) -> Option<f64> {
    use FindingId as F;
    match id {
        id if cause_index(id).is_some() => Some(b.stalls.get(id)),
        F::ShaperLimited
        | F::CongestionLimited
        | F::ReceiveWindowLimited
        | F::SendBufferLimited
        | F::ApplicationLimited => Some(b.transfer),
        F::SlowServerProcessing => Some(b.server),
        _ => None,
    }
}

/// A finding's part with the stalls of its consequences.
fn part_of(f: &Finding, b: &Breakdown) -> Option<f64> {
    let own = own_part(f.id, b)?;
    let consequences: f64 = f
        .consequences
        .iter()
        .filter(|c| **c != f.id && cause_index(**c).is_some())
        .map(|c| b.stalls.get(*c))
        .sum();
    Some(own + consequences)
}

/// The verdict's tail for a problem: the usual sentence, or the honest one when the first
/// finding accounts for under half of a typical request.
pub(super) fn problem_tail(report: &Report, lang: Lang) -> String {
    let n = report.findings.len();
    let usual = || lang.ui("term-verdict-problem", &[("n", a(n))]);
    let Some(b) = report
        .measurements
        .capture
        .as_ref()
        .and_then(|c| c.exchanges.breakdown_p50_ms)
    else {
        return usual();
    };
    let Some(first) = report.findings.first() else {
        return usual();
    };
    let Some(part) = part_of(first, &b) else {
        return usual();
    };
    let transfer_limit = own_part(first.id, &b).is_some()
        && cause_index(first.id).is_none()
        && first.id != FindingId::SlowServerProcessing;
    if (b.latency < 1.0 && transfer_limit) || part >= 0.5 * b.latency {
        return usual();
    }
    // The largest part of the typical request, with the finding whose part it is.
    let mut largest: Vec<(String, f64, Option<FindingId>)> = vec![
        (
            lang.ui("term-bd-network", &[("v", a(ms(b.network)))]),
            b.network,
            None,
        ),
        (
            lang.ui("term-bd-server", &[("v", a(ms(b.server)))]),
            b.server,
            Some(FindingId::SlowServerProcessing),
        ),
        (
            lang.ui("term-bd-transfer", &[("v", a(ms(b.transfer)))]),
            b.transfer,
            None,
        ),
    ];
    for (id, v) in b.stalls.iter() {
        largest.push((
            format!("{} {}", ms(v), super::cause_name(id, lang)),
            v,
            Some(id),
        ));
    }
    largest.sort_by(|x, y| y.1.total_cmp(&x.1));
    let (name, v, _) = &largest[0];
    // Another finding whose own part it is.
    let by = report.findings[1..]
        .iter()
        .find(|f| *v > 0.0 && own_part(f.id, &b) == Some(*v));
    let args = |by: Option<&Finding>| {
        let mut v = vec![
            ("n", a(n)),
            ("part", a(ms(part))),
            ("latency", a(ms(b.latency))),
            ("largest", a(name.clone())),
        ];
        if let Some(f) = by {
            v.push(("by", a(f.id.as_str().to_string())));
        }
        v
    };
    match by {
        Some(f) => lang.ui("term-verdict-problem-short", &args(Some(f))),
        None => lang.ui("term-verdict-problem-unexplained", &args(None)),
    }
}

//! `high_base_rtt`: the path's round-trip time itself (distance, or a slow hop on the route)
//! is large; compared with the request latency when the caller has one, it says whether the
//! path explains the latency (then no server or transport setting will fix it).

use super::{Thresholds, fmt_ms, probe};
use crate::trace::TraceResult;
use crate::trace::assess::{HopNote, assess};
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

pub fn high_base_rtt(t: &TraceResult, request_ms: Option<f64>, th: &Thresholds) -> Vec<Finding> {
    let Some(dest) = t.destination() else {
        return Vec::new();
    };
    let Some(base) = dest.best_ms else {
        return Vec::new();
    };
    if base < th.base_rtt_ms {
        return Vec::new();
    }
    let explains = request_ms.is_some_and(|r| base >= 0.5 * r);
    let severity = if explains {
        Severity::Warning
    } else {
        Severity::Info
    };
    let mut f = Finding::new(
        FindingId::HighBaseRtt,
        severity,
        Side::Network,
        format!(
            "the path to {} has a round-trip time of {}",
            t.target,
            fmt_ms(base)
        ),
    );
    f.impact.added_latency_ms = Some(base);
    f.impact.affected_fraction = Some(1.0);
    let steps: Vec<String> = assess(t, &th.hops)
        .iter()
        .flat_map(|a| {
            a.notes.iter().filter_map(move |n| match n {
                HopNote::AddsLatency { added_ms } => {
                    Some(format!("hop {} adds {}", a.ttl, fmt_ms(*added_ms)))
                }
                _ => None,
            })
        })
        .collect();
    f.explanation = format!(
        "Every round trip to the destination takes at least {}{}. A request needs at least one \
         round trip, a new connection one more (two with TLS), so requests cannot be faster than \
         this whatever the server does.{}",
        fmt_ms(base),
        if steps.is_empty() {
            String::new()
        } else {
            format!(" ({})", steps.join(", "))
        },
        match request_ms {
            Some(r) if explains => format!(
                " The request latency ({}) is mostly this path time.",
                fmt_ms(r)
            ),
            Some(r) => format!(" It is a part of the request latency ({}).", fmt_ms(r)),
            None => String::new(),
        }
    );
    f.fix = "Serve from nearer (a region or CDN close to the clients), keep connections alive \
             and pooled so handshakes are not paid per request, and cut round trips per request \
             (batching, HTTP/2). If a hop adds the latency, see route_problem."
        .to_string();
    f.evidence.push(probe(
        "trace",
        format!(
            "destination {} at hop {}: best {}, median {}, {} of {} answered",
            t.target,
            dest.ttl,
            fmt_ms(base),
            fmt_ms(dest.median_ms.unwrap_or(base)),
            dest.received,
            dest.sent
        ),
    ));
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::assess::tests::{row, trace_of};

    #[test]
    fn base_rtt_above_threshold_and_its_weight() {
        let t = trace_of(&[row(0.2, 10), row(37.1, 10), row(37.3, 10)]);
        let f = high_base_rtt(&t, None, &Thresholds::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].explanation.contains("hop 2 adds"),
            "{}",
            f[0].explanation
        );
        let f = high_base_rtt(&t, Some(60.0), &Thresholds::default());
        assert_eq!(f[0].severity, Severity::Warning);
        let f = high_base_rtt(&t, Some(400.0), &Thresholds::default());
        assert_eq!(f[0].severity, Severity::Info);
    }

    #[test]
    fn short_path_is_no_finding() {
        let t = trace_of(&[row(0.2, 10), row(7.1, 10)]);
        assert!(high_base_rtt(&t, Some(8.0), &Thresholds::default()).is_empty());
    }
}

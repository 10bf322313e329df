//! `high_base_rtt`: the path's round-trip time itself (distance, or a slow hop on the route)
//! is large; compared with the request latency when the caller has one, it says whether the
//! path explains the latency (then no server or transport setting will fix it).
//!
//! The round trip is known from several sources, with or without routers in between: the
//! trace ([`high_base_rtt`]), and in a diagnosis the SYN probe and the handshakes of the
//! captured connections ([`high_base_rtt_from`], [`RttSource`]). The lowest is the path's
//! floor; the finding says how much of the request median it explains.

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
                HopNote::AddsLatency { added_ms, .. } => {
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

/// One measurement of the round trip to the target.
#[derive(Debug, Clone, PartialEq)]
pub struct RttSource {
    /// Where it comes from, e.g. `syn probe`, `captured handshakes`.
    pub source: String,
    /// The round trip it measured, ms (its best or typical value, as `note` says).
    pub ms: f64,
    /// The figure in words, for the evidence.
    pub note: String,
}

/// `high_base_rtt` from the round trips measured without a trace (a path without routers, or
/// one the trace could not take): the lowest of `sources` is the base RTT; `request_ms` is the
/// request median to weigh it against.
pub fn high_base_rtt_from(
    target: &str,
    sources: &[RttSource],
    request_ms: Option<f64>,
    th: &Thresholds,
) -> Option<Finding> {
    let base = sources
        .iter()
        .map(|s| s.ms)
        .filter(|m| m.is_finite() && *m >= 0.0)
        .min_by(f64::total_cmp)?;
    if base < th.base_rtt_ms {
        return None;
    }
    let explains = request_ms.is_some_and(|r| base >= 0.5 * r);
    let share = request_ms
        .filter(|r| *r > 0.0)
        .map(|r| ((base / r) * 100.0).min(100.0));
    let mut f = Finding::new(
        FindingId::HighBaseRtt,
        if explains {
            Severity::Warning
        } else {
            Severity::Info
        },
        Side::Network,
        match (request_ms, share) {
            (Some(r), Some(pct)) => format!(
                "the round trip to {target} takes {}: {pct:.0}% of the requests' median latency ({})",
                fmt_ms(base),
                fmt_ms(r)
            ),
            _ => format!("the round trip to {target} takes {}", fmt_ms(base)),
        },
    );
    f.confidence = if sources.len() > 1 { 0.95 } else { 0.85 };
    f.impact.added_latency_ms = Some(base);
    f.impact.affected_fraction = Some(1.0);
    f.explanation = format!(
        "Every round trip to {target} takes at least {}, measured without any request work: {}. \
         A request needs at least one round trip, a new connection one more (two with TLS), \
         so requests cannot be faster than this whatever the server does. No router answered \
         in between (or no trace was run), so the distance is in the link itself: a long \
         line, a VPN or tunnel, a stretched VLAN or a bridge that holds frames.{}",
        fmt_ms(base),
        sources
            .iter()
            .map(|s| format!("{} {}", s.source, fmt_ms(s.ms)))
            .collect::<Vec<_>>()
            .join(", "),
        match request_ms {
            Some(r) if explains => format!(
                " The request latency ({}) is mostly this round trip: the server is not what \
                 makes requests slow.",
                fmt_ms(r)
            ),
            Some(r) => format!(" It is a part of the request latency ({}).", fmt_ms(r)),
            None => String::new(),
        }
    );
    f.fix = "Serve from nearer (a region or CDN close to the clients) or shorten the link (a \
             VPN or tunnel that takes a detour), keep connections alive and pooled so \
             handshakes are not paid per request, and cut round trips per request (batching, \
             HTTP/2)."
        .to_string();
    f.evidence = sources
        .iter()
        .map(|s| probe(&s.source, s.note.clone()))
        .collect();
    Some(f)
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

    fn src(source: &str, ms: f64) -> RttSource {
        RttSource {
            source: source.into(),
            ms,
            note: format!("{ms} ms"),
        }
    }

    #[test]
    fn base_rtt_without_a_trace_says_how_much_of_p50_it_explains() {
        let s = [src("syn probe", 40.1), src("captured handshakes", 40.4)];
        let f = high_base_rtt_from("10.0.0.1:80", &s, Some(40.5), &Thresholds::default()).unwrap();
        assert_eq!((f.severity, f.side), (Severity::Warning, Side::Network));
        assert!(
            f.summary.contains("99% of the requests' median"),
            "{}",
            f.summary
        );
        assert_eq!(f.impact.added_latency_ms, Some(40.1));
        assert_eq!(f.evidence.len(), 2);
        // A part of a much slower request: information.
        let f = high_base_rtt_from("x", &s, Some(400.0), &Thresholds::default()).unwrap();
        assert_eq!(f.severity, Severity::Info);
        // A local server: nothing.
        let near = [src("syn probe", 0.05), src("captured handshakes", 0.08)];
        assert!(high_base_rtt_from("x", &near, Some(0.3), &Thresholds::default()).is_none());
        assert!(high_base_rtt_from("x", &[], Some(40.0), &Thresholds::default()).is_none());
    }

    #[test]
    fn short_path_is_no_finding() {
        let t = trace_of(&[row(0.2, 10), row(7.1, 10)]);
        assert!(high_base_rtt(&t, Some(8.0), &Thresholds::default()).is_empty());
    }
}

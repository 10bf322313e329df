//! `route_problem`: a hop adds latency or loss that persists to the destination (see
//! [`crate::trace::assess`] for the rule that tells it from ICMP rate limiting).

use super::{Thresholds, fmt_ms, probe};
use crate::trace::TraceResult;
use crate::trace::assess::{HopNote, assess};
use crate::trace::stats::Hop;
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

fn row(h: &Hop) -> String {
    let addr = h.addrs.first().map_or("???".to_string(), |a| a.scoped());
    format!(
        "hop {} {addr}: loss {:.0}%, best {}, median {}",
        h.ttl,
        h.loss * 100.0,
        h.best_ms.map_or("-".into(), fmt_ms),
        h.median_ms.map_or("-".into(), fmt_ms)
    )
}

/// The meaning of an ICMPv6 Destination Unreachable code (RFC 4443 §3.1).
fn unreachable6_text(code: u8) -> &'static str {
    match code {
        0 => "network unreachable (no route)",
        1 | 5 | 6 => "administratively prohibited (a firewall or reject route refuses it)",
        2 => "beyond the scope of the source address",
        3 => "address unreachable (no answer to neighbour discovery)",
        4 => "port unreachable",
        _ => "unreachable",
    }
}

/// The meaning of an ICMP Destination Unreachable code (RFC 792, 1812) of `target`'s family.
fn unreachable_text(target: std::net::IpAddr, code: u8) -> &'static str {
    if target.is_ipv6() {
        return unreachable6_text(code);
    }
    match code {
        0 => "network unreachable (no route)",
        1 => "host unreachable (no answer to ARP/neighbour discovery)",
        2 => "protocol unreachable",
        3 => "port unreachable",
        4 => "fragmentation needed",
        9 | 10 | 13 => "administratively prohibited (a firewall rejects it)",
        _ => "unreachable",
    }
}

/// A router that answers Destination Unreachable ends the route: nothing gets through.
fn unreachable(t: &TraceResult) -> Option<Finding> {
    if t.reached {
        return None;
    }
    let hop = t.hops.iter().find(|h| h.unreachable_code.is_some())?;
    let code = hop.unreachable_code?;
    let addr = hop.addrs.first().map(|a| a.scoped()).unwrap_or_default();
    let mut f = Finding::new(
        FindingId::RouteProblem,
        Severity::Critical,
        Side::Network,
        format!(
            "hop {} ({addr}) says {} is {}",
            hop.ttl,
            t.target,
            unreachable_text(t.target, code)
        ),
    );
    f.impact.affected_fraction = Some(1.0);
    f.explanation = format!(
        "The route ends at hop {}: that router answers ICMP Destination Unreachable (code          {code}) instead of forwarding, so no connection to {} can succeed from here.",
        hop.ttl, t.target
    );
    f.fix = format!(
        "Check the routing table and firewall of {addr} (and of this host: `ip route get {}`)          for {}.",
        t.target, t.target
    );
    f.evidence.push(probe(
        "trace",
        format!("{}; icmp destination unreachable code {code}", row(hop)),
    ));
    Some(f)
}

/// The added RTT variation (median absolute deviation) from which a latency step is queueing
/// rather than distance: a tenth of the step, at least 2 ms (steal time and scheduling on a
/// busy host add a millisecond or so to single probes).
fn queueing_spread(added_ms: f64) -> f64 {
    (0.1 * added_ms).max(2.0)
}

pub fn route_problem(t: &TraceResult, th: &Thresholds) -> Vec<Finding> {
    if let Some(f) = unreachable(t) {
        return vec![f];
    }
    let assessed = assess(t, &th.hops);
    let limited: Vec<u8> = assessed
        .iter()
        .filter(|a| {
            a.notes.iter().any(|n| {
                matches!(
                    n,
                    HopNote::IcmpRateLimited { .. } | HopNote::SlowIcmpReply { .. }
                )
            })
        })
        .map(|a| a.ttl)
        .collect();
    let mut out = Vec::new();
    for (i, a) in assessed.iter().enumerate() {
        for note in &a.notes {
            let (summary, severity, what) = match *note {
                // A fixed step is distance (high_base_rtt names its hop); a step that adds
                // variation with it is queueing on the path.
                HopNote::AddsLatency {
                    added_ms,
                    added_spread_ms,
                } if added_ms >= th.route_added_ms
                    && added_spread_ms >= queueing_spread(added_ms) =>
                {
                    (
                        format!(
                            "hop {} adds {} to the path, varying by {} (queueing)",
                            a.ttl,
                            fmt_ms(added_ms),
                            fmt_ms(added_spread_ms)
                        ),
                        Severity::Warning,
                        format!(
                            "{} of latency that varies from probe to probe by {} (a fixed \
                             step would be distance; a varying one is a queue filling on the \
                             link or a shaper)",
                            fmt_ms(added_ms),
                            fmt_ms(added_spread_ms)
                        ),
                    )
                }
                HopNote::AddsLoss { added_loss } => (
                    format!("hop {} loses {:.0}% of packets", a.ttl, added_loss * 100.0),
                    if added_loss >= 0.2 {
                        Severity::Critical
                    } else {
                        Severity::Warning
                    },
                    format!("{:.0}% loss", added_loss * 100.0),
                ),
                _ => continue,
            };
            let hop = &t.hops[i];
            let mut f = Finding::new(FindingId::RouteProblem, severity, Side::Network, summary);
            if let HopNote::AddsLatency { added_ms, .. } = *note {
                f.impact.added_latency_ms = Some(added_ms);
                f.impact.affected_fraction = Some(1.0);
            }
            if let HopNote::AddsLoss { added_loss } = *note {
                f.impact.affected_fraction = Some(added_loss);
            }
            let addr = hop.addrs.first().map(|a| a.scoped()).unwrap_or_default();
            f.explanation = format!(
                "The {what} appears at hop {} ({addr}) and stays on every hop after it up to \
                 the destination, so it is on the path — the link into this hop or the router \
                 itself — not a router that only answers its own ICMP slowly.{}",
                a.ttl,
                if limited.is_empty() {
                    String::new()
                } else {
                    format!(
                        " Hop(s) {} only rate-limit or delay their own ICMP replies (their \
                         loss or delay does not reach the destination): not a problem.",
                        limited
                            .iter()
                            .map(|t| t.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            );
            f.fix = format!(
                "Take the trace to the owner of the link between hop {} and hop {} (with this \
                 report); route around it if you can. Confirm over time with `netdoctor trace \
                 --rounds 100`.",
                a.ttl.saturating_sub(1),
                a.ttl
            );
            if i > 0 {
                f.evidence.push(probe("trace", row(&t.hops[i - 1])));
            }
            f.evidence.push(probe("trace", row(hop)));
            if let Some(d) = t.destination()
                && d.ttl != hop.ttl
            {
                f.evidence
                    .push(probe("trace", format!("destination: {}", row(d))));
            }
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::assess::tests::{row as r, trace_of};

    #[test]
    fn a_fixed_step_is_distance_a_varying_one_is_a_route_problem() {
        // A long link: +30 ms on every probe. Distance, for high_base_rtt, not a problem of
        // the route.
        let t = trace_of(&[r(0.2, 10), r(30.3, 10), r(30.6, 10)]);
        assert!(route_problem(&t, &Thresholds::default()).is_empty());
        // A queue: +30 ms typical, varying by ±10 ms from probe to probe, from hop 2 on.
        let queue = |base: f64| -> Vec<Option<f64>> {
            (0..10)
                .map(|i| Some(base + [0.0, 20.0, 8.0, 14.0, 2.0, 18.0, 10.0, 4.0, 16.0, 12.0][i]))
                .collect()
        };
        let t = trace_of(&[r(0.2, 10), queue(20.0), queue(20.3)]);
        let f = route_problem(&t, &Thresholds::default());
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].summary.starts_with("hop 2 adds 3") && f[0].summary.contains("queueing"),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].evidence.len(), 3);
    }

    #[test]
    fn a_router_that_answers_unreachable_ends_the_route() {
        let mut t = trace_of(&[r(0.2, 4), r(0.3, 4)]);
        t.reached = false;
        t.hops[1].destination = false;
        t.hops[1].unreachable_code = Some(0);
        let f = route_problem(&t, &Thresholds::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Critical);
        assert!(
            f[0].summary.contains("hop 2 (10.0.2.1)"),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].summary.contains("network unreachable"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn rate_limiting_router_is_no_route_problem() {
        let mut limited = r(0.4, 10);
        for v in limited.iter_mut().skip(3) {
            *v = None;
        }
        let t = trace_of(&[r(0.2, 10), limited, r(0.6, 10)]);
        assert!(route_problem(&t, &Thresholds::default()).is_empty());
    }

    #[test]
    fn small_steps_are_not_route_problems_but_persistent_loss_is() {
        let t = trace_of(&[r(0.2, 10), r(7.2, 10), r(7.4, 10)]);
        assert!(route_problem(&t, &Thresholds::default()).is_empty());
        let lossy = |v| {
            let mut x = r(v, 10);
            x[0] = None;
            x[4] = None;
            x[7] = None;
            x
        };
        let t = trace_of(&[r(0.2, 10), r(0.3, 10), lossy(0.5), lossy(0.6)]);
        let f = route_problem(&t, &Thresholds::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Critical);
        assert!(f[0].summary.contains("hop 3 loses 30%"), "{}", f[0].summary);
    }
}

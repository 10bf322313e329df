//! `small_initial_window`: responses held back by a small initial congestion window.
//!
//! The signature is found per exchange by `analyze::flights` ([`ExchangeDone::slow_start`]):
//! the response's first flight is under 10 segments (Linux's default initial window, RFC
//! 6928), its next flights go out one RTT apart, each released by the client's ACK and larger
//! than the one before, the client's receive window open over all of them, no retransmission;
//! and it cost round trips against an initial window of 10. A route with `initcwnd 1` over
//! +37 ms: 1, 4, 8 segments, then the rest, two round trips (74 ms) late
//! (testdata/captures/initcwnd1-far).
//!
//! Kept silent: a cost under [`MIN_COST_MS`] or under [`MIN_SHARE`] of the request (a LAN
//! round trip of 0.05 ms makes a small window free). Slow start after idle restarts from the
//! initial window (10 segments), which this signature never takes for a small one; a window
//! the client's receive window held is that window's story; a loss is
//! `packet_loss_retransmission`'s.

use super::{Context, Detector, Interests, MAX_EXAMPLES, added_ms, conn_label, ms};
use crate::analyze::flights::SlowStart;
use crate::event::{Ends, Event, ExchangeDone};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};

/// An exchange's cost below this (ms) is not counted.
pub const MIN_COST_MS: f64 = 1.0;
/// Nor below this share of the exchange's latency.
pub const MIN_SHARE: f64 = 0.05;

#[derive(Default)]
pub struct SmallInitialWindow {
    hit: u64,
    cost_ms: f64,
    share: f64,
    worst_ms: f64,
    examples: Vec<(Ends, SlowStart, i64)>,
}

impl SmallInitialWindow {
    #[inline(never)]
    fn on_ramp(&mut self, x: &ExchangeDone, s: &SlowStart) {
        // A ramp after an idle restart is `slow_start_after_idle`'s.
        if s.grown_segments > 0 {
            return;
        }
        let cost = ms(s.cost_ns);
        let share = if x.latency_ns > 0 {
            (s.cost_ns as f64 / x.latency_ns as f64).min(1.0)
        } else {
            0.0
        };
        if cost < MIN_COST_MS || share < MIN_SHARE {
            return;
        }
        self.hit += 1;
        self.cost_ms += cost;
        self.share += share;
        self.worst_ms = self.worst_ms.max(cost);
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push((x.ends, *s, x.rtt_ns.unwrap_or(0)));
        }
    }
}

/// The cost of extra round trips on `hit` responses (their summed cost in ms and share of
/// each response's time), told the same way by `small_initial_window` and
/// `slow_start_after_idle`: the mean cost, the mean share, the share of the `exchanges` hit,
/// and the severity by the share of the request they cost when they hit a tenth of the
/// requests or more (a rare one is information).
pub(super) fn round_trips_cost(
    hit: u64,
    cost_ms: f64,
    share: f64,
    exchanges: u64,
) -> (f64, f64, Option<f64>, Severity) {
    let n = hit as f64;
    let share = share / n;
    let fraction = (exchanges > 0).then(|| (n / exchanges as f64).min(1.0));
    let wide = fraction.unwrap_or(1.0) >= 0.10;
    let severity = if wide && share >= 0.5 {
        Severity::Critical
    } else if wide && share >= 0.15 {
        Severity::Warning
    } else {
        Severity::Info
    };
    (cost_ms / n, share, fraction, severity)
}

impl Detector for SmallInitialWindow {
    fn interests(&self) -> Interests {
        Interests::EXCHANGE_DONE
    }

    /// Most exchanges had no ramp (their flights not followed, or no slow start): told here,
    /// before the call (the call for each cost ~20 instructions an exchange, callgrind).
    fn on_event(&mut self, ev: &Event<'_>) {
        if let Event::ExchangeDone(x) = ev
            && let Some(s) = &x.slow_start
        {
            self.on_ramp(x, s);
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        if self.hit == 0 {
            return;
        }
        let n = self.hit as f64;
        let (mean, share, fraction, severity) =
            round_trips_cost(self.hit, self.cost_ms, self.share, cx.exchanges);
        let first = self.examples.first().map_or(0, |e| e.1.first_segments);
        let mut f = Finding::new(
            FindingId::SmallInitialWindow,
            severity,
            Side::Server,
            format!(
                "Responses start with a small congestion window ({first} segment{} in the \
                 first flight, Linux's default is 10): {} per response, {:.0} % of its time, \
                 in {} response{}",
                if first == 1 { "" } else { "s" },
                added_ms(mean),
                share * 100.0,
                self.hit,
                if self.hit == 1 { "" } else { "s" }
            ),
        );
        f.confidence = (0.6 + 0.35 * (n / 5.0).min(1.0)).min(0.95);
        f.impact.added_latency_ms = Some(mean);
        f.impact.affected_fraction = fraction;
        f.explanation = "The server sent each response's first flight of only a few segments, \
            then waited a round trip for the client's ACK before it sent more, and the flights \
            after it grew by slow start one round trip apart. The client's receive window was \
            open and nothing was lost: the server's initial congestion window held the \
            response back (a route with a small `initcwnd`, or a congestion control that starts \
            low). With Linux's default of 10 segments (RFC 6928) the same data goes out in \
            fewer round trips; the time given is those round trips × the handshake RTT."
            .to_string();
        f.fix = "On the server, give the route to the clients the default initial window: \
            `ip route change <route> initcwnd 10` (see `ip route show` for an `initcwnd` on \
            the route; 10 is the kernel's default, larger values only with care). If the \
            client's side limits the first flights too, raise its initial receive window the \
            same way (`initrwnd`)."
            .to_string();
        f.evidence = self
            .examples
            .iter()
            .map(|(ends, s, rtt)| Evidence::Packets {
                connection: conn_label(ends.client, ends.server),
                packets: vec![s.first.to_ref(cx.t0_ns), s.second.to_ref(cx.t0_ns)],
                note: format!(
                    "first flight {} segment{}, then {} flights one RTT ({:.1} ms) apart: \
                     {} segments in {} round trips; {} round trip{} ({:.1} ms) later than \
                     with an initial window of 10",
                    s.first_segments,
                    if s.first_segments == 1 { "" } else { "s" },
                    s.flights - 1,
                    ms(*rtt),
                    s.segments,
                    s.flights,
                    s.extra_rounds,
                    if s.extra_rounds == 1 { "" } else { "s" },
                    ms(s.cost_ns)
                ),
            })
            .collect();
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::detect::testkit::*;

    fn exchange(cost_ms: i64, latency_ms: i64) -> ExchangeDone {
        let first = pkt(5, 40, true, F::PSH, 244);
        ExchangeDone {
            latency_ns: latency_ms * MS,
            rtt_ns: Some(37 * MS),
            slow_start: Some(SlowStart {
                flights: 3,
                segments: 13,
                first_segments: 1,
                extra_rounds: 2,
                cost_ns: cost_ms * MS,
                first,
                second: pkt(7, 77, true, F::ACK, 1448),
                grown_segments: 0,
            }),
            ..ExchangeDone::new(ends(), pkt(4, 0, false, F::PSH, 80), first)
        }
    }

    #[test]
    fn a_costly_ramp_is_a_server_warning() {
        let xs: Vec<ExchangeDone> = (0..5).map(|_| exchange(74, 294)).collect();
        let evs: Vec<Event> = xs.iter().map(Event::ExchangeDone).collect();
        let f = run::<SmallInitialWindow>(&evs, &cx(5));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, FindingId::SmallInitialWindow);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].side, Side::Server);
        assert!(f[0].summary.contains("+74.0 ms"), "{}", f[0].summary);
        assert!(f[0].fix.contains("initcwnd 10"));
        assert_eq!(f[0].evidence.len(), MAX_EXAMPLES);
    }

    #[test]
    fn a_free_ramp_is_silent() {
        // A LAN round trip: 0.1 ms; and a cost that is a sliver of a long request.
        let lan = exchange(0, 2);
        let long = exchange(74, 5000);
        let f = run::<SmallInitialWindow>(
            &[Event::ExchangeDone(&lan), Event::ExchangeDone(&long)],
            &cx(2),
        );
        assert!(f.is_empty());
    }
}

//! `slow_start_after_idle`: responses on a kept connection that restart slow start after an
//! idle pause.
//!
//! Linux's `net.ipv4.tcp_slow_start_after_idle` (1 by default) resets a sender's congestion
//! window when it has sent nothing for an RTO (`tcp_cwnd_restart`: halved once per RTO idle,
//! down to the initial window). On a kept-alive connection over a long RTT every response
//! after a pause then ramps up again one round trip at a time, where the window the earlier
//! responses grew would have sent it in fewer (testdata/captures/idle-restart-reno: reno,
//! +37 ms, 300 KB answers 1 s apart: 10 → 20 → 40 → 80 segments, 186 ms each, where the
//! connection's second answer without the restart took 75 ms).
//!
//! The signature is found per exchange by `analyze::flights` ([`ExchangeDone::slow_start`]
//! with `grown_segments` > 0): an earlier response on the connection sent a flight of W
//! segments; the sender was silent for at least the RTO estimate (handshake RTT + 200 ms,
//! the least Linux's RTO can be); this response's first flight is at most W/2 and its next
//! flights go out one RTT apart, each released by the client's ACK and growing, the client's
//! window open over all of them, no retransmission. The cost is the round trips beyond what
//! W needed for the same segments (a window that might have grown further is not assumed:
//! the figure is a floor) × the handshake RTT.
//!
//! Kept silent: a cost under [`MIN_COST_MS`] or under [`MIN_SHARE`] of the request (as
//! `small_initial_window`); a connection's first response (no grown window: a small initial
//! window is `small_initial_window`'s); a new connection after the pause (it has no window to
//! restart); BBR and other congestion controls with their own `cong_control` (the kernel skips
//! the restart for them: idle-restart-bbr-initcwnd1 sends each answer after the pause in one
//! flight); a writer that produced its data late, a client window that held the flights, a
//! loss (the ramp rules in `analyze::flights`).

use super::small_initial_window::round_trips_cost;
use super::{Context, Detector, Interests, MAX_EXAMPLES, added_ms, conn_label, ms};
use crate::analyze::flights::SlowStart;
use crate::event::{Ends, Event, ExchangeDone};
use crate::finding::{Evidence, Finding, FindingId, Side};

/// An exchange's cost below this (ms) is not counted.
pub const MIN_COST_MS: f64 = super::small_initial_window::MIN_COST_MS;
/// Nor below this share of the exchange's latency.
pub const MIN_SHARE: f64 = super::small_initial_window::MIN_SHARE;

#[derive(Default)]
pub struct SlowStartAfterIdle {
    hit: u64,
    cost_ms: f64,
    share: f64,
    /// The least idle time, the largest grown window and the range of first flights among
    /// the responses told.
    idle_min_ns: i64,
    grown: u32,
    first_min: u32,
    first_max: u32,
    /// The example exchanges: ends, ramp, handshake RTT, the sender's idle time.
    examples: Vec<(Ends, SlowStart, i64, i64)>,
}

impl SlowStartAfterIdle {
    #[inline(never)]
    fn on_ramp(&mut self, x: &ExchangeDone, s: &SlowStart) {
        if s.grown_segments == 0 {
            return;
        }
        let idle = x.sender_idle_ns();
        let cost = ms(s.cost_ns);
        let share = if x.latency_ns > 0 {
            (s.cost_ns as f64 / x.latency_ns as f64).min(1.0)
        } else {
            0.0
        };
        if cost < MIN_COST_MS || share < MIN_SHARE {
            return;
        }
        if self.hit == 0 {
            self.idle_min_ns = idle;
            self.first_min = s.first_segments;
        }
        self.idle_min_ns = self.idle_min_ns.min(idle);
        self.first_min = self.first_min.min(s.first_segments);
        self.first_max = self.first_max.max(s.first_segments);
        self.hit += 1;
        self.cost_ms += cost;
        self.share += share;
        self.grown = self.grown.max(s.grown_segments);
        if self.examples.len() < MAX_EXAMPLES {
            self.examples
                .push((x.ends, *s, x.rtt_ns.unwrap_or(0), idle));
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl Detector for SlowStartAfterIdle {
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
        let first = if self.first_min == self.first_max {
            self.first_min.to_string()
        } else {
            format!("{}–{}", self.first_min, self.first_max)
        };
        let mut f = Finding::new(
            FindingId::SlowStartAfterIdle,
            severity,
            Side::Server,
            format!(
                "Responses after an idle pause restart slow start: the server's window, grown \
                 to {} segments by earlier responses on the same connection, was back at {first} \
                 segment{} after {:.2} s idle: {} per response, {:.0} % of its time, in {} \
                 response{}",
                self.grown,
                plural(u64::from(self.first_max)),
                self.idle_min_ns as f64 / 1e9,
                added_ms(mean),
                share * 100.0,
                self.hit,
                plural(self.hit)
            ),
        );
        f.confidence = (0.6 + 0.35 * (n / 5.0).min(1.0)).min(0.95);
        f.impact.added_latency_ms = Some(mean);
        f.impact.affected_fraction = fraction;
        f.explanation = "On a kept connection, an earlier response had grown the server's \
            congestion window; after a pause of more than the retransmission timeout the next \
            response started again from a small flight, and its flights grew by slow start one \
            round trip apart, each released by the client's ACK. The client's receive window \
            was open and nothing was lost: the server's kernel restarted slow start after idle \
            (Linux's net.ipv4.tcp_slow_start_after_idle, on by default, halves the window once \
            per RTO of silence down to the initial window). The time given is the round trips \
            beyond what the grown window needed for the same data × the handshake RTT (a \
            floor: the window might have grown further)."
            .to_string();
        f.fix = "On the sending host (the server), keep the window across pauses: `sysctl -w \
            net.ipv4.tcp_slow_start_after_idle=0` (persist it in /etc/sysctl.d/; it applies to \
            every connection of the host's network namespace, and a sender that then bursts a \
            stale window after a long pause can lose some of it on a path that changed). \
            Congestion controls with their own control loop (BBR) skip this restart. Or keep \
            the connection busy enough, or send large responses on a fresh, tuned path."
            .to_string();
        f.evidence = self
            .examples
            .iter()
            .map(|(ends, s, rtt, idle)| Evidence::Packets {
                connection: conn_label(ends.client, ends.server),
                packets: vec![s.first.to_ref(cx.t0_ns), s.second.to_ref(cx.t0_ns)],
                note: format!(
                    "after {:.1} ms idle: first flight {} segment{} (earlier flights up to {}), \
                     then {} flights one RTT ({:.1} ms) apart: {} segments in {} round trips; \
                     {} round trip{} ({:.1} ms) more than the grown window needed",
                    ms(*idle),
                    s.first_segments,
                    plural(u64::from(s.first_segments)),
                    s.grown_segments,
                    s.flights - 1,
                    ms(*rtt),
                    s.segments,
                    s.flights,
                    s.extra_rounds,
                    plural(u64::from(s.extra_rounds)),
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
    use crate::finding::Severity;

    fn exchange(cost_ms: i64, latency_ms: i64, grown: u32) -> ExchangeDone {
        let first = pkt(5, 40, true, F::PSH, 1448);
        ExchangeDone {
            latency_ns: latency_ms * MS,
            rtt_ns: Some(37 * MS),
            slow_start: Some(SlowStart {
                flights: 5,
                segments: 213,
                first_segments: 10,
                extra_rounds: 2,
                cost_ns: cost_ms * MS,
                first,
                second: pkt(7, 77, true, F::ACK, 1448),
                grown_segments: grown,
            }),
            reuse_gap_ns: Some(1001 * MS),
            ..ExchangeDone::new(ends(), pkt(4, 0, false, F::PSH, 80), first)
        }
    }

    #[test]
    fn a_costly_restart_is_a_server_warning() {
        let xs: Vec<ExchangeDone> = (0..2).map(|_| exchange(74, 186, 80)).collect();
        let evs: Vec<Event> = xs.iter().map(Event::ExchangeDone).collect();
        let f = run::<SlowStartAfterIdle>(&evs, &cx(3));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, FindingId::SlowStartAfterIdle);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].side, Side::Server);
        assert!(f[0].summary.contains("+74.0 ms"), "{}", f[0].summary);
        assert!(f[0].summary.contains("grown to 80"), "{}", f[0].summary);
        assert!(f[0].fix.contains("tcp_slow_start_after_idle=0"));
        assert_eq!(f[0].evidence.len(), 2);
    }

    #[test]
    fn free_restarts_and_small_initial_windows_are_not_told() {
        // A LAN round trip; a sliver of a long request; a small initial window (no grown
        // window: `small_initial_window`'s).
        let lan = exchange(0, 2, 80);
        let long = exchange(74, 5000, 80);
        let first = exchange(74, 294, 0);
        let f = run::<SlowStartAfterIdle>(
            &[
                Event::ExchangeDone(&lan),
                Event::ExchangeDone(&long),
                Event::ExchangeDone(&first),
            ],
            &cx(3),
        );
        assert!(f.is_empty());
    }
}

//! `nagle_delayed_ack`: a sender's Nagle algorithm holds a small segment until the peer's
//! delayed ACK arrives (DESIGN.md, "What the reference stall looks like in packets").
//!
//! Per direction we remember the last new-data segment (`prev`) and the peer's first pure ACK
//! that covers it. When the sender's next new-data segment `held` of the same message (no
//! data from the peer in between) is smaller than the MSS, and
//! - the ACK came late: ≥ [`MIN_ACK_DELAY_NS`] (the Linux delayed-ACK timer is 40 ms at least)
//!   and ≥ 10 × the path RTT when the RTT is known, and
//! - `held` left within [`HOLD_BASE_NS`] + 2 × RTT after that ACK (at the sender the release is
//!   immediate; at the receiver's capture point it arrives one RTT later),
//!
//! then the sender was waiting for that ACK: a stall of `ack − prev` is counted.
//!
//! When `held` is a full-size segment, Nagle did not hold it (Nagle only holds sub-MSS
//! segments): the sender was limited by its congestion window or the peer's receive window,
//! which only that ACK opened. Such stalls go to
//! [`delayed_ack_stall`](super::delayed_ack_stall) instead ([`StallKind::DelayedAck`]).
//! Nor does Nagle hold a segment that would not have fit in the receive window the peer had
//! advertised before the late ACK: that is flow control by a slow reader
//! ([`StallKind::WindowLimited`], reported by [`zero_window`](super::zero_window)). The
//! per-direction tracking is in [`crate::track::nagle`].
//!
//! The server's own sockets ([`Observation::ServerSockets`]) are evidence: TCP_NODELAY off
//! confirms a server-side finding; TCP_NODELAY on for every sampled connection contradicts it,
//! lowers its confidence and caps it at `warning` (something else holds the data: a proxy,
//! TCP_CORK).

use std::net::SocketAddr;

use super::{
    Context, Detector, Interests, MAX_EXAMPLES, cap_by_share, episode_severity, ms, stall_evidence,
    stall_share, worst_note,
};
use crate::event::{Event, Stall, StallKind};
use crate::finding::{Finding, FindingId, Severity, Side};
use crate::observation::{Observation, ServerSocket};
use crate::stats::Hist;
pub use crate::track::nagle::{HOLD_BASE_NS, MIN_ACK_DELAY_NS};

/// The `nagle_delayed_ack` detector.
#[derive(Default)]
pub struct NagleDelayedAck {
    sides: StallSides,
    /// The latest sample of the server's sockets, when an observer took one.
    sockets: Option<Vec<ServerSocket>>,
}

impl Detector for NagleDelayedAck {
    fn interests(&self) -> Interests {
        Interests::STALL
            .and(Interests::EXCHANGE_DONE)
            .and(Interests::OBSERVED)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::Stall { ends, stall } if stall.kind == StallKind::Nagle => {
                self.sides.on_stall(ends.client, ends.server, *stall);
            }
            Event::ExchangeDone(x) => self.sides.on_exchange(x, FindingId::NagleDelayedAck),
            Event::Observed(Observation::ServerSockets(s)) => self.sockets = Some(s.clone()),
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        for (server_held, s) in self.sides.active() {
            let mut f = finding(server_held, s, cx.exchanges, cx.t0_ns);
            if server_held && let Some(sockets) = &self.sockets {
                crate::sockets::corroborate_nagle(&mut f, sockets);
            }
            out.push(f);
        }
    }
}

/// One stall kept as evidence.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Example {
    pub(crate) client: SocketAddr,
    pub(crate) server: SocketAddr,
    pub(crate) stall: Stall,
}

/// The stalls of one side's data over the whole capture.
#[derive(Default)]
pub(crate) struct StallSide {
    pub(crate) stalls: u64,
    pub(crate) affected_exchanges: u64,
    /// The sum over those exchanges of the share of their latency the stalls took.
    pub(crate) share_sum: f64,
    /// Data → late ACK.
    pub(crate) delay: Option<Hist>,
    /// Late ACK → the held data.
    pub(crate) hold: Option<Hist>,
    pub(crate) examples: Vec<Example>,
}

/// Stalls per side whose data waited (index 0: the server's, 1: the client's). Shared by
/// `nagle_delayed_ack` and `delayed_ack_stall`, which see the same packet signature and differ
/// only in whether the released segment was small (Nagle) or full-size.
#[derive(Default)]
pub(crate) struct StallSides([StallSide; 2]);

impl StallSides {
    pub(crate) fn on_stall(&mut self, client: SocketAddr, server: SocketAddr, stall: Stall) {
        let s = &mut self.0[usize::from(!stall.held.from_server)];
        s.stalls += 1;
        s.delay
            .get_or_insert_with(Hist::new)
            .record_ns(stall.delay_ns());
        s.hold
            .get_or_insert_with(Hist::new)
            .record_ns(stall.hold_ns());
        if s.examples.len() < MAX_EXAMPLES {
            s.examples.push(Example {
                client,
                server,
                stall,
            });
        }
    }

    /// An exchange completed: counts it for each side whose data stalled (cause `id`).
    pub(crate) fn on_exchange(&mut self, x: &crate::event::ExchangeDone, id: FindingId) {
        for server_side in [true, false] {
            if x.stalled(id, server_side) {
                let s = &mut self.0[usize::from(!server_side)];
                s.affected_exchanges += 1;
                s.share_sum += stall_share(x.stall_ns(id), x.latency_ns);
            }
        }
    }

    /// The sides with stalls, each with whether it is the server's data that waited.
    /// The mean share of the hit exchanges' latency their stalls took (`None`: none hit).
    pub(crate) fn share(s: &StallSide) -> Option<f64> {
        (s.affected_exchanges > 0).then(|| s.share_sum / s.affected_exchanges as f64)
    }

    pub(crate) fn active(&self) -> impl Iterator<Item = (bool, &StallSide)> {
        [(true, &self.0[0]), (false, &self.0[1])]
            .into_iter()
            .filter(|(_, s)| s.stalls > 0)
    }
}

fn finding(server_held: bool, s: &StallSide, exchanges: u64, t0_ns: i64) -> Finding {
    let median = s.delay.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
    let hold_med = s.hold.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
    let fraction =
        (exchanges > 0).then(|| (s.affected_exchanges as f64 / exchanges as f64).min(1.0));
    let events = s.affected_exchanges.max(s.stalls);
    let typical = if fraction.unwrap_or(0.0) >= 0.10 && median >= 20.0 {
        Severity::Critical
    } else if events >= 5 {
        Severity::Warning
    } else {
        Severity::Info
    };
    let typical = cap_by_share(typical, StallSides::share(s));
    let (worst, total) = s
        .delay
        .as_ref()
        .map_or((0.0, 0.0), |h| (h.max_ms(), h.total_ms()));
    let severity = episode_severity(typical, worst, total);
    // Confidence: more stalls and a tighter ACK → release gap make the pattern unambiguous.
    let count_part = (events as f64 / 10.0).min(1.0);
    let tight_part = if hold_med <= 0.2 {
        1.0
    } else if hold_med <= 1.0 {
        0.5
    } else {
        0.2
    };
    let confidence = (0.5 + 0.3 * count_part + 0.19 * tight_part).min(0.99);

    let (who, peer, side) = if server_held {
        ("Server", "client", Side::Server)
    } else {
        ("Client", "server", Side::Client)
    };
    // A share that rounds to 0 % says its counts instead: "+40.8 ms on 0% of requests" reads
    // as a stall that hit nobody (one resend in a 7,000-request run was told so).
    let share = match fraction {
        Some(f) if f >= 0.01 => format!("on {:.0}% of requests", f * 100.0),
        Some(_) if s.affected_exchanges > 0 => format!(
            "on {} of {exchanges} requests",
            s.affected_exchanges.min(exchanges)
        ),
        _ if events == 1 => "once".to_string(),
        _ => format!("{events} times"),
    };
    let summary = format!(
        "{who}'s Nagle algorithm waits for the {peer}'s delayed ACK: +{median:.1} ms{} {share}",
        worst_note(median, worst)
    );
    let explanation = if server_held {
        format!(
            "The server writes each response in two pieces (e.g. headers, then the body). With \
             Nagle's algorithm on (TCP_NODELAY off), the kernel may not send the second, small \
             piece while the first one is still unacknowledged. The client delays its ACK, hoping \
             to piggyback it on data (Linux waits at least 40 ms), but it has nothing to send \
             until the response is complete. Both wait, until the client's delayed-ACK timer \
             fires: each affected request takes about {median:.0} ms longer. In the packets: a \
             response segment, a lone ACK from the client {median:.0} ms later, and the rest of \
             the response right after that ACK."
        )
    } else {
        format!(
            "The client writes each request in two pieces (e.g. headers, then the body). With \
             Nagle's algorithm on (TCP_NODELAY off), the kernel holds the second, small piece \
             while the first one is unacknowledged; the server delays its ACK (Linux waits at \
             least 40 ms) because it cannot answer an incomplete request. Both wait until the \
             server's delayed-ACK timer fires: each affected request takes about {median:.0} ms \
             longer."
        )
    };
    let fix = if server_held {
        "Enable TCP_NODELAY on the server's sockets (nginx: `tcp_nodelay on;`, the default), or \
         write each response in one call (writev / TCP_CORK). With nginx, `tcp_nopush on;` \
         (TCP_CORK around sendfile) also sends headers and body together, and `tcp_nodelay \
         off` only matters when headers and body leave in separate writes (`sendfile on` with \
         `tcp_nopush off`)."
    } else {
        "Enable TCP_NODELAY on the client's sockets (most HTTP client libraries have an option \
         for it), or write each request in one call (writev / TCP_CORK)."
    };
    let evidence = s
        .examples
        .iter()
        .map(|e| {
            let st = e.stall;
            stall_evidence(
                e.client,
                e.server,
                &st,
                t0_ns,
                format!(
                    "ACK after {:.1} ms (delayed ACK), held {} bytes left {:.2} ms after it",
                    ms(st.delay_ns()),
                    st.held.len,
                    ms(st.hold_ns())
                ),
            )
        })
        .collect();
    let mut f = Finding::new(FindingId::NagleDelayedAck, severity, side, summary);
    f.confidence = confidence;
    f.impact.added_latency_ms = Some(median);
    f.impact.affected_fraction = fraction;
    f.explanation = explanation;
    f.fix = fix.to_string();
    f.evidence = evidence;
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::detect::testkit::*;
    use crate::event::{Ends, ExchangeDone};
    use crate::finding::Evidence;
    use crate::sockets::SocketState;

    /// `n` exchanges, each with a stall of `kind` on the server's data (44 ms late ACK).
    fn stream(n: u64, kind: StallKind) -> (Vec<(Ends, Stall)>, Vec<ExchangeDone>) {
        let mut stalls = Vec::new();
        let mut done = Vec::new();
        for k in 0..n {
            let t = k as i64 * 100;
            let f = k * 10;
            let st = Stall {
                prev: pkt(f + 2, t + 1, true, F::PSH | F::ACK, 238),
                ack: pkt(f + 3, t + 45, false, F::ACK, 0),
                held: pkt(f + 4, t + 45, true, F::PSH | F::ACK, 615),
                kind,
            };
            stalls.push((ends(), st));
            let mut x = ExchangeDone::new(ends(), pkt(f + 1, t, false, F::PSH, 78), st.held);
            x.charge(FindingId::NagleDelayedAck, true, 44 * MS);
            done.push(x);
        }
        (stalls, done)
    }

    fn events<'a>(stalls: &'a [(Ends, Stall)], done: &'a [ExchangeDone]) -> Vec<Event<'a>> {
        let mut ev: Vec<Event<'a>> = stalls
            .iter()
            .map(|(ends, stall)| Event::Stall {
                ends: *ends,
                stall: *stall,
            })
            .collect();
        ev.extend(done.iter().map(Event::ExchangeDone));
        ev
    }

    #[test]
    fn server_stalls_on_most_requests_are_critical_side_server() {
        let (s, d) = stream(10, StallKind::Nagle);
        let v = run::<NagleDelayedAck>(&events(&s, &d), &cx(10));
        assert_eq!(v.len(), 1);
        let f = &v[0];
        assert_eq!(
            (f.id, f.side, f.severity),
            (FindingId::NagleDelayedAck, Side::Server, Severity::Critical)
        );
        assert_eq!(f.impact.affected_fraction, Some(1.0));
        assert!(
            (43.0..45.0).contains(&f.impact.added_latency_ms.unwrap()),
            "{f:?}"
        );
        assert_eq!(f.evidence.len(), MAX_EXAMPLES);
    }

    #[test]
    fn other_stall_kinds_are_not_nagle() {
        for kind in [StallKind::DelayedAck, StallKind::WindowLimited] {
            let (s, d) = stream(10, kind);
            assert!(
                run::<NagleDelayedAck>(&events(&s, &d), &cx(10)).is_empty(),
                "{kind:?}"
            );
        }
    }

    fn sockets(nodelay: bool) -> Observation {
        Observation::ServerSockets(vec![ServerSocket {
            pid: 42,
            process: "nginx".into(),
            fd: 7,
            state: SocketState::Established,
            local: "10.0.0.2:80".into(),
            tcp_nodelay: nodelay,
            tcp_cork: false,
            sndbuf: 16384,
            rcvbuf: 131072,
        }])
    }

    #[test]
    fn tcp_nodelay_on_at_the_server_is_information_that_says_why() {
        let (s, d) = stream(10, StallKind::Nagle);
        let obs = sockets(true);
        let mut ev = events(&s, &d);
        ev.push(Event::Observed(&obs));
        let v = run::<NagleDelayedAck>(&ev, &cx(10));
        assert_eq!(v[0].severity, Severity::Info);
        assert!(
            v[0].summary.contains("TCP_NODELAY is on"),
            "{}",
            v[0].summary
        );
        assert!(
            matches!(&v[0].evidence[0], Evidence::SocketOption { value, .. } if value.starts_with('1'))
        );
        // TCP_NODELAY off confirms it.
        let obs = sockets(false);
        let mut ev = events(&s, &d);
        ev.insert(0, Event::Observed(&obs));
        let v = run::<NagleDelayedAck>(&ev, &cx(10));
        assert_eq!(v[0].severity, Severity::Critical);
        assert!(v[0].confidence >= 0.99);
    }

    #[test]
    fn few_stalls_are_info() {
        let (s, d) = stream(1, StallKind::Nagle);
        let v = run::<NagleDelayedAck>(&events(&s, &d[..0]), &cx(100));
        assert_eq!(v[0].severity, Severity::Info);
        assert_eq!(v[0].impact.affected_fraction, Some(0.0));
        assert!(
            v[0].summary.ends_with(": +44.0 ms once"),
            "{}",
            v[0].summary
        );
        // One affected request of 200: its count, never "on 0% of requests".
        let v = run::<NagleDelayedAck>(&events(&s, &d), &cx(200));
        assert!(
            v[0].summary.ends_with("on 1 of 200 requests"),
            "{}",
            v[0].summary
        );
    }
}

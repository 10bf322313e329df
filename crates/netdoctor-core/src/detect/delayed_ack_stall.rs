//! `delayed_ack_stall`: a delayed ACK stalls a sender that Nagle is not holding back.
//!
//! Same packet signature as [`nagle_delayed_ack`](super::nagle_delayed_ack) (a sender's data,
//! the peer's pure ACK late by ≥ 30 ms and ≥ 10 RTT, the sender's next new data right after that
//! ACK), but the released segment is full-size, which Nagle never holds. The sender was
//! limited by its congestion window or by the peer's receive window, and only that ACK let it
//! go on: e.g. an odd number of segments in flight at the end of a window (Linux ACKs every
//! second full segment at once and delays the ACK of a lone one), or a receive window of one
//! segment. Stalls during loss recovery or a zero window are excluded by the analyzer (those
//! have their own findings). `side` is the receiver, whose ACK timer caused the wait.

use super::nagle_delayed_ack::StallSides;
use super::{
    Context, Detector, Interests, cap_by_share, episode_severity, ms, stall_evidence, worst_note,
};
use crate::event::{Event, StallKind};
use crate::finding::{Finding, FindingId, Severity, Side};

/// The `delayed_ack_stall` detector: stalls whose released segment was full-size.
#[derive(Default)]
pub struct DelayedAckStall {
    sides: StallSides,
}

impl Detector for DelayedAckStall {
    fn interests(&self) -> Interests {
        Interests::STALL.and(Interests::EXCHANGE_DONE)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::Stall { ends, stall } if stall.kind == StallKind::DelayedAck => {
                self.sides.on_stall(ends.client, ends.server, *stall);
            }
            Event::ExchangeDone(x) => self.sides.on_exchange(x, FindingId::DelayedAckStall),
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        finish(&self.sides, cx.exchanges, cx.t0_ns, out);
    }
}

/// The `delayed_ack_stall` findings, one per side whose data waited.
fn finish(agg: &StallSides, exchanges: u64, t0_ns: i64, out: &mut Vec<Finding>) {
    for (server_sent, s) in agg.active() {
        let median = s.delay.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        let fraction =
            (exchanges > 0).then(|| (s.affected_exchanges as f64 / exchanges as f64).min(1.0));
        let events = s.affected_exchanges.max(s.stalls);
        let typical = if fraction.unwrap_or(0.0) >= 0.10 && median >= 20.0 {
            Severity::Critical
        } else if events >= 3 {
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
        let (sender, receiver, side) = if server_sent {
            ("server", "client", Side::Client)
        } else {
            ("client", "server", Side::Server)
        };
        let mut f = Finding::new(
            FindingId::DelayedAckStall,
            severity,
            side,
            format!(
                "The {sender} waits for the {receiver}'s delayed ACK before it may send \
                     more: +{median:.1} ms{}, {} times",
                worst_note(median, worst),
                s.stalls
            ),
        );
        f.confidence = (0.5 + 0.45 * (events as f64 / 10.0).min(1.0)).min(0.95);
        f.impact.added_latency_ms = Some(median);
        f.impact.affected_fraction = fraction;
        f.explanation = format!(
            "The {sender} had more data to send but was not allowed to: everything its \
                 congestion window or the {receiver}'s receive window permitted was in flight. \
                 Only an ACK from the {receiver} could let it continue, and the {receiver} \
                 delayed that ACK (Linux delays the ACK of a lone segment by 40 ms or more, \
                 hoping to piggyback it). The next full-size segment left right after the late \
                 ACK: the transfer stood still for about {median:.0} ms each time. Unlike \
                 nagle_delayed_ack, TCP_NODELAY does not help here."
        );
        f.fix = format!(
            "Give the {sender} room so one ACK is never the only way forward: larger receive \
                 buffers on the {receiver} (do not pin SO_RCVBUF small), or have the \
                 {receiver} acknowledge at once (TCP_QUICKACK after each read, or `ip route \
                 ... quickack 1` for that route)."
        );
        f.evidence = s
                .examples
                .iter()
                .map(|e| {
                    let st = e.stall;
                    stall_evidence(e.client, e.server, &st, t0_ns, format!(
                            "ACK after {:.1} ms (delayed ACK), the next {}-byte segment left {:.2} ms after it",
                            ms(st.delay_ns()),
                            st.held.len,
                            ms(st.hold_ns())
                        ))
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
    use crate::event::{ExchangeDone, Stall};

    #[test]
    fn full_size_stalls_name_the_receiver_whose_ack_was_late() {
        let mut ev_stalls = Vec::new();
        let mut done = Vec::new();
        for k in 0..6u64 {
            let t = k as i64 * 100;
            let stall = Stall {
                prev: pkt(k * 5 + 1, t, true, F::ACK, 1448),
                ack: pkt(k * 5 + 2, t + 40, false, F::ACK, 0),
                held: pkt(k * 5 + 3, t + 40, true, F::ACK, 1448),
                kind: StallKind::DelayedAck,
            };
            ev_stalls.push(Event::Stall {
                ends: ends(),
                stall,
            });
            let mut x = ExchangeDone::new(ends(), pkt(k * 5, t, false, F::PSH, 78), stall.held);
            x.charge(FindingId::DelayedAckStall, true, 40 * MS);
            done.push(x);
        }
        let mut ev = ev_stalls.clone();
        ev.extend(done.iter().map(Event::ExchangeDone));
        let v = run::<DelayedAckStall>(&ev, &cx(6));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].id, FindingId::DelayedAckStall);
        assert_eq!(
            v[0].side,
            Side::Client,
            "the client's delayed ACK held the server's data"
        );
        assert_eq!(v[0].severity, Severity::Critical);
        assert!(v[0].summary.contains("6 times"), "{}", v[0].summary);
        // Nagle stalls are not this detector's.
        let nagle: Vec<Event<'_>> = ev_stalls
            .iter()
            .map(|e| match e {
                Event::Stall { ends, stall } => Event::Stall {
                    ends: *ends,
                    stall: Stall {
                        kind: StallKind::Nagle,
                        ..*stall
                    },
                },
                other => *other,
            })
            .collect();
        assert!(run::<DelayedAckStall>(&nagle, &cx(6)).is_empty());
    }
}

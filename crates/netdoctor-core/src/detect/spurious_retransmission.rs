//! `spurious_retransmission`: segments resent that had arrived. A loss episode all of whose
//! retransmissions were spurious ([`Episode::is_spurious`]: the receiver reported them with a
//! D-SACK, or had acknowledged them before they were resent) is not loss, and
//! [`super::loss`] does not count it; counted as loss it would blame the path for a timer that
//! fired before a slow ACK (`ppp-one_tcp_stream_max_seq`: two tail-loss probes, each reported
//! back by a D-SACK, read as 9.5 % loss). This detector says what they were, once they are
//! a share of the data that would otherwise be read as loss ([`MIN_SHARE`]):
//!
//! - resent by the sender's **timer** (a tail-loss probe, RFC 8985, or the retransmission
//!   timer, no duplicate ACK or SACK before): the timer was more eager than the receiver's
//!   ACKs (delayed ACKs, a round trip that grew); side: the sender;
//! - resent on the receiver's **duplicate ACKs or SACK**: the originals came after later
//!   segments, reordering the sender took for loss; side: the network;
//! - **already acknowledged** when resent (no D-SACK): the ACK was lost after the capture
//!   point or came after the sender's timer; side: the network.
//!
//! Info while no request waited for them; but timer resends of acknowledged data seen next
//! to the receiver ([`ack_path`]) are ACKs lost on the way back, told by the stall they cost
//! (warning, critical when it is a quarter of the requests' time or more), side network.

use std::net::SocketAddr;

mod ack_path;

use super::{Context, Detector, Interests, MAX_EXAMPLES, conn_label, ms};
use crate::event::{Ends, Episode, Event};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::track::loss::RetxClass;

/// Spurious retransmissions below this share of the data segments, or fewer episodes than
/// [`MIN_EPISODES`], are not reported (one alone is not a pattern).
pub const MIN_SHARE: f64 = 0.01;
pub const MIN_EPISODES: u64 = 2;

#[derive(Clone, Copy)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    ep: Episode,
}

/// The `spurious_retransmission` detector.
#[derive(Default)]
pub struct SpuriousRetransmission {
    episodes: u64,
    retx: u64,
    /// Episodes resent on the receiver's signal (duplicate ACKs, SACK): reordering.
    signalled: u64,
    /// Episodes the receiver reported with a D-SACK (the others were acknowledged before),
    /// and their retransmissions.
    dsacked: u64,
    dsacked_retx: u64,
    by_server: u64,
    /// Shortest and longest wait from the sender's previous segment to the first resend.
    wait_ns: Option<(i64, i64)>,
    examples: Vec<Example>,
    /// Timer resends of data the receiver had acknowledged, seen next to it.
    ack_path: ack_path::AckPath,
}

impl Detector for SpuriousRetransmission {
    fn interests(&self) -> Interests {
        Interests::LOSS_EPISODE
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        if let Event::LossEpisode { ends, episode } = ev
            && episode.is_spurious()
        {
            self.on_episode(*ends, *episode);
            if ack_path::is_ack_path_loss(episode) {
                self.ack_path.record(*ends, *episode);
            }
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        if self.ack_path.told() {
            out.push(self.ack_path_finding(cx));
            return;
        }
        let all = cx.data_segments + self.retx;
        if self.episodes < MIN_EPISODES || all == 0 {
            return;
        }
        let share = self.retx as f64 / all as f64;
        if share >= MIN_SHARE {
            out.push(self.finding(share, cx.t0_ns));
        }
    }
}

impl SpuriousRetransmission {
    /// The story of ACKs lost on the way back ([`ack_path`]).
    fn ack_path_finding(&self, cx: &Context) -> Finding {
        let a = &self.ack_path;
        let (sender, receiver) = if a.by_server * 2 >= a.episodes {
            ("server", "client")
        } else {
            ("client", "server")
        };
        let stall_ms = ms(a.stall_ns);
        // The requests' time it cost: against the median exchange's, over the exchanges.
        let total_ms = cx.latency_p50_ms * cx.exchanges.max(1) as f64;
        let severity = if stall_ms * 4.0 >= total_ms {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let mut f = Finding::new(
            FindingId::SpuriousRetransmission,
            severity,
            Side::Network,
            format!(
                "ACKs lost on the way back: the {sender}'s timer resent {} segments the \
                 {receiver} had already acknowledged, stalling the transfer {stall_ms:.1} ms \
                 though the {receiver} held every byte",
                a.retx
            ),
        );
        f.confidence = 0.8;
        f.impact.added_latency_ms = Some(stall_ms);
        // The requests that waited: one per connection that stalled (examples are few).
        let mut conns: Vec<_> = a.examples.iter().map(|(c, s, _)| (*c, *s)).collect();
        conns.dedup();
        f.impact.affected_fraction =
            Some((conns.len() as f64 / cx.exchanges.max(1) as f64).min(1.0));
        f.explanation = format!(
            "This capture was taken next to the {receiver} and holds its ACKs of these bytes, \
             sent before the {sender} resent them; the {sender} sent nothing new until its \
             retransmission timer fired (and again after each doubled wait), as a sender does \
             that never got those ACKs. So the data arrived and the ACKs were lost (or held \
             longer than the timer) between the capture point and the {sender}: loss on the \
             {receiver}→{sender} path, the ACK path. A capture at the {sender} shows the same \
             stall as ordinary loss (a timeout, no ACK seen)."
        );
        f.fix = format!(
            "Look at the return path, {receiver}→{sender}: a router or firewall dropping or \
             rate-limiting packets in that direction (`iptables -L -v`, `nft list ruleset`, \
             policers, `tc -s qdisc` on the hops), a congested uplink; on the {sender} compare \
             `netstat -s` (timeouts, TCPSpuriousRTOs, TCPDSACKRecv) with the ACKs the \
             {receiver} sent. Capture at the {sender} too: ACKs the {receiver} sent that the \
             {sender} never saw were lost in between."
        );
        f.evidence = a
            .examples
            .iter()
            .map(|(client, server, ep)| Evidence::Packets {
                connection: conn_label(*client, *server),
                packets: ep.packet_refs(cx.t0_ns),
                note: format!(
                    "{} timer retransmission(s) of data the {receiver} had acknowledged; \
                     {:.1} ms from the {sender}'s previous segment to its last resend",
                    ep.retx,
                    ms(ep.before.map_or(0, |b| (ep.last.ts_ns - b.ts_ns).max(0)))
                ),
            })
            .collect();
        f
    }

    fn on_episode(&mut self, ends: Ends, ep: Episode) {
        self.episodes += 1;
        self.retx += u64::from(ep.retx);
        self.signalled += u64::from(ep.class == RetxClass::Fast);
        self.dsacked += u64::from(ep.dsacked);
        self.dsacked_retx += if ep.dsacked { u64::from(ep.retx) } else { 0 };
        self.by_server += u64::from(ep.first.from_server);
        if let Some(b) = ep.before {
            let w = ep.first.ts_ns - b.ts_ns;
            self.wait_ns = Some(
                self.wait_ns
                    .map_or((w, w), |(lo, hi)| (lo.min(w), hi.max(w))),
            );
        }
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(Example {
                client: ends.client,
                server: ends.server,
                ep,
            });
        }
    }

    fn finding(&self, share: f64, t0_ns: i64) -> Finding {
        let server = self.by_server * 2 >= self.episodes;
        let (sender, receiver) = if server {
            ("server", "client")
        } else {
            ("client", "server")
        };
        let reordering = self.signalled * 2 > self.episodes;
        let proof = if self.dsacked == self.episodes {
            format!("the {receiver} reported each one as received twice (D-SACK)")
        } else if self.dsacked == 0 {
            format!("the {receiver} had acknowledged them before they were resent")
        } else {
            format!(
                "the {receiver} reported {} of them as received twice (D-SACK) and had \
                 acknowledged the others before they were resent",
                self.dsacked_retx
            )
        };
        let summary = format!(
            "Spurious retransmissions: {} segments of the {sender}'s data were resent ({:.2}% \
             of data segments) though they had arrived: {proof}; no data was lost",
            self.retx,
            share * 100.0
        );
        let wait = match self.wait_ns {
            Some((lo, hi)) if hi - lo >= 100_000 => {
                format!("{:.1}–{:.1} ms", ms(lo), ms(hi))
            }
            Some((_, hi)) => format!("{:.1} ms", ms(hi)),
            None => "soon".to_string(),
        };
        let (side, explanation, fix) = if self.dsacked * 2 < self.episodes {
            (
                Side::Network,
                format!(
                    "The {receiver} had acknowledged these bytes (the capture holds its ACK \
                     before the resend) and the {sender} resent them anyway: that ACK was lost \
                     between the capture point and the {sender}, or reached it only after its \
                     timer fired. The data itself was not lost; these retransmissions are not \
                     counted as packet loss."
                ),
                "Nothing to fix for the data. If it is frequent, capture next to the sender to \
                 see whether the ACKs reach it (lost ACKs) or come late (a timer shorter than \
                 the round trip)."
                    .to_string(),
            )
        } else if reordering {
            (
                Side::Network,
                format!(
                    "The {sender} resent segments after the {receiver}'s duplicate ACKs or SACK \
                     blocks, but {proof}: the originals arrived after later segments, and the \
                     {sender} took the reordering for loss. Reordering, not loss, on the path \
                     (several paths of different delay, link aggregation, a NIC or driver that \
                     reorders). These retransmissions are not counted as packet loss; frequent \
                     reordering still costs throughput, as each time the {sender} halves its rate."
                ),
                "Nothing to fix for the requests. If it is frequent, find what reorders \
                 packets (ECMP over links of different delay, bonding); Linux's RACK \
                 (net.ipv4.tcp_recovery) widens its reordering window after a D-SACK."
                    .to_string(),
            )
        } else {
            (
                if server { Side::Server } else { Side::Client },
                format!(
                    "The {sender} resent data {wait} after its previous segment without a \
                     duplicate ACK or SACK before it (a tail-loss probe, RFC 8985, or its \
                     retransmission timer), because no ACK had come yet; but {proof}. The \
                     {sender}'s timer was more eager than the {receiver}'s ACKs (a receiver \
                     that delays its ACKs, a round trip that grew), and nothing was lost: these \
                     retransmissions cost a little bandwidth and no request waited for them. \
                     They are not counted as packet loss."
                ),
                format!(
                    "Nothing to fix for the requests. If they are frequent, check whether the \
                     {receiver} delays its ACKs long (Windows' 200 ms delayed ACK; \
                     TCP_QUICKACK) and whether the round trip varies a lot."
                ),
            )
        };
        let mut f = Finding::new(
            FindingId::SpuriousRetransmission,
            Severity::Info,
            side,
            summary,
        );
        f.confidence = if self.dsacked == self.episodes {
            0.9
        } else {
            0.8
        };
        f.explanation = explanation;
        f.fix = fix;
        f.evidence = self
            .examples
            .iter()
            .map(|e| {
                let packets = e.ep.packet_refs(t0_ns);
                let how = if e.ep.dsacked {
                    "reported received twice (D-SACK)"
                } else {
                    "already acknowledged"
                };
                let wait =
                    e.ep.before
                        .map(|b| {
                            format!(
                                ", {:.1} ms after the previous segment",
                                ms(e.ep.first.ts_ns - b.ts_ns)
                            )
                        })
                        .unwrap_or_default();
                Evidence::Packets {
                    connection: conn_label(e.client, e.server),
                    packets,
                    note: format!("{} retransmission(s){wait}: {how}", e.ep.retx),
                }
            })
            .collect();
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::detect::testkit::*;

    fn spurious(k: u64, class: RetxClass, dsack: bool) -> Episode {
        let t = k as i64 * 1000;
        let first = pkt(k * 10 + 5, t + 31, false, F::PSH, 1420);
        let mut e = Episode::synthetic(first, first, t * MS + T0, 1, 1);
        e.class = class;
        e.dsacked = dsack;
        e.before = Some(pkt(k * 10 + 4, t, false, F::PSH, 31));
        e
    }

    fn run_eps(eps: &[Episode], data_segments: u64) -> Vec<Finding> {
        let ev: Vec<Event<'_>> = eps
            .iter()
            .map(|e| Event::LossEpisode {
                ends: ends(),
                episode: *e,
            })
            .collect();
        let mut c = cx(2);
        c.data_segments = data_segments;
        run::<SpuriousRetransmission>(&ev, &c)
    }

    #[test]
    fn tail_probes_reported_twice_are_the_senders_eager_timer() {
        let v = run_eps(
            &[
                spurious(0, RetxClass::Probe, true),
                spurious(1, RetxClass::Probe, true),
            ],
            19,
        );
        assert_eq!(v.len(), 1);
        let f = &v[0];
        assert_eq!((f.severity, f.side), (Severity::Info, Side::Client));
        assert!(
            f.summary.contains("9.52% of data segments"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("D-SACK"), "{}", f.summary);
        assert!(f.explanation.contains("31.0 ms"), "{}", f.explanation);
    }

    #[test]
    fn resends_on_duplicate_acks_that_arrived_are_reordering() {
        let v = run_eps(
            &[
                spurious(0, RetxClass::Fast, true),
                spurious(1, RetxClass::Fast, true),
            ],
            50,
        );
        assert_eq!(v[0].side, Side::Network);
        assert!(
            v[0].explanation.contains("reordering"),
            "{}",
            v[0].explanation
        );
    }

    /// explore9's setup 6 (client-side capture, frames 166–170): the server's timer resent
    /// data the client had acknowledged, after 208 ms and 424 ms.
    fn acked_timer_resend(k: u64, wait_ms: i64) -> Episode {
        let t = k as i64 * 1000;
        let first = pkt(k * 10 + 5, t + wait_ms, true, F::ACK, 1448);
        let mut e = Episode::synthetic(first, first, t * MS + T0, 1, 1);
        e.class = RetxClass::Timeout;
        e.timer_retx = 1;
        e.near_receiver = Some(true);
        e.acked_at_start = Some(193_551);
        e.before = Some(pkt(k * 10 + 4, t, true, F::ACK, 504));
        e
    }

    #[test]
    fn timer_resends_of_acknowledged_data_next_to_the_receiver_are_ack_path_loss() {
        let eps = [acked_timer_resend(0, 208), acked_timer_resend(1, 424)];
        // 2 of 3,600 segments: far under the share, told by the 632 ms stall.
        let v = run_eps(&eps, 3600);
        assert_eq!(v.len(), 1);
        let f = &v[0];
        assert_eq!(f.side, Side::Network);
        assert!(f.severity >= Severity::Warning, "{f:?}");
        assert!(
            f.summary.starts_with("ACKs lost on the way back") && f.summary.contains("632.0 ms"),
            "{}",
            f.summary
        );
        assert!(f.fix.contains("return path, client→server"), "{}", f.fix);
        // One alone of 208 ms is still a stall to tell.
        assert_eq!(run_eps(&eps[..1], 3600).len(), 1);
    }

    #[test]
    fn look_alikes_of_ack_path_loss_are_not_told_as_it() {
        let base = acked_timer_resend(0, 424);
        // Captured next to the sender, or with no handshake to tell where: ordinary loss.
        let mut near_sender = base;
        near_sender.near_receiver = Some(false);
        let mut unknown = base;
        unknown.near_receiver = None;
        // Nothing acknowledged before the resend (a delayed ACK, a capture started mid-stream).
        let mut unacked = base;
        unacked.acked_at_start = None;
        // A tail-loss probe: no timer wait.
        let mut probe = base;
        probe.timer_retx = 0;
        probe.class = RetxClass::Probe;
        // After the last exchange: no request waited.
        let mut idle = base;
        idle.idle = true;
        // Under one minimum RTO of stall.
        let short = acked_timer_resend(0, 150);
        for e in [near_sender, unknown, unacked, probe, idle, short] {
            assert!(run_eps(&[e], 3600).is_empty(), "{e:?}");
        }
    }

    #[test]
    fn rare_spurious_resends_and_real_loss_are_not_reported() {
        // 2 of 1002 segments: below the share; one alone: not a pattern.
        let two = [
            spurious(0, RetxClass::Probe, true),
            spurious(1, RetxClass::Probe, true),
        ];
        assert!(run_eps(&two, 1000).is_empty());
        assert!(run_eps(&two[..1], 10).is_empty());
        // An episode with a retransmission that was not spurious is loss, not this.
        let mut e = spurious(0, RetxClass::Probe, true);
        e.retx = 2;
        assert!(run_eps(&[e], 10).is_empty());
    }
}

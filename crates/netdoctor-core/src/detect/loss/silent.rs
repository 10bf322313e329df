//! A receiver that went silent, told apart from loss on the path.
//!
//! The signature of a sender whose receiver stopped answering is the one of a path that lost
//! the data: the sender's retransmission timer fires again and again (0.2 s, 0.4 s, 0.8 s ...)
//! and nothing is acknowledged. What differs is the receiver: on a lossy path its ACKs keep
//! coming (duplicate ACKs for what got through, the ACK of a retransmission that made it);
//! a silent receiver sends nothing at all once the timer begins firing, though it had
//! acknowledged the same data stream before ([`Episode::peer_silent`]).
//!
//! Where the capture was decides the side. Next to the receiver (its own leg of the
//! handshake was the short one), the capture shows the retransmissions *arriving*: the path
//! delivered them, and the receiver's host did not answer. A TCP stack acknowledges what it
//! receives whatever its application does (a full buffer shows as a zero window, not as
//! silence), so its host stopped sending (hung, suspended, disconnected, a local firewall),
//! or the capture stopped recording its outgoing packets: the packets cannot tell these two
//! apart, and the sentence says both. Next to the sender (or without a handshake), the
//! capture shows them *leaving*: a receiver gone and a path that drops everything look the
//! same, and the finding stays the network's at half confidence.
//!
//! A receiver that, after the silence, answers with a reset that acknowledges nothing (RFC
//! 9293's `<SEQ=SEG.ACK><CTL=RST>`, [`Episode::peer_forgot`]) shows where the capture could not:
//! the retransmissions reached its host, which no longer had the connection (dropped without
//! a FIN or a reset: an application suspended or killed, a host restarted, a firewall in front
//! of it that forgot the flow). That side is the receiver's wherever the capture was
//! (`suri-tcp-empty-sack`: an iPhone's TLS close alert answered by the server's alert and
//! FIN, resent 3 times over 2.4 s, then a bare reset from the phone).
//!
//! Look-alikes kept apart: a lossy path with a live receiver (its ACKs come after the timer
//! fired: not silent), a capture of one direction only (no ACK ever: `acked_at_start` is
//! `None`), a receiver with a zero window (persist probes are answered, and are not
//! retransmissions), a capture that ends after one or two timer retransmissions (fewer than
//! [`Episode::SILENT_TIMER_RETX`]).

use std::net::SocketAddr;

use super::super::{MAX_EXAMPLES, added_ms, conn_label, ms};
use super::{Episode, KindAgg, human_ms};
use crate::finding::{Evidence, Finding, Side};

/// The words of a `retransmission_timeout` summary whose receiver went silent; root-cause
/// rules ([`crate::relate`]) read them.
pub const SILENT_PEER_MARK: &str = "stopped acknowledging";

/// The words of an evidence note whose receiver went silent ("... the client sent nothing
/// after the timer began firing"); the Chinese texts tell the silent-peer story from them.
pub const SILENT_NOTE_MARK: &str = "sent nothing after the timer began firing";

/// The words of such a note when the receiver's host answered at last with a reset that
/// acknowledges nothing (it no longer had the connection).
pub const FORGOT_NOTE_MARK: &str = "a reset that acknowledges nothing";

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    ep: Episode,
}

/// Timeout episodes whose receiver went silent.
#[derive(Default)]
pub(super) struct SilentAgg {
    episodes: u64,
    /// Of them, captured next to the receiver.
    near_receiver: u64,
    /// Of them, the server's data (the client went silent).
    by_server: u64,
    /// Of them, answered at last by a reset of a host without the connection.
    forgot: u64,
    /// The most timer retransmissions of one episode, and the most times its oldest segment
    /// was resent.
    timer_max: u32,
    head_max: u32,
    /// The longest time from the first timer retransmission to the last, ns.
    span_max_ns: i64,
    examples: Vec<Example>,
}

impl SilentAgg {
    pub(super) fn on_episode(&mut self, client: SocketAddr, server: SocketAddr, ep: Episode) {
        self.episodes += 1;
        self.near_receiver += u64::from(ep.near_receiver == Some(true));
        self.by_server += u64::from(ep.first.from_server);
        self.forgot += u64::from(ep.peer_forgot);
        self.timer_max = self.timer_max.max(ep.timer_retx);
        self.head_max = self.head_max.max(ep.head_resends);
        let span = ep.last.ts_ns - ep.first_timer_ns.unwrap_or(ep.first.ts_ns);
        self.span_max_ns = self.span_max_ns.max(span);
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(Example { client, server, ep });
        }
    }

    /// Tells the `retransmission_timeout` finding `f` (built from `timeout`, which counts these
    /// episodes too) as a silent receiver when every timeout episode was one; notes them when
    /// only some were.
    pub(super) fn retell(&self, timeout: &KindAgg, f: &mut Finding, t0_ns: i64) {
        if self.episodes == 0 {
            return;
        }
        let (rcv, snd) = if self.by_server * 2 >= self.episodes {
            ("client", "server")
        } else {
            ("server", "client")
        };
        if self.episodes < timeout.episodes {
            f.summary.push_str(&format!(
                "; {} of them on connections whose {rcv} then answered nothing at all (see \
                 the evidence: not loss)",
                self.episodes
            ));
            f.evidence.extend(
                self.examples
                    .iter()
                    .take(MAX_EXAMPLES.saturating_sub(f.evidence.len()))
                    .map(|e| evidence(e, rcv, t0_ns)),
            );
            return;
        }
        let near = self.near_receiver * 2 > self.episodes;
        let span = secs(self.span_max_ns);
        let cost = match (f.impact.added_latency_ms, f.impact.affected_fraction) {
            (Some(a), Some(p)) if a > 0.0 && p >= 0.01 => {
                format!("; {} on {:.0}% of requests", added_ms(a), p * 100.0)
            }
            (Some(a), _) if a > 0.0 => format!("; {}", added_ms(a)),
            _ => String::new(),
        };
        let counts = format!(
            "the {snd}'s retransmission timer fired {} times over {span} (its oldest \
             unacknowledged segment resent {} times in all)",
            self.timer_max, self.head_max
        );
        let common = format!(
            "The {snd} kept resending its oldest unacknowledged data on its retransmission \
             timer, the wait doubling each time, and the {rcv} sent nothing back: no \
             acknowledgement, no duplicate ACK, no window update, though it had acknowledged \
             the {snd}'s data on the same connection before. A working TCP stack acknowledges \
             every segment it receives whatever its application does (an application that \
             stops reading shows as a zero window, not as silence)."
        );
        let rcv_side = if rcv == "client" {
            Side::Client
        } else {
            Side::Server
        };
        if self.forgot * 2 > self.episodes {
            f.side = rcv_side;
            f.confidence = 0.7;
            f.summary = format!(
                "The {rcv} {SILENT_PEER_MARK}: {counts}, and then the {rcv}'s host answered with \
                 a reset that acknowledges nothing, the answer of a host to a connection it does \
                 not have: the segments reached it, the connection was gone there, not lost on \
                 the path{cost}"
            );
            f.explanation = format!(
                "{common} Then a reset came from the {rcv}'s address without the ACK flag, its \
                 sequence number taken from the {snd}'s acknowledgement: that is how a TCP stack \
                 answers a segment of a connection it does not know (RFC 9293). So the {snd}'s \
                 segments reached the {rcv}'s host, and the connection had been dropped there \
                 without a FIN or a reset: its application was suspended or killed and the \
                 socket discarded (mobile systems do this to an application sent to the \
                 background), the host restarted or changed networks, or a firewall or NAT in \
                 front of it forgot the flow and answered for it. The retransmissions are the \
                 {snd} waiting for a connection that no longer existed, not loss on the path."
            );
            f.fix = format!(
                "Look at the {rcv} at that time: was its application suspended, killed or \
                 restarted, did its host sleep, restart or change networks? A firewall or NAT \
                 in front of it that resets unknown flows does the same (compare the reset's IP \
                 TTL with the {rcv}'s other packets). Loss on the path does not explain these \
                 retransmissions."
            );
        } else if near {
            f.side = rcv_side;
            f.confidence = 0.7;
            f.summary = format!(
                "The {rcv} {SILENT_PEER_MARK}: {counts}, and the capture, taken next to the \
                 {rcv}, shows them arriving, but the {rcv} answered none: not loss on the path{cost}"
            );
            f.explanation = format!(
                "{common} The capture was taken next to the {rcv} (its own leg of the \
                 handshake was the short one), so these segments reached the {rcv}'s host: the \
                 path delivered them. Either the {rcv}'s host stopped sending (it hung, was \
                 suspended, lost its network, or a firewall on it dropped its packets), or the \
                 capture stopped recording the {rcv}'s outgoing packets from then on; the \
                 packets alone cannot tell these two apart. The retransmissions are the {snd} \
                 waiting for a peer that does not answer, not loss on the path; a reset from \
                 the {snd} after them is its retransmission limit giving up (Linux: \
                 net.ipv4.tcp_retries2, about 15 minutes; other stacks give up sooner)."
            );
            f.fix = format!(
                "Look at the {rcv}'s host at that time: was it hung, suspended or disconnected; \
                 does a firewall on it drop its output (`iptables -S OUTPUT`, `nft list \
                 ruleset`)? If it was fine, the capture missed its outgoing packets: capture \
                 again on the {rcv}'s host with both directions (`tcpdump -i any`) and check \
                 tcpdump's \"packets dropped by kernel\". Loss on the path does not explain \
                 these retransmissions."
            );
        } else {
            f.side = Side::Network;
            f.confidence = 0.5;
            f.summary = format!(
                "The {rcv} {SILENT_PEER_MARK}, or the path to it dropped everything: {counts} \
                 and nothing came back from the {rcv}{cost}"
            );
            f.explanation = format!(
                "{common} The capture was taken next to the {snd} (or the handshake, which \
                 tells where, was not captured), so it shows the retransmissions leaving, not \
                 arriving: a {rcv} that went silent (hung, gone, disconnected) and a path that \
                 drops everything in both directions look the same here."
            );
            f.fix = format!(
                "Check whether the {rcv} was still up and reachable at that time (its logs, \
                 `ping`, `netdoctor trace` towards it); a capture next to the {rcv} tells the \
                 two apart."
            );
        }
        f.evidence = self
            .examples
            .iter()
            .map(|e| evidence(e, rcv, t0_ns))
            .collect();
    }
}

/// "65.1 s", "850 ms".
fn secs(ns: i64) -> String {
    human_ms(ms(ns))
}

fn evidence(e: &Example, rcv: &str, t0_ns: i64) -> Evidence {
    let ep = &e.ep;
    let mut packets = Vec::with_capacity(3);
    if let Some(b) = ep.before {
        packets.push(b.to_ref(t0_ns));
    }
    packets.push(ep.first.to_ref(t0_ns));
    if ep.last.frame != ep.first.frame {
        packets.push(ep.last.to_ref(t0_ns));
    }
    let from = ep.first_timer_ns.unwrap_or(ep.first.ts_ns);
    Evidence::Packets {
        connection: conn_label(e.client, e.server),
        packets,
        note: format!(
            "{} retransmission(s), {} of them by the timer over {}, the oldest segment resent \
             {} times; never acknowledged: the {rcv} {SILENT_NOTE_MARK}{}",
            ep.retx,
            ep.timer_retx,
            secs(ep.last.ts_ns - from),
            ep.head_resends,
            if ep.peer_forgot {
                format!(" but {FORGOT_NOTE_MARK} (no such connection)")
            } else {
                String::new()
            }
        ),
    }
}

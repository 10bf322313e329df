//! `packet_loss_retransmission` and `retransmission_timeout`: segments lost and sent again.
//!
//! Per direction (`LossDir` in [`crate::track::loss`]) we classify every data segment that is not entirely new:
//!
//! - **Out of order** (not a retransmission): it fills a *hole*, a range the capture never saw
//!   because a later segment arrived first, and it came before the sender could have reacted
//!   to the receiver's complaint: no duplicate ACK / SACK pointing at the hole was captured
//!   before it, or it came less than [`REACT_RTT_DIV`]th of the handshake RTT after that
//!   complaint. (A Linux receiver complains within microseconds of an out-of-order arrival,
//!   so "was it signalled" alone cannot tell; the data path reacts faster than the handshake
//!   RTT suggests, which includes the SYN's slow path, hence the fraction.) tshark decides by
//!   a fixed time since the hole and flags late reordered segments as retransmissions and
//!   quick retransmissions as out-of-order (Wireshark issues 13843, 15993).
//!   When both the fill and the segment that opened the hole carry a non-zero IPv4
//!   identification (Linux numbers a connection's packets consecutively), the order of the
//!   two ids decides instead of the timing: an original sent before the segment that
//!   overtook it has the smaller id, a retransmission a larger one.
//! - **Retransmission**: it repeats bytes the capture already saw, or fills a hole the receiver
//!   signalled (lost before the capture point). It is a **timeout** retransmission when the
//!   sender had been silent for ≥ [`RTO_MIN_NS`] before it (Linux' minimum RTO is 200 ms; a
//!   tail-loss probe for a single outstanding segment waits as long), else a fast one (duplicate
//!   ACKs, SACK, RACK, or a short tail-loss probe).
//! - **Spurious**: the bytes were already acknowledged when they were resent (cumulatively, or
//!   inside a SACK block the receiver had sent), or the receiver reported them with a D-SACK
//!   (a SACK block below the cumulative ACK or inside the next block: "I got this twice").
//!   Spurious retransmissions cost the requests nothing and are not loss: a healthy server
//!   whose client was briefly starved of CPU must not look lossy.
//!
//! Retransmissions are grouped into **episodes**: from the first retransmission until the
//! cumulative ACK passes the highest byte sent when it began (an episode a pure ACK ends is
//! told at the connection's next packet, so that a D-SACK the receiver sends right after that
//! ACK still counts: a resend that arrived after the original, `ndpi-iphone`). An episode is a timeout episode
//! if any of its retransmissions was. Its **stall** runs from the last moment the transfer was
//! known to progress (the last cumulative ACK advance, or the start of the flight when the
//! sender had nothing outstanding) to its last retransmission; entirely spurious episodes have
//! none. The analyzer charges the stall to the exchange in progress.
//!
//! A **silent receiver** is not loss: an episode never acknowledged whose sender's timer fired
//! again and again while the receiver, which had acknowledged before, sent nothing at all
//! ([`Episode::peer_silent`]) is reported in [`silent`]'s words, on the receiver's side when
//! the capture was taken next to it (`zeek-206_example_b`).
//!
//! Capture gaps: data the receiver acknowledged (cumulatively or by SACK) but the capture never
//! saw was dropped by the capture, not by the network; it is counted and reported as a warning.

use std::net::SocketAddr;

use super::{
    Context, Detector, Interests, MAX_EXAMPLES, added_ms, conn_label, episode_severity, ms,
    worst_note,
};
use crate::event::{Ends, Event};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::observation::{CounterDelta, Observation};
use crate::stats::Hist;
pub use crate::track::loss::{Episode, REACT_RTT_DIV, RTO_MIN_NS};

mod arrived;
mod before_capture;
mod silent;
pub use before_capture::{BEFORE_CAPTURE_EVIDENCE, SOME_BEFORE_CAPTURE_EVIDENCE};
use before_capture::{before_capture_evidence, before_capture_story};
pub use silent::{FORGOT_NOTE_MARK, SILENT_NOTE_MARK, SILENT_PEER_MARK};

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    ep: Episode,
}

/// Aggregate for one of the two findings (fast loss recovery / timeouts).
#[derive(Default)]
struct KindAgg {
    episodes: u64,
    retx: u64,
    affected_exchanges: u64,
    /// Stall per affected exchange.
    stall: Option<Hist>,
    /// RTO lengths (timeouts only).
    rto: Option<Hist>,
    by_server: u64,
    /// Episodes that resent a connection's first request, none of it acknowledged.
    setup: u64,
    /// Connections whose endpoints are on one host (loopback, or the same address).
    local: u64,
    /// The longest stall of an episode (also without exchanges to charge it to).
    worst_episode_ns: i64,
    /// Episodes never acknowledged (the capture or the connection ended first), and the most
    /// times one segment was resent in one of them.
    unacked: u64,
    max_retx: u32,
    /// Episodes whose original never reached the capture point, told by the sender's IPv4
    /// ids ([`Episode::before_capture`]).
    before_capture: u64,
    /// Episodes after their connection's last exchange, none in progress ([`Episode::idle`]).
    idle: u64,
    examples: Vec<Example>,
}

/// The `packet_loss_retransmission` and `retransmission_timeout` detector.
#[derive(Default)]
pub struct Loss {
    fast: KindAgg,
    timeout: KindAgg,
    /// Timeout episodes whose receiver went silent ([`Episode::peer_silent`]), also counted
    /// in `timeout` (stalls are charged per exchange, whatever the episode).
    silent: silent::SilentAgg,
    /// Episodes of the server's data whose original the capture saw arrive at the client.
    arrived: arrived::ArrivedAgg,
    spurious_episodes: u64,
    /// Listen-queue counters that grew during the run (`TcpExt.ListenOverflows`,
    /// `TcpExt.ListenDrops`).
    listen: Vec<CounterDelta>,
}

/// The kernel counters that count a listener's dropped handshakes.
pub const LISTEN_COUNTERS: [&str; 2] = ["TcpExt.ListenOverflows", "TcpExt.ListenDrops"];

/// The listen-queue counters among `deltas` that grew.
pub(crate) fn listen_drops(deltas: &[CounterDelta]) -> Vec<CounterDelta> {
    deltas
        .iter()
        .filter(|d| LISTEN_COUNTERS.contains(&d.name.as_str()) && d.change() > 0)
        .cloned()
        .collect()
}

fn counter_evidence(listen: &[CounterDelta]) -> impl Iterator<Item = Evidence> + '_ {
    listen.iter().map(|d| Evidence::Counter {
        name: d.name.clone(),
        before: d.before,
        after: d.after,
        note: format!(
            "+{} during the run: the listener dropped handshakes",
            d.change()
        ),
    })
}

impl Detector for Loss {
    fn interests(&self) -> Interests {
        Interests::LOSS_EPISODE
            .and(Interests::EXCHANGE_DONE)
            .and(Interests::OBSERVED)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::LossEpisode { ends, episode } => self.on_episode(*ends, *episode),
            Event::ExchangeDone(x) => self.on_exchange(
                x.stall_ns(FindingId::PacketLossRetransmission),
                x.stall_ns(FindingId::RetransmissionTimeout),
            ),
            Event::Observed(Observation::Counters(deltas)) => {
                self.listen = listen_drops(deltas);
            }
            Event::Observed(Observation::RunConfig { .. }) => self.arrived.capture_at_client = true,
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        self.report(
            cx.exchanges,
            cx.data_segments,
            cx.latency_p50_ms,
            cx.t0_ns,
            out,
        );
    }
}

impl Loss {
    fn on_episode(&mut self, ends: Ends, ep: Episode) {
        let Ends { client, server } = ends;
        if ep.is_spurious() {
            self.spurious_episodes += 1;
            return;
        }
        // Resent into the receiver's closed window (zero, or below one MSS): the sender
        // probing a full window, and a reader that never answered is `zero_window`'s story
        // (`ppa-inconsistent_printer`: a printer's last 1092 bytes resent twice after 5.5 s,
        // nothing acknowledged for 16 s), not a loss to find on the path.
        if ep.window_closed {
            return;
        }
        // Not one packet of the receiver was captured (a one-way capture): whether the data
        // arrived cannot be seen (the capture-quality warning says so), unless the sender's own
        // timer, firing again and again on the same data, shows that no ACK reached it
        // (`ppa-tcp_retransmissions`: resent 5 times over 9.2 s).
        if ep.receiver_unseen && ep.timer_retx < Episode::SILENT_TIMER_RETX {
            return;
        }
        if ep.timeout && ep.peer_silent() {
            self.silent.on_episode(client, server, ep);
        }
        self.arrived.on_episode(client, server, &ep);
        let k = if ep.timeout {
            &mut self.timeout
        } else {
            &mut self.fast
        };
        k.episodes += 1;
        k.retx += u64::from(ep.retx - ep.spurious.min(ep.retx));
        k.by_server += u64::from(ep.first.from_server);
        k.setup += u64::from(ep.setup);
        k.worst_episode_ns = k.worst_episode_ns.max(ep.stall_ns());
        k.unacked += u64::from(ep.unacked);
        k.max_retx = k.max_retx.max(ep.head_resends);
        k.before_capture += u64::from(ep.before_capture);
        k.idle += u64::from(ep.idle);
        k.local += u64::from(
            client.ip().is_loopback() || server.ip().is_loopback() || client.ip() == server.ip(),
        );
        if ep.timeout {
            k.rto.get_or_insert_with(Hist::new).record_ns(ep.rto_ns);
        }
        if k.examples.len() < MAX_EXAMPLES {
            k.examples.push(Example { client, server, ep });
        }
    }

    /// An exchange finished that was stalled `fast_ns` by fast-recovered losses and
    /// `timeout_ns` by timeouts.
    fn on_exchange(&mut self, fast_ns: i64, timeout_ns: i64) {
        for (k, ns) in [(&mut self.fast, fast_ns), (&mut self.timeout, timeout_ns)] {
            if ns > 0 {
                k.affected_exchanges += 1;
                k.stall.get_or_insert_with(Hist::new).record_ns(ns);
            }
        }
    }

    fn report(
        &self,
        exchanges: u64,
        data_segments: u64,
        latency_p50_ms: f64,
        t0_ns: i64,
        out: &mut Vec<Finding>,
    ) {
        if self.fast.episodes > 0 {
            let mut f = self.finding(false, exchanges, data_segments, latency_p50_ms, t0_ns);
            self.arrived.retell(false, self.fast.episodes, &mut f);
            idle_retell(&self.fast, &mut f);
            out.push(f);
        }
        if self.timeout.episodes > 0 {
            let mut f = self.finding(true, exchanges, data_segments, latency_p50_ms, t0_ns);
            self.silent.retell(&self.timeout, &mut f, t0_ns);
            self.arrived.retell(true, self.timeout.episodes, &mut f);
            idle_retell(&self.timeout, &mut f);
            out.push(f);
        }
    }

    fn finding(
        &self,
        timeout: bool,
        exchanges: u64,
        data_segments: u64,
        p50: f64,
        t0_ns: i64,
    ) -> Finding {
        let k = if timeout { &self.timeout } else { &self.fast };
        let added = k.stall.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        let fraction =
            (exchanges > 0).then(|| (k.affected_exchanges as f64 / exchanges as f64).min(1.0));
        // Over the data segments sent (originals and retransmissions): a share that cannot pass
        // 100 %, also when one segment was resent many times.
        let rate = if data_segments + k.retx > 0 {
            k.retx as f64 / (data_segments + k.retx) as f64
        } else {
            0.0
        };
        let rto = k.rto.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        let (worst, total) = k
            .stall
            .as_ref()
            .map_or((0.0, 0.0), |h| (h.max_ms(), h.total_ms()));
        // Severity follows what the losses cost the requests; real (not spurious) loss of 1% or
        // more is a warning anyway: on a longer path each loss costs a longer round trip and
        // halves the sending rate.
        let typical = match fraction {
            Some(f) => {
                let costly = added >= 20.0 && added >= 0.25 * p50;
                let felt = added >= 5.0 || added >= 0.25 * p50;
                if timeout && f >= 0.05 || !timeout && f >= 0.10 && costly {
                    Severity::Critical
                } else if (timeout && f >= 0.001)
                    || (f >= 0.02 && felt)
                    || (k.episodes >= 5 && rate >= 0.01)
                {
                    Severity::Warning
                } else {
                    Severity::Info
                }
            }
            None if timeout || (k.episodes >= 5 && rate >= 0.01) => Severity::Warning,
            None => Severity::Info,
        };
        // Without exchanges to charge stalls to, the episodes' own count stands for the total.
        let severity = if k.stall.is_some() {
            episode_severity(typical, worst, total)
        } else {
            let w = ms(k.worst_episode_ns);
            episode_severity(typical, w, w)
        };
        // Timeouts that resent the first request of connections the server had not
        // acknowledged anything of: a listener whose queue was full drops the handshake's
        // last ACK and that request, exactly as a lossy path would.
        let at_setup = timeout && k.setup * 2 >= k.episodes;
        let listen_full = at_setup && !self.listen.is_empty();
        let local = k.local * 2 >= k.episodes;
        // Loss is on the path (or in a host's queues), whichever side sent the data; timeouts
        // at setup on one host, or with the listener's drop counters growing, are the host's.
        let side = if listen_full || (at_setup && local) {
            Side::Host
        } else {
            Side::Network
        };
        let who = if k.by_server * 2 >= k.episodes {
            "the server's data"
        } else {
            "the client's data"
        };
        // A share that rounds to 0 % says its counts instead.
        let share = match fraction {
            Some(f) if f >= 0.01 => format!(" on {:.0}% of requests", f * 100.0),
            Some(_) => format!(
                " on {} of {exchanges} requests",
                k.affected_exchanges.min(exchanges)
            ),
            None => String::new(),
        };
        let worst_part = worst_note(added, worst);
        // Without exchanges to charge them to (a cut capture, a request never answered, a
        // capture without HTTP), the stalls' own length is the cost, never "+0.0 ms".
        let cost = if k.stall.is_some() {
            format!("{}{worst_part}{share}", added_ms(added))
        } else {
            format!("stalled up to {}", human_ms(ms(k.worst_episode_ns)))
        };
        let (id, summary, explanation, fix) = if at_setup {
            setup_story(k, rto, &cost, listen_full, local, &self.listen)
        } else if timeout {
            let unacked = if k.unacked > 0 {
                format!(
                    "; {} never acknowledged before the capture ended (resent up to {} times)",
                    k.unacked, k.max_retx
                )
            } else {
                String::new()
            };
            (
                FindingId::RetransmissionTimeout,
                format!(
                    "Retransmission timeouts: {} stalls waiting for lost segments (first RTO ~{rto:.0} ms), {cost}{unacked}",
                    k.episodes
                ),
                format!(
                    "Segments of {who} were lost and nothing told the sender quickly: no later \
                     segment arrived to trigger duplicate ACKs (the lost segment was the last one \
                     of a response, or several in a row were lost). The sender waited for its \
                     retransmission timer (median {rto:.0} ms here; Linux never waits less than \
                     200 ms, and doubles it after each further loss) before sending the data \
                     again. Each such stall adds a fifth of a second or more to a request, \
                     however fast the network otherwise is."
                ),
                "Find where packets are lost (interface errors and drops with `ip -s link`, \
                 `ethtool -S`; a full queue or policer on the path; `netstat -s` on both hosts) \
                 and remove the loss. Meanwhile keep tail-loss probes on \
                 (net.ipv4.tcp_early_retrans=3, the default) and avoid sending single small \
                 segments that have nothing behind them to trigger fast retransmit."
                    .to_string(),
            )
        } else if k.before_capture == k.episodes {
            before_capture_story(k, who, rate, &cost)
        } else {
            (
                FindingId::PacketLossRetransmission,
                format!(
                    "Packet loss: {} segments of {who} retransmitted ({:.2}% of data segments), {cost}",
                    k.retx,
                    rate * 100.0
                ),
                format!(
                    "Segments of {who} were lost between the sender and the receiver. The \
                     receiver noticed the gap (duplicate ACKs, SACK blocks naming what it did \
                     get) and the sender resent the missing data without waiting for a timer \
                     (fast retransmit), so each loss costs about a round trip, and the sender \
                     halves its sending rate. Reordered segments and spurious retransmissions \
                     (reported by the receiver with a D-SACK) are not counted here: {} loss \
                     episodes were spurious.",
                    self.spurious_episodes
                ),
                "Find where packets are lost: interface errors and drops (`ip -s link`, \
                 `ethtool -S`), a full queue or a policer on the path, a congested link \
                 (`netstat -s | grep -i retrans` on both hosts). Loss on a LAN is never normal."
                    .to_string(),
            )
        };
        let mut f = Finding::new(id, severity, side, summary);
        if k.before_capture > 0 {
            f.evidence.push(before_capture_evidence(k));
        }
        f.confidence = (0.7 + 0.29 * (k.episodes as f64 / 5.0).min(1.0)).min(0.99);
        if at_setup && !listen_full {
            // Path loss and a full listen queue look the same in the packets.
            f.confidence = f.confidence.min(0.5);
        }
        f.impact.added_latency_ms = k.stall.is_some().then_some(added);
        f.impact.affected_fraction = fraction;
        f.explanation = explanation;
        if k.before_capture > 0 && k.before_capture < k.episodes {
            f.explanation.push_str(&format!(
                " {} of these resends were of segments lost before the capture point: the \
                 capture never saw the originals, the sender's IPv4 ids skipped them.",
                k.before_capture
            ));
        }
        f.fix = fix;
        f.evidence.extend(k.examples.iter().map(|e| {
                let packets = e.ep.packet_refs(t0_ns);
                let note = if e.ep.before_capture {
                    format!(
                        "the sender's IPv4 id skipped one: the original of this data never \
                         reached the capture point; resent {:.1} ms after the data before it",
                        ms(e.ep.stall_ns())
                    )
                } else if e.ep.timeout {
                    format!(
                        "{} retransmission(s); the first came after {:.1} ms of silence (RTO); stalled {:.1} ms",
                        e.ep.retx,
                        ms(e.ep.rto_ns),
                        ms(e.ep.stall_ns())
                    )
                } else {
                    format!(
                        "{} retransmission(s) ({} spurious); stalled {:.2} ms",
                        e.ep.retx,
                        e.ep.spurious,
                        ms(e.ep.stall_ns())
                    )
                };
                Evidence::Packets {
                    connection: conn_label(e.client, e.server),
                    packets,
                    note,
                }
            }));
        if listen_full {
            f.evidence.extend(counter_evidence(&self.listen));
        }
        f
    }
}

/// Episodes that all came after their connection's last exchange ([`Episode::idle`]), no
/// stall charged to a request: the resent data answered no request, so nobody waited on it,
/// however long the sender's timer ran (`suri-tcp-empty-sack`: the server's TLS close alert and
/// FIN, resent 3 times over 2.4 s after the phone's own close alert had ended the session).
/// Info, and the summary says why; who stopped answering stays told.
fn idle_retell(k: &KindAgg, f: &mut Finding) {
    if k.idle < k.episodes || k.stall.is_some() {
        return;
    }
    f.severity = Severity::Info;
    f.summary.push_str(
        "; no request was in progress (the resent data came after the connection's last \
         exchange had ended): no request waited on it",
    );
    f.explanation.push_str(
        " These resends all came after their connection's last exchange had ended, with no \
         request in progress (a closing TLS alert, a FIN): they delayed no request.",
    );
}

/// `9176.0` → "9.2 s", `206.3` → "206 ms", `0.33` → "0.33 ms" (the evidence's precision).
fn human_ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.1} s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.2} ms")
    }
}

/// Summary, explanation and fix of timeouts that resent connections' first requests
/// (`cost`: what they cost the requests, as the summary says it).
fn setup_story(
    k: &KindAgg,
    rto: f64,
    cost: &str,
    listen_full: bool,
    local: bool,
    listen: &[CounterDelta],
) -> (FindingId, String, String, String) {
    let n = k.episodes;
    let head = format!(
        "Retransmission timeouts at connection setup: the first request of {n} connection(s) \
         waited ~{rto:.0} ms (RTO) to be resent, {cost}"
    );
    let queue_fix = "Check the server's listen queue (`ss -ltn`: Recv-Q reaching Send-Q; `nstat \
                     -az TcpExtListenOverflows TcpExtListenDrops`): accept faster (more workers, \
                     a non-blocking accept loop) or raise the backlog (the listen() argument, \
                     e.g. nginx `listen ... backlog=N`, and net.core.somaxconn).";
    if listen_full {
        let counts: Vec<String> = listen
            .iter()
            .map(|d| format!("{} +{}", d.name, d.change()))
            .collect();
        (
            FindingId::RetransmissionTimeout,
            format!(
                "{head}: the server's listen queue overflowed ({})",
                counts.join(", ")
            ),
            "The connections' first requests were not lost on the path: the listening socket's \
             accept queue was full. The kernel then drops the client's last handshake ACK (the \
             client believes it is connected) and the request that follows; the client waits \
             for its retransmission timer (200 ms or more, doubled each time) and sends the \
             request again, until the server's application accepts connections. The kernel's \
             ListenOverflows/ListenDrops counters grew during the run."
                .to_string(),
            queue_fix.to_string(),
        )
    } else {
        let place = if local {
            "Client and server are on one host, so there is no network path to lose them: the \
             likely cause is the server's listen queue."
        } else {
            "Without the server's counters the two cannot be told apart here."
        };
        (
            FindingId::RetransmissionTimeout,
            format!("{head}: a full listen queue or a lossy path"),
            format!(
                "The first request of these connections was sent right after the handshake and \
                 the server acknowledged none of it; the client resent it only when its \
                 retransmission timer fired. Either the path lost it, or the server's listen \
                 queue was full: the kernel then drops the handshake's last ACK and the request \
                 that follows until the application accepts. {place}"
            ),
            format!(
                "{queue_fix} If the listen-queue counters did not grow, find where packets are \
                 lost (`ip -s link`, `ethtool -S`, `netstat -s` on both hosts)."
            ),
        )
    }
}

#[cfg(test)]
mod tests;

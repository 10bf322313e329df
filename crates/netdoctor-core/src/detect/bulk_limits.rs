//! What limited a bulk transfer, from the packets alone ([`Event::Bulk`], built by
//! `analyze::bulk`): the same ids as `netdoctor throughput`'s `TCP_INFO` rules, one limit per
//! transfer, tried in this order (each excludes the ones after it):
//!
//! | id | rule (over the watched part of one direction) | look-alike kept apart |
//! |---|---|---|
//! | `mss_mtu_problem` (black hole) | ≥ 2 full-size segments resent by timeout at the acknowledged edge into an open window, the edge never moved after, the peer kept sending packets | a dead peer (silent), a closed window, a path that drops everything (nothing was ever acknowledged) |
//! | `mss_mtu_problem` (small MSS) | the receiver announced an MSS under 1200 bytes (a 1280-byte IPv6-minimum path announces ≥ 1220) | the black hole (full-size segments vanish; here they are small and arrive) |
//! | `application_limited` | nothing in flight with the window open and the peer silent for ≥ 20 % of the time in gaps of ≥ 1 ms and ≥ 4 RTTs on average, in flight at the window in < 20 % of samples, at most one request/response turn | a request/response connection (the peer spoke in the gaps), a window-bound sender, a CPU-bound writer on a fast path (many sub-millisecond gaps) |
//! | `receive_window_limited` | the window's scale known (both SYNs), ≥ 60 % of samples within one segment of the advertised window | a shaper or loss (in flight far below the window) |
//! | `shaper_limited` | ACK RTT median ≥ 2 ms and ≥ 2× its minimum (a standing queue), the rate flat (bins' CV ≤ 0.2) | random loss (no queue), a window-bound transfer |
//! | `congestion_limited` | ≥ 0.5 % of the segments (≥ 3) retransmitted, not spurious | segments the capture missed (acknowledged but never seen: capture gaps, not retransmissions) |
//! | `send_buffer_limited` | in flight flat-topped (median ≥ 70 % of the 90th percentile) and under half the window, nothing lost, no queue; confidence 0.8 when the sender was also ACK-clocked (≥ [`ACK_CLOCKED`] of new segments right after a peer ACK), else 0.6 | a flat-out transfer (in flight grows with cwnd; paced or CPU-bound, not ACK-clocked), a writer that idles (caught above), the window (caught above), a shaper's cwnd-bound sender (ACK-clocked too, but queued: caught above), a capture at the receiver (judged only near the sender) |
//!
//! From the receiver's view (the capture near the client, as `diagnose` takes it),
//! `shaper_limited` is judged over all the server's transfers together ([`arrivals`]): their
//! summed arrivals flat while any ran, with loss; or, without loss, held by a deep queue
//! ([`queue`]: over the server's answers of every size, the round trip under load far above
//! the idle one and the summed rate flat).
//!
//! `application_limited`, `shaper_limited` and `send_buffer_limited` need the capture taken
//! near the sender (`BulkTransfer::sender_side`, from the handshake): near the receiver the
//! sender's data in flight and the path's RTT are not visible, and a slow-start sender that
//! waits one round trip per burst looks idle (seen on the corpus's `zeek-timestamp.pcap`).
//!
//! Judged only on transfers of at least [`MIN_BYTES`] with [`MIN_SAMPLES`] in-flight samples
//! (the black hole excepted: it stops a transfer early). A transfer is one request/response
//! turn of one side (`analyze::bulk` starts a new one when the peer answered), so keep-alive
//! traffic of many small answers is never one large transfer (the reference demo's healthy
//! server once read as `congestion_limited` from 8 retransmissions among 1,499 segments of
//! 600-byte answers, when a connection's whole direction was one transfer). The congestion
//! window is not on the wire; the transfer bound by neither end nor the path's queue or loss gets no finding.

mod arrivals;
mod queue;

use super::{Detector, Event, Interests};
use crate::analyze::bulk::BulkTransfer;
use crate::event::Pkt;
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};

/// Bytes a transfer must carry to be judged.
pub const MIN_BYTES: u64 = 512 * 1024;
/// In-flight samples a transfer must have to be judged.
pub const MIN_SAMPLES: u64 = 100;
/// The share of new segments sent right after a peer ACK above which a sender is ACK-clocked
/// (`send_buffer_limited`'s second sign). Measured on the lab captures: `tcp_wmem` 16 KB 0.75,
/// the unimpaired (bbr-paced, CPU-bound) transfer 0.28.
pub const ACK_CLOCKED: f64 = 0.5;
/// Below this announced MSS a path is a small-MSS one.
pub const SMALL_MSS: u16 = 1200;

#[derive(Default)]
pub struct BulkLimits {
    /// Per id: transfers with that limit, and the first one's finding.
    found: Vec<(FindingId, u64, Finding)>,
    judged: u64,
    /// The server's transfers summed, for `shaper_limited` seen from the receiver.
    arrivals: arrivals::Arrivals,
    /// The server's answers of every size, for `shaper_limited` held by a deep queue.
    queue: queue::Queue,
}

impl Detector for BulkLimits {
    fn interests(&self) -> Interests {
        Interests::BULK
            .and(Interests::EXCHANGE_DONE)
            .and(Interests::ZERO_WINDOW)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::ExchangeDone(x) => {
                if let Some(rtt) = x.rtt_ns {
                    self.arrivals.rtt(rtt);
                }
                self.queue.add(x);
                return;
            }
            Event::ZeroWindow {
                reader_is_server: false,
                ..
            } => {
                self.arrivals.client_window_closed();
                return;
            }
            _ => {}
        }
        let Event::Bulk(t) = ev else {
            return;
        };
        self.judged += 1;
        self.arrivals.add(t);
        let Some(f) = judge(t) else {
            return;
        };
        match self.found.iter_mut().find(|(id, _, _)| *id == f.id) {
            Some(e) => e.1 += 1,
            None => self.found.push((f.id, 1, f)),
        }
    }

    fn finish(&mut self, cx: &super::Context, out: &mut Vec<Finding>) {
        // From the receiver's view, one finding for all the server's transfers together (the
        // sender-side rule, when it fired, already said it).
        let shaped = (!self
            .found
            .iter()
            .any(|(id, _, _)| *id == FindingId::ShaperLimited))
        .then(|| self.arrivals.judge().or_else(|| self.queue.judge()))
        .flatten()
        .map(|f| (f.id, 0, f));
        for (_, n, mut f) in self.found.drain(..).chain(shaped) {
            if n > 1 {
                f.summary = format!("{} (and {} more bulk transfers)", f.summary, n - 1);
            }
            // The summed view's finding counts every transfer of the server.
            // (The queue rule's finding counts its answers itself.)
            if n > 0 || f.impact.affected_fraction.is_none() {
                let n = if n == 0 { self.arrivals.transfers() } else { n };
                f.impact.affected_fraction = Some(n as f64 / self.judged.max(1) as f64);
            }
            for e in &mut f.evidence {
                if let Evidence::Packets { packets, .. } = e {
                    for p in packets {
                        // Times were kept absolute until the capture's start was known.
                        p.time = p.ts - cx.t0_ns as f64 / 1e9;
                    }
                }
            }
            out.push(f);
        }
    }
}

fn kb(b: f64) -> String {
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MB", b / 1024.0 / 1024.0)
    } else {
        format!("{:.1} KB", b / 1024.0)
    }
}

fn mbit(t: &BulkTransfer) -> String {
    format!("{:.1} Mbit/s", t.bits_per_second() / 1e6)
}

fn sides(t: &BulkTransfer) -> (Side, Side, &'static str, &'static str) {
    if t.sender_is_server {
        (Side::Server, Side::Client, "server", "client")
    } else {
        (Side::Client, Side::Server, "client", "server")
    }
}

/// The one limit of a transfer, if any.
pub fn judge(t: &BulkTransfer) -> Option<Finding> {
    if let Some(f) = black_hole(t) {
        return Some(f);
    }
    if t.bytes < MIN_BYTES || t.samples < MIN_SAMPLES {
        return None;
    }
    let share = |k: u64| k as f64 / t.samples.max(1) as f64;
    let (sender, receiver, sname, rname) = sides(t);
    let dur = t.duration_ns().max(1) as f64;
    let idle = t.idle_ns as f64 / dur;
    let at_window = share(t.at_window);
    let figures = format!(
        "{} sent in {:.0} ms ({}), {} in flight at the median (10th–90th percentile {}–{}) against a median advertised window of {}{}; ACK RTT median {:.2} ms, minimum {:.3} ms ({} samples); {} of {} segments retransmitted ({} spurious, {} by timeout); idle {:.0} ms",
        kb(t.bytes as f64),
        dur / 1e6,
        mbit(t),
        kb(f64::from(t.inflight_p50)),
        kb(f64::from(t.inflight_p10)),
        kb(f64::from(t.inflight_p90)),
        kb(f64::from(t.window_p50)),
        if t.window_known {
            ""
        } else {
            " (scale unknown: no SYN)"
        },
        f64::from(t.rtt_p50_us) / 1000.0,
        f64::from(t.rtt_min_us) / 1000.0,
        t.rtt_samples,
        t.retransmitted,
        t.segments,
        t.spurious,
        t.rto,
        t.idle_ns as f64 / 1e6,
    );
    let mk = |id, sev, side, summary: String, explanation: String, fix: &str, conf: f64| {
        let mut f = finding(id, sev, side, summary, explanation, fix, conf);
        f.evidence.push(packets(t, t.full_example, figures.clone()));
        f
    };
    if let Some(mss) = t.peer_mss.filter(|m| *m < SMALL_MSS) {
        return Some(mk(
            FindingId::MssMtuProblem,
            Severity::Warning,
            Side::Network,
            format!(
                "small segments: the {rname}'s SYN arrived announcing an MSS of {mss} bytes, so the transfer moved {} at most {mss} bytes per packet",
                mbit(t)
            ),
            format!(
                "The {rname}'s SYN (as it reached the capture point: a middlebox may have rewritten it) announced a maximum segment size of {mss} bytes, so every segment of this {} transfer carried at most {mss} bytes instead of the 1448 an Ethernet path allows: {:.1}× the packets for the same bytes, and the rate is bound by packets per second (per-packet costs on both hosts and every hop). Full-size segments were not lost (that would be a black hole); they were never sent.",
                kb(t.bytes as f64),
                1448.0 / f64::from(mss)
            ),
            "Find what lowers the MSS: an `iptables … -j TCPMSS --set-mss` clamp or a tunnel on the path, or the receiving host's route (`ip route … advmss`) or MTU; raise it to the path's real MTU minus 40 bytes.",
            0.8,
        ));
    }
    // The writer's pauses, not a busy host's scheduling: gaps of a millisecond and four round
    // trips on average (a CPU-bound writer on a microsecond path idles in many tiny gaps).
    let mean_gap = t.idle_ns / t.idle_gaps.max(1) as i64;
    let long_gaps = mean_gap >= 1_000_000 && mean_gap >= 4_000 * i64::from(t.rtt_p50_us);
    // Idle time, the ACK RTT and the in-flight level mean what they say only when the capture
    // was taken near the sender.
    let here = t.sender_side == Some(true);
    if here && t.turns <= 1 && idle >= 0.2 && long_gaps && at_window < 0.2 {
        return Some(mk(
            FindingId::ApplicationLimited,
            Severity::Info,
            sender,
            format!(
                "the {sname} sent nothing for {:.0} % of the transfer with all its data acknowledged and the window open ({})",
                idle * 100.0,
                mbit(t)
            ),
            format!(
                "In {} gaps ({:.0} ms of {:.0} ms) every byte the {sname} had sent was acknowledged, the {rname}'s window was open and the {rname} sent nothing, yet no new data came: the {sname}'s application did not write. Neither the network nor the receiver held the transfer back.",
                t.idle_gaps,
                t.idle_ns as f64 / 1e6,
                dur / 1e6
            ),
            "Let the application write faster (larger writes, no rate limit, more parallel streams), or accept this rate as intended; no network or kernel setting needs to change.",
            idle.min(1.0),
        ));
    }
    if t.window_known && at_window >= 0.6 {
        return Some(mk(
            FindingId::ReceiveWindowLimited,
            Severity::Warning,
            receiver,
            format!(
                "limited by the {rname}'s receive window: {} in flight sat at its {} window in {:.0} % of samples ({})",
                kb(f64::from(t.inflight_p50)),
                kb(f64::from(t.window_p50)),
                at_window * 100.0,
                mbit(t)
            ),
            format!(
                "In {} of {} samples the data in flight was within one segment of the window the {rname} advertised, so the {sname} could send no more until the {rname}'s ACKs opened it: one window per round trip ({:.2} ms median) is the rate. {} bytes of window at that RTT allow at most {:.0} Mbit/s.",
                t.at_window,
                t.samples,
                f64::from(t.rtt_p50_us) / 1000.0,
                t.window_p50,
                f64::from(t.window_p50) * 8.0 / (f64::from(t.rtt_p50_us.max(1)) / 1e6) / 1e6
            ),
            "Raise the receiver's buffer: `net.ipv4.tcp_rmem` (its maximum at least the bandwidth × RTT), `net.core.rmem_max` if the application sets SO_RCVBUF, keep `net.ipv4.tcp_window_scaling = 1`, and check the application does not set a small SO_RCVBUF.",
            at_window,
        ));
    }
    let queue_us = t.rtt_p50_us.saturating_sub(t.rtt_min_us);
    let cv = t.rate_cv();
    if here
        && t.rtt_samples >= 10
        && queue_us >= 2000
        && t.rtt_p50_us >= 2 * t.rtt_min_us.max(1)
        && cv <= 0.2
    {
        return Some(mk(
            FindingId::ShaperLimited,
            Severity::Warning,
            Side::Network,
            format!(
                "limited by a shaper or policer on the path: a flat {} with {:.1} ms of queueing (ACK RTT {:.1} ms against a minimum of {:.2} ms)",
                mbit(t),
                f64::from(queue_us) / 1000.0,
                f64::from(t.rtt_p50_us) / 1000.0,
                f64::from(t.rtt_min_us) / 1000.0
            ),
            format!(
                "The rate varied by only {:.1} % between time bins while the ACK RTT stayed {:.1} ms above its minimum: data waits in a queue in front of a fixed rate. The receiver's window had room (full in {:.0} % of samples), so neither end set this rate.",
                cv * 100.0,
                f64::from(queue_us) / 1000.0,
                at_window * 100.0
            ),
            "Find the shaper or policer on the path (a tc htb/tbf qdisc, a cloud instance or VPN bandwidth cap, a provider's policer) and raise its rate, or accept it as the path's capacity.",
            (1.0 - cv).clamp(0.0, 1.0),
        ));
    }
    let lost = t.retransmitted.saturating_sub(t.spurious);
    if lost >= 3 && lost as f64 >= 0.005 * t.segments as f64 {
        return Some(mk(
            FindingId::CongestionLimited,
            Severity::Warning,
            Side::Network,
            format!(
                "limited by loss on the path: {lost} segments retransmitted against {} sent new ({:.1} %), {} in flight against a {} window ({})",
                t.segments,
                lost as f64 * 100.0 / t.segments.max(1) as f64,
                kb(f64::from(t.inflight_p50)),
                kb(f64::from(t.window_p50)),
                mbit(t)
            ),
            format!(
                "The {sname} resent {lost} segments ({} by timeout); each loss halves the congestion window (or stops sending for a timeout), so the data in flight stayed far under the {rname}'s window. Segments the capture itself missed are not counted ({} bytes acknowledged but never captured).",
                t.rto, t.missing_bytes
            ),
            "Find where packets drop on the path (interface errors, a full queue, a faulty link or a policer: `ip -s link`, `ethtool -S`, `netdoctor trace`); a loss-tolerant congestion control (bbr) on the sender softens it.",
            (lost as f64 / t.segments.max(1) as f64 / 0.005).min(1.0),
        ));
    }
    // A flat top: the median in flight near the 90th percentile (the samples right after an
    // idle gap are small, so the low percentiles say nothing).
    let flat = u64::from(t.inflight_p50) * 10 >= u64::from(t.inflight_p90) * 7;
    if here
        && t.window_known
        && flat
        && t.inflight_p90 > 0
        && u64::from(t.inflight_p90) * 2 < u64::from(t.window_p50)
        && lost == 0
        && t.rtt_p50_us < 2 * t.rtt_min_us.max(1) + 1000
    {
        // The second sign, from the timing: a sender whose buffer is the bound answers ACKs
        // (each frees buffer space the blocked writer refills), while a paced or CPU-bound
        // sender (the unimpaired look-alike: 28 % of its segments after an ACK) and a
        // rate-limited writer send on their own schedule.
        let clocked = t.ack_clocked as f64 / t.segments.max(1) as f64;
        let both = clocked >= ACK_CLOCKED;
        let clock_note = if both {
            format!(
                " Both signs agree: {:.0} % of the new segments left right after an ACK (median {} µs after it), nothing sent in between: the {sname} was ACK-clocked, each ACK freeing buffer space the writer refilled, rather than sending on its own schedule as a paced or CPU-bound sender does.",
                clocked * 100.0,
                t.ack_reaction_p50_us
            )
        } else {
            format!(
                " Only {:.0} % of the new segments left right after an ACK (a send-buffer limit makes the sender ACK-clocked, usually most of them), so the timing does not confirm the buffer as the bound; the flat level alone suggests it.",
                clocked * 100.0
            )
        };
        return Some(mk(
            FindingId::SendBufferLimited,
            Severity::Info,
            sender,
            format!(
                "the {sname} kept a flat {} in flight, under half the {rname}'s {} window, with nothing lost ({})",
                kb(f64::from(t.inflight_p50)),
                kb(f64::from(t.window_p50)),
                mbit(t)
            ),
            format!(
                "The data in flight stayed at {} (median; 90th percentile {}) while the {rname} offered {} and nothing was lost or queued, so neither the window nor the path capped it: the {sname} had no more to send each round trip, which a small send buffer (`tcp_wmem`) does.{clock_note} A congestion window is not on the wire; the {sname}'s socket figures (`ss -tmi`) confirm it.",
                kb(f64::from(t.inflight_p50)),
                kb(f64::from(t.inflight_p90)),
                kb(f64::from(t.window_p50))
            ),
            "Raise the sender's send buffer: `net.ipv4.tcp_wmem` (its maximum at least the bandwidth × RTT), `net.core.wmem_max` if the application sets SO_SNDBUF, and check the application does not set a small SO_SNDBUF.",
            if both { 0.8 } else { 0.6 },
        ));
    }
    None
}

/// Full-size segments that vanish while the peer is alive and the window open.
fn black_hole(t: &BulkTransfer) -> Option<Finding> {
    if t.stuck_full_rto < 2 || !t.peer_alive_after_stuck {
        return None;
    }
    let (_, _, sname, rname) = sides(t);
    let mut f = finding(
        FindingId::MssMtuProblem,
        Severity::Critical,
        Side::Network,
        format!(
            "full-size segments vanish on the path: the {sname} resent a {}-byte segment {} times by timeout and it was never acknowledged, while the {rname} kept answering",
            t.max_segment, t.stuck_full_rto
        ),
        format!(
            "{} bytes were acknowledged, then a full-size segment ({} bytes of payload; the {rname} announced MSS {}) was resent {} times with the timer backing off, into an open window, and the acknowledged edge never moved, though the {rname} still sent packets. Smaller packets get through and full-size ones do not: a hop with a smaller MTU whose ICMP \"fragmentation needed\" does not come back (a path MTU black hole).",
            t.acked_bytes,
            t.max_segment,
            t.peer_mss.map_or("unknown".to_string(), |m| m.to_string()),
            t.stuck_full_rto
        ),
        "Let ICMP type 3 code 4 (IPv6: type 2) through on the path, or clamp the MSS at the small hop (`iptables -t mangle -A FORWARD -p tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu`), or enable `net.ipv4.tcp_mtu_probing = 1` on the sender.",
        0.8,
    );
    f.evidence.push(packets(
        t,
        t.stuck_example,
        format!(
            "{} full-size retransmissions by timeout at the same sequence number; {} bytes acknowledged before",
            t.stuck_full_rto, t.acked_bytes
        ),
    ));
    Some(f)
}

/// A finding with its texts and confidence; the evidence comes from [`packets`].
fn finding(
    id: FindingId,
    severity: Severity,
    side: Side,
    summary: String,
    explanation: String,
    fix: &str,
    confidence: f64,
) -> Finding {
    let mut f = Finding::new(id, severity, side, summary);
    f.explanation = explanation;
    f.fix = fix.to_string();
    f.confidence = confidence;
    f
}

/// The evidence of a transfer's finding: its first packet and `example` (once, when the
/// example is the first packet), with `note`.
fn packets(t: &BulkTransfer, example: Option<Pkt>, note: String) -> Evidence {
    let example = example.filter(|e| t.first.is_none_or(|f| f.frame != e.frame));
    Evidence::Packets {
        connection: t.connection.clone(),
        packets: [t.first, example]
            .into_iter()
            .flatten()
            .map(|p| p.to_ref(0))
            .collect(),
        note,
    }
}

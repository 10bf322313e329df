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
//! which only that ACK opened. Such stalls are handed to
//! [`delayed_ack_stall`](super::delayed_ack_stall) instead (`Stall::nagle == false`).

use std::net::SocketAddr;

use super::{MAX_EXAMPLES, Pkt, conn_label, ms};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::stats::Hist;

/// ACKs later than this are delayed ACKs rather than prompt ones (Linux minimum: 40 ms;
/// some timer slack is allowed below it).
pub const MIN_ACK_DELAY_NS: i64 = 30_000_000;
/// The held segment must leave within this (plus 2 RTT) after the ACK.
pub const HOLD_BASE_NS: i64 = 1_000_000;

/// Per-direction tracker (lives in the connection state of the sending side).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NagleDir {
    prev: Option<Pkt>,
    prev_end: u32,
    ack: Option<Pkt>,
    peer_data: bool,
}

/// One detected stall.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stall {
    pub prev: Pkt,
    pub ack: Pkt,
    pub held: Pkt,
    /// `held` was smaller than the MSS: Nagle's doing. Otherwise a window-limited sender.
    pub nagle: bool,
}

impl Stall {
    // Saturating: capture files may hold any i64 timestamps (found by fuzzing).
    pub(crate) fn delay_ns(&self) -> i64 {
        self.ack.ts_ns.saturating_sub(self.prev.ts_ns)
    }
    pub(crate) fn hold_ns(&self) -> i64 {
        self.held.ts_ns.saturating_sub(self.ack.ts_ns)
    }
}

fn seq_ge(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

impl NagleDir {
    /// The sender sent new data `x` ending at sequence `end`.
    pub(crate) fn on_data(
        &mut self,
        x: Pkt,
        end: u32,
        mss: Option<u16>,
        rtt_ns: Option<i64>,
    ) -> Option<Stall> {
        let mut stall = None;
        if let (Some(prev), Some(ack)) = (self.prev, self.ack)
            && !self.peer_data
        {
            // Full-size segments carry up to 40 bytes of options (timestamps: 12) less.
            let small = mss.is_none_or(|m| x.len + 40 < u32::from(m));
            let s = Stall {
                prev,
                ack,
                held: x,
                nagle: small,
            };
            let rtt = rtt_ns.unwrap_or(0).max(0);
            let late = s.delay_ns() >= MIN_ACK_DELAY_NS
                && (rtt_ns.is_none() || s.delay_ns() >= rtt.saturating_mul(10));
            let prompt =
                (0..=HOLD_BASE_NS.saturating_add(rtt.saturating_mul(2))).contains(&s.hold_ns());
            if late && prompt {
                stall = Some(s);
            }
        }
        self.prev = Some(x);
        self.prev_end = end;
        self.ack = None;
        self.peer_data = false;
        stall
    }

    /// The peer sent a pure ACK (no data, SYN, FIN or RST) acknowledging up to `ack`.
    pub(crate) fn on_peer_ack(&mut self, ack: u32, pkt: Pkt) {
        if self.prev.is_some() && self.ack.is_none() && seq_ge(ack, self.prev_end) {
            self.ack = Some(pkt);
        }
    }

    /// The peer sent data: a new message, so the next segment is not a held-back piece.
    pub(crate) fn on_peer_data(&mut self) {
        self.peer_data = true;
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

    /// An exchange that had at least one stall of the server's (or the client's) data completed.
    pub(crate) fn on_affected_exchange(&mut self, server_side: bool) {
        self.0[usize::from(!server_side)].affected_exchanges += 1;
    }

    /// The sides with stalls, each with whether it is the server's data that waited.
    pub(crate) fn active(&self) -> impl Iterator<Item = (bool, &StallSide)> {
        [(true, &self.0[0]), (false, &self.0[1])]
            .into_iter()
            .filter(|(_, s)| s.stalls > 0)
    }
}

/// The `nagle_delayed_ack` findings, one per side whose data Nagle held.
pub(crate) fn finish(agg: &StallSides, exchanges: u64, t0_ns: i64, out: &mut Vec<Finding>) {
    for (server_held, s) in agg.active() {
        out.push(finding(server_held, s, exchanges, t0_ns));
    }
}

fn finding(server_held: bool, s: &StallSide, exchanges: u64, t0_ns: i64) -> Finding {
    let median = s.delay.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
    let hold_med = s.hold.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
    let fraction =
        (exchanges > 0).then(|| (s.affected_exchanges as f64 / exchanges as f64).min(1.0));
    let events = s.affected_exchanges.max(s.stalls);
    let severity = if fraction.unwrap_or(0.0) >= 0.10 && median >= 20.0 {
        Severity::Critical
    } else if events >= 5 {
        Severity::Warning
    } else {
        Severity::Info
    };
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
    let share = match fraction {
        Some(f) => format!("on {:.0}% of requests", f * 100.0),
        None => format!("{events} times"),
    };
    let summary = format!(
        "{who}'s Nagle algorithm waits for the {peer}'s delayed ACK: +{median:.1} ms {share}"
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
            Evidence::Packets {
                connection: conn_label(e.client, e.server),
                packets: vec![
                    st.prev.to_ref(t0_ns),
                    st.ack.to_ref(t0_ns),
                    st.held.to_ref(t0_ns),
                ],
                note: format!(
                    "ACK after {:.1} ms (delayed ACK), held {} bytes left {:.2} ms after it",
                    ms(st.delay_ns()),
                    st.held.len,
                    ms(st.hold_ns())
                ),
            }
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

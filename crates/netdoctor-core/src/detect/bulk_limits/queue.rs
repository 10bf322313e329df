//! `shaper_limited` held by a deep queue (bufferbloat): the rate is flat at a ceiling and the
//! queue in front of it absorbs every burst instead of dropping, so nothing is lost and the
//! [`super::arrivals`] rule (which wants the queue's overflow) stays silent, while every
//! request waits behind the others' data. Seen from a capture near the client, over the
//! server's answers of every size (`Event::ExchangeDone`, not only bulk transfers):
//!
//! - the round trip under load (`ExchangeDone::echo_rtt_ns`: the client's timestamps echoed by
//!   the server's data, `track::echo`; the median over the answers that have one) at least
//!   `track::echo::MIN_QUEUE_NS` (5 ms) above the idle round trip (the smallest handshake RTT or echo seen) and
//!   at least `MIN_RATIO` (4)× it: a queue that fills under load. A long path has a high RTT
//!   idle *and* loaded (ratio near 1); a slow server delays only the first byte of an answer
//!   (its echo is of the request, not counted); a client's small window delays nothing;
//! - the queue holds more than one answer: its delay × the rate ≥ the median answer (one
//!   connection alone queues at most its own answer: the deep queue at low load is healthy);
//! - the server's answers, summed over the connections, arrive at a flat rate (as in
//!   [`super::arrivals`]: ≥ 75 % of the busy 100 ms bins within ±30 % of the median, busy
//!   ≥ 80 % of the span, ≥ [`super::arrivals::MIN_BUSY_BINS`] bins judged): the ceiling;
//! - at least [`MIN_SAMPLES`] answers with a sample, on at least 2 connections.
//!
//! Answers are summed only from the first round trip of [`MIN_QUEUE_NS`] or more (the period
//! in which a queue may exist): a capture without one costs a comparison per answer.
//!
//! Blamed on the network from the packets alone (the queue is on the way; a capture near the
//! client cannot say on whose host): `diagnose` moves it to the server when its namespace's
//! qdisc says so. The finding's numbers are the ones the sentence uses.

use super::arrivals::{Arrivals, MIN_BUSY_BINS, MIN_FLAT_SHARE};
use crate::event::{Ends, ExchangeDone, Pkt};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::track::echo::MIN_QUEUE_NS;

// The bar of a queue: `track::echo::queued` (`MIN_QUEUE_NS`, `MIN_RATIO`).
/// Answers with a round-trip sample under load.
pub const MIN_SAMPLES: usize = 20;
/// Samples kept (a fixed-size memory).
const KEEP: usize = 4096;

#[derive(Default)]
pub struct Queue {
    arrivals: Arrivals,
    /// Per answer with a sample: its round trip under load, ns; and the answers' sizes.
    loaded_ns: Vec<i64>,
    sizes: Vec<u64>,
    /// The idle round trip: the smallest handshake RTT or echo seen.
    idle_ns: Option<i64>,
    connections: Vec<Ends>,
    answers: u64,
    /// A round trip of [`MIN_QUEUE_NS`] or more was seen: answers are summed from then on
    /// (before it, no queue; a capture without one pays one comparison per answer).
    queueing: bool,
    /// The answer with the largest round trip under load, as evidence.
    example: Option<(i64, Ends, Pkt, Pkt)>,
}

impl Queue {
    /// One finished exchange.
    pub fn add(&mut self, x: &ExchangeDone) {
        for r in [x.rtt_ns, x.echo_rtt_ns].into_iter().flatten() {
            if r > 0 {
                self.idle_ns = Some(self.idle_ns.map_or(r, |m| m.min(r)));
            }
        }
        if x.cut || x.resp_bytes == 0 {
            return;
        }
        self.queueing |= x.echo_rtt_ns.is_some_and(|r| r >= MIN_QUEUE_NS);
        if !self.queueing {
            return;
        }
        self.answers += 1;
        self.arrivals
            .add_span(x.first_resp.ts_ns, x.last_resp.ts_ns, x.resp_bytes);
        if self.sizes.len() < KEEP {
            self.sizes.push(x.resp_bytes);
        }
        let Some(r) = x.echo_rtt_ns else {
            return;
        };
        if self.loaded_ns.len() < KEEP {
            self.loaded_ns.push(r);
        }
        if self.connections.last() != Some(&x.ends)
            && self.connections.len() < 64
            && !self.connections.contains(&x.ends)
        {
            self.connections.push(x.ends);
        }
        if self.example.as_ref().is_none_or(|e| r > e.0) {
            self.example = Some((r, x.ends, x.first_req, x.last_resp));
        }
    }

    /// The finding, when the rule holds.
    pub fn judge(&self) -> Option<Finding> {
        if self.loaded_ns.len() < MIN_SAMPLES || self.connections.len() < 2 {
            return None;
        }
        let idle = self.idle_ns?;
        let mut v = self.loaded_ns.clone();
        v.sort_unstable();
        let loaded = v[v.len() / 2];
        let queue = loaded - idle;
        if !crate::track::echo::queued(idle, loaded) {
            return None;
        }
        let (flat, median_bin, n, busy_share) = self.arrivals.flatness()?;
        if n < MIN_BUSY_BINS || flat < MIN_FLAT_SHARE || busy_share < 0.8 {
            return None;
        }
        let bin_s = self.arrivals.bin_ns() as f64 / 1e9;
        let rate = median_bin * 8.0 / bin_s;
        let mut sizes = self.sizes.clone();
        sizes.sort_unstable();
        let answer = sizes[sizes.len() / 2] as f64;
        // Bytes the queue held at the median: more than one answer, so others' data.
        let queued = queue as f64 / 1e9 * rate / 8.0;
        if queued < answer {
            return None;
        }
        let ms = |ns: i64| ns as f64 / 1e6;
        let conns = self.connections.len();
        let mut f = Finding::new(
            FindingId::ShaperLimited,
            Severity::Warning,
            Side::Network,
            format!(
                "limited by a rate held with a deep queue (bufferbloat): the server's data arrived at a flat {:.1} Mbit/s in total, and under load the round trip was {:.1} ms against {:.2} ms idle — {:.1} ms of queue, about {:.0} KB waiting, in front of every answer",
                rate / 1e6,
                ms(loaded),
                ms(idle),
                ms(queue),
                queued / 1024.0
            ),
        );
        f.explanation = format!(
            "Summed over {conns} connections, the server's answers arrived at {:.1} Mbit/s (the median of {n} bins of {:.0} ms while answers arrived, {:.0} % of them within 30 % of it): a fixed rate shared by every connection, as a shaper (`tc htb`/`tbf`, a policer with a queue) or a link of that rate gives. The queue in front of that rate is deep enough to hold the excess, so it grows instead of dropping. The server's data echoed the client's acknowledgements (TCP timestamps) {:.1} ms after they left at the median of {} answers, while the idle path's round trip (the smallest handshake or echo) is {:.2} ms: {:.1} ms of waiting in a queue, {:.0} KB at this rate, more than the median answer of {:.1} KB. Every answer, however small, waits behind the other connections' data; that, not the server's work, is where the latency under load comes from. From the packets alone the queue is on the path; where (the server's egress, a router, the client's link) is not visible.",
            rate / 1e6,
            bin_s * 1e3,
            flat * 100.0,
            ms(loaded),
            v.len(),
            ms(idle),
            ms(queue),
            queued / 1024.0,
            answer / 1024.0
        );
        f.fix = "Keep the queue short where the rate is held: replace the deep FIFO behind the shaper by `fq_codel` or `cake` (`tc qdisc replace dev IFACE parent … fq_codel`, or `cake bandwidth RATE` instead of htb+pfifo), or lower its `limit` to about one round trip's worth of packets; or pace the senders (`fq` with `maxrate`, BBR). Then `tc -s qdisc show` shows a small backlog under load, and raise the rate if it is the capacity that is too low.".to_string();
        f.confidence = flat.clamp(0.0, 0.85);
        f.impact.added_latency_ms = Some(ms(queue));
        f.impact.affected_fraction = Some(v.len() as f64 / self.answers.max(1) as f64);
        if let Some((r, ends, req, last)) = &self.example {
            f.evidence.push(Evidence::Packets {
                connection: format!("{} → {}", ends.client, ends.server),
                packets: vec![req.to_ref(0), last.to_ref(0)],
                note: format!(
                    "{} answers on {conns} connections; round trip under load {:.1} ms at the median (this answer {:.1} ms), idle {:.2} ms; summed arrivals {:.1} Mbit/s, {:.0} % of the {:.0} ms bins within 30 % of it",
                    self.answers,
                    ms(loaded),
                    ms(*r),
                    ms(idle),
                    rate / 1e6,
                    flat * 100.0,
                    bin_s * 1e3
                ),
            });
        }
        Some(f)
    }
}

//! `h2_head_of_line`: one TCP loss that stalled several HTTP/2 streams at once.
//!
//! TCP delivers in order, so a lost segment holds every stream of the connection until its
//! retransmission arrives, not only the stream whose bytes were lost. From the loss episodes
//! of cleartext HTTP/2 connections with two or more streams in progress (`analyze::h2`). The
//! loss itself is `packet_loss_retransmission`'s; this finding says what multiplexing made
//! of it. `side` is the network.

use super::{Context, Detector, Interests, conn_label, ms};
use crate::event::{Ends, Event, HolEpisode};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::stats::Hist;

#[derive(Default)]
pub struct H2HeadOfLine {
    episodes: u64,
    streams: u64,
    stall: Option<Hist>,
    examples: Vec<(Ends, HolEpisode)>,
}

impl Detector for H2HeadOfLine {
    fn interests(&self) -> Interests {
        Interests::H2
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        let Event::H2 { ends, done, .. } = ev else {
            return;
        };
        self.episodes += u64::from(done.hol_count);
        self.streams += done.hol_streams;
        for e in &done.hol {
            self.stall
                .get_or_insert_with(Hist::new)
                .record_ns(e.stall_ns);
            if self.examples.len() < super::MAX_EXAMPLES {
                self.examples.push((*ends, *e));
            }
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(h) = self.stall.as_ref().filter(|_| self.episodes > 0) else {
            return;
        };
        let per = self.streams as f64 / self.episodes as f64;
        let median = h.quantile_ms(0.5);
        let fraction =
            (cx.exchanges > 0).then(|| (self.streams as f64 / cx.exchanges as f64).min(1.0));
        let severity = if fraction.unwrap_or(0.0) >= 0.05 && median >= 20.0 {
            Severity::Critical
        } else if self.episodes >= 3 {
            Severity::Warning
        } else {
            Severity::Info
        };
        let mut f = Finding::new(
            FindingId::H2HeadOfLine,
            severity,
            Side::Network,
            format!(
                "Head-of-line blocking: {} TCP loss episodes each held {per:.1} HTTP/2 streams \
                 on average (+{median:.1} ms median), {} stream stalls in all",
                self.episodes, self.streams
            ),
        );
        f.confidence = 0.9;
        f.impact.added_latency_ms = Some(median);
        f.impact.affected_fraction = fraction;
        f.explanation = "HTTP/2 multiplexes many requests on one TCP connection, and TCP hands \
            bytes to the application only in order. A lost segment therefore holds every \
            stream whose data follows it until the retransmission arrives, not only the \
            stream it belonged to: one loss delays N requests."
            .to_string();
        f.fix = "Remove the loss first (see packet_loss_retransmission: the path, a queue, a \
            policer). Where loss cannot be avoided, spread requests over more connections or \
            use HTTP/3 (QUIC), whose streams are delivered independently."
            .to_string();
        f.evidence = self
            .examples
            .iter()
            .map(|(e, x)| Evidence::Packets {
                connection: conn_label(e.client, e.server),
                packets: vec![x.first.to_ref(cx.t0_ns), x.last.to_ref(cx.t0_ns)],
                note: format!(
                    "a loss episode: {} streams in progress waited {:.1} ms for it",
                    x.streams,
                    ms(x.stall_ns)
                ),
            })
            .collect();
        out.push(f);
    }
}

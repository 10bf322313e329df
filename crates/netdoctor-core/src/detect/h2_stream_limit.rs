//! `h2_stream_limit`: HTTP/2 requests that queued behind the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS.
//!
//! A client may have only as many streams open as the server allows; more requests wait in
//! the client, where the capture cannot see them. What the wire shows: the connection filled
//! to exactly the limit again and again (new streams opened as slots freed, never one more).
//! `side` is the server (its limit), though opening more connections on the client is the
//! other fix. Look-alikes: a client whose own concurrency equals the server's limit by chance
//! (the same wire; the summary says the queue itself is not visible), a client that never
//! fills the limit (no finding), a server that refuses streams over the limit
//! (`h2_stream_resets`, REFUSED_STREAM).

use super::{Context, Detector, Interests, conn_label, ms};
use crate::event::{Ends, Event, Pkt};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};

#[derive(Default)]
pub struct H2StreamLimit {
    queued: u64,
    streams: u64,
    limit: Option<u32>,
    examples: Vec<(Ends, Pkt, Pkt)>,
}

impl Detector for H2StreamLimit {
    fn interests(&self) -> Interests {
        Interests::H2
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        let Event::H2 { ends, done, .. } = ev else {
            return;
        };
        self.streams += u64::from(done.streams);
        self.queued += u64::from(done.at_limit_starts);
        if done.at_limit_starts > 0
            && let Some(l) = done.settings.max_concurrent_streams[1]
        {
            self.limit = Some(self.limit.map_or(l, |x| x.min(l)));
        }
        for &(end, start) in &done.queued {
            if self.examples.len() < super::MAX_EXAMPLES {
                self.examples.push((*ends, end, start));
            }
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        let streams = self.streams.max(cx.exchanges);
        let Some(limit) = self.limit else {
            return;
        };
        if self.queued < 3 || (self.queued as f64) < 0.1 * streams as f64 {
            return;
        }
        let share = self.queued as f64 / streams.max(1) as f64;
        let severity = if share >= 0.3 {
            Severity::Warning
        } else {
            Severity::Info
        };
        let mut f = Finding::new(
            FindingId::H2StreamLimit,
            severity,
            Side::Server,
            format!(
                "HTTP/2 connections ran at the server's stream limit of {limit}: {} of \
                 {streams} new streams ({:.0}%) filled it, further requests wait in the client",
                self.queued,
                share * 100.0
            ),
        );
        f.confidence = 0.7;
        f.impact.affected_fraction = Some(share.min(1.0));
        f.explanation = format!(
            "The server allows {limit} concurrent streams per connection \
             (SETTINGS_MAX_CONCURRENT_STREAMS). With that many in progress the client holds \
             further requests back, and each one starts only when a stream ends: the capture \
             shows the connection filled to exactly the limit again and again, never beyond. \
             The time those requests waited in the client is not on the wire (a client whose \
             own concurrency is exactly the limit looks the same); it adds to their latency \
             as the client measures it."
        );
        f.fix = "Raise the server's SETTINGS_MAX_CONCURRENT_STREAMS (nginx: \
            http2_max_concurrent_streams, 128 by default; gRPC: MaxConcurrentStreams) if it \
            can serve more at once, or let the client open more connections (a connection \
            pool) instead of queueing on one."
            .to_string();
        f.evidence = self
            .examples
            .iter()
            .map(|(e, end, start)| Evidence::Packets {
                connection: conn_label(e.client, e.server),
                packets: vec![end.to_ref(cx.t0_ns), start.to_ref(cx.t0_ns)],
                note: format!(
                    "a stream ended; the request that filled the limit of {limit} again \
                     started {:.2} ms later",
                    ms(start.ts_ns - end.ts_ns)
                ),
            })
            .collect();
        out.push(f);
    }
}

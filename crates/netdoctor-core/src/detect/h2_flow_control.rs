//! `h2_flow_control_stall`: HTTP/2 DATA that waited for a WINDOW_UPDATE.
//!
//! From the frames of cleartext HTTP/2 connections (`analyze::h2`): a sender used up the
//! window its peer gave (the stream's, from the peer's SETTINGS_INITIAL_WINDOW_SIZE, or the
//! connection's 65 535 bytes) before the end of its message, and its next DATA left only after
//! a WINDOW_UPDATE. With a window below the path's bandwidth-delay product every window costs a
//! round trip: the classic 64 KB default over a long path. `side` is the receiver, whose
//! window is too small. Not this: a sender with nothing more to send (its DATA ended the
//! stream, never counted), a TCP receive window that closed (`zero_window`), an application
//! that writes slowly (no exhausted window before the gap).

use super::{Context, Detector, Interests, conn_label, ms};
use crate::event::{Ends, Event, FlowWait};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::stats::Hist;

/// Per sender (0: client, 1: server).
#[derive(Default)]
struct PerSender {
    waits: u64,
    streams: Option<Hist>,
    window: Option<i64>,
    conn_level: u64,
    examples: Vec<(Ends, FlowWait)>,
}

#[derive(Default)]
pub struct H2FlowControl {
    senders: [PerSender; 2],
    rtt: Option<Hist>,
}

impl Detector for H2FlowControl {
    fn interests(&self) -> Interests {
        Interests::H2
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        let Event::H2 { ends, rtt_ns, done } = ev else {
            return;
        };
        if let Some(r) = rtt_ns
            && !done.flow.is_empty()
        {
            self.rtt.get_or_insert_with(Hist::new).record_ns(*r);
        }
        for w in &done.flow {
            let p = &mut self.senders[usize::from(w.sender_is_server)];
            p.conn_level += u64::from(w.conn_level);
            p.window = Some(p.window.map_or(w.window, |x| x.min(w.window)));
            if p.examples.len() < super::MAX_EXAMPLES {
                p.examples.push((*ends, *w));
            }
        }
        for (k, p) in self.senders.iter_mut().enumerate() {
            p.waits += u64::from(done.flow_waits[k]);
            if !done.stream_waits_ns[k].is_empty() {
                let h = p.streams.get_or_insert_with(Hist::new);
                for &ns in &done.stream_waits_ns[k] {
                    h.record_ns(ns);
                }
            }
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        let rtt_ms = self.rtt.as_ref().map(|h| h.quantile_ms(0.5));
        for (k, p) in self.senders.iter().enumerate() {
            let Some(h) = p.streams.as_ref().filter(|_| p.waits > 0) else {
                continue;
            };
            let server_sent = k == 1;
            let (sender, receiver, side) = if server_sent {
                ("server", "client", Side::Client)
            } else {
                ("client", "server", Side::Server)
            };
            let affected = h.len();
            let median = h.quantile_ms(0.5);
            let fraction =
                (cx.exchanges > 0).then(|| (affected as f64 / cx.exchanges as f64).min(1.0));
            let severity = if fraction.unwrap_or(0.0) >= 0.10 && median >= 20.0 {
                Severity::Critical
            } else if p.waits >= 3 && median >= 1.0 {
                Severity::Warning
            } else {
                Severity::Info
            };
            let window = p.window.unwrap_or(65_535);
            let which = if p.conn_level * 2 > p.waits {
                "connection (and stream)"
            } else {
                "stream"
            };
            let mut f = Finding::new(
                FindingId::H2FlowControlStall,
                severity,
                side,
                format!(
                    "HTTP/2 DATA from the {sender} waited for the {receiver}'s WINDOW_UPDATE \
                     {} times: +{median:.1} ms per affected stream ({affected} streams); the \
                     {receiver}'s flow-control window is {window} bytes",
                    p.waits
                ),
            );
            f.confidence = (0.6 + 0.35 * (p.waits as f64 / 10.0).min(1.0)).min(0.95);
            f.impact.added_latency_ms = Some(median);
            f.impact.affected_fraction = fraction;
            let bdp = match rtt_ms {
                Some(r) if r > 0.0 => {
                    let cap_mbit = window as f64 * 8.0 / (r / 1000.0) / 1e6;
                    let need_100 = 100e6 / 8.0 * r / 1000.0;
                    format!(
                        " At the connection's round trip of {r:.1} ms, a window of {window} \
                         bytes carries at most {cap_mbit:.1} Mbit/s per stream, whatever the \
                         path could do; keeping a 100 Mbit/s path busy needs a window of the \
                         bandwidth-delay product, {need_100:.0} bytes at that RTT."
                    )
                }
                _ => String::new(),
            };
            f.explanation = format!(
                "HTTP/2 flow control lets a sender have only as many bytes of DATA in flight as \
                 the receiver's window allows (the stream's: SETTINGS_INITIAL_WINDOW_SIZE, \
                 65 535 bytes by default; the connection's: 65 535 until the receiver raises \
                 it). The {sender} used the whole {which} window before its message was \
                 complete and sent its next DATA only after the {receiver}'s WINDOW_UPDATE \
                 came back, so each window cost a round trip.{bdp}"
            );
            f.fix = format!(
                "Raise the {receiver}'s HTTP/2 windows to at least the bandwidth-delay \
                 product: a larger SETTINGS_INITIAL_WINDOW_SIZE and an early WINDOW_UPDATE on \
                 stream 0 for the connection window (gRPC: enable BDP-based dynamic windows or \
                 set InitialWindowSize/InitialConnWindowSize; nginx as the receiver of request \
                 bodies: http2_body_preread_size), and send WINDOW_UPDATE as data is read, not \
                 when the window is empty."
            );
            f.evidence = p
                .examples
                .iter()
                .map(|(e, w)| Evidence::Packets {
                    connection: conn_label(e.client, e.server),
                    packets: vec![
                        w.blocked.to_ref(cx.t0_ns),
                        w.update.to_ref(cx.t0_ns),
                        w.resumed.to_ref(cx.t0_ns),
                    ],
                    note: format!(
                        "stream {}: the {} window ({} bytes) used up, WINDOW_UPDATE after \
                         {:.1} ms, the next DATA {:.1} ms after the window ran out",
                        w.stream,
                        if w.conn_level { "connection" } else { "stream" },
                        w.window,
                        ms(w.update.ts_ns - w.blocked.ts_ns),
                        ms(w.wait_ns())
                    ),
                })
                .collect();
            out.push(f);
        }
    }
}

//! `h2_stream_resets`: RST_STREAM and GOAWAY frames on cleartext HTTP/2 connections, their
//! shares by sender and error code (RFC 9113 §7).
//!
//! A client's CANCEL (a request it gave up, a browser navigating away) and a GOAWAY with
//! NO_ERROR (a graceful shutdown, a server rotating connections) are normal: alone they make
//! an info finding. Resets with an error code (REFUSED_STREAM, INTERNAL_ERROR,
//! ENHANCE_YOUR_CALM, PROTOCOL_ERROR, FLOW_CONTROL_ERROR...) or an error GOAWAY are what a
//! user sees as failed requests. `side` is the sender of most error-coded frames. Not this: a
//! TCP reset (`connection_reset`), an HTTP error status (`http_errors`).

use std::collections::BTreeMap;

use super::{Context, Detector, Interests, conn_label};
use crate::analyze::h2::error_name;
use crate::event::{Ends, Event, Pkt};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};

const NO_ERROR: u32 = 0;
const CANCEL: u32 = 8;

#[derive(Default)]
pub struct H2StreamResets {
    /// (sent by the server, code) → RST_STREAM frames.
    rst: BTreeMap<(bool, u32), u64>,
    goaway: BTreeMap<(bool, u32), u64>,
    streams: u64,
    examples: Vec<(Ends, Pkt, String)>,
}

fn benign(server: bool, code: u32) -> bool {
    code == NO_ERROR || (!server && code == CANCEL)
}

impl Detector for H2StreamResets {
    fn interests(&self) -> Interests {
        Interests::H2
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        let Event::H2 { ends, done, .. } = ev else {
            return;
        };
        self.streams += u64::from(done.streams);
        for &(server, code, n) in &done.rst {
            *self.rst.entry((server, code)).or_default() += u64::from(n);
        }
        if let Some(p) = done.rst_example
            && self.examples.len() < super::MAX_EXAMPLES
        {
            self.examples
                .push((*ends, p, "the first RST_STREAM".into()));
        }
        for &(server, code, p) in &done.goaway {
            *self.goaway.entry((server, code)).or_default() += 1;
            if !benign(server, code) && self.examples.len() < super::MAX_EXAMPLES {
                self.examples
                    .push((*ends, p, format!("GOAWAY {}", error_name(code))));
            }
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        // A client's GOAWAY NO_ERROR is how it closes; alone, nothing to report.
        self.goaway.remove(&(false, NO_ERROR));
        let resets: u64 = self.rst.values().sum();
        let goaways: u64 = self.goaway.values().sum();
        if resets + goaways == 0 {
            return;
        }
        let bad = |m: &BTreeMap<(bool, u32), u64>, server: bool| -> u64 {
            m.iter()
                .filter(|((s, c), _)| *s == server && !benign(*s, *c))
                .map(|(_, n)| n)
                .sum()
        };
        let (bad_srv, bad_cli) = (
            bad(&self.rst, true) + bad(&self.goaway, true),
            bad(&self.rst, false) + bad(&self.goaway, false),
        );
        let bad_rst = bad(&self.rst, true) + bad(&self.rst, false);
        // Answered streams and reset ones (most resets end a stream before its answer).
        let streams = self.streams.max(cx.exchanges) + resets;
        let share = bad_rst as f64 / streams as f64;
        let severity = if share >= 0.05 || bad(&self.goaway, true) + bad(&self.goaway, false) > 0 {
            Severity::Critical
        } else if bad_srv + bad_cli > 0 {
            Severity::Warning
        } else {
            Severity::Info
        };
        let side = if bad_cli > bad_srv {
            Side::Client
        } else {
            Side::Server
        };
        let list = |m: &BTreeMap<(bool, u32), u64>, total: u64| -> String {
            let mut v: Vec<_> = m.iter().collect();
            v.sort_by_key(|(_, n)| std::cmp::Reverse(**n));
            v.iter()
                .map(|((s, c), n)| {
                    format!(
                        "{} {} {n} ({:.0}%)",
                        if *s { "server" } else { "client" },
                        error_name(*c),
                        **n as f64 * 100.0 / total as f64
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if resets > 0 {
            parts.push(format!("{resets} RST_STREAM: {}", list(&self.rst, resets)));
        }
        if goaways > 0 {
            parts.push(format!("{goaways} GOAWAY: {}", list(&self.goaway, goaways)));
        }
        let mut f = Finding::new(
            FindingId::H2StreamResets,
            severity,
            side,
            format!(
                "HTTP/2 streams ended by resets: {} ({:.1}% of {streams} streams reset with an \
                 error code)",
                parts.join("; "),
                share * 100.0
            ),
        );
        f.confidence = 0.95;
        f.impact.affected_fraction = Some((resets as f64 / streams as f64).min(1.0));
        f.explanation = "An HTTP/2 endpoint ends one stream with RST_STREAM and the whole \
            connection with GOAWAY, each with an error code. REFUSED_STREAM means the server \
            did not process the request (over its stream limit, or shutting down; it is safe \
            to retry), ENHANCE_YOUR_CALM that it thinks the client abuses it (too many \
            resets, pings or settings), INTERNAL_ERROR and PROTOCOL_ERROR a fault in one of \
            the two implementations, CANCEL from the client a request it no longer wanted, \
            GOAWAY NO_ERROR a graceful close (connection rotation, reload)."
            .to_string();
        f.fix = "Look at the sender of the error-coded frames: for REFUSED_STREAM keep the \
            client's concurrent streams under the server's SETTINGS_MAX_CONCURRENT_STREAMS and \
            retry refused requests; for ENHANCE_YOUR_CALM find what the client floods \
            (cancellations, PINGs, SETTINGS); for INTERNAL_ERROR read the server's log at \
            those times; for GOAWAY during load raise the server's per-connection request \
            limit (nginx keepalive_requests) or make the client reconnect before it."
            .to_string();
        f.evidence = self
            .examples
            .iter()
            .map(|(e, p, note)| Evidence::Packets {
                connection: conn_label(e.client, e.server),
                packets: vec![p.to_ref(cx.t0_ns)],
                note: note.clone(),
            })
            .collect();
        out.push(f);
    }
}

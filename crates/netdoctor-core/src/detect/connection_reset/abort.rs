//! The story of client resets while a response was arriving
//! ([`ResetKind::ClientAbort`](crate::event::ResetKind)).
//!
//! A client that closes its socket with response bytes unread resets the connection: a load
//! generator stopping, a browser leaving a page, a download cancelled. The response was
//! flowing; nothing on the server or the path is at fault: info, on the client.
//!
//! The look-alike is a client that gave up on a response that had stopped arriving: no
//! response byte for [`STALLED_NS`] or more before its reset. The request failed (its
//! response never completed), and the cause is the stall, which the packets place between the
//! server and the client without telling which: the server stopped sending, or the path lost
//! what it sent (`suri-rst-unacked-http`: a 181 KB page, 58 KB delivered in 43 s over a lossy
//! path, then 43 s without a byte, then the client's reset; told before as a browser leaving a
//! page, "it does not slow the other requests down").
//!
//! A reset without the ACK flag is not a socket closed with data unread (Linux, Windows and
//! macOS send those with ACK): it is a host's answer to a segment of a connection it does not
//! have (RFC 9293's `<SEQ=SEG.ACK><CTL=RST>`). When every client abort is one, the client's
//! host had already dropped the connection and the response was never read there
//! (`suri-tcp-empty-sack`: the server's last 31 bytes resent 3 times by its timer, then the
//! client's host reset with a bare RST, told before as a client that chose to abort, "nothing
//! to do"); `retransmission_timeout` tells how the connection was lost.

use super::Example;
use crate::finding::{Severity, Side};
use crate::track::flags::IDLE_RESET_NS;

/// No response byte for this long before the client's reset: it gave up on a stalled
/// response, not on one that was flowing.
pub const STALLED_NS: i64 = IDLE_RESET_NS;

/// The evidence entry of client aborts when some came after the response had stalled: its
/// note starts `S of N client resets` and ends with the longest stall, `… up to 43.1 s` (the
/// zh texts key on it and read those numbers).
pub const RESPONSE_STALLED_EVIDENCE: &str = "response_stalled";

/// The evidence entry of client aborts when some were resets without the ACK flag (and none
/// came after a stall): its note starts `B of N client resets`.
pub const CLIENT_HOST_GONE_EVIDENCE: &str = "client_host_gone";

/// The evidence entry of the client's resets at setup (after the handshake or of the
/// SYN/ACK, before any request): its note starts `N of N client resets`. The zh texts key on
/// it: the generic reset text says the reset requests failed, and none did here.
pub const CLIENT_SETUP_ABORT_EVIDENCE: &str = "client_setup_abort";

/// The client resets during responses.
#[derive(Default)]
pub(super) struct ClientAborts {
    /// Of them, after the response had stalled [`STALLED_NS`] or more.
    stalled: u64,
    /// The longest of those stalls, ns.
    longest_ns: i64,
    /// Of the others (the response was flowing), resets without the ACK flag: from a host that
    /// no longer had the connection.
    bare: u64,
}

/// The time from the response's last byte before the reset to the reset, when that byte was
/// the server's.
pub(super) fn stall_ns(e: &Example) -> Option<i64> {
    e.before
        .filter(|b| b.from_server && !e.rst.from_server)
        .map(|b| e.rst.ts_ns - b.ts_ns)
}

/// An example's evidence note.
pub(super) fn note(e: &Example) -> String {
    match stall_ns(e).filter(|&s| s >= STALLED_NS) {
        Some(s) => format!(
            "the client reset {:.1} s after the response's last byte: the response had stalled",
            s as f64 / 1e9
        ),
        None if !e.rst.flags.ack() => "the client's host reset while the response arrived, \
                                       acknowledging nothing: it no longer had the connection"
            .to_string(),
        None => "the client reset while the response arrived".to_string(),
    }
}

impl ClientAborts {
    pub(super) fn record(&mut self, e: &Example) {
        if let Some(s) = stall_ns(e).filter(|&s| s >= STALLED_NS) {
            self.stalled += 1;
            self.longest_ns = self.longest_ns.max(s);
        } else if !e.rst.flags.ack() {
            self.bare += 1;
        }
    }

    /// The probe evidence of `n` client aborts (the story's numbers, for the zh texts): after
    /// a stall, or without the ACK flag; `None` when every one came while the response flowed.
    pub(super) fn probe(&self, n: u64) -> Option<(&'static str, String)> {
        let s = self.stalled.min(n);
        let bare = self.bare.min(n - s);
        if s > 0 {
            Some((
                RESPONSE_STALLED_EVIDENCE,
                format!(
                    "{s} of {n} client resets came after the response had stopped arriving: no \
                     response byte for up to {:.1} s",
                    self.longest_ns as f64 / 1e9
                ),
            ))
        } else if bare > 0 {
            Some((
                CLIENT_HOST_GONE_EVIDENCE,
                format!(
                    "{bare} of {n} client resets acknowledge nothing: the client's host no \
                     longer had those connections"
                ),
            ))
        } else {
            None
        }
    }

    /// `(fraction, severity, side, summary, explanation, fix)` of `n` client aborts in a run
    /// of `exchanges`.
    pub(super) fn story(
        &self,
        n: u64,
        exchanges: u64,
    ) -> (f64, Severity, Side, String, String, String) {
        let frac = |k: u64| (k as f64 / (exchanges + n).max(1) as f64).min(1.0);
        let flowing = "The client closed its socket with response data still unread, which \
                       makes its kernel send a reset. Load generators do this when they stop, \
                       browsers when a page is left; it does not slow the other requests down.";
        let s = self.stalled.min(n);
        let gone = "A reset without the ACK flag is how a TCP stack answers a segment of a \
                    connection it does not know (RFC 9293's <SEQ=SEG.ACK><CTL=RST>); a client \
                    that closes its socket with data unread resets with ACK. Those connections \
                    had been dropped on the client's host before the response arrived, without \
                    a FIN or a reset (its application suspended or killed, the host asleep, \
                    restarted or on another network), or a firewall or NAT in front of it forgot \
                    the flow and answered for it.";
        let gone_fix = "Look at the client at that time: was its application suspended or \
                        killed, did its host sleep or change networks? A firewall or NAT that \
                        resets unknown flows does the same (compare the reset's IP TTL with the \
                        client's other packets).";
        let bare = self.bare.min(n - s);
        if s == 0 && bare == n {
            return (
                frac(n),
                Severity::Info,
                Side::Client,
                format!(
                    "The client's host reset {n} connections while a response was arriving, \
                     with resets that acknowledge nothing: it no longer had those connections, \
                     and the responses were not read"
                ),
                gone.to_string(),
                gone_fix.to_string(),
            );
        }
        if s == 0 && bare > 0 {
            return (
                frac(n),
                Severity::Info,
                Side::Client,
                format!(
                    "The client reset {n} connections while a response was arriving; {bare} of \
                     those resets acknowledge nothing: the client's host no longer had those \
                     connections"
                ),
                format!("{flowing} {gone}"),
                gone_fix.to_string(),
            );
        }
        if s == 0 {
            return (
                frac(n),
                Severity::Info,
                Side::Client,
                format!("The client reset {n} connections while a response was arriving"),
                flowing.to_string(),
                "Nothing to do unless the client did not mean to abort.".to_string(),
            );
        }
        let secs = self.longest_ns as f64 / 1e9;
        let summary = if s == n {
            format!(
                "The client gave up on {n} responses that had stopped arriving: no response \
                 byte for up to {secs:.1} s, then the client's reset; those requests failed"
            )
        } else {
            format!(
                "The client reset {n} connections while a response was arriving; {s} of them \
                 after the response had stopped arriving (no byte for up to {secs:.1} s): \
                 those requests failed"
            )
        };
        let explanation = format!(
            "The response was not complete, and no byte of it had arrived for {:.0} s or more \
             when the client reset the connection: the client gave up waiting (its read \
             timeout, or a person who stopped waiting), so the request failed. The stall is \
             the cause, and the capture does not tell whose it is: the server stopped sending, \
             or the path lost what it sent (look for the server's retransmissions, and for \
             loss on the connection before the stall).{}",
            STALLED_NS as f64 / 1e9,
            if s < n {
                format!(" The other resets came while the response was flowing: {flowing}")
            } else {
                String::new()
            }
        );
        let fix = "Find why the response stopped: the server's logs for that request (a \
                   worker blocked, a backend that did not answer), and loss on the path \
                   (retransmissions and timeouts on the connection, `netdoctor trace` towards \
                   the server)."
            .to_string();
        let severity = if frac(s) >= 0.05 {
            Severity::Critical
        } else {
            Severity::Warning
        };
        (frac(s), severity, Side::Network, summary, explanation, fix)
    }
}

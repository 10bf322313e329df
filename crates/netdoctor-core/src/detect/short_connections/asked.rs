//! Who asked for the close: the client's requests, read from the capture.
//!
//! A server's FIN right after each answer reads as "the server closes after each response",
//! but a server closes that way when the client asks it to: a request with `Connection:
//! close`, or an HTTP/1.0 request without `Connection: keep-alive` (HTTP/1.0 closes after the
//! answer unless asked). Offline only the request header tells them apart; when the capture
//! has it, the close the client asked for is the client's (its keep-alive or pool setting),
//! and when the snap length cut the header before a `Connection:` line, the report says the
//! question could not be answered instead of guessing.

use crate::event::ClientAsked;

/// The evidence entry of the requests that asked for the close (the zh texts key on it).
pub const ASKED_CLOSE_EVIDENCE: &str = "client_asked_close";

/// What the requests on connections the server closed first asked.
#[derive(Default)]
pub(super) struct AskedCloses {
    /// `Connection: close`.
    close: u64,
    /// HTTP/1.0 without `Connection: keep-alive`.
    http10: u64,
    /// The header was cut by the snap length before it said.
    cut: u64,
}

impl AskedCloses {
    pub(super) fn record(&mut self, asked: ClientAsked) {
        match asked {
            ClientAsked::Close => self.close += 1,
            ClientAsked::Http10 => self.http10 += 1,
            ClientAsked::Cut => self.cut += 1,
            ClientAsked::KeepAlive | ClientAsked::Unknown => {}
        }
    }

    fn asked(&self) -> u64 {
        self.close + self.http10
    }

    /// Most of the `server_closed` connections closed after a request that asked for it.
    pub(super) fn by_client(&self, server_closed: u64) -> bool {
        server_closed > 0 && self.asked() * 2 > server_closed
    }

    /// Most of the `server_closed` connections' requests were cut before they said.
    pub(super) fn unreadable(&self, server_closed: u64) -> bool {
        server_closed > 0 && self.cut * 2 > server_closed
    }

    /// What the requests asked: "12 carried `Connection: close`, 3 were HTTP/1.0 ...".
    fn what(&self) -> String {
        let mut parts = Vec::new();
        if self.close > 0 {
            parts.push(format!("{} carried `Connection: close`", self.close));
        }
        if self.http10 > 0 {
            parts.push(format!(
                "{} were HTTP/1.0 without `Connection: keep-alive`",
                self.http10
            ));
        }
        parts.join(" and ")
    }

    /// The summary's part: who closed, and why.
    pub(super) fn summary(&self, server_closed: u64) -> String {
        format!(
            "; the client asked for it: the server closed {server_closed} of them first, right \
             after answering requests that asked for the close ({})",
            self.what()
        )
    }

    /// The explanation's part.
    pub(super) fn explanation(&self, server_closed: u64, conns: u64) -> String {
        format!(
            " The server sent the first FIN on {server_closed} of {conns} connections, but \
             after requests that asked for it: {}. HTTP/1.1 keeps a connection unless a \
             request says `Connection: close`; HTTP/1.0 closes after each answer unless it \
             says `Connection: keep-alive`. The server did what the client asked: the one \
             connection per request is the client's setting, not the server's.",
            self.what()
        )
    }

    /// The fix on the client.
    pub(super) fn fix() -> String {
        "Let the client keep its connections: stop sending `Connection: close` (an HTTP \
         client's or load tool's keep-alive switch, e.g. Go `DisableKeepAlives` or \
         `Request.Close`, a header added by hand), speak HTTP/1.1 (or send `Connection: \
         keep-alive` with HTTP/1.0) and reuse connections from a pool sized to the request \
         rate."
            .to_string()
    }

    /// The evidence note.
    pub(super) fn note(&self, server_closed: u64) -> String {
        format!(
            "of {server_closed} connections the server closed first, the last request's header \
             (captured): {}; {} cut by the snap length before it said",
            self.what(),
            self.cut
        )
    }

    /// The explanation's part when the snap length hid what the requests asked.
    pub(super) fn cut_note(&self, server_closed: u64, conns: u64) -> String {
        format!(
            " The server sent the first FIN on {server_closed} of {conns} connections: either \
             it closes after each response (keep-alive off or limited on the server, or it \
             answers with `Connection: close`), or the client asked it to (`Connection: close`, \
             HTTP/1.0). Which is not in the capture: its snap length cut \
             the request header of {} of those connections before its end. A capture with a \
             larger snap length (`tcpdump -s 0`) tells.",
            self.cut
        )
    }
}

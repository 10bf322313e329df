//! A TLS handshake on each new connection: its round trips are setup, not requests.
//!
//! The analyzer marks a TLS handshake's turns (ClientHello → ServerHello, and TLS 1.2's
//! ClientKeyExchange → Finished) as setup, not exchanges ([`crate::event::TlsSetup`]): a
//! connection's exchanges are its requests. Their time is added to the setup here: over
//! +37 ms, curl's 152 ms per TLS 1.2 request was told as 37 ms of setup (the TCP handshake's),
//! or, with the handshake's turns counted as requests, "3.0 requests each" and nothing
//! (`testdata/captures/tls12-short.pcap.gz`, `tls13-short.pcap.gz`).

use crate::event::TlsSetup;
use crate::stats::Hist;

/// The evidence entry of the TLS handshakes (the zh texts key on it).
pub const TLS_EVIDENCE: &str = "tls_handshake";

/// The TLS handshakes of the connections counted.
#[derive(Default)]
pub(super) struct TlsSetups {
    /// Connections with a handshake timed up to their first request.
    conns: u64,
    /// Their handshake's time (first turn to first request) and round trips.
    time: Option<Hist>,
    turns: Vec<u8>,
}

impl TlsSetups {
    /// A connection's handshake; its time (ns) to add to the connection's setup.
    pub(super) fn record(&mut self, t: &TlsSetup) -> i64 {
        if t.turns == 0 || t.handshake_us == 0 {
            return 0;
        }
        let ns = i64::from(t.handshake_us) * 1000;
        self.conns += 1;
        self.time.get_or_insert_with(Hist::new).record_ns(ns);
        if self.turns.len() < 1024 {
            self.turns.push(t.turns);
        }
        ns
    }

    /// Most of `conns` connections opened with a TLS handshake.
    pub(super) fn most(&self, conns: u64) -> bool {
        self.conns * 2 > conns
    }

    pub(super) fn median_ms(&self) -> f64 {
        self.time.as_ref().map_or(0.0, |h| h.quantile_ms(0.5))
    }

    /// The handshake's round trips on most connections.
    fn round_trips(&self) -> u8 {
        let mut t = self.turns.clone();
        t.sort_unstable();
        t.get(t.len() / 2).copied().unwrap_or(0)
    }

    fn trips(&self) -> String {
        match self.round_trips() {
            1 => "1 round trip".into(),
            n => format!("{n} round trips"),
        }
    }

    /// "(TCP handshake 37.22 ms + TLS handshake 78.31 ms, 2 round trips)".
    pub(super) fn summary(&self, tcp_ms: f64) -> String {
        format!(
            " (TCP handshake {tcp_ms:.2} ms + TLS handshake {:.2} ms, {})",
            self.median_ms(),
            self.trips()
        )
    }

    /// The explanation's sentence on the TLS part of the setup.
    pub(super) fn explanation(&self, conns: u64) -> String {
        format!(
            " On {} of {conns} connections a TLS handshake followed, {} ({:.2} ms median) from \
             the client's first TLS record to its first request: those turns carried no \
             request and are counted as setup here, not as requests. {}",
            self.conns,
            self.trips(),
            self.median_ms(),
            if self.round_trips() >= 2 {
                "TLS session resumption (a server session cache or tickets, a client that keeps \
                 its session) or TLS 1.3 takes the handshake down to one round trip; only a kept \
                 connection removes it."
            } else {
                "One round trip is already TLS 1.3's (or a resumed session's) least; only a kept \
                 connection removes it."
            }
        )
    }

    /// The evidence note: "6 of 6 connections: a TLS handshake of 2 round trips, 78.31 ms
    /// (median) from the first TLS record to the first request".
    pub(super) fn note(&self, conns: u64) -> String {
        format!(
            "{} of {conns} connections: a TLS handshake of {}, {:.2} ms (median) from the \
             client's first TLS record to its first request",
            self.conns,
            self.trips(),
            self.median_ms()
        )
    }
}

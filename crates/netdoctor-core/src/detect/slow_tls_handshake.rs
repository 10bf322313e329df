//! A server slow in the TLS handshake, told by `slow_server_processing` (side server).
//!
//! A TLS handshake's turns are connection setup, not exchanges (`analyze::tls`): they are in
//! none of the request figures, so a server slow to answer the ClientHello (a signature with
//! an oversized RSA key, an OCSP fetch made during the handshake, a key exchange on a
//! throttled CPU) would vanish from them. Each turn comes as [`Event::TlsTurn`] with its
//! server time (the server's first answer byte − the client's last handshake byte, net of the
//! round trip, as for an exchange). A turn is slow from [`MIN_SERVER_MS`] of server time; the
//! handshakes are told when at least [`MIN_EXCHANGES`] turns were slow (one is enough from
//! [`CRITICAL_MS`] on) and they were at least a third of the turns (a full TLS 1.2 handshake
//! has two turns, the server's signature in the first). Critical from [`CRITICAL_MS`] (median
//! of the slow turns), warning below; info when the connections that paid it carried many
//! requests (slow turns under 5 % of the requests: the cost is spread over kept connections).

use super::slow_server_processing::{CRITICAL_MS, MIN_EXCHANGES, MIN_SERVER_MS};
use super::{MAX_EXAMPLES, conn_label, ms};
use crate::event::ExchangeDone;
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::stats::Hist;

/// The evidence entry of a slow TLS handshake.
pub const TLS_SERVER_EVIDENCE: &str = "tls_handshake_server";

/// The TLS handshake turns seen.
#[derive(Default)]
pub(super) struct TlsHandshakes {
    turns: u64,
    slow: Option<Hist>,
    slow_n: u64,
    /// The slowest turns.
    examples: Vec<ExchangeDone>,
}

impl TlsHandshakes {
    pub(super) fn on_turn(&mut self, x: &ExchangeDone) {
        self.turns += 1;
        if ms(x.server_time_ns) < MIN_SERVER_MS {
            return;
        }
        self.slow_n += 1;
        self.slow
            .get_or_insert_with(Hist::new)
            .record_ns(x.server_time_ns);
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(*x);
        } else if let Some(k) = (0..self.examples.len())
            .min_by_key(|k| self.examples[*k].server_time_ns)
            .filter(|k| self.examples[*k].server_time_ns < x.server_time_ns)
        {
            self.examples[k] = *x;
        }
    }

    /// The median server time of the slow turns, when they are to be told.
    fn told_ms(&self) -> Option<f64> {
        let st = self.slow.as_ref()?.quantile_ms(0.5);
        let enough = self.slow_n >= MIN_EXCHANGES || st >= CRITICAL_MS;
        (enough && self.slow_n * 3 >= self.turns).then_some(st)
    }

    /// What `slow_server_processing` says of the handshakes: its finding when the requests
    /// were not slow themselves (`requests`: the completed ones), or more of its finding.
    pub(super) fn report(&self, requests: u64, t0_ns: i64, out: &mut Vec<Finding>) {
        let Some(st) = self.told_ms() else {
            return;
        };
        let worst = self.slow.as_ref().map_or(0.0, |h| h.quantile_ms(1.0));
        let sentence = format!(
            " In {} of {} TLS handshake turns (connection setup, not counted as requests) the \
             server answered after {st:.1} ms of its own (median, net of the round trip; worst \
             {worst:.1} ms): the handshake's work on the server (a signature with a large RSA \
             key, an OCSP or certificate lookup during the handshake, a busy or throttled CPU), \
             paid by every new connection before its first request.",
            self.slow_n, self.turns
        );
        let evidence = self.evidence(st, worst, t0_ns);
        if let Some(f) = out
            .iter_mut()
            .find(|f| f.id == FindingId::SlowServerProcessing)
        {
            f.explanation.push_str(&sentence);
            f.evidence.extend(evidence);
            return;
        }
        let typical = if st >= CRITICAL_MS {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let spread = requests > 0 && (self.slow_n as f64) < 0.05 * requests as f64;
        let mut f = Finding::new(
            FindingId::SlowServerProcessing,
            if spread { Severity::Info } else { typical },
            Side::Server,
            format!(
                "The server takes {st:.1} ms to answer in the TLS handshake ({} of {} handshake \
                 turns; worst {worst:.1} ms): each new connection waits that before its first \
                 request",
                self.slow_n, self.turns
            ),
        );
        f.confidence = 0.8;
        f.impact.added_latency_ms = Some(st);
        f.impact.affected_fraction =
            (requests > 0).then(|| (self.slow_n as f64 / requests as f64).min(1.0));
        f.explanation = format!(
            "The requests themselves were answered promptly, but the TLS handshake was not.{}",
            sentence
        );
        f.fix = "Make the handshake cheaper on the server: an ECDSA (P-256) certificate instead \
                 of a large RSA key, OCSP stapling from a cache (nginx `ssl_stapling on` with a \
                 resolver) rather than a lookup per handshake, session resumption (a session \
                 cache or tickets) so returning clients skip the full handshake, and kept \
                 connections so it is paid once."
            .to_string();
        // The probe leads the evidence when the handshake is the finding's whole story (the
        // Chinese report keys its own text on it); appended to a finding about slow requests
        // (above) it follows that finding's own evidence.
        f.evidence = evidence;
        f.evidence.rotate_right(1);
        out.push(f);
    }

    /// The slowest turns' packets, then the [`TLS_SERVER_EVIDENCE`] probe (last).
    fn evidence(&self, st: f64, worst: f64, t0_ns: i64) -> Vec<Evidence> {
        let mut v: Vec<Evidence> = self
            .examples
            .iter()
            .map(|x| {
                let mut pkts = vec![x.first_req, x.last_req, x.first_resp];
                pkts.dedup_by_key(|p| p.frame);
                Evidence::Packets {
                    connection: conn_label(x.ends.client, x.ends.server),
                    packets: pkts.into_iter().map(|p| p.to_ref(t0_ns)).collect(),
                    note: format!(
                        "the client's TLS handshake records, the server's answer {:.1} ms later \
                         (its time net of the round trip)",
                        ms(x.server_time_ns)
                    ),
                }
            })
            .collect();
        v.push(Evidence::Probe {
            probe: TLS_SERVER_EVIDENCE.into(),
            note: format!(
                "{} of {} TLS handshake turns: the server's time {st:.1} ms (median of the slow \
                 ones), {worst:.1} ms at most",
                self.slow_n, self.turns
            ),
        });
        v
    }
}

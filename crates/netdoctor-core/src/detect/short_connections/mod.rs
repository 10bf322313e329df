//! `short_connections`: a connection per request (or nearly), so every request pays the
//! connection setup.
//!
//! For each connection whose handshake was captured we count its completed exchanges and its
//! setup cost: the client's ACK of the SYN/ACK − the SYN the server answered (the handshake
//! RTT, plus the server's time to answer; a keep-alive connection pays it once; repeated SYNs
//! before it are `syn_retransmit`'s, [`repeats`]). The time from that ACK to
//! the first request byte is the client's own (its application connected, then took that
//! long to write): it is said apart ([`THINK_SHOWN_MS`]) and never charged to the setup, the
//! path or the server. Without a captured bare ACK (it rode on the request) the setup runs to
//! the first request byte. The finding
//! fires when at least [`MIN_CONNECTIONS`] connections carried on average no more than
//! [`MAX_EXCHANGES_PER_CONN`] exchanges. Severity follows what the setup costs relative to
//! the median request latency: on a LAN a handshake is a fraction of a millisecond (info);
//! across a continent, or with TLS on top, it dominates.
//!
//! A connection still open at the end of the capture with no more than that many exchanges
//! is left out: a short capture of a browser's parallel connections shows that too.
//!
//! Who is to change is decided from the packets: the sender of each connection's first FIN
//! (or RST) closed it. A server that closes after each response is side server (its
//! keep-alive settings); a client that closes is side client. When the run's config
//! ([`Observation::RunConfig`]) says the user asked for one connection per request
//! (`keepalive: false`), nobody is blamed for that choice: the finding is info and says so.
//!
//! A server that closed them after one steady idle time is told as its idle (keep-alive)
//! timeout being shorter than the client's wait before reusing a connection ([`idle`]): side
//! server, with both knobs in the fix, not "closes after each response".
//!
//! Measured, not guessed: when `diagnose` asked for keep-alive and still got a connection per
//! request, it runs a short keep-alive probe ([`Observation::KeepAlive`]). Then the severity
//! follows the measured cost (how many more requests/s a kept connection serves, how much
//! lower the median is: [`COST_WARNING`], [`COST_CRITICAL`]), and the side is whoever closed: a
//! server that closed the probe's keep-alive connections after one answer is side server; a
//! server that kept them means the load's connections were ended by the client. A server that
//! refuses keep-alive the client asked for is at least a warning: the cost the probe can time
//! then is a lower bound (the client-side setup only; the server's accept and close work shows
//! under load as CPU).

use std::net::SocketAddr;

mod asked;
mod example;
mod idle;
mod limit;
mod repeats;
pub(crate) mod reuse;
mod tls;
pub use asked::ASKED_CLOSE_EVIDENCE;
pub(crate) use idle::steady;
pub use idle::{IDLE_EVIDENCE, IDLE_MIN_MS};
pub use limit::LIMIT_EVIDENCE;
pub use tls::TLS_EVIDENCE;

use super::{Context, Detector, Interests, MAX_EXAMPLES, Pkt, conn_label};
use crate::event::{ClientAsked, Event, SynState, TlsSetup};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::observation::{KeepAliveCost, Observation};
use crate::stats::Hist;
use example::Example;

pub const MIN_CONNECTIONS: u64 = 5;
/// The client's own wait between its handshake ACK and its request (median), from which the
/// finding names it.
pub const THINK_SHOWN_MS: f64 = 1.0;

/// Who sent most connections' first FIN/RST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closer {
    Server,
    /// The server closed them after a steady idle time ([`idle`]): its idle timeout is
    /// shorter than the client's wait before reusing a connection.
    ServerIdle,
    /// The server closed them right after requests that asked for it (`Connection: close`,
    /// HTTP/1.0): the client's choice ([`asked`]).
    ClientAsked,
    Client,
    Unknown,
}
pub const MAX_EXCHANGES_PER_CONN: f64 = 2.0;
/// A measured cost (the larger of the req/s and p50 ratios) from which a connection per
/// request is a warning, and a critical.
pub const COST_WARNING: f64 = 1.3;
pub const COST_CRITICAL: f64 = 3.0;

/// The `short_connections` detector.
#[derive(Default)]
pub struct ShortConnections {
    conns: u64,
    exchanges: u64,
    setup: Option<Hist>,
    /// Its TCP part (SYN to the handshake ACK), told apart when TLS followed.
    tcp_setup: Option<Hist>,
    /// The waits on repeated SYNs, left out of the setup ([`repeats`]).
    repeats: repeats::SynRepeats,
    /// The TLS handshakes that followed ([`tls`]).
    tls: tls::TlsSetups,
    /// The requests on the connections the server closed right after an answer ([`limit`]).
    limit: limit::LimitCloses,
    /// The client's own wait from its handshake ACK to its first request byte.
    think: Option<Hist>,
    /// Connections whose first FIN/RST the server / the client sent.
    closed_by_server: u64,
    closed_by_client: u64,
    /// The silences before the server's first closes.
    idle: idle::IdleCloses,
    /// What the requests on the connections the server closed first asked.
    asked: asked::AskedCloses,
    /// The client's reuse gaps (answer's end to its next request on the connection), from
    /// the window's aggregates at the end (`Context::reuse_gaps`).
    reuse: Option<reuse::Gaps>,
    /// From the run's config: keep-alive was on (`Some(false)`: the user asked for one
    /// connection per request).
    keepalive: Option<bool>,
    /// The keep-alive probe's measurement, when the run made one.
    probe: Option<KeepAliveCost>,
    examples: Vec<Example>,
}

impl Detector for ShortConnections {
    fn interests(&self) -> Interests {
        Interests::CONN_DONE.and(Interests::OBSERVED)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::ConnDone(c) => {
                self.on_conn(
                    c.ends.client,
                    c.ends.server,
                    &c.syn,
                    c.first_req,
                    c.exchanges,
                    c.first_close,
                    c.idle_before_close_ns,
                    c.asked,
                    &c.tls,
                    c.crossed_fin,
                );
            }
            Event::Observed(Observation::RunConfig { keepalive, .. }) => {
                self.keepalive = Some(*keepalive);
            }
            Event::Observed(Observation::KeepAlive(c)) => self.probe = Some(c.clone()),
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        self.reuse = reuse::gaps(cx.reuse_gaps);
        self.report(cx.latency_p50_ms, cx.t0_ns, out);
    }
}

impl ShortConnections {
    /// A connection with a captured handshake ended after `exchanges` complete exchanges; its
    /// first request started at `first_req`; `st` is its handshake.
    #[allow(clippy::too_many_arguments)]
    fn on_conn(
        &mut self,
        client: SocketAddr,
        server: SocketAddr,
        st: &SynState,
        first_req: Option<Pkt>,
        exchanges: u32,
        first_close: Option<Pkt>,
        idle_before_close_ns: Option<i64>,
        asked: ClientAsked,
        tls: &TlsSetup,
        crossed_fin: bool,
    ) {
        let (Some(syn), Some(first_req)) = (st.first_syn, first_req) else {
            return;
        };
        // A TLS handshake's turns are not among them: the analyzer marks them as setup.
        if exchanges == 0 {
            return;
        }
        // Still open when the capture ended after a request or two: it may carry more (a
        // browser's parallel connections in a short capture); no evidence either way.
        if first_close.is_none() && f64::from(exchanges) <= MAX_EXCHANGES_PER_CONN {
            return;
        }
        self.conns += 1;
        self.exchanges += u64::from(exchanges);
        match first_close {
            // A reset that acknowledges nothing, from a host without the connection's state:
            // it had been dropped unseen (a load balancer's idle timeout) and this answers
            // the client's next segment. Who ended it, and when, is not in the capture.
            Some(p) if p.from_server && p.flags.rst() && !p.flags.ack() => {}
            Some(p) if p.from_server => {
                self.closed_by_server += 1;
                self.asked.record(asked);
                self.limit
                    .record(exchanges, idle_before_close_ns, p.flags.rst());
                if let Some(ns) = idle_before_close_ns {
                    self.idle.record(ns, p.flags.rst());
                }
            }
            Some(p) => {
                self.closed_by_client += 1;
                // The server's FIN crossed the client's: it closed on its own too.
                if crossed_fin {
                    self.limit
                        .record(exchanges, idle_before_close_ns, p.flags.rst());
                }
            }
            None => {}
        }
        // The handshake ends at the client's ACK; what follows before the request is the
        // client's own. An ACK that is the request itself (or none captured) leaves no wait.
        let ack = st
            .first_ack
            .filter(|a| a.len == 0 && a.ts_ns >= syn.ts_ns && a.ts_ns <= first_req.ts_ns);
        let done = ack.map_or(first_req.ts_ns, |a| a.ts_ns);
        let tls_ns = self.tls.record(tls);
        // From the SYN the server answered: the repeats before it are syn_retransmit's.
        let start = syn.ts_ns + self.repeats.record(st);
        self.setup
            .get_or_insert_with(Hist::new)
            .record_ns(done - start + tls_ns);
        self.tcp_setup
            .get_or_insert_with(Hist::new)
            .record_ns(done - start);
        self.think
            .get_or_insert_with(Hist::new)
            .record_ns(first_req.ts_ns - done);
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(Example {
                client,
                server,
                syn,
                ack,
                first_req,
                first_close,
                idle_ns: idle_before_close_ns,
            });
        }
    }

    fn report(&self, latency_p50_ms: f64, t0_ns: i64, out: &mut Vec<Finding>) {
        let seen = self.conns >= MIN_CONNECTIONS;
        let per_conn = self.exchanges as f64 / self.conns.max(1) as f64;
        // The packets show keep-alive at work (up to a per-connection request limit, maybe:
        // [`limit`]), or neither they nor a probe show anything.
        if seen && per_conn > MAX_EXCHANGES_PER_CONN {
            if self.keepalive != Some(false)
                && let Some(l) = self.limit.limit(self.conns)
            {
                out.push(self.limit_finding(l, latency_p50_ms, t0_ns));
            }
            return;
        }
        if !seen && self.probe.is_none() {
            return;
        }
        let setup = self.setup.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        let tcp_setup = self.tcp_setup.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        let with_tls = seen && self.tls.most(self.conns);
        let think = self.think.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        let think_shown = seen && think >= THINK_SHOWN_MS;
        // Share of requests that opened their own connection.
        let fraction = if seen {
            (self.conns as f64 / self.exchanges.max(1) as f64).min(1.0)
        } else {
            1.0
        };
        let share = if latency_p50_ms > 0.0 {
            setup / (setup + latency_p50_ms)
        } else {
            0.0
        };
        let requested = self.keepalive == Some(false);
        let probe = self.probe.as_ref().filter(|_| !requested);
        let severity = match probe {
            // The user's own choice: not a problem to fix, whatever it costs.
            _ if requested => Severity::Info,
            // Measured: what a kept connection saves.
            Some(p) => match p.rps_ratio.max(p.p50_ratio) {
                c if c >= COST_CRITICAL => Severity::Critical,
                c if c >= COST_WARNING => Severity::Warning,
                // Keep-alive asked and refused: the cost timed is only a lower bound.
                _ if p.lower_bound && p.server_closed > 0 => Severity::Warning,
                _ => Severity::Info,
            },
            None if setup >= 50.0 && share >= 0.3 => Severity::Critical,
            None if setup >= 1.0 && share >= 0.2 => Severity::Warning,
            None => Severity::Info,
        };
        // Offline, the server closed them right after requests that asked for the close.
        let client_asked = !requested
            && seen
            && probe.is_none()
            && self.closed_by_server > self.closed_by_client
            && self.asked.by_client(self.closed_by_server);
        // The server closed them after one steady idle time, and a probe (if any) did not see
        // it refuse keep-alive outright: its idle timeout, not a close after each answer.
        let idle = (!requested
            && !client_asked
            && seen
            && self.closed_by_server > self.closed_by_client
            && !probe.is_some_and(|p| p.server_closed > 0 && p.reused == 0))
        .then(|| self.idle.timeout(MIN_CONNECTIONS))
        .flatten();
        let closer = match probe {
            _ if idle.is_some() => Closer::ServerIdle,
            _ if client_asked => Closer::ClientAsked,
            // The server closed the probe's keep-alive connections after one answer.
            Some(p) if p.server_closed > 0 && p.reused == 0 => Closer::Server,
            // The server kept them: the load's connections ended at the client's request.
            Some(p) if p.reused > 0 => Closer::Client,
            _ if self.closed_by_server > self.closed_by_client => Closer::Server,
            _ if self.closed_by_client > 0 => Closer::Client,
            _ => Closer::Unknown,
        };
        // Offline, the server closed them but the snap length cut what the requests asked.
        let unreadable = probe.is_none()
            && closer == Closer::Server
            && self.asked.unreadable(self.closed_by_server);
        let side = match closer {
            Closer::Server | Closer::ServerIdle if !requested => Side::Server,
            _ => Side::Client,
        };
        let who_closed = match (probe, closer) {
            (_, Closer::ServerIdle) => {
                idle.map_or(String::new(), |t| t.summary(self.closed_by_server))
            }
            (Some(p), Closer::Server) => format!(
                "; the server closed {} of the keep-alive probe's {} connections after one answer",
                p.server_closed, p.connections
            ),
            (Some(p), Closer::Client) => format!(
                "; the server kept the keep-alive probe's connections ({} requests on {})",
                p.requests, p.connections
            ),
            (None, Closer::Server) => format!(
                "; the server closed {} of them first{}",
                self.closed_by_server,
                if unreadable {
                    " (whether the client asked for it, the capture's snap length cut off)"
                } else {
                    ""
                }
            ),
            (_, Closer::ClientAsked) => self.asked.summary(self.closed_by_server),
            (None, Closer::Client) => format!(
                "; the client closed {} of them first",
                self.closed_by_client
            ),
            _ => String::new(),
        };
        let measured = probe.map_or(String::new(), |p| {
            format!(
                "; measured: a kept connection {} {:.1}x the requests/s and a {:.1}x lower \
                 median ({:.2} ms for the request against {:.2} ms with setup{})",
                if p.lower_bound {
                    "would serve at least"
                } else {
                    "serves"
                },
                p.rps_ratio,
                p.p50_ratio,
                p.request_p50_ms,
                p.first_p50_ms,
                if p.lower_bound {
                    ", the client's side of it"
                } else {
                    ""
                }
            )
        });
        let counted = if seen {
            format!(
                "{} connections carried {per_conn:.1} requests each; setup costs {setup:.2} ms \
                 per request{} ({:.0}% of the time to answer){}{}",
                self.conns,
                if with_tls {
                    self.tls.summary(tcp_setup)
                } else {
                    String::new()
                },
                share * 100.0,
                self.repeats.summary(),
                if think_shown {
                    format!(
                        "; the client then waited {think:.2} ms of its own before writing its \
                         {} (median; the client's time, not setup)",
                        if with_tls {
                            "TLS ClientHello"
                        } else {
                            "request"
                        }
                    )
                } else {
                    String::new()
                }
            )
        } else {
            let p = probe.or(self.probe.as_ref());
            p.map_or(String::new(), |p| {
                format!(
                    "the keep-alive probe's {} requests needed {} connections",
                    p.requests, p.connections
                )
            })
        };
        let mut f = Finding::new(
            FindingId::ShortConnections,
            severity,
            side,
            format!(
                "One connection per request{}: {counted}{}{measured}",
                if requested {
                    " (as requested: keep-alive was off for this run)"
                } else {
                    ""
                },
                if requested { String::new() } else { who_closed }
            ),
        );
        f.confidence = match probe {
            Some(_) => 0.95,
            // The server closed, but maybe because the client asked (not in the capture).
            None if unreadable => 0.7,
            None => 0.9,
        };
        f.impact.added_latency_ms = Some(match probe {
            Some(p) => (p.first_p50_ms - p.request_p50_ms).max(0.0),
            None => setup,
        });
        f.impact.affected_fraction = Some(fraction);
        f.explanation = format!(
            "Each request opened a new TCP connection{}{}. The handshake costs a round trip before the request can even be sent{}, each new \
             connection starts with a small congestion window, and every closed connection \
             leaves a TIME_WAIT socket behind (at high rates: ephemeral port exhaustion). With \
             keep-alive the handshake is paid once per connection.{}{}{}{}",
            if with_tls {
                " with a TLS session on it"
            } else {
                ""
            },
            if closer == Closer::ServerIdle {
                ", and the connection was closed before the next one"
            } else {
                " and closed it after the response"
            },
            match (seen, with_tls) {
                (true, false) => format!(
                    " (median {setup:.2} ms here from the {} to the client's ACK of the SYN/ACK)",
                    self.repeats.counted_from()
                ),
                (true, true) => format!(
                    " (median {tcp_setup:.2} ms here from the {} to the client's ACK of the \
                     SYN/ACK, then the TLS handshake's)",
                    self.repeats.counted_from()
                ),
                _ => String::new(),
            },
            if with_tls {
                self.tls.explanation(self.conns)
            } else {
                String::new()
            },
            if think_shown {
                format!(
                    " After its handshake ACK the client waited {think:.2} ms (median) before it \
                     wrote its {}: that wait is the client application's own (work between \
                     connect() and write(), a pool handing the connection over late), not the \
                     network's or the server's, and reusing connections does not remove it.",
                    if with_tls {
                        "TLS ClientHello"
                    } else {
                        "request"
                    }
                )
            } else {
                String::new()
            },
            match (requested, closer, probe) {
                (true, _, _) => " This run asked for it (keep-alive off), so this is the cost \
                                 of that choice, not a fault of either side."
                    .to_string(),
                (false, Closer::Server, Some(p)) => format!(
                    " The load asked for keep-alive; so did a short probe afterwards, and the \
                     server closed {} of its {} connections after the first answer: it closes \
                     after each response (keep-alive off or limited on the server, or it \
                     answers with `Connection: close`).",
                    p.server_closed, p.connections
                ),
                (false, Closer::Client, Some(p)) => format!(
                    " A short keep-alive probe afterwards got {} requests answered on {} \
                     connections: the server keeps connections when asked, so the load's \
                     connections were ended by the client (or by what it sent).",
                    p.requests, p.connections
                ),
                (false, Closer::ServerIdle, _) => idle.map_or(String::new(), |t| {
                    t.explanation(
                        self.conns,
                        self.reuse,
                        probe
                            .filter(|p| p.reused > 0)
                            .map(|p| (p.requests, p.connections)),
                    )
                }),
                (false, Closer::Server, None) if unreadable => {
                    self.asked.cut_note(self.closed_by_server, self.conns)
                }
                (false, Closer::Server, None) => format!(
                    " The server sent the first FIN on {} of {} connections: it closes after \
                     each response (keep-alive off or limited on the server, or it answers with \
                     `Connection: close`).",
                    self.closed_by_server, self.conns
                ),
                (false, Closer::ClientAsked, _) => {
                    self.asked.explanation(self.closed_by_server, self.conns)
                }
                (false, Closer::Client, None) => format!(
                    " The client sent the first FIN on {} of {} connections: it does not reuse \
                     them.",
                    self.closed_by_client, self.conns
                ),
                (false, _, _) => String::new(),
            },
            probe.map_or(String::new(), |p| if p.lower_bound {
                format!(
                    " The server kept no connection, so keep-alive could not be timed on it; the \
                     probe split its first requests instead: {:.2} ms with setup, {:.2} ms for \
                     the request (medians). That is the client's side of the cost only (at least \
                     {:.1}x the requests/s per connection); the server's accept and close work \
                     stays inside the request time and shows under load as CPU, so the real \
                     cost is higher.",
                    p.first_p50_ms, p.request_p50_ms, p.rps_ratio
                )
            } else {
                format!(
                    " Measured by that probe: a request on a kept connection took {:.2} ms \
                     (median), a connection's first request with its setup {:.2} ms; so a \
                     connection per request serves {:.1}x fewer requests per connection and \
                     second, and its median is {:.1}x higher.",
                    p.request_p50_ms, p.first_p50_ms, p.rps_ratio, p.p50_ratio
                )
            })
        );
        f.fix = match (requested, closer, idle) {
            (true, _, _) => "Nothing to fix: one connection per request was requested. Run \
                          without --no-keepalive (and without a `Connection: close` header) to \
                          measure with connection reuse."
                .to_string(),
            (false, Closer::ServerIdle, Some(t)) => t.fix(),
            (false, Closer::ClientAsked, _) => asked::AskedCloses::fix(),
            (false, Closer::Server, _) => "Let the server keep connections open: enable HTTP \
                 keep-alive and raise its limits (nginx `keepalive_timeout`, \
                 `keepalive_requests`; Apache `KeepAlive On`, `MaxKeepAliveRequests`), and stop \
                 it from answering with `Connection: close` (a proxy or framework setting)."
                .to_string(),
            _ => "Reuse connections: HTTP/1.1 keep-alive (do not send `Connection: close`; \
                 wrk/curl/HTTP client libraries pool connections by default), a connection pool \
                 in the client, `keepalive` in nginx upstream blocks."
                .to_string(),
        };
        f.evidence = self
            .examples
            .iter()
            .map(|e| e.evidence(think_shown, closer, t0_ns))
            .collect();
        if let Some(t) = idle {
            f.evidence.push(Evidence::Probe {
                probe: IDLE_EVIDENCE.into(),
                note: t.note(self.reuse),
            });
        }
        if closer == Closer::ClientAsked {
            f.evidence.push(Evidence::Probe {
                probe: ASKED_CLOSE_EVIDENCE.into(),
                note: self.asked.note(self.closed_by_server),
            });
        }
        if with_tls {
            f.evidence.push(Evidence::Probe {
                probe: TLS_EVIDENCE.into(),
                note: self.tls.note(self.conns),
            });
        }
        if let Some(p) = probe {
            f.evidence.push(Evidence::Probe {
                probe: "keepalive".into(),
                note: format!(
                    "{} requests with `Connection: keep-alive` on {} connections ({} reused, {} \
                     closed by the server after one answer), {:.0} requests/s; first request \
                     with setup {:.2} ms, request alone {:.2} ms{} (medians)",
                    p.requests,
                    p.connections,
                    p.reused,
                    p.server_closed,
                    p.requests_per_s,
                    p.first_p50_ms,
                    p.request_p50_ms,
                    if p.lower_bound {
                        " (the first requests' own time: no connection was kept)"
                    } else {
                        " (on kept connections)"
                    }
                ),
            });
        }
        out.push(f);
    }
}

impl ShortConnections {
    /// The server's per-connection request limit as the finding ([`limit`]).
    fn limit_finding(&self, l: limit::Limit, latency_p50_ms: f64, t0_ns: i64) -> Finding {
        let setup = self.tcp_setup.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        let mut f = Finding::new(
            FindingId::ShortConnections,
            if l.warning(setup, latency_p50_ms) {
                Severity::Warning
            } else {
                Severity::Info
            },
            Side::Server,
            l.summary(self.conns, setup, latency_p50_ms),
        );
        f.confidence = 0.85;
        f.impact.added_latency_ms = Some(setup);
        f.impact.affected_fraction = Some(1.0 / f64::from(l.n));
        f.explanation = l.explanation(setup);
        f.fix = l.fix();
        f.evidence = self
            .examples
            .iter()
            .filter(|e| e.first_close.is_some_and(|p| p.from_server))
            .map(|e| Evidence::Packets {
                connection: conn_label(e.client, e.server),
                packets: [Some(e.syn), Some(e.first_req), e.first_close]
                    .into_iter()
                    .flatten()
                    .map(|p| p.to_ref(t0_ns))
                    .collect(),
                note: "SYN, the first request, and the server's FIN after the last answer".into(),
            })
            .collect();
        f.evidence.push(Evidence::Probe {
            probe: LIMIT_EVIDENCE.into(),
            note: l.note(),
        });
        f
    }
}

#[cfg(test)]
mod tests;

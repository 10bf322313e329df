//! `connection_reset`: connections ended by a TCP reset (RST).
//!
//! Each RST is classified by who sent it and when:
//! - **refused**: the server answered a SYN with a reset (nothing listens, or a firewall
//!   rejects): instead of a handshake;
//! - **during an exchange**: a request was sent and its response had not started or was still
//!   coming (the server reset it, or the client gave up before the response started);
//! - **client abort**: the client reset while a response was arriving (a client that closes
//!   with unread data, e.g. a load generator stopping or a browser cancelling): info;
//! - **idle**: between exchanges (keep-alive connection dropped).
//!
//! Severity follows the share of requests that failed; client aborts are never above info.

use std::net::SocketAddr;

use super::{Context, Detector, Interests, MAX_EXAMPLES, Pkt, conn_label};
use crate::event::{Event, ResetKind};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    before: Option<Pkt>,
    rst: Pkt,
}

#[derive(Default)]
struct KindAgg {
    count: u64,
    by_server: u64,
    examples: Vec<Example>,
}

/// The `connection_reset` detector.
#[derive(Default)]
pub struct ConnectionReset {
    kinds: [KindAgg; 4],
}

impl Detector for ConnectionReset {
    fn interests(&self) -> Interests {
        Interests::RESET
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        if let Event::Reset {
            ends,
            kind,
            before,
            rst,
        } = ev
        {
            self.on_reset(ends.client, ends.server, *kind, *before, *rst);
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        self.report(cx.exchanges, cx.connections, cx.t0_ns, out);
    }
}

fn idx(k: ResetKind) -> usize {
    match k {
        ResetKind::Refused => 0,
        ResetKind::DuringExchange => 1,
        ResetKind::ClientAbort => 2,
        ResetKind::Idle => 3,
    }
}

impl ConnectionReset {
    fn on_reset(
        &mut self,
        client: SocketAddr,
        server: SocketAddr,
        kind: ResetKind,
        before: Option<Pkt>,
        rst: Pkt,
    ) {
        let k = &mut self.kinds[idx(kind)];
        k.count += 1;
        k.by_server += u64::from(rst.from_server);
        if k.examples.len() < MAX_EXAMPLES {
            k.examples.push(Example {
                client,
                server,
                before,
                rst,
            });
        }
    }

    fn report(&self, exchanges: u64, connections: u64, t0_ns: i64, out: &mut Vec<Finding>) {
        for kind in [
            ResetKind::Refused,
            ResetKind::DuringExchange,
            ResetKind::ClientAbort,
            ResetKind::Idle,
        ] {
            let k = &self.kinds[idx(kind)];
            if k.count == 0 {
                continue;
            }
            let by_server = k.by_server * 2 >= k.count;
            let (who, side) = if by_server {
                ("server", Side::Server)
            } else {
                ("client", Side::Client)
            };
            let n = k.count;
            let (fraction, severity, summary, explanation, fix) = match kind {
                ResetKind::Refused => {
                    let frac = (n as f64 / connections.max(1) as f64).min(1.0);
                    (
                        frac,
                        if frac >= 0.05 {
                            Severity::Critical
                        } else {
                            Severity::Warning
                        },
                        format!(
                            "{n} connection attempts were refused with a reset instead of a handshake"
                        ),
                        "The client sent a SYN and the server's host answered with a reset: no \
                         socket listens on that address and port (or a firewall rejects it with \
                         a reset). These requests fail at once."
                            .to_string(),
                        "Start the server or point the client at the port it listens on (`ss \
                         -ltnp` on the server); check reject rules in the firewall."
                            .to_string(),
                    )
                }
                ResetKind::DuringExchange => {
                    let frac = (n as f64 / (exchanges + n).max(1) as f64).min(1.0);
                    (
                        frac,
                        if frac >= 0.05 {
                            Severity::Critical
                        } else {
                            Severity::Warning
                        },
                        format!(
                            "The {who} reset {n} connections in the middle of a request/response"
                        ),
                        format!(
                            "A request was sent and the {who} aborted the connection with a reset \
                             before the response was complete: the request failed. Servers do \
                             this when a worker crashes or is killed, when they close a socket \
                             with SO_LINGER 0, or when a proxy or load balancer in between times \
                             out; clients when they give up waiting."
                        ),
                        format!(
                            "Look at the {who}'s logs at these times (crashes, timeouts, killed \
                             workers) and at proxies or load balancers between the client and \
                             the server (idle and request timeouts)."
                        ),
                    )
                }
                ResetKind::ClientAbort => (
                    (n as f64 / (exchanges + n).max(1) as f64).min(1.0),
                    Severity::Info,
                    format!("The client reset {n} connections while a response was arriving"),
                    "The client closed its socket with response data still unread, which makes \
                     its kernel send a reset. Load generators do this when they stop, browsers \
                     when a page is left; it does not slow the other requests down."
                        .to_string(),
                    "Nothing to do unless the client did not mean to abort.".to_string(),
                ),
                ResetKind::Idle => (
                    (n as f64 / connections.max(1) as f64).min(1.0),
                    if n >= 5 {
                        Severity::Warning
                    } else {
                        Severity::Info
                    },
                    format!("The {who} reset {n} idle connections between requests"),
                    format!(
                        "A connection with no request in progress was reset by the {who}. The \
                         next request on it fails and has to open a new connection; proxies \
                         and NAT devices reset idle connections after their timeout."
                    ),
                    "Align idle timeouts: the client should close idle keep-alive connections \
                     before the server or a middlebox drops them."
                        .to_string(),
                ),
            };
            let mut f = Finding::new(FindingId::ConnectionReset, severity, side, summary);
            f.confidence = 0.9;
            f.impact.affected_fraction = Some(fraction);
            f.explanation = explanation;
            f.fix = fix;
            f.evidence = k
                .examples
                .iter()
                .map(|e| {
                    let mut packets = Vec::with_capacity(2);
                    if let Some(b) = e.before {
                        packets.push(b.to_ref(t0_ns));
                    }
                    packets.push(e.rst.to_ref(t0_ns));
                    Evidence::Packets {
                        connection: conn_label(e.client, e.server),
                        packets,
                        note: match kind {
                            ResetKind::Refused => "SYN answered by a reset".to_string(),
                            ResetKind::DuringExchange => {
                                format!("the {who} reset the connection during an exchange")
                            }
                            ResetKind::ClientAbort => {
                                "the client reset while the response arrived".to_string()
                            }
                            ResetKind::Idle => format!("the {who} reset an idle connection"),
                        },
                    }
                })
                .collect();
            out.push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::detect::testkit::*;

    fn reset(kind: ResetKind, from_server: bool, k: u64) -> Event<'static> {
        Event::Reset {
            ends: ends(),
            kind,
            before: Some(pkt(k * 2, k as i64, !from_server, F::PSH, 100)),
            rst: pkt(k * 2 + 1, k as i64 + 1, from_server, F::RST, 0),
        }
    }

    #[test]
    fn kinds_get_their_own_finding_side_and_severity() {
        let ev = [
            reset(ResetKind::DuringExchange, true, 1),
            reset(ResetKind::DuringExchange, true, 2),
            reset(ResetKind::ClientAbort, false, 3),
        ];
        let v = run::<ConnectionReset>(&ev, &cx(10));
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].side, v[0].severity),
            (Side::Server, Severity::Critical)
        );
        assert!(
            v[0].summary.contains("reset 2 connections"),
            "{}",
            v[0].summary
        );
        assert_eq!((v[1].side, v[1].severity), (Side::Client, Severity::Info));
        assert_eq!(v[0].evidence.len(), 2);
    }

    #[test]
    fn a_few_idle_resets_are_info() {
        let ev = [reset(ResetKind::Idle, true, 1)];
        let v = run::<ConnectionReset>(&ev, &cx(10));
        assert_eq!(v[0].severity, Severity::Info);
        assert!(run::<ConnectionReset>(&[], &cx(10)).is_empty());
    }
}

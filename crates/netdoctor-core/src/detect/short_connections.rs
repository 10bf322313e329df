//! `short_connections`: a connection per request (or nearly), so every request pays the
//! connection setup.
//!
//! For each connection whose handshake was captured we count its completed exchanges and its
//! setup cost: first request byte − SYN (at a client-side capture point: the handshake RTT
//! plus the client's own connect overhead; a keep-alive connection pays it once). The finding
//! fires when at least [`MIN_CONNECTIONS`] connections carried on average no more than
//! [`MAX_EXCHANGES_PER_CONN`] exchanges. Severity follows what the setup costs relative to
//! the median request latency: on a LAN a handshake is a fraction of a millisecond (info);
//! across a continent, or with TLS on top, it dominates.

use std::net::SocketAddr;

use super::{Context, Detector, Interests, MAX_EXAMPLES, Pkt, conn_label, ms};
use crate::event::Event;
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::stats::Hist;

pub const MIN_CONNECTIONS: u64 = 5;
pub const MAX_EXCHANGES_PER_CONN: f64 = 2.0;

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    syn: Pkt,
    first_req: Pkt,
}

/// The `short_connections` detector.
#[derive(Default)]
pub struct ShortConnections {
    conns: u64,
    exchanges: u64,
    setup: Option<Hist>,
    examples: Vec<Example>,
}

impl Detector for ShortConnections {
    fn interests(&self) -> Interests {
        Interests::CONN_DONE
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        if let Event::ConnDone(c) = ev
            && let Some(syn) = c.syn.first_syn
        {
            self.on_conn(c.ends.client, c.ends.server, syn, c.first_req, c.exchanges);
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        self.report(cx.latency_p50_ms, cx.t0_ns, out);
    }
}

impl ShortConnections {
    /// A connection with a captured handshake ended after `exchanges` complete exchanges; its
    /// first request started at `first_req`.
    fn on_conn(
        &mut self,
        client: SocketAddr,
        server: SocketAddr,
        syn: Pkt,
        first_req: Option<Pkt>,
        exchanges: u32,
    ) {
        let Some(first_req) = first_req else {
            return;
        };
        if exchanges == 0 {
            return;
        }
        self.conns += 1;
        self.exchanges += u64::from(exchanges);
        self.setup
            .get_or_insert_with(Hist::new)
            .record_ns(first_req.ts_ns - syn.ts_ns);
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(Example {
                client,
                server,
                syn,
                first_req,
            });
        }
    }

    fn report(&self, latency_p50_ms: f64, t0_ns: i64, out: &mut Vec<Finding>) {
        if self.conns < MIN_CONNECTIONS {
            return;
        }
        let per_conn = self.exchanges as f64 / self.conns as f64;
        if per_conn > MAX_EXCHANGES_PER_CONN {
            return;
        }
        let setup = self.setup.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        // Share of requests that opened their own connection.
        let fraction = (self.conns as f64 / self.exchanges.max(1) as f64).min(1.0);
        let share = if latency_p50_ms > 0.0 {
            setup / (setup + latency_p50_ms)
        } else {
            0.0
        };
        let severity = if setup >= 50.0 && share >= 0.3 {
            Severity::Critical
        } else if setup >= 1.0 && share >= 0.2 {
            Severity::Warning
        } else {
            Severity::Info
        };
        let mut f = Finding::new(
            FindingId::ShortConnections,
            severity,
            Side::Client,
            format!(
                "One connection per request: {} connections carried {:.1} requests each; setup \
                 costs {setup:.2} ms per request ({:.0}% of the time to answer)",
                self.conns,
                per_conn,
                share * 100.0
            ),
        );
        f.confidence = 0.9;
        f.impact.added_latency_ms = Some(setup);
        f.impact.affected_fraction = Some(fraction);
        f.explanation = format!(
            "Each request opened a new TCP connection and closed it after the response. The \
             handshake costs a round trip before the request can even be sent (median \
             {setup:.2} ms here from SYN to the first request byte), each new connection starts \
             with a small congestion window, and every closed connection leaves a TIME_WAIT \
             socket behind (at high rates: ephemeral port exhaustion). With keep-alive the \
             handshake is paid once per connection."
        );
        f.fix = "Reuse connections: HTTP/1.1 keep-alive (do not send `Connection: close`; \
                 wrk/curl/HTTP client libraries pool connections by default), a connection pool \
                 in the client, `keepalive` in nginx upstream blocks."
            .to_string();
        f.evidence = self
            .examples
            .iter()
            .map(|e| Evidence::Packets {
                connection: conn_label(e.client, e.server),
                packets: vec![e.syn.to_ref(t0_ns), e.first_req.to_ref(t0_ns)],
                note: format!(
                    "SYN, then the request {:.2} ms later",
                    ms(e.first_req.ts_ns - e.syn.ts_ns)
                ),
            })
            .collect();
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::detect::testkit::*;
    use crate::event::{ConnDone, SynState};

    fn conns(n: u64, exchanges: u32, setup_ms: i64) -> Vec<ConnDone> {
        (0..n)
            .map(|k| {
                let t = k as i64 * 100;
                let mut syn = SynState::default();
                syn.on_syn(pkt(k * 10 + 1, t, false, F::SYN, 0));
                ConnDone {
                    ends: ends(),
                    syn,
                    first_req: Some(pkt(k * 10 + 4, t + setup_ms, false, F::PSH, 78)),
                    exchanges,
                }
            })
            .collect()
    }

    #[test]
    fn one_request_per_connection_is_found() {
        let cs = conns(MIN_CONNECTIONS, 1, 60);
        let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
        let v = run::<ShortConnections>(
            &ev,
            &Context {
                latency_p50_ms: 10.0,
                ..cx(5)
            },
        );
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].severity, v[0].side),
            (Severity::Critical, Side::Client)
        );
        assert_eq!(v[0].impact.affected_fraction, Some(1.0));
    }

    #[test]
    fn keep_alive_or_few_connections_say_nothing() {
        let many = conns(10, 50, 1);
        let ev: Vec<Event<'_>> = many.iter().map(Event::ConnDone).collect();
        assert!(run::<ShortConnections>(&ev, &cx(500)).is_empty());
        let few = conns(MIN_CONNECTIONS - 1, 1, 1);
        let ev: Vec<Event<'_>> = few.iter().map(Event::ConnDone).collect();
        assert!(run::<ShortConnections>(&ev, &cx(4)).is_empty());
    }
}

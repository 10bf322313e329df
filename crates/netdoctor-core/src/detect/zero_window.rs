//! `zero_window`: a receiver advertised a zero receive window: its application stopped
//! reading, the socket's receive buffer filled, and the sender had to stop.
//!
//! Per endpoint we note the first segment advertising window 0 (not SYN, not RST: a reset
//! carries window 0 without meaning it) and the first later segment advertising a non-zero
//! window; the interval between them is the stall, charged to the exchange in progress. A
//! period still open at the end of the connection or capture ends there. `side` is the
//! endpoint that stopped reading.

use std::net::SocketAddr;

use super::{MAX_EXAMPLES, Pkt, conn_label, ms};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::stats::Hist;

/// Zero-window period of one endpoint (as a receiver).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ZeroDir {
    since: Option<Pkt>,
}

/// A finished zero-window period.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ZeroPeriod {
    pub start: Pkt,
    pub end: Pkt,
}

impl ZeroPeriod {
    pub(crate) fn duration_ns(&self) -> i64 {
        (self.end.ts_ns - self.start.ts_ns).max(0)
    }
}

impl ZeroDir {
    /// A segment from this endpoint advertised `window` (raw field).
    pub(crate) fn on_window(&mut self, pkt: Pkt, window: u16) -> Option<ZeroPeriod> {
        if pkt.flags.syn() || pkt.flags.rst() {
            return None;
        }
        match (self.since, window) {
            (None, 0) => {
                self.since = Some(pkt);
                None
            }
            (Some(start), w) if w > 0 => {
                self.since = None;
                Some(ZeroPeriod { start, end: pkt })
            }
            _ => None,
        }
    }

    pub(crate) fn active(&self) -> bool {
        self.since.is_some()
    }

    /// Ends an open period at `last` (end of the connection or capture).
    pub(crate) fn take_open(&mut self, last: Pkt) -> Option<ZeroPeriod> {
        self.since
            .take()
            .map(|start| ZeroPeriod { start, end: last })
    }
}

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    z: ZeroPeriod,
}

#[derive(Default)]
struct SideAgg {
    periods: u64,
    affected_exchanges: u64,
    duration: Option<Hist>,
    total_ns: i64,
    examples: Vec<Example>,
}

/// Index 0: the client stopped reading; 1: the server.
#[derive(Default)]
pub(crate) struct ZeroAgg {
    sides: [SideAgg; 2],
}

impl ZeroAgg {
    /// `reader_is_server`: the endpoint that advertised the zero window.
    pub(crate) fn on_period(
        &mut self,
        client: SocketAddr,
        server: SocketAddr,
        reader_is_server: bool,
        z: ZeroPeriod,
    ) {
        let s = &mut self.sides[usize::from(reader_is_server)];
        s.periods += 1;
        s.total_ns += z.duration_ns();
        s.duration
            .get_or_insert_with(Hist::new)
            .record_ns(z.duration_ns());
        if s.examples.len() < MAX_EXAMPLES {
            s.examples.push(Example { client, server, z });
        }
    }

    pub(crate) fn on_exchange(&mut self, reader_is_server: bool) {
        self.sides[usize::from(reader_is_server)].affected_exchanges += 1;
    }

    pub(crate) fn finish(&self, exchanges: u64, t0_ns: i64, out: &mut Vec<Finding>) {
        for (i, s) in self.sides.iter().enumerate() {
            if s.periods == 0 {
                continue;
            }
            let server = i == 1;
            let med = s.duration.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
            let fraction =
                (exchanges > 0).then(|| (s.affected_exchanges as f64 / exchanges as f64).min(1.0));
            let severity = if fraction.unwrap_or(0.0) >= 0.10 && med >= 20.0 {
                Severity::Critical
            } else if med >= 10.0 || s.periods >= 5 {
                Severity::Warning
            } else {
                Severity::Info
            };
            let (who, peer, side) = if server {
                ("server", "client", Side::Server)
            } else {
                ("client", "server", Side::Client)
            };
            let mut f = Finding::new(
                FindingId::ZeroWindow,
                severity,
                side,
                format!(
                    "The {who} stopped reading: it advertised a zero receive window {} times, \
                     for {med:.1} ms (median), {:.1} ms in total",
                    s.periods,
                    ms(s.total_ns)
                ),
            );
            f.confidence = 0.95;
            f.impact.added_latency_ms = Some(med);
            f.impact.affected_fraction = fraction;
            f.explanation = format!(
                "TCP's receive window is the free space in the receiver's socket buffer. The \
                 {who} advertised a window of zero: its application did not read the data \
                 that had arrived, the buffer filled up, and the {peer} had to stop sending \
                 and wait (probing the window now and then) until the {who}'s application read \
                 again. The network and the {peer} are not the bottleneck here: the {who}'s \
                 application is (busy, blocked, or reading in small pieces), or its receive \
                 buffer is very small."
            );
            f.fix = format!(
                "Make the {who} read its sockets promptly (look for a blocked event loop, a \
                 slow consumer, a busy CPU) and check its receive buffer (SO_RCVBUF set too \
                 small disables autotuning; net.ipv4.tcp_rmem)."
            );
            f.evidence = s
                .examples
                .iter()
                .map(|e| Evidence::Packets {
                    connection: conn_label(e.client, e.server),
                    packets: vec![e.z.start.to_ref(t0_ns), e.z.end.to_ref(t0_ns)],
                    note: format!(
                        "the {who} advertised window 0, reopened it {:.1} ms later",
                        ms(e.z.duration_ns())
                    ),
                })
                .collect();
            out.push(f);
        }
    }
}

//! `zero_window`: a receiver advertised a zero receive window: its application stopped
//! reading, the socket's receive buffer filled, and the sender had to stop.
//!
//! Per endpoint we note the first segment advertising window 0 (not SYN, not RST: a reset
//! carries window 0 without meaning it) and the first later segment advertising a non-zero
//! window; the interval between them is the stall, charged to the exchange in progress. A
//! period still open at the end of the connection or capture ends there. `side` is the
//! endpoint that stopped reading. The periods are tracked by [`crate::track::zero`].
//!
//! A receive window that is full without reaching zero stalls the sender too: a slow reader
//! with a small receive buffer opens its window a little at a time, and the sender's next
//! (small) segment leaves right after each late window update. In the packets it looks like a
//! Nagle stall, but the held segment did not fit in the window the reader had advertised
//! ([`StallKind::WindowLimited`]); such stalls are counted here as full-window waits, not as
//! `nagle_delayed_ack` (TCP_NODELAY would not help).

use std::net::SocketAddr;

use super::{Context, Detector, Interests, MAX_EXAMPLES, conn_label, ms};
use crate::event::{Event, Stall, StallKind, ZeroPeriod};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::stats::Hist;

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    z: ZeroPeriod,
}

#[derive(Clone, Copy, Debug)]
struct FullExample {
    client: SocketAddr,
    server: SocketAddr,
    stall: Stall,
}

#[derive(Default)]
struct SideAgg {
    periods: u64,
    affected_exchanges: u64,
    duration: Option<Hist>,
    total_ns: i64,
    examples: Vec<Example>,
    /// Waits for a full (not zero) window to open.
    full: u64,
    full_wait: Option<Hist>,
    full_total_ns: i64,
    full_examples: Vec<FullExample>,
}

/// The `zero_window` detector. Index 0: the client stopped reading; 1: the server.
#[derive(Default)]
pub struct ZeroWindow {
    sides: [SideAgg; 2],
}

impl Detector for ZeroWindow {
    fn interests(&self) -> Interests {
        Interests::ZERO_WINDOW
            .and(Interests::STALL)
            .and(Interests::EXCHANGE_DONE)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::ZeroWindow {
                ends,
                reader_is_server,
                period,
            } => self.on_period(ends.client, ends.server, *reader_is_server, *period),
            Event::Stall { ends, stall } if stall.kind == StallKind::WindowLimited => {
                let s = &mut self.sides[usize::from(!stall.held.from_server)];
                s.full += 1;
                s.full_total_ns += stall.delay_ns();
                s.full_wait
                    .get_or_insert_with(Hist::new)
                    .record_ns(stall.delay_ns());
                if s.full_examples.len() < MAX_EXAMPLES {
                    s.full_examples.push(FullExample {
                        client: ends.client,
                        server: ends.server,
                        stall: *stall,
                    });
                }
            }
            Event::ExchangeDone(x) => {
                for reader_is_server in [false, true] {
                    if x.stalled(FindingId::ZeroWindow, reader_is_server) {
                        self.sides[usize::from(reader_is_server)].affected_exchanges += 1;
                    }
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        self.report(cx.exchanges, cx.t0_ns, out);
    }
}

impl ZeroWindow {
    /// `reader_is_server`: the endpoint that advertised the zero window.
    fn on_period(
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

    fn report(&self, exchanges: u64, t0_ns: i64, out: &mut Vec<Finding>) {
        for (i, s) in self.sides.iter().enumerate() {
            if s.periods == 0 {
                if s.full > 0 {
                    out.push(full_window_finding(i == 1, s, exchanges, t0_ns));
                }
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
            if s.full > 0 {
                f.summary.push_str(&format!(
                    "; its window was also full {} times (the {peer} waited {:.1} ms median for it \
                     to open)",
                    s.full,
                    s.full_wait.as_ref().map_or(0.0, |h| h.quantile_ms(0.5))
                ));
                f.explanation.push_str(FULL_NOTE);
                f.evidence.extend(full_evidence(server, s, t0_ns));
            }
            out.push(f);
        }
    }
}

const FULL_NOTE: &str = " A window that is full without reaching zero stalls the sender too: the \
     next segment, though smaller than the MSS, did not fit in the window the reader had \
     advertised, so it left only when a late window update opened room for it. That looks \
     like Nagle's algorithm waiting for a delayed ACK, but it is flow control: TCP_NODELAY \
     does not change it.";

fn full_evidence(server: bool, s: &SideAgg, t0_ns: i64) -> Vec<Evidence> {
    let who = if server { "server" } else { "client" };
    s.full_examples
        .iter()
        .map(|e| {
            let st = e.stall;
            Evidence::Packets {
                connection: conn_label(e.client, e.server),
                packets: vec![
                    st.prev.to_ref(t0_ns),
                    st.ack.to_ref(t0_ns),
                    st.held.to_ref(t0_ns),
                ],
                note: format!(
                    "the {who}'s window was full: its update came {:.1} ms later, the next {} \
                     bytes (past the old window) left {:.2} ms after it",
                    ms(st.delay_ns()),
                    st.held.len,
                    ms(st.hold_ns())
                ),
            }
        })
        .collect()
}

/// The finding for a reader whose window filled (never to zero) and stalled the sender.
fn full_window_finding(server: bool, s: &SideAgg, exchanges: u64, t0_ns: i64) -> Finding {
    let med = s.full_wait.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
    let fraction =
        (exchanges > 0).then(|| (s.affected_exchanges as f64 / exchanges as f64).min(1.0));
    let severity = if fraction.unwrap_or(0.0) >= 0.10 && med >= 20.0 {
        Severity::Critical
    } else if med >= 10.0 || s.full >= 5 {
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
            "The {who} reads too slowly: its receive window was full {} times, the {peer} \
             waited {med:.1} ms (median) for it to open, {:.1} ms in total",
            s.full,
            ms(s.full_total_ns)
        ),
    );
    f.confidence = 0.9;
    f.impact.added_latency_ms = Some(med);
    f.impact.affected_fraction = fraction;
    f.explanation = format!(
        "TCP's receive window is the free space in the receiver's socket buffer. The {who}'s \
         window was full: its application read the data slowly or its receive buffer is small, \
         so the {peer} could send only a little at a time and then had to wait for the {who} \
         to read and announce free space.{FULL_NOTE}"
    );
    f.fix = format!(
        "Make the {who} read its sockets promptly and give it a larger receive buffer \
         (SO_RCVBUF set too small disables autotuning; net.ipv4.tcp_rmem)."
    );
    f.evidence = full_evidence(server, s, t0_ns);
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::detect::testkit::*;
    use crate::event::ExchangeDone;

    #[test]
    fn zero_window_periods_name_the_reader() {
        let z = ZeroPeriod {
            start: pkt(5, 10, false, F::ACK, 0),
            end: pkt(9, 310, false, F::ACK, 0),
        };
        let mut x = ExchangeDone::new(
            ends(),
            pkt(1, 0, false, F::PSH, 78),
            pkt(10, 320, true, F::ACK, 100),
        );
        x.charge(FindingId::ZeroWindow, false, 300 * MS);
        let ev = [
            Event::ZeroWindow {
                ends: ends(),
                reader_is_server: false,
                period: z,
            },
            Event::ExchangeDone(&x),
        ];
        let v = run::<ZeroWindow>(&ev, &cx(1));
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].side, v[0].severity),
            (Side::Client, Severity::Critical)
        );
        assert!(v[0].summary.contains("stopped reading"), "{}", v[0].summary);
        assert!((299.0..301.0).contains(&v[0].impact.added_latency_ms.unwrap()));
    }

    #[test]
    fn a_full_window_stall_is_flow_control_of_the_reader() {
        let stalls: Vec<Event<'_>> = (0..5u64)
            .map(|k| {
                let t = k as i64 * 100;
                Event::Stall {
                    ends: ends(),
                    stall: Stall {
                        prev: pkt(k * 3 + 1, t, true, F::PSH, 4096),
                        ack: pkt(k * 3 + 2, t + 41, false, F::ACK, 0),
                        held: pkt(k * 3 + 3, t + 41, true, F::PSH, 2048),
                        kind: StallKind::WindowLimited,
                    },
                }
            })
            .collect();
        let v = run::<ZeroWindow>(&stalls, &cx(5));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].id, FindingId::ZeroWindow);
        assert_eq!(v[0].side, Side::Client, "the client's window was full");
        assert!(
            v[0].summary.contains("window was full 5 times"),
            "{}",
            v[0].summary
        );
        assert!(v[0].explanation.contains("TCP_NODELAY does not change it"));
        // Nagle stalls are not flow control.
        let nagle: Vec<Event<'_>> = stalls
            .iter()
            .map(|e| match e {
                Event::Stall { ends, stall } => Event::Stall {
                    ends: *ends,
                    stall: Stall {
                        kind: StallKind::Nagle,
                        ..*stall
                    },
                },
                other => *other,
            })
            .collect();
        assert!(run::<ZeroWindow>(&nagle, &cx(5)).is_empty());
    }
}

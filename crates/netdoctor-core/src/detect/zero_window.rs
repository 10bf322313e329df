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

use super::{
    Context, Detector, Interests, MAX_EXAMPLES, cap_by_share, conn_label, episode_severity, ms,
    stall_evidence, stall_share, worst_note,
};
use crate::event::{Event, Stall, StallKind, ZeroPeriod};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::stats::Hist;

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    z: ZeroPeriod,
    /// The smallest window of a near-zero period (bytes; `None`: the raw field was 0).
    near_zero: Option<u32>,
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
    /// The longest period.
    worst_ns: i64,
    /// Zero-window stall per affected exchange.
    per_exchange: Option<Hist>,
    /// The sum over the affected exchanges of the share of their latency that stall took.
    share_sum: f64,
    /// Periods that ended with the connection or capture, the window still closed.
    never_reopened: u64,
    /// Periods whose reopening window is known, and those that reopened below one MSS.
    reopen_known: u64,
    below_mss: u64,
    reopen_bytes_sum: u64,
    mss: Option<u16>,
    examples: Vec<Example>,
    /// Periods whose window stayed above zero but below one MSS, and their smallest window.
    near: u64,
    near_min: Option<u32>,
    /// Connections the periods were on (the first 64).
    conns: Vec<(SocketAddr, SocketAddr)>,
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
                near_zero,
            } => {
                self.on_period(
                    ends.client,
                    ends.server,
                    *reader_is_server,
                    *period,
                    *near_zero,
                );
                let s = &mut self.sides[usize::from(*reader_is_server)];
                if let Some(w) = near_zero {
                    s.near += 1;
                    s.near_min = Some(s.near_min.map_or(*w, |m| m.min(*w)));
                }
                if !s.conns.contains(&(ends.client, ends.server)) && s.conns.len() < 64 {
                    s.conns.push((ends.client, ends.server));
                }
            }
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
                        let s = &mut self.sides[usize::from(reader_is_server)];
                        s.affected_exchanges += 1;
                        // Both sides' periods are charged to one cause; an exchange stalled
                        // by both counts its stall for each.
                        let stall = x.stall_ns(FindingId::ZeroWindow);
                        s.per_exchange
                            .get_or_insert_with(Hist::new)
                            .record_ns(stall);
                        s.share_sum += stall_share(stall, x.latency_ns);
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

impl SideAgg {
    /// The mean share of the affected exchanges' latency the zero window took (`None`: no
    /// completed exchange was hit).
    fn share(&self) -> Option<f64> {
        (self.affected_exchanges > 0).then(|| self.share_sum / self.affected_exchanges as f64)
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
        near_zero: Option<u32>,
    ) {
        let s = &mut self.sides[usize::from(reader_is_server)];
        s.periods += 1;
        s.total_ns += z.duration_ns();
        s.worst_ns = s.worst_ns.max(z.duration_ns());
        s.never_reopened += u64::from(!z.reopened);
        if let Some(w) = z.reopen_bytes {
            s.reopen_known += 1;
            s.reopen_bytes_sum += u64::from(w);
            s.below_mss += u64::from(z.reopened_below_mss());
        }
        if z.mss.is_some() {
            s.mss = z.mss;
        }
        s.duration
            .get_or_insert_with(Hist::new)
            .record_ns(z.duration_ns());
        if s.examples.len() < MAX_EXAMPLES {
            s.examples.push(Example {
                client,
                server,
                z,
                near_zero,
            });
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
            let worst = ms(s.worst_ns);
            let total = ms(s.total_ns);
            let fraction =
                (exchanges > 0).then(|| (s.affected_exchanges as f64 / exchanges as f64).min(1.0));
            let typical = if fraction.unwrap_or(0.0) >= 0.10 && med >= 20.0 {
                Severity::Critical
            } else if med >= 10.0 || (s.periods >= 5 && total >= MANY_MS) {
                Severity::Warning
            } else {
                Severity::Info
            };
            let severity = episode_severity(cap_by_share(typical, s.share()), worst, total);
            let (who, peer, side) = if server {
                ("server", "client", Side::Server)
            } else {
                ("client", "server", Side::Client)
            };
            let reading = Reading::of(s);
            let times = if s.periods == 1 {
                format!("once, for {total:.1} ms")
            } else {
                format!(
                    "{} times, {total:.1} ms in total (longest {worst:.1} ms, median {med:.1} ms)",
                    s.periods
                )
            };
            // "zero", or below one MSS when it never quite reached zero.
            let zero = match (s.near, s.near_min) {
                (n, Some(min)) if n == s.periods => format!(
                    "near-zero (down to {min} bytes, less than one MSS{})",
                    s.mss.map(|m| format!(" of {m}")).unwrap_or_default()
                ),
                (_, Some(min)) => format!("zero or near-zero (down to {min} bytes)"),
                _ => "zero".to_string(),
            };
            let summary = match reading {
                Reading::Stopped => format!(
                    "The {who} stopped reading: it advertised a {zero} receive window {times}"
                ),
                Reading::Slow => format!(
                    "The {who} reads slowly: its receive window fell to {zero} {times}, \
                     reopening each time{}",
                    if s.never_reopened > 0 {
                        format!(
                            " but the last ({} never reopened before the connection or the \
                             capture ended)",
                            s.never_reopened
                        )
                    } else {
                        String::new()
                    }
                ),
                Reading::Tiny => format!(
                    "The {who} reads slowly, a little at a time: its receive window fell to zero \
                     {times} and reopened by less than one MSS ({} of {} times, {} bytes on \
                     average, MSS {})",
                    s.below_mss,
                    s.reopen_known,
                    s.reopen_bytes_sum / s.reopen_known.max(1),
                    s.mss.unwrap_or(0)
                ),
            };
            let mut f = Finding::new(FindingId::ZeroWindow, severity, side, summary);
            f.confidence = 0.95;
            // Periods that hit no completed exchange (a turn still waiting when the capture
            // ended, a protocol without answers): the time they held each connection.
            let held = total / s.conns.len().max(1) as f64;
            f.impact.added_latency_ms =
                Some(s.per_exchange.as_ref().map_or(held, |h| h.quantile_ms(0.5)));
            f.impact.affected_fraction = fraction.filter(|_| s.affected_exchanges > 0);
            if s.affected_exchanges == 0 {
                f.summary.push_str(&format!(
                    ", holding {} connection{} {held:.1} ms{}",
                    s.conns.len(),
                    if s.conns.len() == 1 { "" } else { "s" },
                    if s.conns.len() > 1 {
                        " each on average"
                    } else {
                        ""
                    }
                ));
            }
            f.explanation = match reading {
                Reading::Stopped => format!(
                    "TCP's receive window is the free space in the receiver's socket buffer. The \
                     {who} advertised a window of zero: its application did not read the data \
                     that had arrived, the buffer filled up, and the {peer} had to stop sending \
                     and wait (probing the window now and then) until the {who}'s application \
                     read again{}. The network and the {peer} are not the bottleneck here: the \
                     {who}'s application is (busy, blocked, or reading in small pieces), or its \
                     receive buffer is very small.",
                    if s.never_reopened > 0 {
                        format!(
                            " (in {} of the {} periods it never did: the connection or the \
                             capture ended first)",
                            s.never_reopened, s.periods
                        )
                    } else {
                        String::new()
                    }
                ),
                Reading::Slow => format!(
                    "TCP's receive window is the free space in the receiver's socket buffer. The \
                     {who}'s window kept filling up to zero and reopening: its application does \
                     read, but more slowly than the {peer} sends (or into a small buffer), so \
                     the {peer} sends a window's worth, waits for the {who} to read, and sends \
                     again. That is a slow reader, not a stopped one: the transfer runs at the \
                     {who}'s reading speed."
                ),
                Reading::Tiny => format!(
                    "TCP's receive window is the free space in the receiver's socket buffer. The \
                     {who}'s window fell to zero and reopened by less than one maximum segment \
                     (MSS): its application reads little at a time from a receive buffer smaller than one segment. A \
                     window below one MSS lets the {peer} send only tiny segments, each paying \
                     full header and ACK costs (the silly window syndrome); receivers normally \
                     avoid announcing such windows (RFC 1122 silly-window avoidance waits for an \
                     MSS or half the buffer), so a window this small means a receive buffer \
                     that small (SO_RCVBUF set very small)."
                ),
            };
            f.fix = match reading {
                Reading::Stopped => format!(
                    "Make the {who} read its sockets promptly (look for a blocked event loop, a \
                     slow consumer, a busy CPU) and check its receive buffer (SO_RCVBUF set too \
                     small disables autotuning; net.ipv4.tcp_rmem)."
                ),
                Reading::Slow => format!(
                    "Make the {who}'s application read faster (larger reads, fewer blocking \
                     steps between them, more CPU) and give it a larger receive buffer (SO_RCVBUF \
                     set too small disables autotuning; net.ipv4.tcp_rmem)."
                ),
                Reading::Tiny => format!(
                    "Let the {who} read in large chunks (not byte by byte) and do not shrink its \
                     receive buffer below a few segments (remove a tiny SO_RCVBUF; autotuning \
                     with net.ipv4.tcp_rmem picks a sensible size)."
                ),
            };
            f.evidence = s
                .examples
                .iter()
                .map(|e| Evidence::Packets {
                    connection: conn_label(e.client, e.server),
                    packets: vec![e.z.start.to_ref(t0_ns), e.z.end.to_ref(t0_ns)],
                    note: match (e.z.reopened, e.z.reopen_bytes) {
                        // A near-zero period never advertised 0: say what it did advertise.
                        (reopened, _) if e.near_zero.is_some() => format!(
                            "the {who}'s window fell to {} bytes (less than one MSS), {} {:.1} ms \
                             later",
                            e.near_zero.unwrap_or(0),
                            if reopened { "reopened" } else { "still small" },
                            ms(e.z.duration_ns())
                        ),
                        (false, _) => format!(
                            "the {who} advertised window 0, still closed {:.1} ms later when \
                             the connection or capture ended",
                            ms(e.z.duration_ns())
                        ),
                        (true, Some(w)) if e.z.reopened_below_mss() => format!(
                            "the {who} advertised window 0, reopened it {:.1} ms later by {w} \
                             bytes (less than one MSS)",
                            ms(e.z.duration_ns())
                        ),
                        _ => format!(
                            "the {who} advertised window 0, reopened it {:.1} ms later",
                            ms(e.z.duration_ns())
                        ),
                    },
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

/// How a reader whose window reached zero reads, told by how its window reopened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reading {
    /// Few, long periods (or never reopened): the application stopped reading.
    Stopped,
    /// Repeated short periods that reopen: it reads, slowly.
    Slow,
    /// It reopened by less than one MSS most times: it reads a little at a time.
    Tiny,
}

/// Many zero windows are a warning only when they add up to at least this.
const MANY_MS: f64 = 10.0;

/// Repeated zero windows that each last less than this are a slow reader, not a stopped one.
const SLOW_MEDIAN_MS: f64 = 1000.0;
/// At least this many periods to call the reader slow rather than stopped.
const SLOW_MIN_PERIODS: u64 = 3;

impl Reading {
    fn of(s: &SideAgg) -> Reading {
        let reopened = s.periods - s.never_reopened;
        if s.below_mss > 0 && s.below_mss * 2 >= s.reopen_known {
            return Reading::Tiny;
        }
        let med = s.duration.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        if reopened >= SLOW_MIN_PERIODS && s.never_reopened * 2 < s.periods && med < SLOW_MEDIAN_MS
        {
            Reading::Slow
        } else {
            Reading::Stopped
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
            stall_evidence(
                e.client,
                e.server,
                &st,
                t0_ns,
                format!(
                    "the {who}'s window was full: its update came {:.1} ms later, the next {} \
                     bytes (past the old window) left {:.2} ms after it",
                    ms(st.delay_ns()),
                    st.held.len,
                    ms(st.hold_ns())
                ),
            )
        })
        .collect()
}

/// The finding for a reader whose window filled (never to zero) and stalled the sender.
fn full_window_finding(server: bool, s: &SideAgg, exchanges: u64, t0_ns: i64) -> Finding {
    let med = s.full_wait.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
    let fraction =
        (exchanges > 0).then(|| (s.affected_exchanges as f64 / exchanges as f64).min(1.0));
    let typical = if fraction.unwrap_or(0.0) >= 0.10 && med >= 20.0 {
        Severity::Critical
    } else if med >= 10.0 || s.full >= 5 {
        Severity::Warning
    } else {
        Severity::Info
    };
    let worst = s.full_wait.as_ref().map_or(0.0, Hist::max_ms);
    let severity = episode_severity(cap_by_share(typical, s.share()), worst, ms(s.full_total_ns));
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
             waited {med:.1} ms (median) for it to open{}, {:.1} ms in total",
            s.full,
            worst_note(med, worst),
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
mod tests;

//! `slow_server_processing`: the server's think time dominates request latency.
//!
//! Server time of an exchange = first response byte − last request byte, minus the path RTT
//! of the connection when the handshake was captured (at a client-side capture point that
//! interval contains one RTT). The finding fires when, over at least [`MIN_EXCHANGES`]
//! exchanges, the median server time is ≥ [`MIN_SERVER_MS`] and ≥ [`MIN_SHARE`] of the median
//! exchange latency. In the Nagle case the first response byte is prompt (the stall is
//! between response segments), so this does not fire there; a healthy server answers in
//! well under 10 ms. Critical from [`CRITICAL_MS`] on (or when the worst exchange waited a
//! second or more), warning below.
//!
//! A capture with fewer exchanges (one request caught by a short capture, possibly cut before
//! its response ended) still shows a slow server when its median server time is
//! [`CRITICAL_MS`] or more: no healthy server takes that long, and the time is already net
//! of the path (the handshake RTT, or the server's late ACK of the request when the path was
//! slower than that). Exchanges cut by the end of the capture count by their first byte.
//!
//! Server time includes what the server took after its first byte when its own segments say
//! it wrote the rest slowly (`ExchangeDone::body_wait_ns`: gaps between response segments that
//! no ACK, window or loss explains and its TCP timestamps confirm): a chunked stream whose
//! last byte comes late, a proxy passing on a slow upstream as it arrives. A first byte that
//! leaves at once does not make such a server fast; when that part is most of the slow
//! exchanges' server time the finding says the body was slow, not the start.
//!
//! When the machine's CPU was saturated during the run ([`Observation::Cpu`],
//! `machine_busy` ≥ [`CPU_SATURATED`]), the server's time measures waiting for a CPU as much
//! as its own work (a load generator with many connections on the same few cores): the
//! finding is then side host, at most a warning, and says so. Unless the server's own threads
//! hardly waited for a CPU (`server_wait_ms`, their run-queue delay, under
//! [`MAX_WAIT_SHARE`] of the exchanges' server time, their CPU time under [`MAX_CPU_SHARE`]): then the machine was busy with
//! something else while the server waited on its own (a proxy on a slow upstream, a sleep, a
//! lock), and the time stays the server's, with that said.
//!
//! When at least [`TIMER_MIN_EXCHANGES`] slow exchanges all waited a second or more and the
//! same time to within [`TIMER_SPREAD`] of it (and none is a 5xx: a gateway's timeout is
//! `http_errors`' story), the wait is a timer, not load: a request held on purpose (a long
//! poll) or a fixed timeout inside the server (a resolver's 5 s, a lock or pool wait). The
//! finding says so, with a [`FIXED_WAIT_EVIDENCE`] probe, names both in its fix and its
//! confidence drops to [`TIMER_CONFIDENCE`]. One or two such exchanges are too few to say.

use super::{
    Context, Detector, Interests, MAX_EXAMPLES, conn_label, episode_severity, ms, worst_note,
};
use crate::event::{Event, ExchangeDone};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::observation::{CPU_SATURATED, Observation};

pub const MIN_EXCHANGES: u64 = 5;
pub const MIN_SERVER_MS: f64 = 10.0;
pub const MIN_SHARE: f64 = 0.5;
pub const CRITICAL_MS: f64 = 200.0;
/// Run-queue wait of the server's threads, as a share of the server time of the exchanges,
/// under which a saturated machine does not explain the server's time.
pub const MAX_WAIT_SHARE: f64 = 0.1;
/// The server's CPU time, as a share of the exchanges' server time, under which its time was
/// not spent computing (a forking server's children's waits die with them; their CPU time is
/// counted in the parent's).
pub const MAX_CPU_SHARE: f64 = 0.25;
/// Slow exchanges needed before an equal wait is called a timer.
pub const TIMER_MIN_EXCHANGES: u64 = 3;
/// The shortest wait called a timer, ms.
pub const TIMER_MIN_MS: f64 = 1000.0;
/// The largest spread (max − min, as a share of the max) of the slow exchanges' server time
/// still called the same wait.
pub const TIMER_SPREAD: f64 = 0.02;
/// The confidence of a finding whose wait looks like a timer: it may be no problem at all.
pub const TIMER_CONFIDENCE: f64 = 0.5;
/// The probe evidence of an equal wait: `N of M requests each waited within X ms of Y s`.
pub const FIXED_WAIT_EVIDENCE: &str = "fixed_wait";

/// The `slow_server_processing` detector.
#[derive(Default)]
pub struct SlowServerProcessing {
    slow_exchanges: u64,
    /// The longest server time and the sum over slow exchanges.
    worst_ns: i64,
    slow_total_ns: i64,
    /// Of `slow_total_ns`, the part after the first byte (a body written slowly).
    slow_body_ns: i64,
    /// The shortest server time of a slow exchange (0 before the first).
    slow_min_ns: i64,
    /// A slow exchange answered 5xx.
    slow_error: bool,
    /// The machine's CPU during the run: (busy share, netdoctor's own share, cores).
    cpu: Option<(f64, f64, u32)>,
    /// The server's threads' run-queue wait and CPU time over the run, ms.
    server_wait_ms: Option<f64>,
    server_cpu_ms: Option<f64>,
    /// Server time summed over every exchange, ns.
    server_total_ns: i64,
    /// Concurrent connections of the run's load ([`Observation::RunConfig`]).
    load_connections: Option<u32>,
    examples: Vec<ExchangeDone>,
    /// The TLS handshake turns ([`super::slow_tls_handshake`]).
    tls: super::slow_tls_handshake::TlsHandshakes,
}

impl Detector for SlowServerProcessing {
    fn interests(&self) -> Interests {
        Interests::EXCHANGE_DONE
            .and(Interests::EXCHANGE_CUT)
            .and(Interests::OBSERVED)
            .and(Interests::TLS_TURN)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::ExchangeDone(x) | Event::ExchangeCut(x) => self.on_exchange(x),
            Event::TlsTurn(x) => self.tls.on_turn(x),
            Event::Observed(Observation::Cpu {
                machine_busy,
                own_busy,
                cores,
                server_wait_ms,
                server_cpu_ms,
            }) => {
                self.cpu = Some((*machine_busy, *own_busy, *cores));
                self.server_wait_ms = *server_wait_ms;
                self.server_cpu_ms = *server_cpu_ms;
            }
            Event::Observed(Observation::RunConfig { connections, .. }) => {
                self.load_connections = Some(*connections);
            }
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        self.report(
            cx.exchanges + cx.incomplete,
            cx.latency_p50_ms,
            cx.server_time_p50_ms,
            cx.t0_ns,
            out,
        );
        self.tls.report(cx.exchanges, cx.t0_ns, out);
    }
}

impl SlowServerProcessing {
    fn on_exchange(&mut self, x: &ExchangeDone) {
        let total = x.server_total_ns();
        self.server_total_ns += total;
        if ms(total) >= MIN_SERVER_MS {
            self.slow_min_ns = if self.slow_exchanges == 0 {
                total
            } else {
                self.slow_min_ns.min(total)
            };
            self.slow_error |= x.status.is_some_and(|c| c >= 500);
            self.slow_exchanges += 1;
            self.worst_ns = self.worst_ns.max(total);
            self.slow_total_ns += total;
            self.slow_body_ns += x.body_wait_ns;
            // The slowest few: their figures are the story's (the first ones of a connection
            // may not have the server's clock to confirm a slow body yet).
            if self.examples.len() < MAX_EXAMPLES {
                self.examples.push(*x);
            } else if let Some(k) =
                (0..self.examples.len()).min_by_key(|k| self.examples[*k].server_total_ns())
                && self.examples[k].server_total_ns() < total
            {
                self.examples[k] = *x;
            }
        }
    }

    /// The slow exchanges' common wait `(shortest, longest)` in ms, when they look like a
    /// timer (see the module's text).
    fn fixed_wait(&self) -> Option<(f64, f64)> {
        let (lo, hi) = (ms(self.slow_min_ns), ms(self.worst_ns));
        (self.slow_exchanges >= TIMER_MIN_EXCHANGES
            && !self.slow_error
            && lo >= TIMER_MIN_MS
            && hi - lo <= TIMER_SPREAD * hi)
            .then_some((lo, hi))
    }

    fn report(&self, exchanges: u64, lat: f64, st: f64, t0_ns: i64, out: &mut Vec<Finding>) {
        if exchanges == 0 || (exchanges < MIN_EXCHANGES && st < CRITICAL_MS) {
            return;
        }
        // Only exchanges cut by the end of the capture: their latency is unknown, at least
        // their first-byte time.
        let cut_only = lat <= 0.0;
        let lat = lat.max(st);
        if st < MIN_SERVER_MS || lat <= 0.0 || st < MIN_SHARE * lat {
            return;
        }
        let share = (st / lat).min(1.0);
        let fraction = (self.slow_exchanges as f64 / exchanges as f64).min(1.0);
        let typical = if st >= CRITICAL_MS {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let worst = ms(self.worst_ns);
        let mut severity = episode_severity(typical, worst, ms(self.slow_total_ns));
        // The server's threads hardly waited for a CPU nor used one: the busy machine is not
        // its time.
        let total = ms(self.server_total_ns);
        let own_time = self.server_wait_ms.filter(|w| {
            *w < MAX_WAIT_SHARE * total
                && self
                    .server_cpu_ms
                    .is_some_and(|c| c < MAX_CPU_SHARE * total)
        });
        let contended = self
            .cpu
            .filter(|c| c.0 >= CPU_SATURATED && own_time.is_none());
        if contended.is_some() {
            severity = severity.min(Severity::Warning);
        }
        // Most of the slow exchanges' server time came after their first byte.
        let body_share = self.slow_body_ns as f64 / self.slow_total_ns.max(1) as f64;
        let slow_body = body_share >= 0.5;
        let confidence = (0.6 + 0.2 * (exchanges as f64 / 20.0).min(1.0) + 0.19 * share).min(0.99);
        let mut f = Finding::new(
            FindingId::SlowServerProcessing,
            severity,
            if contended.is_some() {
                Side::Host
            } else {
                Side::Server
            },
            if cut_only {
                format!(
                    "The server takes {st:.1} ms to start answering{} ({exchanges} request{}; the \
                     capture ends before the response does)",
                    worst_note(st, worst),
                    if exchanges == 1 { "" } else { "s" }
                )
            } else if slow_body {
                format!(
                    "The server takes {st:.1} ms to answer{}, {:.0}% of it after its first byte: \
                     it writes the body slowly ({:.0}% of the {lat:.1} ms median latency)",
                    worst_note(st, worst),
                    body_share * 100.0,
                    share * 100.0
                )
            } else {
                format!(
                    "The server takes {st:.1} ms to start answering{}: {:.0}% of the {lat:.1} ms \
                     median latency",
                    worst_note(st, worst),
                    share * 100.0
                )
            },
        );
        f.confidence = confidence;
        f.impact.added_latency_ms = Some(st);
        f.impact.affected_fraction = Some(fraction);
        f.explanation = format!(
            "Between the last byte of a request and the first byte of its response the server \
             is working (or waiting on something: a database, a backend, a lock, a full worker \
             pool). The network delivers requests and responses promptly; the median request \
             waits {st:.1} ms inside the server before any answer leaves."
        );
        if slow_body {
            f.explanation = format!(
                "The server starts answering at once but sends the rest of its answer in pieces \
                 with pauses between them ({:.0}% of its time came after the first byte). The \
                 pauses are the server's own: the client had acknowledged everything sent so \
                 far (no window, congestion or loss held the data), and the server's TCP \
                 timestamps show each piece leaving when it arrived, not sent earlier and \
                 delayed on the way. A streamed answer (chunked encoding, server-sent events), \
                 a proxy passing on a slow upstream as it arrives, or a generator that writes \
                 as it computes all look like this: the median request spends {st:.1} ms \
                 inside the server.",
                body_share * 100.0
            );
        }
        f.fix = if slow_body {
            "Look at what produces the body: the upstream or backend the server streams from \
             (nginx: `$upstream_response_time` against `$request_time`, and `proxy_buffering`), \
             the handler's loop that writes the chunks; if the answer is a stream on purpose \
             (events, long polling), its duration is not latency and should be measured as \
             time to first byte."
                .to_string()
        } else {
            "Look inside the server: profile the request handler, its backends and \
                 worker/queue saturation (e.g. the application's own timing logs or \
                 `$upstream_response_time` in nginx)."
                .to_string()
        };
        let mut timer = None;
        if let Some((lo, hi)) = self
            .fixed_wait()
            .filter(|_| !slow_body && contended.is_none())
        {
            let secs = format!("{:.2} s", (lo + hi) / 2e3);
            let within = format!("{:.0} ms", (hi - lo).max(1.0));
            let n = self.slow_exchanges;
            f.summary.push_str(&format!(
                "; every slow request waited the same {secs} (within {within}): a request held \
                 on purpose (a long poll) or a timer inside the server, not load"
            ));
            f.confidence = f.confidence.min(TIMER_CONFIDENCE);
            f.explanation.push_str(&format!(
                " But the {n} slow requests all waited {secs}, within {within} of each other: \
                 work that is slow because of load or data takes a different time from request \
                 to request, a wait that is the same every time is a timer. Either the server \
                 holds the request on purpose until it has something to say (a long poll) and \
                 answers when its hold time runs out, or a fixed timeout inside it runs out \
                 before it can answer (a DNS resolver's 5 s timeout, a lock or connection-pool \
                 wait, a backend call that times out)."
            ));
            f.fix = format!(
                "Look in the handler for a deliberate wait or a timeout of {secs}: if the \
                 endpoint is a long poll (a request held until an event or its hold time), this \
                 is normal and its duration is not latency; otherwise find the timer that runs \
                 out (the resolver's timeout in /etc/resolv.conf, a lock or pool wait, a backend \
                 call's timeout) and why what it waits for does not come."
            );
            timer = Some(Evidence::Probe {
                probe: FIXED_WAIT_EVIDENCE.to_string(),
                note: format!("{n} of {exchanges} requests each waited within {within} of {secs}"),
            });
        }
        if let Some((busy, own, cores)) = contended {
            f.summary.push_str(&format!(
                ", but the machine's CPU was saturated ({:.0}% busy on {cores} cores, \
                 netdoctor itself {:.0}%): the server's time reflects CPU contention on a shared \
                 host",
                busy * 100.0,
                own * 100.0
            ));
            f.confidence = f.confidence.min(0.6);
            f.explanation.push_str(&format!(
                " But during the run the machine's CPUs were {:.0}% busy ({cores} cores; \
                 netdoctor's own load generator used {:.0}% of them): the server shared the \
                 CPUs with the load, so part of its time was spent waiting for a CPU, not \
                 working. Its time here is not a measure of the server alone.{}",
                busy * 100.0,
                own * 100.0,
                match self.load_connections {
                    Some(n) => format!(
                        " The load kept {n} connections busy on {cores} cores: requests queue \
                         for a CPU on both ends."
                    ),
                    None => String::new(),
                }
            ));
            f.fix = "Measure without the contention first: fewer connections (-c) or fewer \
                     load threads, or run the load from another machine; if the server is still \
                     slow then, look inside it (profile the handler, its backends, worker \
                     saturation)."
                .to_string();
        } else if let (Some(wait), Some((busy, _, cores))) = (own_time, self.cpu)
            && busy >= CPU_SATURATED
        {
            f.explanation.push_str(&format!(
                " The machine's CPUs were {:.0}% busy ({cores} cores) during the run, but the \
                 server's threads waited for a CPU only {wait:.1} ms in all, against {:.1} ms of \
                 server time over the requests: the server was waiting on something of its own, \
                 not on the CPU.",
                busy * 100.0,
                ms(self.server_total_ns)
            ));
        }
        f.evidence = self
            .examples
            .iter()
            .map(|x| {
                let mut pkts = vec![x.first_req, x.last_req, x.first_resp, x.last_resp];
                // One-segment requests/responses: first and last are the same packet.
                pkts.dedup_by_key(|p| p.frame);
                Evidence::Packets {
                    connection: conn_label(x.ends.client, x.ends.server),
                    packets: pkts.into_iter().map(|p| p.to_ref(t0_ns)).collect(),
                    note: if x.cut {
                        format!(
                            "request complete, first response byte {:.1} ms later (server time net \
                         of RTT); the capture ends while the response arrives",
                            ms(x.server_time_ns)
                        )
                    } else if x.body_wait_ns > 0 {
                        format!(
                            "request complete, first response byte {:.1} ms later (server time net \
                         of RTT), then {:.1} ms of pauses between the server's response segments \
                         with everything acknowledged; exchange took {:.1} ms",
                            ms(x.server_time_ns),
                            ms(x.body_wait_ns),
                            ms(x.last_resp.ts_ns - x.first_req.ts_ns)
                        )
                    } else {
                        format!(
                            "request complete, first response byte {:.1} ms later (server time net \
                         of RTT), exchange took {:.1} ms",
                            ms(x.server_time_ns),
                            ms(x.last_resp.ts_ns - x.first_req.ts_ns)
                        )
                    },
                }
            })
            .collect();
        if let Some(e) = timer {
            f.evidence.insert(0, e);
        }
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::detect::testkit::*;

    fn exchanges(n: u64, think_ms: i64) -> Vec<ExchangeDone> {
        (0..n)
            .map(|k| {
                let t = k as i64 * 1000;
                let mut x = ExchangeDone::new(
                    ends(),
                    pkt(k * 2 + 1, t, false, F::PSH, 78),
                    pkt(k * 2 + 2, t + think_ms, true, F::PSH, 200),
                );
                x.server_time_ns = think_ms * MS;
                x
            })
            .collect()
    }

    #[test]
    fn think_time_that_dominates_latency_is_found() {
        let xs = exchanges(10, 30);
        let ev: Vec<Event<'_>> = xs.iter().map(Event::ExchangeDone).collect();
        let cx = Context {
            latency_p50_ms: 30.0,
            server_time_p50_ms: 30.0,
            ..cx(10)
        };
        let v = run::<SlowServerProcessing>(&ev, &cx);
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].severity, v[0].side),
            (Severity::Warning, Side::Server)
        );
        assert_eq!(v[0].impact.affected_fraction, Some(1.0));
        assert_eq!(v[0].evidence.len(), MAX_EXAMPLES);
        // 300 ms of think time is critical.
        let cx = Context {
            latency_p50_ms: 300.0,
            server_time_p50_ms: 300.0,
            ..cx
        };
        assert_eq!(
            run::<SlowServerProcessing>(&ev, &cx)[0].severity,
            Severity::Critical
        );
    }

    /// A server slow in the TLS handshake (an RSA signature of 30 ms on every ClientHello
    /// turn) with prompt requests: told, side server, with the handshake turns as evidence;
    /// handshakes fast on the server: nothing.
    #[test]
    fn a_server_slow_in_the_tls_handshake_is_told() {
        let hellos = exchanges(6, 30);
        let keys = exchanges(6, 1);
        let requests = exchanges(6, 1);
        let ev: Vec<Event<'_>> = hellos
            .iter()
            .chain(&keys)
            .map(Event::TlsTurn)
            .chain(requests.iter().map(Event::ExchangeDone))
            .collect();
        let cx = Context {
            latency_p50_ms: 1.0,
            server_time_p50_ms: 1.0,
            ..cx(6)
        };
        let v = run::<SlowServerProcessing>(&ev, &cx);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(
            (v[0].severity, v[0].side),
            (Severity::Warning, Side::Server)
        );
        assert!(
            v[0].summary
                .starts_with("The server takes 30.0 ms to answer in the TLS handshake (6 of 12"),
            "{}",
            v[0].summary
        );
        assert!(v[0].evidence.iter().any(|e| matches!(e,
            Evidence::Probe { probe, .. } if probe == super::super::slow_tls_handshake::TLS_SERVER_EVIDENCE)));
        let fast: Vec<Event<'_>> = keys
            .iter()
            .map(Event::TlsTurn)
            .chain(requests.iter().map(Event::ExchangeDone))
            .collect();
        assert!(run::<SlowServerProcessing>(&fast, &cx).is_empty());
    }

    #[test]
    fn one_very_slow_first_byte_is_enough() {
        let mut xs = exchanges(1, 983);
        xs[0].cut = true;
        let ev: Vec<Event<'_>> = xs.iter().map(Event::ExchangeCut).collect();
        // A cut exchange has no latency (p50 0).
        let cx = Context {
            latency_p50_ms: 0.0,
            server_time_p50_ms: 983.0,
            incomplete: 1,
            ..cx(0)
        };
        let v = run::<SlowServerProcessing>(&ev, &cx);
        assert_eq!(
            (v[0].severity, v[0].side),
            (Severity::Critical, Side::Server)
        );
        assert!(
            v[0].summary
                .contains("983.0 ms to start answering (1 request; the capture ends"),
            "{}",
            v[0].summary
        );
        // 50 ms on one request is not enough to say.
        let cx = Context {
            server_time_p50_ms: 50.0,
            ..cx
        };
        assert!(run::<SlowServerProcessing>(&ev, &cx).is_empty());
    }

    #[test]
    fn too_few_exchanges_or_a_small_share_say_nothing() {
        let xs = exchanges(MIN_EXCHANGES - 1, 30);
        let ev: Vec<Event<'_>> = xs.iter().map(Event::ExchangeDone).collect();
        let few = Context {
            latency_p50_ms: 30.0,
            server_time_p50_ms: 30.0,
            ..cx(MIN_EXCHANGES - 1)
        };
        assert!(run::<SlowServerProcessing>(&ev, &few).is_empty());
        let small_share = Context {
            latency_p50_ms: 100.0,
            server_time_p50_ms: 30.0,
            ..cx(10)
        };
        assert!(run::<SlowServerProcessing>(&ev, &small_share).is_empty());
    }

    #[test]
    fn a_saturated_cpu_is_contention_on_the_host_not_a_slow_server() {
        let xs = exchanges(10, 300);
        let cpu = Observation::Cpu {
            machine_busy: 0.97,
            own_busy: 0.55,
            cores: 2,
            server_wait_ms: None,
            server_cpu_ms: None,
        };
        let mut ev: Vec<Event<'_>> = xs.iter().map(Event::ExchangeDone).collect();
        ev.push(Event::Observed(&cpu));
        let cfg = Observation::RunConfig {
            keepalive: true,
            timeout_ms: 2000,
            connections: 1000,
        };
        ev.push(Event::Observed(&cfg));
        let cx = Context {
            latency_p50_ms: 300.0,
            server_time_p50_ms: 300.0,
            ..cx(10)
        };
        let v = run::<SlowServerProcessing>(&ev, &cx);
        assert_eq!((v[0].side, v[0].severity), (Side::Host, Severity::Warning));
        assert!(v[0].summary.contains("CPU contention"), "{}", v[0].summary);
        assert!(
            v[0].explanation
                .contains("1000 connections busy on 2 cores"),
            "{}",
            v[0].explanation
        );
        ev.pop();
        // A machine with CPU to spare: the server's own time, critical.
        let idle = Observation::Cpu {
            machine_busy: 0.3,
            own_busy: 0.1,
            cores: 2,
            server_wait_ms: None,
            server_cpu_ms: None,
        };
        ev.pop();
        ev.push(Event::Observed(&idle));
        let v = run::<SlowServerProcessing>(&ev, &cx);
        assert_eq!(
            (v[0].side, v[0].severity),
            (Side::Server, Severity::Critical)
        );
    }
}

//! Slow handshakes that no repeated SYN explains: `high_base_rtt` when the path is slow,
//! `syn_retransmit` when only the setup was.
//!
//! A handshake here is SYN → SYN/ACK → ACK without a repeated SYN or SYN/ACK (repeats are
//! `syn_retransmit`'s own finding). It is slow from [`SLOW_MS`] on: no healthy path takes
//! that long for one round trip, except a satellite hop.
//!
//! - When the **median** handshake is slow, every connection paid it: the path itself is slow
//!   (distance, a congested or satellite link, a slow hop): `high_base_rtt`, side network. A
//!   warning when the round trip is at least half the median latency (it explains it), or when
//!   no latency is known (no exchange completed), else info.
//! - When only some handshakes are slow (at least [`OUTLIER_FACTOR`] times the median one), or
//!   the server acknowledged a request on the same connection (its fastest ACK of any request)
//!   much faster than it answered the SYN (the data path is fast), the setup alone was slow: a SYN or SYN/ACK was lost and
//!   repeated where the capture could not see it (before the capture point), or the server's
//!   SYN queue answered late. That is connection setup delayed: `syn_retransmit`, side server
//!   when the SYN → SYN/ACK leg was the slow one, client when the ACK was.
//!
//! A path finding whose request was acknowledged in under [`MIN_DATA_RTT_NS`] at the client
//! (`ndpi-exe_download`: 0.26 ms against a 319 ms handshake) says so: what answered is near the
//! capture point (a proxy, an accelerator, a firewall, or the server itself), and the
//! handshake's time went beyond it or in it, which the capture cannot tell apart.
//!
//! Where the capture point was decides which leg holds the round trip (at the client:
//! SYN → SYN/ACK; at the server: SYN/ACK → ACK); both legs together are the handshake RTT.

use std::collections::HashMap;
use std::net::SocketAddr;

use super::{Context, Detector, Interests, MAX_EXAMPLES, conn_label, ms};
use crate::event::{ConnDone, Event, SynState};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::stats::Hist;

/// A handshake this slow is a finding (one round trip of 300 ms is a far or very slow path).
pub const SLOW_MS: f64 = 300.0;
/// A slow handshake this many times the median one is an outlier of the setup, not the path.
pub const OUTLIER_FACTOR: f64 = 3.0;
/// The data path is "fast" when the server acknowledged a request within this share of the
/// SYN → SYN/ACK time.
const FAST_DATA_SHARE: f64 = 0.33;
/// A request ACK faster than this comes from something near the capture point, not the server.
const MIN_DATA_RTT_NS: i64 = 1_000_000;
/// The evidence of `high_base_rtt` that says such an ACK came (the Chinese texts choose
/// their sentences by it).
pub const NEAR_ACK_EVIDENCE: &str = "near_ack";

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    st: SynState,
    /// The fastest of this connection's requests → the server's ACK of it, ns.
    data_rtt_ns: Option<i64>,
    /// The fastest such ACK under [`MIN_DATA_RTT_NS`]: something near the capture point
    /// acknowledged for the server, ns.
    near_ack_ns: Option<i64>,
}

impl Example {
    fn total_ns(&self) -> i64 {
        match (self.st.first_syn, self.st.done) {
            (Some(a), Some(b)) => b.ts_ns - a.ts_ns,
            _ => 0,
        }
    }

    /// SYN → SYN/ACK.
    fn synack_leg_ns(&self) -> i64 {
        match (self.st.first_syn, self.st.first_synack) {
            (Some(a), Some(b)) => b.ts_ns - a.ts_ns,
            _ => 0,
        }
    }

    /// The data path was fast on this connection while the SYN/ACK was slow.
    fn fast_data(&self) -> bool {
        self.data_rtt_ns
            .is_some_and(|d| (d as f64) < FAST_DATA_SHARE * self.synack_leg_ns() as f64)
    }
}

/// The slow-handshake detector (`high_base_rtt` / `syn_retransmit` for setups).
#[derive(Default)]
pub struct SlowHandshake {
    /// The fastest request → server ACK, per connection still open, and the fastest one under
    /// [`MIN_DATA_RTT_NS`].
    data_rtt: HashMap<(SocketAddr, SocketAddr), i64>,
    near_ack: HashMap<(SocketAddr, SocketAddr), i64>,
    handshakes: Option<Hist>,
    n: u64,
    /// Slow handshakes, the first few (the rest are counted by the histogram).
    slow: Vec<Example>,
    slow_n: u64,
    /// Slow handshakes on connections whose data path was fast.
    fast_data_n: u64,
}

impl Detector for SlowHandshake {
    fn interests(&self) -> Interests {
        Interests::CONN_DONE
            .and(Interests::EXCHANGE_DONE)
            .and(Interests::EXCHANGE_CUT)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::ExchangeDone(x) | Event::ExchangeCut(x) => {
                // The fastest ACK of any of the connection's requests: a delayed ACK or a
                // queue only adds to a round trip, so the smallest is the path's own (the
                // first alone, 154 ms with the server's ACK delay in it, read the 407 ms
                // handshake of zeek-zero-length-bodies-with-drops as the path, where its
                // later requests were acknowledged in 111 ms). An ACK under a millisecond is
                // not the far end's (a middlebox, a proxy on the capture host), so it says
                // nothing about the path.
                if let Some(a) = x.req_ack {
                    let d = a.ts_ns - x.last_req.ts_ns;
                    let map = if d >= MIN_DATA_RTT_NS {
                        &mut self.data_rtt
                    } else {
                        &mut self.near_ack
                    };
                    let e = map.entry((x.ends.client, x.ends.server)).or_insert(d);
                    *e = (*e).min(d);
                }
            }
            Event::ConnDone(c) => self.on_conn(c),
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        out.extend(self.report(cx));
    }
}

impl SlowHandshake {
    fn on_conn(&mut self, c: &ConnDone) {
        let key = (c.ends.client, c.ends.server);
        let data_rtt_ns = self.data_rtt.remove(&key);
        let near_ack_ns = self.near_ack.remove(&key);
        let st = c.syn;
        if st.repeated() || st.first_synack.is_none() {
            return;
        }
        let ex = Example {
            client: c.ends.client,
            server: c.ends.server,
            st,
            data_rtt_ns,
            near_ack_ns,
        };
        let total = ex.total_ns();
        if st.done.is_none() || total < 0 {
            return;
        }
        self.n += 1;
        self.handshakes
            .get_or_insert_with(Hist::new)
            .record_ns(total);
        if ms(total) >= SLOW_MS {
            self.slow_n += 1;
            self.fast_data_n += u64::from(ex.fast_data());
            if self.slow.len() < 4 * MAX_EXAMPLES {
                self.slow.push(ex);
            }
        }
    }

    fn report(&self, cx: &Context) -> Option<Finding> {
        if self.slow_n == 0 {
            return None;
        }
        let h = self.handshakes.as_ref()?;
        let median = h.quantile_ms(0.5);
        let path_slow = median >= SLOW_MS && self.fast_data_n * 2 < self.slow_n;
        if path_slow {
            return Some(self.path_finding(median, cx));
        }
        // Setups slow apart from the path: outliers, or a fast data path.
        let setup: Vec<&Example> = self
            .slow
            .iter()
            .filter(|e| ms(e.total_ns()) >= OUTLIER_FACTOR * median || e.fast_data())
            .collect();
        if setup.is_empty() {
            return None;
        }
        Some(self.setup_finding(&setup, median, cx))
    }

    fn evidence(&self, e: &Example, t0_ns: i64) -> Evidence {
        let st = e.st;
        let packets = [st.first_syn, st.first_synack, st.done]
            .into_iter()
            .flatten()
            .map(|p| p.to_ref(t0_ns))
            .collect();
        Evidence::Packets {
            connection: conn_label(e.client, e.server),
            packets,
            note: format!(
                "SYN → SYN/ACK {:.1} ms, SYN/ACK → ACK {:.1} ms, no SYN or SYN/ACK repeated{}",
                ms(e.synack_leg_ns()),
                ms(e.total_ns() - e.synack_leg_ns()),
                match e.data_rtt_ns {
                    Some(d) => format!(
                        "; a request on it was acknowledged {:.1} ms after it left",
                        ms(d)
                    ),
                    None => String::new(),
                }
            ),
        }
    }

    fn path_finding(&self, median: f64, cx: &Context) -> Finding {
        let lat = cx.latency_p50_ms;
        let explains = lat <= 0.0 || median >= 0.5 * lat;
        let mut f = Finding::new(
            FindingId::HighBaseRtt,
            if explains {
                Severity::Warning
            } else {
                Severity::Info
            },
            Side::Network,
            format!(
                "The path is slow: the TCP handshake took {median:.1} ms (median of {}), with no \
                 SYN or SYN/ACK repeated",
                self.n
            ),
        );
        f.confidence = 0.8;
        f.impact.added_latency_ms = Some(median);
        f.impact.affected_fraction = Some((self.slow_n as f64 / self.n as f64).min(1.0));
        f.explanation = format!(
            "A handshake is one round trip between the two ends, answered by their kernels in \
             microseconds; {median:.1} ms for it is the path's own round-trip time (distance, a \
             congested or satellite link, a slow hop), not the server's work. Every request \
             pays at least one such round trip, a new connection one more{}.",
            if lat > 0.0 && lat < median {
                // Less than one round trip: the capture point saw only the server's side of
                // each request (arkime-http-500-head: 2.8 ms requests, a 385 ms handshake
                // whose ACK leg held 384 ms), so the path time is not in that figure.
                format!(
                    "; the median request took {lat:.1} ms at the capture point, less than \
                     one such round trip: the capture saw them from nearer the server (or \
                     something near it answered them), and at the client each also waited the \
                     round trip"
                )
            } else if lat > 0.0 {
                format!(
                    "; the median request took {lat:.1} ms{}",
                    if explains {
                        ", mostly this path time"
                    } else {
                        ""
                    }
                )
            } else {
                String::new()
            }
        );
        // Requests acknowledged in under a millisecond by what answered the SYN
        // (`ndpi-exe_download`: a 319 ms handshake, the request acknowledged in 0.26 ms, the
        // answer 298 ms later): a box near the capture point acknowledges for the server.
        let near: Vec<i64> = self
            .slow
            .iter()
            // At the client (the SYN → SYN/ACK leg holds the time): at the server, its own
            // kernel acknowledges in microseconds.
            .filter(|e| e.data_rtt_ns.is_none() && 2 * e.synack_leg_ns() >= e.total_ns())
            .filter_map(|e| e.near_ack_ns)
            .collect();
        let near_fastest = near.iter().min().copied();
        if let Some(fastest) = near_fastest {
            f.explanation.push_str(&format!(
                " Yet a request on {} of these connections was acknowledged {:.2} ms after it \
                 left: what answered is near the capture point (a proxy, a TCP accelerator or \
                 a firewall answering for the server, or the server itself), so {median:.1} ms \
                 is not the round trip to it. The time went beyond that box (a proxy that \
                 connects onward before it answers a SYN waits that onward round trip, and its \
                 answers wait it again) or in it (a SYN answered late): the capture cannot tell \
                 which.",
                near.len(),
                ms(fastest)
            ));
        }
        f.fix = "Find where the round trip goes (`netdoctor trace HOST` or `mtr --tcp`): a hop \
                 that adds the delay, a congested link or a far region. Serve from nearer, and \
                 keep connections alive so the handshake is not paid per request."
            .to_string();
        f.evidence = self
            .slow
            .iter()
            .take(MAX_EXAMPLES)
            .map(|e| self.evidence(e, cx.t0_ns))
            .collect();
        if let Some(fastest) = near_fastest {
            f.evidence.insert(
                0,
                Evidence::Probe {
                    probe: NEAR_ACK_EVIDENCE.to_string(),
                    note: format!(
                        "a request acknowledged {:.2} ms after it left, on {} slow connection(s): \
                         what answered is near the capture point; the handshake's time went \
                         beyond it or in it",
                        ms(fastest),
                        near.len()
                    ),
                },
            );
        }
        f
    }

    fn setup_finding(&self, setup: &[&Example], median: f64, cx: &Context) -> Finding {
        let worst = setup.iter().map(|e| e.total_ns()).max().unwrap_or(0);
        // What the slow setups cost beyond a round trip of the path (the data path's on the
        // connection when it was measured, else the median handshake).
        let added = setup
            .iter()
            .map(|e| {
                let base = match e.data_rtt_ns {
                    Some(d) if e.fast_data() => ms(d),
                    _ => median,
                };
                (ms(e.total_ns()) - base).max(0.0)
            })
            .fold(0.0, f64::max);
        // The slow leg: SYN → SYN/ACK (the server, or the way to it) or SYN/ACK → ACK.
        let server_leg = setup
            .iter()
            .filter(|e| 2 * e.synack_leg_ns() >= e.total_ns())
            .count()
            * 2
            >= setup.len();
        let (side, leg) = if server_leg {
            (Side::Server, "the SYN/ACK came late")
        } else {
            (Side::Client, "the client's ACK came late")
        };
        let n = setup.len();
        let mut f = Finding::new(
            FindingId::SynRetransmit,
            if ms(worst) >= 1000.0 {
                Severity::Critical
            } else {
                Severity::Warning
            },
            side,
            format!(
                "Connection setup was slow on {n} of {} connections without a visible repeat: \
                 {leg}, the handshake took up to {:.1} ms (median handshake {median:.1} ms)",
                self.n,
                ms(worst)
            ),
        );
        f.confidence = 0.7;
        f.impact.added_latency_ms = Some(added);
        f.impact.affected_fraction = Some((n as f64 / self.n as f64).min(1.0));
        f.explanation = format!(
            "These handshakes took far longer than the path's round trip (the median handshake, \
             or the time the server took to acknowledge a request on the same connection), with \
             no SYN or SYN/ACK repeated in the capture. A kernel answers a SYN in microseconds, \
             so the time went to a {} that was lost and repeated where the capture could not \
             see it (before the capture point; Linux repeats after 1 s), or to {}.",
            if server_leg {
                "SYN or SYN/ACK"
            } else {
                "SYN/ACK or ACK"
            },
            if server_leg {
                "a server whose SYN queue or accept queue held the connection (a SYN flood, \
                 SYN cookies, a listener that accepts too slowly)"
            } else {
                "a client that was slow to complete the handshake (a busy client host)"
            }
        );
        f.fix = if server_leg {
            "Capture at the server too, to see whether the SYN arrived late or was answered \
             late; check its listen queue (`ss -ltn`, `nstat -az TcpExtListenOverflows \
             TcpExtListenDrops`) and the path for drops (`netdoctor trace HOST`)."
                .to_string()
        } else {
            "Capture on the client's host to see why its ACK left late (CPU, a firewall or a \
             proxy on the way)."
                .to_string()
        };
        f.evidence = setup
            .iter()
            .take(MAX_EXAMPLES)
            .map(|e| self.evidence(e, cx.t0_ns))
            .collect();
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::detect::testkit::*;
    use crate::event::{ExchangeDone, Pkt};

    fn conn(port: u16, synack_ms: i64, ack_ms: i64) -> ConnDone {
        let mut e = ends();
        e.client.set_port(port);
        let mut syn = SynState::default();
        syn.on_syn(pkt(1, 0, false, F::SYN, 0));
        syn.on_synack(pkt(2, synack_ms, true, F::SYN | F::ACK, 0));
        syn.done = Some(pkt(3, ack_ms, false, F::ACK, 0));
        ConnDone {
            ends: e,
            syn,
            first_req: None,
            exchanges: 0,
            first_close: None,
            idle_before_close_ns: None,
            asked: Default::default(),
            tls: Default::default(),
            crossed_fin: false,
        }
    }

    fn run_conns(conns: &[ConnDone], xs: &[ExchangeDone]) -> Vec<Finding> {
        let mut ev: Vec<Event<'_>> = xs.iter().map(Event::ExchangeDone).collect();
        ev.extend(conns.iter().map(Event::ConnDone));
        run::<SlowHandshake>(&ev, &cx(0))
    }

    #[test]
    fn a_slow_path_is_high_base_rtt() {
        // ppa-latency2: SYN/ACK 879 ms after the SYN, the request acknowledged 1155 ms later.
        let c = conn(40000, 879, 895);
        let mut x = ExchangeDone::new(
            c.ends,
            pkt(4, 896, false, F::PSH, 627),
            pkt(6, 2067, true, F::ACK, 1406),
        );
        x.req_ack = Some(pkt(5, 2051, true, F::ACK, 0));
        let v = run_conns(&[c], &[x]);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].id, FindingId::HighBaseRtt);
        assert_eq!(
            (v[0].side, v[0].severity),
            (Side::Network, Severity::Warning)
        );
        assert!(
            v[0].summary.contains("handshake took 895"),
            "{}",
            v[0].summary
        );
    }

    #[test]
    fn a_slow_setup_on_a_fast_path_is_setup_delay() {
        // The SYN/ACK took 1 s, the request was acknowledged in 30 ms: the setup, not the path.
        let c = conn(40000, 1000, 1001);
        let mut x = ExchangeDone::new(
            c.ends,
            pkt(4, 1002, false, F::PSH, 100),
            pkt(6, 1040, true, F::PSH, 100),
        );
        x.req_ack = Some(Pkt {
            ts_ns: T0 + 1032 * MS,
            ..pkt(5, 0, true, F::ACK, 0)
        });
        let v = run_conns(&[c], &[x]);
        assert_eq!(v[0].id, FindingId::SynRetransmit);
        assert_eq!(
            (v[0].side, v[0].severity),
            (Side::Server, Severity::Critical)
        );
        assert!(
            v[0].summary.contains("the SYN/ACK came late"),
            "{}",
            v[0].summary
        );
        // One slow handshake among fast ones is an outlier too.
        let mut cs: Vec<ConnDone> = (0..9).map(|k| conn(40001 + k, 30, 31)).collect();
        cs.push(conn(40100, 30, 500));
        let v = run_conns(&cs, &[]);
        assert_eq!(v[0].id, FindingId::SynRetransmit);
        assert_eq!(
            (v[0].side, v[0].severity),
            (Side::Client, Severity::Warning)
        );
    }

    #[test]
    fn an_ack_from_next_to_the_capture_point_says_nothing_about_the_path() {
        // ndpi-exe_download: the request "acknowledged" 0.26 ms after it left (a middlebox),
        // the response 298 ms later: the path is slow, not the setup.
        let c = conn(40000, 319, 320);
        let mut x = ExchangeDone::new(
            c.ends,
            pkt(4, 320, false, F::PSH, 153),
            pkt(6, 618, true, F::ACK, 1460),
        );
        x.req_ack = Some(Pkt {
            ts_ns: T0 + 320 * MS + 260_000,
            ..pkt(5, 0, true, F::ACK, 0)
        });
        let v = run_conns(&[c], &[x]);
        assert_eq!(v[0].id, FindingId::HighBaseRtt);
    }

    #[test]
    fn fast_or_repeated_handshakes_are_not_this_finding() {
        assert!(run_conns(&[conn(40000, 30, 35)], &[]).is_empty());
        let mut c = conn(40000, 900, 901);
        c.syn.on_syn(pkt(9, 1, false, F::SYN, 0));
        assert!(run_conns(&[c], &[]).is_empty());
    }
}

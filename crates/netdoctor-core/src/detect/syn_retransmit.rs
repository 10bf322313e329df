//! `syn_retransmit`: connection setup delayed by a repeated SYN or SYN/ACK.
//!
//! A SYN with the same initial sequence number as the connection's first SYN is a
//! retransmission (a new connection on the same 4-tuple has a new ISN); likewise for the
//! SYN/ACK. Linux repeats a SYN/ACK after 1 s, then 2 s, 4 s more (1 s, 3 s, 7 s after the
//! first). SYNs used to follow the same exponential schedule; recent kernels (6.18 here) have
//! `net.ipv4.tcp_syn_linear_timeouts` (default 4): the first 4 SYN retransmissions come every
//! second (1 s, 2 s, 3 s, 4 s after the first SYN), as the lab capture shows. Setup delay = the ACK completing the handshake (or the last
//! SYN/SYN/ACK seen, when it never completed) − the first SYN.
//!
//! Which one was repeated tells where to look: a repeated SYN with no SYN/ACK in between means
//! the server never answered (its accept queue or SYN queue was full, or a firewall dropped
//! the SYN); a repeated SYN/ACK means the server answered but did not get (or dropped) the
//! client's ACK: Linux drops that ACK when the accept queue is full. In that case the client
//! believes it is connected after the first SYN/ACK; the server only after the client's
//! answer to the last SYN/ACK, which is where the delay is measured to.
//!
//! A SYN/ACK repeated to a client that never answered any (no ACK, no data after the SYN:
//! [`SynState::client_answered`]) is not a delayed setup: nobody waited on it. A port scan
//! (nmap's SYN scan sends no ACK), spoofed sources of a SYN flood and clients that went away
//! look like that; a real client whose ACK is lost answers the next SYN/ACK, or sends its
//! request. Those connections are counted apart and, when they are all there is, make an
//! `info` finding on the client's side with no added latency (ppa-synscan in the corpus).
//!
//! A SYN/ACK repeated to a client that had already ACKed the first one and sent nothing yet,
//! answered by the client again ([`SynState::repeat_after_idle_open`]), did not delay anyone
//! either: from the client's side the connection was open at its first ACK, and it had
//! nothing to send (a browser's preconnected socket). The server's kernel kept the connection
//! in SYN-RECV: `TCP_DEFER_ACCEPT` (Apache's `AcceptFilter http`) drops the bare ACK and
//! repeats the SYN/ACK once, about 31 s later (ppa-sessionhijacking in the corpus: two idle
//! preconnects read as +31 s setup delays before this). Those are counted apart too, in the
//! same `info` finding. The look-alikes stay delayed setups: a full accept queue drops the ACK
//! and the request behind it (client data before the repeat), and a server that speaks first
//! keeps its client waiting for the banner (server data before any client data).
//!
//! A connection whose SYNs got no answer at all (no SYN/ACK, no reset from the server) before
//! the capture or the client gave up was not delayed: it never opened. Its time from the first
//! to the last SYN is how long the client kept trying, not a setup delay of any request, so it
//! is counted apart and said as a failed connect ("no answer to any of N SYNs over T s"); the
//! median delay covers only handshakes that did complete (`ppa-http_espn_fail`: 11 SYNs over
//! 67 s, once read as "+67437 ms setup delayed"). A SYN answered after retries stays a delayed
//! setup; a SYN answered by a reset is `server_not_listening`'s refusal.
//!
//! When the kernel's listen-queue counters grew during the run (`TcpExt.ListenOverflows`,
//! `TcpExt.ListenDrops` in [`Observation::Counters`]), the repeats are the listener's queue
//! on the server's host: the finding is side host, with the counters as evidence.

use std::net::SocketAddr;

use super::loss::listen_drops;
use super::{Context, Detector, Interests, MAX_EXAMPLES, Pkt, WORST_CRITICAL_MS, conn_label, ms};
use crate::event::{Event, SynState};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::observation::{CounterDelta, Observation};
use crate::stats::Hist;

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    st: SynState,
}

/// Keeps the connection as an example, up to [`MAX_EXAMPLES`].
fn keep(examples: &mut Vec<Example>, client: SocketAddr, server: SocketAddr, st: &SynState) {
    if examples.len() < MAX_EXAMPLES {
        examples.push(Example {
            client,
            server,
            st: *st,
        });
    }
}

/// The `syn_retransmit` detector.
#[derive(Default)]
pub struct SynRetransmit {
    handshakes: u64,
    /// Requests (exchanges) on the connections that began with a captured SYN.
    requests: u64,
    affected: u64,
    syn_repeated: u64,
    synack_repeated: u64,
    never_completed: u64,
    delay: Option<Hist>,
    /// Listen-queue counters that grew during the run.
    listen: Vec<CounterDelta>,
    examples: Vec<Example>,
    /// Connections whose SYN/ACK was repeated to a client that never answered any.
    unanswered: u64,
    unanswered_examples: Vec<Example>,
    /// Connections whose SYN/ACK was repeated after the client had ACKed one and before
    /// anybody sent data ([`SynState::repeat_after_idle_open`]).
    idle: u64,
    idle_examples: Vec<Example>,
    /// Connections whose repeated SYNs got no answer at all: they never opened.
    unopened: u64,
    /// The most SYNs one of them sent, and the longest time from its first SYN to its last.
    unopened_max_syns: u16,
    unopened_max_span_ns: i64,
    unopened_examples: Vec<Example>,
    /// Connections whose client repeated its SYN after the capture had seen the server's
    /// SYN/ACK to it: the server answered; the answer was lost after the capture point.
    synack_not_taken: u64,
    /// Of those, the ones between two addresses of one host (loopback, or the same address).
    synack_not_taken_local: u64,
    /// The fastest SYN → SYN/ACK the capture saw on those, ns.
    synack_answer_ns: Option<i64>,
    /// netdoctor's own load ran ([`Observation::RunConfig`]): the capture was taken in the
    /// client's namespace, on its interface, before its firewall and its TCP.
    capture_at_client: bool,
    /// Where the capture was taken, and the SYNs nobody answered (`vantage`).
    vantage: vantage::Vantage,
}

impl Detector for SynRetransmit {
    fn interests(&self) -> Interests {
        Interests::CONN_DONE.and(Interests::OBSERVED)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::ConnDone(c) => {
                if c.syn.first_syn.is_some() {
                    self.requests += u64::from(c.exchanges);
                }
                // A reset from the server answered the SYNs (a refusal), not silence.
                let refused = c.first_close.is_some_and(|p| p.from_server);
                self.on_conn(c.ends.client, c.ends.server, &c.syn, refused)
            }
            Event::Observed(Observation::Counters(deltas)) => {
                self.vantage.counters_seen = true;
                self.listen = listen_drops(deltas);
            }
            Event::Observed(Observation::RunConfig { .. }) => self.capture_at_client = true,
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        self.report(cx.t0_ns, out);
    }
}

impl SynRetransmit {
    /// A connection that began with a captured SYN ended (or the capture did).
    fn on_conn(&mut self, client: SocketAddr, server: SocketAddr, st: &SynState, refused: bool) {
        let Some(first) = st.first_syn else {
            return;
        };
        self.handshakes += 1;
        self.vantage.on_conn(client, server, st);
        if !st.repeated() {
            return;
        }
        if st.syns <= 1 && st.done.is_none() && !st.client_answered {
            self.unanswered += 1;
            keep(&mut self.unanswered_examples, client, server, st);
            return;
        }
        if st.repeat_after_idle_open() {
            self.idle += 1;
            keep(&mut self.idle_examples, client, server, st);
            return;
        }
        if st.syns > 1 && st.synacks == 0 && st.done.is_none() && !refused {
            self.unopened += 1;
            self.unopened_max_syns = self.unopened_max_syns.max(st.syns);
            let last = st.last_syn.unwrap_or(first);
            self.unopened_max_span_ns = self.unopened_max_span_ns.max(last.ts_ns - first.ts_ns);
            keep(&mut self.unopened_examples, client, server, st);
            return;
        }
        self.affected += 1;
        self.syn_repeated += u64::from(st.syns > 1);
        // The server's SYN/ACK was captured between the first SYN and a repeat of it.
        if let (Some(sa), Some(last)) = (st.first_synack, st.last_syn)
            && st.syns > 1
            && sa.ts_ns >= first.ts_ns
            && last.ts_ns > sa.ts_ns
        {
            self.synack_not_taken += 1;
            let local = client.ip().is_loopback() || client.ip() == server.ip();
            self.synack_not_taken_local += u64::from(local);
            let answer = sa.ts_ns - first.ts_ns;
            self.synack_answer_ns = Some(self.synack_answer_ns.map_or(answer, |a| a.min(answer)));
        }
        self.synack_repeated += u64::from(st.synacks > 1);
        let end = match st.done {
            Some(d) => d,
            None => {
                self.never_completed += 1;
                [st.last_syn, st.last_synack]
                    .into_iter()
                    .flatten()
                    .max_by_key(|p| p.ts_ns)
                    .unwrap_or(first)
            }
        };
        self.delay
            .get_or_insert_with(Hist::new)
            .record_ns(end.ts_ns - first.ts_ns);
        keep(&mut self.examples, client, server, st);
    }

    fn report(&self, t0_ns: i64, out: &mut Vec<Finding>) {
        if self.affected == 0 && self.unopened > 0 {
            out.push(self.unopened_finding(t0_ns));
            return;
        }
        if self.affected == 0 {
            if self.unanswered > 0 || self.idle > 0 {
                out.push(self.unanswered_finding(t0_ns));
            }
            return;
        }
        let added = self.delay.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
        let fraction = (self.affected as f64 / self.handshakes.max(1) as f64).min(1.0);
        // A slow setup delays the connection's first request only: with keep-alive the share
        // of requests is far smaller than the share of connections, and the impact is the
        // requests'.
        let requests_share = (self.requests > self.handshakes)
            .then(|| (self.affected as f64 / self.requests as f64).min(1.0));
        let worst = self.delay.as_ref().map_or(0.0, Hist::max_ms);
        // A setup delay is at least a second; the worst one counts with the typical one.
        // Connects that failed outright weigh as much as a long delay.
        let failed = self.unopened as f64 / self.handshakes.max(1) as f64;
        let severity = if (fraction >= 0.05 && (added >= 500.0 || worst >= WORST_CRITICAL_MS))
            || failed >= 0.05
        {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let lost_where =
            if self.capture_at_client && self.synack_not_taken_local * 2 < self.synack_not_taken {
                "on the client's host"
            } else {
                "after the capture point"
            };
        let what = match (self.syn_repeated, self.synack_repeated) {
            (n, _) if self.all_answered() => format!(
                "the server answered within {} but the client repeated its SYN on {n}: the \
                 SYN/ACK was lost {lost_where}",
                self.answer_ms()
            ),
            (0, _) => format!(
                "the server had to repeat its SYN/ACK on {}",
                self.synack_repeated
            ),
            (n, 0) => format!("the client had to repeat its SYN on {n}"),
            (n, m) => format!("the client repeated its SYN on {n}, the server its SYN/ACK on {m}"),
        };
        let mut f = Finding::new(
            FindingId::SynRetransmit,
            severity,
            Side::Server,
            format!(
                "Connection setup delayed on {} of {} connections{} ({what}): +{added:.0} ms (median){}",
                self.affected,
                self.handshakes,
                match requests_share {
                    Some(_) => format!(
                        ", the first request of each: {} of {} requests",
                        self.affected, self.requests
                    ),
                    None => String::new(),
                },
                if worst >= 2.0 * added && worst >= added + 10.0 {
                    format!(", worst {worst:.0} ms")
                } else {
                    String::new()
                }
            ),
        );
        if self.unopened > 0 {
            f.summary.push_str(&format!("; {}", self.unopened_words()));
        }
        f.confidence = 0.95;
        f.impact.added_latency_ms = Some(added);
        f.impact.affected_fraction = Some(requests_share.unwrap_or(fraction));
        f.explanation = format!(
            "Opening a TCP connection takes a SYN, a SYN/ACK and an ACK. When one is lost, \
             nothing happens until a timer fires: a SYN or SYN/ACK is repeated after 1 s, \
             then 3 s after the first (recent Linux clients repeat SYNs every second: 1 s, \
             2 s, 3 s, 4 s). That is the 1 s / 3 s pattern in request latencies.{}",
            self.repeats_words()
        );
        if self.unanswered > 0 {
            f.explanation.push_str(&format!(
                " Not counted: {} more connections whose client never answered the server's \
                 SYN/ACK at all (no ACK, no data), so the server repeated it to nobody waiting \
                 (a port scan, spoofed SYNs, a client that went away).",
                self.unanswered
            ));
        }
        if self.idle > 0 {
            f.explanation
                .push_str(&format!(" Not counted either: {}.", self.idle_clause()));
        }
        f.fix = "Check the server's listen queue (`ss -ltn`: Recv-Q reaching Send-Q; `nstat \
                 TcpExtListenOverflows TcpExtListenDrops`): accept faster (more workers) or raise \
                 the backlog (listen() argument and net.core.somaxconn). If the queue is fine, \
                 look for a firewall or rate limit dropping SYNs, or loss on the path."
            .to_string();
        f.evidence = evidence(&self.examples, t0_ns);
        f.evidence.extend(
            evidence(&self.unopened_examples, t0_ns)
                .into_iter()
                .take(MAX_EXAMPLES.saturating_sub(f.evidence.len())),
        );
        self.answered_but_not_taken(&mut f);
        self.vantage.place(&mut f, self.synack_repeated);
        self.attribute_listen(&mut f);
        out.push(f);
    }
}

impl SynRetransmit {
    /// " Here the SYN was repeated on N connections (...), and the SYN/ACK on M (...). K of
    /// them never completed." with only the clauses whose count is not zero (a sentence about
    /// "0 connections" read as if it had happened).
    fn repeats_words(&self) -> String {
        let conns = |n: u64| format!("{n} connection{}", if n == 1 { "" } else { "s" });
        let syn = "(the server did not answer it: its accept queue was full, a SYN-flood \
                   defence or a firewall dropped it, or the path lost it)";
        let synack = "(the server answered, but the client's ACK did not complete the \
                      handshake: Linux drops that ACK while the listener's accept queue is full)";
        let mut out = match (self.syn_repeated, self.synack_repeated) {
            (0, 0) => String::new(),
            (n, 0) => format!(" Here the SYN was repeated on {} {syn}.", conns(n)),
            (0, m) => format!(" Here the SYN/ACK was repeated on {} {synack}.", conns(m)),
            (n, m) => format!(
                " Here the SYN was repeated on {} {syn}, and the SYN/ACK on {m} {synack}.",
                conns(n)
            ),
        };
        if self.never_completed > 0 {
            let n = self.never_completed;
            out.push_str(&format!(
                " {n} of {} never completed the handshake.",
                if self.affected == 1 { "it" } else { "them" }
            ));
        }
        out
    }

    /// "N more connections never opened: ..." (the unopened connections, in words).
    fn unopened_words(&self) -> String {
        format!(
            "{} more connection(s) never opened: no answer to any of their SYNs (up to {} SYNs \
             over {:.1} s)",
            self.unopened,
            self.unopened_max_syns,
            ms(self.unopened_max_span_ns) / 1000.0
        )
    }

    /// Only connects that got no answer to any SYN: failed connects, not a delayed setup (no
    /// request waited on them; they never opened).
    /// With the kernel's listen-queue counters grown during the run, the repeats (or the
    /// unanswered SYNs) are the server host's listen queue: side host, counters as evidence.
    fn attribute_listen(&self, f: &mut Finding) {
        if self.listen.is_empty() {
            return;
        }
        let counts: Vec<String> = self
            .listen
            .iter()
            .map(|d| format!("{} +{}", d.name, d.change()))
            .collect();
        f.side = Side::Host;
        f.confidence = 0.98;
        f.summary.push_str(&format!(
            ": the server's listen queue overflowed ({})",
            counts.join(", ")
        ));
        f.explanation.push_str(
            " The kernel's listen-queue counters grew during the run: the listener's accept \
             queue was full, so its host dropped handshakes until the application accepted.",
        );
        f.fix = "The server's listen queue overflowed: accept faster (more workers, a \
                 non-blocking accept loop) or raise the backlog (the listen() argument, e.g. \
                 nginx `listen ... backlog=N`, and net.core.somaxconn); watch `ss -ltn` \
                 (Recv-Q against Send-Q) and `nstat -az TcpExtListenOverflows`."
            .to_string();
        f.evidence
            .extend(self.listen.iter().map(|d| Evidence::Counter {
                name: d.name.clone(),
                before: d.before,
                after: d.after,
                note: format!(
                    "+{} during the run: the listener dropped handshakes",
                    d.change()
                ),
            }));
    }

    fn unopened_finding(&self, t0_ns: i64) -> Finding {
        let n = self.unopened;
        let fraction = (n as f64 / self.handshakes.max(1) as f64).min(1.0);
        let severity = if fraction >= 0.05 {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let mut f = Finding::new(
            FindingId::SynRetransmit,
            severity,
            Side::Server,
            format!(
                "Connection attempts failed on {n} of {} connections: no answer to any SYN (the \
                 client sent up to {} SYNs over {:.1} s); they never opened",
                self.handshakes,
                self.unopened_max_syns,
                ms(self.unopened_max_span_ns) / 1000.0
            ),
        );
        // The SYNs left; whether the server's host, a firewall or the path dropped them (or
        // the answers), the packets alone cannot tell.
        f.confidence = 0.7;
        f.impact.affected_fraction = Some(fraction);
        f.explanation = format!(
            "Opening a TCP connection takes a SYN, a SYN/ACK and an ACK. On these {n} \
             connections the client sent its SYN and repeated it on its timer (every second on recent Linux, else 1 s then \
             doubling), and nothing came back: no SYN/ACK and no reset. The connections never \
             opened, so no request on them was slowed: they failed. The time from the first SYN \
             to the last is how long the client kept trying, not a delay. Nothing answering at \
             all means the SYNs (or the answers) were dropped: the server's host is down or \
             unreachable, a firewall drops them silently, or the path loses them; a server \
             whose listen queue is full drops SYNs too. A port with nothing listening would \
             have answered with a reset."
        );
        f.fix = "Check that the server's address is reachable from the client (`ping`, \
                 `netdoctor trace`), that it listens on the port (`ss -ltn` on the server), and \
                 that no firewall on the way drops the SYNs silently; then the listen queue \
                 (`nstat TcpExtListenOverflows TcpExtListenDrops`)."
            .to_string();
        if self.idle > 0 {
            f.explanation
                .push_str(&format!(" Not counted either: {}.", self.idle_clause()));
        }
        f.evidence = evidence(&self.unopened_examples, t0_ns);
        self.vantage.place(&mut f, self.synack_repeated);
        self.attribute_listen(&mut f);
        f
    }

    /// The client repeated its SYN although the capture saw the server answer the first one:
    /// not a server that did not answer. With every repeated SYN of that kind, the side is
    /// where the SYN/ACK was lost: on the client's own host when the capture was taken there
    /// (netdoctor's load; an INPUT rule, conntrack, a bad checksum), on one host when both
    /// ends share it, else after the capture point on the way to the client (the network).
    /// Mixed with SYNs that got no answer, the sentence says how many were answered.
    fn answer_ms(&self) -> String {
        format!("{:.2} ms", ms(self.synack_answer_ns.unwrap_or(0)))
    }

    /// Every repeated SYN had its SYN/ACK captured first.
    fn all_answered(&self) -> bool {
        self.synack_not_taken > 0 && self.synack_not_taken == self.syn_repeated
    }

    fn answered_but_not_taken(&self, f: &mut Finding) {
        let n = self.synack_not_taken;
        if n == 0 {
            return;
        }
        let answer = self.answer_ms();
        if n < self.syn_repeated {
            f.explanation.push_str(&format!(
                " On {n} of the {} connections whose SYN was repeated, the capture saw the \
                 server's SYN/ACK (within {answer}) before the client repeated its SYN: those \
                 answers were lost after the capture point, on the way to the client's TCP.",
                self.syn_repeated
            ));
            return;
        }
        let local = self.synack_not_taken_local * 2 >= n;
        let (side, where_) = if local {
            (Side::Host, "inside this host, between the two ends")
        } else if self.capture_at_client {
            (
                Side::Client,
                "on the client's host after it arrived (the capture runs on the client's \
                 interface, before its firewall and its TCP)",
            )
        } else {
            (
                Side::Network,
                "after the capture point, on the way to the client or on the client's host",
            )
        };
        f.side = side;
        f.explanation = format!(
            "Opening a TCP connection takes a SYN, a SYN/ACK and an ACK. Here the capture saw \
             the server answer every first SYN with its SYN/ACK (within {answer}), and still the \
             client repeated its SYN a second or more later, as a client does when no SYN/ACK \
             reached its TCP. So the server did answer: its SYN/ACK was dropped {where_}. The \
             setup waited for the client's SYN timer (1 s, then every second on recent Linux) \
             on {n} connections."
        );
        f.fix = if side == Side::Client {
            "Look at the client's host: firewall rules that drop incoming packets (`iptables -S`, \
             `nft list ruleset`: INPUT, conntrack INVALID), reverse-path filtering \
             (`rp_filter`), checksum errors (`nstat -az TcpInCsumErrors`) and the kernel's drop \
             reasons there (`perf trace -e skb:kfree_skb`, or `netdoctor diagnose` with eBPF \
             from the client's namespace). The server and its listen queue are not the cause."
                .to_string()
        } else {
            "The server answered; find where its SYN/ACK was lost: capture on the client's host \
             too (was it received there?), then look for a firewall or rate limit on the way \
             back to the client, or on the client's host."
                .to_string()
        };
    }

    /// Only SYN/ACKs repeated to clients that never answered: an `info` on the client's side,
    /// with no added latency (nobody waited on these handshakes).
    fn unanswered_finding(&self, t0_ns: i64) -> Finding {
        let n = self.unanswered;
        let summary = if n == 0 {
            format!(
                "The server repeated its SYN/ACK on {} of {} connections {}: nobody waited \
                 on these handshakes",
                self.idle,
                self.handshakes,
                Self::IDLE_WHOSE
            )
        } else {
            let mut s = format!(
                "The server repeated its SYN/ACK on {n} of {} connections whose client never \
                 answered it (no ACK, no data)",
                self.handshakes
            );
            if self.idle > 0 {
                s.push_str(&format!(" and on {} {}", self.idle, Self::IDLE_WHOSE));
            }
            s.push_str(": nobody waited on these handshakes");
            s
        };
        let mut f = Finding::new(
            FindingId::SynRetransmit,
            Severity::Info,
            Side::Client,
            summary,
        );
        f.confidence = 0.9;
        f.impact.affected_fraction =
            Some(((n + self.idle) as f64 / self.handshakes.max(1) as f64).min(1.0));
        if n == 0 {
            f.explanation = format!(
                "A server repeats its SYN/ACK until it takes the client's ACK. Here {}. The \
                 client's connection was open at its first ACK; no handshake was slowed.",
                self.idle_clause()
            );
            f.fix = "Nothing to fix for these. If the server uses TCP_DEFER_ACCEPT (Apache's \
                     AcceptFilter, nginx `listen ... deferred`), this is how it looks."
                .to_string();
            f.evidence = evidence(&self.idle_examples, t0_ns);
            return f;
        }
        f.evidence = evidence(&self.unanswered_examples, t0_ns);
        f.evidence
            .extend(evidence(&self.idle_examples, t0_ns).into_iter().take(1));
        f.explanation = "A server repeats its SYN/ACK until the client's ACK comes. On these \
             connections the client sent its SYN and then nothing at all: no ACK to any of the \
             SYN/ACKs, no request. A real client whose ACK is lost answers the next SYN/ACK or \
             sends its request; a client that never answers is a port scan (a SYN scan sends no \
             ACK), a SYN flood from spoofed addresses, or a client that went away or lost its \
             route back. The server did what it should; no handshake was slowed."
            .to_string();
        if self.idle > 0 {
            f.explanation
                .push_str(&format!(" Also: {}.", self.idle_clause()));
        }
        f.fix = "Nothing to fix on the server for these. If the SYNs were not expected, look at \
                 their sources (one source probing many ports is a scan; many sources that \
                 never answer are a SYN flood: SYN cookies, rate limits)."
            .to_string();
        f
    }

    const IDLE_WHOSE: &str =
        "after their client had answered it and before anybody sent data (an idle connection)";

    /// What the idle-open repeats were, for the explanations.
    fn idle_clause(&self) -> String {
        format!(
            "on {} connections the server repeated its SYN/ACK after the client had already \
             ACKed the first one, and the client had sent nothing yet (a preconnected, idle \
             connection); the client answered the repeat too. The server's kernel did not take \
             the first ACK: TCP_DEFER_ACCEPT (Apache's AcceptFilter) waits for data and repeats \
             its SYN/ACK about 31 s later, or the ACK was lost after the capture point",
            self.idle
        )
    }
}

/// The handshake packets of `examples`, one evidence item each.
fn evidence(examples: &[Example], t0_ns: i64) -> Vec<Evidence> {
    examples
        .iter()
        .map(|e| {
            let st = &e.st;
            let mut pkts: Vec<Pkt> = [
                st.first_syn,
                st.last_syn,
                st.first_synack,
                st.first_ack,
                st.last_synack,
                st.done,
            ]
            .into_iter()
            .flatten()
            .collect();
            pkts.sort_by_key(|p| p.frame);
            pkts.dedup_by_key(|p| p.frame);
            let first = st.first_syn.map_or(0, |p| p.ts_ns);
            let note = format!(
                "{} SYN(s), {} SYN/ACK(s); {}",
                st.syns,
                st.synacks,
                match st.done {
                    Some(_) if st.repeat_after_idle_open() => format!(
                        "the client ACKed {:.0} ms after its SYN, the server repeated its \
                         SYN/ACK {:.0} ms after that, before anybody sent data",
                        st.first_ack.map_or(0.0, |a| ms(a.ts_ns - first)),
                        match (st.first_ack, st.last_synack) {
                            (Some(a), Some(l)) => ms(l.ts_ns - a.ts_ns),
                            _ => 0.0,
                        }
                    ),
                    Some(d) => format!(
                        "handshake completed {:.0} ms after the first SYN",
                        ms(d.ts_ns - first)
                    ),
                    None => "the handshake never completed".to_string(),
                }
            );
            Evidence::Packets {
                connection: conn_label(e.client, e.server),
                packets: pkts.into_iter().map(|p| p.to_ref(t0_ns)).collect(),
                note,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
mod vantage;
pub(crate) use vantage::retell_under_path_loss;

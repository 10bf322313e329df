//! `connection_reset`: connections ended by a TCP reset (RST).
//!
//! Each RST is classified by who sent it and when:
//! - **refused**: the server answered a SYN with a reset (nothing listens, or a firewall
//!   rejects): instead of a handshake. That is `server_not_listening`'s finding, not this one;
//! - **during an exchange**: a request was sent and its response had not started or was still
//!   coming (the server reset it, or the client gave up before the response started);
//! - **client abort**: the client reset while a response was arriving (a client that closes
//!   with unread data, e.g. a load generator stopping or a browser cancelling): info;
//! - **after the answer**: sooner than an idle timer after an answer complete by its
//!   framing (`analyze::framing`), no request waiting: an abortive close (`SO_LINGER` 0)
//!   instead of a FIN,
//!   told in [`after_answer`]: by the server, info when the client had acknowledged every
//!   answer, warning when not (its tail can be lost); by the client, info;
//! - **idle**: between exchanges (keep-alive connection dropped), after a response that was
//!   fully acknowledged and followed by seconds of silence (200 ms when it was complete by its
//!   framing), or answering a request sent on a connection already dropped; told in
//!   [`idle`]: a steady silence is an idle timer (side network), and only requests that got
//!   such a reset make it more than info;
//! - **after close**: its sender had already closed its side with a FIN (the peer's keep-alive
//!   probe or late data found no socket): the end of a closed connection, info; but a reset
//!   that answered a request the client wrote after the server's FIN failed that request (a
//!   pool reusing a connection the server was closing: the keep-alive race), told in
//!   [`race`] and weighed like the idle resets that hit a request;
//! - **at setup**: after the handshake, before any byte either way: a refusal or an abort at
//!   setup (an accept queue that overflowed with `tcp_abort_on_overflow` on, a server that
//!   accepts and closes with `SO_LINGER` 0, a middlebox), never an idle timeout;
//! - **unused, closed**: the same, but after the *other* side's FIN: the peer closed a
//!   connection it never used and the reset answers that close (`zeek-fin_retransmission.pcap`:
//!   the client gives up during a 305 ms handshake, sends its FIN, and the server resets).
//!   Info, on the side that closed: no request failed;
//! - **after the peer's close**: idle, after the *other* side's FIN on a connection that
//!   carried exchanges: that side closed first (its keep-alive timeout) and the reset ended
//!   what was left, told in [`peer_close`]; info, on the side that closed.
//!
//! Severity follows the share of requests that failed; client aborts and resets after a close
//! are never above info. One finding sums up every kind seen (the most severe leads, the
//! others follow as "also ..."), so a capture never shows two `connection_reset` lines.
//! A client reset of a request that had waited as long as the load generator's own timeout
//! ([`Observation::RunConfig`]`::timeout_ms`) is netdoctor giving up, not the server resetting:
//! it is reported apart, at info, on the client's side.
//!
//! This file is the classification and the main story; each other story has its own file
//! (`abort`, `after_answer`, `idle`, `injected`, `peer_close`), and so do the evidence of each kind
//! (`evidence`: the packets' notes, the probes the zh texts key on) and the load generator's
//! own timeouts (`own_timeout`).

use std::net::SocketAddr;

mod abort;
mod after_answer;
mod evidence;
mod idle;
mod injected;
mod own_timeout;
mod peer_close;
mod race;
pub use abort::{
    CLIENT_HOST_GONE_EVIDENCE, CLIENT_SETUP_ABORT_EVIDENCE, RESPONSE_STALLED_EVIDENCE, STALLED_NS,
};
pub use after_answer::{AFTER_ANSWER_EVIDENCE, AFTER_ANSWER_LOST_EVIDENCE};
pub use idle::IDLE_RESET_EVIDENCE;
use injected::{forged_note, injected_story};
pub use race::REQUEST_AFTER_CLOSE_EVIDENCE;

use super::{Context, Detector, Interests, MAX_EXAMPLES, Pkt};
use crate::event::{Event, Forged, ResetKind};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::observation::Observation;
use crate::stats::Hist;

#[derive(Clone, Copy, Debug)]
struct Example {
    client: SocketAddr,
    server: SocketAddr,
    before: Option<Pkt>,
    rst: Pkt,
    req: Option<Pkt>,
    /// How the reset differs from its apparent sender's packets ([`ResetKind::Injected`]).
    forged: Option<Forged>,
    /// The connection's silence before the reset.
    silence_ns: i64,
    /// After a complete answer the client had not wholly acknowledged.
    unacked: bool,
    /// After a complete answer: the client's next request was lost, and the time from the
    /// answer's last byte to the reset.
    lost_request: bool,
    answer_gap_ns: Option<i64>,
    /// A request written after the server's FIN: the time from that FIN to it.
    request_after_close_ns: Option<i64>,
    /// [`ResetKind::AfterPeerClose`]: the other side's FIN that closed the connection first.
    peer_fin: Option<Pkt>,
}

#[derive(Default)]
struct KindAgg {
    count: u64,
    by_server: u64,
    /// Injected resets the receiver ignored (the connection went on).
    ignored: u64,
    /// During an answer whose end the capture cannot tell (`ResetContext::answer_unseen`).
    unseen: u64,
    /// Client resets of a request in progress: how long the request had waited.
    client_waited: Option<Hist>,
    examples: Vec<Example>,
}

/// The evidence entry of resets during answers whose end the capture cannot tell (the zh
/// texts key on it).
pub const ANSWER_UNSEEN_EVIDENCE: &str = "answer_end_unseen";

/// The summary, explanation and fix of `n` resets by `who` during an exchange, `unseen` of
/// them during answers whose end the capture cannot tell (not called complete, nor cut).
fn during_exchange(who: &str, n: u64, unseen: u64) -> (String, String, String) {
    let logs = format!(
        "Look at the {who}'s logs at these times (crashes, timeouts, killed workers) and at \
         proxies or load balancers between the client and the server (idle and request \
         timeouts)."
    );
    let failed = "A request was sent and the {who} aborted the connection with a reset before \
                  the response was complete: the request failed. Servers do this when a \
                  worker crashes or is killed, when they close a socket with SO_LINGER 0, or \
                  when a proxy or load balancer in between times out; clients when they give \
                  up waiting."
        .replace("{who}", who);
    let cut = "The capture did not keep bytes that tell where an answer ends (its snap length \
               cut a chunk-size line or the header, or it missed data): whether those answers \
               were complete cannot be told, so they are not taken as complete. A load \
               balancer's idle timeout after a whole answer and a reset that cut the answer \
               look the same here; a capture with a larger snap length (tcpdump -s 0) tells \
               them apart.";
    match unseen {
        0 => (
            format!("The {who} reset {n} connections in the middle of a request/response"),
            failed,
            logs,
        ),
        u if u == n => (
            format!(
                "The {who} reset {n} connections while an answer was arriving or right after \
                 it; the capture cut the answers' framing, so whether they were complete \
                 cannot be told"
            ),
            cut.to_string(),
            format!("Capture again with a larger snap length (tcpdump -s 0) to tell. {logs}"),
        ),
        u => (
            format!(
                "The {who} reset {} connections in the middle of a request/response, and {u} \
                 more during answers whose end the capture cannot tell (it cut their framing)",
                n - u
            ),
            format!("{failed} {cut}"),
            logs,
        ),
    }
}

/// A client reset this close to the load generator's timeout (or later) is its own.
const OWN_TIMEOUT_SLACK: f64 = 0.95;

/// The `connection_reset` detector.
#[derive(Default)]
pub struct ConnectionReset {
    kinds: [KindAgg; 10],
    /// The load generator's request timeout, ms (from [`Observation::RunConfig`]).
    timeout_ms: Option<u64>,
    /// A listening socket of the server process seen during the run
    /// ([`Observation::ServerSockets`]): `(process, pid)`. Refusals then are not "nothing
    /// listens".
    listener: Option<(String, u32)>,
    /// The silences before resets of idle connections, and the requests that hit one.
    idle: idle::IdleResets,
    /// The client resets during responses, and those after a stall.
    aborts: abort::ClientAborts,
    /// The resets right after a complete answer: their gap, the unacknowledged ones.
    after_answer: after_answer::AfterAnswer,
    /// The requests written on connections the server had already closed.
    after_close: race::AfterCloseRequests,
}

/// An idle reset that answered the client's request (sent on a connection already dropped).
/// (`hub::reset_kind` tells it: the server's side answered the request with a reset that
/// acknowledges nothing.)
fn hits_request(e: &Example) -> bool {
    e.rst.from_server && !e.rst.flags.ack() && e.before.is_some_and(|b| !b.from_server)
}

impl Detector for ConnectionReset {
    fn interests(&self) -> Interests {
        Interests::RESET.and(Interests::OBSERVED)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::Reset {
                ends,
                kind,
                before,
                rst,
                req,
                context,
            } => {
                let e = Example {
                    client: ends.client,
                    server: ends.server,
                    before: *before,
                    rst: *rst,
                    req: *req,
                    forged: context.forged,
                    silence_ns: context.idle_ns,
                    unacked: context.unacked,
                    lost_request: context.lost_request,
                    answer_gap_ns: context.answer_gap_ns,
                    request_after_close_ns: context.request_after_close_ns,
                    peer_fin: context
                        .after_fin
                        .filter(|_| *kind == ResetKind::AfterPeerClose),
                };
                if *kind == ResetKind::AfterClose
                    && let Some(g) = context.request_after_close_ns
                {
                    self.after_close.record(g);
                }
                if *kind == ResetKind::Idle {
                    self.idle.record(context.idle_ns, hits_request(&e));
                    // The reuse that lost: its gap counts with the ones that worked.
                    if let Some(g) = context.reuse_gap_ns.filter(|_| hits_request(&e)) {
                        self.idle.reuse.record(g);
                    }
                }
                if *kind == ResetKind::ClientAbort {
                    self.aborts.record(&e);
                }
                if *kind == ResetKind::AfterAnswer {
                    self.after_answer.record(
                        context.answer_gap_ns,
                        context.unacked,
                        context.lost_request,
                    );
                }
                self.kinds[idx(*kind)].unseen += u64::from(context.answer_unseen);
                self.on_reset(*kind, e);
                if let Some(r) = req
                    && !rst.from_server
                    && matches!(kind, ResetKind::DuringExchange | ResetKind::ClientAbort)
                {
                    self.kinds[idx(*kind)]
                        .client_waited
                        .get_or_insert_with(Hist::new)
                        .record_ns(rst.ts_ns - r.ts_ns);
                }
            }
            Event::Observed(Observation::RunConfig { timeout_ms, .. }) if *timeout_ms > 0 => {
                self.timeout_ms = Some(*timeout_ms);
            }
            Event::Observed(Observation::ServerSockets(socks)) => {
                if let Some(l) = socks
                    .iter()
                    .find(|s| s.state == crate::observation::SocketState::Listen)
                {
                    self.listener = Some((l.process.clone(), l.pid));
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        self.idle.gaps = self.idle.reuse.with(cx.reuse_gaps);
        self.report(cx.exchanges, cx.connections, cx.t0_ns, out);
    }
}

fn idx(k: ResetKind) -> usize {
    match k {
        ResetKind::Refused => 0,
        ResetKind::DuringExchange => 1,
        ResetKind::ClientAbort => 2,
        ResetKind::Idle => 3,
        ResetKind::Setup => 4,
        ResetKind::AfterClose => 5,
        ResetKind::UnusedClosed => 6,
        ResetKind::Injected => 7,
        ResetKind::AfterAnswer => 8,
        ResetKind::AfterPeerClose => 9,
    }
}

impl ConnectionReset {
    fn on_reset(&mut self, kind: ResetKind, e: Example) {
        let k = &mut self.kinds[idx(kind)];
        k.count += 1;
        k.by_server += u64::from(e.rst.from_server);
        k.ignored += u64::from(e.forged.is_some_and(|f| f.ignored));
        if k.examples.len() < MAX_EXAMPLES {
            k.examples.push(e);
        }
    }

    fn report(&self, exchanges: u64, connections: u64, t0_ns: i64, out: &mut Vec<Finding>) {
        let mut parts = Vec::new();
        self.report_kinds(exchanges, connections, t0_ns, &mut parts);
        out.extend(merge(parts));
    }

    fn report_kinds(&self, exchanges: u64, connections: u64, t0_ns: i64, out: &mut Vec<Finding>) {
        let mut own_timeout_total = 0;
        let mut own_timeout_examples: Vec<&Example> = Vec::new();
        for kind in [
            ResetKind::Refused,
            ResetKind::DuringExchange,
            ResetKind::ClientAbort,
            ResetKind::AfterAnswer,
            ResetKind::Idle,
            ResetKind::Setup,
            ResetKind::AfterClose,
            ResetKind::UnusedClosed,
            ResetKind::AfterPeerClose,
            ResetKind::Injected,
        ] {
            // Refused SYNs are `server_not_listening`'s, unless the run saw the listener
            // (then they are resets of a port that is open: the arm below).
            if kind == ResetKind::Refused && self.listener.is_none() {
                continue;
            }
            let k = &self.kinds[idx(kind)];
            // Client resets of requests that waited out the load generator's own timeout.
            let own = self.own_timeouts(k);
            if own > 0 {
                own_timeout_total += own;
                own_timeout_examples.extend(k.examples.iter().filter(|e| {
                    !e.rst.from_server
                        && e.req
                            .is_some_and(|r| self.is_own_timeout(e.rst.ts_ns - r.ts_ns))
                }));
            }
            let n = k.count - own;
            if n == 0 {
                continue;
            }
            let by_server = k.by_server * 2 >= n;
            let (who, mut side) = if by_server {
                ("server", Side::Server)
            } else {
                ("client", Side::Client)
            };
            let (fraction, severity, summary, explanation, fix) = match kind {
                ResetKind::Refused if self.listener.is_some() => {
                    // The run saw the listener: contradicts "nothing listens".
                    let (process, pid) = self.listener.clone().unwrap_or_default();
                    let frac = (n as f64 / connections.max(1) as f64).min(1.0);
                    (
                        frac,
                        if frac >= 0.05 {
                            Severity::Critical
                        } else {
                            Severity::Warning
                        },
                        format!(
                            "{n} connection attempts were answered with a reset although {process} (pid {pid}) listens on the port"
                        ),
                        format!(
                            "The client sent a SYN and got a reset back, yet the server's listening \
                             socket was seen during this run ({process}, pid {pid}), so the port is \
                             not closed. Such resets come from a firewall that rejects some \
                             connections, a listener that resets when its queue is full \
                             (tcp_abort_on_overflow), or a SYN that arrived for a connection the \
                             other end had already given up on (loss on the path)."
                        ),
                        "Look for reject rules (`iptables -S`, `nft list ruleset`) and the listen \
                         queue (`nstat -az TcpExtListenOverflows`); if the path loses packets, \
                         fix that first."
                            .to_string(),
                    )
                }
                // `server_not_listening`'s (not listed above); kept for a complete match.
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
                    let (summary, explanation, fix) = during_exchange(who, n, k.unseen.min(n));
                    (
                        frac,
                        if frac >= 0.05 {
                            Severity::Critical
                        } else {
                            Severity::Warning
                        },
                        summary,
                        explanation,
                        fix,
                    )
                }
                ResetKind::ClientAbort => {
                    let (frac, sev, abort_side, summary, explanation, fix) =
                        self.aborts.story(n, exchanges);
                    side = abort_side;
                    (frac, sev, summary, explanation, fix)
                }
                ResetKind::Setup => {
                    let frac = (n as f64 / connections.max(1) as f64).min(1.0);
                    let (explanation, fix) = if by_server {
                        (
                            "The handshake completed, then the server reset the connection before \
                             a single byte was exchanged: the server refused or aborted the \
                             connection at setup, it did not time out an idle one. Linux does \
                             this when the listener's accept queue is full and \
                             net.ipv4.tcp_abort_on_overflow is 1; an application that accepts \
                             and closes at once with SO_LINGER 0 (a connection limit, an access \
                             rule) does it too, and so do firewalls and load balancers that \
                             reject after the handshake. Every request on these connections \
                             fails."
                                .to_string(),
                            "Check the server's listen queue (`ss -ltn`: Recv-Q reaching Send-Q; \
                             `nstat -az TcpExtListenOverflows`): accept faster or raise the \
                             backlog (listen() argument, net.core.somaxconn), and leave \
                             tcp_abort_on_overflow at 0 so a full queue delays instead of \
                             failing. Otherwise look for the server's connection limits or \
                             access rules (its logs), or a middlebox that rejects the \
                             connections."
                                .to_string(),
                        )
                    } else {
                        (
                            "The server answered the client's SYN (or the handshake \
                             completed), then the client reset the connection before sending a \
                             byte: it gave up on the connection at setup itself (a connect-only \
                             check closing with SO_LINGER 0, a connect timeout, or a client \
                             stopped while connecting, as a load generator ending its run: its \
                             socket was gone when the SYN/ACK came). Nothing was refused and no \
                             request failed."
                                .to_string(),
                            "Nothing to change on the server; check the client's connect \
                             timeout and why it abandons fresh connections."
                                .to_string(),
                        )
                    };
                    (
                        frac,
                        if !by_server {
                            Severity::Info
                        } else if frac >= 0.05 {
                            Severity::Critical
                        } else {
                            Severity::Warning
                        },
                        format!(
                            "The {who} reset {n} connections right after the handshake, before \
                             any byte was exchanged ({})",
                            if by_server {
                                "refused or aborted at setup"
                            } else {
                                "it gave up on them at setup: nothing was refused"
                            }
                        ),
                        explanation,
                        fix,
                    )
                }
                ResetKind::AfterClose if self.after_close.failed > 0 && by_server => {
                    self.after_close.story(n, exchanges)
                }
                ResetKind::AfterClose => {
                    let peer = if by_server { "client" } else { "server" };
                    (
                        (n as f64 / connections.max(1) as f64).min(1.0),
                        Severity::Info,
                        format!(
                            "The {who} reset {n} connections it had already closed (FIN sent), \
                             when the {peer} sent more on them"
                        ),
                        format!(
                            "The {who} had closed these connections with a FIN, and the {peer} \
                             did not close its side; when the {peer} later sent something (a \
                             TCP keep-alive probe, or data after the close) the {who}'s socket \
                             was gone and its kernel answered with a reset. That is the normal \
                             end of a connection one side kept open after the other closed it, \
                             not a request that failed."
                        ),
                        format!(
                            "Nothing to fix in the resets. If the {peer} should not keep closed \
                             connections open, make it close its side when it reads the \
                             {who}'s FIN (end of stream)."
                        ),
                    )
                }
                ResetKind::UnusedClosed => {
                    // `who` sent the resets; the side that closed is the other one.
                    let closer = if by_server { "client" } else { "server" };
                    (
                        (n as f64 / connections.max(1) as f64).min(1.0),
                        Severity::Info,
                        format!(
                            "The {closer} closed {n} connections before any byte was \
                             exchanged, and the {who} answered the close with a reset"
                        ),
                        format!(
                            "The handshake completed, nothing was sent either way, and the \
                             {closer} closed the connection (FIN): a connection it no longer \
                             needed (a losing Happy Eyeballs attempt, a connect timeout that \
                             fired during a slow handshake, a pre-opened connection, a health \
                             check). The {who}'s reset answers that close; no request failed."
                        ),
                        format!(
                            "Nothing to fix in the resets. If the {closer} gave up because the \
                             handshake was slow, the handshake time is the problem to look at."
                        ),
                    )
                }
                ResetKind::AfterPeerClose => peer_close::story(who, n, k, connections),
                ResetKind::Injected => injected_story(who, n, k, connections),
                ResetKind::AfterAnswer => {
                    self.after_answer
                        .story(who, side, n, connections, exchanges)
                }
                ResetKind::Idle => {
                    let (frac, sev, idle_side, summary, explanation, fix) =
                        self.idle.story(who, side, n, exchanges, connections);
                    side = idle_side;
                    (frac, sev, summary, explanation, fix)
                }
            };
            // An unused connection's reset is told on the side that closed it.
            let side = match (kind, side) {
                (ResetKind::UnusedClosed | ResetKind::AfterPeerClose, Side::Server) => Side::Client,
                (ResetKind::UnusedClosed | ResetKind::AfterPeerClose, _) => Side::Server,
                (ResetKind::Injected, _) => Side::Network,
                _ => side,
            };
            let mut f = Finding::new(FindingId::ConnectionReset, severity, side, summary);
            // "Probably": a route change just before the reset would look the same.
            f.confidence = if kind == ResetKind::Injected {
                0.8
            } else if kind == ResetKind::ClientAbort && side == Side::Network {
                // A stalled response: whose stall (server or path) the packets do not tell.
                0.6
            } else {
                0.9
            };
            f.impact.affected_fraction = Some(fraction);
            f.explanation = explanation;
            f.fix = fix;
            f.evidence = self.evidence(kind, k, who, side, n, own, t0_ns);
            out.push(f);
        }
        if own_timeout_total > 0 {
            out.push(self.own_timeout_finding(
                own_timeout_total,
                exchanges,
                &own_timeout_examples,
                t0_ns,
            ));
        }
    }
}

/// One finding out of the findings for each kind: the most severe leads (its side, story and
/// fix), the others are added as "also ..." with their evidence.
fn merge(mut parts: Vec<Finding>) -> Option<Finding> {
    // Stable: among equals, the order of the kinds.
    parts.sort_by_key(|f| std::cmp::Reverse(f.severity));
    let mut it = parts.into_iter();
    let mut lead = it.next()?;
    for f in it {
        let mut s = f.summary;
        if let Some(first) = s.get(..1) {
            let lower = first.to_lowercase();
            s.replace_range(..1, &lower);
        }
        lead.summary.push_str(&format!("; also, {s}"));
        lead.explanation
            .push_str(&format!(" Also: {}", f.explanation));
        if !lead.fix.contains(&f.fix) {
            lead.fix.push_str(&format!(" {}", f.fix));
        }
        // The measured idle timer (or gap after the answer, a client abort's numbers) keys
        // the zh texts' story: only when that story leads.
        lead.evidence.extend(f.evidence.into_iter().filter(|e| {
            !matches!(e, Evidence::Probe { probe, .. }
                if probe == IDLE_RESET_EVIDENCE || probe == AFTER_ANSWER_EVIDENCE
                    || probe == AFTER_ANSWER_LOST_EVIDENCE || probe == ANSWER_UNSEEN_EVIDENCE
                    || probe == RESPONSE_STALLED_EVIDENCE || probe == CLIENT_HOST_GONE_EVIDENCE
                    || probe == CLIENT_SETUP_ABORT_EVIDENCE
                    || probe == REQUEST_AFTER_CLOSE_EVIDENCE
                    || probe == peer_close::PEER_CLOSED_FIRST_EVIDENCE)
        }));
    }
    Some(lead)
}

#[cfg(test)]
mod tests;

//! `server_not_listening`: connection attempts were refused: nothing listens on the target
//! port. Seen by the SYN and connect() probes ([`Observation::ConnectRefused`]) or in the
//! packets: a SYN answered by a reset instead of a SYN/ACK ([`ResetKind::Refused`]).
//!
//! A capture's refusals are one finding for all the addresses they hit (a port scan hits many),
//! critical when they are 5 % of the connections or more; those to an address a probe also
//! found refused join that probe's finding as its packet evidence.
//!
//! **Abandoned handshakes are not a missing listener.** In the packets a refusal is a
//! connection whose handshake never completed and that ended in a reset. On a lossy path the
//! same shape comes from handshakes the client gave up on (its SYNs or the SYN/ACKs lost; a
//! late SYN/ACK then meets the client's reset). When other connections to the same address
//! completed their handshake in the capture, or the resets came from the client, something
//! does listen there: the finding keeps its id but says what was seen — N attempts ended
//! before their handshake completed, while M others to the port completed theirs — and is a
//! warning, not a dead server. [`crate::relate`] ties it to the path loss that explains it.
//!
//! **A port scan is not a missing listener.** One client address that sends SYNs to
//! [`SCAN_PORTS`] or more ports of one server address, most of which never complete a
//! handshake, is probing which ports are open (ppa-synscan: 1,994 ports, 5 refused). Closed
//! ports answering with a reset is what the scan finds, not a service that is down: the
//! finding says so, at `info`, on the client's side (probe evidence [`SCAN_EVIDENCE`]).

use std::net::{IpAddr, SocketAddr};

use super::{Context, Detector, Interests, MAX_EXAMPLES};
use crate::event::{Event, Pkt, ResetKind};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::observation::Observation;

/// A refused SYN seen in the capture.
#[derive(Clone, Debug)]
struct Refusal {
    addr: String,
    client: String,
    syn: Option<Pkt>,
    rst: Pkt,
}

/// The `server_not_listening` detector.
#[derive(Default)]
pub struct ServerNotListening {
    /// (addr, SYNs sent, SYNs refused), the first of each address.
    refused: Vec<(String, u32, u32)>,
    /// Refused SYNs in the capture, and per address (first few addresses) how many.
    captured: u64,
    by_addr: Vec<(String, u64)>,
    examples: Vec<Refusal>,
    /// The run saw the server's listening socket: refused SYNs in the packets do not mean
    /// that nothing listens (`connection_reset` says what they are then).
    listener_seen: bool,
    /// Connections whose handshake completed, per server address (first few addresses).
    completed: Vec<(String, u64)>,
    /// Refusals in the capture whose reset came from the client, not from the server.
    client_resets: u64,
    /// Connections that began with a captured SYN, per (client address, server address)
    /// (first few pairs): to tell a port scan apart.
    pairs: Vec<Pair>,
}

/// Connections from one client address to one server address.
#[derive(Debug)]
struct Pair {
    client: IpAddr,
    server: IpAddr,
    conns: u64,
    completed: u64,
    /// The server ports seen (a bit per port, 8 KB) and how many.
    ports: Box<[u64; 1024]>,
    distinct: u64,
}

/// Distinct ports of one server address that one client sends SYNs to, most never
/// completing, for its connections to be a port scan.
pub const SCAN_PORTS: usize = 20;

/// The name of the probe evidence a port-scan finding leads with (the Chinese catalogue picks
/// its sentence by it).
pub const SCAN_EVIDENCE: &str = "scan";

/// Addresses named in a capture's finding.
const MAX_ADDRS: usize = 3;

impl Detector for ServerNotListening {
    fn interests(&self) -> Interests {
        Interests::OBSERVED
            .and(Interests::RESET)
            .and(Interests::CONN_DONE)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::Observed(Observation::ConnectRefused {
                addr,
                syn_sent,
                syn_refused,
            }) if !self.refused.iter().any(|r| &r.0 == addr) => {
                self.refused.push((addr.clone(), *syn_sent, *syn_refused));
            }
            Event::Observed(Observation::ServerSockets(socks)) => {
                self.listener_seen |= socks
                    .iter()
                    .any(|s| s.state == crate::observation::SocketState::Listen);
            }
            Event::ConnDone(d) if d.syn.first_syn.is_some() || d.syn.done.is_some() => {
                if d.syn.first_syn.is_some() {
                    self.count_pair(d.ends.client, d.ends.server, d.syn.done.is_some());
                }
                if d.syn.done.is_none() {
                    return;
                }
                let addr = d.ends.server.to_string();
                if let Some(a) = self.completed.iter_mut().find(|a| a.0 == addr) {
                    a.1 += 1;
                } else if self.completed.len() < 64 {
                    self.completed.push((addr, 1));
                }
            }
            Event::Reset {
                ends,
                kind: ResetKind::Refused,
                before,
                rst,
                ..
            } => {
                self.captured += 1;
                self.client_resets += u64::from(!rst.from_server);
                let addr = ends.server.to_string();
                if let Some(a) = self.by_addr.iter_mut().find(|a| a.0 == addr) {
                    a.1 += 1;
                } else if self.by_addr.len() < 64 {
                    self.by_addr.push((addr.clone(), 1));
                }
                if self.examples.len() < MAX_EXAMPLES {
                    self.examples.push(Refusal {
                        addr,
                        client: ends.client.to_string(),
                        syn: *before,
                        rst: *rst,
                    });
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        if self.listener_seen {
            self.captured = 0;
            self.by_addr.clear();
            self.examples.clear();
        }
        let evidence = |e: &Refusal| Evidence::Packets {
            connection: format!("{} → {}", e.client, e.addr),
            packets: e
                .syn
                .into_iter()
                .chain([e.rst])
                .map(|p| p.to_ref(cx.t0_ns))
                .collect(),
            note: "SYN answered by a reset instead of a SYN/ACK".to_string(),
        };
        let mut rest: Vec<&Refusal> = self.examples.iter().collect();
        let mut rest_addrs: Vec<&(String, u64)> = self.by_addr.iter().collect();
        for (addr, sent, refused) in &self.refused {
            let mut f = finding(addr, *sent, *refused);
            f.evidence
                .extend(rest.iter().filter(|e| &e.addr == addr).map(|e| evidence(e)));
            rest.retain(|e| &e.addr != addr);
            rest_addrs.retain(|a| &a.0 != addr);
            out.push(f);
        }
        let probed: u64 = self
            .by_addr
            .iter()
            .filter(|a| self.refused.iter().any(|r| r.0 == a.0))
            .map(|a| a.1)
            .sum();
        let n = self.captured - probed;
        if n == 0 {
            return;
        }
        let frac = (n as f64 / cx.connections.max(1) as f64).min(1.0);
        let mut addrs: Vec<&str> = rest_addrs.iter().map(|a| a.0.as_str()).collect();
        let more = addrs.len().saturating_sub(MAX_ADDRS);
        addrs.truncate(MAX_ADDRS);
        let named = if more > 0 {
            format!("{} and {more} more", addrs.join(", "))
        } else {
            addrs.join(", ")
        };
        // Handshakes that completed to the addresses of these refusals.
        let completed: u64 = self
            .completed
            .iter()
            .filter(|c| rest_addrs.iter().any(|a| a.0 == c.0))
            .map(|c| c.1)
            .sum();
        let mut f = finding(&named, 0, 0);
        f.severity = if frac >= 0.05 {
            Severity::Critical
        } else {
            Severity::Warning
        };
        f.summary = format!(
            "Nothing listens on {named}: {n} connection attempt{} answered with a reset instead \
             of a handshake",
            if n == 1 { " was" } else { "s were" }
        );
        f.confidence = 0.95;
        f.impact.affected_fraction = Some(frac);
        f.fix = "Start the server or point the client at the port it listens on (`ss -ltnp` on \
                 the server host); check the firewall for rules that reject with a reset."
            .to_string();
        f.evidence = rest.into_iter().map(evidence).collect();
        if let Some(p) = self.scan(&rest_addrs) {
            scanned(&mut f, p, n);
        } else if completed > 0 || self.client_resets > 0 {
            abandoned(&mut f, &named, n, completed, self.client_resets);
        }
        out.push(f);
    }
}

impl ServerNotListening {
    fn count_pair(&mut self, client: SocketAddr, server: SocketAddr, done: bool) {
        let (c, s) = (client.ip(), server.ip());
        let i = match self
            .pairs
            .iter()
            .position(|p| p.client == c && p.server == s)
        {
            Some(i) => i,
            None if self.pairs.len() < 64 => {
                self.pairs.push(Pair {
                    client: c,
                    server: s,
                    conns: 0,
                    completed: 0,
                    ports: Box::new([0; 1024]),
                    distinct: 0,
                });
                self.pairs.len() - 1
            }
            None => return,
        };
        let p = &mut self.pairs[i];
        p.conns += 1;
        p.completed += u64::from(done);
        let (w, b) = (usize::from(server.port() / 64), server.port() % 64);
        if p.ports[w] & (1 << b) == 0 {
            p.ports[w] |= 1 << b;
            p.distinct += 1;
        }
    }

    /// The scan that the refusals to `addrs` all belong to: a client that sent SYNs to
    /// [`SCAN_PORTS`] or more ports of their server address, fewer than half completing.
    fn scan(&self, addrs: &[&(String, u64)]) -> Option<&Pair> {
        let scans: Vec<&Pair> = self
            .pairs
            .iter()
            .filter(|p| p.distinct >= SCAN_PORTS as u64 && p.completed * 2 < p.conns)
            .collect();
        let first = scans.first()?;
        let scanned = |a: &str| {
            a.parse::<SocketAddr>()
                .is_ok_and(|sa| scans.iter().any(|p| p.server == sa.ip()))
        };
        (!addrs.is_empty() && addrs.iter().all(|a| scanned(&a.0))).then_some(*first)
    }
}

/// Rewrites a capture's refusals as what they are when they answer a port scan: the closed
/// ports a scan of `p.conns` ports found.
fn scanned(f: &mut Finding, p: &Pair, n: u64) {
    f.severity = Severity::Info;
    f.side = Side::Client;
    f.confidence = 0.9;
    f.summary = format!(
        "A port scan: {} sent SYNs to {} ports of {}; {n} were refused (closed ports) and {} \
         completed a handshake. Refused ports are what a scan finds, not a server that is down",
        p.client, p.distinct, p.server, p.completed
    );
    f.explanation = format!(
        "One client address opened {} connections to {} different ports of one server \
         address and fewer than half completed a handshake: that is a port scan probing which \
         ports are open, not an application trying to reach its server. A closed port answers \
         a SYN with a reset; a filtered one does not answer at all.",
        p.conns, p.distinct
    );
    f.fix = "Nothing to fix on the server for these. If the scan was not expected, look at its \
             source and at the firewall rules for the ports it found open."
        .to_string();
    f.evidence.insert(
        0,
        Evidence::Probe {
            probe: SCAN_EVIDENCE.into(),
            note: format!(
                "{} sent SYNs to {} ports of {}: {n} refused, {} completed",
                p.client, p.distinct, p.server, p.completed
            ),
        },
    );
}

/// The name of the probe evidence an abandoned-handshakes finding leads with (the Chinese
/// catalogue picks its sentence by it).
pub const ABANDONED_EVIDENCE: &str = "handshakes";

/// Rewrites a capture's refusals as what they are when something does listen: `n` attempts
/// to `named` ended in a reset before their handshake completed, while `completed` others
/// completed theirs (`client_resets` of the resets were the client's own).
fn abandoned(f: &mut Finding, named: &str, n: u64, completed: u64, client_resets: u64) {
    let s = |k: u64| if k == 1 { "" } else { "s" };
    let seen = match (completed, client_resets) {
        (0, c) => {
            format!("the client sent {c} of the resets itself, so the server's SYN/ACK did arrive")
        }
        (k, 0) => format!(
            "{k} other connection{} to the same address completed {}: something listens there",
            s(k),
            if k == 1 { "its handshake" } else { "theirs" }
        ),
        (k, c) => format!(
            "{k} other connection{} to the same address completed {} and the client sent {c} of \
             the resets itself: something listens there",
            s(k),
            if k == 1 { "its handshake" } else { "theirs" }
        ),
    };
    f.severity = f.severity.min(Severity::Warning);
    f.confidence = 0.8;
    f.summary = format!(
        "{n} handshake{} to {named} abandoned before completing (ended in a reset), while {seen}",
        s(n)
    );
    f.explanation = format!(
        "{n} connection attempt{} to {named} never completed the handshake and ended in a \
         reset. That is what a port with no listener looks like in the packets, but {seen}. \
         Handshakes given up on look the same: SYNs or SYN/ACKs lost on the way (the client \
         repeats its SYN and its connect times out; a late SYN/ACK then meets the client's \
         reset), or a server that drops SYNs while its listen queue is full.",
        s(n)
    );
    f.fix = "Look for loss on the path (packet_loss_retransmission, route_problem, `netdoctor \
             trace`) and at the listen queue (ListenOverflows, listen_queue_overflow); a \
             listener that exists needs no restart."
        .to_string();
    f.evidence.insert(
        0,
        Evidence::Probe {
            probe: ABANDONED_EVIDENCE.into(),
            note: format!(
                "{n} attempt{} ended in a reset before the handshake completed; {completed} \
                 handshake{} to the same address completed; {client_resets} of the resets sent \
                 by the client",
                s(n),
                s(completed)
            ),
        },
    );
}

/// The finding for refused connections to `addr`: `syn_refused` of `syn_sent` SYNs were
/// answered with RST (0 of 0: only connect() was tried).
pub fn finding(addr: &str, syn_sent: u32, syn_refused: u32) -> Finding {
    let mut f = Finding::new(
        FindingId::ServerNotListening,
        Severity::Critical,
        Side::Server,
        format!("Nothing listens on {addr}: connections are refused"),
    );
    f.confidence = if syn_refused > 0 { 0.99 } else { 0.9 };
    f.impact.affected_fraction = Some(1.0);
    f.explanation = format!(
        "The host at {addr} answered connection attempts with a TCP reset, which is what a kernel \
         does when no socket listens on that port. Requests do not get slow here, they fail at once. \
         Either the server process is not running, it listens on another port or address (e.g. \
         127.0.0.1 only, or IPv6 only), or a firewall rejects the port with a reset."
    );
    f.fix = "Start the server, or point netdoctor at the port it really listens on \
             (`ss -ltnp` on the server host lists listening sockets and their processes)."
        .into();
    let note = if syn_sent > 0 {
        format!(
            "{syn_refused} of {syn_sent} SYNs answered with RST; the HTTP request's connect() was refused"
        )
    } else {
        "connect() was refused".to_string()
    };
    f.evidence.push(Evidence::Probe {
        probe: "syn".into(),
        note,
    });
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testkit::{cx, run};

    fn refused_obs(addr: &str, sent: u32, n: u32) -> Observation {
        refused(addr, sent, n)
    }

    fn refused(addr: &str, sent: u32, refused: u32) -> Observation {
        Observation::ConnectRefused {
            addr: addr.into(),
            syn_sent: sent,
            syn_refused: refused,
        }
    }

    #[test]
    fn a_refused_connect_is_critical_and_names_the_address() {
        let obs = refused("127.0.0.1:1", 5, 5);
        let again = refused("127.0.0.1:1", 1, 1);
        let v =
            run::<ServerNotListening>(&[Event::Observed(&obs), Event::Observed(&again)], &cx(0));
        assert_eq!(v.len(), 1, "one finding per address");
        assert_eq!(v[0].id, FindingId::ServerNotListening);
        assert_eq!(v[0].severity, Severity::Critical);
        assert!(v[0].summary.contains("127.0.0.1:1"));
        assert!(
            matches!(&v[0].evidence[0], Evidence::Probe { note, .. } if note.contains("5 of 5"))
        );
    }

    #[test]
    fn refused_syns_in_a_capture_are_not_listening_once() {
        use crate::decode::TcpFlags as F;
        use crate::detect::testkit::{ends, pkt};
        let refused = |k: u64| Event::Reset {
            ends: ends(),
            kind: ResetKind::Refused,
            before: Some(pkt(k * 2, k as i64, false, F::SYN, 0)),
            rst: pkt(k * 2 + 1, k as i64 + 1, true, F::RST | F::ACK, 0),
            req: None,
            context: Default::default(),
        };
        let v = run::<ServerNotListening>(&[refused(1), refused(2)], &cx(0));
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].severity, v[0].side),
            (Severity::Critical, Side::Server)
        );
        assert!(
            v[0].summary
                .starts_with("Nothing listens on 10.0.0.2:80: 2 connection attempts were"),
            "{}",
            v[0].summary
        );
        assert_eq!(v[0].evidence.len(), 2);
        // The probe saw it too: one finding, the packets as its evidence.
        let obs = refused_obs("10.0.0.2:80", 3, 3);
        let v = run::<ServerNotListening>(&[refused(1), Event::Observed(&obs)], &cx(0));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].evidence.len(), 2);
        // A few refusals among many connections (a port scan): a warning.
        let mut many = cx(0);
        many.connections = 1000;
        let v = run::<ServerNotListening>(&[refused(1)], &many);
        assert_eq!(v[0].severity, Severity::Warning);
    }

    /// Refusals among handshakes that completed to the same address: abandoned handshakes,
    /// a warning that says what was seen, not "nothing listens".
    #[test]
    fn refusals_beside_completed_handshakes_are_abandoned_handshakes() {
        use crate::decode::TcpFlags as F;
        use crate::detect::testkit::{ends, pkt};
        use crate::event::ConnDone;
        let refused = |k: u64, from_server: bool| Event::Reset {
            ends: ends(),
            kind: ResetKind::Refused,
            before: Some(pkt(k * 2, k as i64, false, F::SYN, 0)),
            rst: pkt(k * 2 + 1, k as i64 + 1, from_server, F::RST, 0),
            req: None,
            context: Default::default(),
        };
        let mut ok = ConnDone {
            ends: ends(),
            syn: Default::default(),
            first_req: None,
            exchanges: 1,
            first_close: None,
            idle_before_close_ns: None,
            asked: Default::default(),
            tls: Default::default(),
            crossed_fin: false,
        };
        ok.syn.done = Some(pkt(100, 100, false, F::ACK, 0));
        let mut c = cx(0);
        c.connections = 40;
        let v = run::<ServerNotListening>(
            &[
                refused(1, true),
                Event::ConnDone(&ok),
                Event::ConnDone(&ok),
                refused(2, false),
            ],
            &c,
        );
        assert_eq!(v.len(), 1);
        let f = &v[0];
        assert_eq!(f.id, FindingId::ServerNotListening);
        assert_eq!(f.severity, Severity::Warning);
        assert!(!f.summary.contains("Nothing listens"), "{}", f.summary);
        assert!(
            f.summary
                .starts_with("2 handshakes to 10.0.0.2:80 abandoned")
                && f.summary
                    .contains("2 other connections to the same address completed")
                && f.summary.contains("the client sent 1 of the resets"),
            "{}",
            f.summary
        );
        assert!(
            matches!(&f.evidence[0], Evidence::Probe { probe, .. } if probe == ABANDONED_EVIDENCE)
        );
        // Only the client's reset, no completed handshake: still not "nothing listens".
        let v = run::<ServerNotListening>(&[refused(1, false)], &c);
        assert!(
            v[0].summary.contains("the client sent 1 of the resets"),
            "{}",
            v[0].summary
        );
        // A server's reset and no handshake completed: nothing listens.
        let v = run::<ServerNotListening>(&[refused(1, true)], &c);
        assert!(
            v[0].summary.starts_with("Nothing listens"),
            "{}",
            v[0].summary
        );
    }

    #[test]
    fn nothing_refused_nothing_found() {
        let other = Observation::Counters(vec![]);
        assert!(run::<ServerNotListening>(&[Event::Observed(&other)], &cx(3)).is_empty());
    }

    /// One client probing many ports of one server, few completing: the refusals are a port
    /// scan's closed ports (info, the client's side). The same refusals from a client that
    /// reaches many ports of the server (they complete) stay "nothing listens".
    #[test]
    fn refusals_in_a_port_scan_are_the_scan_not_a_dead_server() {
        use crate::decode::TcpFlags as F;
        use crate::detect::testkit::{ends, pkt};
        use crate::event::ConnDone;
        let e = ends();
        let refused = Event::Reset {
            ends: e,
            kind: ResetKind::Refused,
            before: Some(pkt(1, 1, false, F::SYN, 0)),
            rst: pkt(2, 2, true, F::RST | F::ACK, 0),
            req: None,
            context: Default::default(),
        };
        let conns = |completed: bool| -> Vec<ConnDone> {
            (0..30u16)
                .map(|i| {
                    let mut c = ConnDone {
                        ends: e,
                        syn: Default::default(),
                        first_req: None,
                        exchanges: 0,
                        first_close: None,
                        idle_before_close_ns: None,
                        asked: Default::default(),
                        tls: Default::default(),
                        crossed_fin: false,
                    };
                    c.ends.server.set_port(1000 + i);
                    c.syn.first_syn = Some(pkt(10 + u64::from(i), 10, false, F::SYN, 0));
                    if completed {
                        c.syn.done = Some(pkt(100 + u64::from(i), 11, false, F::ACK, 0));
                    }
                    c
                })
                .collect()
        };
        let mut c = cx(0);
        c.connections = 31;
        let scan = conns(false);
        let mut ev: Vec<Event<'_>> = scan.iter().map(Event::ConnDone).collect();
        ev.push(refused);
        let v = run::<ServerNotListening>(&ev, &c);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].severity, v[0].side), (Severity::Info, Side::Client));
        assert!(
            v[0].summary
                .starts_with("A port scan: 10.0.0.1 sent SYNs to 30 ports of 10.0.0.2; 1 were"),
            "{}",
            v[0].summary
        );
        assert!(
            matches!(&v[0].evidence[0], Evidence::Probe { probe, .. } if probe == SCAN_EVIDENCE)
        );
        // A client that uses 30 services of the server (they complete): not a scan.
        let used = conns(true);
        let mut ev: Vec<Event<'_>> = used.iter().map(Event::ConnDone).collect();
        ev.push(refused);
        let v = run::<ServerNotListening>(&ev, &c);
        assert_eq!(v.len(), 1);
        assert_ne!(v[0].severity, Severity::Info, "{v:?}");
        assert!(!v[0].summary.contains("scan"), "{}", v[0].summary);
    }
}

//! `server_not_listening`: connection attempts were refused: nothing listens on the target
//! port. Seen by the SYN and connect() probes ([`Observation::ConnectRefused`]) or in the
//! packets: a SYN answered by a reset instead of a SYN/ACK ([`ResetKind::Refused`]).
//!
//! A capture's refusals are one finding for all the addresses they hit (a port scan hits many),
//! critical when they are 5 % of the connections or more; those to an address a probe also
//! found refused join that probe's finding as its packet evidence.

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
}

/// Addresses named in a capture's finding.
const MAX_ADDRS: usize = 3;

impl Detector for ServerNotListening {
    fn interests(&self) -> Interests {
        Interests::OBSERVED.and(Interests::RESET)
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
            Event::Reset {
                ends,
                kind: ResetKind::Refused,
                before,
                rst,
                ..
            } => {
                self.captured += 1;
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
        out.push(f);
    }
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

    #[test]
    fn nothing_refused_nothing_found() {
        let other = Observation::Counters(vec![]);
        assert!(run::<ServerNotListening>(&[Event::Observed(&other)], &cx(3)).is_empty());
    }
}

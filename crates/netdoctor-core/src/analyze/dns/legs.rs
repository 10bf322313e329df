//! The TCP leg of a lookup answered truncated over UDP (TC): the client asks again over TCP
//! port 53. The leg is the TCP query of the same lookup (same client, id and question), or,
//! when no query went (the connection never opened), the client's TCP connection to the
//! server that began within [`WAIT_NS`] of the truncated answer.
//!
//! A leg that fails fails the lookup (glibc does not fall back to the truncated answer):
//! `dns_server_error` with probe `dns_truncated`, as `netdoctor dns` tells it. A reset to the
//! SYN means nothing listens on TCP 53 there (side server); SYNs left unanswered, a firewall
//! dropping TCP 53 on the way (side network); a query left unanswered on an open connection,
//! the server (side server).

use std::net::IpAddr;

use super::tcp::Conn;
use super::{Lookup, MAX_PACKETS, Msg, WAIT_NS};
use crate::finding::{Evidence, Finding, FindingId, PacketRef, Severity, Side};

/// How a truncated lookup's TCP leg ended.
#[derive(Clone, Copy)]
pub(super) enum End {
    /// Not a truncated lookup (or its answer came over TCP already).
    None,
    /// No TCP connection to the server followed the truncated answer in the capture.
    Unseen,
    /// Answered over TCP (the answer; the connection's SYN when the query paid its handshake).
    Answered(Msg, Option<Msg>),
    /// The server reset the SYN.
    Refused(Msg, Msg),
    /// SYNs (how many) and no SYN/ACK, with [`WAIT_NS`] of capture after the first.
    NoSynAck(Msg, u32),
    /// The query went and got no answer (the server closed, or [`WAIT_NS`] passed).
    Unanswered(Msg),
    /// Still in progress when the capture ended.
    Cut,
}

impl End {
    fn failed(self) -> bool {
        matches!(
            self,
            End::Refused(..) | End::NoSynAck(..) | End::Unanswered(_)
        )
    }
}

/// How each lookup's TCP leg ended (by index), `end`: the capture's last packet.
pub(super) fn ends(lookups: &[Lookup], conns: &[Conn], end: i64) -> Vec<End> {
    lookups
        .iter()
        .map(|l| {
            let Some((a, _)) = l.answer.filter(|_| l.truncated && l.opened.is_none()) else {
                return End::None;
            };
            if let Some(g) = l.leg {
                let c = &conns[g.conn];
                return match g.answer {
                    Some((ans, _)) => End::Answered(ans, c.syn),
                    None if c.rst.is_some() || c.fin.is_some() => End::Unanswered(g.query),
                    None if end - g.query.ts >= WAIT_NS => End::Unanswered(g.query),
                    None => End::Cut,
                };
            }
            // No query over TCP: the connection the client opened after the answer.
            let c = conns.iter().find(|c| {
                c.client.ip() == l.key.client
                    && c.server.ip() == a.server.ip()
                    && c.syn.is_some_and(|s| s.ts >= a.ts && s.ts - a.ts < WAIT_NS)
            });
            match c {
                None => End::Unseen,
                Some(c) => {
                    let syn = c.syn.expect("found by its SYN");
                    match c.rst {
                        Some(r) if !c.synack => End::Refused(syn, r),
                        _ if !c.synack && end - syn.ts >= WAIT_NS => End::NoSynAck(syn, c.syns),
                        Some(r) => End::Unanswered(r),
                        None if end - syn.ts >= WAIT_NS => End::Unanswered(syn),
                        None => End::Cut,
                    }
                }
            }
        })
        .collect()
}

/// Whether lookup `i` failed on its TCP leg (told here, not as a truncated answer).
pub(super) fn failed(legs: &[End], i: usize) -> bool {
    legs.get(i).is_some_and(|e| e.failed())
}

/// The note of a truncated lookup's leg, and the lookup's whole time (ms) when answered.
pub(super) fn note(l: &Lookup, e: End) -> (String, Option<f64>) {
    let what = format!("{} {} answered truncated (TC)", l.key.qtype, l.key.name);
    match e {
        End::Answered(a, syn) => {
            let total = (a.ts - l.start()) as f64 / 1e6;
            let shake = syn.map_or(String::new(), |s| {
                format!(
                    ", {:.1} ms of it from the TCP SYN",
                    (a.ts - s.ts) as f64 / 1e6
                )
            });
            (
                format!("{what}, answered over TCP {total:.1} ms after the first query{shake}"),
                Some(total),
            )
        }
        End::Cut => (
            format!("{what}; the capture ended before its TCP retry was answered"),
            None,
        ),
        End::Unseen => (
            format!("{what}; no TCP retry to the server in the capture"),
            None,
        ),
        _ => (what, None),
    }
}

/// The lookups whose TCP leg failed, per server: `dns_server_error`.
pub(super) fn tell(
    lookups: &[Lookup],
    legs: &[End],
    out: &mut Vec<Finding>,
    pref: &dyn Fn(&Msg, &str, String) -> PacketRef,
    q_desc: &dyn Fn(&Lookup) -> String,
) {
    let mut by: Vec<(IpAddr, Vec<(&Lookup, End)>)> = Vec::new();
    for (l, &e) in lookups.iter().zip(legs).filter(|(_, e)| e.failed()) {
        let Some((a, _)) = l.answer else { continue };
        let ip = a.server.ip();
        match by.iter_mut().find(|(s, _)| *s == ip) {
            Some((_, v)) => v.push((l, e)),
            None => by.push((ip, vec![(l, e)])),
        }
    }
    for (server, v) in &by {
        let (l0, e0) = v[0];
        let (how, side) = match e0 {
            End::Refused(..) => (
                "the server reset the TCP connection: nothing listens on TCP port 53 there",
                Side::Server,
            ),
            End::NoSynAck(_, n) if n > 1 => (
                "the TCP connection was never answered (SYN repeated, no SYN/ACK): TCP port \
                 53 is dropped on the way",
                Side::Network,
            ),
            End::NoSynAck(..) => (
                "the TCP connection was never answered (no SYN/ACK): TCP port 53 is dropped \
                 on the way",
                Side::Network,
            ),
            _ => (
                "the query over TCP got no answer from the server",
                Side::Server,
            ),
        };
        let mut f = Finding::new(
            FindingId::DnsServerError,
            Severity::Critical,
            side,
            format!(
                "nameserver {server} truncates its answer for {} over UDP and TCP fails: {how}",
                l0.key.name
            ),
        );
        f.impact.affected_fraction = Some(1.0);
        f.explanation = format!(
            "The answer did not fit the UDP message (the TC bit is set), so the resolver asked \
             again over TCP port 53, and TCP to this server failed: the full answer never \
             arrived and {} lookup(s) failed. Large answers (many records, long CNAME chains, \
             DNSSEC) are lost this way, usually because a firewall allows only UDP 53 or the \
             server does not listen on TCP.",
            v.len()
        );
        f.fix = format!(
            "Allow TCP port 53 to {server} (firewall, security group) and make sure it listens \
             on TCP; or make the answer fit (fewer records, `options edns0` in resolv.conf for \
             a larger EDNS buffer). Check with `dig +tcp @{server} {}`.",
            l0.key.name
        );
        f.evidence.push(Evidence::Probe {
            probe: "dns_truncated".to_string(),
            note: format!(
                "{} answer(s) from {server} had the TC bit and their TCP retry failed: {}",
                v.len(),
                super::questions(v)
            ),
        });
        for &(l, e) in v.iter().take(MAX_PACKETS) {
            let mut packets = vec![(pref)(&l.queries[0], "C→S", (q_desc)(l))];
            if let Some((a, rc)) = l.answer {
                packets.push((pref)(
                    &a,
                    "S→C",
                    format!("answer rcode {rc} TC id {:#06x}", l.key.id),
                ));
            }
            let note = match e {
                End::Refused(syn, rst) => {
                    packets.push((pref)(&syn, "C→S", "SYN to port 53".to_string()));
                    packets.push((pref)(&rst, "S→C", "RST".to_string()));
                    format!(
                        "{} {}: TCP SYN reset after {:.1} ms",
                        l.key.qtype,
                        l.key.name,
                        (rst.ts - syn.ts) as f64 / 1e6
                    )
                }
                End::NoSynAck(syn, n) => {
                    packets.push((pref)(&syn, "C→S", "SYN to port 53".to_string()));
                    format!("{} {}: {n} TCP SYN(s), no SYN/ACK", l.key.qtype, l.key.name)
                }
                End::Unanswered(m) => {
                    packets.push((pref)(&m, "C→S", "over TCP".to_string()));
                    format!("{} {}: no answer over TCP", l.key.qtype, l.key.name)
                }
                _ => String::new(),
            };
            f.evidence.push(Evidence::Packets {
                connection: format!("{} → {}", l.client, l.queries[0].server),
                packets,
                note,
            });
        }
        out.push(f);
    }
}

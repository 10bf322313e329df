//! DNS in a capture: UDP port-53 queries and answers paired into lookups, told with the
//! catalog's DNS findings the way `netdoctor dns` tells them (`dns_server_unreachable`,
//! `dns_server_error`, `dns_name_not_found`, `dns_slow`, `reverse_dns_timeout`).
//!
//! Off the TCP path: only frames that are no TCP segment reach [`DnsLog::push`] (the
//! analyzer's `Ok(None)` branch; `analyze -j N`'s reader routes those itself and never hands
//! them to a worker, so the log sees them in the order a single analyzer does).
//!
//! Parsing: the header and the first question with `hickory-proto` (already in the workspace
//! for `netdoctor dns`); the answer sections are not read (the snap length may cut them, and
//! the story needs only the rcode and the time).
//!
//! A lookup is (client address, id, question): the client's re-sends of the same question
//! with the same id (to the same or another nameserver, from the same or a new socket) are
//! its retries; the same query frame twice within [`DUP_NS`] to the same server is a
//! duplicated frame of the capture, not a retry. A nameserver is called unreachable only when it answered nothing in the
//! capture, at least one query to it had [`WAIT_NS`] of capture after it, and the capture
//! shows traffic toward the clients at all (a capture filtered to one direction cannot tell
//! an unanswered query from an unseen answer). A query with less capture after it than
//! [`WAIT_NS`] is cut by the end of the capture: said as a warning, blamed on nobody.
//! mDNS (5353) and LLMNR (5355) are not nameservers: ignored.
//!
//! NXDOMAIN answers are `dns_name_not_found` (one finding per server; PTR lookups left out),
//! except the steps of the search list's walk (`walk`), told as `dns_slow` side client.
//! Told at the end of a file only ([`super::Analyzer::finish`]): a window's lookups may still
//! await their answers, so `take_window` (the agent, `watch`) does not tell them; live
//! captures filter TCP anyway.
//!
//! A server that answered some queries and left others unanswered (`partial`) is not
//! unreachable: `dns_slow` with the share unanswered (side network, or server when the answers
//! that came were slow too); its PTR queries left unanswered are `reverse_dns_timeout`.
//!
//! DNS over TCP port 53 (`tcp`) is read from the TCP segments with port 53 at either end
//! ([`DnsLog::push_tcp`], called before the TCP path, which carries these connections as
//! `Source::Dns`: they yield no exchanges). Its messages join the same lookups: a lookup
//! asked over TCP from the start (`options use-vc`, `dig +tcp`) counts from the connection's
//! SYN when its query went before the connection's first answer (the handshake is part of
//! its time); the TCP query that follows an answer over UDP (after the TC bit) is the
//! lookup's TCP leg (`legs`): its answer ends the lookup, and a leg that fails (the SYN reset
//! or unanswered, the query unanswered) fails the lookup: `dns_server_error`, probe
//! `dns_truncated`.
//!
//! Files: this one pairs the messages into lookups (the log); `tell` turns them into findings
//! at the end of a file; `partial`, `walk` and `legs` are the stories `tell` hands on to;
//! `tcp` cuts DNS over TCP into messages.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};

use hickory_proto::op::{Header, MessageType, Query};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

use crate::decode::{TcpSegment, udp_datagram};
use crate::finding::{Evidence, Finding, FindingId, PacketRef, Severity, Side};
use crate::packet::{LinkType, RawPacket};

mod legs;
mod partial;
mod tcp;
mod tell;
mod walk;

pub use tell::ALL_SILENT_FIX;

/// The same query frame again within this, to the same server: a copy, not a retry.
const DUP_NS: i64 = 1_000_000;
/// Capture after a query before its missing answer says anything about the server.
const WAIT_NS: i64 = 1_000_000_000;
/// An answer this late (after the first query) is slow (`netdoctor dns`'s threshold).
const SLOW_NS: i64 = 100_000_000;
/// Lookups kept (then counted, not kept).
const MAX_LOOKUPS: usize = 100_000;
/// Addresses remembered as having received a non-TCP frame.
const MAX_TOWARD: usize = 4096;
/// Example packets per evidence line.
const MAX_PACKETS: usize = 8;

#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    /// The client's address without its port: glibc re-sends a query from a new socket
    /// (same id) when one of its parallel A/AAAA queries got no answer.
    client: IpAddr,
    id: u16,
    name: String,
    qtype: String,
}

#[derive(Clone, Copy)]
struct Msg {
    ts: i64,
    frame: u64,
    server: SocketAddr,
}

struct Lookup {
    key: Key,
    /// The client's socket of the first query.
    client: SocketAddr,
    queries: Vec<Msg>,
    dups: u32,
    answer: Option<(Msg, u8)>,
    /// The answer had the TC bit: the client must ask again over TCP.
    truncated: bool,
    /// Asked over TCP from the start: the client's SYN of the connection, when the query went
    /// before the connection's first answer (the handshake is the lookup's time).
    opened: Option<Msg>,
    /// Asked over TCP again after an answer over UDP (TC): the TCP leg.
    leg: Option<Leg>,
}

/// A lookup's query over TCP after its answer over UDP.
#[derive(Clone, Copy)]
struct Leg {
    /// The connection (index in [`DnsLog`]'s TCP connections).
    conn: usize,
    query: Msg,
    answer: Option<(Msg, u8)>,
}

impl Lookup {
    fn retries(&self) -> usize {
        self.queries.len().saturating_sub(1)
    }

    /// When the lookup began: its first query, or the SYN of its TCP connection.
    fn start(&self) -> i64 {
        self.opened.map_or(self.queries[0].ts, |m| m.ts)
    }
}

/// Where a DNS message came from: a UDP datagram, or connection `n` of the TCP ones.
#[derive(Clone, Copy)]
enum Via {
    Udp,
    Tcp(usize),
}

/// A lookup and its queries to one server.
type Asked<'a> = (&'a Lookup, Vec<Msg>);
/// A lookup and its answer.
type Said<'a> = (&'a Lookup, Msg);

/// The capture's DNS lookups (see the module docs).
#[derive(Default)]
pub(super) struct DnsLog {
    lookups: Vec<Lookup>,
    open: HashMap<Key, usize>,
    toward: HashSet<IpAddr>,
    answers_unmatched: u64,
    dropped: u64,
    tcp: tcp::Conns,
}

impl DnsLog {
    /// A frame that is no TCP segment, stamped `ts`.
    pub(super) fn push(&mut self, pkt: &RawPacket<'_>, ts: i64) {
        let Some((src, dst, payload)) = udp_datagram(pkt) else {
            self.note_arp(pkt);
            return;
        };
        if self.toward.len() < MAX_TOWARD {
            self.toward.insert(dst.ip());
        }
        let mdns = |p: u16| p == 5353 || p == 5355;
        if mdns(src.port()) || mdns(dst.port()) || (src.port() != 53 && dst.port() != 53) {
            return;
        }
        self.on_msg(src, dst, payload, ts, pkt.frame, Via::Udp);
    }

    /// A TCP segment with port 53 at one end (the caller checks the ports): its connection's
    /// state, and the DNS messages it completes.
    /// Cold: its caller's port check is all that other segments pay.
    #[cold]
    #[inline(never)]
    pub(super) fn push_tcp(&mut self, seg: &TcpSegment<'_>) {
        let mut msgs = Vec::new();
        let Some(n) = self.tcp.on_segment(seg, &mut msgs) else {
            return;
        };
        for m in msgs {
            self.on_msg(seg.src, seg.dst, &m, seg.ts_ns, seg.frame, Via::Tcp(n));
        }
    }

    /// One DNS message from `src` to `dst` (port 53 at one end).
    fn on_msg(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        payload: &[u8],
        ts: i64,
        frame: u64,
        via: Via,
    ) {
        let mut d = BinDecoder::new(payload);
        let Ok(h) = Header::read(&mut d) else { return };
        if h.counts.queries == 0 {
            return;
        }
        let Ok(q) = Query::read(&mut d) else { return };
        let m = &h.metadata;
        let mut name = q.name().to_ascii().to_ascii_lowercase();
        if name.len() > 1 && name.ends_with('.') {
            name.pop();
        }
        let qtype = q.query_type().to_string();
        match m.message_type {
            MessageType::Query if dst.port() == 53 => {
                let key = Key {
                    client: src.ip(),
                    id: m.id,
                    name,
                    qtype,
                };
                let msg = Msg {
                    ts,
                    frame,
                    server: dst,
                };
                if let Some(&i) = self.open.get(&key) {
                    let l = &mut self.lookups[i];
                    // Asked over UDP, now over TCP: its TCP leg (glibc asks both A and AAAA
                    // again when one answer was truncated).
                    if let Via::Tcp(conn) = via
                        && l.opened.is_none()
                        && l.leg.is_none()
                    {
                        l.leg = Some(Leg {
                            conn,
                            query: msg,
                            answer: None,
                        });
                        return;
                    }
                    if l.answer.is_none() {
                        match l.queries.last() {
                            Some(p) if p.server == dst && ts - p.ts < DUP_NS => l.dups += 1,
                            _ => l.queries.push(msg),
                        }
                        return;
                    }
                }
                if self.lookups.len() >= MAX_LOOKUPS {
                    self.dropped += 1;
                    return;
                }
                let opened = match via {
                    Via::Tcp(n) => {
                        let c = &self.tcp.list[n];
                        if c.answered { None } else { c.syn }
                    }
                    Via::Udp => None,
                };
                self.open.insert(key.clone(), self.lookups.len());
                self.lookups.push(Lookup {
                    key,
                    client: src,
                    queries: vec![msg],
                    dups: 0,
                    answer: None,
                    truncated: false,
                    opened,
                    leg: None,
                });
            }
            MessageType::Response if src.port() == 53 => {
                let key = Key {
                    client: dst.ip(),
                    id: m.id,
                    name,
                    qtype,
                };
                let a = (
                    Msg {
                        ts,
                        frame,
                        server: src,
                    },
                    m.response_code.low(),
                );
                if let Via::Tcp(n) = via {
                    self.tcp.list[n].answered = true;
                }
                match self.open.get(&key).map(|&i| &mut self.lookups[i]) {
                    Some(Lookup {
                        leg: Some(g @ Leg { answer: None, .. }),
                        ..
                    }) if matches!(via, Via::Tcp(_)) => g.answer = Some(a),
                    Some(l) if l.answer.is_none() => {
                        l.answer = Some(a);
                        l.truncated = m.truncation;
                    }
                    _ => self.answers_unmatched += 1,
                }
            }
            _ => {}
        }
    }

    /// An ARP reply is traffic toward its target: the capture sees that direction.
    fn note_arp(&mut self, pkt: &RawPacket<'_>) {
        let d = pkt.data;
        if pkt.link == LinkType::Ethernet
            && d.len() >= 42
            && d[12..14] == [0x08, 0x06]
            && d[20..22] == [0, 2]
            && self.toward.len() < MAX_TOWARD
        {
            let t: [u8; 4] = [d[38], d[39], d[40], d[41]];
            self.toward.insert(IpAddr::from(t));
        }
    }
}

/// "A name, AAAA name, …": the questions of the first [`MAX_PACKETS`] lookups of `v` (the
/// notes of the TC stories, `partial` and `legs`).
fn questions<T>(v: &[(&Lookup, T)]) -> String {
    v.iter()
        .take(MAX_PACKETS)
        .map(|(l, _)| format!("{} {}", l.key.qtype, l.key.name))
        .collect::<Vec<_>>()
        .join(", ")
}

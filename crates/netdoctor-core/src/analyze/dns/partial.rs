//! Nameservers that answered, told by what their answers cost: queries left unanswered by a
//! server that answered others (a lossy path or an overloaded resolver: `dns_slow`, not
//! "unreachable"), slow answers (`dns_slow`), PTR queries left unanswered
//! (`reverse_dns_timeout`: tools resolving addresses stall), and answers truncated over UDP
//! (TC: the client must ask again over TCP; told with the time its TCP leg took, `super::legs`,
//! and left to `super::legs` when that leg failed).
//!
//! A query to server S counts as unanswered when its lookup was answered by a later query
//! (to S or another server), or got no answer with [`WAIT_NS`] of capture after the query;
//! a query with less capture after it is cut by the capture's end and counts for nothing.

use std::collections::HashSet;
use std::net::IpAddr;

use super::legs::{self, End};
use super::{Lookup, MAX_PACKETS, Msg, SLOW_NS, WAIT_NS};
use crate::finding::{Evidence, Finding, FindingId, PacketRef, Severity, Side};

/// One server's record in the capture (lookups of one kind: forward or PTR).
#[derive(Default)]
struct Server<'a> {
    /// Queries that count (answered, or unanswered with time to tell).
    sent: usize,
    /// Of those, unanswered.
    lost: usize,
    /// Lookups that asked this server (and counted).
    lookups: usize,
    /// Lookups with an unanswered query here, and how many.
    hit: Vec<(&'a Lookup, usize)>,
    /// Answered here at the first try: the answer's delay (ns).
    first_try: Vec<i64>,
    /// Answered here (NOERROR) after [`SLOW_NS`] or more.
    slow: Vec<&'a Lookup>,
    /// Answered here with the TC bit (and how its TCP leg ended, not failed).
    truncated: Vec<(&'a Lookup, End)>,
}

/// The findings of the servers in `answered_by` (the ones that answered something).
pub(super) fn tell(
    lookups: &[Lookup],
    legs: &[End],
    end: i64,
    answered_by: &HashSet<IpAddr>,
    out: &mut Vec<Finding>,
    pref: &dyn Fn(&Msg, &str, String) -> PacketRef,
    q_desc: &dyn Fn(&Lookup) -> String,
) {
    let mut fwd: Vec<(IpAddr, Server)> = Vec::new();
    let mut ptr: Vec<(IpAddr, Server)> = Vec::new();
    for (i, l) in lookups.iter().enumerate() {
        let table = if l.key.qtype == "PTR" {
            &mut ptr
        } else {
            &mut fwd
        };
        let mut ips: Vec<IpAddr> = l.queries.iter().map(|q| q.server.ip()).collect();
        ips.sort_unstable();
        ips.dedup();
        let answer_ip = l.answer.map(|(a, _)| a.server.ip());
        for ip in ips.into_iter().filter(|ip| answered_by.contains(ip)) {
            let qs: Vec<&Msg> = l.queries.iter().filter(|q| q.server.ip() == ip).collect();
            let here = answer_ip == Some(ip)
                || (answer_ip.is_some()
                    && l.queries.last().is_some_and(|q| q.server.ip() == ip)
                    && !l.queries.iter().any(|q| Some(q.server.ip()) == answer_ip));
            let lost = match l.answer {
                Some(_) if here => qs.len() - 1,
                Some(_) => qs.len(),
                None => qs.iter().filter(|q| end - q.ts >= WAIT_NS).count(),
            };
            let counted = lost + usize::from(here);
            if counted == 0 {
                continue;
            }
            let s = match table.iter_mut().find(|(s, _)| *s == ip) {
                Some((_, s)) => s,
                None => {
                    table.push((ip, Server::default()));
                    &mut table.last_mut().expect("just pushed").1
                }
            };
            s.sent += counted;
            s.lost += lost;
            s.lookups += 1;
            if lost > 0 {
                s.hit.push((l, lost));
            }
            if let (true, Some((a, rc))) = (here, l.answer) {
                let leg = legs.get(i).copied().unwrap_or(End::None);
                // Asked again over TCP (after a truncated answer, its own or its pair's): the
                // TCP answer ends the lookup.
                let done = l.leg.and_then(|g| g.answer).map_or(a.ts, |(t, _)| t.ts);
                let delay = done - l.start();
                if l.queries.len() == 1 {
                    s.first_try.push(delay);
                }
                if rc == 0 && delay >= SLOW_NS && !legs::failed(legs, i) {
                    s.slow.push(l);
                }
                if l.truncated && !legs::failed(legs, i) {
                    s.truncated.push((l, leg));
                }
            }
        }
    }
    let ctx = Ctx { end, pref, q_desc };
    for (ip, s) in &fwd {
        if !s.hit.is_empty() {
            out.push(ctx.partly(*ip, s));
        } else if !s.slow.is_empty() {
            out.push(ctx.slow(*ip, s));
        }
    }
    for (ip, s) in &ptr {
        if !s.hit.is_empty() {
            let forward_lost = fwd.iter().any(|(f, x)| f == ip && x.lost > 0);
            out.push(ctx.ptr(*ip, s, forward_lost));
        }
    }
    let mut tc: Vec<(IpAddr, Vec<(&Lookup, End)>)> = Vec::new();
    for (ip, s) in fwd.iter().chain(&ptr) {
        if s.truncated.is_empty() {
            continue;
        }
        match tc.iter_mut().find(|(x, _)| x == ip) {
            Some((_, v)) => v.extend(&s.truncated),
            None => tc.push((*ip, s.truncated.clone())),
        }
    }
    for (ip, v) in &tc {
        out.push(ctx.truncated(*ip, v));
    }
}

fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

struct Ctx<'a> {
    end: i64,
    pref: &'a dyn Fn(&Msg, &str, String) -> PacketRef,
    q_desc: &'a dyn Fn(&Lookup) -> String,
}

impl Ctx<'_> {
    /// A lookup's frames: the SYN of its TCP connection, its queries and its answer, the
    /// query and answer of its TCP leg.
    fn packets(&self, l: &Lookup) -> Vec<PacketRef> {
        let mut p: Vec<PacketRef> = Vec::new();
        if let Some(syn) = l.opened {
            p.push((self.pref)(&syn, "C→S", "SYN to port 53".to_string()));
        }
        p.extend(
            l.queries
                .iter()
                .take(MAX_PACKETS)
                .map(|q| (self.pref)(q, "C→S", (self.q_desc)(l))),
        );
        if let Some((a, rc)) = l.answer {
            p.push((self.pref)(
                &a,
                "S→C",
                format!("answer rcode {rc} id {:#06x}", l.key.id),
            ));
        }
        if let Some(g) = l.leg {
            p.push((self.pref)(
                &g.query,
                "C→S",
                "the same query over TCP".to_string(),
            ));
            if let Some((a, rc)) = g.answer {
                p.push((self.pref)(
                    &a,
                    "S→C",
                    format!("answer rcode {rc} over TCP id {:#06x}", l.key.id),
                ));
            }
        }
        p
    }

    /// A lookup's time to its (last) answer: from its first query or its TCP connection's
    /// SYN, to the answer of its TCP leg after a truncated one.
    fn took_ms(&self, l: &Lookup) -> Option<f64> {
        let (a, _) = l.answer?;
        let done = l.leg.and_then(|g| g.answer).map_or(a.ts, |(t, _)| t.ts);
        Some((done - l.start()) as f64 / 1e6)
    }

    /// What a lookup hit by lost queries cost, in words, and its cost (ms) when answered.
    fn cost(&self, l: &Lookup, lost: usize, server: IpAddr) -> (String, Option<f64>) {
        let first = l.start();
        match l.answer {
            Some((a, _)) => {
                let ms = (a.ts - first) as f64 / 1e6;
                (
                    format!(
                        "{} {}: {lost} query(ies) to {server} unanswered, answered by {} after \
                         {} retries, {ms:.0} ms after the first query",
                        l.key.qtype,
                        l.key.name,
                        a.server.ip(),
                        l.retries()
                    ),
                    Some(ms),
                )
            }
            None => {
                let last = l.queries.last().map_or(first, |q| q.ts);
                (
                    format!(
                        "{} {}: never answered, asked {} time(s) over {:.1} s ({lost} to \
                         {server}); the capture ran {:.1} s after the last query",
                        l.key.qtype,
                        l.key.name,
                        l.queries.len(),
                        (last - first) as f64 / 1e9,
                        (self.end - last) as f64 / 1e9
                    ),
                    None,
                )
            }
        }
    }

    /// A server that answered some queries and left others unanswered.
    fn partly(&self, server: IpAddr, s: &Server) -> Finding {
        let failed = s.hit.iter().filter(|(l, _)| l.answer.is_none()).count();
        let retried = s.hit.len() - failed;
        let mut costs: Vec<f64> = s
            .hit
            .iter()
            .filter_map(|(l, n)| self.cost(l, *n, server).1)
            .collect();
        let total: f64 = costs.iter().sum();
        let med = median(&mut costs);
        let mut first: Vec<f64> = s.first_try.iter().map(|&d| d as f64 / 1e6).collect();
        let first_med = median(&mut first);
        // Answers that do come are slow too: the server is overloaded, not (only) the path.
        let server_slow = first_med.is_some_and(|m| m >= SLOW_NS as f64 / 1e6);
        let pct = 100.0 * s.lost as f64 / s.sent as f64;
        let mut f = Finding::new(
            FindingId::DnsSlow,
            Severity::Warning,
            if server_slow {
                Side::Server
            } else {
                Side::Network
            },
            format!(
                "nameserver {server} left {} of {} queries unanswered ({pct:.0} %): {retried} \
                 lookup(s) answered only after a retry{}{}",
                s.lost,
                s.sent,
                med.map_or(String::new(), |m| format!(" ({m:.0} ms median)")),
                if failed > 0 {
                    format!(", {failed} never answered")
                } else {
                    String::new()
                }
            ),
        );
        f.impact.added_latency_ms = med;
        f.impact.affected_fraction = Some(s.hit.len() as f64 / s.lookups.max(1) as f64);
        f.explanation = format!(
            "The nameserver answered other queries of the capture, so it is up and reachable, \
             but {} of the {} queries it was sent got no answer: {} of its {} lookups waited \
             for the resolver's timeout and a retry{}{}. {}",
            s.lost,
            s.sent,
            s.hit.len(),
            s.lookups,
            if total > 0.0 {
                format!(" ({total:.0} ms in all for the {retried} answered late)")
            } else {
                String::new()
            },
            if failed > 0 {
                format!("; {failed} lookup(s) got no answer at all and failed")
            } else {
                String::new()
            },
            if server_slow {
                format!(
                    "The answers that did come were slow too ({:.0} ms median at the first \
                     try): the server is overloaded and sheds queries.",
                    first_med.unwrap_or(0.0)
                )
            } else {
                format!(
                    "The answers that did come were quick{}: queries or answers are lost on \
                     the way (a lossy link, a rate-limiting firewall), or the server drops \
                     some under load.",
                    first_med.map_or(String::new(), |m| format!(" ({m:.1} ms median)"))
                )
            }
        );
        f.fix = format!(
            "Look for DNS packet loss between the client and {server} (`netdoctor dns NAME` \
             repeated; a firewall or rate limit on UDP 53; the server's load and its drop \
             counters); lower `options timeout:` in resolv.conf so a lost query is retried \
             sooner, or use a nearer or healthier resolver (a local cache)."
        );
        f.evidence.push(Evidence::Probe {
            probe: "dns_unanswered".to_string(),
            note: format!(
                "{} of {} queries to {server} unanswered; {retried} lookup(s) answered after a \
                 retry, {failed} never answered",
                s.lost, s.sent
            ),
        });
        for (l, n) in s.hit.iter().take(MAX_PACKETS) {
            f.evidence.push(Evidence::Packets {
                connection: format!("{} → {}", l.client, l.queries[0].server),
                packets: self.packets(l),
                note: self.cost(l, *n, server).0,
            });
        }
        f
    }

    /// A server whose answers came, slowly (nothing lost).
    fn slow(&self, server: IpAddr, s: &Server) -> Finding {
        let mut times: Vec<f64> = s.slow.iter().filter_map(|l| self.took_ms(l)).collect();
        let med = median(&mut times).unwrap_or(0.0);
        let mut f = Finding::new(
            FindingId::DnsSlow,
            Severity::Warning,
            Side::Network,
            format!(
                "nameserver {server} is slow: {} lookup(s) answered after {med:.0} ms (median)",
                s.slow.len()
            ),
        );
        f.impact.added_latency_ms = Some(med);
        f.impact.affected_fraction = Some(s.slow.len() as f64 / s.lookups.max(1) as f64);
        f.explanation = "Every name lookup through this server waits for its answer. Programs \
                         that resolve a name per request or per connection pay this on each one."
            .to_string();
        f.fix = "Use a nearer or healthier resolver (a local caching resolver such as \
                 systemd-resolved, dnsmasq or nscd), cache names in the application."
            .to_string();
        for l in s.slow.iter().take(MAX_PACKETS) {
            f.evidence.push(Evidence::Packets {
                connection: format!("{} → {}", l.client, l.queries[0].server),
                packets: self.packets(l),
                note: self.took_ms(l).map_or(String::new(), |ms| {
                    format!(
                        "answered in {ms:.1} ms{}",
                        if l.opened.is_some() {
                            " over TCP, from its connection's SYN"
                        } else if l.leg.is_some_and(|g| g.answer.is_some()) {
                            " (its TCP retry's answer)"
                        } else {
                            ""
                        }
                    )
                }),
            });
        }
        f
    }

    /// PTR queries a server that answers left unanswered.
    fn ptr(&self, server: IpAddr, s: &Server, forward_lost: bool) -> Finding {
        let mut addrs: Vec<String> = s.hit.iter().map(|(l, _)| address(&l.key.name)).collect();
        addrs.sort_unstable();
        addrs.dedup();
        let failed = s.hit.iter().filter(|(l, _)| l.answer.is_none()).count();
        // The wait a reverse lookup cost: to its answer, else at least to its last try.
        let worst = s
            .hit
            .iter()
            .map(|(l, _)| {
                let first = l.queries[0].ts;
                let until = l
                    .answer
                    .map_or_else(|| l.queries.last().map_or(first, |q| q.ts), |(a, _)| a.ts);
                (until - first) as f64 / 1e6
            })
            .fold(0.0, f64::max);
        let mut f = Finding::new(
            FindingId::ReverseDnsTimeout,
            Severity::Warning,
            Side::Network,
            format!(
                "reverse (PTR) lookups of {} time out at {server}: {} of {} PTR queries \
                 unanswered",
                addrs.join(", "),
                s.lost,
                s.sent
            ),
        );
        f.impact.added_latency_ms = Some(worst);
        f.explanation = format!(
            "The nameserver answers, but left {} of the {} PTR queries it was sent unanswered \
             ({failed} reverse lookup(s) never answered), so each reverse lookup waits for \
             the resolver's timeout (glibc: timeout × attempts). Tools that print host names \
             — ping, traceroute, mtr, netstat, ss without -n, servers logging client host \
             names — stall that long per address, which looks like a slow network. {}",
            s.lost,
            s.sent,
            if forward_lost {
                "Forward queries to this server were lost too (see dns_slow): the path or the \
                 server loses DNS queries, not only the reverse zone."
            } else {
                "Its forward queries were answered: the reverse zone is not served (the \
                 server forwards it to a dead upstream or drops it)."
            }
        );
        f.fix = "Serve the reverse zone (in-addr.arpa) on the nameserver or make it answer \
                 NXDOMAIN quickly; meanwhile use -n with ping/traceroute/mtr/ss and turn off \
                 hostname lookups in server logging."
            .to_string();
        for (l, n) in s.hit.iter().take(MAX_PACKETS) {
            f.evidence.push(Evidence::Packets {
                connection: format!("{} → {}", l.client, l.queries[0].server),
                packets: self.packets(l),
                note: self.cost(l, *n, server).0,
            });
        }
        f
    }

    /// Answers truncated over UDP (TC): the client asks again over TCP (its leg answered,
    /// cut by the capture's end, or not in the capture: `legs::note`).
    fn truncated(&self, server: IpAddr, v: &[(&Lookup, End)]) -> Finding {
        let notes: Vec<(String, Option<f64>)> = v.iter().map(|(l, e)| legs::note(l, *e)).collect();
        let mut totals: Vec<f64> = notes.iter().filter_map(|(_, t)| *t).collect();
        let answered = totals.len();
        let med = median(&mut totals);
        let mut f = Finding::new(
            FindingId::DnsSlow,
            Severity::Info,
            Side::Server,
            format!(
                "nameserver {server} truncated {} answer(s) over UDP (TC): the client had to \
                 ask again over TCP{}",
                v.len(),
                med.map_or(String::new(), |m| format!(
                    " ({answered} answered there, {m:.1} ms per lookup in all, median)"
                ))
            ),
        );
        f.impact.affected_fraction = Some(1.0);
        f.impact.added_latency_ms = med;
        f.explanation = "The answer did not fit the UDP message the client offered (512 bytes, \
                         or its EDNS buffer size), so the server sent it truncated with the TC \
                         bit and the resolver asked again over TCP port 53: a TCP handshake \
                         and one more round trip per lookup; where TCP 53 is blocked the lookup \
                         fails. The time given runs from the first query over UDP to the \
                         answer over TCP."
            .to_string();
        f.fix = "Keep the record sets small (fewer addresses per name, shorter CNAME chains), \
                 enable EDNS0 on the client (`options edns0` in resolv.conf) so larger UDP \
                 answers fit, and make sure TCP port 53 to the server is open."
            .to_string();
        f.evidence.push(Evidence::Probe {
            probe: "dns_truncated".to_string(),
            note: format!(
                "{} answer(s) from {server} had the TC bit: {}",
                v.len(),
                super::questions(v)
            ),
        });
        for ((l, _), (note, _)) in v.iter().zip(notes).take(MAX_PACKETS) {
            f.evidence.push(Evidence::Packets {
                connection: format!("{} → {}", l.client, l.queries[0].server),
                packets: self.packets(l),
                note,
            });
        }
        f
    }
}

/// The address of a reverse name (`4.3.2.1.in-addr.arpa` → `1.2.3.4`), else the name.
fn address(name: &str) -> String {
    if let Some(rev) = name.strip_suffix(".in-addr.arpa") {
        let mut o: Vec<&str> = rev.split('.').collect();
        if o.len() == 4 && o.iter().all(|x| x.parse::<u8>().is_ok()) {
            o.reverse();
            return o.join(".");
        }
    }
    name.to_string()
}

//! Telling a capture's lookups ([`DnsLog::tell`]): the dead servers, the lookups cut by the
//! end of the capture, the answered ones (server errors, names not found, slow answers), then
//! the partly answered servers (`partial`), the search list's walk (`walk`) and the TCP legs
//! (`legs`). Apart from the log that pairs them (the parent module): it reads the lookups
//! once, at the end of a file.

use super::*;

/// How the fix of a `dns_server_unreachable` finding starts when every nameserver asked was
/// silent (a cause they share first); the Chinese texts tell that story from it.
pub const ALL_SILENT_FIX: &str = "Every nameserver the client asked";

impl DnsLog {
    /// The findings and warnings of the capture's lookups. `t0`: the first packet's time,
    /// `end`: the last one's; `tcp_answers`: the capture saw a remote answer over TCP (a
    /// handshake completed), so it is not filtered to the outgoing direction.
    pub(in crate::analyze) fn tell(
        &self,
        t0: i64,
        end: i64,
        tcp_answers: bool,
    ) -> (Vec<Finding>, Vec<String>) {
        let mut findings = Vec::new();
        let mut warnings = Vec::new();
        if self.lookups.is_empty() {
            return (findings, warnings);
        }
        let sees_incoming = tcp_answers
            || self.lookups.iter().any(|l| l.answer.is_some())
            || self.answers_unmatched > 0
            || self
                .lookups
                .iter()
                .any(|l| self.toward.contains(&l.key.client));
        // A lookup answered from an address it never asked (a multihomed server): the last
        // address asked answered too.
        let answered_by: HashSet<IpAddr> = self
            .lookups
            .iter()
            .filter_map(|l| {
                let (a, _) = l.answer?;
                let ip = a.server.ip();
                Some(if l.queries.iter().any(|q| q.server.ip() == ip) {
                    ip
                } else {
                    l.queries.last().map_or(ip, |q| q.server.ip())
                })
            })
            .collect();
        let pref = |m: &Msg, dir: &str, desc: String| PacketRef {
            frame: m.frame,
            time: (m.ts - t0) as f64 / 1e9,
            ts: m.ts as f64 / 1e9,
            dir: dir.to_string(),
            desc,
        };
        let q_desc =
            |l: &Lookup| format!("query {} {} id {:#06x}", l.key.qtype, l.key.name, l.key.id);
        // Unanswered queries, per server: waited long enough, or cut by the capture's end. A
        // lookup answered by another server after the client gave up on one (glibc's next
        // nameserver) counts for the one that answered nothing too.
        let mut dead: Vec<(IpAddr, Vec<Asked>)> = Vec::new();
        let mut cut: Vec<&Lookup> = Vec::new();
        let mut one_way: Vec<&Lookup> = Vec::new();
        for l in &self.lookups {
            if l.answer.is_none() {
                let waited = end - l.queries[0].ts;
                if waited < WAIT_NS {
                    cut.push(l);
                    continue;
                }
                if !sees_incoming {
                    one_way.push(l);
                    continue;
                }
            }
            for q in &l.queries {
                let ip = q.server.ip();
                if answered_by.contains(&ip) {
                    continue;
                }
                match dead.iter_mut().find(|(s, _)| *s == ip) {
                    Some((_, v)) => match v.iter_mut().find(|(x, _)| std::ptr::eq(*x, l)) {
                        Some((_, qs)) => qs.push(*q),
                        None => v.push((l, vec![*q])),
                    },
                    None => dead.push((ip, vec![(l, vec![*q])])),
                }
            }
        }
        // A server counts as dead when one of its queries had WAIT_NS of capture after it, or
        // its lookup was answered by another server (the client gave up on it).
        dead.retain(|(_, v)| {
            v.iter()
                .any(|(l, qs)| l.answer.is_some() || qs.iter().any(|q| end - q.ts >= WAIT_NS))
        });
        let all_dead = answered_by.is_empty() && !dead.is_empty();
        // Every nameserver asked silent, and more than one: a cause they share (the client's
        // link or gateway, a firewall dropping DNS) is likelier than all of them down at once,
        // and replacing each would fix nothing (`ppa-nowebaccess1`: 4.2.2.2 and 4.2.2.1).
        let shared = (all_dead && dead.len() > 1).then(|| {
            dead.iter()
                .map(|(s, _)| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        });
        for (server, v) in &dead {
            let n: usize = v.iter().map(|(_, qs)| qs.len()).sum();
            let names: Vec<&str> = v.iter().map(|(l, _)| l.key.name.as_str()).collect();
            let first = v
                .iter()
                .flat_map(|(_, qs)| qs)
                .map(|q| q.ts)
                .min()
                .unwrap_or(end);
            let last = v
                .iter()
                .flat_map(|(_, qs)| qs)
                .map(|q| q.ts)
                .max()
                .unwrap_or(end);
            let mut f = Finding::new(
                FindingId::DnsServerUnreachable,
                if all_dead {
                    Severity::Critical
                } else {
                    Severity::Warning
                },
                Side::Network,
                format!("nameserver {server} does not answer (timeouts)"),
            );
            f.impact.affected_fraction = Some(1.0);
            f.explanation = format!(
                "Queries got no answer at all: the server is down, or a firewall drops DNS on \
                 the way. In this capture it was asked {n} time(s) (for {}) over {:.1} s and \
                 never answered; the capture ran {:.1} s after the last query. {}",
                names.join(", "),
                (last - first) as f64 / 1e9,
                (end - last) as f64 / 1e9,
                if shared.is_some() {
                    "No nameserver answered any query of the capture, so the lookups fail; \
                     several nameservers down at once is less likely than a cause they share \
                     on the way (the client's link or gateway, a firewall dropping DNS)."
                } else if all_dead {
                    "No nameserver answered any query of the capture, so the lookups fail."
                } else {
                    "Other nameservers answered: lookups that ask this one first wait for the \
                     timeout before the next."
                }
            );
            let name = names.first().copied().unwrap_or("NAME");
            f.fix = match &shared {
                Some(all) => format!(
                    "{ALL_SILENT_FIX} ({all}) was silent: look at what they share first. Check with `dig @{server} {name}` from this host and from \
                     another network: answered from elsewhere, the client's path to port 53 \
                     (UDP and TCP) is cut (its link, gateway, a firewall); silent everywhere, \
                     replace the nameservers in the client's resolv.conf."
                ),
                None => format!(
                    "Remove or replace this nameserver in the client's resolv.conf (or bring \
                     that server back, or open UDP/TCP port 53 toward it); check with \
                     `dig @{server} {name}`."
                ),
            };
            for (l, qs) in v {
                let retried = if qs.len() > 1 || l.retries() > 0 {
                    format!(", {} retries of the lookup", l.retries())
                } else {
                    String::new()
                };
                f.evidence.push(Evidence::Packets {
                    connection: format!("{} → {}", l.client, qs[0].server),
                    packets: qs
                        .iter()
                        .take(MAX_PACKETS)
                        .map(|q| pref(q, "C→S", q_desc(l)))
                        .collect(),
                    note: format!(
                        "{} {} sent {} time(s) to {server}, no answer{retried}{}",
                        l.key.qtype,
                        l.key.name,
                        qs.len(),
                        if l.dups > 0 {
                            format!(
                                " ({} duplicated frame(s) of the capture not counted)",
                                l.dups
                            )
                        } else {
                            String::new()
                        }
                    ),
                });
            }
            findings.push(f);
        }
        let dead_ips: HashSet<IpAddr> = dead.iter().map(|(s, _)| *s).collect();
        let cut: Vec<&Lookup> = cut
            .into_iter()
            .filter(|l| l.queries.iter().all(|q| !dead_ips.contains(&q.server.ip())))
            .collect();
        if let Some(l) = cut.first() {
            let q = l.queries.last().map_or(end, |q| q.ts);
            warnings.push(format!(
                "{} DNS lookup(s) unanswered when the capture ended ({} {} from {} to {}, sent \
                 {:.3} s before the end): too soon to say whether the nameserver answers",
                cut.len(),
                l.key.qtype,
                l.key.name,
                l.key.client,
                l.queries[0].server,
                (end - q) as f64 / 1e9
            ));
        }
        if let Some(l) = one_way.first() {
            warnings.push(format!(
                "{} DNS lookup(s) unanswered ({} {} from {} to {}, asked {} time(s)), but the \
                 capture holds no packet toward the clients at all: it sees one direction (a \
                 capture filter?), so whether the nameservers answered is not in it",
                one_way.len(),
                l.key.qtype,
                l.key.name,
                l.key.client,
                l.queries[0].server,
                l.queries.len()
            ));
        }
        if self.dropped > 0 {
            warnings.push(format!(
                "{} DNS lookups after the first {MAX_LOOKUPS} were not analyzed",
                self.dropped
            ));
        }
        self.tell_answered(&mut findings, &pref, &q_desc);
        let legs = legs::ends(&self.lookups, &self.tcp.list, end);
        partial::tell(
            &self.lookups,
            &legs,
            end,
            &answered_by,
            &mut findings,
            &pref,
            &q_desc,
        );
        legs::tell(&self.lookups, &legs, &mut findings, &pref, &q_desc);
        (findings, warnings)
    }

    /// Answered lookups: server errors, names not found, slow answers.
    fn tell_answered(
        &self,
        out: &mut Vec<Finding>,
        pref: &dyn Fn(&Msg, &str, String) -> PacketRef,
        q_desc: &dyn Fn(&Lookup) -> String,
    ) {
        let answered = || {
            self.lookups
                .iter()
                .enumerate()
                .filter_map(|(i, l)| l.answer.map(|(a, rc)| (i, (l, a, rc))))
        };
        let evidence = |l: &Lookup, a: &Msg, rc: &str, note: String| Evidence::Packets {
            connection: format!("{} → {}", l.client, a.server),
            packets: vec![
                pref(&l.queries[0], "C→S", q_desc(l)),
                pref(a, "S→C", format!("answer {rc} id {:#06x}", l.key.id)),
            ],
            note,
        };
        let ms = |l: &Lookup, a: &Msg| (a.ts - l.start()) as f64 / 1e6;
        // One finding per (server, rcode) for the errors.
        let mut errors: Vec<(IpAddr, u8, Vec<Said>)> = Vec::new();
        let mut missing: Vec<(IpAddr, Vec<Said>)> = Vec::new();
        let walks = walk::walks(&self.lookups);
        let walked = walk::walked(&walks);
        for w in &walks {
            out.push(walk::tell(w, &self.lookups, pref));
        }
        for (i, (l, a, rc)) in answered() {
            let ip = a.server.ip();
            match rc {
                2 | 5 => match errors.iter_mut().find(|(s, r, _)| *s == ip && *r == rc) {
                    Some((_, _, v)) => v.push((l, a)),
                    None => errors.push((ip, rc, vec![(l, a)])),
                },
                // Reverse lookups (PTR) without a name are `reverse_dns_timeout`'s world, not
                // a missing name a request needed.
                3 if !walked.contains(&i) && l.key.qtype != "PTR" => {
                    match missing.iter_mut().find(|(s, _)| *s == ip) {
                        Some((_, v)) => v.push((l, a)),
                        None => missing.push((ip, vec![(l, a)])),
                    }
                }
                _ => {}
            }
        }
        let any_found = answered().any(|(_, (_, _, rc))| rc == 0);
        for (server, v) in &missing {
            let mut names: Vec<&str> = v.iter().map(|(l, _)| l.key.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            let mut f = Finding::new(
                FindingId::DnsNameNotFound,
                // Other names resolved: the client goes on, the lookups of these fail.
                if any_found {
                    Severity::Warning
                } else {
                    Severity::Critical
                },
                Side::Client,
                format!(
                    "{} does not exist: {server} answered NXDOMAIN{}",
                    names[0],
                    if names.len() > 1 {
                        format!(" (and for {} more name(s))", names.len() - 1)
                    } else {
                        String::new()
                    }
                ),
            );
            f.impact.affected_fraction = Some(1.0);
            f.explanation = format!(
                "The nameserver answered: {} does not exist. Nothing on the network is slow \
                 or broken; the name (or the search list that completed it) is wrong, or the \
                 zone lacks the record.",
                names.join(", ")
            );
            f.fix = format!(
                "Check the host name's spelling and the client's search domains, or add the \
                 record to the zone; check with `netdoctor dns {}`.",
                names[0]
            );
            for (l, a) in v.iter().take(MAX_PACKETS) {
                f.evidence.push(evidence(
                    l,
                    a,
                    "NXDOMAIN",
                    format!(
                        "{} {} NXDOMAIN in {:.1} ms",
                        l.key.qtype,
                        l.key.name,
                        ms(l, a)
                    ),
                ));
            }
            out.push(f);
        }
        for (server, rc, v) in &errors {
            let (word, probe_txt) = if *rc == 2 {
                (
                    "SERVFAIL",
                    "it could not resolve the name (not: the name does not exist)",
                )
            } else {
                ("REFUSED", "it refuses to resolve for this client")
            };
            let (l, a) = v[0];
            let mut f = Finding::new(
                FindingId::DnsServerError,
                Severity::Critical,
                Side::Network,
                format!(
                    "nameserver {server} answers {word} for {}: {probe_txt}",
                    l.key.name
                ),
            );
            f.impact.affected_fraction = Some(1.0);
            f.explanation = if *rc == 2 {
                "The nameserver is reachable and answers at once, but says its own resolution \
                 failed: it cannot reach the name's authoritative servers (upstream or forwarder \
                 down or blocked), DNSSEC validation failed, or the zone is misconfigured (lame \
                 delegation). The name very likely exists."
            } else {
                "The nameserver refuses by policy to resolve this name for this client: \
                 recursion is open to some networks only (allow-recursion, an ACL), or it is \
                 authoritative only and not for this zone."
            }
            .to_string();
            f.fix = format!(
                "{} Check with `dig @{server} {}`.",
                if *rc == 2 {
                    "Read the nameserver's log and check its upstream/forwarders (can it reach \
                     port 53 upstream?), the zone's delegation and DNSSEC (`dig +cd`, `dig \
                     +trace`); meanwhile point the client at a working resolver."
                } else {
                    "Use the resolver meant for this network, or allow the client's address in \
                     the nameserver's recursion ACL."
                },
                l.key.name.trim_end_matches('.')
            );
            f.evidence.push(Evidence::Probe {
                probe: if *rc == 2 {
                    "dns_servfail"
                } else {
                    "dns_refused"
                }
                .to_string(),
                note: format!(
                    "{} lookup(s) answered {word}, the first in {:.1} ms",
                    v.len(),
                    ms(l, &a)
                ),
            });
            for (l, a) in v.iter().take(MAX_PACKETS) {
                f.evidence.push(evidence(
                    l,
                    a,
                    word,
                    format!("{word} in {:.1} ms", ms(l, a)),
                ));
            }
            out.push(f);
        }
    }
}

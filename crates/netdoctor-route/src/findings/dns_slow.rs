//! `dns_slow`: a nameserver answers, but slowly (median above the threshold) or unstably (some
//! tries lost: each lost query costs the resolver a whole timeout), or getaddrinfo itself is slow.

use super::{Thresholds, fmt_ms, probe};
use crate::dns::DnsReport;
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

pub fn dns_slow(r: &DnsReport, th: &Thresholds) -> Vec<Finding> {
    let rc = &r.resolver.resolv_conf;
    let mut out = Vec::new();
    for s in r.servers.iter().filter(|s| s.udp.answered > 0) {
        let median = s.udp.median_ms.unwrap_or(0.0);
        let slow = median >= th.dns_slow_ms;
        let lossy = s.udp.loss > 0.0;
        if !slow && !lossy {
            continue;
        }
        let mut parts = Vec::new();
        if slow {
            parts.push(format!("median {}", fmt_ms(median)));
        }
        if lossy {
            parts.push(format!(
                "{} of {} queries lost",
                s.udp.sent - s.udp.answered,
                s.udp.sent
            ));
        }
        let mut f = Finding::new(
            FindingId::DnsSlow,
            Severity::Warning,
            Side::Network,
            format!("nameserver {} is slow: {}", s.server, parts.join(", ")),
        );
        let loss_cost = s.udp.loss * f64::from(rc.timeout_s) * 1000.0;
        f.impact.added_latency_ms = Some(median.max(loss_cost));
        f.impact.affected_fraction = Some(if slow { 1.0 } else { s.udp.loss });
        f.explanation = format!(
            "Every name lookup through this server waits for its answer{}.{} Programs that \
             resolve a name per request or per connection pay this on each one.",
            if slow {
                format!(" ({} median over UDP)", fmt_ms(median))
            } else {
                String::new()
            },
            if lossy {
                format!(
                    " A lost query is retried only after the resolver's timeout ({} s in {}), \
                     so lookups sometimes take {} s or more.",
                    rc.timeout_s,
                    rc.path.display(),
                    rc.timeout_s
                )
            } else {
                String::new()
            }
        );
        f.fix = "Use a nearer or healthier resolver (a local caching resolver such as \
                 systemd-resolved, dnsmasq or nscd cuts repeated lookups to microseconds); \
                 lower `options timeout:` so a lost query is retried sooner; cache names in \
                 the application."
            .to_string();
        let times: Vec<String> = s
            .udp
            .tries
            .iter()
            .map(|t| {
                t.elapsed_ms
                    .filter(|_| t.answered())
                    .map_or("lost".to_string(), fmt_ms)
            })
            .collect();
        f.evidence.push(probe(
            "dns",
            format!(
                "{} udp for {}: {}",
                s.server,
                r.query_name,
                times.join(", ")
            ),
        ));
        out.push(f);
    }
    // Silent to the direct tries, yet it answered getaddrinfo: slower than our deadline.
    let gai_ms = r.getaddrinfo.as_ref().and_then(|g| g.elapsed_ms);
    for s in r
        .servers
        .iter()
        .filter(|s| !s.reachable() && r.answered_getaddrinfo(s))
    {
        // The timeouts glibc waited on the servers before this one are theirs, not its.
        let before = f64::from(rc.timeout_s) * 1000.0 * s.position as f64;
        let ms = (gai_ms.unwrap_or(r.timeout_ms) - before).max(0.0);
        if ms < r.timeout_ms {
            // Faster than our deadline: not slow, but answering some queries and not others.
            out.push(uneven(r, s, ms));
            continue;
        }
        let mut f = Finding::new(
            FindingId::DnsSlow,
            Severity::Warning,
            Side::Network,
            format!(
                "nameserver {} is slow: it answered getaddrinfo after {}; no direct try was \
                 answered within {}",
                s.server,
                fmt_ms(ms),
                fmt_ms(r.timeout_ms)
            ),
        );
        f.impact.added_latency_ms = Some(ms);
        f.impact.affected_fraction = Some(1.0);
        f.explanation = format!(
            "The system resolver got its answer from this server (it is the one {} asks first), \
             so the server works, but slower than the {} each direct try waited. Every lookup \
             through it waits that long.",
            rc.path.display(),
            fmt_ms(r.timeout_ms)
        );
        f.fix = "Use a nearer or healthier resolver (a local caching resolver such as \
                 systemd-resolved, dnsmasq or nscd cuts repeated lookups to microseconds); \
                 cache names in the application."
            .to_string();
        silent_evidence(&mut f, r, s, ms);
        out.push(f);
    }
    out.extend(aaaa_unanswered(r, th));
    out.extend(aaaa_late(r, th));
    // A lookup that never finished within our cap has no time but is the slowest of all.
    let gai = r.getaddrinfo.as_ref().and_then(|g| {
        if g.timed_out {
            g.error.clone().map(|e| (None, e))
        } else if g.error.is_none() {
            g.elapsed_ms.map(|ms| (Some(ms), String::new()))
        } else {
            None
        }
    });
    // The timeouts glibc waits on dead nameservers ahead of the answering one are
    // `dns_server_unreachable`'s, already told with their cost.
    let dead_wait = r.dead_servers_wait_ms();
    // And the names the search list tried before the one that answered are
    // `dns_search_list`'s.
    let search_wait = r.search.as_ref().map_or(0.0, |w| {
        if w.answered_at().is_some() {
            w.wasted_ms()
        } else {
            0.0
        }
    });
    if out.is_empty()
        && let Some((elapsed, error)) = gai
        && elapsed.is_none_or(|ms| ms - dead_wait - search_wait >= th.getaddrinfo_slow_ms)
    {
        let (summary, ms) = match elapsed {
            Some(ms) => (format!("getaddrinfo({}) took {}", r.name, fmt_ms(ms)), ms),
            None => (
                format!("getaddrinfo({}) gave no answer: {error}", r.name),
                r.getaddrinfo
                    .as_ref()
                    .and_then(|g| g.elapsed_ms)
                    .unwrap_or(r.timeout_ms),
            ),
        };
        let mut f = Finding::new(FindingId::DnsSlow, Severity::Warning, Side::Host, summary);
        f.impact.added_latency_ms = Some(ms);
        f.explanation = "The system resolver took long although the nameservers asked directly \
                         answer quickly: the delay is on the resolver's path (nsswitch sources \
                         before dns, search domains tried first, a retry after a lost query)."
            .to_string();
        f.fix = format!(
            "Check the `hosts:` line of {} and the search list and ndots of {}; query the name \
             fully qualified (with a trailing dot) to skip the search list.",
            r.resolver.nsswitch_path.display(),
            rc.path.display()
        );
        f.evidence.push(probe(
            "getaddrinfo",
            match elapsed {
                Some(ms) => format!("{} in {}", r.name, fmt_ms(ms)),
                None => format!("{}: {error}", r.name),
            },
        ));
        out.push(f);
    }
    out
}

/// A server that answered getaddrinfo in `ms`, within the direct tries' deadline, while none of
/// those tries was answered (refused or lost): it answers some queries and not others. (Before,
/// "slow: it answered getaddrinfo after 17.7 ms", "slower than the 2000 ms each try waited".)
fn uneven(r: &DnsReport, s: &crate::dns::ServerTiming, ms: f64) -> Finding {
    let rc = &r.resolver.resolv_conf;
    let mut f = Finding::new(
        FindingId::DnsSlow,
        Severity::Warning,
        Side::Network,
        format!(
            "nameserver {} answers some queries and not others: it answered getaddrinfo in {} \
             but none of {} direct tries",
            s.server,
            fmt_ms(ms),
            s.udp.sent
        ),
    );
    f.impact.added_latency_ms = Some(f64::from(rc.timeout_s) * 1000.0);
    f.explanation = format!(
        "The system resolver got its answer from this server, but the direct tries asked at \
         the same time got none (refused or lost): the server, or a rate limit or firewall in \
         front of it, answers only some queries, or it was restarting. A lookup it does not \
         answer waits the resolver's timeout ({} s in {}) before the next try.",
        rc.timeout_s,
        rc.path.display()
    );
    f.fix = format!(
        "Run `netdoctor dns {}` again; look for response-rate limiting on the server or a \
         rate limit on UDP 53 in front of it, and at the server's restarts; a local caching \
         resolver asks it less often.",
        r.name
    );
    silent_evidence(&mut f, r, s, ms);
    f
}

/// The evidence of a server that answered getaddrinfo in `ms` but none of the direct tries.
fn silent_evidence(f: &mut Finding, r: &DnsReport, s: &crate::dns::ServerTiming, ms: f64) {
    f.evidence.push(probe(
        "getaddrinfo",
        format!("{} in {}", r.name, fmt_ms(ms)),
    ));
    f.evidence.push(probe(
        "dns",
        format!(
            "{} udp for {}: {} of {} tries answered within {}",
            s.server,
            r.query_name,
            s.udp.answered,
            s.udp.sent,
            fmt_ms(r.timeout_ms)
        ),
    ));
}

/// Servers that answer A at once but leave AAAA unanswered while getaddrinfo is slow or never
/// finishes: glibc asks both in parallel (one socket) and waits for both, so every lookup
/// waits the resolver's timeout for the AAAA answer (the classic 5 s stall).
fn aaaa_unanswered(r: &DnsReport, th: &Thresholds) -> Vec<Finding> {
    let rc = &r.resolver.resolv_conf;
    let Some(g) = &r.getaddrinfo else {
        return Vec::new();
    };
    let gai_slow = g.timed_out || g.elapsed_ms.is_some_and(|ms| ms >= th.getaddrinfo_slow_ms);
    if !gai_slow {
        return Vec::new();
    }
    let gai_text = match g.elapsed_ms {
        Some(ms) if !g.timed_out => format!("took {}", fmt_ms(ms)),
        _ => g.error.clone().unwrap_or_else(|| "timed out".to_string()),
    };
    r.servers
        .iter()
        .filter(|s| s.aaaa_unanswered())
        .map(|s| {
            let a_ms = s.udp.median_ms.unwrap_or(0.0);
            let mut f = Finding::new(
                FindingId::DnsSlow,
                Severity::Warning,
                Side::Network,
                format!(
                    "nameserver {} answers A in {} but never AAAA: each getaddrinfo waits the \
                     resolver's timeout ({} s) for the AAAA answer",
                    s.server,
                    fmt_ms(a_ms),
                    rc.timeout_s
                ),
            );
            f.impact.added_latency_ms = Some(
                g.elapsed_ms
                    .filter(|_| !g.timed_out)
                    .unwrap_or(f64::from(rc.timeout_s) * 1000.0),
            );
            f.impact.affected_fraction = Some(1.0);
            f.explanation = format!(
                "getaddrinfo (AF_UNSPEC, what most programs call) sends the A and AAAA questions \
                 together and waits for both. This server answers A at once, but the AAAA \
                 question got no answer within {}: the server (or a firewall, NAT or load \
                 balancer on the way) drops AAAA queries or the second packet of the pair. \
                 The lookup succeeds only after the timeout, {} s per try in {}.",
                fmt_ms(r.timeout_ms),
                rc.timeout_s,
                rc.path.display()
            );
            f.fix = format!(
                "Make the nameserver answer AAAA (an empty NOERROR answer is enough) or fix the \
                 device that drops it; if the pair's second packet is what is lost (conntrack \
                 race), add `options single-request-reopen` (or `single-request`) to {}; \
                 programs that only need IPv4 can ask with AF_INET. Check with `dig AAAA {}`.",
                rc.path.display(),
                r.query_name
            );
            f.evidence.push(probe(
                "dns",
                format!(
                    "{} udp for {}: A answered in {}, AAAA not answered within {}",
                    s.server,
                    r.query_name,
                    fmt_ms(a_ms),
                    fmt_ms(r.timeout_ms)
                ),
            ));
            f.evidence
                .push(probe("getaddrinfo", format!("{}: {gai_text}", r.name)));
            f
        })
        .collect()
}

/// Servers that answer A at once but AAAA only slowly, while getaddrinfo waited about that
/// long: glibc waits for both answers, so every lookup takes the AAAA answer's time. (Before,
/// the nameservers looked fast and the wait was blamed on the host's resolver path.)
fn aaaa_late(r: &DnsReport, th: &Thresholds) -> Vec<Finding> {
    let Some(gai_ms) = r
        .getaddrinfo
        .as_ref()
        .filter(|g| !g.timed_out)
        .and_then(|g| g.elapsed_ms)
    else {
        return Vec::new();
    };
    r.servers
        .iter()
        .filter_map(|s| s.aaaa_late_ms(th.dns_slow_ms).map(|ms| (s, ms)))
        // getaddrinfo did wait for it (not when the system skipped AAAA: AI_ADDRCONFIG).
        .filter(|&(_, ms)| gai_ms >= th.dns_slow_ms && gai_ms >= ms / 2.0)
        .map(|(s, aaaa_ms)| {
            let a_ms = s.udp.median_ms.unwrap_or(0.0);
            let mut f = Finding::new(
                FindingId::DnsSlow,
                Severity::Warning,
                Side::Network,
                format!(
                    "nameserver {} answers A in {} but AAAA only after {}: each getaddrinfo \
                     waits for the AAAA answer",
                    s.server,
                    fmt_ms(a_ms),
                    fmt_ms(aaaa_ms)
                ),
            );
            f.impact.added_latency_ms = Some(gai_ms);
            f.impact.affected_fraction = Some(1.0);
            f.explanation = format!(
                "getaddrinfo (AF_UNSPEC, what most programs call) sends the A and AAAA questions \
                 together and waits for both. This server answers A at once but took {} to \
                 answer AAAA (often a forwarder whose upstream is slow for AAAA, or a filtering \
                 or DNS64 resolver), so the lookup took {} although the A answer was there \
                 long before.",
                fmt_ms(aaaa_ms),
                fmt_ms(gai_ms)
            );
            f.fix = format!(
                "Find why the nameserver is slow to answer AAAA (`dig AAAA {}` against it; its \
                 upstream or its filtering) or use a resolver that answers both quickly; \
                 programs that only need IPv4 can ask with AF_INET.",
                r.query_name
            );
            f.evidence.push(probe(
                "dns",
                format!(
                    "{} udp for {}: A answered in {}, AAAA in {}",
                    s.server,
                    r.query_name,
                    fmt_ms(a_ms),
                    fmt_ms(aaaa_ms)
                ),
            ));
            f.evidence.push(probe(
                "getaddrinfo",
                format!("{} in {}", r.name, fmt_ms(gai_ms)),
            ));
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::fixtures::*;

    #[test]
    fn slow_server_is_found_with_its_median() {
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server("10.0.0.2", 0, vec![ok(301.0), ok(305.0), ok(299.0)])],
            None,
        );
        let f = dns_slow(&r, &Thresholds::default());
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("median 301 ms"), "{}", f[0].summary);
        assert_eq!(f[0].impact.added_latency_ms, Some(301.0));
    }

    #[test]
    fn lossy_server_costs_timeouts() {
        let r = report(
            "nameserver 10.0.0.2\noptions timeout:5\n",
            vec![server(
                "10.0.0.2",
                0,
                vec![ok(2.0), lost(), ok(2.0), ok(2.1)],
            )],
            None,
        );
        let f = dns_slow(&r, &Thresholds::default());
        assert!(f[0].summary.contains("1 of 4 queries lost"));
        assert_eq!(f[0].impact.added_latency_ms, Some(1250.0));
        assert!(
            f[0].evidence[0].clone()
                == probe(
                    "dns",
                    "10.0.0.2 udp for api.test.: 2.0 ms, lost, 2.0 ms, 2.1 ms"
                )
        );
    }

    #[test]
    fn fast_servers_and_fast_getaddrinfo_are_fine_but_slow_getaddrinfo_is_not() {
        let fast = vec![server("10.0.0.2", 0, vec![ok(1.0), ok(1.1)])];
        let r = report(
            "nameserver 10.0.0.2\n",
            fast.clone(),
            Some(gai(Some(3.0), &["10.0.0.5"], None)),
        );
        assert!(dns_slow(&r, &Thresholds::default()).is_empty());
        let r = report(
            "nameserver 10.0.0.2\n",
            fast,
            Some(gai(Some(5003.0), &["10.0.0.5"], None)),
        );
        let f = dns_slow(&r, &Thresholds::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].side, Side::Host);
    }

    #[test]
    fn a_server_that_answered_getaddrinfo_but_not_our_tries_is_slow_or_uneven_by_its_time() {
        let told = |gai_ms: f64| {
            let r = report(
                "nameserver 10.0.0.2\n",
                vec![server("10.0.0.2", 0, vec![lost(), lost()])],
                Some(gai(Some(gai_ms), &["10.0.0.5"], None)),
            );
            let f = dns_slow(&r, &Thresholds::default());
            assert_eq!(f.len(), 1, "{f:?}");
            assert_eq!(f[0].severity, Severity::Warning);
            f.into_iter().next().unwrap()
        };
        // Later than the tries' 2000 ms deadline: slow, with its time.
        let f = told(2004.0);
        assert!(
            f.summary.contains("answered getaddrinfo after 2004 ms"),
            "{}",
            f.summary
        );
        assert_eq!(f.impact.added_latency_ms, Some(2004.0));
        // Within it: not slow (before: "slower than the 2000 ms" after 17.7 ms) but uneven.
        let f = told(17.7);
        let uneven = "answers some queries and not others: it answered getaddrinfo in 17.7 ms";
        assert!(f.summary.contains(uneven), "{}", f.summary);
        assert!(!f.summary.contains("slow"), "{}", f.summary);
        assert!(!f.explanation.contains("slower"), "{}", f.explanation);
    }

    #[test]
    fn a_dead_first_server_explains_the_lookups_wait_but_not_more() {
        let servers = || {
            vec![
                server("10.0.0.9", 0, vec![lost(), lost()]),
                server("10.0.0.2", 1, vec![ok(0.4), ok(7.6)]),
            ]
        };
        let rc = "nameserver 10.0.0.9\nnameserver 10.0.0.2\noptions timeout:1\n";
        let r = report(rc, servers(), Some(gai(Some(1003.0), &["10.0.0.5"], None)));
        assert!(dns_slow(&r, &Thresholds::default()).is_empty());
        // 2.5 s: 1.5 s more than the dead server costs.
        let r = report(rc, servers(), Some(gai(Some(2503.0), &["10.0.0.5"], None)));
        assert_eq!(dns_slow(&r, &Thresholds::default()).len(), 1);
    }

    #[test]
    fn unanswered_aaaa_is_named_when_getaddrinfo_stalls() {
        let mut s = server("10.0.0.2", 0, vec![ok(0.7), ok(16.5)]);
        s.aaaa = Some(lost());
        let stalled = || Some(gai(None, &[], Some("no result after 12000 ms")));
        let r = report("nameserver 10.0.0.2\n", vec![s.clone()], stalled());
        let f = dns_slow(&r, &Thresholds::default());
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].summary.contains("never AAAA"), "{}", f[0].summary);
        assert_eq!(f[0].impact.added_latency_ms, Some(5000.0));
        // Fast getaddrinfo (AAAA not asked by the system, e.g. AI_ADDRCONFIG): no story.
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![s],
            Some(gai(Some(3.0), &["10.0.0.5"], None)),
        );
        assert!(dns_slow(&r, &Thresholds::default()).is_empty());
        // AAAA answered, getaddrinfo still stuck: the lookup itself is told, not AAAA.
        let mut s = server("10.0.0.2", 0, vec![ok(0.7)]);
        s.aaaa = Some(ok(0.8));
        let r = report("nameserver 10.0.0.2\n", vec![s], stalled());
        let f = dns_slow(&r, &Thresholds::default());
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("gave no answer"), "{}", f[0].summary);
    }

    #[test]
    fn a_slow_aaaa_answer_is_named_not_the_hosts_resolver_path() {
        // What dns_slow tells of a server answering A in about 1 ms and AAAA in `aaaa_ms`,
        // when getaddrinfo took `gai_ms`.
        let told = |aaaa_ms: f64, gai_ms: f64| {
            let mut s = server("10.0.0.2", 0, vec![ok(1.0), ok(1.2)]);
            s.aaaa = Some(ok(aaaa_ms));
            let g = Some(gai(Some(gai_ms), &["10.0.0.5"], None));
            dns_slow(
                &report("nameserver 10.0.0.2\n", vec![s], g),
                &Thresholds::default(),
            )
        };
        let f = told(1501.0, 1504.0);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].side, Side::Network);
        assert!(
            f[0].summary.contains("AAAA only after 1501 ms"),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].impact.added_latency_ms, Some(1504.0));
        // getaddrinfo did not wait for AAAA (AI_ADDRCONFIG): nothing.
        assert!(told(1501.0, 2.0).is_empty());
        // AAAA quick, getaddrinfo slow: the host's path, as before.
        let f = told(1.1, 1504.0);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].side, Side::Host);
    }

    #[test]
    fn dead_server_is_not_slow() {
        let r = report(
            "nameserver 10.0.0.2\n",
            vec![server("10.0.0.2", 0, vec![lost(), lost()])],
            None,
        );
        assert!(dns_slow(&r, &Thresholds::default()).is_empty());
    }
}

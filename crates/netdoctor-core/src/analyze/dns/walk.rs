//! The search list's walk in a capture: a client's lookups of `name.suffix` answered NXDOMAIN,
//! then `name` answered. glibc's resolver does that when the name has fewer dots than
//! `ndots` (Kubernetes pods: `ndots:5` and three cluster suffixes). Its cost is the client's
//! resolver configuration, told as `dns_slow` side client the way `netdoctor dns` tells it
//! (probe `dns_search_list`, whose zh text reads "N of M names" from the note); the
//! NXDOMAIN answers of the walk are not `dns_name_not_found`.

use std::collections::HashSet;

use super::{Lookup, Msg};
use crate::finding::{Evidence, Finding, FindingId, PacketRef, Severity, Side};

/// How long before the answered name a suffixed name still belongs to its walk.
const WALK_NS: i64 = 10_000_000_000;
/// A walk costing this much is a warning (`netdoctor dns`'s slow threshold), else info.
const SLOW_MS: f64 = 100.0;

/// One walk: the answered lookup and the NXDOMAIN lookups before it (indices).
pub(super) struct Walk {
    answered: usize,
    steps: Vec<usize>,
}

/// The walks among `lookups`, each answered (client address, name) once.
pub(super) fn walks(lookups: &[Lookup]) -> Vec<Walk> {
    let mut out: Vec<Walk> = Vec::new();
    let mut told = HashSet::new();
    for (i, m) in lookups.iter().enumerate() {
        if !matches!(m.answer, Some((_, 0))) {
            continue;
        }
        let start = m.queries[0].ts;
        let prefix = format!("{}.", m.key.name);
        let steps: Vec<usize> = lookups
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                matches!(l.answer, Some((a, 3)) if a.ts <= start)
                    && l.key.client == m.key.client
                    && l.key.name.starts_with(&prefix)
                    && start - l.queries[0].ts <= WALK_NS
            })
            .map(|(j, _)| j)
            .collect();
        if steps.is_empty() || !told.insert((m.key.client, m.key.name.clone())) {
            continue;
        }
        out.push(Walk { answered: i, steps });
    }
    out
}

/// The lookups that are steps of a walk.
pub(super) fn walked(walks: &[Walk]) -> HashSet<usize> {
    walks.iter().flat_map(|w| w.steps.iter().copied()).collect()
}

/// A walk as `dns_slow` side client.
pub(super) fn tell(
    w: &Walk,
    lookups: &[Lookup],
    pref: &dyn Fn(&Msg, &str, String) -> PacketRef,
) -> Finding {
    let m = &lookups[w.answered];
    let Some((answer, _)) = m.answer else {
        unreachable!("a walk ends with an answered lookup")
    };
    let steps: Vec<&Lookup> = w.steps.iter().map(|&j| &lookups[j]).collect();
    let first = steps
        .iter()
        .map(|l| l.queries[0].ts)
        .min()
        .unwrap_or(m.queries[0].ts);
    let mut names: Vec<&str> = steps.iter().map(|l| l.key.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let n = names.len();
    let ms = |ns: i64| ns as f64 / 1e6;
    let wasted = ms(m.queries[0].ts - first);
    let total = ms(answer.ts - first);
    let each = wasted / n as f64;
    let fmt = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0} ms")
        } else {
            format!("{v:.1} ms")
        }
    };
    let mut f = Finding::new(
        FindingId::DnsSlow,
        if wasted >= SLOW_MS {
            Severity::Warning
        } else {
            Severity::Info
        },
        Side::Client,
        format!(
            "{}: {n} name{} tried before the one that answered (each NXDOMAIN, {} each): {} of \
             the {} lookup",
            m.key.name,
            if n == 1 { "" } else { "s" },
            fmt(each),
            fmt(wasted),
            fmt(total)
        ),
    );
    f.impact.added_latency_ms = Some(wasted);
    f.impact.affected_fraction = Some(1.0);
    f.explanation = format!(
        "The client's resolver first appended its search domains to {} and asked the nameserver \
         for each of those names ({}), which do not exist, before it asked the name as written: \
         the resolver's search list with `ndots` (the name has fewer dots than ndots). Each \
         costs a round trip to the nameserver; every new connection that resolves the name \
         pays {} before the answer. The nameserver is not slow; the client's resolver \
         configuration makes it ask {} names.",
        m.key.name,
        names.join(", "),
        fmt(wasted),
        n + 1
    );
    f.fix = format!(
        "Write the name fully qualified with a trailing dot ({}.) in the client's \
         configuration, so the search list is skipped; or lower ndots: `options ndots:1` in \
         the client's resolv.conf (in Kubernetes, `dnsConfig.options: [{{name: ndots, value: \
         \"1\"}}]` in the pod spec); or run a node-local DNS cache so the NXDOMAIN answers come \
         from the node. Check with `netdoctor dns {}.`.",
        m.key.name, m.key.name
    );
    f.evidence.push(Evidence::Probe {
        probe: "dns_search_list".to_string(),
        note: format!(
            "{n} of {} names asked at {} were NXDOMAIN before {} answered: {} of the {} lookup",
            n + 1,
            answer.server.ip(),
            m.key.name,
            fmt(wasted),
            fmt(total)
        ),
    });
    let mut packets: Vec<PacketRef> = steps
        .iter()
        .flat_map(|l| {
            let q = pref(
                &l.queries[0],
                "C→S",
                format!("query {} {}", l.key.qtype, l.key.name),
            );
            let a = l
                .answer
                .map(|(a, _)| pref(&a, "S→C", format!("NXDOMAIN {}", l.key.name)));
            std::iter::once(q).chain(a)
        })
        .collect();
    packets.push(pref(
        &m.queries[0],
        "C→S",
        format!("query {} {}", m.key.qtype, m.key.name),
    ));
    packets.push(pref(&answer, "S→C", format!("NOERROR {}", m.key.name)));
    packets.sort_by_key(|p| p.frame);
    packets.truncate(16);
    f.evidence.push(Evidence::Packets {
        connection: format!("{} → {}", m.key.client, answer.server.ip()),
        packets,
        note: format!("the walk: {} then {}", names.join(", "), m.key.name),
    });
    f
}

//! `dns_slow` told of the search list: the name answered only after resolv.conf's search list
//! (with `ndots`) sent the lookup through names that do not exist, each a round trip (A and
//! AAAA) to the nameserver. The Kubernetes pod's `ndots:5` with three cluster suffixes makes
//! every external name pay three NXDOMAIN round trips first. The cost is the client's
//! resolver configuration, not the nameserver's speed: the side is the client.
//!
//! Look-alikes that stay silent here: a name with `ndots` dots or more (asked as written
//! first), a name whose first suffix answers (an internal service), a name no form of which
//! answers (`dns_name_not_found`, or `dns_server_error` for SERVFAIL).

use super::{Thresholds, fmt_ms, probe};
use crate::dns::DnsReport;
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

/// The probe name of the finding's first evidence (its zh text is told by it).
pub const PROBE: &str = "dns_search_list";

pub fn dns_search_list(r: &DnsReport, th: &Thresholds) -> Vec<Finding> {
    let Some(w) = &r.search else {
        return Vec::new();
    };
    let Some(at) = w.answered_at().filter(|&i| i > 0) else {
        return Vec::new();
    };
    let before = w.before_answer();
    let n = before.len();
    let wasted = w.wasted_ms();
    let answered = &w.steps[at];
    // The lookup as the system resolver timed it, when it found the name; else the walk's sum.
    let total = r
        .getaddrinfo
        .as_ref()
        .filter(|g| g.error.is_none() && !g.timed_out)
        .and_then(|g| g.elapsed_ms)
        .filter(|&ms| ms >= wasted)
        .unwrap_or_else(|| w.total_ms());
    let mut fates: Vec<&str> = before.iter().map(|s| s.fate.word()).collect();
    fates.dedup();
    let each = wasted / n as f64;
    let rc = &r.resolver.resolv_conf;
    let severity = if wasted >= th.dns_slow_ms {
        Severity::Warning
    } else {
        Severity::Info
    };
    let mut f = Finding::new(
        FindingId::DnsSlow,
        severity,
        Side::Client,
        format!(
            "{}: {n} name{} tried before the one that answered (each {}, {} each): {} of the \
             {} lookup",
            r.name,
            if n == 1 { "" } else { "s" },
            fates.join(" or "),
            fmt_ms(each),
            fmt_ms(wasted),
            fmt_ms(total)
        ),
    );
    f.impact.added_latency_ms = Some(wasted);
    f.impact.affected_fraction = Some(1.0);
    f.explanation = format!(
        "{} has {} dot{}, fewer than `ndots:{}` in {}, so the resolver first appends each search \
         domain ({}) and asks the nameserver for every one of those names, A and AAAA, before \
         it asks {} as written. Each of those names does not exist, and each costs a round \
         trip to the nameserver ({} at {}): every new connection that resolves the name pays \
         {} before the answer. The nameserver is not slow; the client's resolver \
         configuration makes it ask {} times.",
        r.name,
        r.name.matches('.').count(),
        if r.name.matches('.').count() == 1 {
            ""
        } else {
            "s"
        },
        rc.ndots,
        rc.path.display(),
        rc.search.join(" "),
        answered.name,
        fmt_ms(each),
        w.server,
        fmt_ms(wasted),
        at + 1
    );
    f.fix = format!(
        "Write the name fully qualified with a trailing dot ({}.) in the client's \
         configuration, so the search list is skipped; or lower ndots: `options ndots:1` in {} \
         (in Kubernetes, `dnsConfig.options: [{{name: ndots, value: \"1\"}}]` in the pod spec); \
         or run a node-local DNS cache so the NXDOMAIN answers come from the node. Check with \
         `netdoctor dns {}.`.",
        answered.name,
        rc.path.display(),
        answered.name
    );
    f.evidence.push(probe(
        PROBE,
        format!(
            "{n} of {} names asked at {} were {} before {} answered: {} of the {} lookup",
            w.steps.len(),
            w.server,
            fates.join(" or "),
            answered.name,
            fmt_ms(wasted),
            fmt_ms(total)
        ),
    ));
    let steps: Vec<String> = w
        .steps
        .iter()
        .map(|s| {
            format!(
                "{} {} {}",
                s.name,
                s.fate.word(),
                s.elapsed_ms().map_or("-".to_string(), fmt_ms)
            )
        })
        .collect();
    f.evidence.push(probe("dns", steps.join(", ")));
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::search::{SearchStep, SearchWalk};
    use crate::findings::fixtures::*;

    const POD: &str = "nameserver 10.0.0.2\nsearch ns.svc.cluster.local svc.cluster.local \
                       cluster.local\noptions ndots:5\n";

    /// A walk of `order` where the names before `answer_at` say NXDOMAIN after `ms`.
    fn walked(order: &[&str], answer_at: Option<usize>, ms: f64) -> SearchWalk {
        let steps = order
            .iter()
            .enumerate()
            .take(answer_at.map_or(order.len(), |a| a + 1))
            .map(|(i, n)| {
                let t = if Some(i) == answer_at {
                    said("No Error", &["A 10.0.0.5"], ms)
                } else {
                    said("Non-Existent Domain", &[], ms)
                };
                SearchStep::new(n.to_string(), t, Some(said("Non-Existent Domain", &[], ms)))
            })
            .collect();
        SearchWalk {
            server: "10.0.0.2".parse().unwrap(),
            order: order.iter().map(|s| s.to_string()).collect(),
            steps,
        }
    }

    fn pod_report(answer_at: Option<usize>, ms: f64, gai_ms: Option<f64>) -> DnsReport {
        let mut r = report(
            POD,
            vec![server("10.0.0.2", 0, vec![ok(ms)])],
            gai_ms.map(|g| gai(Some(g), &["10.0.0.5"], None)),
        );
        r.name = "api.example.com".into();
        let order = r.resolver.resolv_conf.search_order(&r.name);
        let order: Vec<&str> = order.iter().map(String::as_str).collect();
        r.search = Some(walked(&order, answer_at, ms));
        r
    }

    #[test]
    fn three_suffixes_before_the_name_as_written_are_told_with_their_cost() {
        let r = pod_report(Some(3), 300.0, Some(1211.0));
        let f = dns_search_list(&r, &Thresholds::default());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].side, f[0].severity),
            (Side::Client, Severity::Warning)
        );
        assert_eq!(
            f[0].summary,
            "api.example.com: 3 names tried before the one that answered (each NXDOMAIN, \
             300 ms each): 900 ms of the 1211 ms lookup"
        );
        assert_eq!(f[0].impact.added_latency_ms, Some(900.0));
        assert!(f[0].fix.contains("ndots:1"), "{}", f[0].fix);
        assert!(f[0].fix.contains("api.example.com."), "{}", f[0].fix);
        // A fast cluster nameserver: still said, as information.
        let r = pod_report(Some(3), 0.5, Some(2.1));
        let f = dns_search_list(&r, &Thresholds::default());
        assert_eq!(f[0].severity, Severity::Info);
    }

    #[test]
    fn look_alikes_are_silent() {
        // The first suffix answers (an internal service name).
        let r = pod_report(Some(0), 300.0, Some(301.0));
        assert!(dns_search_list(&r, &Thresholds::default()).is_empty());
        // No form answers: a missing name, not a search-list cost.
        let r = pod_report(None, 300.0, None);
        assert!(dns_search_list(&r, &Thresholds::default()).is_empty());
        // No walk (one form only).
        let mut r = pod_report(Some(3), 300.0, Some(1211.0));
        r.search = None;
        assert!(dns_search_list(&r, &Thresholds::default()).is_empty());
    }

    #[test]
    fn the_search_lists_time_is_not_told_again_as_a_slow_getaddrinfo() {
        // The nameserver answers the direct tries fast; the lookup took 1211 ms, 900 of them
        // on the three suffixes: the 311 ms left are under getaddrinfo's threshold.
        let mut r = pod_report(Some(3), 300.0, Some(1211.0));
        r.servers = vec![server("10.0.0.2", 0, vec![ok(1.0), ok(1.2)])];
        let slow = crate::findings::dns_slow(&r, &Thresholds::default());
        assert!(slow.is_empty(), "{slow:?}");
        // Without the walk the same lookup is a slow getaddrinfo on the host's side.
        r.search = None;
        let slow = crate::findings::dns_slow(&r, &Thresholds::default());
        assert_eq!(slow.len(), 1, "{slow:?}");
        assert_eq!(slow[0].side, Side::Host);
    }
}

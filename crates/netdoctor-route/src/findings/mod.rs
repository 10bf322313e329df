//! Findings drawn from DNS and trace results: pure functions over the result structs, one file
//! each, with unit tests on recorded-shape data (the lab tests run them on real results). The
//! lead wraps them as detectors once the core's `Detector` trait lands.

mod dns_name_not_found;
mod dns_no_nameserver;
mod dns_search_list;
mod dns_server_error;
mod dns_server_unreachable;
mod dns_slow;
mod high_base_rtt;
mod reverse_dns_timeout;
mod route_problem;

pub use dns_name_not_found::dns_name_not_found;
pub use dns_no_nameserver::dns_no_nameserver;
pub use dns_search_list::dns_search_list;
pub use dns_server_error::dns_server_error;
pub use dns_server_unreachable::dns_server_unreachable;
pub use dns_slow::dns_slow;
pub use high_base_rtt::{RttSource, high_base_rtt, high_base_rtt_from};
pub use reverse_dns_timeout::reverse_dns_timeout;
pub use route_problem::route_problem;

use crate::dns::DnsReport;
use crate::trace::TraceResult;
use netdoctor_core::finding::{Evidence, Finding};

/// Thresholds of the DNS and route findings.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// A nameserver whose median answer takes this long is slow.
    pub dns_slow_ms: f64,
    /// A getaddrinfo that takes this long is slow.
    pub getaddrinfo_slow_ms: f64,
    /// A reverse lookup that takes this long (without timing out) counts as a timeout too:
    /// glibc's per-try timeout is at least 1 s.
    pub reverse_slow_ms: f64,
    /// The destination's best RTT from which the path itself is called slow.
    pub base_rtt_ms: f64,
    /// Added latency at one hop from which it is a route problem.
    pub route_added_ms: f64,
    /// Hop assessment thresholds.
    pub hops: crate::trace::assess::Thresholds,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            dns_slow_ms: 100.0,
            getaddrinfo_slow_ms: 1000.0,
            reverse_slow_ms: 1000.0,
            base_rtt_ms: 20.0,
            route_added_ms: 10.0,
            hops: Default::default(),
        }
    }
}

/// Every DNS finding for one `netdoctor dns` run.
pub fn dns_findings(r: &DnsReport, th: &Thresholds) -> Vec<Finding> {
    let mut v = dns_no_nameserver(r);
    v.extend(dns_server_unreachable(r));
    v.extend(dns_server_error(r));
    v.extend(dns_slow(r, th));
    v.extend(dns_search_list(r, th));
    v.extend(reverse_dns_timeout(r, th));
    v.extend(dns_name_not_found(r));
    v
}

/// Every route finding for one trace; `request_ms` is the request latency to compare the base
/// RTT with, when the caller measured one.
pub fn trace_findings(t: &TraceResult, request_ms: Option<f64>, th: &Thresholds) -> Vec<Finding> {
    let mut v = route_problem(t, th);
    v.extend(high_base_rtt(t, request_ms, th));
    v
}

pub(crate) fn probe(probe: &str, note: impl Into<String>) -> Evidence {
    Evidence::Probe {
        probe: probe.to_string(),
        note: note.into(),
    }
}

pub(crate) fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.1} ms")
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    use crate::dns::config::parse_resolv_conf;
    use crate::dns::query::{Outcome, Transport, Try};
    use crate::dns::{DnsReport, ResolverPath, ServerTiming, TransportTiming};
    use crate::names::SystemLookup;
    use std::path::Path;

    /// An answer with `rcode` and `answers` after `ms`.
    pub fn said(rcode: &str, answers: &[&str], ms: f64) -> Try {
        Try {
            elapsed_ms: Some(ms),
            outcome: Outcome::Answer {
                rcode: rcode.into(),
                answers: answers.iter().map(|a| a.to_string()).collect(),
                truncated: false,
            },
        }
    }
    pub fn ok(ms: f64) -> Try {
        Try {
            elapsed_ms: Some(ms),
            outcome: Outcome::Answer {
                rcode: "No Error".into(),
                answers: vec!["A 10.0.0.5".into()],
                truncated: false,
            },
        }
    }
    pub fn lost() -> Try {
        Try {
            elapsed_ms: None,
            outcome: Outcome::Timeout,
        }
    }
    pub fn refused() -> Try {
        Try {
            elapsed_ms: Some(0.1),
            outcome: Outcome::Error {
                error: "receive from 10.0.0.2:53: refused (nothing listens on port 53)".into(),
            },
        }
    }
    pub fn server(ip: &str, position: usize, udp: Vec<Try>) -> ServerTiming {
        ServerTiming {
            server: ip.parse().unwrap(),
            position,
            udp: TransportTiming::from_tries(Transport::Udp, udp),
            tcp: None,
            aaaa: None,
        }
    }
    pub fn gai(ms: Option<f64>, results: &[&str], error: Option<&str>) -> SystemLookup {
        SystemLookup {
            elapsed_ms: ms,
            timed_out: ms.is_none(),
            results: results.iter().map(|s| s.to_string()).collect(),
            error: error.map(|e| e.to_string()),
        }
    }
    pub fn report(resolv: &str, servers: Vec<ServerTiming>, g: Option<SystemLookup>) -> DnsReport {
        DnsReport {
            name: "api.test".into(),
            query_name: "api.test.".into(),
            record_type: "A".into(),
            resolver: ResolverPath {
                nsswitch_path: "/etc/nsswitch.conf".into(),
                nsswitch_hosts: Some(vec!["files".into(), "dns".into()]),
                resolv_conf: parse_resolv_conf(Path::new("/etc/resolv.conf"), resolv),
                hosts_path: "/etc/hosts".into(),
                hosts_matches: vec![],
            },
            timeout_ms: 2000.0,
            tries: 3,
            getaddrinfo: g,
            servers,
            search: None,
            reverse: vec![],
            answered_without_dns: false,
            notes: vec![],
        }
    }
}

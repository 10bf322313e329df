//! The names in a diagnosis (issue 11): a target given by name is resolved through the DNS
//! checks first — the resolver's path, the getaddrinfo time and each nameserver asked
//! directly (`netdoctor-route`'s `dns`), through [`Host::dns`] so tests fake it — and their
//! findings (`dns_no_nameserver`, `dns_server_unreachable`, `dns_slow`) enter the report.
//!
//! A name that does not resolve is a diagnosis, not an error: [`resolve`] then returns the
//! whole report (verdict from the DNS findings, every other stage skipped with the reason),
//! so `--json` still prints a report and the exit code is the verdict's.
//!
//! Names under `.invalid` (RFC 6761) stay an error, and nothing is asked for them.
//!
//! The diagnosis asks each nameserver as the system resolver will: the tries and the deadline
//! of each come from resolv.conf (`options attempts:N timeout:N`, glibc's 2 × 5 s when absent),
//! capped at [`DNS_CAP`] per server and transport (the report notes the cap when it bites). The
//! servers are asked in parallel, so a dead one costs its tries × deadline once. It skips the
//! reverse (PTR) lookups (the request path does not make them), and asks no nameserver at all when the
//! system answers the name without DNS (`localhost`, an `/etc/hosts` entry read first).
//! The route half (the trace) is an observer: [`crate::observers::TraceObserver`].

use crate::host::Host;
use crate::plan::DiagnosePlan;
use crate::run::{DiagnoseError, Progress};
use netdoctor_core::Finding;
use netdoctor_core::verdict::VerdictInputs;
use netdoctor_report::{Check, CheckName, Report, ReportCommand, Target};
use netdoctor_route::dns::{DnsOptions, DnsReport};
use netdoctor_route::findings::{Thresholds, dns_findings};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// The most tries × deadline a diagnosis spends on one nameserver (glibc's default 2 × 5 s).
pub const DNS_CAP: Duration = Duration::from_secs(10);

/// What the DNS checks add to a report whose target resolved.
pub(crate) struct DnsPart {
    check: Check,
    measurement: Option<serde_json::Value>,
    findings: Vec<Finding>,
    /// The name's addresses after the one the run uses, in the resolver's order (looked at
    /// when that one fails the preflight: `crate::other_addrs`).
    pub(crate) others: Vec<SocketAddr>,
}

impl DnsPart {
    fn skipped(reason: impl Into<String>) -> DnsPart {
        DnsPart {
            check: Check::skipped(CheckName::Dns, reason),
            measurement: None,
            findings: Vec::new(),
            others: Vec::new(),
        }
    }

    /// Adds the check, the measurement and the findings to `report`.
    pub(crate) fn apply(self, report: &mut Report) {
        report.checks.push(self.check);
        report.measurements.dns = self.measurement;
        report.findings.extend(self.findings);
    }
}

/// The target's address, or the diagnosis of a name that does not resolve.
pub(crate) enum Resolved {
    Addr(SocketAddr, DnsPart),
    Diagnosis(Box<Report>),
}

/// The options of the DNS checks of a diagnosis for `name`.
pub fn dns_options(name: &str) -> DnsOptions {
    let mut o = DnsOptions::new(name);
    o.follow_resolv_conf = Some(DNS_CAP);
    o.reverse = false;
    o.skip_when_files_answer = true;
    o
}

/// Resolves the plan's target, running the DNS checks first when it is a name.
pub(crate) fn resolve(
    plan: &DiagnosePlan,
    host: &dyn Host,
    progress: &dyn Progress,
    started: Instant,
) -> Result<Resolved, DiagnoseError> {
    let t = &plan.target;
    let first = |addrs: Vec<SocketAddr>| {
        addrs
            .first()
            .copied()
            .ok_or_else(|| DiagnoseError::NoAddress(t.host.clone()))
    };
    if t.host.parse::<IpAddr>().is_ok() {
        let addr = first(host.resolve(&t.host, t.port)?)?;
        return Ok(Resolved::Addr(
            addr,
            DnsPart::skipped("the target is an IP address: no name to resolve"),
        ));
    }
    if is_invalid_tld(&t.host) {
        // RFC 6761 §6.4: such names never resolve; nobody is asked (tests use them too).
        return Err(DiagnoseError::Resolve(
            netdoctor_probe::ProbeError::Resolve {
                host: t.host.clone(),
                msg: "names under .invalid never resolve (RFC 6761); nothing was asked".into(),
            },
        ));
    }
    if !plan.dns {
        let addr = first(host.resolve(&t.host, t.port)?)?;
        return Ok(Resolved::Addr(addr, DnsPart::skipped("--no-dns was given")));
    }
    progress.stage(&format!(
        "resolving {}: the resolver's path, getaddrinfo and each nameserver",
        t.host
    ));
    let dns = host.dns(&dns_options(&t.host));
    let (mut check, measurement, findings, gai_failure) = match &dns {
        Err(e) => (
            Check::failed(CheckName::Dns, e.clone()),
            None,
            Vec::new(),
            None,
        ),
        Ok(r) => {
            let findings = if r.answered_without_dns {
                Vec::new()
            } else {
                dns_findings(r, &Thresholds::default())
            };
            (
                Check::ok_with(CheckName::Dns, summary(r)),
                serde_json::to_value(r).ok(),
                findings,
                gai_failure(r),
            )
        }
    };
    // The system lookup the checks timed already failed: asking again would only wait again.
    let reason = match gai_failure {
        Some(_) => format!(
            "{} did not resolve: {}",
            t.host,
            check.reason.unwrap_or_default()
        ),
        None => {
            let msg = match host.resolve(&t.host, t.port) {
                Ok(addrs) if !addrs.is_empty() => {
                    let mut others: Vec<SocketAddr> = Vec::new();
                    for a in &addrs[1..] {
                        if *a != addrs[0] && !others.contains(a) {
                            others.push(*a);
                        }
                    }
                    let part = DnsPart {
                        check,
                        measurement,
                        findings,
                        others,
                    };
                    return Ok(Resolved::Addr(addrs[0], part));
                }
                Ok(_) => "no addresses".to_string(),
                Err(netdoctor_probe::ProbeError::Resolve { msg, .. }) => msg,
                Err(e) => return Err(e.into()),
            };
            match check.reason {
                Some(r) if dns.is_ok() => format!("resolve {}: {msg}; {r}", t.host),
                _ => format!("resolve {}: {msg}", t.host),
            }
        }
    };
    check = Check::failed(CheckName::Dns, reason);
    Ok(Resolved::Diagnosis(Box::new(unresolved(
        plan,
        check,
        measurement,
        findings,
        started,
    ))))
}

/// A name under the reserved top-level domain `invalid`.
fn is_invalid_tld(name: &str) -> bool {
    let n = name.trim_end_matches('.').to_ascii_lowercase();
    n == "invalid" || n.ends_with(".invalid")
}

/// The getaddrinfo failure the DNS checks saw, if any.
fn gai_failure(r: &DnsReport) -> Option<String> {
    let g = r.getaddrinfo.as_ref()?;
    if g.timed_out {
        return Some("getaddrinfo did not finish".to_string());
    }
    g.error.clone()
}

/// One line for the `dns` check: what the system lookup took and what the servers did.
fn summary(r: &DnsReport) -> String {
    let mut parts = Vec::new();
    if let Some(g) = &r.getaddrinfo {
        match (&g.error, g.elapsed_ms) {
            (None, Some(ms)) => {
                parts.push(format!("getaddrinfo {ms:.1} ms → {}", g.results.join(", ")))
            }
            (Some(e), Some(ms)) => parts.push(format!("getaddrinfo failed after {ms:.0} ms: {e}")),
            (_, None) => parts.push(format!(
                "getaddrinfo did not finish within {} s",
                dns_options(&r.name).system_cap.as_secs()
            )),
        }
    }
    let answering = r.servers.iter().filter(|s| s.reachable()).count();
    if !r.servers.is_empty() {
        parts.push(format!(
            "{answering} of {} nameserver(s) answered",
            r.servers.len()
        ));
    }
    parts.extend(r.notes.iter().cloned());
    parts.join("; ")
}

/// The report of a name that did not resolve: the DNS findings are the diagnosis.
fn unresolved(
    plan: &DiagnosePlan,
    dns_check: Check,
    measurement: Option<serde_json::Value>,
    findings: Vec<Finding>,
    started: Instant,
) -> Report {
    let t = &plan.target;
    let mut report = Report::new(
        ReportCommand::Diagnose,
        Target {
            input: t.input.clone(),
            address: None,
            protocol: Some(t.protocol()),
        },
    );
    report.checks.push(dns_check);
    report.measurements.dns = measurement;
    report.findings = findings;
    let why = format!("{} did not resolve", t.host);
    for stage in [
        CheckName::Preflight,
        CheckName::SynProbe,
        CheckName::HttpProbe,
        CheckName::Trace,
        CheckName::Load,
        CheckName::Capture,
        CheckName::Counters,
    ] {
        report.checks.push(Check::skipped(stage, why.clone()));
    }
    report.decide(&VerdictInputs::default());
    report.elapsed_s = started.elapsed().as_secs_f64();
    report
}

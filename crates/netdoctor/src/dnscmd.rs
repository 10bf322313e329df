//! `netdoctor dns NAME`: the resolver's path, getaddrinfo, each nameserver over UDP and TCP,
//! the PTR lookups, and the DNS findings.

use crate::routeout::{self, ms};
use crate::target::parse_duration;
use anyhow::Context;
use clap::Args;
use netdoctor_route::dns::query::Outcome;
use netdoctor_route::dns::{self, DnsOptions, DnsReport, TransportTiming};
use netdoctor_route::findings::{Thresholds, dns_findings};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Args)]
pub struct DnsArgs {
    /// The name to resolve, e.g. api.example.com.
    pub name: String,
    /// Tries per nameserver and transport (loss is counted over these) [default: resolv.conf's
    /// `options attempts:`, glibc's 2 when absent; with --timeout: 3].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub tries: Option<u32>,
    /// Deadline of one direct try [default: resolv.conf's `options timeout:`, glibc's 5 s when
    /// absent, tries × deadline capped at 10 s; with --tries: 2s].
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Ask for AAAA instead of A.
    #[arg(short = '6', long)]
    pub ipv6: bool,
    /// Do not ask the nameservers over TCP.
    #[arg(long)]
    pub no_tcp: bool,
    /// Skip the reverse (PTR) lookups of the addresses found.
    #[arg(long)]
    pub no_reverse: bool,
    /// Read this resolv.conf instead of /etc/resolv.conf (getaddrinfo still uses the system's).
    #[arg(long, value_name = "FILE", default_value = "/etc/resolv.conf")]
    pub resolv_conf: PathBuf,
    #[command(flatten)]
    pub output: crate::cli::OutputArgs,
}

pub fn command(args: &DnsArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let started = Instant::now();
    let mut opts = DnsOptions::new(&args.name);
    match (args.tries, args.timeout) {
        // As the system resolver will ask (within the diagnosis's cap).
        (None, None) => opts.follow_resolv_conf = Some(netdoctor_diagnose::route::DNS_CAP),
        (tries, timeout) => {
            opts.tries = tries.unwrap_or(3);
            opts.timeout = timeout.unwrap_or(Duration::from_secs(2));
        }
    }
    opts.ipv6 = args.ipv6;
    opts.tcp = !args.no_tcp;
    opts.reverse = !args.no_reverse;
    opts.resolv_conf = args.resolv_conf.clone();
    if std::env::var_os("NETDOCTOR_QUIET").is_none() {
        match args.tries {
            Some(n) => eprintln!(
                "netdoctor dns {}: asking each nameserver {n} time(s)…",
                args.name
            ),
            None => eprintln!(
                "netdoctor dns {}: asking each nameserver as resolv.conf says (attempts, timeout)…",
                args.name
            ),
        }
    }
    let report = dns::run(&opts).with_context(|| format!("dns {}", args.name))?;
    let mut findings = dns_findings(&report, &Thresholds::default());
    let conclusive = !report.servers.is_empty() || report.getaddrinfo.is_some();
    let outcome = routeout::conclude(
        &mut findings,
        (!conclusive).then(|| "no nameserver was asked and getaddrinfo was not timed".to_string()),
    );
    let (verdict, code) = (outcome.verdict, outcome.verdict.exit_code());
    let format = args.output.format().map_err(anyhow::Error::msg)?;
    if format == netdoctor_report::Format::Json {
        let doc = routeout::envelope(
            routeout::Run {
                command: "dns",
                input: &args.name,
                address: None,
                verdict: &outcome,
                checks: report
                    .notes
                    .iter()
                    .map(|n| ("skipped", n.clone()))
                    .collect(),
                measurements: serde_json::json!({ "dns": report }),
                elapsed_s: started.elapsed().as_secs_f64(),
            },
            &findings,
        );
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
    } else {
        render(&report, out)?;
        routeout::write_findings(out, &findings, verdict)?;
    }
    out.flush()?;
    Ok(code)
}

fn transport_line(t: &TransportTiming) -> String {
    let mut s = format!(
        "{:<3} {}/{} answered  min {}  median {}  max {} ms",
        format!("{:?}", t.transport).to_lowercase(),
        t.answered,
        t.sent,
        ms(t.min_ms),
        ms(t.median_ms),
        ms(t.max_ms)
    );
    if t.timeouts() > 0 {
        s.push_str(&format!("  ({} timed out)", t.timeouts()));
    }
    if let Some(e) = t.first_error() {
        s.push_str(&format!("  ({e})"));
    }
    s
}

fn render(r: &DnsReport, out: &mut dyn Write) -> std::io::Result<()> {
    let rc = &r.resolver.resolv_conf;
    writeln!(
        out,
        "dns {} (asked as {} {})",
        r.name, r.query_name, r.record_type
    )?;
    writeln!(out, "\nresolver path")?;
    let ns = r
        .resolver
        .nsswitch_hosts
        .as_ref()
        .map_or("(no hosts line: glibc default)".to_string(), |v| {
            v.join(" ")
        });
    writeln!(out, "  {}  hosts: {ns}", r.resolver.nsswitch_path.display())?;
    let servers = if rc.nameservers.is_empty() {
        "no nameserver".to_string()
    } else {
        rc.nameservers
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    writeln!(
        out,
        "  {}{}  nameservers: {servers}; search: {}; ndots {} timeout {}s attempts {} rotate {}",
        rc.path.display(),
        if rc.exists { "" } else { " (missing)" },
        if rc.search.is_empty() {
            "-".to_string()
        } else {
            rc.search.join(" ")
        },
        rc.ndots,
        rc.timeout_s,
        rc.attempts,
        if rc.rotate { "on" } else { "off" }
    )?;
    let hosts = if r.resolver.hosts_matches.is_empty() {
        "no entry".to_string()
    } else {
        r.resolver
            .hosts_matches
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    writeln!(
        out,
        "  {}  {}: {hosts}",
        r.resolver.hosts_path.display(),
        r.name
    )?;
    if let Some(w) = &r.search {
        writeln!(
            out,
            "\nsearch list (ndots {}, {} dot(s) in the name), asked at {}",
            rc.ndots,
            r.name.matches('.').count(),
            w.server
        )?;
        for s in &w.steps {
            writeln!(
                out,
                "  {:<40} {:<9} {} ms",
                s.name,
                s.fate.word(),
                ms(s.elapsed_ms())
            )?;
        }
        let left = w.order.len() - w.steps.len();
        if left > 0 {
            writeln!(out, "  ({left} more name(s) in the order, not asked)")?;
        }
    }
    if let Some(g) = &r.getaddrinfo {
        let res = match &g.error {
            Some(e) => format!("failed: {e}"),
            None => format!("→ {}", g.results.join(", ")),
        };
        writeln!(out, "\ngetaddrinfo  {} ms  {res}", ms(g.elapsed_ms))?;
    }
    if !r.servers.is_empty() {
        writeln!(
            out,
            "\nnameservers (asked directly, timeout {} ms)",
            ms(Some(r.timeout_ms))
        )?;
    }
    for s in &r.servers {
        let answers = s.answers();
        writeln!(
            out,
            "  {:<16} {}",
            s.server.to_string(),
            transport_line(&s.udp)
        )?;
        if let Some(t) = &s.tcp {
            writeln!(out, "  {:<16} {}", "", transport_line(t))?;
        }
        if !answers.is_empty() {
            writeln!(out, "  {:<16} answer: {}", "", answers.join(", "))?;
        } else if let Some((rcode, tc)) = s.udp.tries.iter().find_map(|t| match &t.outcome {
            Outcome::Answer {
                rcode, truncated, ..
            } => Some((rcode, *truncated)),
            _ => None,
        }) {
            let tc = if tc { " (truncated: TC bit)" } else { "" };
            writeln!(out, "  {:<16} answer: {rcode}, no records{tc}", "")?;
        }
    }
    if !r.reverse.is_empty() {
        writeln!(out, "\nreverse (PTR)")?;
    }
    for rev in &r.reverse {
        let mut parts: Vec<String> = rev
            .direct
            .iter()
            .map(|(srv, t)| match &t.outcome {
                Outcome::Answer { answers, rcode, .. } => format!(
                    "at {srv}: {} ms {}",
                    ms(t.elapsed_ms),
                    if answers.is_empty() {
                        rcode.clone()
                    } else {
                        answers.join(", ")
                    }
                ),
                Outcome::Timeout => format!("at {srv}: timed out"),
                Outcome::Error { error } => format!("at {srv}: {error}"),
            })
            .collect();
        if let Some(g) = &rev.system {
            parts.push(match (&g.error, g.timed_out) {
                (_, true) => "getnameinfo: no result (timed out)".to_string(),
                (Some(e), _) => format!("getnameinfo: {} ms {e}", ms(g.elapsed_ms)),
                (None, _) => format!(
                    "getnameinfo: {} ms {}",
                    ms(g.elapsed_ms),
                    g.results.join(", ")
                ),
            });
        }
        writeln!(
            out,
            "  {:<16} {}",
            rev.address.to_string(),
            parts.join("; ")
        )?;
    }
    for n in &r.notes {
        writeln!(out, "\nnote: {n}")?;
    }
    Ok(())
}

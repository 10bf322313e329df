//! `netdoctor trace HOST`: TCP (default), UDP or ICMP traceroute in rounds, an mtr-like table
//! with each hop's assessment, and the route findings.

use crate::routeout::{self, ms};
use crate::target::parse_duration;
use anyhow::{Context, bail};
use clap::Args;
use netdoctor_route::findings::{Thresholds, trace_findings};
use netdoctor_route::scoped::{self, ScopedIp};
use netdoctor_route::trace::assess::{HopNote, assess};
use netdoctor_route::trace::{self, Protocol, TraceOptions, TraceResult};
use std::io::{IsTerminal, Write};
use std::net::{IpAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// Destination: an IPv4 or IPv6 address or a host name (its first address, unless -4/-6);
    /// a link-local IPv6 address with its interface: fe80::1%eth0 (or %INDEX).
    pub host: String,
    /// Trace the host name's IPv4 address.
    #[arg(short = '4', conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Trace the host name's IPv6 address.
    #[arg(short = '6')]
    pub ipv6: bool,
    /// TCP SYN probes (the default: many networks drop ICMP and UDP probes).
    #[arg(long, conflicts_with_all = ["udp", "icmp"])]
    pub tcp: bool,
    /// UDP probes (to port 33434 and up, as traceroute does, unless -p is given).
    #[arg(long, conflicts_with = "icmp")]
    pub udp: bool,
    /// ICMP echo probes (needs CAP_NET_RAW or net.ipv4.ping_group_range).
    #[arg(long)]
    pub icmp: bool,
    /// Destination port (TCP: default 80; UDP: a fixed port instead of 33434 + ttl - 1).
    #[arg(short = 'p', long)]
    pub port: Option<u16>,
    /// Do not resolve hop addresses to names.
    #[arg(short = 'n', long)]
    pub numeric: bool,
    /// Rounds of probes (one probe per hop per round).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Time between the starts of two rounds.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub interval: Duration,
    /// How long a round waits for answers.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Highest TTL probed.
    #[arg(short = 'm', long, default_value_t = 30, value_parser = clap::value_parser!(u8).range(1..=64))]
    pub max_ttl: u8,
    #[command(flatten)]
    pub output: crate::cli::OutputArgs,
}

/// The address to trace: `host` itself when it is an address (an IPv4-mapped one becomes
/// IPv4; a link-local one with its zone, `fe80::1%eth0`), else its first address of the
/// family asked for (`v4`/`v6`; either when both false).
fn resolve(host: &str, v4: bool, v6: bool) -> anyhow::Result<ScopedIp> {
    let wanted = |ip: &IpAddr| (!v4 || ip.is_ipv4()) && (!v6 || ip.is_ipv6());
    let family = if v4 {
        "IPv4 "
    } else if v6 {
        "IPv6 "
    } else {
        ""
    };
    let not_wanted = || anyhow::anyhow!("trace {host}: not an {family}address");
    if let Some(zoned) = scoped::parse_zoned(host).map_err(|e| anyhow::anyhow!("trace {e}"))? {
        if !wanted(&zoned.ip) {
            return Err(not_wanted());
        }
        return Ok(zoned);
    }
    let literal = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = literal.parse::<IpAddr>() {
        let ip = ip.to_canonical();
        if !wanted(&ip) {
            return Err(not_wanted());
        }
        if scoped::needs_scope(ip) {
            bail!("trace {host}: a link-local address needs its interface, e.g. {ip}%eth0");
        }
        return Ok(ScopedIp::plain(ip));
    }
    let addrs = (host, 0u16)
        .to_socket_addrs()
        .with_context(|| format!("resolve {host}"))?;
    addrs
        .map(|a| a.ip().to_canonical())
        .find(wanted)
        .map(ScopedIp::plain)
        .with_context(|| format!("resolve {host}: no {family}address"))
}

pub fn command(args: &TraceArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let started = Instant::now();
    let scoped = resolve(&args.host, args.ipv4, args.ipv6)?;
    let target = scoped.ip;
    let protocol = if args.udp {
        Protocol::Udp
    } else if args.icmp {
        Protocol::Icmp
    } else {
        Protocol::Tcp
    };
    if protocol == Protocol::Icmp && args.port.is_some() {
        bail!("trace: -p/--port does not apply to --icmp");
    }
    let mut opts = TraceOptions::new(target, protocol);
    opts.scope_id = scoped.scope_id;
    if let Some(p) = args.port {
        opts.port = p;
        opts.udp_fixed_port = true;
    }
    opts.rounds = args.rounds;
    opts.interval = args.interval;
    opts.timeout = args.timeout;
    opts.max_ttl = args.max_ttl;
    opts.names = !args.numeric;
    let quiet = std::env::var_os("NETDOCTOR_QUIET").is_some();
    let live = !quiet && std::io::stderr().is_terminal();
    if !quiet {
        eprintln!(
            "netdoctor trace {} ({}): {} rounds of {} probes…",
            args.host,
            scoped.to_text(),
            args.rounds,
            format!("{protocol:?}").to_lowercase()
        );
    }
    let result = trace::run(&opts, &mut |done, total| {
        if live {
            eprint!("\rround {done}/{total}");
            if done == total {
                eprintln!();
            }
        }
    })
    .with_context(|| format!("trace {}", args.host))?;
    let th = Thresholds::default();
    let mut findings = trace_findings(&result, None, &th);
    let outcome = routeout::conclude(
        &mut findings,
        (!result.reached).then(|| format!("{} did not answer", result.target_text())),
    );
    let (verdict, code) = (outcome.verdict, outcome.verdict.exit_code());
    let format = args.output.format().map_err(anyhow::Error::msg)?;
    if format == netdoctor_report::Format::Json {
        let assessment = assess(&result, &th.hops);
        let doc = routeout::envelope(
            routeout::Run {
                command: "trace",
                input: &args.host,
                address: Some(result.target_text()),
                verdict: &outcome,
                checks: result.notes.iter().map(|n| ("ok", n.clone())).collect(),
                measurements: serde_json::json!({ "trace": result, "hop_assessment": assessment }),
                elapsed_s: started.elapsed().as_secs_f64(),
            },
            &findings,
        );
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
    } else {
        render(&result, &th, out)?;
        routeout::write_findings(out, &findings, verdict)?;
    }
    out.flush()?;
    Ok(code)
}

fn note_text(n: &HopNote) -> String {
    match n {
        HopNote::AddsLatency {
            added_ms,
            added_spread_ms,
        } if *added_spread_ms > 0.0 => format!(
            "adds +{} ms (±{} ms)",
            ms(Some(*added_ms)),
            ms(Some(*added_spread_ms))
        ),
        HopNote::AddsLatency { added_ms, .. } => format!("adds +{} ms", ms(Some(*added_ms))),
        HopNote::AddsLoss { added_loss } => format!("adds {:.0}% loss", added_loss * 100.0),
        HopNote::IcmpRateLimited { own_loss } => format!(
            "rate-limits its ICMP ({:.0}% own loss, not on the path)",
            own_loss * 100.0
        ),
        HopNote::SlowIcmpReply { extra_ms } => {
            format!(
                "slow ICMP reply (+{} ms, not on the path)",
                ms(Some(*extra_ms))
            )
        }
        HopNote::Silent => "no reply".to_string(),
    }
}

fn render(r: &TraceResult, th: &Thresholds, out: &mut dyn Write) -> std::io::Result<()> {
    let port = r.port.map(|p| format!(" port {p}")).unwrap_or_default();
    writeln!(
        out,
        "trace to {} ({}{port}), {} rounds every {} ms; {}",
        r.target_text(),
        format!("{:?}", r.protocol).to_lowercase(),
        r.rounds,
        ms(Some(r.interval_ms)),
        r.method
    )?;
    writeln!(
        out,
        "{:>4}  {:<36} {:>6} {:>4} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6}  note",
        "hop", "address", "loss%", "snt", "last", "avg", "best", "wrst", "stdev", "jttr"
    )?;
    let assessed = assess(r, &th.hops);
    for (h, a) in r.hops.iter().zip(&assessed) {
        let addr = if h.addrs.is_empty() {
            "???".to_string()
        } else {
            h.addrs
                .iter()
                .map(|a| match &a.name {
                    Some(n) => format!("{n} ({})", a.scoped()),
                    None => a.scoped(),
                })
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let mut notes: Vec<String> = a.notes.iter().map(note_text).collect();
        if h.destination {
            notes.push("destination".to_string());
        }
        if let Some(code) = h.unreachable_code {
            notes.push(format!("unreachable (icmp code {code})"));
        }
        writeln!(
            out,
            "{:>4}  {:<36} {:>5.1}% {:>4} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6}  {}",
            h.ttl,
            addr,
            h.loss * 100.0,
            h.sent,
            ms(h.last_ms),
            ms(h.avg_ms),
            ms(h.best_ms),
            ms(h.worst_ms),
            ms(h.stdev_ms),
            ms(h.jitter_ms),
            notes.join("; ")
        )?;
    }
    for n in &r.notes {
        writeln!(out, "note: {n}")?;
    }
    Ok(())
}

//! `netdoctor host`: the machine's network health at a glance — listeners with their accept
//! queues, socket states, conntrack, the kernel counters and sysctls worth a look, interface
//! errors and recent kernel log lines — and with `--watch SECS`, per-interval rates like
//! `sar -n DEV 1` plus `nstat` (packets, bytes, retransmits, drops, listen overflows), and the
//! kernel's drops by reason from eBPF (`skb:kfree_skb`) when it can load.
//!
//! Everything is read from one network namespace (the caller's, or `--netns NAME`'s, joined by
//! a thread of its own). A collector that cannot run becomes a check with the reason (and the
//! capability that is missing); the rest is still shown.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use netdoctor_core::finding::Finding;
use netdoctor_observe::conntrack::{self, ConntrackUsage};
use netdoctor_observe::counters::{self, CounterSnapshot, meaning};
use netdoctor_observe::host_findings::{self, HostObservations, SysctlAdvice};
use netdoctor_observe::kmsg::{self, KmsgLine};
use netdoctor_observe::netdev::{self, NetDevStats};
use netdoctor_observe::sockdiag::{self, Listener, StateCounts};
use netdoctor_observe::sysctl::{self, Sysctls};

#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// Read this network namespace (a name from `ip netns list`) instead of the caller's.
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Print rates every INTERVAL (packets, bytes, retransmits, drops by reason), like
    /// `sar -n DEV 1` plus `nstat`: `1` (seconds), `500ms`, `5s`, `1m`; 0.1 s to 1 h.
    #[arg(long, value_name = "INTERVAL", value_parser = parse_interval)]
    pub watch: Option<Duration>,
    /// With --watch: stop after N intervals (default: until Ctrl-C).
    #[arg(long, value_name = "N", requires = "watch", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Kernel log lines from the last DURATION are shown: `600` (seconds), `5m`, `1h`.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::target::parse_duration)]
    pub log_window: Duration,
    /// `--json` / `--format json` (with --watch: one JSON object per line and interval).
    #[command(flatten)]
    pub output: crate::cli::OutputArgs,
}

/// `--watch`: a duration as every other flag takes it ([`crate::target::parse_duration`]),
/// from 0.1 s to 1 h.
fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = crate::target::parse_duration(s)?;
    if !(Duration::from_millis(100)..=Duration::from_secs(3600)).contains(&d) {
        return Err(format!("{s}: use 0.1 s to 1 h"));
    }
    Ok(d)
}

/// A collector that could not run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct HostCheck {
    pub name: &'static str,
    pub status: &'static str,
    pub reason: String,
}

/// One counter worth a look with its value since boot (or since the namespace was created).
#[derive(Debug, Clone, Serialize)]
pub struct CounterLine {
    pub name: String,
    pub value: u64,
    pub meaning: &'static str,
}

/// The JSON schema of [`HostSnapshot`] (`netdoctor.host/v1`), tested against real output.
pub const HOST_SCHEMA_JSON: &str = include_str!("../schema/host-v1.json");

/// What `netdoctor host` shows.
#[derive(Debug, Clone, Serialize)]
pub struct HostSnapshot {
    pub schema: &'static str,
    pub netns: Option<String>,
    pub listeners: Vec<Listener>,
    pub sockets: Option<StateCounts>,
    pub conntrack: Option<ConntrackUsage>,
    pub counters: Vec<CounterLine>,
    pub sysctls: Option<Sysctls>,
    pub interfaces: Vec<NetDevStats>,
    pub kernel_log: Vec<KmsgLine>,
    pub findings: Vec<Finding>,
    pub sysctl_advice: Vec<SysctlAdvice>,
    pub checks: Vec<HostCheck>,
}

fn failed(checks: &mut Vec<HostCheck>, name: &'static str, e: impl std::fmt::Display) {
    let reason = e.to_string();
    let status = if reason.contains("(needs ") || reason.contains("not available") {
        "skipped"
    } else {
        "failed"
    };
    checks.push(HostCheck {
        name,
        status,
        reason,
    });
}

/// Reads everything from the calling thread's namespace.
fn collect_here(log_window: Duration) -> HostSnapshot {
    let mut checks = Vec::new();
    let listeners = sockdiag::listeners()
        .map_err(|e| failed(&mut checks, "sock_diag", e))
        .unwrap_or_default();
    let sockets = sockdiag::state_counts()
        .map_err(|e| failed(&mut checks, "sock_diag", e))
        .ok();
    let conntrack = conntrack::read()
        .map_err(|e| failed(&mut checks, "conntrack", e))
        .ok();
    let snap = counters::snapshot()
        .map_err(|e| failed(&mut checks, "counters", e))
        .ok();
    let sysctls = sysctl::read()
        .map_err(|e| failed(&mut checks, "sysctl", e))
        .ok();
    let interfaces = netdev::read()
        .map_err(|e| failed(&mut checks, "interfaces", e))
        .unwrap_or_default();
    let since = kmsg::now_us().saturating_sub(log_window.as_micros() as u64);
    let kernel_log = kmsg::read_since(since)
        .map_err(|e| failed(&mut checks, "kernel_log", e))
        .unwrap_or_default();
    let counters = snap
        .map(|s| {
            s.values
                .iter()
                .filter(|(_, v)| **v > 0)
                .filter_map(|(n, v)| {
                    Some(CounterLine {
                        name: n.clone(),
                        value: *v,
                        meaning: meaning(n)?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    // Findings from the state of the moment (no run to compare against): many half-open
    // connections, a nearly full conntrack table, TIME_WAIT filling the port range, log lines.
    let obs = HostObservations {
        server_sockets: sockets.clone(),
        client_sockets: sockets.clone(),
        kmsg: kernel_log.clone(),
        conntrack_after: conntrack.clone(),
        server_sysctls: sysctls.clone(),
        client_sysctls: sysctls.clone(),
        ..Default::default()
    };
    let findings = host_findings::host_findings(&obs);
    let sysctl_advice = host_findings::sysctl_audit(&obs, &findings);
    HostSnapshot {
        schema: "netdoctor.host/v1",
        netns: None,
        listeners,
        sockets,
        conntrack,
        counters,
        sysctls,
        interfaces,
        kernel_log,
        findings,
        sysctl_advice,
        checks,
    }
}

/// Runs `f` in `netns` (on a thread that joined it) or here.
fn in_ns<T: Send>(netns: Option<&str>, f: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
    match netns {
        Some(name) => netdoctor_lab::in_netns(name, f)
            .with_context(|| format!("read network namespace {name}")),
        None => Ok(f()),
    }
}

/// `netdoctor host`: exit 0, or 1 when a finding above info stands out; `--watch` exits 0.
pub fn command(args: &HostArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    if let Some(every) = args.watch {
        return watch(args, every, out);
    }
    let window = args.log_window;
    let mut snap = in_ns(args.netns.as_deref(), || collect_here(window))?;
    snap.netns = args.netns.clone();
    if args.output.format().map_err(anyhow::Error::msg)? == netdoctor_report::Format::Json {
        serde_json::to_writer_pretty(&mut *out, &snap)?;
        writeln!(out)?;
    } else {
        render(&snap, out)?;
    }
    out.flush()?;
    // DESIGN's exit codes: 1 when something stands out above info, else 0.
    let problem = snap
        .findings
        .iter()
        .any(|f| f.severity > netdoctor_core::finding::Severity::Info);
    Ok(if problem { 1 } else { 0 })
}

fn render(s: &HostSnapshot, out: &mut dyn Write) -> std::io::Result<()> {
    let ns = s.netns.as_deref().unwrap_or("this process's");
    writeln!(out, "Host network health ({ns} network namespace)")?;
    writeln!(out, "\nListeners (accept queue / backlog):")?;
    if s.listeners.is_empty() {
        writeln!(out, "  none")?;
    }
    for l in &s.listeners {
        let flag = if l.is_full() {
            "  FULL: connections are being dropped"
        } else {
            ""
        };
        writeln!(
            out,
            "  {:<40} {:>6} / {:<6}{flag}",
            l.local.to_string(),
            l.accept_queue,
            l.backlog
        )?;
    }
    if let Some(c) = &s.sockets {
        writeln!(
            out,
            "\nTCP sockets: {} established, {} syn-recv, {} time-wait, {} close-wait, {} fin-wait, {} syn-sent",
            c.established, c.syn_recv, c.time_wait, c.close_wait, c.fin_wait, c.syn_sent
        )?;
        if let Some((remote, n)) = c.time_wait_by_remote.first()
            && *n > 1
        {
            writeln!(out, "  most TIME_WAIT toward one server: {n} to {remote}")?;
        }
    }
    match &s.conntrack {
        Some(c) => writeln!(
            out,
            "\nconntrack: {} of {} entries ({:.1}%), {} drops, {} early drops",
            c.count,
            c.max,
            c.fill() * 100.0,
            c.stat("drop"),
            c.stat("early_drop")
        )?,
        None => writeln!(out, "\nconntrack: not available")?,
    }
    if !s.counters.is_empty() {
        writeln!(
            out,
            "\nCounters worth a look (since boot or namespace creation):"
        )?;
        for c in &s.counters {
            writeln!(out, "  {:<30} {:>12}  {}", c.name, c.value, c.meaning)?;
        }
    }
    if let Some(sys) = &s.sysctls {
        writeln!(out, "\nSysctls:")?;
        for (name, value) in sys.entries() {
            writeln!(out, "  {name:<34} {value}")?;
        }
    }
    let bad: Vec<&NetDevStats> = s
        .interfaces
        .iter()
        .filter(|d| d.errors().iter().any(|(_, v)| *v > 0))
        .collect();
    writeln!(
        out,
        "\nInterfaces: {} ({} with errors or drops)",
        s.interfaces.len(),
        bad.len()
    )?;
    for d in bad {
        let errs: Vec<String> = d
            .errors()
            .iter()
            .filter(|(_, v)| *v > 0)
            .map(|(n, v)| format!("{n} {v}"))
            .collect();
        writeln!(out, "  {:<16} {}", d.name, errs.join(", "))?;
    }
    if !s.kernel_log.is_empty() {
        writeln!(
            out,
            "\nKernel log (machine-wide: lines may concern other namespaces):"
        )?;
        for l in s.kernel_log.iter().rev().take(10) {
            writeln!(out, "  [{:.3}] {}", l.at_us as f64 / 1e6, l.text)?;
        }
    }
    if !s.findings.is_empty() {
        writeln!(out, "\nWhat stands out:")?;
        for f in &s.findings {
            writeln!(out, "  {:?} {}: {}", f.severity, f.id, f.summary)?;
            writeln!(out, "    fix: {}", f.fix)?;
        }
        for a in &s.sysctl_advice {
            writeln!(out, "    {} = {}: {}", a.name, a.value, a.note)?;
        }
    }
    for c in &s.checks {
        writeln!(out, "\n{} {}: {}", c.status, c.name, c.reason)?;
    }
    Ok(())
}

/// One interval of `--watch`.
#[derive(Debug, Clone, Serialize)]
pub struct WatchLine {
    pub seconds: f64,
    pub interfaces: Vec<IfaceRate>,
    /// Per-second rates of the TCP counters that matter.
    pub tcp: Vec<(String, f64)>,
    /// Per-second kernel drops by reason (eBPF on skb:kfree_skb), busiest first; absent when
    /// the eBPF observer could not run (see `drop_reasons_skipped`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drops_by_reason: Option<Vec<(String, f64)>>,
    /// Why drop reasons are not shown (on the first line only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drop_reasons_skipped: Option<String>,
}

fn drop_totals(s: &netdoctor_bpf::BpfSummary) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for d in &s.drops {
        *m.entry(d.reason.clone()).or_insert(0) += d.count;
    }
    m
}

fn drop_rates(
    before: &std::collections::BTreeMap<String, u64>,
    after: &std::collections::BTreeMap<String, u64>,
    secs: f64,
) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = after
        .iter()
        .map(|(r, a)| {
            (
                r.clone(),
                a.saturating_sub(*before.get(r).unwrap_or(&0)) as f64 / secs,
            )
        })
        .filter(|(_, rate)| *rate > 0.0)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

/// Per-second rates of one interface.
#[derive(Debug, Clone, Serialize)]
pub struct IfaceRate {
    pub name: String,
    pub rx_pps: f64,
    pub tx_pps: f64,
    pub rx_bps: f64,
    pub tx_bps: f64,
    pub drops_ps: f64,
    pub errors_ps: f64,
}

const WATCHED: &[(&str, &str)] = &[
    ("Tcp.ActiveOpens", "active/s"),
    ("Tcp.PassiveOpens", "passive/s"),
    ("Tcp.RetransSegs", "retrans/s"),
    ("TcpExt.TCPSynRetrans", "synretrans/s"),
    ("TcpExt.TCPTimeouts", "rto/s"),
    ("TcpExt.ListenOverflows", "lstnovf/s"),
    ("TcpExt.ListenDrops", "lstndrop/s"),
    ("Tcp.OutRsts", "rst/s"),
];

fn rates(
    before: &(Vec<NetDevStats>, CounterSnapshot),
    after: &(Vec<NetDevStats>, CounterSnapshot),
    secs: f64,
) -> (Vec<IfaceRate>, Vec<(String, f64)>) {
    let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / secs;
    let ifaces = netdev::delta(&before.0, &after.0)
        .into_iter()
        .map(|d| {
            let (a, b) = (&d.after, &d.before);
            IfaceRate {
                name: a.name.clone(),
                rx_pps: per(a.rx_packets, b.rx_packets),
                tx_pps: per(a.tx_packets, b.tx_packets),
                rx_bps: per(a.rx_bytes, b.rx_bytes) * 8.0,
                tx_bps: per(a.tx_bytes, b.tx_bytes) * 8.0,
                drops_ps: per(a.rx_drop + a.tx_drop, b.rx_drop + b.tx_drop),
                errors_ps: per(
                    a.rx_errs + a.tx_errs + a.rx_fifo + a.tx_fifo + a.rx_frame,
                    b.rx_errs + b.tx_errs + b.rx_fifo + b.tx_fifo + b.rx_frame,
                ),
            }
        })
        .collect();
    let tcp = WATCHED
        .iter()
        .map(|(name, label)| {
            let v = per(
                after.1.get(name).unwrap_or(0),
                before.1.get(name).unwrap_or(0),
            );
            (label.to_string(), v)
        })
        .collect();
    (ifaces, tcp)
}

fn watch(args: &HostArgs, every: Duration, out: &mut dyn Write) -> anyhow::Result<i32> {
    let json = args.output.format().map_err(anyhow::Error::msg)? == netdoctor_report::Format::Json;
    let count = args.count;
    let mut write = |line: WatchLine| -> anyhow::Result<()> {
        if json {
            serde_json::to_writer(&mut *out, &line)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "{:>8.1}s {:<16} {:>10} {:>10} {:>12} {:>12} {:>8} {:>8}",
                line.seconds,
                "IFACE",
                "rxpck/s",
                "txpck/s",
                "rxkbit/s",
                "txkbit/s",
                "drop/s",
                "err/s"
            )?;
            for i in &line.interfaces {
                writeln!(
                    out,
                    "{:>9} {:<16} {:>10.1} {:>10.1} {:>12.1} {:>12.1} {:>8.1} {:>8.1}",
                    "",
                    i.name,
                    i.rx_pps,
                    i.tx_pps,
                    i.rx_bps / 1e3,
                    i.tx_bps / 1e3,
                    i.drops_ps,
                    i.errors_ps
                )?;
            }
            let tcp: Vec<String> = line
                .tcp
                .iter()
                .map(|(n, v)| format!("{n} {v:.1}"))
                .collect();
            writeln!(out, "{:>9} TCP  {}", "", tcp.join("  "))?;
            match (&line.drops_by_reason, &line.drop_reasons_skipped) {
                (Some(d), _) if !d.is_empty() => {
                    let d: Vec<String> = d
                        .iter()
                        .take(5)
                        .map(|(r, v)| format!("{r} {v:.1}/s"))
                        .collect();
                    writeln!(out, "{:>9} DROPS  {}", "", d.join("  "))?;
                }
                (Some(_), _) => writeln!(out, "{:>9} DROPS  none", "")?,
                (None, Some(why)) => writeln!(out, "{:>9} DROPS  skipped: {why}", "")?,
                (None, None) => {}
            }
        }
        out.flush()?;
        Ok(())
    };
    let netns = args.netns.clone();
    let started = Instant::now();
    // All reads happen on one thread in the namespace; lines go back through a channel.
    let (tx, rx) = std::sync::mpsc::channel::<anyhow::Result<WatchLine>>();
    let reader = move || {
        let read = || -> anyhow::Result<(Vec<NetDevStats>, CounterSnapshot)> {
            Ok((netdev::read()?, counters::snapshot()?))
        };
        // Drop reasons come from eBPF in this namespace; without it the rest still runs.
        let (bpf, mut skipped) =
            match netdoctor_bpf::BpfObserver::start(netdoctor_bpf::Scope::CallingThreadNetns) {
                Ok(o) => (Some(o), None),
                Err(e) => (None, Some(e.to_string())),
            };
        let mut prev_drops = bpf
            .as_ref()
            .map(|b| drop_totals(&b.snapshot_with(false)))
            .unwrap_or_default();
        let mut prev = match read() {
            Ok(p) => p,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let mut prev_t = Instant::now();
        let mut n = 0u64;
        while count.is_none_or(|c| n < c) {
            std::thread::sleep(every);
            let now = match read() {
                Ok(p) => p,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let t = Instant::now();
            let (interfaces, tcp) = rates(&prev, &now, (t - prev_t).as_secs_f64());
            let drops_by_reason = bpf.as_ref().map(|b| {
                let now = drop_totals(&b.snapshot_with(false));
                let rates = drop_rates(&prev_drops, &now, (t - prev_t).as_secs_f64());
                prev_drops = now;
                rates
            });
            let line = WatchLine {
                seconds: started.elapsed().as_secs_f64(),
                interfaces,
                tcp,
                drops_by_reason,
                // Said once, on the first line.
                drop_reasons_skipped: skipped.take(),
            };
            if tx.send(Ok(line)).is_err() {
                return;
            }
            prev = now;
            prev_t = t;
            n += 1;
        }
    };
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let handle = scope.spawn(|| in_ns(netns.as_deref(), reader));
        for line in rx {
            write(line?)?;
        }
        handle
            .join()
            .map_err(|_| anyhow::anyhow!("watch thread panicked"))??;
        Ok(())
    })?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_bounds() {
        assert_eq!(parse_interval("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_interval("0.5s").unwrap(), Duration::from_millis(500));
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("x").is_err());
        assert_eq!(parse_interval("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_interval("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_interval("50ms").is_err());
    }

    #[test]
    fn drop_rates_are_deltas_busiest_first() {
        let before = [("NO_SOCKET".to_string(), 10)].into_iter().collect();
        let after = [
            ("NO_SOCKET".to_string(), 12),
            ("NETFILTER_DROP".to_string(), 8),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            drop_rates(&before, &after, 2.0),
            [
                ("NETFILTER_DROP".to_string(), 4.0),
                ("NO_SOCKET".to_string(), 1.0)
            ]
        );
    }

    #[test]
    fn rates_are_per_second() {
        let mut a = CounterSnapshot::default();
        a.values.insert("Tcp.RetransSegs".into(), 10);
        let mut b = a.clone();
        b.values.insert("Tcp.RetransSegs".into(), 30);
        let dev = |p| NetDevStats {
            name: "eth0".into(),
            rx_packets: p,
            rx_bytes: p * 100,
            ..Default::default()
        };
        let (ifaces, tcp) = rates(&(vec![dev(0)], a), &(vec![dev(1000)], b), 2.0);
        assert_eq!(ifaces[0].rx_pps, 500.0);
        assert_eq!(ifaces[0].rx_bps, 400_000.0);
        assert!(tcp.contains(&("retrans/s".to_string(), 10.0)));
    }
}

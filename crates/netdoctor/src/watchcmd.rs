//! `netdoctor watch`: the per-node agent (repeated passive windows, `/metrics`, OTLP, evidence
//! ring). The work is in the `netdoctor-agent` crate; this file is flags and wiring.

use anyhow::Context;
use clap::Args;
use netdoctor_agent::otlp::OtlpExporter;
use netdoctor_agent::{AgentMetrics, MetricsServer, WatchConfig, WindowResult};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// TCP ports to watch, e.g. `-p 80,443` (default: every port something listens on at start;
    /// with --pods: only these ports of each pod).
    #[arg(
        short = 'p',
        long = "ports",
        value_delimiter = ',',
        value_name = "PORT"
    )]
    pub ports: Vec<u16>,
    /// Window length: findings, metrics and kept evidence are per window.
    #[arg(long, default_value = "30s", value_parser = crate::target::parse_duration)]
    pub window: Duration,
    /// Serve Prometheus metrics on http://ADDR/metrics: a port alone binds 127.0.0.1 (only
    /// this host), `0.0.0.0:9465` every address (then prefer --web.config.file).
    #[arg(long, value_name = "ADDR", value_parser = listen_addr)]
    pub listen: Option<SocketAddr>,
    /// TLS and basic auth for /metrics from a web configuration file, in the Prometheus
    /// exporter-toolkit format (tls_server_config: cert_file, key_file; basic_auth_users:
    /// user: bcrypt hash).
    #[arg(long = "web.config.file", value_name = "FILE", requires = "listen")]
    pub web_config: Option<PathBuf>,
    /// Push metrics and findings (as log records) to an OpenTelemetry collector over OTLP/HTTP
    /// (protobuf), e.g. `--otlp http://127.0.0.1:4318`.
    #[arg(long, value_name = "ENDPOINT")]
    pub otlp: Option<String>,
    /// Keep the report (JSON) and pcap of windows with a problem in this directory.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// How many problem windows (per port) the directory keeps; older ones are deleted.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub keep: usize,
    /// Size limit of the directory (all ports), in MiB: the oldest windows are deleted beyond
    /// it (the newest is always kept); deletions are counted in netdoctor_evidence_dropped_total.
    #[arg(long, default_value_t = 256, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
    pub dir_max_mib: u64,
    /// Age limit of the directory's windows, e.g. `24h` (default: none).
    #[arg(long, value_name = "DURATION", value_parser = crate::target::parse_duration)]
    pub dir_max_age: Option<Duration>,
    /// Largest pcap kept per window and port, in MiB (packets beyond it are analyzed only).
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub pcap_limit_mib: u64,
    /// Bytes kept per captured packet.
    #[arg(long, default_value_t = 256)]
    pub snaplen: u32,
    /// Most packet ring memory for all ports together, in MiB, split evenly (at least 0.5 MiB
    /// per port): each port starts on a 2 MiB ring (its share if less), doubled after a window
    /// with kernel drops up to its share, halved after 6 quiet windows in a row. The rings count in the agent's RSS; packets the
    /// kernel drops when a ring is full are counted and reported per window
    /// (`netdoctor_capture_drops_total`).
    #[arg(long, default_value_t = 16, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub ring_mb: u64,
    /// Capture rings per port: `auto` starts on one ring and moves to one per core (PACKET_FANOUT,
    /// flow hash) after a window with kernel drops or 1M packets/s; a number fixes it (each
    /// ring is --ring-mb's share, drops are counted per ring).
    #[arg(long, default_value = "auto", value_name = "auto|N", value_parser = netdoctor_agent::rings::RingPolicy::parse)]
    pub capture_rings: netdoctor_agent::rings::RingPolicy,
    /// Capture on this interface only (default: all).
    #[arg(long, value_name = "IFACE")]
    pub interface: Option<String>,
    /// Stop after N windows (default: run until SIGTERM/SIGINT).
    #[arg(long, value_name = "N")]
    pub windows: Option<u64>,
    /// Print the Prometheus alert rules (one alert per finding class, runbooks in English and
    /// Chinese) and exit; the file shipped in deploy/alerts/ is this output.
    #[arg(long, conflicts_with = "print_prometheus_rule")]
    pub print_alert_rules: bool,
    /// Print the same rules as a Prometheus Operator PrometheusRule and exit.
    #[arg(long)]
    pub print_prometheus_rule: bool,
    /// Service-level objectives judged on every window, e.g. 'p99<50ms,stalled<5%' (as
    /// diagnose's --slo, on the window's exchanges): exported as `netdoctor_slo_status` (0
    /// pass, 1 fail, 3 inconclusive) and `netdoctor_slo_margin` per port and objective, for
    /// alert rules; in each window's JSON line as `slo`.
    #[arg(long, value_name = "OBJECTIVES", value_parser = crate::cli::parse_slo)]
    pub slo: Option<netdoctor_report::Slo>,
    /// Watch the pods of this node instead of the agent's own network namespace: the
    /// listeners in every other network namespace (from /proc/*/ns/net), each watched from
    /// inside its namespace, series labelled by `namespace` and `pod` (from the kubelet's
    /// files; `pod="netns-<inode>"` when unknown). Needs CAP_SYS_ADMIN (setns) and
    /// CAP_SYS_PTRACE, and the host's /proc (hostPID).
    #[arg(long)]
    pub pods: bool,
    /// At most this many pods (network namespaces) are watched; the rest are named in the log.
    #[arg(long, default_value_t = netdoctor_agent::pods::DEFAULT_MAX_PODS, value_name = "N", requires = "pods")]
    pub pods_max: usize,
    /// How often --pods looks for pods again: a pod started later is watched from its next
    /// look (with --windows, until the run's windows are over), a pod gone is dropped with its
    /// series (in /metrics and OTLP).
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = rescan_interval, requires = "pods")]
    pub pods_rescan: Duration,
    /// Proc directory that --pods reads (the host's).
    #[arg(long, default_value = "/proc", value_name = "DIR", requires = "pods")]
    pub proc_root: PathBuf,
    /// The kubelet's pod directories (for a pod's name from its etc-hosts).
    #[arg(
        long,
        default_value = "/var/lib/kubelet/pods",
        value_name = "DIR",
        requires = "pods"
    )]
    pub kubelet_pods_dir: PathBuf,
    /// The kubelet's pod log directories, named NAMESPACE_NAME_UID (for a pod's namespace and
    /// name).
    #[arg(
        long,
        default_value = "/var/log/pods",
        value_name = "DIR",
        requires = "pods"
    )]
    pub pod_logs_dir: PathBuf,
    #[command(flatten)]
    pub output: crate::cli::OutputArgs,
}

pub fn command(args: &WatchArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    if args.print_alert_rules || args.print_prometheus_rule {
        let text = if args.print_alert_rules {
            netdoctor_agent::alerts::rules_file()
        } else {
            netdoctor_agent::alerts::prometheus_rule()
        };
        out.write_all(text.as_bytes())?;
        return Ok(0);
    }
    let json = args.output.format().map_err(anyhow::Error::msg)? == netdoctor_report::Format::Json;
    let own_port: Vec<u16> = args.listen.map(|a| a.port()).into_iter().collect();
    let roots = netdoctor_agent::pods::Roots {
        proc: args.proc_root.clone(),
        kubelet_pods: args.kubelet_pods_dir.clone(),
        pod_logs: args.pod_logs_dir.clone(),
    };
    let discovery = netdoctor_agent::pods::Options {
        max_pods: args.pods_max.max(1),
        ports: args.ports.clone(),
        include_non_pods: true,
    };
    let pods = if args.pods {
        let d = netdoctor_agent::pods::discover(&roots, &discovery)
            .with_context(|| format!("list network namespaces in {}", roots.proc.display()))?;
        // A node may have no pod yet: the agent waits for them, unless it was asked for a
        // fixed number of windows.
        anyhow::ensure!(
            !d.pods.is_empty() || args.windows.is_none(),
            "--pods: no listener in any other network namespace under {} ({} processes could not be read: needs CAP_SYS_PTRACE and hostPID)",
            roots.proc.display(),
            d.unreadable
        );
        if d.pods.is_empty() {
            eprintln!(
                "netdoctor: --pods: no pod listener under {} yet ({} processes could not be read); looking again every {:?}",
                roots.proc.display(),
                d.unreadable,
                args.pods_rescan
            );
        }
        if !d.over_cap.is_empty() {
            eprintln!(
                "netdoctor: --pods-max {}: not watching {}",
                args.pods_max,
                d.over_cap.join(", ")
            );
        }
        Some(d.pods)
    } else {
        None
    };
    let ports = if let Some(p) = &pods {
        let mut all: Vec<u16> = p.iter().flat_map(|p| p.ports.clone()).collect();
        all.sort_unstable();
        all.dedup();
        if all.is_empty() {
            // No pod yet: the ring budget is that of one port per pod found later.
            all.push(1);
        }
        all
    } else if args.ports.is_empty() {
        netdoctor_agent::listeners::local_listen_ports(&own_port)
            .context("find local listeners (give -p PORT to choose ports)")?
    } else {
        args.ports.clone()
    };
    anyhow::ensure!(
        !ports.contains(&0),
        "invalid port 0 in -p (ports are 1-65535)"
    );
    let mut cfg = WatchConfig::new(ports.clone(), args.window);
    cfg.snaplen = args.snaplen;
    cfg.interface = args.interface.clone();
    cfg.ring = args
        .dir
        .clone()
        .map(|d| (d, args.keep.max(1) * ports.len()));
    cfg.evidence_max_bytes = args.dir_max_mib.saturating_mul(1 << 20);
    cfg.evidence_max_age = args.dir_max_age;
    cfg.pcap_limit_bytes = args.pcap_limit_mib.saturating_mul(1 << 20);
    cfg.max_windows = args.windows;
    cfg.ring_bytes = netdoctor_agent::watch::ring_share((args.ring_mb as usize) << 20, ports.len());
    cfg.rings = args.capture_rings;

    let metrics = Arc::new(AgentMetrics::new());
    let web = match &args.web_config {
        Some(p) => netdoctor_agent::webconfig::WebConfig::load(p).map_err(anyhow::Error::msg)?,
        None => netdoctor_agent::webconfig::WebConfig::default(),
    };
    let server = match args.listen {
        Some(a) => Some(
            MetricsServer::start_with(a, Arc::clone(&metrics), web)
                .with_context(|| format!("listen on {a} for /metrics"))?,
        ),
        None => None,
    };
    let mut otlp = match &args.otlp {
        Some(e) => Some(OtlpExporter::start(e).with_context(|| format!("OTLP endpoint {e}"))?),
        None => None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut _signals = StopOnSignals::new(&stop);
    let quiet = std::env::var_os("NETDOCTOR_QUIET").is_some();
    let mut write_err = None;
    let listen = server.as_ref().map(MetricsServer::local_addr);
    if let Some(pods) = &pods {
        if !quiet && let Some(a) = listen {
            eprintln!("netdoctor: metrics on http://{a}/metrics");
        }
        let opts = netdoctor_agent::podwatch::PodWatchOptions {
            discovery,
            rescan: args.pods_rescan,
        };
        let failed = crate::watchpods::run(
            &cfg,
            &roots,
            &opts,
            pods,
            &stop,
            &mut |o| match o {
                crate::watchpods::PodOutput::Window(p, w) => record(
                    &metrics,
                    args,
                    &p.labels,
                    w,
                    otlp.as_mut(),
                    if json { Some(&mut *out) } else { None },
                    &mut write_err,
                    quiet,
                    &p.name(),
                ),
                crate::watchpods::PodOutput::Gone(p) => {
                    if let Some(o) = otlp.as_mut()
                        && let Err(e) = o.forget_pod(&p.labels)
                    {
                        eprintln!("netdoctor: {e} (pod {} gone)", p.name());
                    }
                }
            },
            &metrics,
            args.slo.as_ref(),
            quiet,
        )?;
        if let Some(o) = otlp {
            o.shutdown().context("flush OTLP export")?;
        }
        drop(server);
        if let Some(e) = write_err {
            return Err(e.into());
        }
        anyhow::ensure!(
            failed.0 == 0 || failed.0 < failed.1,
            "--pods: every pod's watch failed"
        );
        return Ok(0);
    }
    let mut on_start = || {
        if !quiet {
            let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
            let mut msg = format!(
                "netdoctor: watching tcp port {} in {:?} windows",
                ports.join(","),
                args.window
            );
            if let Some(a) = listen {
                msg.push_str(&format!(", metrics on http://{a}/metrics"));
            }
            eprintln!("{msg}");
        }
    };
    // The signals wake the main thread too, so it sleeps to its next job instead of looking
    // at `stop` ten times a second (`WatchConfig::stop_wake`).
    if let Ok(w) = netdoctor_agent::watch::Wake::new()
        && _signals.wake(&w)
    {
        cfg.stop_wake = Some(w);
    }
    let no_pod = netdoctor_agent::metrics::PodLabels::default();
    let windows = netdoctor_agent::watch(&cfg, &stop, &mut on_start, &mut |w: &WindowResult| {
        record(
            &metrics,
            args,
            &no_pod,
            w,
            otlp.as_mut(),
            if json { Some(&mut *out) } else { None },
            &mut write_err,
            quiet,
            "",
        );
    })?;
    if let Some(o) = otlp.take() {
        o.shutdown().context("flush OTLP export")?;
    }
    drop(server);
    if !quiet {
        eprintln!("netdoctor: stopped after {windows} windows");
    }
    if let Some(e) = write_err {
        return Err(e.into());
    }
    Ok(0)
}

/// One window of one port (of a pod, in pod mode): metrics, OTLP, the log line and the JSON
/// line.
#[allow(clippy::too_many_arguments)]
fn record(
    metrics: &AgentMetrics,
    args: &WatchArgs,
    pod: &netdoctor_agent::metrics::PodLabels,
    w: &WindowResult,
    otlp: Option<&mut OtlpExporter>,
    out: Option<&mut dyn Write>,
    write_err: &mut Option<std::io::Error>,
    quiet: bool,
    pod_name: &str,
) {
    let end = w.end_unix_ms as f64 / 1000.0;
    metrics.record_window_in(pod, w.port, &w.report, end);
    metrics.record_host_in(pod, w.port, w.listener.as_ref(), w.open_connections);
    if let Some(e) = &w.evidence {
        metrics.record_evidence(e);
    }
    let slo = args.slo.as_ref().map(|s| s.evaluate(&w.report));
    if let Some(s) = &slo {
        metrics.record_slo_in(pod, w.port, s);
    }
    if let Some(o) = otlp
        && let Err(e) = o.record_window_in(pod, w)
    {
        eprintln!("netdoctor: {e} (next window tries again)");
    }
    if !quiet {
        let mut line = window_line(w);
        if let Some(s) = &slo {
            line.push_str(&format!("; SLO {}", s.result.as_str()));
        }
        if pod_name.is_empty() {
            eprintln!("netdoctor: {line}");
        } else {
            eprintln!("netdoctor: pod {pod_name} {line}");
        }
    }
    if let Some(out) = out
        && write_err.is_none()
    {
        let line = match slo {
            Some(s) => {
                let mut r = w.report.clone();
                r.slo = Some(s);
                serde_json::to_string(&r)
            }
            None => serde_json::to_string(&w.report),
        }
        .unwrap_or_default();
        if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
            *write_err = Some(e);
        }
    }
}

/// `window 3 port 80: problem — nagle_delayed_ack (server, +40.1 ms); kept w…-p80`
fn window_line(w: &WindowResult) -> String {
    let r = &w.report;
    let x = r
        .measurements
        .capture
        .as_ref()
        .map_or(0, |c| c.exchanges.count);
    let verdict = serde_json::to_value(r.verdict)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut s = format!(
        "window {} port {}: {verdict}, {x} exchanges",
        w.index, w.port
    );
    let drops = r
        .measurements
        .capture
        .as_ref()
        .map_or(0, |c| c.stats.capture_drops);
    if drops > 0 {
        s.push_str(&format!(", {drops} packets dropped by the capture ring"));
    }
    if let Some(l) = &w.listener {
        s.push_str(&format!(
            ", accept queue ≤{}/{}",
            l.max_accept_queue, l.backlog
        ));
        if l.max_syn_recv > 0 {
            s.push_str(&format!(", {} SYN_RECV", l.max_syn_recv));
        }
    }
    for f in &r.findings {
        s.push_str(&format!(" — {} ({:?}", f.id, f.side).to_lowercase());
        if let Some(ms) = f.impact.added_latency_ms {
            s.push_str(&format!(", +{ms:.1} ms"));
        }
        s.push(')');
    }
    if let Some(p) = &w.stored {
        s.push_str(&format!("; kept {}", p.display()));
    }
    s
}

/// SIGTERM and SIGINT set `stop` (the window in progress ends, is recorded, and the run exits
/// 0); a second SIGINT while stopping ends the process. Unregistered on drop.
struct StopOnSignals {
    ids: Vec<signal_hook::SigId>,
}

impl StopOnSignals {
    fn new(stop: &Arc<AtomicBool>) -> StopOnSignals {
        let mut ids = Vec::new();
        if let Ok(id) =
            signal_hook::flag::register_conditional_shutdown(libc::SIGINT, 130, Arc::clone(stop))
        {
            ids.push(id);
        }
        for sig in [libc::SIGINT, libc::SIGTERM] {
            if let Ok(id) = signal_hook::flag::register(sig, Arc::clone(stop)) {
                ids.push(id);
            }
        }
        StopOnSignals { ids }
    }

    /// Also wakes `wake` on SIGINT and SIGTERM (after `stop` is set: the flag's handlers were
    /// registered first). `false` when that could not be set up for both.
    fn wake(&mut self, wake: &netdoctor_agent::watch::Wake) -> bool {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            let id = wake
                .write_end()
                .and_then(|fd| signal_hook::low_level::pipe::register(sig, fd));
            match id {
                Ok(id) => self.ids.push(id),
                Err(_) => return false,
            }
        }
        true
    }
}

impl Drop for StopOnSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// `--pods-rescan`: a duration of at least 1 s.
fn rescan_interval(s: &str) -> Result<Duration, String> {
    let d = crate::target::parse_duration(s)?;
    if d < Duration::from_secs(1) {
        return Err(format!("--pods-rescan {s}: at least 1s"));
    }
    Ok(d)
}

/// `--listen`: `HOST:PORT`, or a port alone for 127.0.0.1 (local unless asked otherwise).
fn listen_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>().map_err(|_| {
        format!("{s:?} is not ADDR:PORT or a port (e.g. 9465, 127.0.0.1:9465, 0.0.0.0:9465)")
    })
}

#[cfg(test)]
mod tests {
    use super::listen_addr;

    #[test]
    fn a_port_alone_binds_loopback_and_bad_addresses_are_named() {
        assert_eq!(listen_addr("9465").unwrap().to_string(), "127.0.0.1:9465");
        assert_eq!(
            listen_addr("0.0.0.0:9465").unwrap().to_string(),
            "0.0.0.0:9465"
        );
        assert_eq!(listen_addr("[::1]:9465").unwrap().to_string(), "[::1]:9465");
        assert!(
            listen_addr("example:9465")
                .unwrap_err()
                .contains("example:9465")
        );
    }
}

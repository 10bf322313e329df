//! `netdoctor diagnose URL`: the layered method in one command.
//!
//! baseline probes (SYN RTT, one timed request) → kernel counters → live capture (started
//! before the load, analyzed while it runs) → concurrent load → counters again → findings.
//! Every stage that cannot run becomes a skipped or failed check and the run goes on.

use crate::cli::DiagnoseArgs;
use crate::output::{Progress, write_report};
use crate::target::{HttpUrl, parse_url};
use anyhow::Context;
use netdoctor_core::analyze::{Analysis, Analyzer, AnalyzerConfig};
use netdoctor_core::probes as probe_findings;
use netdoctor_core::sockets::ServerSocket;
use netdoctor_load::{HttpTarget, LoadConfig, LoadResult};
use netdoctor_observe::live::{LiveCapture, LiveConfig};
use netdoctor_observe::pcapwrite::PcapWriter;
use netdoctor_observe::{SourceSummary, counters, sockopt};
use netdoctor_probe::{HttpProbeConfig, ProbeError, SynProbeConfig};
use netdoctor_report::{
    CaptureSection, Check, CountersSection, ProbeSection, Report, Target, terminal::ms,
};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

/// Fewer exchanges than this in the capture and a run without findings is inconclusive.
const MIN_EXCHANGES: u64 = 20;

/// When, into the load, the server's socket options are sampled (connections are open then).
const SOCKET_SAMPLE_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

/// Upper bound on packets analyzed live; past it the capture stops (and says so).
const MAX_LIVE_PACKETS: u64 = 3_000_000;

pub fn command(args: &DiagnoseArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let progress = Progress::new();
    let report = match &args.netns {
        None => diagnose(args, &progress)?,
        Some(ns) => {
            let (args, p) = (args.clone(), progress.clone());
            netdoctor_lab::in_netns(ns, move || diagnose(&args, &p))
                .with_context(|| format!("enter network namespace {ns}"))??
        }
    };
    write_report(&report, args.json, out)?;
    Ok(report.exit_code())
}

/// Runs the whole diagnosis and returns the report. Errors only for what makes a run
/// meaningless (an invalid URL, a name that does not resolve).
pub fn diagnose(args: &DiagnoseArgs, progress: &Progress) -> anyhow::Result<Report> {
    let started = Instant::now();
    let url = parse_url(&args.url).map_err(anyhow::Error::msg)?;
    if args.connections == 0 {
        anyhow::bail!("--connections must be at least 1");
    }
    let addr = *netdoctor_probe::resolve(&url.host, url.port)?
        .first()
        .with_context(|| format!("resolve {}: no addresses", url.host))?;
    let mut report = Report::new(
        "diagnose",
        Target {
            input: url.input.clone(),
            address: Some(addr.to_string()),
        },
    );

    // 1. Baseline probes.
    progress.stage(&format!("probing {addr}: SYN RTT and one request"));
    let syn = netdoctor_probe::syn_rtt(
        addr,
        &SynProbeConfig {
            count: args.syn_probes.max(1),
            ..SynProbeConfig::default()
        },
    );
    report.checks.push(match &syn.fallback_reason {
        None => Check::ok("syn_probe"),
        Some(why) => Check::ok_with("syn_probe", why.clone()),
    });
    let http = http_median(
        addr,
        &HttpProbeConfig {
            host: url.host_header.clone(),
            path: url.path.clone(),
            timeout: args.timeout,
            tls: None,
        },
    );
    let refused =
        matches!(http, Err(ProbeError::Refused { .. })) || (syn.answered == 0 && syn.refused > 0);
    let http = match http {
        Ok(t) => {
            report.checks.push(Check::ok("http_probe"));
            Some(t)
        }
        Err(e) => {
            report.checks.push(Check::failed(
                "http_probe",
                format!("{:#}", anyhow::Error::new(e)),
            ));
            None
        }
    };
    report.measurements.probe = Some(ProbeSection {
        syn: Some(syn.clone()),
        http,
    });
    if refused {
        report.findings.push(probe_findings::server_not_listening(
            &addr.to_string(),
            syn.sent,
            syn.refused,
        ));
        let why = format!("nothing listens on {addr}");
        for stage in ["load", "capture", "counters"] {
            report.checks.push(Check::skipped(stage, why.clone()));
        }
        report.conclude(true);
        report.elapsed_s = started.elapsed().as_secs_f64();
        return Ok(report);
    }

    // 2. Counters before, capture started (its socket is live when `open` returns).
    let before = counters::snapshot();
    let stop = Arc::new(AtomicBool::new(false));
    let capture = if args.no_capture {
        report
            .checks
            .push(Check::skipped("capture", "--no-capture was given"));
        None
    } else {
        match start_capture(addr, args, Arc::clone(&stop)) {
            Ok(handle) => Some(handle),
            Err(e) => {
                report
                    .checks
                    .push(Check::skipped("capture", format!("{e:#}")));
                None
            }
        }
    };

    // 3. Load.
    progress.stage(&format!(
        "loading {} with {} connections for {:.1} s{}",
        url.input,
        args.connections,
        args.duration.as_secs_f64(),
        if capture.is_some() {
            " while capturing packets"
        } else {
            ""
        }
    ));
    // The server's own socket options, sampled once while the load holds connections open.
    let mut sockets: Option<Result<Vec<ServerSocket>, String>> = None;
    let load = run_load(&url, addr, args, progress, &mut |elapsed| {
        if sockets.is_none() && elapsed >= SOCKET_SAMPLE_AFTER.min(args.duration / 2) {
            sockets = Some(sockopt::server_sockets(addr, 16).map_err(|e| e.to_string()));
        }
    });
    stop.store(true, Ordering::Relaxed);
    let load = match load {
        Ok(l) => {
            report.checks.push(Check::ok("load"));
            Some(l)
        }
        Err(e) => {
            report.checks.push(Check::failed("load", format!("{e:#}")));
            None
        }
    };

    // 4. Capture analysis and counters after.
    let mut analysis: Option<Analysis> = None;
    if let Some(handle) = capture {
        progress.stage("analyzing captured packets");
        match handle.join() {
            Ok(Ok((a, summary, pcap_file))) => {
                report.checks.push(Check::ok("capture"));
                report.measurements.capture = Some(capture_section(&a, &summary, args, pcap_file));
                analysis = Some(a);
            }
            Ok(Err(e)) => report
                .checks
                .push(Check::failed("capture", format!("{e:#}"))),
            Err(_) => report
                .checks
                .push(Check::failed("capture", "the capture thread panicked")),
        }
    }
    match (before, counters::snapshot()) {
        (Ok(b), Ok(a)) => {
            report.checks.push(Check::ok("counters"));
            report.measurements.counters = Some(CountersSection {
                changed: counters::delta(&b, &a),
            });
        }
        (Err(e), _) | (_, Err(e)) => report.checks.push(Check::failed("counters", e.to_string())),
    }

    // 5. Findings and verdict.
    let exchanges = analysis.as_ref().map_or(0, |a| a.exchanges.count);
    if let Some(a) = analysis {
        report.findings.extend(a.findings);
    }
    match sockets {
        Some(Ok(list)) if !list.is_empty() => {
            netdoctor_core::sockets::corroborate(&mut report.findings, &list);
            report.checks.push(Check::ok("socket_options"));
            report.measurements.server_sockets = Some(list);
        }
        Some(Ok(_)) => report.checks.push(Check::skipped(
            "socket_options",
            format!("no process on this host serves {addr} (a remote server?)"),
        )),
        Some(Err(e)) => report.checks.push(Check::skipped("socket_options", e)),
        None => report.checks.push(Check::skipped(
            "socket_options",
            "the load ended before the server's sockets were sampled",
        )),
    }
    report.measurements.load = load;
    let mut conclusive = exchanges >= MIN_EXCHANGES;
    if report.findings.is_empty()
        && conclusive
        && let Some(why) = unexplained_latency(&report)
    {
        report.checks.push(Check::failed("explained", why));
        conclusive = false;
    }
    if !conclusive && report.measurements.capture.is_none() {
        report.checks.push(Check::skipped(
            "verdict",
            "without a packet capture transport-level causes cannot be ruled out",
        ));
    }
    report.conclude(conclusive);
    report.elapsed_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Requests timed one after another by [`http_median`].
const HTTP_PROBES: usize = 3;

/// Times [`HTTP_PROBES`] single requests and returns the one with the median total, so one
/// scheduling hiccup on a shared host does not become the "one request" figure. The first
/// error ends the probing and is returned.
fn http_median(
    addr: SocketAddr,
    cfg: &HttpProbeConfig,
) -> Result<netdoctor_probe::HttpTiming, ProbeError> {
    let mut timings = Vec::with_capacity(HTTP_PROBES);
    for _ in 0..HTTP_PROBES {
        timings.push(netdoctor_probe::http_timing(addr, cfg)?);
    }
    timings.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
    Ok(timings.swap_remove(HTTP_PROBES / 2))
}

/// A healthy verdict must not hide latency nothing explains: when p50 under load is far above
/// the unloaded request time and no detector fired, say so instead of calling it healthy.
fn unexplained_latency(report: &Report) -> Option<String> {
    let load = report.measurements.load.as_ref()?;
    let probe = report.measurements.probe.as_ref()?;
    let base = probe
        .http
        .as_ref()
        .map(|h| h.total_ms)
        .or(probe.syn.as_ref().and_then(|s| s.median_ms))?;
    let p50 = load.latency_ms.p50;
    (p50 >= 20.0 && p50 > 10.0 * base.max(0.5)).then(|| {
        format!(
            "p50 under load is {} against {} for one request, and no detector explained it \
             (server saturated? CPU-bound client?)",
            ms(p50),
            ms(base)
        )
    })
}

fn run_load(
    url: &HttpUrl,
    addr: SocketAddr,
    args: &DiagnoseArgs,
    progress: &Progress,
    on_tick: &mut dyn FnMut(std::time::Duration),
) -> anyhow::Result<LoadResult> {
    let mut cfg = LoadConfig::new(HttpTarget {
        addr,
        host: url.host_header.clone(),
        path: url.path.clone(),
    });
    cfg.connections = args.connections;
    if let Some(t) = args.threads {
        cfg.threads = t.max(1);
    }
    cfg.duration = args.duration;
    cfg.timeout = args.timeout;
    cfg.keepalive = !args.no_keepalive;
    let stop = AtomicBool::new(false);
    let total = args.duration;
    let result = netdoctor_load::run(&cfg, &stop, &mut |p| {
        progress.tick(p.elapsed, total, p.requests, p.errors);
        on_tick(p.elapsed);
    });
    progress.end_ticks();
    Ok(result?)
}

type CaptureResult = anyhow::Result<(Analysis, SourceSummary, Option<PathBuf>)>;

/// Opens the capture (ready when this returns) and analyzes on a thread until `stop` is set.
fn start_capture(
    addr: SocketAddr,
    args: &DiagnoseArgs,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<JoinHandle<CaptureResult>> {
    let cfg = LiveConfig {
        port: addr.port(),
        snaplen: args.snaplen.max(96),
        max_packets: Some(MAX_LIVE_PACKETS),
        interface: None,
    };
    let mut cap = LiveCapture::open(&cfg)?;
    let mut writer = match &args.pcap {
        Some(path) => Some(PcapWriter::create(path, cap.link_type(), cfg.snaplen)?),
        None => None,
    };
    let pcap_path = args.pcap.clone();
    let port = addr.port();
    Ok(std::thread::Builder::new()
        .name("capture".into())
        .spawn(move || -> CaptureResult {
            let mut analyzer = Analyzer::new(AnalyzerConfig {
                server_port: Some(port),
            });
            let mut write_err = None;
            let summary = cap.run(&stop, &mut |p| {
                analyzer.push(p);
                if let Some(w) = writer.as_mut()
                    && let Err(e) = w.write(p)
                {
                    write_err.get_or_insert(e);
                }
            })?;
            if let Some(w) = writer {
                w.finish()?;
            }
            if let Some(e) = write_err {
                return Err(anyhow::Error::new(e).context("write pcap"));
            }
            analyzer.note_capture_drops(summary.drops);
            Ok((analyzer.finish(), summary, pcap_path))
        })?)
}

fn capture_section(
    a: &Analysis,
    summary: &SourceSummary,
    args: &DiagnoseArgs,
    pcap_file: Option<PathBuf>,
) -> CaptureSection {
    let mut warnings = summary.warnings.clone();
    warnings.extend(a.warnings.iter().cloned());
    if summary.packets >= MAX_LIVE_PACKETS {
        warnings.push(format!(
            "capture stopped after {MAX_LIVE_PACKETS} packets; the rest of the load was not analyzed"
        ));
    }
    CaptureSection {
        source: "live",
        snaplen: Some(args.snaplen.max(96)),
        pcap_file: pcap_file.map(|p| p.display().to_string()),
        stats: a.stats.clone(),
        exchanges: a.exchanges.clone(),
        warnings,
    }
}

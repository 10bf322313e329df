//! The method, in order: plan → resolution → preflight (`crate::preflight`: a client or path
//! failure ends the run there) → probes → start observers → load → finish observers →
//! probes that depend on the load (keep-alive, MTU) → detectors → verdict. Every stage that cannot run becomes a skipped or failed check and the
//! run goes on; an interrupt stops the load early and the run still reports what it saw.
//!
//! Two paths share the resolution before them and the conclusion after them: `active`
//! (probes, then the load while the observers watch; a `tcp://` target gets the probes only:
//! the load speaks HTTP(S)) and `passive` (`--passive`: no probe, no load; the observers watch
//! the target's real traffic for the plan's duration, then the same detectors and verdict).

use crate::host::Host;
use crate::observer::{Observer, Outcome, RunCtx};
use crate::observers;
use crate::plan::DiagnosePlan;
use crate::preflight::Preflight;
use netdoctor_core::observation::{LoadOutcome, Observation};
use netdoctor_load::{HttpTarget, LoadConfig, LoadResult};
use netdoctor_observe::host_findings::ConnectOutcome;
use netdoctor_probe::{HttpProbeConfig, HttpTiming, ProbeError, SynMethod, SynProbeConfig};
use netdoctor_report::{Check, CheckName, ProbeSection, Report, ReportCommand, Target};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Where a run tells people what it is doing (stderr in the CLI, nothing in tests).
pub trait Progress: Sync {
    fn stage(&self, _msg: &str) {}
    fn load_tick(&self, _elapsed: Duration, _total: Duration, _requests: u64, _errors: u64) {}
    /// A tick of a passive window: completed exchanges so far when the capture runs.
    fn watch_tick(&self, _elapsed: Duration, _total: Duration, _exchanges: Option<u64>) {}
    fn end_ticks(&self) {}
}

/// No progress output.
pub struct Silent;
impl Progress for Silent {}

/// What makes a run meaningless: nothing else is an error, it is a check or a finding.
#[derive(Debug, thiserror::Error)]
pub enum DiagnoseError {
    #[error("invalid plan: {0}")]
    Plan(String),
    #[error(transparent)]
    Resolve(#[from] ProbeError),
    #[error("resolve {0}: no addresses")]
    NoAddress(String),
    /// The preflight found a port that speaks only HTTP/2 while the run speaks HTTP/1.1.
    #[error("preflight: {0}")]
    Http2Only(String),
}

/// Requests timed one after another for the one-request figure (the median is kept).
const HTTP_PROBES: usize = 3;

/// Runs a whole diagnosis on `host`. Setting `interrupt` (first Ctrl-C) ends the load (or the
/// passive window) early; the report is then marked `interrupted` and holds what was seen
/// until then.
pub fn run(
    plan: &DiagnosePlan,
    host: &dyn Host,
    progress: &dyn Progress,
    interrupt: &AtomicBool,
) -> Result<Report, DiagnoseError> {
    let started = Instant::now();
    plan.validate().map_err(DiagnoseError::Plan)?;
    let mut plan = plan.clone();
    plan.raise_snaplen_for_h2c();
    let plan = &plan;
    let t = &plan.target;
    let (addr, mut dns) = match crate::route::resolve(plan, host, progress, started)? {
        crate::route::Resolved::Addr(addr, dns) => (addr, dns),
        crate::route::Resolved::Diagnosis(report) => return Ok(*report),
    };
    let mut report = Report::new(
        ReportCommand::Diagnose,
        Target {
            input: t.input.clone(),
            address: Some(addr.to_string()),
            protocol: Some(t.protocol()),
        },
    );
    let others = std::mem::take(&mut dns.others);
    dns.apply(&mut report);
    let ctx = RunCtx { plan, addr, host };
    let total = others.len() + 1;
    let outcome = if plan.passive {
        passive(&ctx, &mut report, progress, interrupt)
    } else {
        // The name's other addresses get one connect() each while the preflight runs; joined
        // before the observers start, so their SYNs stay out of the run's counters.
        let (pre, tried) = std::thread::scope(|s| {
            let bg = s.spawn(|| crate::other_addrs::probe(plan, host, addr, &others, progress));
            let pre = crate::preflight::run(plan, host, addr, &mut report, progress, started);
            (pre, bg.join().unwrap_or_default())
        });
        match pre {
            // A client or path failure: the report is complete, the load never runs.
            Preflight::Stopped => {
                crate::other_addrs::check(plan, addr, total, &tried, &mut report);
                return Ok(report);
            }
            Preflight::Http2Only(msg) => return Err(DiagnoseError::Http2Only(msg)),
            Preflight::Passed(first) => {
                let mut o = active(&ctx, &mut report, progress, interrupt, first);
                let refused = o
                    .observations
                    .iter()
                    .any(|ob| matches!(ob, Observation::ConnectRefused { .. }));
                if refused {
                    // The run's address refused: `server_not_listening` tells the others.
                    let mut report = finish(plan, report, o, interrupt, started);
                    crate::other_addrs::check_refused(plan, addr, total, &tried, &mut report);
                    return Ok(report);
                }
                o.findings.extend(crate::dead_record::finding(
                    &t.host,
                    addr,
                    total,
                    &tried,
                    crate::other_addrs::timeout(plan),
                ));
                o
            }
        }
    };
    let mut report = finish(plan, report, outcome, interrupt, started);
    if !plan.passive {
        // `server_not_listening` found by the load alone (the address stopped answering).
        crate::other_addrs::check_refused(plan, addr, total, &[], &mut report);
    }
    Ok(report)
}

/// Probes, then the load while the observers watch (HTTP(S) targets; a `tcp://` target gets
/// the probes only).
/// `first`: the preflight's request when it succeeded (the first one-request probe).
fn active(
    ctx: &RunCtx<'_>,
    report: &mut Report,
    progress: &dyn Progress,
    interrupt: &AtomicBool,
    first: Option<HttpTiming>,
) -> Outcome {
    let (plan, addr) = (ctx.plan, ctx.addr);
    let t = &plan.target;
    // 1. Baseline probes.
    progress.stage(&format!(
        "probing {addr}: SYN RTT{}",
        if t.is_http() { " and one request" } else { "" }
    ));
    let mut early = Outcome::default();
    if let Some(refused) = probe(plan, ctx.host, addr, report, first) {
        early.observations.push(refused);
        let why = format!("nothing listens on {addr}");
        for stage in [CheckName::Load, CheckName::Capture, CheckName::Counters] {
            report.checks.push(Check::skipped(stage, why.clone()));
        }
        return early;
    }
    if !t.is_http() {
        report.checks.push(Check::skipped(
            CheckName::Load,
            "load is HTTP(S)-only; a tcp:// target gets the SYN RTT and connect() probes; \
             use --passive to watch its real traffic",
        ));
        report.checks.push(Check::skipped(
            CheckName::Capture,
            "no load to capture (tcp:// without --passive)",
        ));
        return early;
    }

    // 2. Observers, then the load while they watch.
    let mut running = start_observers(ctx, report);
    let capturing = running.iter().any(|o| o.name() == CheckName::Capture);
    progress.stage(&format!(
        "loading {} with {} connections for {:.1} s{}",
        t.input,
        plan.load.connections,
        plan.load.duration.as_secs_f64(),
        if capturing {
            " while capturing packets"
        } else {
            ""
        }
    ));
    let load = run_load(plan, ctx, progress, interrupt, &mut running);
    report.checks.push(match &load {
        Ok(_) => Check::ok(CheckName::Load),
        Err(e) => Check::failed(CheckName::Load, e.clone()),
    });
    report.measurements.load = load.ok();

    // 3. Observers finish (the capture is analyzed as it runs; this joins it).
    if capturing {
        progress.stage("analyzing captured packets");
    }
    let mut outcome = finish_observers(ctx, report, running);
    // After the capture: the probe's own connections stay out of the analysis.
    crate::keepalive::after_load(
        ctx,
        report.measurements.load.as_ref(),
        progress,
        &mut outcome,
    );
    let syn_rtt = report
        .measurements
        .probe
        .as_ref()
        .and_then(|p| p.syn.as_ref())
        .and_then(|s| s.median_ms);
    crate::pmtu::after_load(
        ctx,
        report.measurements.load.as_ref(),
        syn_rtt,
        progress,
        &mut outcome,
    );
    outcome
}

/// How often a passive window ticks (observers, progress, the interrupt flag).
const PASSIVE_TICK: Duration = Duration::from_millis(100);

/// What a passive run says in place of the probes and the load.
pub const PASSIVE_NOTE: &str = "passive: no traffic sent";

/// The observers watch the target's real traffic for the plan's duration; nothing is sent.
fn passive(
    ctx: &RunCtx<'_>,
    report: &mut Report,
    progress: &dyn Progress,
    interrupt: &AtomicBool,
) -> Outcome {
    let plan = ctx.plan;
    report.passive = true;
    for stage in [
        CheckName::Preflight,
        CheckName::SynProbe,
        CheckName::HttpProbe,
        CheckName::Load,
    ] {
        report.checks.push(Check::skipped(stage, PASSIVE_NOTE));
    }
    let mut running = start_observers(ctx, report);
    let capturing = running.iter().any(|o| o.name() == CheckName::Capture);
    let total = plan.load.duration;
    progress.stage(&format!(
        "watching traffic to port {} for {:.1} s{}; no traffic sent",
        ctx.addr.port(),
        total.as_secs_f64(),
        if capturing {
            " (capturing packets)"
        } else {
            " (no packet capture)"
        }
    ));
    let begun = Instant::now();
    loop {
        let elapsed = begun.elapsed();
        if elapsed >= total || interrupt.load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(PASSIVE_TICK.min(total - elapsed));
        let elapsed = begun.elapsed().min(total);
        for o in running.iter_mut() {
            o.tick(ctx, elapsed);
        }
        let seen = running.iter().find_map(|o| o.exchanges_seen());
        progress.watch_tick(elapsed, total, seen);
    }
    progress.end_ticks();
    if capturing {
        progress.stage("analyzing captured packets");
    }
    finish_observers(ctx, report, running)
}

/// Starts the observers the plan asks for; those that cannot run become checks.
fn start_observers(ctx: &RunCtx<'_>, report: &mut Report) -> Vec<Box<dyn Observer>> {
    let (planned, switched_off) = observers::for_plan(ctx.plan);
    report.checks.extend(switched_off);
    let mut running: Vec<Box<dyn Observer>> = Vec::new();
    for mut o in planned {
        match o.start(ctx) {
            Ok(()) => running.push(o),
            Err(check) => report.checks.push(check),
        }
    }
    running
}

fn finish_observers(ctx: &RunCtx<'_>, report: &Report, running: Vec<Box<dyn Observer>>) -> Outcome {
    let load = report.measurements.load.as_ref();
    let mut outcome = Outcome {
        load_p50_ms: load.map(|l| l.latency_ms.p50),
        load_connects: load.map(|l| ConnectOutcome {
            attempts: l.connects,
            addr_not_avail: l.errors.connect_addr_not_avail,
            remote: Some(ctx.addr),
        }),
        ..Outcome::default()
    };
    for o in running {
        o.finish(ctx, &mut outcome);
    }
    outcome
}

/// SYN RTT and one timed request; the refusal, when the target refused the connection.
fn probe(
    plan: &DiagnosePlan,
    host: &dyn Host,
    addr: SocketAddr,
    report: &mut Report,
    first: Option<HttpTiming>,
) -> Option<Observation> {
    let syn = host.syn_probe(
        addr,
        &SynProbeConfig {
            count: plan.syn_probes,
            ..SynProbeConfig::default()
        },
    );
    report.checks.push(match &syn.fallback_reason {
        None => Check::ok(CheckName::SynProbe),
        Some(why) => Check::ok_with(CheckName::SynProbe, why.clone()),
    });
    if !plan.target.is_http() {
        report.checks.push(Check::skipped(
            CheckName::HttpProbe,
            "a tcp:// target: no HTTP request is sent",
        ));
        let refused = syn.answered == 0 && syn.refused > 0;
        let refusal = refused.then(|| Observation::ConnectRefused {
            addr: addr.to_string(),
            syn_sent: syn.sent,
            syn_refused: syn.refused,
        });
        // Raw SYNs stop at the SYN/ACK; connect() also goes through the listener (a full
        // accept queue shows here). Without raw sockets the SYN probe already was connect().
        let connect = (!refused && syn.method == SynMethod::RawSyn).then(|| {
            host.connect_probe(
                addr,
                &SynProbeConfig {
                    count: plan.syn_probes,
                    ..SynProbeConfig::default()
                },
            )
        });
        report.measurements.probe = Some(ProbeSection {
            syn: Some(syn),
            http: None,
            connect,
        });
        return refusal;
    }
    let cfg = HttpProbeConfig {
        host: plan.target.host_header.clone(),
        path: plan.target.path.clone(),
        timeout: plan.load.timeout,
        connect_timeout: None,
        tls: plan.target.tls.clone(),
        protocol: plan.load.protocol,
    };
    let http = http_median(host, addr, &cfg, first);
    let refused =
        matches!(http, Err(ProbeError::Refused { .. })) || (syn.answered == 0 && syn.refused > 0);
    let http = match http {
        Ok(t) => {
            report.checks.push(match probe_request_differs(plan) {
                None => Check::ok(CheckName::HttpProbe),
                Some(note) => Check::ok_with(CheckName::HttpProbe, note),
            });
            Some(t)
        }
        Err(e) => {
            report
                .checks
                .push(Check::failed(CheckName::HttpProbe, error_chain(&e)));
            None
        }
    };
    let refusal = refused.then(|| Observation::ConnectRefused {
        addr: addr.to_string(),
        syn_sent: syn.sent,
        syn_refused: syn.refused,
    });
    report.measurements.probe = Some(ProbeSection {
        syn: Some(syn),
        http,
        connect: None,
    });
    refusal
}

/// The one-request probe sends a plain GET; say so when the load sends something else.
fn probe_request_differs(plan: &DiagnosePlan) -> Option<String> {
    let l = &plan.load;
    let differs =
        !l.method.eq_ignore_ascii_case("GET") || !l.headers.is_empty() || l.body.is_some();
    differs.then(|| {
        "the one-request probe sent a plain GET; -m/-H/--body apply to the load only".to_string()
    })
}

/// The request with the median total of [`HTTP_PROBES`], so one scheduling hiccup on a shared
/// host does not become the "one request" figure. The first error ends the probing. `first`:
/// a request already timed (the preflight's), counted as one of them.
fn http_median(
    host: &dyn Host,
    addr: SocketAddr,
    cfg: &HttpProbeConfig,
    first: Option<HttpTiming>,
) -> Result<HttpTiming, ProbeError> {
    let mut timings = Vec::with_capacity(HTTP_PROBES);
    timings.extend(first);
    while timings.len() < HTTP_PROBES {
        timings.push(host.http_probe(addr, cfg)?);
    }
    timings.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
    Ok(timings.swap_remove(HTTP_PROBES / 2))
}

fn run_load(
    plan: &DiagnosePlan,
    ctx: &RunCtx<'_>,
    progress: &dyn Progress,
    interrupt: &AtomicBool,
    observers: &mut [Box<dyn Observer>],
) -> Result<LoadResult, String> {
    let t = &plan.target;
    let mut cfg = LoadConfig::new(HttpTarget {
        addr: ctx.addr,
        host: t.host_header.clone(),
        path: t.path.clone(),
    });
    let l = &plan.load;
    cfg.connections = l.connections;
    if let Some(n) = l.threads {
        cfg.threads = n;
    }
    cfg.duration = l.duration;
    cfg.timeout = l.timeout;
    cfg.keepalive = l.keepalive;
    cfg.method = l.method.clone();
    cfg.headers = l.headers.clone();
    cfg.body = l.body.clone();
    cfg.rate = l.rate;
    cfg.protocol = l.protocol;
    cfg.tls = t.tls.clone();
    let result = ctx.host.load(&cfg, interrupt, &mut |p| {
        progress.load_tick(p.elapsed, l.duration, p.requests, p.errors);
        for o in observers.iter_mut() {
            o.tick(ctx, p.elapsed);
        }
    });
    progress.end_ticks();
    result.map_err(|e| error_chain(&e))
}

/// Detectors over what the observers saw, and the verdict.
fn finish(
    plan: &DiagnosePlan,
    mut report: Report,
    mut outcome: Outcome,
    interrupt: &AtomicBool,
    started: Instant,
) -> Report {
    let m = std::mem::take(&mut outcome.measurements);
    report.measurements.counters = m.counters;
    report.measurements.server_sockets = m.server_sockets;
    report.measurements.kernel = m.kernel;
    report.measurements.trace = m.trace;
    // How the load ran and what it got, for the detectors (who caused what). A passive run
    // had no load: the connections are the real clients'.
    let l = &plan.load;
    if !plan.passive {
        outcome.observations.push(Observation::RunConfig {
            keepalive: crate::keepalive::requested(plan),
            timeout_ms: u64::try_from(l.timeout.as_millis()).unwrap_or(u64::MAX),
            connections: u32::try_from(l.connections).unwrap_or(u32::MAX),
        });
    }
    if let Some(c) = outcome.cpu {
        outcome.observations.push(Observation::Cpu {
            machine_busy: c.machine_busy,
            own_busy: c.own_busy,
            cores: c.cores,
            server_wait_ms: c.server_wait_ms,
            server_cpu_ms: c.server_cpu_ms,
        });
    }
    if let Some(load) = &report.measurements.load {
        outcome
            .observations
            .push(Observation::Load(load_outcome(load)));
    }
    report.interrupted = interrupt.load(Ordering::Relaxed);
    crate::verdict::conclude(
        &mut report,
        outcome,
        plan.capture.snaplen,
        plan.capture.max_packets,
    );
    report.elapsed_s = started.elapsed().as_secs_f64();
    report
}

/// The load's result as the detectors see it, with the limits the load generator itself hit.
pub(crate) fn load_outcome(l: &LoadResult) -> LoadOutcome {
    let e = &l.errors;
    let mut client_limits = Vec::new();
    let first = l.first_error.as_deref().unwrap_or("").to_lowercase();
    if first.contains("too many open files") {
        client_limits.push("its file descriptors (too many open files)".to_string());
    }
    // Counted per error, not only when it came first.
    if e.connect_addr_not_avail > 0
        || first.contains("cannot assign requested address")
        || first.contains("eaddrnotavail")
    {
        client_limits.push(match e.connect_addr_not_avail {
            0 => "its local ports (cannot assign requested address)".to_string(),
            n => format!("its local ports: {n} connect() calls failed with EADDRNOTAVAIL"),
        });
    }
    LoadOutcome {
        responses: l.requests,
        status: l.status.clone(),
        connect_errors: e.connect,
        read_errors: e.read,
        write_errors: e.write,
        timeouts: e.timeout,
        connect_timeouts: e.connect_timeout,
        first_error: l.first_error.clone(),
        client_limits,
    }
}

/// `op: cause: cause`, each cause once.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let c = s.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
        src = s.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(connect_errors: u64, no_port: u64, first: &str) -> LoadResult {
        let errors = netdoctor_load::ErrorCounts {
            connect: connect_errors,
            connect_addr_not_avail: no_port,
            ..Default::default()
        };
        LoadResult {
            connections: 4,
            threads: 1,
            duration_s: 3.0,
            requests: 100,
            requests_per_s: 33.3,
            bytes_read: 0,
            transfer_per_s: 0.0,
            latency_ms: Default::default(),
            status: Default::default(),
            errors,
            connects: 100 + connect_errors,
            first_error: Some(first.to_string()),
            rate: None,
            latency_histogram: None,
            latency_curve: None,
            timeline: None,
            protocol: None,
            h2: None,
            cpu_wait: None,
            spin: None,
        }
    }

    #[test]
    fn counted_eaddrnotavail_is_a_client_limit_even_when_another_error_came_first() {
        let l = load_outcome(&load(40, 37, "connect 10.0.0.1:80: connection refused"));
        assert_eq!(l.client_limits.len(), 1, "{:?}", l.client_limits);
        assert!(
            l.client_limits[0].contains("local ports: 37 connect() calls failed"),
            "{:?}",
            l.client_limits
        );
    }

    #[test]
    fn other_connect_errors_are_no_client_limit() {
        let l = load_outcome(&load(40, 0, "connect 10.0.0.1:80: connection refused"));
        assert!(l.client_limits.is_empty(), "{:?}", l.client_limits);
    }
}

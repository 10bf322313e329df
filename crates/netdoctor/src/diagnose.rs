//! `netdoctor diagnose TARGET` (an http(s) URL or `tcp://HOST:PORT`; `--passive` watches the
//! real traffic instead of probing and loading): the CLI's side of the method. The method itself (plan, probes,
//! observers, load, detectors, verdict) lives in the `netdoctor-diagnose` crate; this file turns
//! the arguments into a [`DiagnosePlan`], runs it (inside `--netns` when asked), and prints.

use crate::cli::DiagnoseArgs;
use crate::output::{Progress, write_report};
use crate::stop::StopOnSignals;
use crate::target::parse_target;
use anyhow::Context;
use netdoctor_diagnose::{DiagnosePlan, SystemHost, TargetSpec};
use netdoctor_load::{HttpTarget, LoadConfig};
use netdoctor_report::Report;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub fn command(args: &DiagnoseArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    if args.compare.is_some() || args.baseline.is_some() {
        return crate::comparecmd::command(args, out);
    }
    let format = args.output.format().map_err(anyhow::Error::msg)?;
    let lang = args.output.lang().map_err(anyhow::Error::msg)?;
    let progress = Progress::new();
    let plan = plan(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    let signals = StopOnSignals::sigint_sigterm(&stop);
    let mut report = match &args.netns {
        None => diagnose(&plan, &progress, &stop)?,
        Some(ns) => {
            let (p, stop) = (progress.clone(), Arc::clone(&stop));
            netdoctor_lab::in_netns(ns, move || diagnose(&plan, &p, &stop))
                .with_context(|| format!("enter network namespace {ns}"))??
        }
    };
    let slo_code = crate::output::judge_slo(&mut report, args.slo.as_ref());
    if report.interrupted {
        progress.stage("interrupted: reporting what was measured until then");
    }
    if let Some(path) = &args.html {
        crate::output::write_html(&report, lang, path)?;
        progress.stage(&format!("HTML report written to {}", path.display()));
    }
    write_report(&report, format, lang, out)?;
    Ok(signals
        .exit_code()
        .unwrap_or(slo_code.unwrap_or(report.exit_code())))
}

/// The plan the arguments ask for.
pub fn plan(args: &DiagnoseArgs) -> anyhow::Result<DiagnosePlan> {
    let url = parse_target(&args.url).map_err(anyhow::Error::msg)?;
    let tls = netdoctor_load::TlsOptions::for_url(&url, args.insecure);
    let scheme = url.scheme;
    let mut plan = DiagnosePlan::new(TargetSpec {
        input: url.input,
        host: url.host,
        port: url.port,
        path: url.path,
        host_header: url.host_header,
        tls,
        scheme,
    });
    plan.passive = args.passive;
    plan.load.connections = args.connections;
    plan.load.threads = args.threads;
    plan.load.duration = args.duration;
    plan.load.timeout = args.timeout;
    plan.load.keepalive = !args.no_keepalive;
    plan.load.rate = args.rate;
    plan.load.protocol = if args.http2 {
        netdoctor_load::Protocol::Http2
    } else if args.http1 {
        netdoctor_load::Protocol::Http1
    } else {
        netdoctor_load::Protocol::Auto
    };
    plan.capture.enabled = !args.no_capture;
    plan.host = !args.no_host;
    plan.bpf = !args.no_host && !args.no_bpf;
    if let Some(n) = args.snaplen {
        plan.capture.snaplen = n;
        plan.capture.snaplen_chosen = true;
    }
    plan.capture.pcap = args.pcap.clone();
    plan.syn_probes = args.syn_probes;
    plan.dns = !args.no_dns;
    plan.trace = !args.no_trace;
    // A bad -H or an unreadable --body-file is a usage error before anything runs.
    let mut req = LoadConfig::new(HttpTarget {
        addr: SocketAddr::from(([127, 0, 0, 1], 1)),
        host: String::new(),
        path: String::new(),
    });
    crate::loadcmd::apply_request(&args.request, &mut req)?;
    plan.load.method = req.method;
    plan.load.headers = req.headers;
    plan.load.body = req.body;
    plan.validate().map_err(anyhow::Error::msg)?;
    Ok(plan)
}

/// Runs the plan on this machine. Errors only for what makes a run meaningless (an invalid
/// plan; a name that does not resolve when the DNS checks are off — with them it is a
/// diagnosis).
pub fn diagnose(
    plan: &DiagnosePlan,
    progress: &Progress,
    stop: &AtomicBool,
) -> anyhow::Result<Report> {
    Ok(netdoctor_diagnose::run(plan, &SystemHost, progress, stop)?)
}

impl netdoctor_diagnose::Progress for Progress {
    fn stage(&self, msg: &str) {
        Progress::stage(self, msg);
    }
    fn load_tick(&self, elapsed: Duration, total: Duration, requests: u64, errors: u64) {
        self.tick(elapsed, total, requests, errors);
    }
    fn watch_tick(&self, elapsed: Duration, total: Duration, exchanges: Option<u64>) {
        Progress::watch_tick(self, elapsed, total, exchanges);
    }
    fn end_ticks(&self) {
        Progress::end_ticks(self);
    }
}

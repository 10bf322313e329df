//! `netdoctor demo`: the reference case reproduced and diagnosed, for a newcomer's first run.
//!
//! Starts the lab (real nginx, `tcp_nodelay on` and `off`, in a server namespace), diagnoses
//! both servers from the client namespace exactly as `diagnose` would, prints them side by side
//! as `diagnose --compare` does (A = `tcp_nodelay off`, B = `on`: the fix, verified) with the
//! slow one's root cause, evidence and fix, and removes the lab — also on Ctrl-C.

use crate::cli::{DemoArgs, DemoServer};
use crate::diagnose::diagnose;
use crate::output::Progress;
use crate::target::parse_url;
use anyhow::Context;
use netdoctor_core::{FindingId, Verdict};
use netdoctor_diagnose::{DiagnosePlan, TargetSpec};
use netdoctor_lab::{Lab, LabConfig, LabGuard};
use netdoctor_report::compare::{self, Compared, Comparison, Origin};
use netdoctor_report::{Format, Lang, Report, json, terminal};
use std::io::Write;
use std::sync::atomic::AtomicBool;

/// The demo's own lab name, so it never touches a lab the user started with `lab start`.
pub const DEMO_LAB: &str = "nd-demo";

pub fn command(args: &DemoArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let format = args.output.format().map_err(anyhow::Error::msg)?;
    let lang = args.output.lang().map_err(anyhow::Error::msg)?;
    let progress = Progress::new();
    let cfg = LabConfig::new(DEMO_LAB);
    // A demo killed earlier (SIGKILL) may have left its lab: remove it first and say so.
    let stale = netdoctor_lab::remove_abandoned(&cfg)?;
    if !stale.is_empty() {
        progress.stage(&format!(
            "removed a demo lab left by an earlier run that was killed: {}",
            stale.join(", ")
        ));
    }
    netdoctor_lab::cleanup_on_signal(&cfg)?;
    let use_nginx = match args.server {
        DemoServer::Auto => Lab::nginx_available(),
        DemoServer::Nginx => true,
        DemoServer::Builtin => false,
    };
    let lab = if use_nginx {
        progress.stage(
            "starting the lab: nginx with tcp_nodelay on (:8080) and off (:8081) in a network namespace",
        );
        Lab::start(&cfg)
    } else {
        progress.stage(
            "using netdoctor's built-in reference server (for real nginx: apt-get install nginx-light), \
             which writes headers and body in two writes as nginx does, with TCP_NODELAY on (:8080) \
             and off (:8081)",
        );
        Lab::start_builtin(&cfg)
    };
    let guard = LabGuard::new(lab.context("start the demo lab")?);
    let server_kind = if guard.lab().is_builtin() {
        lang.t("demo-server-builtin")
    } else {
        lang.t("demo-server-nginx")
    };
    let lab = guard.lab();
    let mut runs: Vec<(String, Report)> = Vec::new();
    for server in lab.servers() {
        progress.stage(&format!(
            "diagnosing {} (tcp_nodelay {}) from namespace {}",
            server.url,
            if server.tcp_nodelay { "on" } else { "off" },
            lab.client_netns()
        ));
        let plan = demo_plan(&server.url, args)?;
        let p = progress.clone();
        let report = netdoctor_lab::in_netns(lab.client_netns(), move || {
            diagnose(&plan, &p, &AtomicBool::new(false))
        })
        .context("enter the lab's client namespace")??;
        let label = format!(
            "tcp_nodelay {}",
            if server.tcp_nodelay { "on" } else { "off" }
        );
        runs.push((label, report));
    }
    progress.stage("stopping the lab");
    drop(guard);

    let (on, off) = match runs.as_slice() {
        [a, b] if a.0.ends_with("on") => (&a.1, &b.1),
        [a, b] => (&b.1, &a.1),
        _ => anyhow::bail!("the lab has {} servers, expected 2", runs.len()),
    };
    let as_expected = off
        .findings
        .first()
        .is_some_and(|f| f.id == FindingId::NagleDelayedAck)
        && on.verdict == Verdict::Healthy;
    match format {
        Format::Json => {
            let both: Vec<&Report> = vec![on, off];
            json::write_pretty(&both, out)?;
        }
        Format::Terminal => render(on, off, &server_kind, as_expected, lang, out)?,
    }
    out.flush()?;
    Ok(if as_expected { 0 } else { 1 })
}

/// The diagnose defaults, with the demo's load.
fn demo_plan(url: &str, args: &DemoArgs) -> anyhow::Result<DiagnosePlan> {
    let url = parse_url(url).map_err(anyhow::Error::msg)?;
    let mut plan = DiagnosePlan::new(TargetSpec {
        input: url.input,
        host: url.host,
        port: url.port,
        path: url.path,
        host_header: url.host_header,
        tls: None,
        scheme: url.scheme,
    });
    plan.load.connections = args.connections;
    plan.load.duration = args.duration;
    plan.validate().map_err(anyhow::Error::msg)?;
    Ok(plan)
}

fn render(
    on: &Report,
    off: &Report,
    server_kind: &str,
    as_expected: bool,
    lang: Lang,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let connections = off.measurements.load.as_ref().map_or(0, |l| l.connections);
    writeln!(
        out,
        "{}\n{}\n{}\n",
        lang.t("demo-intro-1"),
        lang.ui(
            "demo-intro-2",
            &[("connections", connections.to_string().into())]
        ),
        lang.ui("demo-server", &[("server", server_kind.into())])
    )?;
    let run = |label: &str, report: &Report| Compared {
        label: label.into(),
        origin: Origin::Run,
        file: None,
        report: report.clone(),
    };
    let comparison = Comparison::new(run("tcp_nodelay off", off), run("tcp_nodelay on", on));
    compare::terminal::render_body_in(&comparison, lang, out)?;
    writeln!(out)?;
    writeln!(
        out,
        "{}\n{}\n",
        lang.t("demo-same-alone"),
        lang.t("demo-full-report")
    )?;
    writeln!(out, "{}", "─".repeat(92))?;
    terminal::render_in(off, lang, out)?;
    writeln!(out, "{}", "─".repeat(92))?;
    if as_expected {
        writeln!(
            out,
            "\n{}\n{}",
            lang.t("demo-as-expected"),
            lang.t("demo-try-it")
        )?;
    } else {
        let first = off
            .findings
            .first()
            .map_or(lang.t("demo-no-finding"), |f| f.id.to_string());
        writeln!(
            out,
            "\n{}\n{}",
            lang.ui(
                "demo-unexpected",
                &[
                    ("on", terminal::word_in(&on.verdict, lang).into()),
                    ("off", first.into())
                ]
            ),
            lang.t("demo-unexpected-2")
        )?;
    }
    // Built without the eBPF observers (no clang/libbpf-dev/bpftool at build time): say what
    // installing them adds, once, at the end.
    if !netdoctor_bpf::BUILT {
        writeln!(out, "\n{}", lang.t("demo-no-ebpf"))?;
    }
    Ok(())
}

//! `netdoctor lab start|status|stop`: the reference case, and the classic slow-request causes
//! (`--case`), as places to try things. A case other than `nagle` runs in a detached process of
//! this binary (`lab run-case`, hidden), re-executed from `/proc/self/exe`; see
//! `netdoctor_lab::cases`.

use crate::cli::{LabAction, LabArgs};
use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use netdoctor_lab::cases::{self, Case, CaseInfo};
use netdoctor_lab::{Lab, LabConfig};
use netdoctor_report::{Format, json};
use std::ffi::OsString;
use std::io::Write;

/// `lab start` options.
#[derive(Debug, Clone, Args)]
pub struct LabStartArgs {
    /// Which case to build (default: nagle, the reference lab). Each prints the command that
    /// diagnoses it and the finding to expect.
    #[arg(long, value_name = "CASE", value_parser = case_parser())]
    pub case: Option<Case>,
}

/// `lab run-case` (hidden): the process that runs a case until `lab stop`.
#[derive(Debug, Clone, Args)]
pub struct RunCaseArgs {
    #[arg(long, value_parser = case_parser())]
    pub case: Case,
}

/// `--case`: one of the lab's cases, each listed with its one line in `--help`.
fn case_parser() -> impl TypedValueParser<Value = Case> {
    PossibleValuesParser::new(cases::ALL.map(|c| PossibleValue::new(c.name()).help(c.summary())))
        .map(|s| Case::parse(&s).expect("a possible value is a case"))
}

pub fn command(args: &LabArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let as_json = args.output.format().map_err(anyhow::Error::msg)? == Format::Json;
    let case = match &args.action {
        LabAction::Start(a) => a.case,
        LabAction::RunCase(a) => Some(a.case),
        _ => None,
    };
    let default_name = case.map_or(DEFAULT_LAB.to_string(), Case::default_lab_name);
    let name = args.name.as_deref().unwrap_or(&default_name);
    let cfg = LabConfig::new(name);
    match &args.action {
        LabAction::RunCase(a) => {
            let mut ready = std::io::stdout();
            let Err(e) = cases::run::run_case(&cfg, a.case, &mut ready);
            let _ = writeln!(ready, "error: {e}");
            Err(e.into())
        }
        LabAction::Start(LabStartArgs {
            case: Some(case), ..
        }) if *case != Case::Nagle => {
            // Ctrl-C while the case is being built removes what was built so far.
            netdoctor_lab::cleanup_on_signal(&cfg)?;
            let run_args: Vec<OsString> =
                ["lab", "run-case", "--case", case.name(), "--name", name]
                    .into_iter()
                    .map(OsString::from)
                    .collect();
            // This binary again (its path, so `ps` names it; /proc/self/exe when unknown).
            let exe = std::env::current_exe()
                .ok()
                .filter(|p| p.exists())
                .unwrap_or_else(|| "/proc/self/exe".into());
            let info = cases::spawn::start_case(&cfg, *case, &exe, &run_args)?;
            if as_json {
                json::write_pretty(&info, out)?;
            } else {
                write_case(&info, out)?;
            }
            Ok(0)
        }
        LabAction::Start(start) => {
            // Ctrl-C while the lab is being built removes what was built so far.
            netdoctor_lab::cleanup_on_signal(&cfg)?;
            let lab = Lab::start(&cfg)?;
            if as_json && start.case.is_some() {
                json::write_pretty(&Case::Nagle.info(&cfg), out)?;
            } else if as_json {
                json::write_pretty(lab.servers(), out)?;
            } else {
                writeln!(out, "lab '{name}' is running:")?;
                writeln!(
                    out,
                    "  server namespace {}, client namespace {}",
                    lab.server_netns(),
                    lab.client_netns()
                )?;
                for s in lab.servers() {
                    writeln!(
                        out,
                        "  {:<12} {}  (tcp_nodelay {})",
                        s.name,
                        s.url,
                        if s.tcp_nodelay { "on" } else { "off" }
                    )?;
                }
                writeln!(out, "\nTry, from the client namespace:")?;
                for s in lab.servers() {
                    writeln!(
                        out,
                        "  netdoctor diagnose --netns {} {}",
                        lab.client_netns(),
                        s.url
                    )?;
                }
                writeln!(
                    out,
                    "Expect nagle_delayed_ack from :{} (tcp_nodelay off); :{} is healthy.",
                    netdoctor_lab::PORT_NODELAY_OFF,
                    netdoctor_lab::PORT_NODELAY_ON
                )?;
                writeln!(out, "Stop it with: netdoctor lab stop{}", name_flag(name))?;
            }
            Ok(0)
        }
        LabAction::Status if args.name.is_none() => {
            let labs = netdoctor_lab::list_labs()?;
            let mut all = Vec::new();
            for l in &labs {
                all.push(Lab::status(&l.config())?);
            }
            if as_json {
                json::write_pretty(&all, out)?;
            } else if all.is_empty() {
                writeln!(out, "no lab is running (none left under /run/netdoctor)")?;
            } else {
                for st in &all {
                    writeln!(out, "{st}")?;
                }
            }
            Ok(if all.iter().any(|s| s.running) {
                0
            } else {
                NOT_RUNNING
            })
        }
        LabAction::Stop if args.name.is_none() => {
            // Every lab on the machine, also other users' and running tests': say which first.
            let labs = netdoctor_lab::list_labs()?;
            if !labs.is_empty() {
                let names: Vec<&str> = labs.iter().map(|l| l.name.as_str()).collect();
                eprintln!(
                    "removing every lab netdoctor left on this machine ({}): {}",
                    names.len(),
                    names.join(", ")
                );
            }
            let stopped = netdoctor_lab::stop_all()?;
            if as_json {
                json::write_pretty(&stopped, out)?;
            } else if stopped.is_empty() {
                writeln!(out, "no lab left by netdoctor; nothing to remove")?;
            } else {
                for l in &stopped {
                    writeln!(out, "lab '{}' stopped; removed:", l.name)?;
                    for r in &l.removed {
                        writeln!(out, "  {r}")?;
                    }
                    if let Some(e) = &l.error {
                        writeln!(out, "  incomplete: {e}")?;
                    }
                }
            }
            Ok(if stopped.iter().any(|l| l.error.is_some()) {
                crate::EXIT_ERROR
            } else {
                0
            })
        }
        LabAction::Status => {
            let status = Lab::status(&cfg)?;
            if as_json {
                json::write_pretty(&status, out)?;
            } else {
                writeln!(out, "{status}")?;
            }
            Ok(if status.running { 0 } else { NOT_RUNNING })
        }
        LabAction::Stop => {
            let removed = netdoctor_lab::stop(&cfg)?;
            if as_json {
                json::write_pretty(&removed, out)?;
            } else if removed.is_empty() {
                writeln!(out, "lab '{name}' was not running; nothing to remove")?;
            } else {
                writeln!(out, "lab '{name}' stopped; removed:")?;
                for r in &removed {
                    writeln!(out, "  {r}")?;
                }
            }
            Ok(0)
        }
    }
}

/// `lab status`'s exit code when the lab (without `--name`: every lab) is not running.
const NOT_RUNNING: i32 = 1;

/// What a started case is, how to diagnose it and what to expect.
fn write_case(info: &CaseInfo, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "lab '{}' is running case {}: {}",
        info.lab, info.case, info.summary
    )?;
    for line in &info.built {
        writeln!(out, "  {line}")?;
    }
    if let Some(pid) = info.pid {
        writeln!(
            out,
            "  case process {pid} (its servers, until `{}`)",
            info.stop
        )?;
    }
    writeln!(out, "\nDiagnose it with:\n  {}", info.command)?;
    writeln!(out, "Expect: {}", info.expect.join(", "))?;
    writeln!(out, "  ({})", info.note)?;
    writeln!(out, "Stop it with: {}", info.stop)
}

/// The lab `start` makes when no `--name` is given.
const DEFAULT_LAB: &str = "netdoctor";

fn name_flag(name: &str) -> String {
    if name == DEFAULT_LAB {
        String::new()
    } else {
        format!(" --name {name}")
    }
}

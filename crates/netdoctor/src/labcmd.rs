//! `netdoctor lab start|status|stop`: the reference case as a place to try things.

use crate::cli::{LabAction, LabArgs};
use netdoctor_lab::{Lab, LabConfig};
use netdoctor_report::{Format, json};
use std::io::Write;

pub fn command(args: &LabArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let as_json = args.output.format().map_err(anyhow::Error::msg)? == Format::Json;
    let name = args.name.as_deref().unwrap_or(DEFAULT_LAB);
    let cfg = LabConfig::new(name);
    match args.action {
        LabAction::Start => {
            // Ctrl-C while the lab is being built removes what was built so far.
            netdoctor_lab::cleanup_on_signal(&cfg)?;
            let lab = Lab::start(&cfg)?;
            if as_json {
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
            Ok(0)
        }
        LabAction::Stop if args.name.is_none() => {
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
            Ok(0)
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

/// The lab `start` makes when no `--name` is given.
const DEFAULT_LAB: &str = "netdoctor";

fn name_flag(name: &str) -> String {
    if name == DEFAULT_LAB {
        String::new()
    } else {
        format!(" --name {name}")
    }
}

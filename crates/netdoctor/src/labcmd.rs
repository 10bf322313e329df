//! `netdoctor lab start|status|stop`: the reference case as a place to try things.

use crate::cli::{LabAction, LabArgs};
use netdoctor_lab::{Lab, LabConfig};
use netdoctor_report::{Format, json};
use std::io::Write;

pub fn command(args: &LabArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let as_json = args.output.format().map_err(anyhow::Error::msg)? == Format::Json;
    let cfg = LabConfig::new(&args.name);
    match args.action {
        LabAction::Start => {
            // Ctrl-C while the lab is being built removes what was built so far.
            netdoctor_lab::cleanup_on_signal(&cfg)?;
            let lab = Lab::start(&cfg)?;
            if as_json {
                json::write_pretty(lab.servers(), out)?;
            } else {
                writeln!(out, "lab '{}' is running:", args.name)?;
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
                    "Stop it with: netdoctor lab stop{}",
                    name_flag(&args.name)
                )?;
            }
            Ok(0)
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
                writeln!(
                    out,
                    "lab '{}' was not running; nothing to remove",
                    args.name
                )?;
            } else {
                writeln!(out, "lab '{}' stopped; removed:", args.name)?;
                for r in &removed {
                    writeln!(out, "  {r}")?;
                }
            }
            Ok(0)
        }
    }
}

fn name_flag(name: &str) -> String {
    if name == "netdoctor" {
        String::new()
    } else {
        format!(" --name {name}")
    }
}

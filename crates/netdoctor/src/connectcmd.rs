//! `netdoctor connect HOST:PORT`: the connection-setup benchmark.
//!
//! Prints a text report, or with `--format json` one JSON object
//! (`"schema": "netdoctor.connect/v1"`); both are sinks of [`netdoctor_report::ConnectReport`].
//! Exit codes: 0 when at least one connect completed; 2 on usage errors or when every connect
//! failed.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use netdoctor_load::ConnectConfig;
use netdoctor_report::{ConnectReport, Format};

use crate::cli::OutputArgs;
use crate::output::Progress;
use crate::stop::StopOnSignals;
use crate::target::{parse_duration, parse_host_port, positive, positive_u64};

const CONNECT_AFTER_HELP: &str = "\
Each connect is timed from connect() to the completed handshake, then closed. A connect taking \
1 s or more (or timing out after 1 s or more) is a SYN-retransmit suspect: Linux retransmits an \
unanswered SYN after 1 s, then again after growing intervals (the schedule depends on the kernel: \
exponential 1, 3, 7 s on most, shorter steps with net.ipv4.tcp_syn_linear_timeouts). Failures are counted by errno: EADDRNOTAVAIL means the \
local ports ran out (ip_local_port_range, TIME_WAIT), ECONNREFUSED that nothing listens.

Exit status: 0 when at least one connect completed (failures are reported); 2 on usage errors or \
when every connect failed.";

/// `netdoctor connect HOST:PORT`: the connection-setup benchmark.
#[derive(Debug, Clone, Args)]
#[command(after_help = CONNECT_AFTER_HELP)]
pub struct ConnectArgs {
    /// Target HOST:PORT (or an http:// URL: its host and port).
    pub target: String,
    /// Number of connects.
    #[arg(short = 'n', long, default_value_t = 1000, value_parser = positive_u64)]
    pub count: u64,
    /// Connects in flight at once.
    #[arg(short = 'c', long, default_value_t = 1, value_parser = positive)]
    pub concurrency: usize,
    /// A connect without a completed handshake after this is given up (counted as `timeout`).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub timeout: Duration,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn connect_command(args: &ConnectArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let format = args.output.format().map_err(anyhow::Error::msg)?;
    let addr = parse_host_port(&args.target)?;
    let mut cfg = ConnectConfig::new(addr);
    cfg.count = args.count;
    cfg.concurrency = args.concurrency;
    cfg.timeout = args.timeout;
    let progress = Progress::new();
    if format == Format::Terminal {
        progress.stage(&format!(
            "connect {addr}: {} connects, {} at a time",
            cfg.count, cfg.concurrency
        ));
    }
    let live = std::env::var_os("NETDOCTOR_QUIET").is_none() && std::io::stderr().is_terminal();
    let stop = Arc::new(AtomicBool::new(false));
    let sig = StopOnSignals::sigint(&stop);
    let count = cfg.count;
    let res = netdoctor_load::connect_bench(&cfg, &stop, &mut |p| {
        if live {
            let _ = write!(
                std::io::stderr(),
                "\r\x1b[2K  connect {:>5.1}s  {}/{count} connected  {} failed",
                p.elapsed.as_secs_f64(),
                p.requests,
                p.errors
            );
        }
    });
    if live {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    let interrupted = stop.load(Ordering::Relaxed);
    drop(sig);
    let res = res?;
    if res.connected == 0 && res.attempts > 0 {
        bail!(
            "{}: all {} connects failed",
            res.first_error
                .clone()
                .unwrap_or_else(|| format!("connect {addr}: failed")),
            res.attempts
        );
    }
    let report = ConnectReport {
        input: args.target.clone(),
        address: addr,
        timeout: cfg.timeout,
        interrupted,
        result: res,
    };
    format.write(&report, out)?;
    Ok(0)
}

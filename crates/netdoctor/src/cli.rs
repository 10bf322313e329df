//! Command-line interface (clap derive). Every long-running command has `--json`.

use crate::target::parse_duration;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "netdoctor",
    version,
    about = "Why did my network requests get slow? Probes, loads, captures and names the root cause.",
    long_about = "netdoctor runs the layered method performance engineers apply by hand (SYN RTT, one \
request, concurrent load, packet capture, kernel counters), names the root cause with its evidence, \
and says what to change.\n\nStart with `netdoctor demo` (needs root and nginx-light).\n\nExit codes: \
0 healthy, 1 problem found, 2 usage or runtime error, 3 inconclusive."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Diagnose an HTTP server: SYN RTT, one request, concurrent load with packet capture, findings.
    Diagnose(DiagnoseArgs),
    /// Run the same detectors on a capture file (pcap or pcapng, e.g. from tcpdump).
    Analyze(AnalyzeArgs),
    /// The reference lab: nginx with tcp_nodelay on and off in network namespaces (needs root).
    Lab(LabArgs),
    /// Reproduce the reference case (nginx + Nagle + delayed ACK) and diagnose it; cleans up after.
    Demo(DemoArgs),
    /// HTTP load generator (wrk-like closed loop; `--rate` for wrk2-like constant rate).
    Load(crate::loadcmd::LoadArgs),
    /// Connection-setup benchmark: N connect()+close, per-connect latency, failures by errno.
    Connect(crate::loadcmd::ConnectArgs),
    /// The host's network health: listener queues, sockets, conntrack, counters, sysctls; --watch for rates.
    Host(crate::hostcmd::HostArgs),
}

#[derive(Debug, Clone, Args)]
pub struct DiagnoseArgs {
    /// Target URL, e.g. http://127.0.0.1:8080/ (http only; `host:port` means http://host:port/).
    pub url: String,
    /// Concurrent keep-alive connections during the load.
    #[arg(short = 'c', long, default_value_t = 100)]
    pub connections: usize,
    /// Load threads (default: 2, or 1 on a single core).
    #[arg(short = 't', long)]
    pub threads: Option<usize>,
    /// How long to load the server, e.g. 5s, 500ms, 1m.
    #[arg(short = 'd', long, default_value = "5s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Per-request timeout during the load and the probes.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// One connection per request instead of keep-alive.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Write the captured packets to this file (pcap, readable by tshark/Wireshark/tcpdump).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Bytes kept per captured packet (headers and the start of HTTP messages fit in 256).
    #[arg(long, default_value_t = 256)]
    pub snaplen: u32,
    /// Do not capture packets (without a capture, transport-level causes cannot be seen).
    #[arg(long)]
    pub no_capture: bool,
    /// Number of SYN probes for the baseline RTT.
    #[arg(long, default_value_t = 5)]
    pub syn_probes: u32,
    /// Run the whole diagnosis from inside this network namespace (e.g. the lab's client:
    /// `--netns netdoctor-cli`).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Print the report as JSON (schema netdoctor.report/v1).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct AnalyzeArgs {
    /// Capture file: pcap or pcapng (Ethernet, Linux cooked v1/v2, loopback, raw IP).
    pub file: PathBuf,
    /// The server's TCP port, when the capture does not show connection handshakes.
    #[arg(long)]
    pub server_port: Option<u16>,
    /// Print the report as JSON (schema netdoctor.report/v1).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub action: LabAction,
    /// Lab name: namespaces are <name>-srv and <name>-cli.
    #[arg(long, default_value = "netdoctor", global = true)]
    pub name: String,
    /// Print as JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum LabAction {
    /// Create the namespaces and start nginx (tcp_nodelay on at :8080, off at :8081).
    Start,
    /// Show whether the lab runs and whether its servers answer.
    Status,
    /// Stop nginx and remove the namespaces (safe to run when nothing runs).
    Stop,
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Load duration for each server.
    #[arg(short = 'd', long, default_value = "4s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Concurrent connections for each server.
    #[arg(short = 'c', long, default_value_t = 100)]
    pub connections: usize,
    /// Which servers to run: nginx when installed, else the built-in reference server (auto);
    /// or force one.
    #[arg(long, value_enum, default_value_t = DemoServer::Auto)]
    pub server: DemoServer,
    /// Print both reports as a JSON array instead of the side-by-side summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DemoServer {
    Auto,
    Nginx,
    Builtin,
}

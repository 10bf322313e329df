//! Command-line interface (clap derive). Every command takes `--format terminal|json` (and
//! `--json`, its shorthand) through one shared [`OutputArgs`]; numeric flags reject zero and
//! nonsense with a usage error instead of changing the value silently.

use crate::target::{parse_duration, positive, positive_u32};
use clap::{Args, Parser, Subcommand};
use netdoctor_diagnose::plan::defaults;
use netdoctor_report::Format;
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
    Connect(crate::connectcmd::ConnectArgs),
    /// Name resolution timed: resolver path, getaddrinfo, each nameserver over UDP/TCP, PTR.
    Dns(crate::dnscmd::DnsArgs),
    /// TCP/UDP/ICMP traceroute in rounds: per-hop loss, latency, jitter (mtr-like).
    Trace(crate::tracecmd::TraceArgs),
    /// Node agent: passive windows over local ports, findings as Prometheus metrics and OTLP.
    Watch(crate::watchcmd::WatchArgs),
    /// The host's network health: listener queues, sockets, conntrack, counters, sysctls; --watch for rates.
    Host(crate::hostcmd::HostArgs),
}

impl Cli {
    /// The output options of the command.
    pub fn output(&self) -> &OutputArgs {
        match &self.command {
            Command::Diagnose(a) => &a.output,
            Command::Analyze(a) => &a.output,
            Command::Lab(a) => &a.output,
            Command::Demo(a) => &a.output,
            Command::Load(a) => &a.output,
            Command::Connect(a) => &a.output,
            Command::Dns(a) => &a.output,
            Command::Trace(a) => &a.output,
            Command::Watch(a) => &a.output,
            Command::Host(a) => &a.output,
        }
    }
}

/// How results are written: `--format NAME`, or `--json` for `--format json`.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputArgs {
    /// Output format: `terminal` (for people; colour only on a terminal without NO_COLOR) or
    /// `json` (one object, schema netdoctor.report/v1; load/v1 and connect/v1 for those commands).
    #[arg(
        long,
        value_name = "FORMAT",
        global = true,
        value_parser = format_parser()
    )]
    pub format: Option<Format>,
    /// Shorthand for `--format json`.
    #[arg(long, global = true)]
    pub json: bool,
}

/// `--format`: one of [`Format::NAMES`] (listed in `--help` and in the error for a bad name).
fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Format::NAMES)
        .map(|s| s.parse::<Format>().unwrap_or_default())
}

impl OutputArgs {
    /// The format asked for; `--json` with `--format` other than json is a usage error.
    pub fn format(&self) -> Result<Format, String> {
        match (self.json, self.format) {
            (true, Some(f)) if f != Format::Json => Err(format!(
                "--json conflicts with --format {f} (--json is short for --format json)"
            )),
            (true, _) => Ok(Format::Json),
            (false, f) => Ok(f.unwrap_or_default()),
        }
    }

    /// Output options for `format`.
    pub fn of(format: Format) -> OutputArgs {
        OutputArgs {
            format: Some(format),
            json: false,
        }
    }
}

/// The request sent by `diagnose` and `load` (wrk's `-H`, plus method and body).
#[derive(Debug, Clone, Default, Args)]
pub struct RequestArgs {
    /// Add a request header, e.g. -H 'Accept: text/html' (repeatable; a Host here replaces the
    /// URL's).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Request body (a Content-Length header is added).
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the request body from this file.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct DiagnoseArgs {
    /// Target URL, e.g. http://127.0.0.1:8080/ (http only; `host:port` means http://host:port/).
    pub url: String,
    /// Concurrent keep-alive connections during the load.
    #[arg(short = 'c', long, default_value_t = defaults::CONNECTIONS, value_parser = positive)]
    pub connections: usize,
    /// Load threads (default: 2, or 1 on a single core).
    #[arg(short = 't', long, value_parser = positive)]
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
    /// For https:// targets: accept any certificate (self-signed, expired, another name), like
    /// curl's -k. The handshake's signatures are still checked.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Write the captured packets to this file (pcap, readable by tshark/Wireshark/tcpdump).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Bytes kept per captured packet, 96 to 262144 (headers and the start of HTTP messages fit
    /// in 256).
    #[arg(long, default_value_t = defaults::SNAPLEN, value_parser = snaplen)]
    pub snaplen: u32,
    /// Do not capture packets (without a capture, transport-level causes cannot be seen).
    #[arg(long)]
    pub no_capture: bool,
    /// Do not run the host observers (listener queue, socket states, conntrack, interfaces,
    /// sysctls, kernel log) nor eBPF.
    #[arg(long)]
    pub no_host: bool,
    /// Do not load the eBPF programs (kernel drop reasons, retransmits, state changes).
    #[arg(long)]
    pub no_bpf: bool,
    /// Number of SYN probes for the baseline RTT.
    #[arg(long, default_value_t = defaults::SYN_PROBES, value_parser = positive_u32)]
    pub syn_probes: u32,
    /// Run the whole diagnosis from inside this network namespace (e.g. the lab's client:
    /// `--netns netdoctor-cli`).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Also write the report as one self-contained HTML page (charts, the flow graph of each
    /// finding's packets; no script, nothing fetched) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = ANALYZE_AFTER_HELP)]
pub struct AnalyzeArgs {
    /// Capture file: pcap or pcapng, optionally gzip'd (Ethernet, Linux cooked v1/v2, loopback,
    /// raw IP); `-` reads standard input (`tcpdump -w - | netdoctor analyze -`); FIFOs work.
    pub file: PathBuf,
    /// The server's TCP port, when the capture does not show connection handshakes.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub server_port: Option<u16>,
    /// Keep reading as the file grows (like `tail -f`) until Ctrl-C, SIGTERM, --follow-timeout
    /// or --follow-idle; then report. Regular files only: a pipe's end is final.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// With --follow: stop and report after this long in total, e.g. 30s, 5m.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "follow")]
    pub follow_timeout: Option<Duration>,
    /// With --follow: stop and report when the file has not grown for this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "follow")]
    pub follow_idle: Option<Duration>,
    /// Also write the report as one self-contained HTML page (charts, the flow graph of each
    /// finding's packets; no script, nothing fetched) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

const ANALYZE_AFTER_HELP: &str = "\
Input: a pcap or pcapng file, gzip'd or not (detected by its first bytes, not its name), a FIFO, \
or `-` for standard input. A capture cut short is analyzed up to the cut, with a warning.";

#[derive(Debug, Clone, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub action: LabAction,
    /// Lab name: namespaces are <name>-srv and <name>-cli (`start`: default netdoctor). Without
    /// it, `stop` removes every lab netdoctor left and `status` lists them all.
    #[arg(long, global = true)]
    pub name: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
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
    #[arg(short = 'c', long, default_value_t = 100, value_parser = positive)]
    pub connections: usize,
    /// Which servers to run: nginx when installed, else the built-in reference server (auto);
    /// or force one.
    #[arg(long, value_enum, default_value_t = DemoServer::Auto)]
    pub server: DemoServer,
    // `--format json` prints both reports as a JSON array instead of the side-by-side summary.
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DemoServer {
    Auto,
    Nginx,
    Builtin,
}

/// The smallest `--snaplen`: Ethernet, IPv6 and a TCP header with options fit.
pub const MIN_SNAPLEN: u32 = 96;
/// The largest `--snaplen` (tcpdump's maximum; what capture files are read with).
pub const MAX_SNAPLEN: u32 = netdoctor_observe::pcapfile::MAX_CAPLEN;

fn snaplen(s: &str) -> Result<u32, String> {
    let n = positive_u32(s)?;
    if n < MIN_SNAPLEN {
        return Err(format!(
            "must be at least {MIN_SNAPLEN} (the link, IP and TCP headers must fit)"
        ));
    }
    if n > MAX_SNAPLEN {
        return Err(format!("must be at most {MAX_SNAPLEN}"));
    }
    Ok(n)
}

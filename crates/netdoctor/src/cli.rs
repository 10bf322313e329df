//! Command-line interface (clap derive). Every command takes `--format terminal|json` (and
//! `--json`, its shorthand) through one shared [`OutputArgs`]; numeric flags reject zero and
//! nonsense with a usage error instead of changing the value silently.

use crate::target::{parse_duration, positive, positive_u32};
use clap::{Args, Parser, Subcommand};
use netdoctor_diagnose::plan::defaults;
use netdoctor_report::{Format, Lang};
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
0 healthy, 1 problem found, 2 usage or runtime error, 3 inconclusive. `diagnose --compare` and `--baseline`: 0 when the second run (B) is healthy and not worse, 1 when B still has a problem or got worse. With --slo: 0 every objective passed, 1 one failed, 3 one could not be judged."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Diagnose a server: SYN RTT, one request, concurrent load with packet capture, findings;
    /// --passive watches its real traffic instead (http(s):// or tcp://HOST:PORT).
    Diagnose(DiagnoseArgs),
    /// Run the same detectors on a capture file (pcap or pcapng, e.g. from tcpdump).
    Analyze(AnalyzeArgs),
    /// Labs in network namespaces (needs root): the reference case, or --case backlog, syn-flood, slow-dns, ….
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
    /// Model Context Protocol server on stdio: diagnose, analyze, compare, host, dns and trace
    /// as tools for an assistant, each returning the JSON report.
    Mcp(McpArgs),
    /// TCP/UDP throughput, iperf3-compatible client and server (-P, -R, --bidir, -t, -b).
    Throughput(crate::throughputcmd::ThroughputArgs),
    /// Print shell completions: `source <(netdoctor completions bash)`, or save them where your
    /// shell loads completions from (bash, zsh, fish, elvish, powershell).
    Completions(crate::manpages::CompletionsArgs),
    /// Write the man pages into a directory: netdoctor.1 and one per command
    /// (netdoctor-diagnose.1, …), from the same definition as --help.
    Man(crate::manpages::ManArgs),
}

/// `netdoctor mcp`: no options; the client speaks JSON-RPC on stdin/stdout.
#[derive(Debug, Clone, Args)]
pub struct McpArgs {}

/// The output options of a command that has none of its own (`mcp`, `completions`, `man`).
static NO_OUTPUT: OutputArgs = OutputArgs {
    format: None,
    json: false,
    lang: None,
};

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
            Command::Mcp(_) => &NO_OUTPUT,
            Command::Throughput(a) => &a.output,
            // They print no report: the defaults (terminal) stand.
            Command::Completions(_) | Command::Man(_) => &NO_OUTPUT,
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
    /// Language of the terminal and HTML reports of diagnose, analyze and demo: `en` or `zh`
    /// (default: NETDOCTOR_LANG, else `zh` when LC_ALL/LC_MESSAGES/LANG starts with zh).
    /// JSON is the same in every language; the other commands print English.
    #[arg(long, value_name = "LANG", global = true, value_parser = lang_parser())]
    pub lang: Option<Lang>,
}

/// `--lang`: one of [`Lang::NAMES`].
fn lang_parser() -> impl clap::builder::TypedValueParser<Value = Lang> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Lang::NAMES)
        .map(|s| s.parse::<Lang>().unwrap_or_default())
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
            lang: None,
        }
    }

    /// The report language: `--lang`, else from the environment ([`Lang::from_env`]).
    pub fn lang(&self) -> Result<Lang, String> {
        match self.lang {
            Some(l) => Ok(l),
            None => Lang::from_env(|k| std::env::var(k).ok()),
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
#[command(after_help = DIAGNOSE_AFTER_HELP)]
pub struct DiagnoseArgs {
    /// Target: http(s)://HOST[:PORT]/PATH (`host:port` means http://host:port/), or
    /// tcp://HOST:PORT for any TCP protocol (probes only; with --passive, its traffic).
    #[arg(value_name = "TARGET")]
    pub url: String,
    /// Send nothing: watch the target port's real traffic for -d (capture, counters, the
    /// server's socket options, host collectors), then the same detectors and verdict.
    /// Ctrl-C ends the window early and still reports.
    #[arg(long, conflicts_with_all = ["connections", "threads", "no_keepalive", "syn_probes"])]
    pub passive: bool,
    /// Concurrent keep-alive connections during the load.
    #[arg(short = 'c', long, default_value_t = defaults::CONNECTIONS, value_parser = positive)]
    pub connections: usize,
    /// Load threads (default: 2, or 1 on a single core).
    #[arg(short = 't', long, value_parser = positive)]
    pub threads: Option<usize>,
    /// How long to load the server (with --passive: to watch it), e.g. 5s, 500ms, 1m.
    #[arg(short = 'd', long, default_value = "5s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Per-request timeout during the load and the probes.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// One connection per request instead of keep-alive.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Open loop: send this many requests per second in total, whatever the answers take
    /// (wrk2-like, latency from each request's intended send time) instead of a closed loop.
    /// With --compare: both runs at this rate (reported as the offered rate).
    #[arg(long, value_name = "REQ/S", value_parser = positive_rate, conflicts_with = "passive")]
    pub rate: Option<f64>,
    /// Speak HTTP/2 in the probes and the load: h2c with prior knowledge on an http:// URL,
    /// ALPN `h2` only on https://. Without it, https:// offers h2 and http/1.1 and speaks the
    /// server's choice (the report names it); http:// is HTTP/1.1.
    #[arg(long, conflicts_with_all = ["http1", "passive"])]
    pub http2: bool,
    /// Speak HTTP/1.1 only (ALPN offers only http/1.1 on https://).
    #[arg(long = "http1.1", id = "http1", conflicts_with = "passive")]
    pub http1: bool,
    /// Service-level objectives to judge the run against, e.g. 'p99<50ms,errors<0.1%'
    /// (p50 p75 p90 p99 p999 max mean in us/ms/s; errors and stalled in %; rps). Each gets
    /// pass/fail with its margin, or inconclusive when too few requests were measured; the
    /// exit code is then the SLO's: 0 pass, 1 fail, 3 inconclusive. With --compare/--baseline:
    /// judged on both runs, the exit code is B's.
    #[arg(long, value_name = "OBJECTIVES", value_parser = parse_slo)]
    pub slo: Option<netdoctor_report::Slo>,
    /// For https:// targets: accept any certificate (self-signed, expired, another name), like
    /// curl's -k. The handshake's signatures are still checked. Without it, a certificate that
    /// does not verify ends the run at the preflight (tls_verify_failed).
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Write the captured packets to this file (pcap, readable by tshark/Wireshark/tcpdump).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Bytes kept per captured packet, 96 to 262144 [default: 256: headers and the start of
    /// HTTP messages fit; 65535 with --http2 on an http:// target, whose HTTP/2 frame headers
    /// can sit anywhere in a segment]
    #[arg(long, value_parser = snaplen)]
    pub snaplen: Option<u32>,
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
    /// Do not time the resolver and its nameservers when the URL names a host (a name that
    /// does not resolve is then an error instead of a diagnosis).
    #[arg(long)]
    pub no_dns: bool,
    /// Do not trace the route (by default a target behind a gateway gets a short TCP trace to
    /// its port before the load).
    #[arg(long)]
    pub no_trace: bool,
    /// Run the whole diagnosis from inside this network namespace (e.g. the lab's client:
    /// `--netns netdoctor-cli`).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Also write the report as one self-contained HTML page (charts, the flow graph of each
    /// finding's packets; no script, nothing fetched) to this file. With --compare or
    /// --baseline: the comparison page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Compare two targets: run the same plan against URL (A) and then URL2 (B), and show them
    /// side by side with deltas, a verdict per finding and overall (fixed, improved,
    /// unchanged, worse, new) and a significance test of the latency difference. Exit code:
    /// 0 when B is healthy and not worse, 1 when B still has a problem or got worse, 3 when a
    /// run is inconclusive. With --pcap FILE, the captures go to FILE-a and FILE-b.
    #[arg(long, value_name = "URL2", conflicts_with = "baseline")]
    pub compare: Option<String>,
    /// Compare this run (B, after) with a saved report of the same URL (A, before): the
    /// `--json` output of an earlier `netdoctor diagnose`. Output and exit code as --compare.
    #[arg(long, value_name = "FILE.json")]
    pub baseline: Option<PathBuf>,
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
    /// Service-level objectives to judge the capture's exchanges against, e.g. 'p99<50ms'
    /// (as diagnose's --slo; errors need diagnose's load and are inconclusive here). The exit
    /// code is then the SLO's: 0 pass, 1 fail, 3 inconclusive.
    #[arg(long, value_name = "OBJECTIVES", value_parser = parse_slo)]
    pub slo: Option<netdoctor_report::Slo>,
    /// Threads: connections are split among them by a hash of both ends (the reading thread
    /// is one of them and also merges; the report is the same for every N). Default: the
    /// available cores, at most one per 16 MiB of a regular file (a small capture stays on one
    /// thread); 1 reads and analyzes on one thread.
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Write each flagged segment's analysis flags (frame number, tab, comma-separated names
    /// like tshark's tcp.analysis.*) to this file: for bench/tshark-agreement.sh.
    #[arg(long, value_name = "FILE", hide = true)]
    pub dump_flags: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `--slo`: parsed up front, so a malformed string is a usage error naming what is wrong.
pub fn parse_slo(s: &str) -> Result<netdoctor_report::Slo, String> {
    s.parse()
        .map_err(|e: netdoctor_report::SloError| e.to_string())
}

/// `-j`: a number of worker threads from 1 to [`MAX_JOBS`].
pub fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_JOBS).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{s}' is not a number of worker threads from 1 to {MAX_JOBS}"
        )),
    }
}

/// Most worker threads `analyze -j` starts.
pub const MAX_JOBS: usize = 256;

/// `--rate`: a positive, finite number of requests per second.
fn positive_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "'{s}' is not a positive number of requests per second"
        )),
    }
}

const DIAGNOSE_AFTER_HELP: &str = "\
Targets: http:// and https:// get the SYN RTT, one timed request and the load; tcp://HOST:PORT \
(Redis, a database, a custom RPC) gets the SYN RTT and connect() probes only, since the load is \
HTTP(S)-only. With --passive nothing is sent to any target: the run watches the port's traffic \
for -d (e.g. `netdoctor diagnose --passive tcp://10.0.0.5:6379 -d 30s`) and needs at least 20 \
completed request/response exchanges to call it healthy.

Preflight, before any load (like curl -v): the route, connect (1.2 s, then the next hop's ARP \
or IPv6 neighbour entry), TLS verification and one request. A failure that is the client's or the path's ends the \
run there with exit 1 and one finding: no_route (side client), neighbour_unreachable (the address \
or its gateway does not answer ARP or neighbour discovery; side network), tls_verify_failed (an untrusted or self-signed \
certificate: use -k; side client). The load never runs against such a target.";

const ANALYZE_AFTER_HELP: &str = "\
Input: a pcap or pcapng file, gzip'd or not (detected by its first bytes, not its name), a FIFO, \
or `-` for standard input. A capture cut short is analyzed up to the cut, with a warning. \
DNS lookups over UDP port 53 in the capture are told too (unanswered, SERVFAIL, NXDOMAIN, slow).";

#[derive(Debug, Clone, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub action: LabAction,
    /// Lab name: namespaces are <name>-srv, <name>-cli, … (`start`: default netdoctor, or
    /// nd-<case> with --case). Without it, `stop` removes every lab netdoctor left and `status`
    /// lists them all.
    #[arg(long, global = true)]
    pub name: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, Subcommand)]
pub enum LabAction {
    /// Start a lab: the reference case (nginx, tcp_nodelay on at :8080, off at :8081), or with
    /// --case one of the classic slow-request causes; prints the command that diagnoses it.
    Start(crate::labcmd::LabStartArgs),
    /// Show whether the lab runs, its case, and whether its servers answer. Exit status 0
    /// when it runs (without --name: when one of the labs runs), 1 when it does not.
    Status,
    /// End the lab's processes and remove its namespaces (safe to run when nothing runs).
    /// Without --name it removes EVERY lab netdoctor left on this machine, also other users'
    /// and running tests' labs, and names them before it does.
    Stop,
    /// Runs a lab case's servers until stopped (started by `lab start --case`).
    #[command(hide = true)]
    RunCase(crate::labcmd::RunCaseArgs),
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

//! `netdoctor throughput`: an iperf3-compatible TCP/UDP client and server (the work is in
//! `netdoctor-throughput`; this file is the command line and the output).

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use netdoctor_report::Format;
use netdoctor_throughput::text::{parse_rate, parse_size};
use netdoctor_throughput::{ClientConfig, Server, ServerConfig, run_client};

use crate::cli::OutputArgs;
use crate::target::parse_duration;

const THROUGHPUT_AFTER_HELP: &str = "\
Speaks iperf3's protocol: the client runs against a stock `iperf3 -s`, and `iperf3 -c` runs \
against `netdoctor throughput --server`. --json prints iperf3's shape (intervals, end.sum_sent, \
end.sum_received, cpu_utilization_percent) under the schema netdoctor.throughput/v1.

Examples:
  netdoctor throughput --server                 # like iperf3 -s
  netdoctor throughput 10.0.0.2 -P 4 -t 10      # like iperf3 -c 10.0.0.2 -P 4 -t 10
  netdoctor throughput 10.0.0.2 -u -b 100M      # UDP at 100 Mbit/s per stream: loss, jitter

Exit status: 0 when the test ran; 2 on usage errors or when it could not run.";

/// `netdoctor throughput`: TCP/UDP throughput, iperf3-compatible.
#[derive(Debug, Clone, Args)]
#[command(after_help = THROUGHPUT_AFTER_HELP)]
pub struct ThroughputArgs {
    /// The server to test against (client mode).
    #[arg(required_unless_present_any = ["server", "pps_server"])]
    pub host: Option<String>,
    /// Run as a server (like `iperf3 -s`).
    #[arg(short = 's', long, conflicts_with = "host")]
    pub server: bool,
    /// Server: end after one test (like `iperf3 -s -1`).
    #[arg(short = '1', long, requires = "server")]
    pub one_off: bool,
    /// Server: the address to listen on.
    #[arg(long, value_name = "ADDR", requires = "server")]
    pub bind: Option<IpAddr>,
    /// Port (iperf3's 5201).
    #[arg(short = 'p', long, default_value_t = 5201)]
    pub port: u16,
    /// UDP instead of TCP.
    #[arg(short = 'u', long)]
    pub udp: bool,
    /// Parallel streams.
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=128))]
    pub parallel: u32,
    /// Reverse: the server sends.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// Test length in seconds.
    #[arg(short = 't', long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=86400))]
    pub time: u32,
    /// Target bitrate per stream (K/M/G suffixes, bits/s; 0 = unlimited; UDP default 1M).
    #[arg(short = 'b', long, value_parser = parse_rate)]
    pub bitrate: Option<u64>,
    /// Bytes per write or per datagram (K/M suffixes).
    #[arg(short = 'l', long, value_parser = parse_size)]
    pub length: Option<u64>,
    /// Socket buffer size on both ends (K/M suffixes).
    #[arg(short = 'w', long, value_parser = parse_size)]
    pub window: Option<u64>,
    /// Packet-rate mode (pktgen's job): small UDP datagrams at RATE packets/s over all threads
    /// (K/M suffixes) or `max`, with sendmmsg; run `--pps-server` on the receiver.
    #[arg(long, value_name = "RATE", value_parser = parse_pps, conflicts_with_all = ["udp", "reverse", "bidir", "bitrate"])]
    pub pps: Option<u64>,
    /// Packet-rate receiver: counts what arrives (recvmmsg) and says where the rest was lost
    /// (receive-buffer, backlog and interface drop counters). Ends -t seconds after it starts or
    /// 2 s after the last datagram.
    #[arg(long, conflicts_with_all = ["host", "server"])]
    pub pps_server: bool,
    /// Packet-rate mode: one datagram per sendmmsg message instead of 64 per message with UDP
    /// GSO (UDP_SEGMENT).
    #[arg(long, requires = "pps")]
    pub no_gso: bool,
    /// Packet-rate mode: sending threads, or receiving sockets (SO_REUSEPORT); default 1.
    /// TCP: threads that move this side's streams (default: one per stream; fewer share them
    /// with poll, e.g. -T 1 runs every stream in one thread as iperf3 3.12 does).
    #[arg(short = 'T', long, value_parser = clap::value_parser!(u32).range(1..=128))]
    pub threads: Option<u32>,
    /// TCP: send from a memory file with sendfile, the kernel referencing its pages instead of
    /// copying each block (as `iperf3 -Z`): less CPU per GB, but a small send buffer no longer
    /// limits the test as it limits an application that writes (the default).
    #[arg(short = 'Z', long)]
    pub zerocopy: bool,
    /// TCP: the senders' TCP_NOTSENT_LOWAT (bytes, K/M): at most this much waits unsent behind
    /// the congestion window (the default, the system's, lets the 4 MB send buffer fill). On a
    /// fast local path 256K took a quarter off the CPU per GB; not the default, as a writer late
    /// to refill lets the connection idle like a small send buffer would.
    #[arg(long, value_parser = parse_lowat)]
    pub notsent_lowat: Option<u32>,
    /// Seconds between interval reports (0 = none).
    #[arg(short = 'i', long, default_value = "1s", value_parser = parse_duration_or_zero)]
    pub interval: Duration,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `--pps`: `max` (0) or packets/s with K/M.
fn parse_pps(s: &str) -> Result<u64, String> {
    if s.trim().eq_ignore_ascii_case("max") {
        return Ok(0);
    }
    match parse_rate(s) {
        Ok(0) => Err("--pps: give a rate above 0, or `max`".into()),
        Ok(r) => Ok(r),
        Err(e) => Err(e.replace("bitrate", "packet rate")),
    }
}

/// `--notsent-lowat`: bytes with K/M (binary), 1 byte to 1G.
fn parse_lowat(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("--notsent-lowat: {s:?} is not a byte count (e.g. 256K)"))?;
    match n.checked_mul(mult) {
        Some(b) if (1..=1 << 30).contains(&b) => Ok(b as u32),
        _ => Err(format!("--notsent-lowat: {s:?} is outside 1 byte to 1G")),
    }
}

fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let with_unit = if s.trim().chars().all(|c| c.is_ascii_digit() || c == '.') {
        format!("{}s", s.trim())
    } else {
        s.to_string()
    };
    parse_duration(&with_unit)
}

pub fn command(args: &ThroughputArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let format = args.output.format().map_err(anyhow::Error::msg)?;
    let text = format == Format::Terminal;
    if args.server {
        return serve(args, text, out);
    }
    if args.pps_server || args.pps.is_some() {
        return packet_rate(args, text, out);
    }
    let Some(host) = args.host.clone() else {
        bail!("throughput: give a server HOST, or --server");
    };
    let window = args
        .window
        .map(|w| u32::try_from(w).context("--window: at most 4G"))
        .transpose()?;
    let cfg = ClientConfig {
        host,
        port: args.port,
        udp: args.udp,
        parallel: args.parallel,
        reverse: args.reverse,
        bidir: args.bidir,
        duration: args.time,
        bitrate: args.bitrate,
        blksize: args.length.map(|l| l as usize),
        window,
        interval: args.interval,
        connect_timeout: Duration::from_secs(5),
        threads: args.threads.map(|t| t as usize),
        zerocopy: args.zerocopy,
        notsent_lowat: args.notsent_lowat,
    };
    // Text lines go out as they come (intervals live, as iperf3 prints them).
    let mut failed = None;
    let report = {
        let mut sink = |l: &str| {
            if text {
                let _ = writeln!(out, "{l}");
                let _ = out.flush();
            }
        };
        match run_client(&cfg, &mut sink) {
            Ok(r) => Some(r),
            Err(e) => {
                failed = Some(e);
                None
            }
        }
    };
    if let Some(e) = failed {
        return Err(anyhow::Error::new(e)
            .context(format!("throughput test against {}:{}", cfg.host, cfg.port)));
    }
    if let (Some(r), false) = (report, text) {
        serde_json::to_writer_pretty(&mut *out, &r)?;
        writeln!(out)?;
    }
    Ok(0)
}

fn serve(args: &ThroughputArgs, text: bool, out: &mut dyn Write) -> anyhow::Result<i32> {
    let ip = args.bind.unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let server = Server::bind(ServerConfig {
        bind: SocketAddr::new(ip, args.port),
        interval: args.interval,
        rcvbuf: None,
        threads: args.threads.map(|t| t as usize),
        zerocopy: args.zerocopy,
        notsent_lowat: args.notsent_lowat,
    })?;
    if text {
        writeln!(
            out,
            "-----------------------------------------------------------"
        )?;
        writeln!(out, "Server listening on {}", server.local_addr())?;
        writeln!(
            out,
            "-----------------------------------------------------------"
        )?;
        out.flush()?;
    }
    loop {
        let result = server.serve_one(&mut |l: &str| {
            if text {
                let _ = writeln!(out, "{l}");
                let _ = out.flush();
            }
        });
        match result {
            Ok(r) if !text => {
                serde_json::to_writer_pretty(&mut *out, &r)?;
                writeln!(out)?;
            }
            Ok(_) => {}
            Err(e) if args.one_off => {
                return Err(anyhow::Error::new(e).context("throughput server"));
            }
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: throughput server: {e}");
            }
        }
        out.flush()?;
        if args.one_off {
            return Ok(0);
        }
    }
}

/// `--pps` and `--pps-server`.
fn packet_rate(args: &ThroughputArgs, text: bool, out: &mut dyn Write) -> anyhow::Result<i32> {
    use netdoctor_throughput::pktrate;
    let duration = Duration::from_secs(u64::from(args.time));
    let threads = args.threads.unwrap_or(1);
    if threads > 64 {
        bail!("-T {threads}: at most 64 threads in packet-rate mode");
    }
    if args.pps_server {
        let ip = args.bind.unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let cfg = pktrate::RecvConfig {
            bind: SocketAddr::new(ip, args.port),
            threads,
            duration,
            idle: Duration::from_secs(2),
            rcvbuf: args.window.map(|w| w as usize).unwrap_or(8 << 20),
        };
        let r = pktrate::receive(&cfg, &mut |a| {
            if text {
                let _ = writeln!(
                    std::io::stderr(),
                    "packet-rate receiver on {a} (UDP), up to {duration:?}"
                );
            }
        })?;
        return emit(out, text, &r.lines(), &r);
    }
    let Some(host) = args.host.as_deref() else {
        bail!("--pps: give the receiver's HOST");
    };
    use std::net::ToSocketAddrs;
    let target = (host, args.port)
        .to_socket_addrs()
        .with_context(|| format!("resolve {host}"))?
        .next()
        .with_context(|| format!("resolve {host}: no address"))?;
    let cfg = pktrate::SendConfig {
        target,
        threads,
        size: args.length.map(|l| l as usize).unwrap_or(64),
        rate: args.pps.unwrap_or(0),
        duration,
        gso: !args.no_gso,
    };
    let r = pktrate::send(&cfg)?;
    emit(out, text, &r.lines(), &r)
}

/// Text lines, or the value as JSON.
fn emit(
    out: &mut dyn Write,
    text: bool,
    lines: &[String],
    v: &impl serde::Serialize,
) -> anyhow::Result<i32> {
    if text {
        for l in lines {
            writeln!(out, "{l}")?;
        }
    } else {
        serde_json::to_writer_pretty(&mut *out, v)?;
        writeln!(out)?;
    }
    Ok(0)
}

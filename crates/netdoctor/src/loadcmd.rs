//! `netdoctor load URL` and `netdoctor connect HOST:PORT`: the load engine on its own.
//!
//! `load` takes wrk's flags with wrk's meaning (`-c` connections, `-t` threads, `-d` duration,
//! `--timeout`, `-H` headers) and wrk2's `-R/--rate` for an open loop at a constant rate with
//! coordinated-omission correction. `connect` is the connection-setup benchmark. Both print a
//! wrk-like text report, or with `--json` one JSON object (`"schema": "netdoctor.load/v1"` or
//! `"netdoctor.connect/v1"`). Exit codes: 0 when the run took place, even when requests failed
//! (the errors are in the report); 2 on usage errors, and when nothing could be measured because
//! every attempt failed to connect.

use std::io::{IsTerminal, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use netdoctor_load::{
    ConnectConfig, ConnectResult, HttpTarget, LoadConfig, LoadResult, Percentiles,
};
use serde::Serialize;

use crate::output::Progress;
use crate::target::{parse_duration, parse_url};

const LOAD_AFTER_HELP: &str = "\
Closed loop by default (as wrk): every connection keeps one request in flight and latency is \
measured from the request's first write to its response (with --no-keepalive, from the start of \
the connect). With --rate, an open loop (as wrk2): requests are due at a constant rate spread over \
the connections, and latency is measured from each request's intended send time, so a server \
stall shows in the tail (coordinated-omission correction).

Exit status: 0 when the run took place, also when requests failed (errors are reported by kind: \
connect, read, write, timeout, status); 2 on usage errors or when no connection could be made.";

const CONNECT_AFTER_HELP: &str = "\
Each connect is timed from connect() to the completed handshake, then closed. A connect taking \
1 s or more (or timing out after 1 s or more) is a SYN-retransmit suspect: Linux retransmits an \
unanswered SYN after 1 s, then again after growing intervals (the schedule depends on the kernel: \
exponential 1, 3, 7 s on most, shorter steps with net.ipv4.tcp_syn_linear_timeouts). Failures are counted by errno: EADDRNOTAVAIL means the \
local ports ran out (ip_local_port_range, TIME_WAIT), ECONNREFUSED that nothing listens.

Exit status: 0 when at least one connect completed (failures are reported); 2 on usage errors or \
when every connect failed.";

/// `netdoctor load URL`: HTTP/1.1 load, wrk-compatible flags.
#[derive(Debug, Clone, Args)]
#[command(after_help = LOAD_AFTER_HELP)]
pub struct LoadArgs {
    /// Target URL, e.g. http://127.0.0.1:8080/ (http only; `host:port` means http://host:port/).
    pub url: String,
    /// Connections to keep open (as wrk: total, split across the threads).
    #[arg(short = 'c', long, default_value_t = 10, value_parser = positive)]
    pub connections: usize,
    /// Threads, each with its own event loop and share of the connections.
    #[arg(short = 't', long, default_value_t = 2, value_parser = positive)]
    pub threads: usize,
    /// Duration of the test, e.g. 10s, 500ms, 1m.
    #[arg(short = 'd', long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// A request without a complete response after this counts as a timeout error (and its
    /// connection is replaced by a new one).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub timeout: Duration,
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
    /// One connection per request (sends `Connection: close`) instead of keep-alive.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Constant rate: this many requests per second in total (open loop, as wrk2 -R), latency
    /// corrected for coordinated omission.
    #[arg(short = 'R', long, value_parser = positive_rate)]
    pub rate: Option<f64>,
    /// Accepted for wrk compatibility: the latency percentile table is always printed.
    #[arg(long)]
    pub latency: bool,
    /// Print the result as one JSON object (schema netdoctor.load/v1).
    #[arg(long)]
    pub json: bool,
}

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
    /// Print the result as one JSON object (schema netdoctor.connect/v1).
    #[arg(long)]
    pub json: bool,
}

fn positive(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a positive whole number")),
    }
}

fn positive_u64(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a positive whole number")),
    }
}

fn positive_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "'{s}' is not a rate: requests per second, a number greater than zero"
        )),
    }
}

/// "Name: value" → (name, value).
fn parse_header(h: &str) -> anyhow::Result<(String, String)> {
    let Some((name, value)) = h.split_once(':') else {
        bail!("invalid header '{h}': expected 'Name: value'");
    };
    let name = name.trim();
    if name.is_empty() {
        bail!("invalid header '{h}': empty name");
    }
    Ok((name.to_string(), value.trim().to_string()))
}

fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    netdoctor_probe::resolve(host, port)?
        .into_iter()
        .next()
        .with_context(|| format!("resolve {host}: no addresses"))
}

/// SIGINT sets `stop` (the run ends early and reports what it measured); a second SIGINT while
/// the flag is set ends the process. Unregistered on drop.
struct StopOnSigint {
    ids: Vec<signal_hook::SigId>,
}

impl StopOnSigint {
    fn new(stop: &Arc<AtomicBool>) -> StopOnSigint {
        let mut ids = Vec::new();
        // Order matters: the conditional shutdown sees the flag as it was before this signal.
        if let Ok(id) =
            signal_hook::flag::register_conditional_shutdown(libc::SIGINT, 130, Arc::clone(stop))
        {
            ids.push(id);
        }
        if let Ok(id) = signal_hook::flag::register(libc::SIGINT, Arc::clone(stop)) {
            ids.push(id);
        }
        StopOnSigint { ids }
    }
}

impl Drop for StopOnSigint {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

#[derive(Serialize)]
struct TargetJson<'a> {
    input: &'a str,
    address: String,
}

#[derive(Serialize)]
struct LoadJson<'a> {
    schema: &'static str,
    target: TargetJson<'a>,
    method: &'a str,
    keepalive: bool,
    timeout_s: f64,
    #[serde(flatten)]
    result: &'a LoadResult,
}

#[derive(Serialize)]
struct ConnectJson<'a> {
    schema: &'static str,
    target: TargetJson<'a>,
    timeout_s: f64,
    #[serde(flatten)]
    result: &'a ConnectResult,
}

pub fn load_command(args: &LoadArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let url = parse_url(&args.url).map_err(anyhow::Error::msg)?;
    let addr = resolve(&url.host, url.port)?;
    let mut cfg = LoadConfig::new(HttpTarget {
        addr,
        host: url.host_header.clone(),
        path: url.path.clone(),
    });
    cfg.connections = args.connections;
    cfg.threads = args.threads;
    cfg.duration = args.duration;
    cfg.timeout = args.timeout;
    cfg.keepalive = !args.no_keepalive;
    cfg.method = args.method.clone();
    cfg.rate = args.rate;
    cfg.headers = args
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<anyhow::Result<_>>()?;
    cfg.body = match (&args.body, &args.body_file) {
        (Some(b), _) => Some(b.clone().into_bytes()),
        (None, Some(path)) => Some(
            std::fs::read(path).with_context(|| format!("read body file {}", path.display()))?,
        ),
        (None, None) => None,
    };
    // Fail fast, with the OS's reason, when nothing can be reached (rather than after the whole
    // duration of connect errors).
    TcpStream::connect_timeout(&addr, args.timeout.min(Duration::from_secs(5)))
        .map_err(|e| anyhow::anyhow!("connect {addr}: {}", describe_io(&e)))?;

    let progress = Progress::new();
    if !args.json {
        progress.stage(&format!(
            "load {addr}: {} connections, {} threads, {:?}{}",
            cfg.connections,
            cfg.threads.min(cfg.connections),
            cfg.duration,
            cfg.rate
                .map(|r| format!(", constant rate {r} req/s"))
                .unwrap_or_default()
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sig = StopOnSigint::new(&stop);
    let total = cfg.duration;
    let res = netdoctor_load::run(&cfg, &stop, &mut |p| {
        progress.tick(p.elapsed, total, p.requests, p.errors)
    });
    progress.end_ticks();
    drop(sig);
    let res = res?;
    if res.requests == 0 && res.errors.total() > 0 && res.errors.total() == res.errors.connect {
        bail!(
            "{}: no request completed",
            res.first_error
                .clone()
                .unwrap_or_else(|| format!("connect {addr}: failed"))
        );
    }
    if args.json {
        let doc = LoadJson {
            schema: "netdoctor.load/v1",
            target: TargetJson {
                input: &args.url,
                address: addr.to_string(),
            },
            method: &cfg.method,
            keepalive: cfg.keepalive,
            timeout_s: cfg.timeout.as_secs_f64(),
            result: &res,
        };
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
    } else {
        write_load_text(&args.url, &cfg, &res, out)?;
    }
    out.flush()?;
    Ok(0)
}

pub fn connect_command(args: &ConnectArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let addr = parse_host_port(&args.target)?;
    let mut cfg = ConnectConfig::new(addr);
    cfg.count = args.count;
    cfg.concurrency = args.concurrency;
    cfg.timeout = args.timeout;
    let progress = Progress::new();
    if !args.json {
        progress.stage(&format!(
            "connect {addr}: {} connects, {} at a time",
            cfg.count, cfg.concurrency
        ));
    }
    let live = std::env::var_os("NETDOCTOR_QUIET").is_none() && std::io::stderr().is_terminal();
    let stop = Arc::new(AtomicBool::new(false));
    let sig = StopOnSigint::new(&stop);
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
    if args.json {
        let doc = ConnectJson {
            schema: "netdoctor.connect/v1",
            target: TargetJson {
                input: &args.target,
                address: addr.to_string(),
            },
            timeout_s: cfg.timeout.as_secs_f64(),
            result: &res,
        };
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
    } else {
        write_connect_text(addr, &cfg, &res, interrupted, out)?;
    }
    out.flush()?;
    Ok(0)
}

/// `host:port`, `[v6]:port` or an http:// URL → the first address.
fn parse_host_port(input: &str) -> anyhow::Result<SocketAddr> {
    let s = input.trim();
    if let Ok(a) = s.parse::<SocketAddr>() {
        if a.port() == 0 {
            bail!("invalid target '{input}': port 0 is not a number in 1..65535");
        }
        return Ok(a);
    }
    if s.contains("://") {
        let u = parse_url(s).map_err(anyhow::Error::msg)?;
        return resolve(&u.host, u.port);
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        bail!("invalid target '{input}': expected HOST:PORT, e.g. 127.0.0.1:80");
    };
    let port: u16 = match port.parse() {
        Ok(p) if p > 0 => p,
        _ => bail!("invalid target '{input}': port '{port}' is not a number in 1..65535"),
    };
    if host.is_empty() {
        bail!("invalid target '{input}': no host");
    }
    resolve(host, port)
}

fn describe_io(e: &std::io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s);
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// wrk's units: `812.00us`, `2.01ms`, `1.20s`.
fn fmt_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.2}us", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{ms:.2}ms")
    } else if ms < 60_000.0 {
        format!("{:.2}s", ms / 1000.0)
    } else {
        format!("{:.2}m", ms / 60_000.0)
    }
}

/// wrk's byte units: `38.01MB`.
fn fmt_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2}{}", UNITS[u])
}

fn write_percentiles(l: &Percentiles, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "  Latency Distribution")?;
    for (label, v) in [
        ("50%", l.p50),
        ("75%", l.p75),
        ("90%", l.p90),
        ("99%", l.p99),
        ("99.9%", l.p999),
        ("max", l.max),
    ] {
        writeln!(out, "  {label:>6}  {:>10}", fmt_ms(v))?;
    }
    Ok(())
}

fn write_load_text(
    input: &str,
    cfg: &LoadConfig,
    r: &LoadResult,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "Running {} test @ {input}",
        fmt_ms(cfg.duration.as_secs_f64() * 1000.0)
    )?;
    writeln!(
        out,
        "  {} threads and {} connections ({}, {} {})",
        r.threads,
        r.connections,
        if cfg.keepalive {
            "keep-alive"
        } else {
            "one connection per request"
        },
        cfg.method,
        cfg.target.addr
    )?;
    if let Some(rate) = r.rate {
        writeln!(
            out,
            "  constant rate {rate} req/s: latency measured from each request's intended send time \
             (coordinated omission corrected)"
        )?;
    }
    let l = &r.latency_ms;
    writeln!(
        out,
        "  Thread Stats   {:>10} {:>10} {:>10}",
        "Avg", "Stdev", "Max"
    )?;
    writeln!(
        out,
        "    Latency      {:>10} {:>10} {:>10}",
        fmt_ms(l.mean),
        fmt_ms(l.stdev),
        fmt_ms(l.max)
    )?;
    write_percentiles(l, out)?;
    writeln!(
        out,
        "  {} requests in {:.2}s, {} read",
        r.requests,
        r.duration_s,
        fmt_bytes(r.bytes_read as f64)
    )?;
    let e = &r.errors;
    if e.total() > 0 {
        writeln!(
            out,
            "  Errors: connect {}, read {}, write {}, timeout {}, status {}",
            e.connect, e.read, e.write, e.timeout, e.status
        )?;
        if let Some(first) = &r.first_error {
            writeln!(out, "  First error: {first}")?;
        }
    }
    if r.status.len() > 1 || r.status.keys().any(|c| !(200..400).contains(c)) {
        let codes: Vec<String> = r.status.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        writeln!(out, "  Status codes: {}", codes.join(", "))?;
    }
    writeln!(out, "Requests/sec: {:>10.2}", r.requests_per_s)?;
    writeln!(out, "Transfer/sec: {:>10}", fmt_bytes(r.transfer_per_s))?;
    if let Some(rate) = r.rate
        && r.duration_s > 0.0
        && r.requests_per_s < rate * 0.9
    {
        writeln!(
            out,
            "Note: achieved {:.0} req/s of the {rate} asked: the server (or {} connections) could \
             not keep up; the latencies include the wait.",
            r.requests_per_s, r.connections
        )?;
    }
    Ok(())
}

fn write_connect_text(
    addr: SocketAddr,
    cfg: &ConnectConfig,
    r: &ConnectResult,
    interrupted: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "Connect benchmark @ {addr}: {} connects, {} at a time, timeout {}{}",
        r.attempts,
        r.concurrency,
        fmt_ms(cfg.timeout.as_secs_f64() * 1000.0),
        if interrupted { " (interrupted)" } else { "" }
    )?;
    let l = &r.latency_ms;
    writeln!(
        out,
        "  Connect time   {:>10} {:>10} {:>10}",
        "Avg", "Stdev", "Max"
    )?;
    writeln!(
        out,
        "                 {:>10} {:>10} {:>10}",
        fmt_ms(l.mean),
        fmt_ms(l.stdev),
        fmt_ms(l.max)
    )?;
    write_percentiles(l, out)?;
    writeln!(
        out,
        "  {} connected, {} failed in {:.2}s",
        r.connected, r.failed, r.duration_s
    )?;
    writeln!(out, "Connects/sec: {:>10.2}", r.connects_per_s)?;
    if r.syn_retransmit_suspects > 0 || r.syn_retransmits > 0 {
        writeln!(
            out,
            "SYN retransmit suspects: {} ({} connected after 1 s or more, {} timed out); SYN \
             retransmissions counted by the kernel: {}. A full listen queue (ListenOverflows in \
             `nstat`), a firewall or packet loss drops SYNs; each drop costs at least 1 s.",
            r.syn_retransmit_suspects, r.slow_connects, r.timeouts, r.syn_retransmits
        )?;
    }
    if !r.errors.is_empty() {
        let by: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(out, "Failures by errno: {}", by.join(", "))?;
        if let Some(first) = &r.first_error {
            writeln!(out, "  First failure: {first}")?;
        }
        if r.errors.contains_key("EADDRNOTAVAIL") {
            writeln!(
                out,
                "  EADDRNOTAVAIL: local ports ran out. Every port of net.ipv4.ip_local_port_range \
                 toward {addr} is in use or in TIME_WAIT; widen the range, reuse connections \
                 (keep-alive, pooling), or spread over more server addresses."
            )?;
        }
        if r.errors.contains_key("ECONNREFUSED") {
            writeln!(
                out,
                "  ECONNREFUSED: nothing listens on {addr} (or the listen queue overflowed with \
                 tcp_abort_on_overflow = 1)."
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_like_wrk() {
        assert_eq!(fmt_ms(0.812), "812.00us");
        assert_eq!(fmt_ms(2.013), "2.01ms");
        assert_eq!(fmt_ms(1200.0), "1.20s");
        assert_eq!(fmt_bytes(615.0), "615.00B");
        assert_eq!(fmt_bytes(39_856_000.0), "38.01MB");
    }

    #[test]
    fn headers_and_targets() {
        assert_eq!(
            parse_header("Accept:  text/html ").unwrap(),
            ("Accept".to_string(), "text/html".to_string())
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header(": v").is_err());
        assert_eq!(
            parse_host_port("127.0.0.1:80").unwrap(),
            "127.0.0.1:80".parse().unwrap()
        );
        assert_eq!(
            parse_host_port("http://[::1]:8080/x").unwrap(),
            "[::1]:8080".parse().unwrap()
        );
        for bad in ["127.0.0.1", "127.0.0.1:0", "127.0.0.1:x", ":80"] {
            assert!(parse_host_port(bad).is_err(), "{bad}");
        }
        assert!(positive("0").is_err() && positive("-1").is_err() && positive("3") == Ok(3));
        assert!(positive_rate("0").is_err() && positive_rate("nan").is_err());
        assert_eq!(positive_rate("2.5"), Ok(2.5));
    }
}

//! `netdoctor load URL`: the load engine on its own.
//!
//! `load` takes wrk's flags with wrk's meaning (`-c` connections, `-t` threads, `-d` duration,
//! `--timeout`, `-H` headers) and wrk2's `-R/--rate` for an open loop at a constant rate with
//! coordinated-omission correction. It prints a wrk-like text report, or with `--format json`
//! one JSON object (`"schema": "netdoctor.load/v1"`); both are sinks of
//! [`netdoctor_report::LoadReport`]. Exit codes: 0 when the run took place, even when requests
//! failed (the errors are in the report); 2 on usage errors, and when nothing could be measured
//! because every attempt failed to connect.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use netdoctor_load::{HttpTarget, LoadConfig, Pinning, Protocol};
use netdoctor_report::LoadReport;

use crate::cli::{OutputArgs, RequestArgs};
use crate::output::Progress;
use crate::stop::StopOnSignals;
use crate::target::{parse_duration, parse_header, parse_url, positive, positive_rate, resolve};

const LOAD_AFTER_HELP: &str = "\
Closed loop by default (as wrk): every connection keeps one request in flight and latency is \
measured from the request's first write to its response (with --no-keepalive, from the start of \
the connect). With --rate, an open loop (as wrk2): requests are due at a constant rate spread over \
the connections, and latency is measured from each request's intended send time, so a server \
stall shows in the tail (coordinated-omission correction).

HTTP/2: https:// offers h2 and http/1.1 by ALPN and takes the server's choice; --http2 on an \
http:// URL is h2c with prior knowledge. Each connection keeps --streams requests in flight (as \
h2load -m). grpc:// and grpcs:// targets make unary gRPC calls (default \
grpc.health.v1.Health/Check; --body-file is the serialized request message); a grpc-status other \
than 0 is a status error.

Exit status: 0 when the run took place, also when requests failed (errors are reported by kind: \
connect, read, write, timeout, status, and for HTTP/2 stream: resets and GOAWAYs with an error \
code); 2 on usage errors or when no connection could be made.";

/// What a load thread does before it sleeps in `epoll_wait` (`--wait`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitMode {
    /// Where the CPUs were idle and the threads left to the scheduler, in closed loop: nap
    /// when each thread keeps at least 16 requests in flight (connections × --streams), spin with fewer; otherwise sleep at
    /// once.
    Auto,
    /// Sleep a few µs on the thread's own timer, then poll once (spin where latencies are
    /// too short for a nap).
    Nap,
    /// Poll without sleeping for up to 50 µs.
    Spin,
    /// Sleep at once.
    Sleep,
}

/// The spin and nap budgets of a run waiting as `wait`, where `auto` is the spin the default
/// placement allows ([`netdoctor_load::spin_for`]): the default naps instead of spinning when
/// each thread keeps enough requests in flight ([`netdoctor_load::nap_for`]): its connections
/// times the `streams` of each (HTTP/2; 1 for HTTP/1.1).
fn wait_budgets(
    wait: WaitMode,
    auto: Duration,
    connections: usize,
    streams: usize,
    threads: usize,
) -> (Duration, Duration) {
    match wait {
        WaitMode::Auto => (
            auto,
            netdoctor_load::nap_for(auto, connections, streams, threads),
        ),
        WaitMode::Spin => (netdoctor_load::SPIN_WAIT, Duration::ZERO),
        WaitMode::Nap => (netdoctor_load::SPIN_WAIT, netdoctor_load::NAP_WAIT),
        WaitMode::Sleep => (Duration::ZERO, Duration::ZERO),
    }
}

/// `netdoctor load URL`: HTTP/1.1 or HTTP/2 load (and gRPC), wrk- and h2load-compatible flags.
#[derive(Debug, Clone, Args)]
#[command(after_help = LOAD_AFTER_HELP)]
pub struct LoadArgs {
    /// Target URL: http:// or https:// (e.g. http://127.0.0.1:8080/; `host:port` means
    /// http://host:port/; for https, -k/--insecure accepts any certificate), or
    /// grpc://HOST:PORT[/pkg.Service/Method] or grpcs:// for gRPC (default method
    /// grpc.health.v1.Health/Check; --body-file is the serialized request message).
    pub url: String,
    /// Connections to keep open (as wrk: total, split across the threads).
    #[arg(short = 'c', long, default_value_t = 10, value_parser = positive)]
    pub connections: usize,
    /// Threads, each with its own event loop and share of the connections.
    #[arg(short = 't', long, default_value_t = 2, value_parser = positive)]
    pub threads: usize,
    /// Pin thread i to the i-th CPU this process may use, whatever the counts. By default the
    /// threads are pinned when they are exactly as many as those CPUs (one each) and other work
    /// already keeps those CPUs busy (at least half a CPU over 200 ms before the run): a local
    /// server's wake-ups then pull unpinned threads onto one CPU. On a quiet machine the
    /// scheduler spreads them better by itself.
    #[arg(long, overrides_with = "no_pin_threads")]
    pub pin_threads: bool,
    /// Leave the load threads to the scheduler (no pinning at all).
    #[arg(long, overrides_with = "pin_threads")]
    pub no_pin_threads: bool,
    /// Keep the load threads on the default scheduling policy. By default (closed loop; not
    /// with --rate, where a late wake-up would be a late send) they run as SCHED_BATCH: a
    /// response does not make them preempt the task on their CPU (a local server keeps running
    /// and they find several responses per wake-up), pinned ones at nice 5 (a server started
    /// from the same session wins the CPU it shares with a load thread).
    #[arg(long)]
    pub no_batch_sched: bool,
    /// Do not wake on the learned response size (SO_RCVLOWAT). By default, once a connection's
    /// responses have the same size twice, the kernel wakes the thread once per response, not
    /// for head and body apart; a response of another size turns it off for the thread.
    #[arg(long)]
    pub no_rcvlowat: bool,
    /// What a load thread does when it has nothing to do, before it sleeps in epoll_wait:
    /// `auto` (default) waits where the threads were left to the scheduler because the CPUs
    /// were idle, in closed loop: it naps when each thread keeps at least 16 requests in
    /// flight (its connections, times --streams over HTTP/2) and spins with fewer; otherwise it sleeps at once; `spin` polls for up to 50 µs; `nap`
    /// sleeps up to 40 µs on its own timer and polls once (at most 1/16 of the recent mean
    /// latency; where that is under 10 µs it spins instead): less client CPU than the spin at
    /// 100 connections, but a nap that starts while the other load thread holds the CPU ends
    /// late, which shows in the p99 at few connections; `sleep` sleeps at once.
    /// A nap or spin spares a local server the wake-up (an IPI on a VM) of each response it
    /// sends to a sleeping client; a thread whose naps or spins come back empty does them
    /// less often (the next 1, 2, 4 … 64 waits sleep at once); the JSON's `spin` counts them.
    #[arg(long, value_enum, default_value_t = WaitMode::Auto)]
    pub wait: WaitMode,
    /// The same as `--wait sleep`: the load threads sleep as soon as they wait.
    #[arg(long, conflicts_with = "wait")]
    pub no_spin: bool,
    /// Duration of the test, e.g. 10s, 500ms, 1m.
    #[arg(short = 'd', long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// A request without a complete response after this counts as a timeout error (and its
    /// connection is replaced by a new one).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub timeout: Duration,
    #[command(flatten)]
    pub request: RequestArgs,
    /// One connection per request (sends `Connection: close`) instead of keep-alive.
    #[arg(long)]
    pub no_keepalive: bool,
    /// For https:// targets: accept any certificate (self-signed, expired, another name), like
    /// curl's -k.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Constant rate: this many requests per second in total (open loop, as wrk2 -R), latency
    /// corrected for coordinated omission.
    #[arg(short = 'R', long, value_parser = positive_rate)]
    pub rate: Option<f64>,
    /// Speak HTTP/2: h2c with prior knowledge on an http:// URL, ALPN `h2` only on https://.
    /// Without it, https:// offers h2 and http/1.1 and takes the server's choice; grpc:// and
    /// grpcs:// are always HTTP/2.
    #[arg(long, conflicts_with = "http1")]
    pub http2: bool,
    /// Speak HTTP/1.1 only (ALPN offers only http/1.1 on https://).
    #[arg(long = "http1.1", id = "http1")]
    pub http1: bool,
    /// HTTP/2: concurrent streams (requests in flight) per connection, as h2load's
    /// -m/--max-concurrent-streams (here -m is the method, as for the other commands).
    #[arg(long, alias = "max-concurrent-streams", default_value_t = 1, value_parser = positive)]
    pub streams: usize,
    /// Accepted for wrk compatibility: the latency percentile table is always printed.
    #[arg(long)]
    pub latency: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Sets the method, headers and body of `req` on the load configuration.
pub fn apply_request(req: &RequestArgs, cfg: &mut LoadConfig) -> anyhow::Result<()> {
    cfg.method = req.method.clone();
    cfg.headers = req
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<anyhow::Result<_>>()?;
    cfg.body = match (&req.body, &req.body_file) {
        (Some(b), _) => Some(b.clone().into_bytes()),
        (None, Some(path)) => Some(
            std::fs::read(path).with_context(|| format!("read body file {}", path.display()))?,
        ),
        (None, None) => None,
    };
    Ok(())
}

pub fn load_command(args: &LoadArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let format = args.output.format().map_err(anyhow::Error::msg)?;
    let url = parse_url(&args.url).map_err(anyhow::Error::msg)?;
    let addr = resolve(&url.host, url.port)?;
    let mut cfg = LoadConfig::new(HttpTarget {
        addr,
        host: url.host_header.clone(),
        path: url.path.clone(),
    });
    cfg.connections = args.connections;
    cfg.threads = args.threads;
    cfg.pinning = match (args.pin_threads, args.no_pin_threads) {
        (true, _) => Pinning::Always,
        (_, true) => Pinning::Never,
        _ => Pinning::Auto,
    };
    // Decided now (a 200 ms look at the CPUs when the default needs it), so the line below
    // can say what the run does.
    let (pinning, busy) = cfg.pinning.resolve(args.threads.min(args.connections));
    let pin_note = match (cfg.pinning, pinning, busy) {
        (Pinning::Auto, Pinning::Always, Some(b)) => {
            format!(", threads pinned one per CPU ({b:.1} CPUs busy before the run)")
        }
        (Pinning::Auto, Pinning::Always, None) => ", threads pinned one per CPU".to_string(),
        (Pinning::Auto, _, Some(b)) => {
            format!(", threads left to the scheduler ({b:.1} CPUs busy before the run)")
        }
        (Pinning::Always, ..) => ", threads pinned (--pin-threads)".to_string(),
        _ => String::new(),
    };
    let asked = cfg.pinning;
    cfg.pinning = pinning;
    let wait = if args.no_spin {
        WaitMode::Sleep
    } else {
        args.wait
    };
    let auto = netdoctor_load::spin_for(asked, pinning, busy, args.rate);
    // --streams multiplexes only over HTTP/2: forced with --http1.1 it is one a connection (a
    // server that picks http/1.1 by ALPN is not known yet: counted as asked).
    let streams = if args.http1 { 1 } else { args.streams };
    (cfg.spin, cfg.nap) = wait_budgets(wait, auto, args.connections, streams, args.threads);
    let pin_note = if !cfg.nap.is_zero() {
        format!(
            "{pin_note}, napping up to {} µs before sleeping",
            cfg.nap.as_micros()
        )
    } else if !cfg.spin.is_zero() {
        format!(
            "{pin_note}, polling {} µs before sleeping",
            cfg.spin.as_micros()
        )
    } else {
        pin_note
    };
    cfg.batch_sched = !args.no_batch_sched;
    cfg.rcvlowat = !args.no_rcvlowat;
    cfg.duration = args.duration;
    cfg.timeout = args.timeout;
    cfg.keepalive = !args.no_keepalive;
    cfg.tls = netdoctor_load::TlsOptions::for_url(&url, args.insecure);
    cfg.rate = args.rate;
    cfg.streams = args.streams;
    cfg.protocol = if args.http2 {
        Protocol::Http2
    } else if args.http1 {
        Protocol::Http1
    } else {
        Protocol::Auto
    };
    apply_request(&args.request, &mut cfg)?;
    if url.scheme.is_grpc() {
        if args.http1 {
            bail!("{}: gRPC runs over HTTP/2 only (drop --http1.1)", args.url);
        }
        cfg.apply_scheme(url.scheme);
    }
    // Fail fast, with the OS's reason, when nothing can be reached (rather than after the whole
    // duration of connect errors).
    TcpStream::connect_timeout(&addr, args.timeout.min(Duration::from_secs(5)))
        .map_err(|e| anyhow::anyhow!("connect {addr}: {}", describe_io(&e)))?;

    let progress = Progress::new();
    // On stderr whatever the format: with --json it is how a script learns how the threads
    // were placed (bench/load-vs-peers records it).
    progress.stage(&format!(
        "load {addr}: {} connections, {} threads, {:?}{}{pin_note}",
        cfg.connections,
        cfg.threads.min(cfg.connections),
        cfg.duration,
        cfg.rate
            .map(|r| format!(", constant rate {r} req/s"))
            .unwrap_or_default()
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let sig = StopOnSignals::sigint(&stop);
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
    let report = LoadReport {
        input: args.url.clone(),
        address: addr,
        method: cfg.method,
        keepalive: cfg.keepalive,
        timeout: cfg.timeout,
        duration: cfg.duration,
        result: res,
    };
    format.write(&report, out)?;
    Ok(0)
}

/// An I/O error as one lower-case phrase without the `(os error N)` tail.
pub fn describe_io(e: &std::io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s);
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netdoctor_load::{NAP_WAIT, SPIN_WAIT};

    /// The default naps with 100 connections on 2 threads, spins with 10, and does neither
    /// where the placement allowed no spin; the explicit modes ignore the counts (this fails
    /// when `auto` stops looking at the connections per thread, or at the spin allowed).
    #[test]
    fn the_default_naps_only_with_many_connections_per_thread() {
        let z = Duration::ZERO;
        assert_eq!(
            wait_budgets(WaitMode::Auto, SPIN_WAIT, 100, 1, 2),
            (SPIN_WAIT, NAP_WAIT)
        );
        assert_eq!(
            wait_budgets(WaitMode::Auto, SPIN_WAIT, 10, 1, 2),
            (SPIN_WAIT, z)
        );
        // HTTP/2: 10 connections of 8 streams keep 40 requests in flight a thread.
        assert_eq!(
            wait_budgets(WaitMode::Auto, SPIN_WAIT, 10, 8, 2),
            (SPIN_WAIT, NAP_WAIT)
        );
        assert_eq!(wait_budgets(WaitMode::Auto, z, 100, 1, 2), (z, z));
        assert_eq!(
            wait_budgets(WaitMode::Nap, z, 10, 1, 2),
            (SPIN_WAIT, NAP_WAIT)
        );
        assert_eq!(wait_budgets(WaitMode::Spin, z, 100, 1, 2), (SPIN_WAIT, z));
        assert_eq!(wait_budgets(WaitMode::Sleep, SPIN_WAIT, 100, 1, 2), (z, z));
    }
}

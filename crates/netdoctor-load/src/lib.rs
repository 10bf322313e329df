//! netdoctor-load: the HTTP/1.1 load engine, the instrument the diagnosis stands on: closed loop
//! (wrk-like: connections × threads × duration), open loop at a constant rate with
//! coordinated-omission correction (wrk2-like, [`LoadConfig::rate`]), and the connection-setup
//! benchmark ([`connect_bench`]: N connects, per-connect latency, SYN-retransmit suspects,
//! failures by errno).
//!
//! [`run`] starts `threads` worker threads; each owns an edge-triggered event loop (mio, i.e.
//! epoll with `EPOLLET`) and `connections / threads` non-blocking TCP connections with
//! `TCP_NODELAY` set (as wrk). Every connection keeps exactly one request in flight: the request
//! bytes are built once per run, a response is parsed incrementally as it arrives (see
//! the `http` module for the framing), and the next request is written once the current batch
//! of events has been handled (as wrk's loop does: the server then finds the batch's requests
//! together and serves them in one wake-up). In steady state a request costs one `write`,
//! one `read` and a share of one `epoll_wait`: no `epoll_ctl` (interest is registered once for
//! read and write, edge-triggered), no allocation (a reused per-thread read buffer), and no extra
//! `read` to see `EAGAIN` when a read came back shorter than the buffer (a TCP read shorter than
//! the buffer has drained the receive queue, and later data raises a new edge).
//! Most of the client's CPU is the switch into and out of `epoll_wait`, so the engine also cuts
//! wake-ups per request: once a connection's responses have a steady size, `SO_RCVLOWAT` makes
//! the kernel wake the thread once per response rather than for head and body apart (the
//! `worker::lowat` module: how a response of another size is still read at once), and the
//! threads run as `SCHED_BATCH` in closed loop, so a response from a server on the same CPU does
//! not preempt it: the server runs on and the thread finds several responses per wake-up
//! ([`LoadConfig::batch_sched`]; not at a constant rate, where a late wake-up is a late send).
//!
//! Latency is measured from the first write of a request to the read that completed its response
//! (with `keepalive = false`, from the start of the connect), recorded per thread into an HDR
//! histogram (1 µs .. 60 s, 3 significant digits) and merged at the end, so memory does not grow
//! with the duration. Requests still in flight when the duration ends are not counted (as wrk).
//! At a constant rate (`rate`), latency is measured from each request's intended send time
//! instead (see the `worker` module). A request without a complete response after `timeout` is
//! counted as a timeout error and its connection is replaced by a new one (wrk counts it and
//! keeps waiting on the same connection), so a server that hangs some connections cannot freeze
//! part of the load.
//!
//! mio is used rather than hand-written epoll: it *is* epoll in edge-triggered mode, and strace of
//! a run shows exactly the syscalls a raw loop would make (per request one `sendto` and one
//! `recvfrom`, one `epoll_wait` per 2-35 requests, no `epoll_ctl`); wrk makes two
//! `epoll_ctl` per request on top. Most of the client's CPU is the kernel's loopback TCP path
//! inside `sendto` and the wake-ups in `epoll_wait` (perf), not user space, so a hand-written
//! epoll would buy nothing measurable for its `unsafe`. Benchmark against wrk and oha:
//! `bench/load-vs-peers`.
//!
//! HTTPS (`LoadConfig::tls`, from an `https://` URL): each connection runs a rustls session
//! (see the `tls` module) driven by the same event loop: the handshake after connect (its failures
//! count as connect errors and name the reason), then requests and responses through the session.
//! A connection's transport is an enum (plain TCP or TLS), so the plain path stays as it was.
//! Reconnections resume TLS sessions, as a browser would.
//!
//! With `keepalive = false` the client closes each connection after its response, so TIME_WAIT
//! sockets pile up on the client side (on loopback Linux reuses them: `tcp_tw_reuse = 2`).
//!
//! Files: this one holds the public contract (config and error types) and [`run`], which starts
//! the workers; `result` is what a run measured and the merge of the workers' outcomes;
//! `worker` is a load thread's event loop (HTTP/1.1 and HTTP/2).

mod connect;
mod distribution;
pub mod h2;
pub mod http;
mod pinning;
mod result;
pub mod target;
mod timeline;
pub mod tls;
mod worker;

/// JSON Schema of `netdoctor load --json` (`"schema": "netdoctor.load/v1"`).
pub const LOAD_SCHEMA_JSON: &str = include_str!("../schema/load-v1.json");
/// JSON Schema of `netdoctor connect --json` (`"schema": "netdoctor.connect/v1"`).
pub const CONNECT_SCHEMA_JSON: &str = include_str!("../schema/connect-v1.json");

pub use connect::{ConnectConfig, ConnectResult, SYN_RETRANSMIT_SUSPECT, connect_bench};
pub use distribution::{LatencyBucket, QuantilePoint};
/// The errno's symbolic name; kept here for callers of the load crate (see
/// `netdoctor_sys::os_error`).
pub use netdoctor_sys::os_error::errno_name;
pub use pinning::{BUSY_TO_PIN, Pinning, busy_cpus, nap_for, spin_for};
use result::percentiles;
pub use result::{CpuWait, ErrorCounts, H2Result, LoadResult, SpinCounts};
pub use timeline::TimelinePoint;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use tls::TlsOptions;

/// Where the load goes.
#[derive(Clone, Debug)]
pub struct HttpTarget {
    /// The address connected to.
    pub addr: SocketAddr,
    /// The `Host` header value.
    pub host: String,
    /// The request target: path with query (`/index.html?x=1`).
    pub path: String,
}

impl HttpTarget {
    /// Parses a URL with [`target::parse_url`] (`http[s]://host[:port]/path?query`, or
    /// `host:port/path`) and resolves the host (first address). The TLS part of an `https://`
    /// URL is [`TlsOptions::for_url`] (or use [`LoadConfig::from_url`] for both).
    pub fn from_url(input: &str) -> Result<Self, LoadError> {
        let url = target::parse_url(input).map_err(|e| LoadError::InvalidUrl {
            url: e.input,
            reason: e.reason,
        })?;
        Self::resolve(&url)
    }

    /// Resolves a parsed URL's host (first address) into a target.
    pub fn resolve(url: &target::HttpUrl) -> Result<Self, LoadError> {
        let resolve_err = |source| LoadError::Resolve {
            host: url.host.clone(),
            source,
        };
        let addr = (url.host.as_str(), url.port)
            .to_socket_addrs()
            .map_err(resolve_err)?
            .next()
            .ok_or_else(|| {
                resolve_err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no address",
                ))
            })?;
        Ok(HttpTarget {
            addr,
            host: url.host_header.clone(),
            path: url.path.clone(),
        })
    }
}

/// How to load the target.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    pub target: HttpTarget,
    /// Concurrent connections, each with one request in flight (default 100).
    pub connections: usize,
    /// Worker threads (default: min(2, cores)); more threads than connections is fixed up.
    pub threads: usize,
    /// How long to load (default 10 s).
    pub duration: Duration,
    /// Per request: no complete response after this is a timeout error (default 2 s).
    pub timeout: Duration,
    /// Reuse connections (default true); false = one connection per request.
    pub keepalive: bool,
    /// Request method (default `GET`).
    pub method: String,
    /// Extra request headers (a `Host` here replaces the target's).
    pub headers: Vec<(String, String)>,
    /// Request body (a `Content-Length` is added).
    pub body: Option<Vec<u8>>,
    /// Open loop at this many requests per second for the whole run (wrk2's `-R`), with
    /// latency measured from each request's intended send time; `None` (default) = closed loop.
    pub rate: Option<f64>,
    /// HTTPS: speak TLS to the target ([`TlsOptions::for_url`]); `None` (default) = plain HTTP.
    pub tls: Option<TlsOptions>,
    /// HTTP/1.1 or HTTP/2 (default [`Protocol::Auto`]: by ALPN over TLS, HTTP/1.1 in clear).
    pub protocol: Protocol,
    /// HTTP/2: concurrent streams per connection (h2load's `-m`; default 1).
    pub streams: usize,
    /// gRPC: requests are gRPC calls (POST, `content-type: application/grpc`, the body framed
    /// as one gRPC message) and the `grpc-status` trailer decides success. Implies HTTP/2.
    pub grpc: bool,
    /// Whether load thread `i` is pinned to the `i`-th CPU this process may use (default
    /// [`Pinning::Auto`]: when the threads are exactly as many as those CPUs and other work
    /// already keeps them busy; see [`Pinning::resolve`]). A failed pin is ignored (the thread
    /// runs unpinned).
    pub pinning: Pinning,
    /// Give the load threads the `SCHED_BATCH` policy (default true; `--no-batch-sched`):
    /// a response then does not make its thread preempt the task on its CPU (on loopback, the
    /// server that just sent it), so the server runs on and the thread later finds several
    /// responses in one wake-up. Same CPU share as the default policy. Best effort. Closed loop
    /// only: at a constant rate ([`LoadConfig::rate`]) a timer wake-up that waits for the task
    /// on the CPU sends late, and the corrected latency counts that delay (p50 0.2–0.7 ms →
    /// 2–3 ms at 5,000/s on the busy 2-core machine), so those runs keep the default policy.
    /// With it the threads' nice value is raised to [`BATCH_NICE`]: a server started from the
    /// same session (the same autogroup, as in `bench/load-vs-peers`) then wins the CPU it
    /// shares with a load thread. At nice 0, nginx on loopback was preempted 0.35–0.42 times
    /// per request and waited 8–10 µs per request runnable (schedstat); at nice 5, 0.04–0.08 and
    /// 4–6 µs, with 10–20 % more requests/s and less client CPU per request (wrk: ~0.01–0.1 and
    /// 2–4 µs; its threads are not pinned beside the server). A server in another session
    /// (another autogroup) is not affected: nice only orders tasks within a group.
    /// Pinned threads only: an unpinned thread at `SCHED_BATCH` and nice 5 is the one the
    /// scheduler stacks with the other and the server (session 12, nginx on loopback, 3
    /// alternating rounds in an autogroup at nice −20, `--no-pin-threads`: batch + nice 5
    /// 32–38k req/s at 0.04 context switches per request, a saturated thread; batch alone
    /// 49–57k at the same CPU per request; wrk 50–63k).
    pub batch_sched: bool,
    /// Plain HTTP/1.1: once a connection's responses have the same size twice in a row, set
    /// `SO_RCVLOWAT` to it (default true; `--no-rcvlowat`), so the kernel wakes the thread once
    /// per response rather than once for the head and again for the body. A response of another
    /// size turns it off for the thread (see the `worker::lowat` module).
    pub rcvlowat: bool,
    /// Before a load thread sleeps in `epoll_wait`, poll without sleeping for up to this long
    /// (default zero: off). `netdoctor load` sets [`SPIN_WAIT`] in closed loop when the
    /// threads are left to the scheduler because the CPUs were idle ([`spin_for`];
    /// `--no-spin` turns it off). Why: a local server that sends a response to a sleeping
    /// thread pays for waking it, and on a VM whose idle vCPU halts at once each wake-up is an
    /// IPI sent from the server's CPU (a remote client would cost it nothing of the sort).
    /// Session 22, one nginx worker on a quiet 2-vCPU VM, 100 connections, `bench/load-vs-peers`
    /// with the unspun threads (`--no-pin-threads`) as a fourth column in the same rounds:
    /// HTTPS (3 rounds) 120.2k req/s spinning against 102.1k, nginx 0.0827 against 0.0976 s of
    /// CPU per 10k requests and 0.021 against 0.242 wake-ups sent per request (oha 114.1k);
    /// plain HTTP (5 rounds) 1.18x wrk's requests/s against 1.05x. The cost is the client's
    /// CPU: +36 % per request over HTTPS, and over plain HTTP 0.98x wrk's against 0.83x; that
    /// CPU was idle (the condition), so it is spent, not taken. A 15 µs spin gave 1.14x at
    /// 0.94x over plain HTTP and only tied oha over HTTPS. Pinned threads share a CPU with the
    /// server or another task, where a spin takes the CPU the other needs (the session's
    /// prototype pinned beside nginx: 79–80k → 73–75k), so it stays off there, and at a
    /// constant rate (the waits are long).
    /// Session 23: a spin that times out spends the whole budget and sleeps anyway (plain
    /// HTTP, 50 µs, counted on a shared VM: 23 % of the spins, 83 % of the spin's CPU), so after a timeout the next
    /// waits sleep at once, twice as many after each further timeout (up to 64), half as many
    /// after each spin that found its event (the `worker::spin` module). The result's
    /// [`LoadResult::spin`] counts the waits, spins, hits and time spun.
    /// With [`LoadConfig::nap`] set the spin is what a thread does only where its latencies are
    /// too short for a nap; `netdoctor load` sets the nap where each thread keeps at least
    /// [`NAP_IN_FLIGHT`] requests in flight ([`nap_for`]).
    pub spin: Duration,
    /// Before a load thread sleeps in `epoll_wait`, sleep up to this long on its own timer and
    /// poll once (default zero: off; `netdoctor load --wait nap` sets [`NAP_WAIT`], and so does
    /// its default where the threads spin and each keeps at least [`NAP_IN_FLIGHT`]
    /// requests in flight: [`nap_for`]).
    /// A nap lasts at most 1/16 of the thread's recent mean latency, which bounds what it adds
    /// to a latency; where that is under 10 µs the thread spins ([`LoadConfig::spin`]) instead.
    /// Why: a thread asleep in `nanosleep` is not on the epoll wait queue, so the server's
    /// responses do not wake it, and the CPU stays idle meanwhile. Session 26, quiet 2-vCPU VM,
    /// nginx, 100 connections, alternating rounds: plain HTTP 1.18× wrk's requests/s at
    /// 0.88–0.94× its CPU per request (the 50 µs spin: 1.16–1.21× at 0.99–1.01×), HTTPS
    /// 1.06–1.12× oha. With 10 connections the p99 rose to 1.1–1.6 ms (spin 0.23–0.6 ms),
    /// naps starting while the other load thread held the CPU ending late, so the default naps
    /// only with many connections per thread; the `worker::spin` module has the figures.
    pub nap: Duration,
}

/// How long `netdoctor load` lets an unpinned closed-loop thread poll before it sleeps
/// ([`LoadConfig::spin`]).
pub const SPIN_WAIT: Duration = Duration::from_micros(50);

/// The longest nap of a `netdoctor load --wait nap` thread ([`LoadConfig::nap`]), and of a
/// default (`--wait auto`) one with [`NAP_IN_FLIGHT`] requests in flight or more ([`nap_for`]).
pub const NAP_WAIT: Duration = Duration::from_micros(40);

/// The requests in flight per thread (connections × HTTP/2 streams) from which `--wait auto` naps rather than spins ([`nap_for`]).
pub const NAP_IN_FLIGHT: usize = 16;

/// The nice value closed-loop load threads run at with [`LoadConfig::batch_sched`] when they
/// are pinned (never lower than the one they were started with).
pub const BATCH_NICE: i32 = 5;

/// Which HTTP the load speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Over TLS, ALPN offers `h2` and `http/1.1` and the server's choice decides; in clear,
    /// HTTP/1.1.
    #[default]
    Auto,
    /// HTTP/1.1 only (ALPN offers only `http/1.1`).
    Http1,
    /// HTTP/2: over TLS ALPN offers only `h2`; in clear, h2c with prior knowledge.
    Http2,
}

/// The default gRPC method: the standard health check, which most servers implement.
pub const GRPC_HEALTH_CHECK: &str = "/grpc.health.v1.Health/Check";

impl LoadConfig {
    /// The defaults: 100 connections, min(2, cores) threads, 10 s, 2 s timeout, keep-alive, GET.
    pub fn new(target: HttpTarget) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        LoadConfig {
            target,
            connections: 100,
            threads: cores.min(2),
            duration: Duration::from_secs(10),
            timeout: Duration::from_secs(2),
            keepalive: true,
            method: "GET".to_string(),
            headers: Vec::new(),
            body: None,
            rate: None,
            tls: None,
            protocol: Protocol::Auto,
            streams: 1,
            grpc: false,
            pinning: Pinning::Auto,
            batch_sched: true,
            rcvlowat: true,
            spin: Duration::ZERO,
            nap: Duration::ZERO,
        }
    }

    /// The defaults for a URL: `http://` or `https://` (then TLS with `insecure` as given).
    pub fn from_url(input: &str, insecure: bool) -> Result<Self, LoadError> {
        let url = target::parse_url(input).map_err(|e| LoadError::InvalidUrl {
            url: e.input,
            reason: e.reason,
        })?;
        let mut cfg = LoadConfig::new(HttpTarget::resolve(&url)?);
        cfg.tls = TlsOptions::for_url(&url, insecure);
        cfg.apply_scheme(url.scheme);
        Ok(cfg)
    }

    /// A `grpc://` or `grpcs://` URL: gRPC over HTTP/2, POST, and the health check when the
    /// URL has no method path.
    pub fn apply_scheme(&mut self, scheme: target::Scheme) {
        if scheme.is_grpc() {
            self.grpc = true;
            self.protocol = Protocol::Http2;
            self.method = "POST".into();
            if self.target.path == "/" {
                self.target.path = GRPC_HEALTH_CHECK.into();
            }
        }
    }
}

/// Passed to the progress callback about every 250 ms.
#[derive(Clone, Debug)]
pub struct Progress {
    pub elapsed: Duration,
    /// Completed responses so far.
    pub requests: u64,
    /// Errors so far (all kinds).
    pub errors: u64,
}

/// Latency summary in milliseconds (core's, the workspace's one type).
pub use netdoctor_core::Percentiles;

/// A run could not take place.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("load needs at least one connection (connections = 0)")]
    NoConnections,
    #[error("invalid rate {0}: requests per second must be a number greater than zero")]
    InvalidRate(f64),
    #[error("connect needs at least one connection attempt (count = 0)")]
    InvalidCount,
    #[error("invalid request for {addr}: {reason}")]
    InvalidRequest { addr: SocketAddr, reason: String },
    #[error("invalid url {url}: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error("resolve {host}: {source}")]
    Resolve {
        host: String,
        source: std::io::Error,
    },
    #[error("{op}: {source}")]
    Io { op: String, source: std::io::Error },
    #[error("tls for {host}: {source}")]
    Tls {
        host: String,
        source: tls::TlsSetupError,
    },
}

/// Runs the load until `duration` passes or `stop` is set. `on_progress` is called from the
/// calling thread about every 250 ms.
pub fn run(
    cfg: &LoadConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<LoadResult, LoadError> {
    if cfg.connections == 0 {
        return Err(LoadError::NoConnections);
    }
    if let Some(r) = cfg.rate
        && !(r.is_finite() && r > 0.0)
    {
        return Err(LoadError::InvalidRate(r));
    }
    let threads = cfg.threads.clamp(1, cfg.connections);
    let (tls, protocol) = choose_protocol(cfg)?;
    let h2 = match protocol {
        "http/1.1" => None,
        _ => Some(h2_spec(cfg, protocol)?),
    };
    let request = http::build_request(
        &cfg.method,
        &cfg.target.host,
        &cfg.target.path,
        &cfg.headers,
        cfg.body.as_deref(),
        cfg.keepalive,
    )
    .map_err(|reason| LoadError::InvalidRequest {
        addr: cfg.target.addr,
        reason,
    })?;
    let spec = worker::Spec {
        addr: cfg.target.addr,
        tls,
        request,
        head: cfg.method.eq_ignore_ascii_case("HEAD"),
        keepalive: cfg.keepalive,
        timeout: cfg.timeout,
        rate: cfg.rate,
        connections: cfg.connections,
        h2,
        rcvlowat: cfg.rcvlowat,
        spin: if cfg.rate.is_none() {
            cfg.spin
        } else {
            Duration::ZERO
        },
        nap: if cfg.rate.is_none() {
            cfg.nap
        } else {
            Duration::ZERO
        },
    };

    let mut workers = Vec::with_capacity(threads);
    let mut first = 0;
    for i in 0..threads {
        // Spread the remainder: the first `connections % threads` threads get one more.
        let n = cfg.connections / threads + usize::from(i < cfg.connections % threads);
        workers.push(
            worker::Worker::new(n, first).map_err(|source| LoadError::Io {
                op: format!("create event loop for load thread {i}"),
                source,
            })?,
        );
        first += n;
    }
    let shared: Vec<worker::Shared> = workers.iter().map(|w| w.shared()).collect();
    // Before the clock starts: under `Pinning::Auto` this may sample the CPUs for 200 ms.
    let cpus = match cfg.pinning {
        Pinning::Never => Vec::new(),
        p => {
            let allowed = netdoctor_sys::affinity::allowed_cpus().unwrap_or_default();
            p.cpus(threads, &allowed, || {
                busy_cpus(&allowed, pinning::BUSY_SAMPLE)
            })
        }
    };
    let done = AtomicBool::new(false);
    let start = Instant::now();
    let deadline = start + cfg.duration;
    let outcome = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for (i, w) in workers.into_iter().enumerate() {
            let spec = &spec;
            let done = &done;
            let h = std::thread::Builder::new()
                .name(format!("load-{i}"))
                .spawn_scoped(scope, {
                    let cpu = cpus.get(i).copied();
                    // At a constant rate the send times are the measurement: keep the policy.
                    let batch = cfg.batch_sched && cfg.rate.is_none();
                    move || {
                        if batch {
                            // Best effort: the default policy is still a correct run.
                            let _ = netdoctor_sys::affinity::set_current_thread_batch();
                            if cpu.is_some() {
                                let _ = netdoctor_sys::affinity::lower_current_thread_priority(
                                    BATCH_NICE,
                                );
                            }
                        }
                        if let Some(cpu) = cpu {
                            // Best effort: unpinned is still a correct run.
                            let _ = netdoctor_sys::affinity::pin_current_thread(cpu);
                        }
                        let s0 = result::CpuWait::thread_now();
                        let out = w.run(spec, start, deadline, done);
                        (out, s0.zip(result::CpuWait::thread_now()))
                    }
                });
            match h {
                Ok(h) => handles.push(h),
                Err(source) => {
                    done.store(true, Ordering::Relaxed);
                    for s in &shared {
                        s.wake();
                    }
                    return Err(LoadError::Io {
                        op: format!("spawn load thread {i}"),
                        source,
                    });
                }
            }
        }
        let mut next_progress = start + Duration::from_millis(250);
        loop {
            if handles.iter().all(|h| h.is_finished()) {
                break;
            }
            let now = Instant::now();
            if stop.load(Ordering::Relaxed) && !done.swap(true, Ordering::Relaxed) {
                for s in &shared {
                    s.wake();
                }
            }
            if now >= next_progress {
                let (requests, errors) = shared
                    .iter()
                    .map(|s| s.counts())
                    .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
                on_progress(&Progress {
                    elapsed: now - start,
                    requests,
                    errors,
                });
                next_progress += Duration::from_millis(250);
                if next_progress < now {
                    next_progress = now + Duration::from_millis(250);
                }
            }
            let wake = next_progress
                .min(deadline.max(now))
                .min(now + Duration::from_millis(20));
            std::thread::sleep(
                wake.saturating_duration_since(now)
                    .max(Duration::from_millis(1)),
            );
        }
        let mut results = Vec::with_capacity(handles.len());
        for (i, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(r) => results.push(r),
                Err(_) => {
                    return Err(LoadError::Io {
                        op: format!("join load thread {i}"),
                        source: std::io::Error::other("thread panicked"),
                    });
                }
            }
        }
        Ok(results)
    })?;
    // The run lasted until the last worker stopped (not until this thread noticed).
    let (outcome, sched): (Vec<_>, Vec<_>) = outcome.into_iter().unzip();
    let end = outcome.iter().map(|o| o.ended).max().unwrap_or(start);
    let clocks: Vec<_> = outcome.iter().map(|o| &o.sched).collect();
    let cpu_wait = result::CpuWait::from_threads(&sched).map(|w| w.with_tail(&clocks));
    let mut res = result::merge(cfg.connections, threads, end - start, outcome);
    res.cpu_wait = cpu_wait;
    res.rate = cfg.rate;
    res.protocol = Some(protocol.to_string());
    if let Some(h) = res.h2.as_mut() {
        h.streams = cfg.streams;
    }
    Ok(res)
}

/// Which protocol the run speaks, and its TLS client (ALPN set to match): in clear, HTTP/1.1
/// or h2c by [`LoadConfig::protocol`]; over TLS, with [`Protocol::Auto`], one handshake that
/// offers `h2` and `http/1.1` decides.
fn choose_protocol(cfg: &LoadConfig) -> Result<(Option<tls::TlsClient>, &'static str), LoadError> {
    let protocol = if cfg.grpc {
        Protocol::Http2
    } else {
        cfg.protocol
    };
    let Some(opts) = &cfg.tls else {
        return Ok((
            None,
            if protocol == Protocol::Http2 {
                "h2c"
            } else {
                "http/1.1"
            },
        ));
    };
    let err = |source| LoadError::Tls {
        host: opts.server_name.clone(),
        source,
    };
    let client = |alpn: &[&[u8]]| tls::TlsClient::with_alpn(opts, true, alpn).map_err(err);
    match protocol {
        Protocol::Http1 => Ok((Some(client(&[b"http/1.1"])?), "http/1.1")),
        Protocol::Http2 => Ok((Some(client(&[b"h2"])?), "h2")),
        Protocol::Auto => {
            let probe = client(&[b"h2", b"http/1.1"])?;
            match probe.negotiate(cfg.target.addr, cfg.timeout.min(Duration::from_secs(5))) {
                Ok(Some(p)) if p == b"h2" => Ok((Some(client(&[b"h2"])?), "h2")),
                // The server picked HTTP/1.1, or could not be asked: the run's own
                // connections then report the reason as connect errors.
                _ => Ok((Some(client(&[b"http/1.1"])?), "http/1.1")),
            }
        }
    }
}

/// The HTTP/2 request of a run, encoded once.
fn h2_spec(cfg: &LoadConfig, protocol: &str) -> Result<worker::h2::H2Spec, LoadError> {
    if !cfg.keepalive {
        return Err(LoadError::InvalidRequest {
            addr: cfg.target.addr,
            reason: "one connection per request (no keep-alive) is HTTP/1.1 only".into(),
        });
    }
    if cfg.streams == 0 {
        return Err(LoadError::InvalidRequest {
            addr: cfg.target.addr,
            reason: "HTTP/2 needs at least one stream per connection".into(),
        });
    }
    let mut headers = cfg.headers.clone();
    let body = if cfg.grpc {
        for (n, v) in [("content-type", "application/grpc"), ("te", "trailers")] {
            if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n)) {
                headers.push((n.into(), v.into()));
            }
        }
        Some(h2::grpc_message(cfg.body.as_deref().unwrap_or_default()))
    } else {
        cfg.body.clone()
    };
    let method = if cfg.grpc {
        "POST"
    } else {
        cfg.method.as_str()
    };
    let blocks = h2::RequestBlocks::new(&h2::H2Request {
        method,
        scheme: if protocol == "h2" { "https" } else { "http" },
        authority: &cfg.target.host,
        path: &cfg.target.path,
        headers: &headers,
        body: body.as_deref(),
    })
    .map_err(|reason| LoadError::InvalidRequest {
        addr: cfg.target.addr,
        reason,
    })?;
    Ok(worker::h2::H2Spec {
        blocks,
        body,
        streams: cfg.streams,
        grpc: cfg.grpc,
    })
}

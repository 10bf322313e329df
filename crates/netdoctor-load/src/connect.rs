//! The connection-setup benchmark: `count` TCP connects (`connect()` then `close()`), at most
//! `concurrency` in flight, each one timed from the `connect()` call to the moment the socket
//! became writable (the handshake completed) or failed.
//!
//! A connect slower than 1 s, or one still pending when it times out after 1 s or more, is a
//! SYN-retransmit suspect: Linux's initial retransmission timeout for a SYN is 1 s, so on any
//! path with an RTT well below a second such a connect had its SYN (or the SYN/ACK) lost or
//! dropped, typically by a full listen queue or a firewall. Where the kernel tells it
//! (`TCP_INFO.tcpi_total_retrans` on the connecting socket), the SYN retransmissions are also
//! counted exactly. Failures are counted by errno name: `EADDRNOTAVAIL` from `connect()` means the
//! local ephemeral ports ran out (`ip_local_port_range`, TIME_WAIT), `ECONNREFUSED` that nothing
//! listens.
//!
//! Like the HTTP load, it is one mio (epoll) loop over non-blocking sockets; the latencies go into
//! an HDR histogram, so memory does not grow with `count`.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use netdoctor_sys::os_error::{describe, errno_name};
use netdoctor_sys::sockopt;
use serde::{Deserialize, Serialize};

use crate::worker::new_histogram;
use crate::{LoadError, Percentiles, Progress, percentiles};

/// A connect slower than this is a SYN-retransmit suspect (Linux's initial SYN RTO).
pub const SYN_RETRANSMIT_SUSPECT: Duration = Duration::from_secs(1);

/// How to run the connect benchmark.
#[derive(Clone, Debug)]
pub struct ConnectConfig {
    pub addr: SocketAddr,
    /// Connects to make (default 1000).
    pub count: u64,
    /// Connects in flight at once (default 1).
    pub concurrency: usize,
    /// A connect not completed after this is given up and counted as `timeout` (default 5 s:
    /// long enough to see the 1 s and 3 s SYN retransmissions complete).
    pub timeout: Duration,
}

impl ConnectConfig {
    pub fn new(addr: SocketAddr) -> Self {
        ConnectConfig {
            addr,
            count: 1000,
            concurrency: 1,
            timeout: Duration::from_secs(5),
        }
    }
}

/// What the connect benchmark measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConnectResult {
    pub concurrency: usize,
    /// Connects started (less than asked when stopped early).
    pub attempts: u64,
    /// Connects that completed the handshake.
    pub connected: u64,
    /// Connects that failed or timed out.
    pub failed: u64,
    /// Wall time of the run.
    pub duration_s: f64,
    /// Completed connects per second.
    pub connects_per_s: f64,
    /// Latency of the completed connects.
    pub latency_ms: Percentiles,
    /// Completed connects that took 1 s or more.
    pub slow_connects: u64,
    /// Connects given up after the timeout.
    pub timeouts: u64,
    /// Slow connects plus timeouts after ≥ 1 s: connects whose SYN or SYN/ACK was probably
    /// retransmitted.
    pub syn_retransmit_suspects: u64,
    /// SYN retransmissions the kernel counted on these sockets (`TCP_INFO`), when available.
    pub syn_retransmits: u64,
    /// Failures by errno name (`EADDRNOTAVAIL`, `ECONNREFUSED`, ...; `timeout` for our own).
    pub errors: BTreeMap<String, u64>,
    /// The first failure, e.g. `connect 127.0.0.1:1: connection refused (ECONNREFUSED)`.
    pub first_error: Option<String>,
}

struct Slot {
    stream: TcpStream,
    started: Instant,
}

struct Bench<'a> {
    cfg: &'a ConnectConfig,
    hist: hdrhistogram::Histogram<u64>,
    res: ConnectResult,
}

impl Bench<'_> {
    fn fail(&mut self, key: String, msg: impl FnOnce() -> String) {
        self.res.failed += 1;
        *self.res.errors.entry(key).or_insert(0) += 1;
        if self.res.first_error.is_none() {
            self.res.first_error = Some(msg());
        }
    }

    fn fail_io(&mut self, e: &io::Error) {
        let addr = self.cfg.addr;
        let name = errno_name(e);
        self.fail(name.clone(), || {
            format!("connect {addr}: {} ({name})", describe(e))
        });
    }

    /// Counts the SYN retransmissions of a socket about to be closed.
    fn note_retransmits(&mut self, s: &TcpStream) {
        if let Some(n) = total_retrans(s) {
            self.res.syn_retransmits += u64::from(n);
        }
    }
}

/// Runs `cfg.count` connects (fewer when `stop` is set). `on_progress` is called about every
/// 250 ms with `requests` = connects completed, `errors` = failures.
pub fn connect_bench(
    cfg: &ConnectConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<ConnectResult, LoadError> {
    if cfg.count == 0 {
        return Err(LoadError::InvalidCount);
    }
    if cfg.concurrency == 0 {
        return Err(LoadError::NoConnections);
    }
    let io_err = |op: &str| {
        let op = op.to_string();
        move |source| LoadError::Io { op, source }
    };
    let concurrency =
        usize::try_from(cfg.count).map_or(cfg.concurrency, |n| cfg.concurrency.min(n));
    let mut poll = Poll::new().map_err(io_err("create event loop for connect"))?;
    let mut events = Events::with_capacity(concurrency.clamp(16, 1024));
    let mut slots: Vec<Option<Slot>> = (0..concurrency).map(|_| None).collect();
    let mut free: Vec<usize> = (0..concurrency).rev().collect();
    let mut b = Bench {
        cfg,
        hist: new_histogram(),
        res: ConnectResult {
            concurrency,
            attempts: 0,
            connected: 0,
            failed: 0,
            duration_s: 0.0,
            connects_per_s: 0.0,
            latency_ms: Percentiles::default(),
            slow_connects: 0,
            timeouts: 0,
            syn_retransmit_suspects: 0,
            syn_retransmits: 0,
            errors: BTreeMap::new(),
            first_error: None,
        },
    };
    let start = Instant::now();
    let scan_every = (cfg.timeout / 8).clamp(Duration::from_millis(1), Duration::from_millis(100));
    let mut next_scan = start + scan_every;
    let mut next_progress = start + Duration::from_millis(250);
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        // Start connects into the free slots.
        while !stopping && b.res.attempts < cfg.count {
            let Some(i) = free.pop() else { break };
            b.res.attempts += 1;
            let started = Instant::now();
            let res = TcpStream::connect(cfg.addr).and_then(|mut s| {
                poll.registry()
                    .register(&mut s, Token(i), Interest::WRITABLE)?;
                Ok(s)
            });
            match res {
                Ok(stream) => slots[i] = Some(Slot { stream, started }),
                Err(e) => {
                    b.fail_io(&e);
                    free.push(i);
                }
            }
        }
        if free.len() == concurrency && (stopping || b.res.attempts >= cfg.count) {
            break;
        }
        let now = Instant::now();
        if now >= next_progress {
            on_progress(&Progress {
                elapsed: now - start,
                requests: b.res.connected,
                errors: b.res.failed,
            });
            next_progress = now + Duration::from_millis(250);
        }
        if now >= next_scan {
            next_scan = now + scan_every;
            for (i, slot) in slots.iter_mut().enumerate() {
                let late = slot
                    .as_ref()
                    .is_some_and(|s| now.saturating_duration_since(s.started) >= cfg.timeout);
                if late && let Some(s) = slot.take() {
                    b.note_retransmits(&s.stream);
                    b.res.timeouts += 1;
                    if cfg.timeout >= SYN_RETRANSMIT_SUSPECT {
                        b.res.syn_retransmit_suspects += 1;
                    }
                    let (addr, t) = (cfg.addr, cfg.timeout);
                    b.fail("timeout".into(), || {
                        format!("connect {addr}: no handshake after {t:?} (timeout)")
                    });
                    free.push(i);
                }
            }
        }
        let wake = next_scan.min(next_progress);
        let wait = if stopping {
            Duration::ZERO
        } else {
            wake.saturating_duration_since(now)
        };
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(LoadError::Io {
                op: "epoll_wait in connect".into(),
                source: e,
            });
        }
        let now = Instant::now();
        for ev in events.iter() {
            let i = ev.token().0;
            let Some(slot) = slots.get_mut(i).and_then(Option::take) else {
                continue;
            };
            let err = match slot.stream.take_error() {
                Ok(Some(e)) | Err(e) => Some(e),
                Ok(None) if ev.is_error() => Some(io::Error::other("connection failed")),
                Ok(None) => None,
            };
            b.note_retransmits(&slot.stream);
            match err {
                Some(e) => b.fail_io(&e),
                None if ev.is_writable() => {
                    let took = now.saturating_duration_since(slot.started);
                    b.res.connected += 1;
                    if took >= SYN_RETRANSMIT_SUSPECT {
                        b.res.slow_connects += 1;
                        b.res.syn_retransmit_suspects += 1;
                    }
                    let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
                    b.hist.saturating_record(us.max(1));
                }
                None => {
                    // Not a completion: keep waiting.
                    slots[i] = Some(slot);
                    continue;
                }
            }
            // Dropping the stream closes it (the client side then holds TIME_WAIT).
            free.push(i);
        }
        if stopping {
            // Stop: give up the connects in flight without counting them.
            for s in slots.iter_mut() {
                if s.take().is_some() {
                    b.res.attempts -= 1;
                }
            }
            break;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let mut res = b.res;
    res.duration_s = elapsed;
    res.connects_per_s = if elapsed > 0.0 {
        res.connected as f64 / elapsed
    } else {
        0.0
    };
    res.latency_ms = percentiles(&b.hist);
    Ok(res)
}

/// `tcpi_total_retrans` of a socket: on a connecting socket, its SYN retransmissions.
fn total_retrans(s: &TcpStream) -> Option<u32> {
    sockopt::tcp_info(s)
        .ok()
        .map(|info| info.tcpi_total_retrans)
}

//! One load thread: an edge-triggered mio event loop over its share of the connections.
//!
//! Each connection is registered once for read and write interest (edge-triggered) and walks
//! `Connecting → Writing → Reading → Writing → ...`; an error, a timeout, `Connection: close` or
//! `keepalive = false` closes it and opens a new one. Timeouts are checked by a scan every
//! `timeout / 8` (bounded to 1..100 ms) rather than a timer per request, which is cheaper and
//! precise enough (a timeout fires at most 12.5 % late).
//!
//! With a constant rate (`Spec::rate`, wrk2's model) every connection has a schedule: its
//! requests are due every `connections / rate` seconds, offset by `1 / rate` per connection so the
//! run's requests are evenly spaced. A connection that is ready before its next request is due
//! waits `Idle` in a per-thread min-heap; one that falls behind (a stalled server) sends its
//! overdue requests back to back. Latency is measured from the request's *intended* send time,
//! not from when it could be sent: the coordinated-omission correction, so a stall shows up in
//! the tail (every request that was due during it waited) instead of being one slow sample.
//! The loop wakes for the next due request through a `timerfd` (µs precision) rather than
//! `epoll_wait`'s timeout, which mio rounds up to whole milliseconds: that rounding would send
//! requests up to 1 ms late and add it to every corrected latency. The two libc calls are
//! wrapped in the `timer` module (no crate in the tree wraps timerfd).
//!
//! Files: this one starts a thread's loop (`Worker::run`); `base` is what the HTTP/1.1 and
//! HTTP/2 loops share (the event loop driver, opening connections, error notes); `conn` is one
//! HTTP/1.1 connection's life (connect, write, read, complete, timeouts, errors); `h2` is the
//! HTTP/2 loop; `schedule` decides when a connection's next request
//! goes out (closed loop or the constant-rate schedule); `lowat` wakes a connection once per
//! response (`SO_RCVLOWAT` set to the learned response size); `timer` is the timerfd; `tls` is the
//! transport enum (plain TCP or a TLS session) and the handshake step of HTTPS connections.

mod base;
mod conn;
pub(crate) mod h2;
mod lowat;
pub(crate) mod sched;
mod schedule;
mod spin;
mod timer;
mod tls;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::ErrorCounts;
use crate::http::ResponseParser;
use crate::tls::TlsClient;
use base::{Base, Protocol, connect_outcome, drive};
use conn::{DRAIN_GRACE, Kind, Loop, State};
use lowat::LOWAT_WATCH;
use netdoctor_sys::os_error::describe;
use timer::Timer;
use tls::Stream;

const WAKER: Token = Token(usize::MAX);
const TIMER: Token = Token(usize::MAX - 1);
const READ_BUF: usize = 64 * 1024;
/// A connection whose connect() failed is retried after this pause (no busy loop against a
/// closed port).
const CONNECT_RETRY: Duration = Duration::from_millis(10);
const STATUS_CODES: usize = 1000;

/// What every worker does, built once per run.
pub(crate) struct Spec {
    pub addr: SocketAddr,
    /// HTTPS: the prepared TLS client (None = plain HTTP).
    pub tls: Option<TlsClient>,
    pub request: Vec<u8>,
    pub head: bool,
    pub keepalive: bool,
    pub timeout: Duration,
    /// Constant rate: the whole run's requests per second (None = closed loop).
    pub rate: Option<f64>,
    /// All connections of the run (for the rate schedule).
    pub connections: usize,
    /// HTTP/2 (h2 or h2c): the `h2` loop runs instead of the HTTP/1.1 one.
    pub h2: Option<h2::H2Spec>,
    /// Plain HTTP/1.1: learn the response size and wake on it (`SO_RCVLOWAT`, see `lowat`).
    pub rcvlowat: bool,
    /// Poll without sleeping for up to this long before each sleep (`LoadConfig::spin`).
    pub spin: Duration,
    /// Sleep up to this long on the thread's own timer, then poll, before each sleep in
    /// `epoll_wait` (`LoadConfig::nap`).
    pub nap: Duration,
}

/// Live counters read by the progress loop; on its own cache lines (no false sharing).
#[repr(align(128))]
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    errors: AtomicU64,
}

/// The calling thread's handle on a worker: progress counters and a waker.
pub(crate) struct Shared {
    counters: Arc<Counters>,
    waker: Arc<Waker>,
}

impl Shared {
    pub fn wake(&self) {
        // A failed wake only delays the stop until the worker's next poll timeout.
        let _ = self.waker.wake();
    }

    pub fn counts(&self) -> (u64, u64) {
        (
            self.counters.requests.load(Ordering::Relaxed),
            self.counters.errors.load(Ordering::Relaxed),
        )
    }
}

/// What one worker measured.
pub(crate) struct Outcome {
    pub hist: Histogram<u64>,
    pub requests: u64,
    pub bytes_read: u64,
    pub errors: ErrorCounts,
    /// connect() calls made.
    pub connects: u64,
    /// Responses by status code (index = code).
    pub status: Vec<u64>,
    pub first_error: Option<(Instant, String)>,
    /// When the loop stopped.
    pub ended: Instant,
    /// Requests, errors and latency per second.
    pub timeline: crate::timeline::Recorder,
    /// HTTP/2 counts (resets, GOAWAYs, gRPC statuses); `None` for HTTP/1.1.
    pub h2: Option<h2::H2Counts>,
    /// The thread's waits for a CPU, per wake-up and per request.
    pub sched: sched::SchedClock,
    /// What the nap or spin before sleep did (`None` when the thread did neither).
    pub spin: Option<crate::SpinCounts>,
}

pub(crate) fn new_histogram() -> Histogram<u64> {
    // 1 µs .. 60 s at 3 significant digits: valid bounds, cannot fail.
    Histogram::new_with_bounds(1, 60_000_000, 3).unwrap_or_else(|_| Histogram::new(3).unwrap())
}

pub(crate) struct Worker {
    poll: Poll,
    waker: Arc<Waker>,
    counters: Arc<Counters>,
    connections: usize,
    /// Run-wide index of this worker's first connection (for the rate schedule).
    first: usize,
}

impl Worker {
    pub fn new(connections: usize, first: usize) -> io::Result<Self> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        Ok(Worker {
            poll,
            waker,
            counters: Arc::default(),
            connections,
            first,
        })
    }

    pub fn shared(&self) -> Shared {
        Shared {
            counters: self.counters.clone(),
            waker: self.waker.clone(),
        }
    }

    pub fn run(self, spec: &Spec, start: Instant, deadline: Instant, done: &AtomicBool) -> Outcome {
        let Worker {
            poll,
            counters,
            connections,
            first,
            ..
        } = self;
        let base = Base::new(spec, start, deadline);
        match &spec.h2 {
            Some(h) => {
                let mut lp = h2::H2Loop::new(base, h, connections, first);
                drive(&mut lp, poll, &counters, connections, done);
                lp.into_outcome()
            }
            None => {
                let mut lp = Loop::new(base, connections, first);
                drive(&mut lp, poll, &counters, connections, done);
                lp.b.out
            }
        }
    }
}

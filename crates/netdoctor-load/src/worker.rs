//! One load thread: an edge-triggered mio event loop over its share of the connections.
//!
//! Each connection is registered once for read and write interest (edge-triggered) and walks
//! `Connecting → Writing → Reading → Writing → ...`; an error, a timeout, `Connection: close` or
//! `keepalive = false` closes it and opens a new one. Timeouts are checked by a scan every
//! `timeout / 8` (bounded to 1..100 ms) rather than a timer per request, which is cheaper and
//! precise enough (a timeout fires at most 12.5 % late).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::ErrorCounts;
use crate::http::{Feed, ResponseParser};

const WAKER: Token = Token(usize::MAX);
const READ_BUF: usize = 64 * 1024;
/// A connection whose connect() failed is retried after this pause (no busy loop against a
/// closed port).
const CONNECT_RETRY: Duration = Duration::from_millis(10);
const STATUS_CODES: usize = 1000;

/// What every worker does, built once per run.
pub(crate) struct Spec {
    pub addr: SocketAddr,
    pub request: Vec<u8>,
    pub head: bool,
    pub keepalive: bool,
    pub timeout: Duration,
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
    /// Responses by status code (index = code).
    pub status: Vec<u64>,
    pub first_error: Option<(Instant, String)>,
    /// When the loop stopped.
    pub ended: Instant,
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
}

impl Worker {
    pub fn new(connections: usize) -> io::Result<Self> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        Ok(Worker {
            poll,
            waker,
            counters: Arc::default(),
            connections,
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
            mut poll,
            counters,
            connections,
            ..
        } = self;
        let mut lp = Loop {
            spec,
            deadline,
            conns: (0..connections)
                .map(|_| Conn {
                    stream: None,
                    state: State::Closed,
                    written: 0,
                    start,
                    readable: false,
                    parser: ResponseParser::new(spec.head),
                })
                .collect(),
            buf: vec![0; READ_BUF],
            out: Outcome {
                hist: new_histogram(),
                requests: 0,
                bytes_read: 0,
                errors: ErrorCounts::default(),
                status: vec![0; STATUS_CODES],
                first_error: None,
                ended: start,
            },
            retry_at: None,
        };
        for i in 0..connections {
            lp.connect(&poll, i, start);
        }
        let mut events = Events::with_capacity(connections.clamp(16, 1024) + 1);
        let scan_every =
            (spec.timeout / 8).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let mut next_scan = start + scan_every;
        loop {
            let now = Instant::now();
            if now >= deadline || done.load(Ordering::Relaxed) {
                break;
            }
            if now >= next_scan || lp.retry_at.is_some_and(|t| now >= t) {
                lp.scan(&poll, now);
                next_scan = now + scan_every;
            }
            let mut wake = deadline.min(next_scan);
            if let Some(t) = lp.retry_at {
                wake = wake.min(t);
            }
            if let Err(e) = poll.poll(&mut events, Some(wake.saturating_duration_since(now))) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                lp.note_error(Kind::Read, || format!("epoll_wait: {}", describe(&e)));
                break;
            }
            for ev in events.iter() {
                let t = ev.token();
                if t != WAKER {
                    lp.handle(&poll, t.0, ev);
                }
            }
            counters.requests.store(lp.out.requests, Ordering::Relaxed);
            counters
                .errors
                .store(lp.out.errors.total(), Ordering::Relaxed);
        }
        // Connections close when `lp` drops; in-flight requests are not counted.
        counters.requests.store(lp.out.requests, Ordering::Relaxed);
        counters
            .errors
            .store(lp.out.errors.total(), Ordering::Relaxed);
        lp.out.ended = Instant::now();
        lp.out
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// No socket; reconnect at the next scan (after a connect error).
    Closed,
    Connecting,
    Writing,
    Reading,
}

struct Conn {
    stream: Option<TcpStream>,
    state: State,
    /// Request bytes written so far.
    written: usize,
    /// When the current request (or its connect) started.
    start: Instant,
    /// A readable edge arrived while still writing.
    readable: bool,
    parser: ResponseParser,
}

#[derive(Clone, Copy)]
enum Kind {
    Connect,
    Read,
    Write,
    Timeout,
    Status,
}

struct Loop<'a> {
    spec: &'a Spec,
    deadline: Instant,
    conns: Vec<Conn>,
    buf: Vec<u8>,
    out: Outcome,
    /// Earliest time a closed connection should reconnect.
    retry_at: Option<Instant>,
}

impl Loop<'_> {
    fn note_error(&mut self, kind: Kind, msg: impl FnOnce() -> String) {
        let e = &mut self.out.errors;
        match kind {
            Kind::Connect => e.connect += 1,
            Kind::Read => e.read += 1,
            Kind::Write => e.write += 1,
            Kind::Timeout => e.timeout += 1,
            Kind::Status => e.status += 1,
        }
        if self.out.first_error.is_none() {
            self.out.first_error = Some((Instant::now(), msg()));
        }
    }

    /// Opens a new connection for slot `i` (the old one, if any, is closed).
    fn connect(&mut self, poll: &Poll, i: usize, now: Instant) {
        let addr = self.spec.addr;
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        c.written = 0;
        c.readable = false;
        c.start = now;
        c.parser.reset();
        let res = TcpStream::connect(addr).and_then(|mut s| {
            s.set_nodelay(true)?;
            poll.registry()
                .register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)?;
            Ok(s)
        });
        match res {
            Ok(s) => {
                c.stream = Some(s);
                c.state = State::Connecting;
            }
            Err(e) => self.connect_failed(i, now, &e),
        }
    }

    fn connect_failed(&mut self, i: usize, now: Instant, e: &io::Error) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        let at = now + CONNECT_RETRY;
        self.retry_at = Some(self.retry_at.map_or(at, |t| t.min(at)));
        let addr = self.spec.addr;
        self.note_error(Kind::Connect, || format!("connect {addr}: {}", describe(e)));
    }

    fn reconnect(&mut self, poll: &Poll, i: usize) {
        self.connect(poll, i, Instant::now());
    }

    fn handle(&mut self, poll: &Poll, i: usize, ev: &mio::event::Event) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        match c.state {
            State::Closed => {}
            State::Connecting => {
                let err = match c.stream.as_ref().map(|s| s.take_error()) {
                    Some(Ok(Some(e))) | Some(Err(e)) => Some(e),
                    _ if ev.is_error() => Some(io::Error::other("connection failed")),
                    _ => None,
                };
                if let Some(e) = err {
                    self.connect_failed(i, Instant::now(), &e);
                } else if ev.is_writable() {
                    c.state = State::Writing;
                    c.readable = ev.is_readable();
                    if self.spec.keepalive {
                        // Keep-alive latency starts at the first write, as wrk's.
                        c.start = Instant::now();
                    }
                    self.write(poll, i);
                }
            }
            State::Writing => {
                if ev.is_readable() {
                    c.readable = true;
                }
                self.write(poll, i);
            }
            State::Reading => {
                let closed = ev.is_read_closed() || ev.is_error();
                if ev.is_readable() || closed {
                    self.read(poll, i, closed);
                }
            }
        }
    }

    fn write(&mut self, poll: &Poll, i: usize) {
        let spec = self.spec;
        let req = &spec.request;
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        loop {
            match stream.write(&req[c.written..]) {
                Ok(0) => {
                    let addr = self.spec.addr;
                    self.note_error(Kind::Write, || format!("write {addr}: wrote 0 bytes"));
                    return self.reconnect(poll, i);
                }
                Ok(n) => {
                    c.written += n;
                    if c.written == req.len() {
                        c.state = State::Reading;
                        if c.readable {
                            c.readable = false;
                            self.read(poll, i, false);
                        }
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let addr = self.spec.addr;
                    self.note_error(Kind::Write, || format!("write {addr}: {}", describe(&e)));
                    return self.reconnect(poll, i);
                }
            }
        }
    }

    /// Reads until the socket is drained (a short read) or the response ends.
    /// `closed`: the event said the peer closed or errored, so read on to see it.
    fn read(&mut self, poll: &Poll, i: usize, closed: bool) {
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            let n = match stream.read(&mut self.buf) {
                Ok(0) => {
                    if c.parser.eof_completes() {
                        if !self.complete(i, Instant::now()) {
                            c_closed(&mut self.conns[i]);
                            return;
                        }
                    } else {
                        let addr = self.spec.addr;
                        self.note_error(Kind::Read, || {
                            format!(
                                "read {addr}: connection closed before the response was complete"
                            )
                        });
                    }
                    return self.reconnect(poll, i);
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let addr = self.spec.addr;
                    self.note_error(Kind::Read, || format!("read {addr}: {}", describe(&e)));
                    return self.reconnect(poll, i);
                }
            };
            self.out.bytes_read += n as u64;
            match c.parser.feed(&self.buf[..n]) {
                Ok(Feed::NeedMore) => {}
                Ok(Feed::Complete { consumed }) => {
                    let now = Instant::now();
                    if !self.complete(i, now) {
                        // The run is over: send nothing more (the loop ends at its next turn).
                        self.conns[i].state = State::Closed;
                        return;
                    }
                    if consumed < n {
                        // One request in flight, so bytes after its response are not ours.
                        let addr = self.spec.addr;
                        self.note_error(Kind::Read, || {
                            format!(
                                "read {addr}: {} unexpected bytes after a response",
                                n - consumed
                            )
                        });
                        return self.reconnect(poll, i);
                    }
                    let c = &mut self.conns[i];
                    if c.parser.close || !self.spec.keepalive {
                        return self.connect(poll, i, now);
                    }
                    c.parser.reset();
                    c.start = now;
                    c.written = 0;
                    c.state = State::Writing;
                    self.write(poll, i);
                    // The next response cannot be there yet: wait for its edge, unless the
                    // peer already closed (then the next read reports it).
                    if !closed || self.conns[i].state != State::Reading {
                        return;
                    }
                    continue;
                }
                Err(e) => {
                    let addr = self.spec.addr;
                    self.note_error(Kind::Read, || format!("read {addr}: {e}"));
                    return self.reconnect(poll, i);
                }
            }
            if n < self.buf.len() && !closed {
                // A short TCP read drained the receive queue; new data raises a new edge.
                return;
            }
        }
    }

    /// Records the response that just completed on slot `i`; false (not counted) when the run's
    /// duration has already passed.
    fn complete(&mut self, i: usize, now: Instant) -> bool {
        if now >= self.deadline {
            // Finished after the end of the run: in flight at the end, not counted.
            return false;
        }
        let c = &self.conns[i];
        let us = now.saturating_duration_since(c.start).as_micros();
        let code = c.parser.status;
        self.out.requests += 1;
        self.out
            .hist
            .saturating_record(u64::try_from(us).unwrap_or(u64::MAX).max(1));
        if let Some(slot) = self.out.status.get_mut(usize::from(code)) {
            *slot += 1;
        }
        if !(200..400).contains(&code) {
            let addr = self.spec.addr;
            self.note_error(Kind::Status, || {
                format!("request to {addr}: HTTP status {code}")
            });
        }
        true
    }

    /// Times out stuck requests and reconnects connections waiting for a retry.
    fn scan(&mut self, poll: &Poll, now: Instant) {
        let timeout = self.spec.timeout;
        let retry_due = self.retry_at.is_some_and(|t| now >= t);
        if retry_due {
            self.retry_at = None;
        }
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.state {
                State::Closed if retry_due => self.connect(poll, i, now),
                State::Closed => {}
                _ if now.saturating_duration_since(c.start) >= timeout => {
                    let addr = self.spec.addr;
                    let what = if c.state == State::Connecting {
                        "connect"
                    } else {
                        "response"
                    };
                    self.note_error(Kind::Timeout, || {
                        format!("timeout {addr}: no {what} after {timeout:?}")
                    });
                    self.connect(poll, i, now);
                }
                _ => {}
            }
        }
    }
}

fn c_closed(c: &mut Conn) {
    c.stream = None;
    c.state = State::Closed;
}

/// `Connection refused (os error 111)` → `connection refused`.
pub(crate) fn describe(e: &io::Error) -> String {
    let s = e.to_string();
    let s = match s.find(" (os error") {
        Some(p) => &s[..p],
        None => &s,
    };
    let mut chars = s.chars();
    match chars.next() {
        Some(f) => f.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

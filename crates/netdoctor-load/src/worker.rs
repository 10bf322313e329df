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
//! wrapped here (no crate in the tree wraps timerfd).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::ErrorCounts;
use crate::http::{Feed, ResponseParser};

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
    pub request: Vec<u8>,
    pub head: bool,
    pub keepalive: bool,
    pub timeout: Duration,
    /// Constant rate: the whole run's requests per second (None = closed loop).
    pub rate: Option<f64>,
    /// All connections of the run (for the rate schedule).
    pub connections: usize,
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
    /// Requests, errors and latency per second.
    pub timeline: crate::timeline::Recorder,
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
            mut poll,
            counters,
            connections,
            first,
            ..
        } = self;
        let mut lp = Loop {
            spec,
            start,
            deadline,
            conns: (0..connections)
                .map(|k| Conn {
                    stream: None,
                    state: State::Closed,
                    pending: false,
                    written: 0,
                    start,
                    sent: start,
                    index: (first + k) as u64,
                    seq: 0,
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
                timeline: crate::timeline::Recorder::new(start, deadline - start),
            },
            retry_at: None,
            due: BinaryHeap::new(),
            queued: Vec::with_capacity(connections),
            draining: false,
        };
        // Constant rate: a timer for the due requests (without it, the ms poll timeout).
        let mut timer = match spec.rate {
            Some(_) => Timer::new()
                .and_then(|t| {
                    poll.registry().register(
                        &mut mio::unix::SourceFd(&t.fd.as_raw_fd()),
                        TIMER,
                        Interest::READABLE,
                    )?;
                    Ok(t)
                })
                .ok(),
            None => None,
        };
        for i in 0..connections {
            lp.reopen(&poll, i, start);
        }
        let mut events = Events::with_capacity(connections.clamp(16, 1024) + 1);
        let scan_every =
            (spec.timeout / 8).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let mut next_scan = start + scan_every;
        loop {
            let mut now = Instant::now();
            if now >= deadline || done.load(Ordering::Relaxed) {
                break;
            }
            if now >= next_scan || lp.retry_at.is_some_and(|t| now >= t) {
                lp.scan(&poll, now);
                next_scan = now + scan_every;
            }
            if lp.run_due(&poll, now) {
                now = Instant::now();
            }
            let mut wake = deadline.min(next_scan);
            if let Some(t) = lp.retry_at {
                wake = wake.min(t);
            }
            if let Some(&Reverse((t, _))) = lp.due.peek()
                && !timer.as_mut().is_some_and(|tm| tm.arm(t, now))
            {
                wake = wake.min(t);
            }
            if let Err(e) = poll.poll(&mut events, Some(wake.saturating_duration_since(now))) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                lp.note_error(Kind::Read, || format!("epoll_wait: {}", describe(&e)));
                break;
            }
            lp.dispatch(&poll, &events);
            lp.publish(&counters);
        }
        lp.out.ended = Instant::now();
        // In-flight requests are not counted, but their responses are read before the
        // connections close: closing a socket with unread data makes the kernel send a reset,
        // which a capture of the run would show as the client aborting.
        lp.draining = true;
        for i in 0..lp.conns.len() {
            if !lp.conns[i].in_flight() {
                lp.close(i);
            }
        }
        let grace_end = Instant::now() + spec.timeout.min(DRAIN_GRACE);
        while lp.conns.iter().any(Conn::in_flight) {
            let now = Instant::now();
            if now >= grace_end {
                break;
            }
            match poll.poll(&mut events, Some(grace_end - now)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
            lp.dispatch(&poll, &events);
        }
        // The rest close when `lp` drops.
        lp.publish(&counters);
        lp.out
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// No socket; reconnect at the next scan (after a connect error).
    Closed,
    /// Constant rate: waiting in the heap for the next request's intended send time (with an
    /// open keep-alive connection, or none without keep-alive).
    Idle,
    /// Response complete; the next request is written after the current batch of events.
    Queued,
    Connecting,
    Writing,
    Reading,
}

struct Conn {
    stream: Option<TcpStream>,
    state: State,
    /// A request has been issued (its latency clock runs) and is written once connected.
    pending: bool,
    /// Request bytes written so far.
    written: usize,
    /// Where the current request's latency is measured from: its first write (keep-alive),
    /// the start of its connect (no keep-alive), or its intended send time (constant rate).
    start: Instant,
    /// When the current connect or request was actually started (for the timeout).
    sent: Instant,
    /// Run-wide connection index and this connection's request sequence number: together they
    /// give the intended send time of its next request at a constant rate.
    index: u64,
    seq: u64,
    /// A readable edge arrived while still writing.
    readable: bool,
    parser: ResponseParser,
}

impl Conn {
    /// A request has been written (or is being written) and its response has not ended.
    fn in_flight(&self) -> bool {
        self.stream.is_some() && matches!(self.state, State::Writing | State::Reading)
    }
}

/// Longest wait, after the run's end, for in-flight responses (bounded by the timeout too).
const DRAIN_GRACE: Duration = Duration::from_millis(300);

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
    start: Instant,
    deadline: Instant,
    conns: Vec<Conn>,
    buf: Vec<u8>,
    out: Outcome,
    /// Earliest time a closed connection should reconnect.
    retry_at: Option<Instant>,
    /// Constant rate: idle connections by the intended send time of their next request.
    due: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Connections whose next request waits for the end of the current batch of events.
    queued: Vec<usize>,
    /// The run is over: in-flight responses are read to the end (uncounted), nothing new is
    /// sent, and connections close once idle — so they close with a FIN, not a reset.
    draining: bool,
}

impl Loop<'_> {
    fn note_error(&mut self, kind: Kind, msg: impl FnOnce() -> String) {
        if self.draining {
            return;
        }
        let e = &mut self.out.errors;
        match kind {
            Kind::Connect => e.connect += 1,
            Kind::Read => e.read += 1,
            Kind::Write => e.write += 1,
            Kind::Timeout => e.timeout += 1,
            Kind::Status => e.status += 1,
        }
        self.out.timeline.error(Instant::now());
        if self.out.first_error.is_none() {
            self.out.first_error = Some((Instant::now(), msg()));
        }
    }

    /// Handles one batch of readiness events, then writes the queued next requests.
    fn dispatch(&mut self, poll: &Poll, events: &Events) {
        for ev in events.iter() {
            let t = ev.token();
            if t != WAKER && t != TIMER {
                self.handle(poll, t.0, ev);
            }
        }
        self.run_queued(poll);
    }

    /// Makes the counts so far visible to the progress reporter.
    fn publish(&self, counters: &Counters) {
        counters
            .requests
            .store(self.out.requests, Ordering::Relaxed);
        counters
            .errors
            .store(self.out.errors.total(), Ordering::Relaxed);
    }

    /// Closes slot `i`'s connection for good (the run is over).
    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        c.pending = false;
    }

    /// The intended send time of connection `i`'s next request at a constant rate.
    fn next_due(&self, i: usize, rate: f64) -> Instant {
        let c = &self.conns[i];
        let n = c.index + c.seq * self.spec.connections as u64;
        self.start + Duration::from_secs_f64(n as f64 / rate)
    }

    /// Drops slot `i`'s connection (if any) and gets it going again: a keep-alive connection is
    /// reopened at once (its next request follows when it is connected); without keep-alive
    /// the next request opens its own.
    fn reopen(&mut self, poll: &Poll, i: usize, now: Instant) {
        if self.draining {
            return self.close(i);
        }
        let c = &mut self.conns[i];
        c.stream = None;
        c.pending = false;
        if self.spec.keepalive {
            self.connect(poll, i, now);
        } else {
            self.begin(poll, i, now);
        }
    }

    /// Slot `i` is ready for its next request: issue it now (closed loop, or when it is due),
    /// or park the slot until it is due.
    fn begin(&mut self, poll: &Poll, i: usize, now: Instant) {
        if self.draining {
            return self.close(i);
        }
        let mut start = now;
        if let Some(rate) = self.spec.rate {
            let due = self.next_due(i, rate);
            if due > now {
                self.conns[i].state = State::Idle;
                self.due.push(Reverse((due, i)));
                return;
            }
            // Latency counts from when the request should have been sent.
            start = due;
            self.conns[i].seq += 1;
        }
        let c = &mut self.conns[i];
        c.pending = true;
        c.start = start;
        c.sent = now;
        c.written = 0;
        c.parser.reset();
        if c.stream.is_none() {
            return self.connect(poll, i, now);
        }
        c.state = State::Writing;
        self.write(poll, i);
    }

    /// Issues the requests whose time has come; true when any was.
    fn run_due(&mut self, poll: &Poll, now: Instant) -> bool {
        let mut any = false;
        while let Some(Reverse((t, i))) = self.due.peek().copied() {
            if t > now {
                break;
            }
            self.due.pop();
            if self.conns[i].state == State::Idle {
                any = true;
                self.begin(poll, i, now);
            }
        }
        any
    }

    /// Sends the next request of every connection queued during the batch of events.
    fn run_queued(&mut self, poll: &Poll) {
        let mut queued = std::mem::take(&mut self.queued);
        for &i in &queued {
            if self.conns[i].state == State::Queued {
                self.begin(poll, i, Instant::now());
            }
        }
        queued.clear();
        self.queued = queued;
    }

    /// Opens a new connection for slot `i` (the old one, if any, is closed).
    fn connect(&mut self, poll: &Poll, i: usize, now: Instant) {
        let addr = self.spec.addr;
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        c.written = 0;
        c.readable = false;
        c.sent = now;
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
        // A request waiting for this connection failed with it.
        c.pending = false;
        let at = now + CONNECT_RETRY;
        self.retry_at = Some(self.retry_at.map_or(at, |t| t.min(at)));
        let addr = self.spec.addr;
        self.note_error(Kind::Connect, || format!("connect {addr}: {}", describe(e)));
    }

    fn handle(&mut self, poll: &Poll, i: usize, ev: &mio::event::Event) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        match c.state {
            State::Closed | State::Queued => {}
            State::Idle => {
                if ev.is_read_closed() || ev.is_error() {
                    // The server closed an idle keep-alive connection: the next request opens
                    // a new one.
                    c.stream = None;
                }
            }
            State::Connecting => {
                let err = match c.stream.as_ref().map(|s| s.take_error()) {
                    Some(Ok(Some(e))) | Some(Err(e)) => Some(e),
                    _ if ev.is_error() => Some(io::Error::other("connection failed")),
                    _ => None,
                };
                if let Some(e) = err {
                    self.connect_failed(i, Instant::now(), &e);
                } else if ev.is_writable() {
                    c.readable = ev.is_readable();
                    if c.pending {
                        c.state = State::Writing;
                        self.write(poll, i);
                    } else {
                        self.begin(poll, i, Instant::now());
                    }
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
                    return self.reopen(poll, i, Instant::now());
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
                    return self.reopen(poll, i, Instant::now());
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
                    let now = Instant::now();
                    if c.parser.eof_completes() {
                        if !self.complete(i, now) {
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
                    return self.reopen(poll, i, now);
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let addr = self.spec.addr;
                    self.note_error(Kind::Read, || format!("read {addr}: {}", describe(&e)));
                    return self.reopen(poll, i, Instant::now());
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
                        return self.reopen(poll, i, now);
                    }
                    let c = &mut self.conns[i];
                    c.pending = false;
                    if c.parser.close || !self.spec.keepalive {
                        return self.reopen(poll, i, now);
                    }
                    if !closed {
                        // Write the next request after the batch: the server then gets the
                        // batch's requests together (one wake-up for many), as wrk's loop does.
                        c.state = State::Queued;
                        self.queued.push(i);
                        return;
                    }
                    // The peer already closed: send now and read on, so the next read reports it.
                    self.begin(poll, i, now);
                    if self.conns[i].state != State::Reading {
                        return;
                    }
                    continue;
                }
                Err(e) => {
                    let addr = self.spec.addr;
                    self.note_error(Kind::Read, || format!("read {addr}: {e}"));
                    return self.reopen(poll, i, Instant::now());
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
        let us = u64::try_from(us).unwrap_or(u64::MAX).max(1);
        self.out.requests += 1;
        self.out.hist.saturating_record(us);
        self.out.timeline.request(now, us);
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
                State::Closed if retry_due => self.reopen(poll, i, now),
                State::Closed | State::Idle | State::Queued => {}
                _ if now.saturating_duration_since(c.sent) >= timeout => {
                    let addr = self.spec.addr;
                    let what = if c.state == State::Connecting {
                        "connect"
                    } else {
                        "response"
                    };
                    self.note_error(Kind::Timeout, || {
                        format!("timeout {addr}: no {what} after {timeout:?}")
                    });
                    self.reopen(poll, i, now);
                }
                _ => {}
            }
        }
    }
}

/// A relative CLOCK_MONOTONIC timerfd that wakes the event loop for the next due request.
struct Timer {
    fd: OwnedFd,
    /// When it is set to fire (None: disarmed).
    armed: Option<Instant>,
}

impl Timer {
    fn new() -> io::Result<Timer> {
        // SAFETY: timerfd_create has no memory arguments; the result is checked before use.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Timer { fd, armed: None })
    }

    /// Makes sure the timer fires by `due`; false when it cannot (then poll with a timeout).
    /// Setting the timer clears its expiration count, so its edge-triggered readiness fires
    /// again at the next expiry without a read.
    fn arm(&mut self, due: Instant, now: Instant) -> bool {
        if self.armed.is_some_and(|a| a <= due && a > now) {
            return true;
        }
        let rel = due.saturating_duration_since(now);
        if rel.is_zero() {
            return false;
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: rel.as_secs() as libc::time_t,
                tv_nsec: rel.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: the descriptor is our timerfd; `spec` is a valid itimerspec and the old value
        // pointer may be null.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc != 0 {
            return false;
        }
        self.armed = Some(due);
        true
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

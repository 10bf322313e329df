//! One connection's life in a load thread: connect, write the request, read and frame the
//! response, record it, time out, and reopen after errors.

use super::*;
use crate::http::Feed;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum State {
    /// No socket; reconnect at the next scan (after a connect error).
    Closed,
    /// Constant rate: waiting in the heap for the next request's intended send time (with an
    /// open keep-alive connection, or none without keep-alive).
    Idle,
    /// Response complete; the next request is written after the current batch of events.
    Queued,
    Connecting,
    /// HTTPS: connected, TLS handshake under way.
    Handshaking,
    Writing,
    Reading,
}

pub(super) struct Conn {
    pub(super) stream: Option<Stream>,
    pub(super) state: State,
    /// A request has been issued (its latency clock runs) and is written once connected.
    pub(super) pending: bool,
    /// Request bytes written so far.
    pub(super) written: usize,
    /// Where the current request's latency is measured from: its first write (keep-alive),
    /// the start of its connect (no keep-alive), or its intended send time (constant rate).
    pub(super) start: Instant,
    /// When the current connect or request was actually started (for the timeout).
    pub(super) sent: Instant,
    /// Run-wide connection index and this connection's request sequence number: together they
    /// give the intended send time of its next request at a constant rate.
    pub(super) index: u64,
    pub(super) seq: u64,
    /// A readable edge arrived while still writing.
    pub(super) readable: bool,
    pub(super) parser: ResponseParser,
}

impl Conn {
    /// A request has been written (or is being written) and its response has not ended.
    pub(super) fn in_flight(&self) -> bool {
        self.stream.is_some() && matches!(self.state, State::Writing | State::Reading)
    }
}

/// Longest wait, after the run's end, for in-flight responses (bounded by the timeout too).
pub(super) const DRAIN_GRACE: Duration = Duration::from_millis(300);

#[derive(Clone, Copy)]
pub(super) enum Kind {
    Connect,
    Read,
    Write,
    Timeout,
    Status,
    /// HTTP/2: a stream reset by the server, or a GOAWAY with an error code.
    Stream,
}

pub(super) struct Loop<'a> {
    pub(super) spec: &'a Spec,
    pub(super) start: Instant,
    pub(super) deadline: Instant,
    pub(super) conns: Vec<Conn>,
    pub(super) buf: Vec<u8>,
    pub(super) out: Outcome,
    /// Earliest time a closed connection should reconnect.
    pub(super) retry_at: Option<Instant>,
    /// Constant rate: idle connections by the intended send time of their next request.
    pub(super) due: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Connections whose next request waits for the end of the current batch of events.
    pub(super) queued: Vec<usize>,
    /// The run is over: in-flight responses are read to the end (uncounted), nothing new is
    /// sent, and connections close once idle — so they close with a FIN, not a reset.
    pub(super) draining: bool,
}

impl Loop<'_> {
    pub(super) fn note_error(&mut self, kind: Kind, msg: impl FnOnce() -> String) {
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
            Kind::Stream => e.stream += 1,
        }
        self.out.timeline.error(Instant::now());
        if self.out.first_error.is_none() {
            self.out.first_error = Some((Instant::now(), msg()));
        }
    }

    /// Handles one batch of readiness events, then writes the queued next requests.
    pub(super) fn dispatch(&mut self, poll: &Poll, events: &Events) {
        for ev in events.iter() {
            let t = ev.token();
            if t != WAKER && t != TIMER {
                self.handle(poll, t.0, ev);
            }
        }
        self.run_queued(poll);
    }

    /// Makes the counts so far visible to the progress reporter.
    pub(super) fn publish(&self, counters: &Counters) {
        counters
            .requests
            .store(self.out.requests, Ordering::Relaxed);
        counters
            .errors
            .store(self.out.errors.total(), Ordering::Relaxed);
    }

    /// Closes slot `i`'s connection for good (the run is over).
    pub(super) fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        c.pending = false;
    }

    /// Drops slot `i`'s connection (if any) and gets it going again: a keep-alive connection is
    /// reopened at once (its next request follows when it is connected); without keep-alive
    /// the next request opens its own.
    pub(super) fn reopen(&mut self, poll: &Poll, i: usize, now: Instant) {
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

    /// Opens a new connection for slot `i` (the old one, if any, is closed).
    pub(super) fn connect(&mut self, poll: &Poll, i: usize, now: Instant) {
        let addr = self.spec.addr;
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        c.written = 0;
        c.readable = false;
        c.sent = now;
        c.parser.reset();
        self.out.connects += 1;
        let res = TcpStream::connect(addr).and_then(|mut s| {
            s.set_nodelay(true)?;
            poll.registry()
                .register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)?;
            Ok(s)
        });
        match res.map(|s| Stream::new(s, self.spec.tls.as_ref())) {
            Ok(Ok(s)) => {
                c.stream = Some(s);
                c.state = State::Connecting;
            }
            Ok(Err(e)) => self.setup_failed(i, now, || format!("tls session for {addr}: {e}")),
            Err(e) => self.connect_failed(i, now, &e),
        }
    }

    pub(super) fn connect_failed(&mut self, i: usize, now: Instant, e: &io::Error) {
        let addr = self.spec.addr;
        if !self.draining && e.kind() == io::ErrorKind::AddrNotAvailable {
            self.out.errors.connect_addr_not_avail += 1;
        }
        self.setup_failed(i, now, || format!("connect {addr}: {}", describe(e)));
    }

    /// Connecting (or the TLS handshake) failed: a connect error, retried after a pause.
    pub(super) fn setup_failed(&mut self, i: usize, now: Instant, msg: impl FnOnce() -> String) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        // A request waiting for this connection failed with it.
        c.pending = false;
        let at = now + CONNECT_RETRY;
        self.retry_at = Some(self.retry_at.map_or(at, |t| t.min(at)));
        self.note_error(Kind::Connect, msg);
    }

    /// Slot `i` is connected (and past its TLS handshake): write its pending request, or issue
    /// the next one.
    pub(super) fn connected(&mut self, poll: &Poll, i: usize) {
        let c = &mut self.conns[i];
        if c.pending {
            c.state = State::Writing;
            self.write(poll, i);
        } else {
            self.begin(poll, i, Instant::now());
        }
    }

    pub(super) fn handle(&mut self, poll: &Poll, i: usize, ev: &mio::event::Event) {
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
                let err = match c.stream.as_ref().map(|s| s.tcp().take_error()) {
                    Some(Ok(Some(e))) | Some(Err(e)) => Some(e),
                    _ if ev.is_error() => Some(io::Error::other("connection failed")),
                    _ => None,
                };
                if let Some(e) = err {
                    self.connect_failed(i, Instant::now(), &e);
                } else if ev.is_writable() {
                    c.readable = ev.is_readable();
                    if c.stream.as_ref().is_some_and(Stream::is_tls) {
                        c.state = State::Handshaking;
                        self.handshake(poll, i);
                    } else {
                        self.connected(poll, i);
                    }
                }
            }
            State::Handshaking => self.handshake(poll, i),
            State::Writing => {
                if ev.is_readable() {
                    c.readable = true;
                }
                self.write(poll, i);
            }
            State::Reading => {
                if ev.is_writable() && c.stream.as_ref().is_some_and(Stream::is_tls) {
                    // TLS bytes of the request that did not fit in the socket earlier.
                    self.flush_tls(poll, i);
                    if self.conns[i].state != State::Reading {
                        return;
                    }
                }
                let closed = ev.is_read_closed() || ev.is_error();
                if ev.is_readable() || closed {
                    self.read(poll, i, closed);
                }
            }
        }
    }

    pub(super) fn write(&mut self, poll: &Poll, i: usize) {
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
    pub(super) fn read(&mut self, poll: &Poll, i: usize, closed: bool) {
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            let (n, more) = match stream.read(&mut self.buf) {
                Ok((0, _)) => {
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
                Ok(r) => r,
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
            if !more && !closed {
                // A short TCP read drained the receive queue; new data raises a new edge.
                return;
            }
        }
    }

    /// Records the response that just completed on slot `i`; false (not counted) when the run's
    /// duration has already passed.
    pub(super) fn complete(&mut self, i: usize, now: Instant) -> bool {
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
    pub(super) fn scan(&mut self, poll: &Poll, now: Instant) {
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
                    let what = match c.state {
                        State::Connecting => "connect",
                        State::Handshaking => "TLS handshake",
                        _ => "response",
                    };
                    if c.state == State::Connecting && !self.draining {
                        self.out.errors.connect_timeout += 1;
                    }
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

pub(super) fn c_closed(c: &mut Conn) {
    c.stream = None;
    c.state = State::Closed;
}

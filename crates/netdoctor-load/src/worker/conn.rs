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
    /// `SO_RCVLOWAT` set on the socket (0: the kernel's default of 1), see `lowat`.
    pub(super) lowat: u32,
    /// Bytes of the current response read so far, and the size of the previous one (0: none).
    pub(super) resp_bytes: u32,
    pub(super) last_size: u32,
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
    pub(super) b: Base<'a>,
    pub(super) conns: Vec<Conn>,
    /// Constant rate: idle connections by the intended send time of their next request.
    pub(super) due: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Connections whose next request waits for the end of the current batch of events.
    pub(super) queued: Vec<usize>,
    /// `SO_RCVLOWAT` may still be used on this thread (no response of another size yet).
    pub(super) lowat_ok: bool,
    /// Some connection may have `SO_RCVLOWAT` set (the watch in `lowat` then runs).
    pub(super) lowat_active: bool,
}

impl<'a> Loop<'a> {
    pub(super) fn new(b: Base<'a>, connections: usize, first: usize) -> Self {
        let (start, head) = (b.start, b.spec.head);
        let lowat_ok = b.spec.rcvlowat && b.spec.tls.is_none();
        Loop {
            b,
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
                    parser: ResponseParser::new(head),
                    lowat: 0,
                    resp_bytes: 0,
                    last_size: 0,
                })
                .collect(),
            due: BinaryHeap::new(),
            queued: Vec::with_capacity(connections),
            lowat_ok,
            lowat_active: false,
        }
    }
}

impl<'a> Protocol<'a> for Loop<'a> {
    fn base(&mut self) -> &mut Base<'a> {
        &mut self.b
    }

    fn open_all(&mut self, poll: &Poll, now: Instant) {
        for i in 0..self.conns.len() {
            self.reopen(poll, i, now);
        }
    }

    fn scan(&mut self, poll: &Poll, now: Instant) {
        Loop::scan(self, poll, now);
    }

    fn run_due(&mut self, poll: &Poll, now: Instant) -> bool {
        Loop::run_due(self, poll, now)
    }

    fn next_due(&self) -> Option<Instant> {
        self.due.peek().map(|Reverse((t, _))| *t)
    }

    fn handle(&mut self, poll: &Poll, i: usize, ev: &mio::event::Event) {
        Loop::handle(self, poll, i, ev);
    }

    fn end_batch(&mut self, poll: &Poll) {
        self.run_queued(poll);
    }

    fn start_drain(&mut self) {
        // In-flight responses are read to the end, whatever their size.
        if self.lowat_active {
            self.disable_lowat();
        }
        for i in 0..self.conns.len() {
            if !self.conns[i].in_flight() {
                self.close(i);
            }
        }
    }

    fn in_flight(&self) -> bool {
        self.conns.iter().any(Conn::in_flight)
    }

    fn watch(&mut self, now: Instant) {
        self.watch_lowat(now);
    }

    fn watching(&self) -> bool {
        self.lowat_active
    }
}

impl Loop<'_> {
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
        if self.b.draining {
            return self.close(i);
        }
        let c = &mut self.conns[i];
        c.stream = None;
        c.pending = false;
        if self.b.spec.keepalive {
            self.connect(poll, i, now);
        } else {
            self.begin(poll, i, now);
        }
    }

    /// Opens a new connection for slot `i` (the old one, if any, is closed).
    pub(super) fn connect(&mut self, poll: &Poll, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        c.written = 0;
        c.readable = false;
        c.sent = now;
        c.parser.reset();
        // A new socket: nothing learned, SO_RCVLOWAT at the kernel's default.
        c.lowat = 0;
        c.resp_bytes = 0;
        c.last_size = 0;
        match self.b.open(poll, i, now) {
            Some(s) => {
                c.stream = Some(s);
                c.state = State::Connecting;
            }
            // A request waiting for this connection failed with it.
            None => c.pending = false,
        }
    }

    /// Connecting (or the TLS handshake) failed: a connect error, retried after a pause.
    pub(super) fn setup_failed(&mut self, i: usize, now: Instant, msg: impl FnOnce() -> String) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = State::Closed;
        // A request waiting for this connection failed with it.
        c.pending = false;
        self.b.setup_failed(now, msg);
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
            State::Connecting => match connect_outcome(c.stream.as_ref(), ev) {
                Err(e) => {
                    c.stream = None;
                    c.state = State::Closed;
                    c.pending = false;
                    self.b.connect_failed(Instant::now(), &e);
                }
                Ok(false) => {}
                Ok(true) => {
                    c.readable = ev.is_readable();
                    if c.stream.as_ref().is_some_and(Stream::is_tls) {
                        c.state = State::Handshaking;
                        self.handshake(poll, i);
                    } else {
                        self.connected(poll, i);
                    }
                }
            },
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
        let spec = self.b.spec;
        let req = &spec.request;
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        loop {
            match stream.write(&req[c.written..]) {
                Ok(0) => {
                    let addr = self.b.spec.addr;
                    self.b
                        .note_error(Kind::Write, || format!("write {addr}: wrote 0 bytes"));
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
                    let addr = self.b.spec.addr;
                    self.b
                        .note_error(Kind::Write, || format!("write {addr}: {}", describe(&e)));
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
            let (n, more) = match stream.read(&mut self.b.buf) {
                Ok((0, _)) => {
                    let now = Instant::now();
                    if c.parser.eof_completes() {
                        if !self.complete(i, now) {
                            c_closed(&mut self.conns[i]);
                            return;
                        }
                    } else {
                        let addr = self.b.spec.addr;
                        self.b.note_error(Kind::Read, || {
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
                    let addr = self.b.spec.addr;
                    self.b
                        .note_error(Kind::Read, || format!("read {addr}: {}", describe(&e)));
                    return self.reopen(poll, i, Instant::now());
                }
            };
            self.b.out.bytes_read += n as u64;
            c.resp_bytes = c.resp_bytes.saturating_add(n as u32);
            match c.parser.feed(&self.b.buf[..n]) {
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
                        let addr = self.b.spec.addr;
                        self.b.note_error(Kind::Read, || {
                            format!(
                                "read {addr}: {} unexpected bytes after a response",
                                n - consumed
                            )
                        });
                        return self.reopen(poll, i, now);
                    }
                    self.learn_size(i);
                    let c = &mut self.conns[i];
                    c.pending = false;
                    if c.parser.close || !self.b.spec.keepalive {
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
                    let addr = self.b.spec.addr;
                    self.b
                        .note_error(Kind::Read, || format!("read {addr}: {e}"));
                    return self.reopen(poll, i, Instant::now());
                }
            }
            if !more && !closed {
                // A short TCP read drained the receive queue; new data raises a new edge
                // (once SO_RCVLOWAT is back at 1 if this response outgrew it).
                if self.conns[i].lowat > 1 {
                    self.lowat_missed(i);
                }
                return;
            }
        }
    }

    /// Records the response that just completed on slot `i`; false (not counted) when the run's
    /// duration has already passed.
    pub(super) fn complete(&mut self, i: usize, now: Instant) -> bool {
        if now >= self.b.deadline {
            // Finished after the end of the run: in flight at the end, not counted.
            return false;
        }
        let c = &self.conns[i];
        let (since, code) = (c.start, c.parser.status);
        self.b.record(since, now, code);
        true
    }

    /// Times out stuck requests and reconnects connections waiting for a retry.
    pub(super) fn scan(&mut self, poll: &Poll, now: Instant) {
        let timeout = self.b.spec.timeout;
        let retry_due = self.b.retry_at.is_some_and(|t| now >= t);
        if retry_due {
            self.b.retry_at = None;
        }
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.state {
                State::Closed if retry_due => self.reopen(poll, i, now),
                State::Closed | State::Idle | State::Queued => {}
                _ if now.saturating_duration_since(c.sent) >= timeout => {
                    let addr = self.b.spec.addr;
                    let what = match c.state {
                        State::Connecting => "connect",
                        State::Handshaking => "TLS handshake",
                        _ => "response",
                    };
                    if c.state == State::Connecting && !self.b.draining {
                        self.b.out.errors.connect_timeout += 1;
                    }
                    self.b.note_error(Kind::Timeout, || {
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

//! The HTTP/2 protocol of a load thread: the same mio event loop, timeouts, constant-rate
//! schedule, histograms and transport (`Stream`: plain TCP for h2c with prior knowledge, or a
//! TLS session that negotiated `h2` by ALPN) as the HTTP/1.1 connections, but each connection
//! carries up to `streams` requests at once (h2load's `-m`). It is its own loop beside `conn`,
//! chosen once per run in `Worker::run`, so the HTTP/1.1 path keeps its speed.
//!
//! A connection has `streams` *slots*; a slot holds at most one request (stream) at a time, and
//! walks `Free → (Due) → Ready → Flight → Free`. Closed loop: a finished slot's next request is
//! Ready at once. Constant rate: slot `k` of the run (`connection × streams + slot`) is due every
//! `slots / rate` seconds, offset by `k / rate`, and its latency counts from that intended time
//! (coordinated omission corrected, as for HTTP/1.1). Ready slots are sent while the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS allows (100 until its SETTINGS arrive); the rest wait their
//! turn, and with a constant rate that wait is part of their latency.
//!
//! Requests of a batch of events are appended to the connection's output buffer and written
//! once after the batch (one `write` for many HEADERS frames). Reading parses frames straight
//! out of the thread's read buffer; DATA payloads are skipped, never copied (only their length
//! counts, for the connection's flow-control window, which is 2^30 − 1 as h2load's default and
//! topped up by WINDOW_UPDATE at half). A stream completes at END_STREAM; its status comes from
//! `:status` and, for gRPC, the `grpc-status` trailer (absent = an error).
//!
//! Errors: a RST_STREAM counts its stream as a `stream` error, by code (REFUSED_STREAM is
//! retried instead: the server did not process it); a GOAWAY is counted by code (an error
//! unless NO_ERROR), the streams above its last id are retried on a new connection, and the
//! connection is replaced once its other streams are done (nginx says GOAWAY after
//! `keepalive_requests`). A connection that closes or breaks fails each stream it carried.
//! A stream without its response after `timeout` is a timeout; the connection is replaced and
//! its other streams are sent again on the new one (their clocks keep running).
//!
//! Length (over 1,100 lines): one connection's life (connect, preface, GOAWAY retry) and the
//! frame input (SETTINGS, HEADERS, DATA, RST_STREAM) are the two seams to split it along; left
//! whole this session so the first HTTP/2 loop lands tested. Next: `h2/conn.rs`, `h2/input.rs`.

use super::*;
use crate::h2::{self as f, FrameHeader};

/// What the HTTP/2 connections of a run send, built once.
pub(crate) struct H2Spec {
    pub blocks: f::RequestBlocks,
    pub body: Option<Vec<u8>>,
    /// Concurrent streams per connection.
    pub streams: usize,
    /// gRPC: the `grpc-status` trailer decides success.
    pub grpc: bool,
}

/// HTTP/2 counts of one worker.
#[derive(Default)]
pub(crate) struct H2Counts {
    /// RST_STREAM received, by error code.
    pub rst_stream: BTreeMap<u32, u64>,
    /// GOAWAY received, by error code.
    pub goaway: BTreeMap<u32, u64>,
    /// gRPC responses by `grpc-status`.
    pub grpc_status: BTreeMap<u32, u64>,
    /// The largest SETTINGS_MAX_CONCURRENT_STREAMS a server announced (0: none).
    pub server_max_streams: u32,
}

use std::collections::BTreeMap;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SlotState {
    /// Nothing to send (the run is draining).
    Free,
    /// Constant rate: waiting in the heap for its intended send time.
    Due,
    /// Wants to be sent as soon as the connection and the stream limit allow.
    Ready,
    /// Sent as stream `id`, response not complete.
    Flight,
}

struct Slot {
    state: SlotState,
    id: u32,
    /// Latency origin (intended send time at a constant rate, else the write).
    start: Instant,
    /// `start` is fixed (constant rate, or a retried stream).
    timed: bool,
    /// When the stream was written (for the timeout).
    sent: Instant,
    seq: u64,
    status: u16,
    grpc: Option<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum CState {
    Closed,
    Connecting,
    Handshaking,
    Open,
}

struct H2Conn {
    stream: Option<Stream>,
    state: CState,
    /// Run-wide connection index (for the rate schedule).
    index: u64,
    sent: Instant,
    out: Vec<u8>,
    out_pos: usize,
    dirty: bool,
    /// Bytes of an incomplete frame.
    inbuf: Vec<u8>,
    /// DATA payload bytes still to skip, their stream and END_STREAM.
    skip: usize,
    skip_stream: u32,
    skip_end: bool,
    hpack: httlib_hpack::Decoder<'static>,
    /// Scratch space for HPACK decoding (reused).
    scratch: Vec<u8>,
    fields: Vec<(Vec<u8>, Vec<u8>, u8)>,
    /// A header block continued in CONTINUATION frames.
    block: Vec<u8>,
    block_stream: u32,
    block_end: bool,
    next_id: u32,
    peer_max: u32,
    in_flight: u32,
    sent_first_block: bool,
    /// Received DATA not yet given back with a connection WINDOW_UPDATE.
    recv_unacked: u32,
    /// GOAWAY received (its last stream id), or the stream ids ran out.
    goaway: Option<u32>,
    slots: Vec<Slot>,
}

pub(super) struct H2Loop<'a> {
    spec: &'a Spec,
    h2: &'a H2Spec,
    start: Instant,
    deadline: Instant,
    conns: Vec<H2Conn>,
    buf: Vec<u8>,
    pub(super) out: Outcome,
    pub(super) counts: H2Counts,
    retry_at: Option<Instant>,
    due: BinaryHeap<Reverse<(Instant, usize, usize)>>,
    dirty: Vec<usize>,
    draining: bool,
}

/// Runs one worker's HTTP/2 connections (see the module docs); the counterpart of
/// `Worker::run`'s HTTP/1.1 loop.
pub(super) fn run(
    w: Worker,
    spec: &Spec,
    h2: &H2Spec,
    start: Instant,
    deadline: Instant,
    done: &AtomicBool,
) -> Outcome {
    let Worker {
        mut poll,
        counters,
        connections,
        first,
        ..
    } = w;
    let mut lp = H2Loop {
        spec,
        h2,
        start,
        deadline,
        conns: (0..connections)
            .map(|k| H2Conn {
                stream: None,
                state: CState::Closed,
                index: (first + k) as u64,
                sent: start,
                out: Vec::with_capacity(4096),
                out_pos: 0,
                dirty: false,
                inbuf: Vec::new(),
                skip: 0,
                skip_stream: 0,
                skip_end: false,
                hpack: httlib_hpack::Decoder::default(),
                scratch: Vec::new(),
                fields: Vec::new(),
                block: Vec::new(),
                block_stream: 0,
                block_end: false,
                next_id: 1,
                peer_max: 100,
                in_flight: 0,
                sent_first_block: false,
                recv_unacked: 0,
                goaway: None,
                slots: (0..h2.streams)
                    .map(|_| Slot {
                        state: SlotState::Free,
                        id: 0,
                        start,
                        timed: false,
                        sent: start,
                        seq: 0,
                        status: 0,
                        grpc: None,
                    })
                    .collect(),
            })
            .collect(),
        buf: vec![0; READ_BUF],
        out: Outcome {
            hist: new_histogram(),
            requests: 0,
            bytes_read: 0,
            errors: ErrorCounts::default(),
            connects: 0,
            status: vec![0; STATUS_CODES],
            first_error: None,
            ended: start,
            timeline: crate::timeline::Recorder::new(start, deadline - start),
            h2: None,
        },
        counts: H2Counts::default(),
        retry_at: None,
        due: BinaryHeap::new(),
        dirty: Vec::new(),
        draining: false,
    };
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
        for s in 0..h2.streams {
            lp.begin(i, s, start);
        }
        lp.connect(&poll, i, start);
    }
    lp.flush_dirty(&poll);
    let mut events = Events::with_capacity(connections.clamp(16, 1024) + 1);
    let scan_every = (spec.timeout / 8).clamp(Duration::from_millis(1), Duration::from_millis(100));
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
        lp.run_due(&poll, now);
        lp.flush_dirty(&poll);
        let now = Instant::now();
        let mut wake = deadline.min(next_scan);
        if let Some(t) = lp.retry_at {
            wake = wake.min(t);
        }
        if let Some(&Reverse((t, _, _))) = lp.due.peek()
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
        publish(&lp.out, &counters);
    }
    lp.out.ended = Instant::now();
    // Read the responses in flight to the end (uncounted) so the connections close cleanly.
    lp.draining = true;
    for i in 0..lp.conns.len() {
        if lp.conns[i].in_flight == 0 {
            lp.close(i);
        }
    }
    let grace_end = Instant::now() + spec.timeout.min(DRAIN_GRACE);
    while lp
        .conns
        .iter()
        .any(|c| c.in_flight > 0 && c.stream.is_some())
    {
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
    publish(&lp.out, &counters);
    let mut out = lp.out;
    out.h2 = Some(lp.counts);
    out
}

fn publish(out: &Outcome, counters: &Counters) {
    counters.requests.store(out.requests, Ordering::Relaxed);
    counters.errors.store(out.errors.total(), Ordering::Relaxed);
}

impl H2Loop<'_> {
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
            Kind::Stream => e.stream += 1,
        }
        self.out.timeline.error(Instant::now());
        if self.out.first_error.is_none() {
            self.out.first_error = Some((Instant::now(), msg()));
        }
    }

    fn dispatch(&mut self, poll: &Poll, events: &Events) {
        for ev in events.iter() {
            let t = ev.token();
            if t != WAKER && t != TIMER && t.0 < self.conns.len() {
                self.handle(poll, t.0, ev);
            }
        }
        self.flush_dirty(poll);
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = CState::Closed;
        for s in &mut c.slots {
            s.state = SlotState::Free;
        }
        c.in_flight = 0;
    }

    /// Slot `s` of connection `i` is free for its next request (see the module docs).
    fn begin(&mut self, i: usize, s: usize, now: Instant) {
        if self.draining {
            self.conns[i].slots[s].state = SlotState::Free;
            return;
        }
        let streams = self.h2.streams as u64;
        let c = &mut self.conns[i];
        let slot = &mut c.slots[s];
        slot.id = 0;
        slot.status = 0;
        slot.grpc = None;
        slot.timed = false;
        if let Some(rate) = self.spec.rate {
            let k = c.index * streams + s as u64;
            let n = k + slot.seq * self.spec.connections as u64 * streams;
            let due = self.start + Duration::from_secs_f64(n as f64 / rate);
            if due > now {
                slot.state = SlotState::Due;
                self.due.push(Reverse((due, i, s)));
                return;
            }
            slot.seq += 1;
            slot.start = due;
            slot.timed = true;
        }
        slot.state = SlotState::Ready;
        self.issue(i);
    }

    fn run_due(&mut self, _poll: &Poll, now: Instant) {
        while let Some(Reverse((t, i, s))) = self.due.peek().copied() {
            if t > now {
                break;
            }
            self.due.pop();
            if self.conns[i].slots[s].state == SlotState::Due {
                self.begin(i, s, now);
            }
        }
    }

    /// Sends the Ready slots of connection `i` that the stream limit allows.
    fn issue(&mut self, i: usize) {
        let h2 = self.h2;
        let c = &mut self.conns[i];
        if c.state != CState::Open || c.goaway.is_some() {
            return;
        }
        let limit = c.peer_max.min(h2.streams as u32);
        if c.in_flight >= limit {
            return;
        }
        let now = Instant::now();
        let mut wrote = false;
        for slot in c.slots.iter_mut() {
            if c.in_flight >= limit {
                break;
            }
            if slot.state != SlotState::Ready {
                continue;
            }
            if c.next_id > 0x7fff_fff0 {
                // Stream ids ran out: finish this connection's streams, then replace it.
                c.goaway = Some(c.next_id);
                break;
            }
            let block = if c.sent_first_block {
                &h2.blocks.next
            } else {
                c.sent_first_block = true;
                &h2.blocks.first
            };
            f::put_request(&mut c.out, c.next_id, block, h2.body.as_deref());
            slot.id = c.next_id;
            c.next_id += 2;
            slot.state = SlotState::Flight;
            slot.sent = now;
            if !slot.timed {
                slot.start = now;
            }
            c.in_flight += 1;
            wrote = true;
        }
        if wrote {
            self.mark_dirty(i);
        }
    }

    fn mark_dirty(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.dirty {
            c.dirty = true;
            self.dirty.push(i);
        }
    }

    fn flush_dirty(&mut self, poll: &Poll) {
        let dirty = std::mem::take(&mut self.dirty);
        for &i in &dirty {
            self.conns[i].dirty = false;
            self.flush(poll, i);
        }
        let mut dirty = dirty;
        dirty.clear();
        if self.dirty.is_empty() {
            self.dirty = dirty;
        }
    }

    /// Writes what connection `i` has queued, as far as the socket takes it.
    fn flush(&mut self, poll: &Poll, i: usize) {
        let c = &mut self.conns[i];
        if c.state != CState::Open {
            return;
        }
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        let mut res = Ok(());
        while c.out_pos < c.out.len() {
            match stream.write(&c.out[c.out_pos..]) {
                Ok(0) => {
                    res = Err(io::Error::new(io::ErrorKind::WriteZero, "wrote 0 bytes"));
                    break;
                }
                Ok(n) => c.out_pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    res = Err(e);
                    break;
                }
            }
        }
        if c.out_pos == c.out.len() {
            c.out.clear();
            c.out_pos = 0;
        }
        if res.is_ok() {
            res = match stream.flush() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                r => r,
            };
        }
        if let Err(e) = res {
            let addr = self.spec.addr;
            self.conn_failed(poll, i, Kind::Write, || {
                format!("write {addr}: {}", describe(&e))
            });
        }
    }

    /// Opens a new connection for `i` (the old one, if any, is dropped).
    fn connect(&mut self, poll: &Poll, i: usize, now: Instant) {
        if self.draining {
            return self.close(i);
        }
        let addr = self.spec.addr;
        let streams = self.h2.streams as u32;
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = CState::Closed;
        c.sent = now;
        c.out.clear();
        c.out_pos = 0;
        c.inbuf.clear();
        c.skip = 0;
        c.block.clear();
        c.hpack = httlib_hpack::Decoder::default();
        c.next_id = 1;
        c.peer_max = 100;
        c.in_flight = 0;
        c.sent_first_block = false;
        c.recv_unacked = 0;
        c.goaway = None;
        f::put_opening(&mut c.out, streams.max(1));
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
                c.state = CState::Connecting;
            }
            Ok(Err(e)) => self.setup_failed(i, now, || format!("tls session for {addr}: {e}")),
            Err(e) => {
                if !self.draining && e.kind() == io::ErrorKind::AddrNotAvailable {
                    self.out.errors.connect_addr_not_avail += 1;
                }
                self.setup_failed(i, now, || format!("connect {addr}: {}", describe(&e)))
            }
        }
    }

    /// Connecting or the TLS handshake failed: a connect error, retried after a pause; the
    /// connection's Ready requests wait for it.
    fn setup_failed(&mut self, i: usize, now: Instant, msg: impl FnOnce() -> String) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = CState::Closed;
        let at = now + CONNECT_RETRY;
        self.retry_at = Some(self.retry_at.map_or(at, |t| t.min(at)));
        self.note_error(Kind::Connect, msg);
    }

    /// Connection `i` broke (or the server closed it): each stream it carried failed (one error
    /// of `kind` each; none when nothing was in flight), and a new connection follows.
    fn conn_failed(&mut self, poll: &Poll, i: usize, kind: Kind, msg: impl Fn() -> String) {
        let now = Instant::now();
        // Closed first, so the failed streams' next requests wait for the new connection.
        self.conns[i].state = CState::Closed;
        self.conns[i].stream = None;
        let n = self.conns[i].slots.len();
        for s in 0..n {
            if self.conns[i].slots[s].state == SlotState::Flight {
                self.note_error(kind, &msg);
                self.begin_after_failure(i, s, now);
            }
        }
        self.conns[i].in_flight = 0;
        self.connect(poll, i, now);
    }

    fn begin_after_failure(&mut self, i: usize, s: usize, now: Instant) {
        self.conns[i].slots[s].state = SlotState::Free;
        self.begin(i, s, now);
    }

    /// Replaces connection `i`: streams in flight are sent again on the new one.
    fn replace(&mut self, poll: &Poll, i: usize, now: Instant) {
        for slot in &mut self.conns[i].slots {
            if slot.state == SlotState::Flight {
                slot.state = SlotState::Ready;
                slot.timed = true;
            }
        }
        self.conns[i].in_flight = 0;
        self.connect(poll, i, now);
    }

    fn handle(&mut self, poll: &Poll, i: usize, ev: &mio::event::Event) {
        let c = &mut self.conns[i];
        match c.state {
            CState::Closed => {}
            CState::Connecting => {
                let err = match c.stream.as_ref().map(|s| s.tcp().take_error()) {
                    Some(Ok(Some(e))) | Some(Err(e)) => Some(e),
                    _ if ev.is_error() => Some(io::Error::other("connection failed")),
                    _ => None,
                };
                if let Some(e) = err {
                    let addr = self.spec.addr;
                    if !self.draining && e.kind() == io::ErrorKind::AddrNotAvailable {
                        self.out.errors.connect_addr_not_avail += 1;
                    }
                    self.setup_failed(i, Instant::now(), || {
                        format!("connect {addr}: {}", describe(&e))
                    });
                } else if ev.is_writable() {
                    if c.stream.as_ref().is_some_and(Stream::is_tls) {
                        c.state = CState::Handshaking;
                        self.handshake(poll, i);
                    } else {
                        self.opened(poll, i);
                    }
                }
            }
            CState::Handshaking => self.handshake(poll, i),
            CState::Open => {
                if ev.is_writable()
                    && (c.out_pos < c.out.len() || c.stream.as_ref().is_some_and(Stream::is_tls))
                {
                    self.flush(poll, i);
                    if self.conns[i].state != CState::Open {
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

    fn handshake(&mut self, poll: &Poll, i: usize) {
        let addr = self.spec.addr;
        let c = &mut self.conns[i];
        let Some(Stream::Tls(t)) = c.stream.as_mut() else {
            return;
        };
        match t.handshake() {
            Ok(false) => {}
            Ok(true) => match t.alpn() {
                Some(b"h2") => self.opened(poll, i),
                other => {
                    let chose = other
                        .map(|p| String::from_utf8_lossy(p).into_owned())
                        .unwrap_or_else(|| "no protocol".into());
                    self.setup_failed(i, Instant::now(), || {
                        format!(
                            "tls handshake with {addr}: the server chose {chose} by ALPN, not h2"
                        )
                    });
                }
            },
            Err(e) => {
                self.setup_failed(i, Instant::now(), || {
                    format!("tls handshake with {addr}: {e}")
                });
            }
        }
    }

    /// Connection `i` is up: write the opening and the Ready requests.
    fn opened(&mut self, poll: &Poll, i: usize) {
        self.conns[i].state = CState::Open;
        self.issue(i);
        self.mark_dirty(i);
        self.flush(poll, i);
    }

    fn read(&mut self, poll: &Poll, i: usize, closed: bool) {
        let mut buf = std::mem::take(&mut self.buf);
        loop {
            let c = &mut self.conns[i];
            if c.state != CState::Open {
                break;
            }
            let Some(stream) = c.stream.as_mut() else {
                break;
            };
            let (n, more) = match stream.read(&mut buf) {
                Ok((0, _)) => {
                    self.eof(poll, i);
                    break;
                }
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let addr = self.spec.addr;
                    self.conn_failed(poll, i, Kind::Read, || {
                        format!("read {addr}: {}", describe(&e))
                    });
                    break;
                }
            };
            self.out.bytes_read += n as u64;
            if let Err(msg) = self.input(poll, i, &buf[..n]) {
                let addr = self.spec.addr;
                self.conn_failed(poll, i, Kind::Read, || format!("read {addr}: {msg}"));
                break;
            }
            if !more && !closed {
                break;
            }
        }
        self.buf = buf;
    }

    /// The server closed connection `i`.
    fn eof(&mut self, poll: &Poll, i: usize) {
        let c = &self.conns[i];
        if c.in_flight == 0 {
            // An idle connection closed (after GOAWAY, or an idle timeout): just reconnect.
            let now = Instant::now();
            self.connect(poll, i, now);
            return;
        }
        let addr = self.spec.addr;
        self.conn_failed(poll, i, Kind::Read, || {
            format!("read {addr}: connection closed with streams in flight")
        });
    }

    /// Parses what arrived on connection `i` (see the module docs).
    fn input(&mut self, poll: &Poll, i: usize, data: &[u8]) -> Result<(), String> {
        let c = &mut self.conns[i];
        if c.inbuf.is_empty() {
            let used = self.frames(poll, i, data)?;
            if used < data.len() && self.conns[i].state == CState::Open {
                self.conns[i].inbuf.extend_from_slice(&data[used..]);
            }
        } else {
            c.inbuf.extend_from_slice(data);
            let b = std::mem::take(&mut c.inbuf);
            let used = self.frames(poll, i, &b)?;
            let c = &mut self.conns[i];
            if c.state == CState::Open && c.inbuf.is_empty() {
                let mut b = b;
                b.drain(..used);
                c.inbuf = b;
            }
        }
        Ok(())
    }

    /// Handles the whole frames at the start of `b`; returns how many bytes were used.
    fn frames(&mut self, poll: &Poll, i: usize, b: &[u8]) -> Result<usize, String> {
        let mut pos = 0;
        loop {
            let c = &mut self.conns[i];
            if c.state != CState::Open {
                return Ok(b.len());
            }
            if c.skip > 0 {
                let k = c.skip.min(b.len() - pos);
                pos += k;
                c.skip -= k;
                if c.skip > 0 {
                    return Ok(pos);
                }
                if c.skip_end {
                    let id = c.skip_stream;
                    self.stream_done(poll, i, id);
                }
                continue;
            }
            let Some(h) = FrameHeader::parse(&b[pos..]) else {
                return Ok(pos);
            };
            if h.len > f::DEFAULT_MAX_FRAME {
                return Err(format!(
                    "HTTP/2 frame of {} bytes, over the {}-byte limit (FRAME_SIZE_ERROR)",
                    h.len,
                    f::DEFAULT_MAX_FRAME
                ));
            }
            if h.kind == f::DATA {
                pos += FrameHeader::SIZE;
                c.recv_unacked += h.len as u32;
                if c.recv_unacked >= f::CLIENT_WINDOW / 2 {
                    f::put_window_update(&mut c.out, 0, c.recv_unacked);
                    c.recv_unacked = 0;
                    self.mark_dirty(i);
                }
                let c = &mut self.conns[i];
                c.skip = h.len;
                c.skip_stream = h.stream;
                c.skip_end = h.flags & f::FLAG_END_STREAM != 0;
                if h.len == 0 && c.skip_end {
                    self.stream_done(poll, i, h.stream);
                }
                continue;
            }
            let end = pos + FrameHeader::SIZE + h.len;
            if b.len() < end {
                return Ok(pos);
            }
            self.frame(poll, i, h, &b[pos + FrameHeader::SIZE..end])?;
            pos = end;
        }
    }

    /// One frame other than DATA.
    fn frame(&mut self, poll: &Poll, i: usize, h: FrameHeader, p: &[u8]) -> Result<(), String> {
        let c = &mut self.conns[i];
        match h.kind {
            f::HEADERS => {
                let mut p = p;
                if h.flags & f::FLAG_PADDED != 0 {
                    let pad = usize::from(*p.first().ok_or("empty padded HEADERS")?);
                    p = p
                        .get(1..p.len().saturating_sub(pad))
                        .filter(|_| pad < h.len)
                        .ok_or("HEADERS padding longer than the frame")?;
                }
                if h.flags & f::FLAG_PRIORITY != 0 {
                    p = p.get(5..).ok_or("HEADERS priority longer than the frame")?;
                }
                let end_stream = h.flags & f::FLAG_END_STREAM != 0;
                if h.flags & f::FLAG_END_HEADERS != 0 {
                    self.header_block(poll, i, h.stream, p, end_stream)?;
                } else {
                    c.block.clear();
                    c.block.extend_from_slice(p);
                    c.block_stream = h.stream;
                    c.block_end = end_stream;
                }
            }
            f::CONTINUATION => {
                if h.stream != c.block_stream {
                    return Err("CONTINUATION of another stream (PROTOCOL_ERROR)".into());
                }
                c.block.extend_from_slice(p);
                if h.flags & f::FLAG_END_HEADERS != 0 {
                    let block = std::mem::take(&mut c.block);
                    let end = c.block_end;
                    self.header_block(poll, i, h.stream, &block, end)?;
                    self.conns[i].block = block;
                }
            }
            f::RST_STREAM => {
                let code =
                    u32::from_be_bytes(p.try_into().map_err(|_| "RST_STREAM of the wrong size")?);
                *self.counts.rst_stream.entry(code).or_insert(0) += 1;
                if let Some(s) = c
                    .slots
                    .iter()
                    .position(|s| s.state == SlotState::Flight && s.id == h.stream)
                {
                    c.in_flight -= 1;
                    if code == f::REFUSED_STREAM {
                        let slot = &mut c.slots[s];
                        slot.state = SlotState::Ready;
                        slot.timed = true;
                        self.issue(i);
                    } else {
                        let addr = self.spec.addr;
                        self.note_error(Kind::Stream, || {
                            format!(
                                "request to {addr}: stream reset by the server ({})",
                                f::error_name(code)
                            )
                        });
                        self.begin_after_failure(i, s, Instant::now());
                    }
                    self.after_stream(poll, i);
                }
            }
            f::SETTINGS => {
                if h.flags & f::FLAG_ACK != 0 {
                    return Ok(());
                }
                if !p.len().is_multiple_of(6) {
                    return Err("SETTINGS of the wrong size (FRAME_SIZE_ERROR)".into());
                }
                for kv in p.chunks_exact(6) {
                    let id = u16::from_be_bytes([kv[0], kv[1]]);
                    let v = u32::from_be_bytes([kv[2], kv[3], kv[4], kv[5]]);
                    match id {
                        f::SETTINGS_MAX_CONCURRENT_STREAMS => {
                            c.peer_max = v;
                            self.counts.server_max_streams = self.counts.server_max_streams.max(v);
                        }
                        f::SETTINGS_HEADER_TABLE_SIZE
                            if (v as usize) < self.h2.blocks.table_bytes =>
                        {
                            return Err(format!(
                                "the server allows an HPACK table of {v} bytes; the request's \
                                 headers need {}",
                                self.h2.blocks.table_bytes
                            ));
                        }
                        f::SETTINGS_INITIAL_WINDOW_SIZE
                            if self.h2.body.as_ref().is_some_and(|b| b.len() > v as usize) =>
                        {
                            return Err(format!(
                                "the server's stream window ({v} bytes) is smaller than the \
                                 request body"
                            ));
                        }
                        _ => {}
                    }
                }
                f::put_settings_ack(&mut c.out);
                self.mark_dirty(i);
                self.issue(i);
            }
            f::PING if h.flags & f::FLAG_ACK == 0 => {
                f::put_ping_ack(&mut c.out, p);
                self.mark_dirty(i);
            }
            f::GOAWAY => {
                if p.len() < 8 {
                    return Err("GOAWAY shorter than 8 bytes".into());
                }
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
                *self.counts.goaway.entry(code).or_insert(0) += 1;
                if code != 0 {
                    let addr = self.spec.addr;
                    self.note_error(Kind::Stream, || {
                        format!("{addr}: the server sent GOAWAY ({})", f::error_name(code))
                    });
                }
                let c = &mut self.conns[i];
                c.goaway = Some(last);
                // Streams the server did not take are sent again on the next connection.
                for slot in &mut c.slots {
                    if slot.state == SlotState::Flight && slot.id > last {
                        slot.state = SlotState::Ready;
                        slot.timed = true;
                        c.in_flight -= 1;
                    }
                }
                self.after_stream(poll, i);
            }
            f::PUSH_PROMISE => {
                return Err("PUSH_PROMISE although push was disabled (PROTOCOL_ERROR)".into());
            }
            _ => {}
        }
        Ok(())
    }

    /// A complete header block of stream `id` (HPACK state changes even for unknown streams).
    fn header_block(
        &mut self,
        poll: &Poll,
        i: usize,
        id: u32,
        block: &[u8],
        end_stream: bool,
    ) -> Result<(), String> {
        let c = &mut self.conns[i];
        let mut status = 0u16;
        let mut grpc = None;
        c.scratch.clear();
        c.scratch.extend_from_slice(block);
        c.fields.clear();
        c.hpack
            .decode(&mut c.scratch, &mut c.fields)
            .map_err(|e| format!("HPACK: {e:?} (COMPRESSION_ERROR)"))?;
        for (n, v, _) in &c.fields {
            if n == b":status" {
                status = std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
            } else if n == b"grpc-status" {
                grpc = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
            }
        }
        if let Some(slot) = c
            .slots
            .iter_mut()
            .find(|s| s.state == SlotState::Flight && s.id == id)
        {
            if status >= 200 || (status > 0 && slot.status == 0 && status < 100) {
                slot.status = status;
            }
            if grpc.is_some() {
                slot.grpc = grpc;
            }
        }
        if end_stream {
            self.stream_done(poll, i, id);
        }
        Ok(())
    }

    /// Stream `id` of connection `i` ended (END_STREAM): record its response.
    fn stream_done(&mut self, poll: &Poll, i: usize, id: u32) {
        let now = Instant::now();
        let c = &mut self.conns[i];
        let Some(s) = c
            .slots
            .iter()
            .position(|s| s.state == SlotState::Flight && s.id == id)
        else {
            return;
        };
        c.in_flight -= 1;
        let slot = &c.slots[s];
        if now < self.deadline && !self.draining {
            let us = now.saturating_duration_since(slot.start).as_micros();
            let us = u64::try_from(us).unwrap_or(u64::MAX).max(1);
            let code = slot.status;
            let grpc = slot.grpc;
            self.out.requests += 1;
            self.out.hist.saturating_record(us);
            self.out.timeline.request(now, us);
            if let Some(n) = self.out.status.get_mut(usize::from(code)) {
                *n += 1;
            }
            let addr = self.spec.addr;
            if !(200..400).contains(&code) {
                self.note_error(Kind::Status, || {
                    format!("request to {addr}: HTTP status {code}")
                });
            } else if self.h2.grpc {
                match grpc {
                    Some(0) => {}
                    Some(g) => self.note_error(Kind::Status, || {
                        format!("request to {addr}: gRPC status {g} ({})", grpc_name(g))
                    }),
                    None => self.note_error(Kind::Status, || {
                        format!("request to {addr}: no grpc-status in the response")
                    }),
                }
            }
            if self.h2.grpc
                && let Some(g) = grpc
            {
                *self.counts.grpc_status.entry(g).or_insert(0) += 1;
            }
        }
        self.begin_after_failure(i, s, now);
        self.after_stream(poll, i);
    }

    /// After a stream of connection `i` ended: a connection told to go away is replaced once
    /// its last stream is done.
    fn after_stream(&mut self, poll: &Poll, i: usize) {
        let c = &self.conns[i];
        if c.goaway.is_some() && c.in_flight == 0 && !self.draining {
            let now = Instant::now();
            self.replace(poll, i, now);
        } else if self.draining && c.in_flight == 0 {
            self.close(i);
        }
    }

    /// Times out stuck streams and connects, and reconnects closed connections.
    fn scan(&mut self, poll: &Poll, now: Instant) {
        let timeout = self.spec.timeout;
        let retry_due = self.retry_at.is_some_and(|t| now >= t);
        if retry_due {
            self.retry_at = None;
        }
        let addr = self.spec.addr;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.state {
                CState::Closed if retry_due => self.connect(poll, i, now),
                CState::Closed => {}
                CState::Connecting | CState::Handshaking
                    if now.saturating_duration_since(c.sent) >= timeout =>
                {
                    let what = if c.state == CState::Connecting {
                        "connect"
                    } else {
                        "TLS handshake"
                    };
                    self.note_error(Kind::Timeout, || {
                        format!("timeout {addr}: no {what} after {timeout:?}")
                    });
                    self.connect(poll, i, now);
                }
                CState::Connecting | CState::Handshaking => {}
                CState::Open => {
                    let late: Vec<usize> = (0..c.slots.len())
                        .filter(|&s| {
                            let sl = &c.slots[s];
                            sl.state == SlotState::Flight
                                && now.saturating_duration_since(sl.sent) >= timeout
                        })
                        .collect();
                    if late.is_empty() {
                        continue;
                    }
                    self.conns[i].state = CState::Closed;
                    for s in late {
                        self.note_error(Kind::Timeout, || {
                            format!("timeout {addr}: no response after {timeout:?}")
                        });
                        self.conns[i].in_flight -= 1;
                        self.begin_after_failure(i, s, now);
                    }
                    self.replace(poll, i, now);
                }
            }
        }
        self.flush_dirty(poll);
    }
}

/// The name of a gRPC status code.
pub(crate) fn grpc_name(code: u32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES.get(code as usize).copied().unwrap_or("unknown")
}

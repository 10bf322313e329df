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
//! `:status` and, for gRPC, the `grpc-status` trailer (absent = an error). The opening SETTINGS
//! turn the responses' HPACK dynamic table off (HEADER_TABLE_SIZE 0); once the server's size
//! update confirms it, `:status` is read straight from the block (`h2::response_status`) and the
//! full decoder runs only for gRPC and blocks that need it.
//!
//! Errors: a RST_STREAM counts its stream as a `stream` error, by code (REFUSED_STREAM is
//! retried instead: the server did not process it); a GOAWAY is counted by code (an error
//! unless NO_ERROR), the streams above its last id are retried on a new connection, and the
//! connection is replaced once its other streams are done (nginx says GOAWAY after
//! `keepalive_requests`). A connection that closes or breaks fails each stream it carried.
//! A stream without its response after `timeout` is a timeout; the connection is replaced and
//! its other streams are sent again on the new one (their clocks keep running).
//!
//! Files: this one holds the slots (begin, issue, the rate schedule, completion, timeouts);
//! `conn` is one connection's life (connect, preface, handshake, write, read, failure, GOAWAY
//! replacement); `input` is the frame input (SETTINGS, HEADERS/CONTINUATION and HPACK, DATA,
//! RST_STREAM, PING, GOAWAY). The event loop, connect and error notes are `worker::base`'s,
//! shared with HTTP/1.1.

mod conn;
mod input;

use super::*;
use crate::h2::{self as f};

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
    b: Base<'a>,
    h2: &'a H2Spec,
    conns: Vec<H2Conn>,
    counts: H2Counts,
    due: BinaryHeap<Reverse<(Instant, usize, usize)>>,
    dirty: Vec<usize>,
}

impl<'a> H2Loop<'a> {
    pub(super) fn new(b: Base<'a>, h2: &'a H2Spec, connections: usize, first: usize) -> Self {
        let start = b.start;
        H2Loop {
            b,
            h2,
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
            counts: H2Counts::default(),
            due: BinaryHeap::new(),
            dirty: Vec::new(),
        }
    }

    /// What the worker measured, with the HTTP/2 counts.
    pub(super) fn into_outcome(self) -> Outcome {
        let mut out = self.b.out;
        out.h2 = Some(self.counts);
        out
    }
}

impl<'a> Protocol<'a> for H2Loop<'a> {
    fn base(&mut self) -> &mut Base<'a> {
        &mut self.b
    }

    fn open_all(&mut self, poll: &Poll, now: Instant) {
        for i in 0..self.conns.len() {
            for s in 0..self.h2.streams {
                self.begin(i, s, now);
            }
            self.connect(poll, i, now);
        }
        self.flush_dirty(poll);
    }

    fn scan(&mut self, poll: &Poll, now: Instant) {
        H2Loop::scan(self, poll, now);
    }

    fn run_due(&mut self, poll: &Poll, now: Instant) -> bool {
        let any = H2Loop::run_due(self, now);
        self.flush_dirty(poll);
        any
    }

    fn next_due(&self) -> Option<Instant> {
        self.due.peek().map(|Reverse((t, _, _))| *t)
    }

    fn handle(&mut self, poll: &Poll, i: usize, ev: &mio::event::Event) {
        if i < self.conns.len() {
            H2Loop::handle(self, poll, i, ev);
        }
    }

    fn end_batch(&mut self, poll: &Poll) {
        self.flush_dirty(poll);
    }

    fn start_drain(&mut self) {
        for i in 0..self.conns.len() {
            if self.conns[i].in_flight == 0 {
                self.close(i);
            }
        }
    }

    fn in_flight(&self) -> bool {
        self.conns
            .iter()
            .any(|c| c.in_flight > 0 && c.stream.is_some())
    }
}

impl H2Loop<'_> {
    pub(super) fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = CState::Closed;
        for s in &mut c.slots {
            s.state = SlotState::Free;
        }
        c.in_flight = 0;
    }

    /// Slot `s` of connection `i` is free for its next request (see the module docs).
    pub(super) fn begin(&mut self, i: usize, s: usize, now: Instant) {
        if self.b.draining {
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
        if let Some(rate) = self.b.spec.rate {
            let k = c.index * streams + s as u64;
            let n = k + slot.seq * self.b.spec.connections as u64 * streams;
            let due = self.b.start + Duration::from_secs_f64(n as f64 / rate);
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

    pub(super) fn run_due(&mut self, now: Instant) -> bool {
        let mut any = false;
        while let Some(Reverse((t, i, s))) = self.due.peek().copied() {
            if t > now {
                break;
            }
            self.due.pop();
            if self.conns[i].slots[s].state == SlotState::Due {
                any = true;
                self.begin(i, s, now);
            }
        }
        any
    }

    /// Sends the Ready slots of connection `i` that the stream limit allows.
    pub(super) fn issue(&mut self, i: usize) {
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

    pub(super) fn mark_dirty(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.dirty {
            c.dirty = true;
            self.dirty.push(i);
        }
    }

    pub(super) fn flush_dirty(&mut self, poll: &Poll) {
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

    pub(super) fn begin_after_failure(&mut self, i: usize, s: usize, now: Instant) {
        self.conns[i].slots[s].state = SlotState::Free;
        self.begin(i, s, now);
    }

    /// Stream `id` of connection `i` ended (END_STREAM): record its response.
    pub(super) fn stream_done(&mut self, poll: &Poll, i: usize, id: u32) {
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
        if now < self.b.deadline && !self.b.draining {
            let (since, code, grpc) = (slot.start, slot.status, slot.grpc);
            self.b.record(since, now, code);
            if self.h2.grpc && (200..400).contains(&code) {
                let addr = self.b.spec.addr;
                match grpc {
                    Some(0) => {}
                    Some(g) => self.b.note_error(Kind::Status, || {
                        format!("request to {addr}: gRPC status {g} ({})", grpc_name(g))
                    }),
                    None => self.b.note_error(Kind::Status, || {
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
    pub(super) fn after_stream(&mut self, poll: &Poll, i: usize) {
        let c = &self.conns[i];
        if c.goaway.is_some() && c.in_flight == 0 && !self.b.draining {
            let now = Instant::now();
            self.replace(poll, i, now);
        } else if self.b.draining && c.in_flight == 0 {
            self.close(i);
        }
    }

    /// Times out stuck streams and connects, and reconnects closed connections.
    pub(super) fn scan(&mut self, poll: &Poll, now: Instant) {
        let timeout = self.b.spec.timeout;
        let retry_due = self.b.retry_at.is_some_and(|t| now >= t);
        if retry_due {
            self.b.retry_at = None;
        }
        let addr = self.b.spec.addr;
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
                    self.b.note_error(Kind::Timeout, || {
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
                        self.b.note_error(Kind::Timeout, || {
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

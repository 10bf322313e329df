//! The HTTP/2 exchange source: a cleartext connection that opens with the client preface
//! (h2c with prior knowledge, or after an `Upgrade`-less start) is read frame by frame
//! ([`frame`]), and each stream is one exchange, timed like an HTTP/1 exchange: its request
//! from the client's first HEADERS frame to the frame that ends the client's side, its
//! response from the server's first HEADERS frame to the frame that ends the server's side
//! (END_STREAM, or a RST_STREAM after a response began). The status is the HPACK-decoded
//! `:status` (by `httlib-hpack`, the crate the load engine uses; a header block that was not
//! captured whole desynchronises the dynamic table, after which only statuses that are a
//! static-table index are read).
//!
//! Each direction's bytes go through a reassembler first (`super::reasm`): a hole in the
//! capture (a loss before the capture point) is read when the retransmission fills it, and
//! the frames behind it with it. A loss episode's head-of-line figure is the most streams in
//! progress at once during its stall ([`H2Conn::on_loss`]).
//!
//! Streams whose end may be in frames the capture missed are set aside (`gap`).
//!
//! It sits beside the direction-turns source (`super::http`: HTTP/1, TLS records, any other
//! request/response protocol) behind the connection's [`super::conn::Source`]; TLS-wrapped
//! HTTP/2 cannot be read and stays with turns. A connection picked up after its preface
//! stays with turns too. Connection-level facts (settings, resets and GOAWAYs by code, peak
//! concurrency, flow-control waits) are kept for the HTTP/2 findings.

pub(crate) mod frame;
mod gap;

pub use frame::error_name;
use frame::{code, strip};

use super::reasm::{Reassembler, Run};
use frame::{
    CONTINUATION, DATA, END_HEADERS, END_STREAM, Frame, GOAWAY, HEADERS, RST_STREAM, Reader,
    SETTINGS, WINDOW_UPDATE,
};

use super::http::{Exchange, Found, Phase};
use crate::breakdown::{ExchangeParts, LOSS};
use crate::event::Pkt;

/// One request/response stream in progress.
struct Stream {
    id: u32,
    x: Exchange,
    req_done: bool,
    /// Flow-control windows of the stream, per sender (0: client, 1: server), bytes.
    win: [i64; 2],
    /// Time this stream's DATA waited for WINDOW_UPDATEs, per sender, ns.
    waited_ns: [i64; 2],
}

/// A sender whose window ran out with its stream still open.
#[derive(Clone, Copy, Debug)]
struct Blocked {
    stream: u32,
    conn_level: bool,
    at: Pkt,
    update: Option<Pkt>,
}

/// A header block being read across CONTINUATION frames.
struct Block {
    stream: u32,
    from_server: bool,
    end_stream: bool,
    first: Pkt,
    bytes: Vec<u8>,
    whole: bool,
}

/// What the connection's SETTINGS said, per sender (0: client, 1: server).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct H2Settings {
    pub max_concurrent_streams: [Option<u32>; 2],
    pub initial_window: [Option<u32>; 2],
}

/// DATA that waited for a WINDOW_UPDATE: the sender used up the window the receiver gave
/// (the stream's or the connection's) before the end of its message, and went on only after
/// the receiver opened it again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowWait {
    pub sender_is_server: bool,
    pub stream: u32,
    /// The connection's window ran out (else the stream's).
    pub conn_level: bool,
    /// The window that ran out, as the receiver set it (its initial size), bytes.
    pub window: i64,
    /// The DATA frame that used it up, the first WINDOW_UPDATE after it, the next DATA.
    pub blocked: Pkt,
    pub update: Pkt,
    pub resumed: Pkt,
}

impl FlowWait {
    /// How long the sender stood still, ns.
    pub fn wait_ns(&self) -> i64 {
        self.resumed.ts_ns - self.blocked.ts_ns
    }
}

/// A loss episode while several streams were in progress: every one of them waited for the
/// retransmission (TCP delivers in order).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HolEpisode {
    pub streams: u32,
    pub stall_ns: i64,
    pub first: Pkt,
    pub last: Pkt,
}

/// What one HTTP/2 connection showed, raised once when it ends ([`crate::event::Event::H2`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct H2Done {
    pub settings: H2Settings,
    /// Exchanges (streams answered) on the connection.
    pub streams: u32,
    /// The first few flow-control waits; per sender (0: client, 1: server) their count and,
    /// per stream that waited, its total wait (at most [`MAX_KEPT`] streams).
    pub flow: Vec<FlowWait>,
    pub flow_waits: [u32; 2],
    pub stream_waits_ns: [Vec<i64>; 2],
    /// RST_STREAM frames: (sent by the server, error code, count); GOAWAY frames: (sent by the
    /// server, error code, frame).
    pub rst: Vec<(bool, u32, u32)>,
    pub rst_example: Option<Pkt>,
    pub goaway: Vec<(bool, u32, Pkt)>,
    /// Streams open at once, at most; new streams whose opening filled the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS (the connection reached its limit), and the first few
    /// of those with the end of the stream before them.
    pub peak_open: u32,
    pub at_limit_starts: u32,
    pub queued: Vec<(Pkt, Pkt)>,
    /// Loss episodes that held several streams, the first few, and their count.
    pub hol: Vec<HolEpisode>,
    pub hol_count: u32,
    pub hol_streams: u64,
    /// Streams that were open when the server's frames went missing (a capture gap, the
    /// snap length) and never showed again: ended as cut by the gap.
    pub gap_cut: u32,
}

/// A loss repaired faster than this (a LAN's fast retransmit, in microseconds) held the
/// streams for nothing a request would notice: not head-of-line blocking worth a finding.
pub const HOL_MIN_STALL_NS: i64 = 1_000_000;

/// Evidence kept per kind and connection.
const EXAMPLES: usize = 3;
/// Per-stream waits kept per connection.
const MAX_KEPT: usize = 4096;

pub(in crate::analyze) struct H2Conn {
    /// Per direction (0 the client's, 1 the server's), the bytes put in sequence order
    /// (`super::reasm`), then read frame by frame.
    reasm: [Reassembler; 2],
    readers: [Reader; 2],
    streams: Vec<Stream>,
    block: Option<Block>,
    hpack: httlib_hpack::Decoder<'static>,
    /// The server's header blocks were all captured whole so far (the dynamic table is right).
    hpack_ok: bool,
    pub settings: H2Settings,
    pub done: H2Done,
    /// Flow control per sender (0: client, 1: server): the connection's window, and the
    /// stream that ran out of window, waiting.
    conn_win: [i64; 2],
    blocked: [Option<Blocked>; 2],
    /// The frame that ended the last stream.
    last_end: Option<Pkt>,
    /// The last streams that ended: when they opened and ended (ns), for the streams a loss
    /// held ([`H2Conn::on_loss`]).
    ended: std::collections::VecDeque<(i64, i64)>,
    /// The server's bytes being read waited behind a hole until this segment filled it.
    fill: Option<Pkt>,
    /// Streams set aside at a loss of the server's framing (their end may be in what was
    /// missed), with the time they were set aside (`gap`).
    gapped: Vec<(Stream, i64)>,
    /// Framing losses of each side already acted on.
    losses_seen: [u32; 2],
}

/// Ended streams remembered for [`H2Conn::on_loss`].
const ENDED_KEPT: usize = 64;

impl H2Conn {
    /// A connection whose server's data continues at `server_next` (what it sent before the
    /// client's preface, when captured, was passed).
    pub(in crate::analyze) fn new(server_next: Option<u32>) -> Box<H2Conn> {
        Box::new(H2Conn {
            reasm: [Reassembler::new(None), Reassembler::new(server_next)],
            readers: [Reader::new(true), Reader::new(false)],
            streams: Vec::new(),
            block: None,
            hpack: httlib_hpack::Decoder::default(),
            hpack_ok: true,
            settings: H2Settings::default(),
            done: H2Done::default(),
            conn_win: [65_535; 2],
            blocked: [None; 2],
            last_end: None,
            ended: std::collections::VecDeque::new(),
            fill: None,
            gapped: Vec::new(),
            losses_seen: [0; 2],
        })
    }

    /// Data (`pkt` oriented) at `seq`, `len` bytes of which `payload` was captured, new or
    /// not (a retransmission or a late segment may fill a hole): the exchanges the bytes it
    /// puts in order complete go to `done`.
    pub(in crate::analyze) fn on_data(
        &mut self,
        pkt: Pkt,
        seq: u32,
        payload: &[u8],
        len: u32,
        done: &mut Vec<Exchange>,
    ) {
        let side = usize::from(pkt.from_server);
        let mut reasm = std::mem::take(&mut self.reasm[side]);
        reasm.push(pkt, seq, payload, len, &mut |r| self.read(side, r, done));
        self.reasm[side] = reasm;
    }

    /// The peer acknowledged the data of the side `from_server` up to `ack`: a hole below
    /// it that the capture never filled is a capture gap, not waited for.
    pub(in crate::analyze) fn on_ack(
        &mut self,
        from_server: bool,
        ack: u32,
        done: &mut Vec<Exchange>,
    ) {
        let side = usize::from(from_server);
        let mut reasm = std::mem::take(&mut self.reasm[side]);
        reasm.on_ack(ack, &mut |r| self.read(side, r, done));
        self.reasm[side] = reasm;
    }

    /// Bytes in sequence order into the frame reader of `side`. Bytes that waited behind a
    /// hole: a request's reached the server with the segment that filled it (the server's
    /// time starts there); a response's keep the time they were sent (the server's time
    /// ends there) and the streams they carry are delivered with the filler ([`H2Conn::fill`]).
    fn read(&mut self, side: usize, r: Run<'_>, done: &mut Vec<Exchange>) {
        let pkt = match r.held {
            Some(by) if side == 0 => by,
            _ => r.pkt,
        };
        self.fill = r.held.filter(|_| side == 1);
        let mut reader = std::mem::replace(&mut self.readers[side], Reader::new(false));
        reader.feed(pkt, r.seq, r.bytes, r.len, &mut |f| {
            self.on_frame(f, side == 1, done)
        });
        // The server's framing was lost and not found again yet: the streams may be ending
        // in what is being missed.
        if reader.losses > self.losses_seen[side] && reader.is_lost() && side == 1 {
            self.set_aside(r.pkt.ts_ns, done);
        }
        self.losses_seen[side] = reader.losses;
        self.readers[side] = reader;
        self.fill = None;
    }

    /// Holes given up by the reassemblers because too much waited behind them.
    pub(in crate::analyze) fn reassembly_overflows(&self) -> u32 {
        self.reasm.iter().map(|r| r.overflows).sum()
    }

    /// Times either direction's framing was lost.
    pub(in crate::analyze) fn framing_lost(&self) -> u32 {
        self.readers.iter().map(|r| r.losses).sum()
    }

    /// Where the connection stands, in the turns source's terms (for resets).
    pub(in crate::analyze) fn phase(&self) -> Phase {
        if self.streams.is_empty() {
            Phase::Idle
        } else if self.streams.iter().any(|s| s.x.first_resp.is_none()) {
            Phase::Request
        } else {
            Phase::Response
        }
    }

    /// The exchanges in progress (to charge stalls to).
    pub(in crate::analyze) fn in_progress(&mut self) -> impl Iterator<Item = &mut Exchange> {
        self.streams.iter_mut().map(|s| &mut s.x)
    }

    /// A loss episode that stalled the connection for `stall_ns` until `last` ended: the
    /// streams it held are the most that were in progress at once during the stall (open
    /// ones, and ones that ended since it began: a retransmission that fills a hole ends the
    /// streams whose frames waited behind it, before the ACK that ends the episode). With
    /// several, each of them waited (head-of-line blocking).
    pub(in crate::analyze) fn on_loss(&mut self, first: Pkt, last: Pkt, stall_ns: i64) {
        if stall_ns < HOL_MIN_STALL_NS {
            return;
        }
        let n = self.held_by(last.ts_ns - stall_ns, last.ts_ns);
        if n < 2 {
            return;
        }
        let d = &mut self.done;
        d.hol_count += 1;
        d.hol_streams += u64::from(n);
        if d.hol.len() < EXAMPLES {
            d.hol.push(HolEpisode {
                streams: n,
                stall_ns,
                first,
                last,
            });
        }
    }

    /// The most streams in progress at once between `from` and `to` (ns): at `from` or
    /// when one opened in between.
    fn held_by(&self, from: i64, to: i64) -> u32 {
        let spans: Vec<(i64, i64)> = self
            .streams
            .iter()
            .map(|s| (s.x.first_req.ts_ns, i64::MAX))
            .chain(self.gapped.iter().map(|(s, at)| (s.x.first_req.ts_ns, *at)))
            .chain(self.ended.iter().copied())
            .filter(|&(open, end)| open <= to && end > from)
            .collect();
        let at = |t: i64| spans.iter().filter(|&&(o, e)| o <= t && t < e).count();
        let opened = spans.iter().map(|&(o, _)| o).filter(|&o| o > from);
        std::iter::once(from)
            .chain(opened)
            .map(at)
            .max()
            .unwrap_or(0) as u32
    }

    /// The connection ends: what the reassemblers still hold is read (holes unknown), and
    /// the streams it completes are returned.
    pub(in crate::analyze) fn flush(&mut self) -> Vec<Exchange> {
        let mut done = Vec::new();
        for side in 0..2 {
            let mut reasm = std::mem::take(&mut self.reasm[side]);
            reasm.flush(&mut |r| self.read(side, r, &mut done));
            self.reasm[side] = reasm;
        }
        done
    }

    /// The streams whose response began, taken out when the connection ends (those set aside
    /// at a gap as cut by it), and what the connection showed.
    pub(in crate::analyze) fn take_answered(&mut self) -> Vec<Exchange> {
        let mut out = Vec::new();
        // Still lost at the end: what was open may have ended in the missed frames.
        if self.readers[1].is_lost() {
            self.set_aside(i64::MAX, &mut out);
        }
        for (s, at) in std::mem::take(&mut self.gapped) {
            self.end_in_gap(s, at, &mut out);
        }
        let open: Vec<Stream> = self.streams.drain(..).collect();
        for s in open {
            self.note_waits(&s);
            if s.x.first_resp.is_some() {
                out.push(s.x);
            }
        }
        self.done.streams += out.iter().filter(|x| !x.gap_cut).count() as u32;
        out
    }

    /// What the connection showed (at its end, after [`H2Conn::take_answered`]).
    pub(in crate::analyze) fn facts(&self) -> &H2Done {
        &self.done
    }

    fn note_waits(&mut self, s: &Stream) {
        for (k, &ns) in s.waited_ns.iter().enumerate() {
            let kept = &mut self.done.stream_waits_ns[k];
            if ns > 0 && kept.len() < MAX_KEPT {
                kept.push(ns);
            }
        }
    }

    /// Stream `k` ends (its response is complete, or it was reset): out of the table, and
    /// when it was answered, to `done`.
    fn end_stream(&mut self, k: usize, last: Pkt, done: &mut Vec<Exchange>) {
        let s = self.streams.remove(k);
        self.note_waits(&s);
        self.last_end = Some(last);
        self.remember_end(s.x.first_req.ts_ns, last.ts_ns.max(s.x.delivered_ns));
        if s.x.first_resp.is_some() {
            self.done.streams += 1;
            done.push(s.x);
        }
    }

    /// A stream that opened at `open` ended at `end` (ns), for [`H2Conn::held_by`].
    fn remember_end(&mut self, open: i64, end: i64) {
        if self.ended.len() == ENDED_KEPT {
            self.ended.pop_front();
        }
        self.ended.push_back((open, end));
    }

    fn on_frame(&mut self, f: &Frame<'_>, server: bool, done: &mut Vec<Exchange>) {
        let h = f.head;
        if f.resync && server {
            self.set_aside(f.first.ts_ns, done);
        }
        // A set-aside stream's own frame from the server (or a reset from either side): it
        // did not end in the gap.
        if !self.gapped.is_empty() && h.stream != 0 && (server || h.kind == RST_STREAM) {
            self.revive(h.stream);
        }
        // A frame of the server's that waited behind a hole: its stream had it only when the
        // hole was filled, and the wait was the loss's.
        if let Some(by) = self.fill
            && let Some(st) = self.streams.iter_mut().find(|s| s.id == h.stream)
        {
            let x = &mut st.x;
            x.delivered_ns = x.delivered_ns.max(by.ts_ns);
            x.add_stall(LOSS, true, f.first.ts_ns, by.ts_ns);
        }
        match h.kind {
            HEADERS => {
                let block = f.payload.and_then(|p| strip(p, h.flags));
                let b = Block {
                    stream: h.stream,
                    from_server: server,
                    end_stream: h.flags & END_STREAM != 0,
                    first: f.first,
                    bytes: block.unwrap_or_default().to_vec(),
                    whole: block.is_some(),
                };
                if h.flags & END_HEADERS != 0 {
                    self.on_headers(b, f.last, done);
                } else {
                    self.block = Some(b);
                }
            }
            CONTINUATION => {
                let Some(mut b) = self.block.take() else {
                    return;
                };
                match f.payload {
                    Some(p) if b.whole => b.bytes.extend_from_slice(p),
                    _ => b.whole = false,
                }
                if h.flags & END_HEADERS != 0 {
                    self.on_headers(b, f.last, done);
                } else {
                    self.block = Some(b);
                }
            }
            DATA => self.on_data_frame(f, server, done),
            WINDOW_UPDATE => {
                let inc = f
                    .payload
                    .and_then(code)
                    .map_or(0, |v| i64::from(v & 0x7fff_ffff));
                // It opens the window of the peer's data.
                let s = usize::from(!server);
                if h.stream == 0 {
                    self.conn_win[s] += inc;
                } else if let Some(st) = self.streams.iter_mut().find(|x| x.id == h.stream) {
                    st.win[s] += inc;
                }
                if let Some(b) = self.blocked[s].as_mut()
                    && b.update.is_none()
                    && (h.stream == 0 || h.stream == b.stream)
                {
                    b.update = Some(f.first);
                }
            }
            RST_STREAM => {
                let code = f.payload.and_then(code).unwrap_or(u32::MAX);
                let d = &mut self.done;
                match d.rst.iter_mut().find(|r| r.0 == server && r.1 == code) {
                    Some(r) => r.2 += 1,
                    None => d.rst.push((server, code, 1)),
                }
                d.rst_example.get_or_insert(f.first);
                if let Some(k) = self.streams.iter().position(|s| s.id == h.stream) {
                    if server && self.streams[k].x.first_resp.is_some() {
                        self.streams[k].x.last_resp = f.last;
                    }
                    self.end_stream(k, f.last, done);
                }
            }
            GOAWAY => {
                let code = f
                    .payload
                    .and_then(|p| code(p.get(4..)?))
                    .unwrap_or(u32::MAX);
                if self.done.goaway.len() < 16 {
                    self.done.goaway.push((server, code, f.first));
                }
            }
            SETTINGS if h.flags & frame::ACK == 0 => {
                if let Some(p) = f.payload {
                    self.on_settings(usize::from(server), p);
                }
            }
            _ => {}
        }
    }

    fn on_data_frame(&mut self, f: &Frame<'_>, server: bool, done: &mut Vec<Exchange>) {
        let h = f.head;
        let s = usize::from(server);
        let len = i64::from(h.len);
        self.conn_win[s] -= len;
        let Some(k) = self.streams.iter().position(|st| st.id == h.stream) else {
            return;
        };
        // Sent after its window ran out and was opened again: it waited.
        if let Some(b) = self.blocked[s].take() {
            match b.update {
                Some(update) if b.stream == h.stream || b.conn_level => {
                    let w = FlowWait {
                        sender_is_server: server,
                        stream: b.stream,
                        conn_level: b.conn_level,
                        window: if b.conn_level {
                            65_535
                        } else {
                            i64::from(self.settings.initial_window[1 - s].unwrap_or(65_535))
                        },
                        blocked: b.at,
                        update,
                        resumed: f.first,
                    };
                    let d = &mut self.done;
                    d.flow_waits[s] += 1;
                    if d.flow.len() < EXAMPLES {
                        d.flow.push(w);
                    }
                    if let Some(st) = self.streams.iter_mut().find(|x| x.id == b.stream) {
                        st.waited_ns[s] += w.wait_ns();
                    }
                }
                _ => self.blocked[s] = Some(b),
            }
        }
        let st = &mut self.streams[k];
        st.win[s] -= len;
        let end = h.flags & END_STREAM != 0;
        if !end && (st.win[s] <= 0 || self.conn_win[s] <= 0) {
            self.blocked[s] = Some(Blocked {
                stream: h.stream,
                conn_level: self.conn_win[s] <= 0,
                at: f.last,
                update: None,
            });
        }
        if server {
            st.x.first_resp.get_or_insert(f.first);
            st.x.last_resp = f.last;
            if end {
                self.end_stream(k, f.last, done);
            }
        } else {
            st.x.last_req = f.last;
            st.req_done |= end;
        }
    }

    fn on_settings(&mut self, side: usize, p: &[u8]) {
        for s in p.chunks_exact(6) {
            let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match u16::from_be_bytes([s[0], s[1]]) {
                // HEADER_TABLE_SIZE of the client: how large the server's encoder may go.
                0x1 if side == 0 => self.hpack.set_max_dynamic_size(v),
                0x3 => self.settings.max_concurrent_streams[side] = Some(v),
                0x4 => {
                    // The peer's stream windows move by the change (RFC 9113 §6.9.2).
                    let old = self.settings.initial_window[side].unwrap_or(65_535);
                    let delta = i64::from(v) - i64::from(old);
                    for st in &mut self.streams {
                        st.win[1 - side] += delta;
                    }
                    self.settings.initial_window[side] = Some(v);
                }
                // MAX_FRAME_SIZE: what the peer may send.
                0x5 => self.readers[1 - side].max_frame = v,
                _ => {}
            }
        }
        self.done.settings = self.settings;
    }

    fn on_headers(&mut self, b: Block, last: Pkt, done: &mut Vec<Exchange>) {
        if !b.from_server {
            // A new request (odd stream ids), or the request's trailers.
            if let Some(s) = self.streams.iter_mut().find(|s| s.id == b.stream) {
                s.x.last_req = last;
                s.req_done |= b.end_stream;
                return;
            }
            // Opening it fills the server's stream limit: the client keeps exactly as many
            // streams open as the server allows (more requests wait in the client).
            let limit = self.settings.max_concurrent_streams[1];
            if limit.is_some_and(|l| self.streams.len() as u32 + 1 == l) {
                let d = &mut self.done;
                d.at_limit_starts += 1;
                if let Some(end) = self.last_end
                    && d.queued.len() < EXAMPLES
                {
                    d.queued.push((end, b.first));
                }
            }
            let init =
                |side: usize| i64::from(self.settings.initial_window[side].unwrap_or(65_535));
            let win = [init(1), init(0)];
            self.streams.push(Stream {
                id: b.stream,
                x: Exchange {
                    first_req: b.first,
                    last_req: last,
                    first_resp: None,
                    last_resp: last,
                    found: Found::H2,
                    parts: ExchangeParts::default(),
                    delivered_ns: i64::MIN,
                    req_end: 0,
                    req_ack: None,
                    status: 0,
                    gap_cut: false,
                    resp_bytes: 0,
                    framing: super::framing::Framing::Open,
                    method: super::framing::Method::Other,
                    pipelined: false,
                    prev_answered: false,
                    idle_before_ns: 0,
                    echo_min_ns: i64::MAX,
                    first_resp_ts: None,
                    last_resp_ts: None,
                    body_wait_ns: 0,
                    reuse_gap_ns: None,
                    flights: Default::default(),
                    tls_setup: false,
                },
                req_done: b.end_stream,
                win,
                waited_ns: [0; 2],
            });
            self.done.peak_open = self.done.peak_open.max(self.streams.len() as u32);
            return;
        }
        let status = self.status(b.whole.then_some(&b.bytes[..]));
        let Some(k) = self.streams.iter().position(|s| s.id == b.stream) else {
            return;
        };
        let x = &mut self.streams[k].x;
        // A final status replaces an informational (1xx) one; trailers keep it.
        if x.first_resp.is_none() || (100..200).contains(&x.status) {
            x.status = status.unwrap_or(0);
        }
        x.first_resp.get_or_insert(b.first);
        x.last_resp = last;
        if b.end_stream {
            self.end_stream(k, last, done);
        }
    }

    /// The `:status` of a server header block (`None` when it was not captured whole).
    fn status(&mut self, block: Option<&[u8]>) -> Option<u16> {
        let Some(block) = block else {
            self.hpack_ok = false;
            return None;
        };
        if self.hpack_ok {
            let mut buf = block.to_vec();
            let mut fields = Vec::new();
            match self.hpack.decode(&mut buf, &mut fields) {
                Ok(_) => {
                    return fields
                        .iter()
                        .find(|(n, _, _)| n == b":status")
                        .and_then(|(_, v, _)| std::str::from_utf8(v).ok()?.parse().ok());
                }
                Err(_) => self.hpack_ok = false,
            }
        }
        // The static table's statuses (RFC 7541 appendix A, indices 8-14), as an indexed field.
        const STATIC: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
        let first = *block.first()?;
        (first & 0x80 != 0)
            .then(|| {
                STATIC
                    .get(usize::from(first & 0x7f).checked_sub(8)?)
                    .copied()
            })
            .flatten()
    }
}

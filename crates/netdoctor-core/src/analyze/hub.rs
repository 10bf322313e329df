//! Where the trackers' conclusions go: per connection, what they mean for the exchange in
//! progress, then on as [`Event`]s and aggregate figures to [`super::agg`] (directly, or through
//! a shard worker's log). Kept apart from the connection table so both can be borrowed at once
//! (one hash lookup per packet).

use super::agg::{Agg, Entry, Out, Setup};
use super::conn::Conn;
use super::http::{Exchange, Found};
use crate::breakdown::{DELAYED_ACK, LOSS, NAGLE, TIMEOUT, ZERO_WINDOW};
use crate::event::{
    ConnDone, Episode, Event, ExchangeDone, Pkt, ResetContext, ResetKind, Stall, StallKind,
    ZeroPeriod,
};
use crate::track::loss::FAST_REACT_NS;

use super::conn::Source;
use super::framing::Framing;
use super::h2::H2Conn;
use super::h2::frame::PREFACE as H2_PREFACE;
use super::http::Phase;
use super::reset_kind::{answer_acked, reset_kind};

pub(super) struct Hub {
    /// Where the conclusions go: the aggregates and detectors, or a shard worker's log.
    pub out: Out,
}

impl Hub {
    pub(super) fn new() -> Self {
        Hub {
            out: Out::Direct(Box::new(Agg::new())),
        }
    }

    /// A shard worker's hub: conclusions are logged with a tag ([`Hub::tag`]).
    pub(super) fn logging() -> Self {
        Hub {
            out: Out::Log {
                tag: 0,
                entries: super::agg::Log::default(),
            },
        }
    }

    /// The tag of the conclusions that follow (a logging hub): the frame's place in the order
    /// pushed while analyzing, a connection's first frame at the end.
    #[inline]
    pub(super) fn tag(&mut self, frame: u64) {
        if let Out::Log { tag, .. } = &mut self.out {
            *tag = frame;
        }
    }

    /// The aggregates, unless this hub logs.
    pub(super) fn agg(&mut self) -> Option<&mut Agg> {
        match &mut self.out {
            Out::Direct(a) => Some(a),
            Out::Log { .. } => None,
        }
    }

    /// Hands `ev` to every detector that wants its kind, in registry order.
    #[inline]
    pub(super) fn emit(&mut self, ev: &Event<'_>) {
        self.out.emit(ev);
    }

    /// A handshake RTT.
    #[inline]
    pub(super) fn record_rtt(&mut self, ns: i64) {
        self.out.put(Entry::Rtt(ns));
    }

    /// New (not retransmitted) payload from endpoint `i` (`pkt` oriented).
    pub(super) fn on_new_data(
        &mut self,
        c: &mut Conn,
        i: usize,
        pkt: Pkt,
        end: u32,
        payload: &[u8],
    ) {
        // The turns source finishes at most one exchange per segment (kept on the stack: a
        // `Vec` here cost an allocation per exchange); HTTP/2 may finish several.
        let mut turn_done = None;
        let mut finished = Vec::new();
        if !pkt.from_server
            && c.first_req.is_none()
            && matches!(c.source, Source::Turns)
            && payload.starts_with(H2_PREFACE)
        {
            let srv = &c.dirs[c.server];
            c.source = Source::H2(H2Conn::new(srv.started.then_some(srv.nxt)));
        }
        // A stall of HTTP/2 data held the streams open before it (this data may end them);
        // one of turns is charged once the exchange this data belongs to is known.
        let h2 = matches!(c.source, Source::H2(_));
        if h2 {
            self.nagle_step(c, i, pkt, end);
        }
        match &mut c.source {
            Source::Turns => {
                if !pkt.from_server
                    && !c.ambiguous
                    && (c.phase == Phase::Request || c.first_req.is_none())
                {
                    c.check_ambiguous(payload);
                }
                // Data of this direction before it went uncaptured (or never was).
                let start = end.wrapping_sub(pkt.len);
                let seen = c.dirs[i].seen_nxt;
                let gap = seen.is_none_or(|s| super::flow::seq_gt(start, s));
                // Bytes at its start seen before (re-cut after a loss).
                let old = seen
                    .filter(|&s| super::flow::seq_gt(s, start))
                    .map_or(0, |s| s.wrapping_sub(start).min(pkt.len));
                c.on_http_data(pkt, payload, gap, old, &mut turn_done);
                if !pkt.from_server
                    && c.phase == Phase::Request
                    && let Some(x) = c.cur.as_mut()
                {
                    x.req_end = end;
                }
            }
            // DNS over TCP: lookups, read by `super::dns`; no exchange.
            Source::Dns => {}
            Source::H2(h) => {
                h.on_data(
                    pkt,
                    end.wrapping_sub(pkt.len),
                    payload,
                    pkt.len,
                    &mut finished,
                );
                c.phase = h.phase();
                if !pkt.from_server {
                    c.first_req.get_or_insert(pkt);
                }
            }
        }

        if !h2 {
            self.nagle_step(c, i, pkt, end);
        }
        // Borrowed where they lie (`if let Some(x) = turn_done` moved the exchange into a
        // local first: a copy per exchange, +29 M instructions on the bench capture, callgrind).
        if let Some(x) = &turn_done {
            self.finish_exchange(c, x);
        }
        for x in &finished {
            self.finish_exchange(c, x);
        }
    }

    /// Data below the highest sequence sent (a retransmission or a late segment), `len`
    /// bytes at `seq` (`pkt` oriented): an HTTP/2 connection's reassembler may have waited
    /// for it (the turns source reads only new data).
    pub(super) fn on_old_data(&mut self, c: &mut Conn, pkt: Pkt, seq: u32, payload: &[u8]) {
        let Source::H2(h) = &mut c.source else {
            return;
        };
        let mut finished = Vec::new();
        h.on_data(pkt, seq, payload, pkt.len, &mut finished);
        c.phase = h.phase();
        for x in &finished {
            self.finish_exchange(c, x);
        }
    }

    /// The peer acknowledged the data of endpoint `i` up to `ack`: an HTTP/2 reassembler
    /// stops waiting for bytes below it that the capture never saw.
    /// Only HTTP/2 tracks ACKs of its frames: the check is inline, so the per-ACK call of an
    /// HTTP/1 or other connection costs a compare.
    #[inline]
    pub(super) fn on_ack_of(&mut self, c: &mut Conn, i: usize, ack: u32) {
        if matches!(c.source, Source::H2(_)) {
            self.on_ack_of_h2(c, i, ack);
        }
    }

    #[inline(never)]
    fn on_ack_of_h2(&mut self, c: &mut Conn, i: usize, ack: u32) {
        let from_server = c.server == i;
        let Source::H2(h) = &mut c.source else {
            return;
        };
        let mut finished = Vec::new();
        h.on_ack(from_server, ack, &mut finished);
        c.phase = h.phase();
        for x in &finished {
            self.finish_exchange(c, x);
        }
    }

    /// Nagle / delayed ACK: this side's tracker sees the data, the peer's learns a new
    /// message began.
    fn nagle_step(&mut self, c: &mut Conn, i: usize, pkt: Pkt, end: u32) {
        let j = 1 - i;
        let rtt = c.rtt_ns;
        let mss = c.dirs[j].mss; // the MSS this side may send is the one the peer announced
        let disturbed = std::mem::take(&mut c.dirs[i].disturbed);
        let id_skipped = std::mem::take(&mut c.dirs[i].id_skipped);
        let stall = c.dirs[i].nagle.on_data(pkt, end, mss, rtt);
        c.dirs[j].nagle.on_peer_data();
        match stall {
            Some(_) if disturbed => {}
            // Held by no Nagle: the data was resent, its original lost before the capture.
            Some(st) if id_skipped && st.kind == StallKind::Nagle => self.on_unseen_resend(c, st),
            Some(st) => self.on_stall(c, st),
            None => {}
        }
    }

    /// Data that left right after the peer's late ACK with the sender's IPv4 ids skipped
    /// just before it (`conn::Dir::note_ip_id`): not held back by Nagle, but a resend of a
    /// segment lost before the capture point, sent when that ACK (of the data before it)
    /// arrived. The capture never saw the original, so no tracker flags the resend: it is
    /// counted here as a loss episode of one retransmission, stalled from the data before it
    /// (`out-drop-nagle-early.pcap.gz`: a 615-byte body lost, resent 43.7 ms later).
    fn on_unseen_resend(&mut self, c: &mut Conn, st: Stall) {
        let mut ep = Episode::synthetic(st.held, st.held, st.prev.ts_ns, 1, 0);
        let sender = if st.held.from_server {
            c.server
        } else {
            1 - c.server
        };
        ep.before = Some(st.prev);
        ep.acked_at_start = c.dirs[sender].acked;
        ep.before_capture = true;
        self.on_episode(c, ep);
    }

    fn on_stall(&mut self, c: &mut Conn, st: Stall) {
        for x in c.in_progress() {
            let held_server = st.held.from_server;
            let (cause, server_side) = match st.kind {
                StallKind::Nagle => (NAGLE, held_server),
                StallKind::DelayedAck => (DELAYED_ACK, held_server),
                // The side of a full window is its reader: the peer of the held data's sender.
                StallKind::WindowLimited => (ZERO_WINDOW, !held_server),
            };
            x.add_stall(cause, server_side, st.prev.ts_ns, st.held.ts_ns);
        }
        let ends = c.ends();
        self.emit(&Event::Stall { ends, stall: st });
    }

    /// A loss episode of the connection ended: charge its stall and count it.
    pub(super) fn on_episode(&mut self, c: &mut Conn, mut ep: Episode) {
        // The client's first request, not a byte of it acknowledged when it was resent.
        let d = &c.dirs[1 - c.server];
        ep.setup = !ep.first.from_server
            && c.exchanges == 0
            && d.syn_seen
            && ep.acked_at_start.is_none_or(|a| a == d.isn.wrapping_add(1));
        // The receiver of the retransmitted data is the client when the server sent it.
        ep.near_receiver = c.syn.near_client().map(|n| n == ep.first.from_server);
        let receiver = if ep.first.from_server {
            1 - c.server
        } else {
            c.server
        };
        ep.receiver_unseen = !c.dirs[receiver].seen;
        ep.idle = c.exchanges > 0 && c.in_progress().next().is_none();
        // Probes of a closed window: the zero-window period charges that wait.
        for x in c.in_progress().filter(|_| !ep.window_closed) {
            if ep.stall_ns() <= 0 {
                break;
            }
            let cause = if ep.timeout { TIMEOUT } else { LOSS };
            x.add_stall(
                cause,
                ep.last.from_server,
                ep.stall_start_ns(),
                ep.last.ts_ns,
            );
            if ep.last.from_server && x.first_resp.is_some() {
                x.delivered_ns = x.delivered_ns.max(ep.last.ts_ns);
            }
        }
        if let Source::H2(h) = &mut c.source {
            h.on_loss(ep.first, ep.last, ep.stall_ns());
        }
        let ends = c.ends();
        self.emit(&Event::LossEpisode { ends, episode: ep });
    }

    /// The held loss episodes of connection `c` that the packet of endpoint `i` at `ts_ns`
    /// ends (see `Analyzer::on_segment`): the one of `i`'s data unless the wait covers this
    /// packet (`plain`: no SYN, FIN or reset), the one of the peer's data unless this packet
    /// is an ACK that reads it (`reads`; `keep_ack`: a pure ACK of a connection of turns,
    /// read only within the wait).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn end_held(
        &mut self,
        c: &mut Conn,
        i: usize,
        ts_ns: i64,
        turns: bool,
        plain: bool,
        reads: bool,
        keep_ack: bool,
    ) {
        let j = 1 - i;
        let wait = if turns {
            FAST_REACT_NS.max(c.rtt_ns.unwrap_or(0))
        } else {
            -1
        };
        let sender_wait = if plain { wait } else { -1 };
        if let Some(ep) = c.dirs[i].loss.take_closing_after(ts_ns, sender_wait) {
            self.on_episode(c, ep);
        }
        let ack_wait = if keep_ack { wait } else { -1 };
        if (!reads || keep_ack)
            && let Some(ep) = c.dirs[j].loss.take_closing_after(ts_ns, ack_wait)
        {
            self.on_episode(c, ep);
        }
    }

    /// Endpoint `i` of the connection reopened its window after `z`.
    pub(super) fn on_zero_period(&mut self, c: &mut Conn, i: usize, mut z: ZeroPeriod) {
        let reader_is_server = c.server == i;
        // What it reopened to (bytes, when the window scale is known) against its MSS.
        if z.reopened && c.dirs[0].syn_seen && c.dirs[1].syn_seen {
            z.reopen_bytes = Some(c.dirs[i].window);
        }
        z.mss = c.dirs[i].mss;
        for x in c.in_progress() {
            x.add_stall(ZERO_WINDOW, reader_is_server, z.start.ts_ns, z.end.ts_ns);
        }
        let ends = c.ends();
        let near_zero = (c.dirs[i].zero_min > 0).then_some(c.dirs[i].zero_min);
        self.emit(&Event::ZeroWindow {
            ends,
            reader_is_server,
            period: z,
            near_zero,
        });
    }

    /// A reset `rst` arrived on the connection (before its state is dropped).
    pub(super) fn on_reset(&mut self, c: &Conn, rst: Pkt, mut context: ResetContext) {
        // No byte of payload either way (a SYN counts one, a FIN one more).
        let no_payload = c.first_req.is_none()
            && c.dirs
                .iter()
                .all(|d| !d.started || d.nxt.wrapping_sub(d.isn) <= 2);
        // The client's reset of the SYN/ACK that answered its only SYN: the server accepted
        // on time and the client had given up on the attempt itself (its socket closed before
        // the answer came: a load generator ending its run, a connect timeout shorter than the
        // round trip). Not a refusal. A SYN repeated first (loss, a full listen queue) keeps
        // the refusal's story of an abandoned handshake (`server_not_listening`).
        let client_abandoned = !rst.from_server && c.synack_seen && !c.syn.repeated();
        let kind = if c.rtt_ns.is_none()
            && c.syn.first_syn.is_some()
            && c.cur.is_none()
            && !client_abandoned
        {
            ResetKind::Refused
        } else if no_payload && c.synack_seen {
            if context
                .after_fin
                .is_some_and(|fin| fin.from_server != rst.from_server)
            {
                ResetKind::UnusedClosed
            } else {
                ResetKind::Setup
            }
        } else {
            reset_kind(c, rst, &context)
        };
        // The server closed, and the client wrote a request after its FIN: the reset answered
        // that request (it failed), not a keep-alive probe or a late byte of a closed talk.
        if kind == ResetKind::AfterClose
            && rst.from_server
            && c.phase == Phase::Request
            && let (Some(fin), Some(x)) = (context.after_fin, c.cur)
            && fin.from_server
            && x.first_req.ts_ns >= fin.ts_ns
        {
            context.request_after_close_ns = Some(x.first_req.ts_ns - fin.ts_ns);
        }
        if kind == ResetKind::AfterAnswer
            && let Some(x) = c.cur
        {
            context.unacked = !answer_acked(c);
            // In the request phase the answer was the previous exchange's; the request
            // written after it, or pipelined with the answered one, got none.
            let request = c.phase == Phase::Request;
            context.lost_request = request || (x.pipelined && rst.from_server);
            context.answer_gap_ns = Some(if request {
                x.reuse_gap_ns.unwrap_or(0) + (rst.ts_ns - x.first_req.ts_ns)
            } else {
                rst.ts_ns - x.last_resp.ts_ns
            });
        }
        context.answer_unseen = matches!(kind, ResetKind::DuringExchange | ResetKind::ClientAbort)
            && c.phase == Phase::Response
            && c.cur
                .is_some_and(|x| matches!(x.framing, Framing::Unseen | Framing::HeadUnseen));
        if c.phase == super::http::Phase::Request {
            context.reuse_gap_ns = c.cur.and_then(|x| x.reuse_gap_ns);
        }
        let before = match kind {
            ResetKind::Refused => c.syn.last_syn,
            ResetKind::Setup => c.syn.done.or(c.syn.last_synack),
            ResetKind::AfterClose => c.first_close,
            ResetKind::UnusedClosed => context.after_fin,
            _ => c.cur.map(|x| {
                if x.first_resp.is_some() {
                    x.last_resp
                } else {
                    x.last_req
                }
            }),
        };
        // Told by what it is, whenever it came: not its apparent sender's. One the receiver
        // ignored in SYN-SENT followed the SYN.
        let (kind, before) = match context.forged {
            Some(f) if f.ignored => (ResetKind::Injected, c.syn.first_syn),
            Some(_) => (ResetKind::Injected, before),
            None => (kind, before),
        };
        self.emit(&Event::Reset {
            ends: c.ends(),
            kind,
            before,
            rst,
            req: c.cur.map(|x| x.first_req),
            context,
        });
    }

    /// An exchange is complete (the next request started, or the connection closed), or,
    /// with `cut`, the capture ended while its response was arriving (or its end fell in a
    /// capture gap, `Exchange::gap_cut`): its first-byte time counts, its latency (the end of
    /// the response is unknown) does not.
    pub(super) fn finish_exchange_as(&mut self, c: &mut Conn, x: &Exchange, cut: bool) {
        let Some(first_resp) = x.first_resp else {
            return;
        };
        let cut = cut || x.gap_cut;
        let rtt = c.rtt_ns;
        // A TLS handshake turn is setup, not an exchange (`super::tls`).
        let first = c.exchanges == 0 && !x.tls_setup;
        c.exchanges += u32::from(!x.tls_setup);
        let latency = x.last_resp.ts_ns.max(x.delivered_ns) - x.first_req.ts_ns;
        // The round trip inside the request → first byte gap is the capture point's leg to
        // the server, not the whole handshake RTT: a capture at a server 384 ms from its
        // client read a 2.8 ms answer as 0 ms of server time and 2.8 ms of network, and one
        // next to a phone slow to ACK its SYN/ACKs (39.5 ms to the server, 118 ms back to the
        // phone) read every answer as network. Without an unrepeated handshake: the RTT.
        let leg = c.syn.server_leg_ns().or(rtt);
        let path_rtt = super::http::path_rtt_ns(leg, &x.last_req, x.req_ack);
        // A queue that filled under load delayed the first byte too: its wait is not the
        // server's. Measured directly when the server's TCP timestamp says when the first byte
        // left (`track::tsclock`); else from the round trip under load, the client's
        // timestamps echoed (`track::echo`; the same bar as `detect::bulk_limits`' queue rule;
        // an answer sent in one flight has no echo of its own: its connection's latest). The
        // round trip also holds the queue on the way in and at other moments, so it is only
        // the fallback (a 15 ms server behind a shaper kept 19 ms by the first, 10 by the
        // second: `tests/queue_wait.rs`).
        let waited = x.first_resp_ts.and_then(|rel| {
            c.dirs[c.server]
                .ts
                .queued_ns(rel, first_resp.ts_ns, x.last_req.ts_ns)
        });
        let not_server = match waited {
            Some(q) => path_rtt + q,
            None => {
                let echo = if x.echo_min_ns < i64::MAX {
                    Some(x.echo_min_ns)
                } else {
                    c.echo.recent(first_resp.ts_ns)
                };
                match (rtt, echo) {
                    (Some(r), Some(e)) if crate::track::echo::queued(r, e) => path_rtt.max(e),
                    _ => path_rtt,
                }
            }
        };
        let server_time = (first_resp.ts_ns - x.last_req.ts_ns - not_server).max(0);
        // A first exchange after a repeated SYN or SYN/ACK: the client waited from its first
        // SYN to its first data (the request, or the TLS ClientHello before it); one handshake
        // RTT of that is network, the rest the SYN retransmission.
        let mut setup = Setup::default();
        if first
            && (c.syn.syns > 1 || c.syn.synacks > 1)
            && let Some(syn) = c.syn.first_syn
        {
            let opened = c
                .first_req
                .filter(|_| c.tls.turns > 0)
                .unwrap_or(x.first_req);
            let waited = (opened.ts_ns - syn.ts_ns).max(0);
            setup = Setup {
                setup_ns: waited,
                handshake_ns: rtt.unwrap_or(0).min(waited),
                sides: crate::event::side_bit(c.syn.synacks > 1),
            };
        }
        let mut done = ExchangeDone {
            ends: c.ends(),
            first_req: x.first_req,
            last_req: x.last_req,
            first_resp,
            last_resp: x.last_resp,
            latency_ns: latency,
            server_time_ns: server_time,
            rtt_ns: rtt,
            leg_ns: leg,
            parts: x.parts,
            status: (x.status > 0).then_some(x.status),
            req_ack: x.req_ack,
            cut,
            resp_bytes: x.resp_bytes,
            echo_rtt_ns: (x.echo_min_ns < i64::MAX).then_some(x.echo_min_ns),
            body_wait_ns: x.body_wait_ns,
            reuse_gap_ns: x.reuse_gap_ns,
            slow_start: None,
        };
        // The response's flights, when they were followed (`Conn::follows_flights`): a ramp
        // from a small window, or after an idle restart against the window the connection's
        // earlier responses grew. (Judged after `done` is built: judged before it, the
        // exchange path cost +56 M instructions on the bench capture, callgrind, against
        // +2 M here; neither runs the flights there, a loopback capture.)
        if rtt.is_some_and(|r| r >= super::flights::MIN_RTT_NS) {
            if !cut {
                let before = super::flights::Before {
                    grown_segs: c.grown_segs,
                    idle_ns: done.sender_idle_ns(),
                };
                done.slow_start = x.flights.finish(rtt, x.delivered_ns != i64::MIN, before);
            }
            c.grown_segs = c.grown_segs.max(x.flights.max_flight());
        }
        // A TLS handshake turn goes in the same entry (built in place: a second kind of entry
        // cost a copy of every exchange), told apart by `found` (`super::tls`).
        self.out.put(Entry::Exchange {
            found: if x.tls_setup {
                Found::TlsSetup
            } else {
                x.found
            },
            setup,
            done,
            short: cut && x.framing.short(x.resp_bytes),
        });
    }

    /// (The exchange by reference: passed by value, it was copied once per exchange.)
    pub(super) fn finish_exchange(&mut self, c: &mut Conn, x: &Exchange) {
        self.finish_exchange_as(c, x, false);
    }

    /// A connection's state is dropped (closed, reused, evicted, or the capture ended): loss
    /// episodes and zero-window periods still open end here (charged to the exchange in
    /// progress).
    pub(super) fn flush_stalls(&mut self, c: &mut Conn) {
        for k in 0..2 {
            while let Some(ep) = c.dirs[k].loss.take_open() {
                self.on_episode(c, ep);
            }
            if let Some(last) = c.last
                && let Some(z) = c.dirs[k].zero.take_open(last)
            {
                self.on_zero_period(c, k, z);
            }
        }
    }

    /// The connection's bulk transfers ([`super::bulk`]), once it ends.
    pub(super) fn flush_bulk(&mut self, c: &mut Conn) {
        if c.bulk.iter().all(Option::is_none) {
            return;
        }
        for t in super::bulk::take(c) {
            self.out.bulk(t);
        }
    }

    /// Endpoint `i` started a new request/response turn: the watched transfer of its turn
    /// before ends here.
    #[cold]
    pub(super) fn bulk_turn_ended(&mut self, c: &Conn, i: usize, b: super::bulk::BulkDir) {
        self.out.bulk(super::bulk::finish(c, i, b));
    }

    pub(super) fn flush_counts(&mut self, c: &Conn) {
        let done = ConnDone {
            ends: c.ends(),
            syn: c.syn,
            first_req: c.first_req,
            exchanges: c.exchanges,
            first_close: c.first_close,
            idle_before_close_ns: c.idle_before_close_ns,
            asked: c.asked,
            tls: c.tls,
            crossed_fin: c.crossed_fin,
        };
        self.emit(&Event::ConnDone(&done));
        if let Source::H2(h) = &c.source {
            self.emit(&Event::H2 {
                ends: c.ends(),
                rtt_ns: c.rtt_ns,
                done: h.facts(),
            });
        }
    }
}

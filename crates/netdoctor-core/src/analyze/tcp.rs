//! The per-segment path: handshake, window, ACKs of the peer's data, new and old data,
//! teardown. Statically dispatched: the trackers in [`Dir`](super::conn::Dir) are updated in
//! place, and only what they conclude goes to the [`Hub`](super::hub::Hub) as events.

use std::collections::hash_map::Entry;

use super::conn::{Conn, Source, StrayRst};
use super::flow::{ConnKey, conn_key, seq_gt};
use super::framing::Framing;
use super::http::Phase;
use super::orient::{Reason, Shared, reorient};
use super::{Analyzer, AnalyzerConfig, MAX_CONNECTIONS, MAX_HALF_OPEN};
use crate::decode::TcpSegment;
use crate::event::{Pkt, ResetContext};
use crate::track::flags::{IDLE_RESET_NS, SegFlags};
use crate::track::loss::{Old, RetxClass};

impl Analyzer {
    pub(super) fn on_segment(&mut self, seg: &TcpSegment<'_>) {
        let fl = self.track_segment(seg);
        if fl.0 != 0
            && let Some(v) = self.flags.as_mut()
        {
            v.push((seg.frame, fl));
        }
    }

    /// The per-segment path; returns what it concluded about the segment.
    fn track_segment(&mut self, seg: &TcpSegment<'_>) -> SegFlags {
        let mut fl = SegFlags::default();
        let (key, i) = conn_key(seg.src, seg.dst);
        let j = 1 - i;
        let f = seg.flags;
        let opening = f.syn() && !f.ack();

        // An evicted half-open connection (see `super::halfopen`).
        if !self.half.tombs.is_empty()
            && let Some(fl) = self.on_tomb(key, i, seg)
        {
            return fl;
        }
        if f.syn() && !f.rst() && self.half.live >= MAX_HALF_OPEN && !self.conns.contains_key(&key)
        {
            self.evict_half_open();
        }
        if self.half.order.len() > 2 * MAX_HALF_OPEN {
            self.prune_half_open();
        }

        // Whether the duplicate filter has seen this segment already.
        let mut checked = false;
        if opening && self.conns.contains_key(&key) {
            match self.syn_on_open_conn(key, i, seg) {
                None => {
                    fl.set(SegFlags::DUPLICATE_FRAME);
                    return fl;
                }
                Some(c) => checked = c,
            }
        }
        let n_conns = self.conns.len();
        let c = match self.conns.entry(key) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                // Only a SYN, a SYN/ACK or data opens state: trailing ACKs/FINs of a closed
                // connection must not resurrect it. A SYN with FIN opens nothing either: no
                // stack answers it (Linux drops it in LISTEN), it is a scan's probe, and as a
                // half-open connection that never ends it would fill the half-open cap.
                if !(f.syn() || seg.payload_len > 0) || f.rst() || (f.syn() && f.fin()) {
                    fl.set(SegFlags::UNTRACKED);
                    if !f.syn() {
                        if self.untracked.len() >= super::MAX_UNTRACKED_KEYS {
                            self.untracked.clear();
                        }
                        *self.untracked.entry(key).or_default() |= 1 << i;
                    }
                    return fl;
                }
                if n_conns >= MAX_CONNECTIONS {
                    self.stats.connections_untracked += 1;
                    fl.set(SegFlags::UNTRACKED);
                    return fl;
                }
                self.stats.connections += 1;
                let c = v.insert(open_conn(&self.cfg, &mut self.shared, key, i, seg));
                // Its earlier packets that opened nothing: that end was captured too.
                if !self.untracked.is_empty()
                    && let Some(bits) = self.untracked.remove(&key)
                {
                    for d in 0..2 {
                        c.dirs[d].seen |= bits & (1 << d) != 0;
                    }
                }
                // A leftover segment of a connection a reset closed; a SYN starts anew.
                if !self.reset_keys.is_empty()
                    && let Some(n) = self.reset_keys.remove(&key)
                    && !f.syn()
                {
                    c.after_reset = Some(n);
                }
                if f.syn() {
                    self.stats.connections_with_handshake += 1;
                    c.half_open = true;
                    self.half.opened(key, seg.frame);
                }
                c
            }
        };
        // A copy of a frame just seen (port mirror, merged captures): not a segment.
        if !checked && c.dirs[i].dups.is_copy(seg) {
            self.stats.quality.duplicate_frames += 1;
            fl.set(SegFlags::DUPLICATE_FRAME);
            return fl;
        }
        let from_server = c.server == i;
        let pkt = Pkt {
            frame: seg.frame,
            ts_ns: seg.ts_ns,
            from_server,
            flags: f,
            len: seg.payload_len,
        };
        c.last = Some(pkt);
        // A loss episode held for a late D-SACK ends before anything of this packet is read,
        // unless this is its receiver's ACK, which reads it first. On a connection of turns it
        // waits up to one RTT (at least `FAST_REACT_NS`) after the ACK that closed it, past the
        // sender's packets (a FIN, SYN or reset aside) and the receiver's pure ACKs: those end
        // no exchange there, so the episode's stall is charged where it would have been. On
        // HTTP/2 any packet may end a stream: the next one ends the wait.
        let turns = !matches!(c.source, Source::H2(_));
        let plain = !f.syn() && !f.fin() && !f.rst();
        let reads = f.ack() && c.dirs[j].started;
        // A receiver's ACK past the wait ends it too (its D-SACK is not that episode's),
        // unless the wait does not apply (HTTP/2: the ACK reads it, as the next packet).
        let keep_ack = reads && seg.payload_len == 0 && plain && turns;
        if c.dirs[i].loss.holding() || c.dirs[j].loss.holding() {
            self.hub
                .end_held(c, i, seg.ts_ns, turns, plain, reads, keep_ack);
        }
        if !f.rst() {
            let single = seg.payload_len <= u32::from(c.dirs[j].mss.unwrap_or(1460));
            let d = &mut c.dirs[i];
            d.note_traits(seg.ttl, seg.reserved);
            d.ts.note(seg.tsval, seg.ts_ns);
            d.last_ns = seg.ts_ns;
            // A packet of this side went uncaptured just before: data after it is not held
            // back by Nagle but resent (or sent after a resend).
            d.id_skipped |= d.note_ip_id(seg.ip_id, single);
            if c.after_reset == Some(i as u8) {
                // The resetter's socket lives on (the reset was not its own): its later
                // resets are its own again.
                c.after_reset = None;
            }
        } else if ignored_in_syn_sent(c, i, seg) {
            // Its receiver drops it and the handshake may go on: judged at the end.
            self.stats.resets += 1;
            c.stray_rst.get_or_insert(StrayRst {
                pkt,
                from: i,
                ttl: seg.ttl,
                reserved: seg.reserved,
                before: c.dirs[i].ttl_n,
            });
            return fl;
        }
        c.dirs[i].seen = true;
        c.dirs[i].data_segs = c.dirs[i]
            .data_segs
            .saturating_add(u8::from(seg.payload_len > 0));
        // The round trip under load, from the timestamps (`track::echo`): the server's echo
        // read on the client's clock (`c.dirs[j].ts`, noted above for the client's segments).
        // A client's FIN counts as its data: a server that answers after it (a request it had
        // not read yet, the client gone at its own timeout) echoes the FIN's TSval, and that
        // echo holds the server's time, not a round trip (a single-threaded server read a
        // 5.09 s answer as 2.0 s of server time and a 3.07 s "round trip" of transfer).
        if (seg.payload_len > 0 || (f.fin() && !from_server))
            && let (Some(v), Some(e)) = (seg.tsval, seg.tsecr)
        {
            if !from_server {
                c.echo.client_data(v);
            } else if let Some(rtt) = c.echo.server(&c.dirs[j].ts, seg.ts_ns, e)
                && let Some(x) = c.cur.as_mut()
            {
                x.echo_min_ns = x.echo_min_ns.min(rtt);
            }
        }

        // Handshake.
        if f.syn() {
            let d = &mut c.dirs[i];
            let repeat = d.started && d.isn == seg.seq && (opening || c.synack_seen);
            if repeat {
                self.stats.syn_retransmits += 1;
                fl.set(SegFlags::RETRANSMISSION);
            }
            d.started = true;
            d.isn = seg.seq;
            if !repeat || seq_gt(seg.seq.wrapping_add(1), d.nxt) {
                d.nxt = seg.seq.wrapping_add(1);
            }
            d.mss = seg.mss;
            d.wscale = seg.wscale;
            d.syn_seen = true;
            if opening {
                c.syn_ts = Some(seg.ts_ns);
                c.syn.on_syn(pkt);
            } else {
                c.synack_seen = true;
                c.syn.on_synack(pkt);
            }
        } else if f.ack() && !from_server && c.synack_seen && c.syn.done.is_none() {
            // The client's first ACK after the (last) SYN/ACK completes the handshake.
            c.syn.on_client_ack(pkt);
            if c.rtt_ns.is_none()
                && let Some(t) = c.syn_ts
            {
                // With a repeated SYN/ACK: SYN → first SYN/ACK plus last SYN/ACK → ACK.
                let rtt = match (c.syn.synacks > 1, c.syn.first_synack, c.syn.last_synack) {
                    (true, Some(a), Some(b)) => (a.ts_ns - t).max(0) + (seg.ts_ns - b.ts_ns),
                    _ => seg.ts_ns - t,
                };
                if rtt >= 0 {
                    c.rtt_ns = Some(rtt);
                    self.hub.record_rtt(rtt);
                }
            }
        }

        if seg.payload_len > 0 {
            c.syn.on_data(pkt);
        }
        // Any packet from this endpoint (an ACK, data, a reset) shows it alive to the loss
        // episode of the peer's data (a silent receiver is not loss: `detect::loss`), except a
        // reset that acknowledges nothing: its host no longer had the connection.
        c.dirs[j]
            .loss
            .on_peer_packet(seg.ts_ns, f.rst() && !f.ack());

        if c.half_open && (c.syn.done.is_some() || seg.payload_len > 0) {
            self.half.left(c);
        }

        // The peer's view of this endpoint's window before this segment: the right edge it
        // may send up to (known only when both SYNs, hence the window scale, were seen).
        let edge = (c.dirs[i].syn_seen && c.dirs[j].syn_seen)
            .then(|| c.dirs[j].acked.map(|a| a.wrapping_add(c.dirs[i].window)))
            .flatten();

        if seg.window == 0 && !(f.syn() || f.fin() || f.rst()) {
            fl.set(SegFlags::ZERO_WINDOW);
        }
        let prev_window = c.dirs[i].window;
        // Window (scaled only when both sides offered window scaling, never on SYNs).
        {
            let scale = match (c.dirs[i].wscale, c.dirs[j].wscale) {
                (Some(s), Some(_)) if !f.syn() => u32::from(s.min(14)),
                _ => 0,
            };
            let bytes = u32::from(seg.window) << scale;
            c.dirs[i].window = bytes;
            // Below one MSS the peer cannot send a full segment: near zero (only when the
            // scale is known; a raw field of a connection picked up mid-stream means little).
            let known = c.dirs[j].syn_seen && c.dirs[i].syn_seen;
            let d = &mut c.dirs[i];
            if !f.syn() && !f.rst() {
                d.max_window = d.max_window.max(bytes);
                d.saw_zero |= seg.window == 0;
            }
            let near = known
                && !d.saw_zero
                && !f.syn()
                && bytes < u32::from(d.mss.unwrap_or(536)).min(d.max_window / 4);
            let shown = if near { 0 } else { seg.window };
            let was_open = !d.zero.active();
            if let Some(z) = d.zero.on_window(pkt, shown) {
                self.hub.on_zero_period(c, i, z);
            } else if d.zero.active() {
                d.zero_min = if was_open {
                    bytes
                } else {
                    d.zero_min.min(bytes)
                };
            }
            if c.dirs[i].zero.active() {
                c.dirs[j].disturbed = true;
            }
        }

        // ACK of the peer's data (once the peer's sequence space is known: a connection picked
        // up mid-stream may carry ACKs of data sent before the capture began).
        if f.ack() && c.dirs[j].started {
            let pure = seg.payload_len == 0 && !f.syn() && !f.fin() && !f.rst();
            // A duplicate ACK repeats its sender's window and sequence too (a window update
            // is not one; RFC 5681).
            let same = pure
                && seg.window != 0
                && c.dirs[i].window == prev_window
                && (!c.dirs[i].started || seg.seq == c.dirs[i].nxt);
            // The segment size of a sender with timestamps (the usual case: MSS − 12).
            let mss = u32::from(c.dirs[i].mss.unwrap_or(1460)).saturating_sub(12);
            let peer = &mut c.dirs[j];
            let beyond = seq_gt(seg.ack, peer.nxt);
            let repeat = same && peer.acked == Some(seg.ack);
            let news = peer.loss.on_peer_ack(
                seg.ts_ns,
                seg.ack,
                peer.acked,
                peer.nxt,
                seg.sack.as_slice(),
                same,
                pure,
                keep_ack,
                mss,
            );
            let acked_before = peer.acked;
            if peer.acked.is_none_or(|a| seq_gt(seg.ack, a)) {
                peer.acked = Some(seg.ack);
            }
            if beyond {
                // It acknowledges data the capture never saw: that data was sent, so the
                // sender's sequence moves up, and no timing is inferred across the gap.
                if !peer.unseen_flagged {
                    fl.set(SegFlags::ACK_LOST_SEGMENT);
                    peer.unseen_flagged = true;
                }
                peer.nxt = seg.ack;
                peer.nagle.on_gap();
            }
            if news.capture_gaps > 0 {
                // It covers a range the capture skipped (a hole it never filled).
                fl.set(SegFlags::ACK_LOST_SEGMENT);
                peer.nagle.on_gap();
            }
            if pure {
                // The window grew by a full segment: the reader's application read.
                let opened = edge.is_some() && c.dirs[i].window >= prev_window.saturating_add(mss);
                let peer = &mut c.dirs[j];
                peer.nagle
                    .on_peer_ack(seg.ack, pkt, edge, acked_before, opened);
            }
            // The server's first pure ACK of the whole request: the request had arrived.
            if pure
                && from_server
                && c.phase == Phase::Request
                && let Some(x) = c.cur.as_mut()
                && x.req_ack.is_none()
                && !seq_gt(x.req_end, seg.ack)
            {
                x.req_ack = Some(pkt);
            }
            if news.dup {
                fl.set(SegFlags::DUPLICATE_ACK);
            } else if repeat {
                fl.set(SegFlags::REPEAT_ACK);
            }
            self.stats.duplicate_acks += u64::from(news.dup);
            self.stats.spurious_retransmissions += u64::from(news.dsack);
            self.stats.capture_gaps += u64::from(news.capture_gaps);
            self.stats.quality.missing_segments += u64::from(news.capture_gaps);
            self.stats.quality.missing_bytes += news.gap_bytes;
            self.hub.on_ack_of(c, j, seg.ack);
            if let Some(ep) = news.closed {
                self.hub.on_episode(c, ep);
            }
            super::bulk::on_ack(c, i, pkt, seg.ack, news.gap_bytes);
        }

        // The sender's previous segment was not captured (lost before the capture point, or
        // by the capture): no timing across it.
        let jumped = !f.syn() && !f.rst() && c.dirs[i].started && seq_gt(seg.seq, c.dirs[i].nxt);
        if !f.syn() && !f.rst() && c.dirs[i].seen_nxt.is_some_and(|s| seq_gt(seg.seq, s)) {
            fl.set(SegFlags::LOST_SEGMENT);
        }
        if jumped {
            self.stats.quality.sequence_gaps += 1;
            c.dirs[i].nagle.on_gap();
        }
        // A keep-alive probe: 0 or 1 byte just below the next sequence number.
        let keep_alive = seg.payload_len <= 1
            && !(f.syn() || f.fin() || f.rst())
            && c.dirs[i].started
            && seg.seq == c.dirs[i].nxt.wrapping_sub(1);
        let prev_active = c.last_active_ns;
        c.prev_active_ns = prev_active;
        if keep_alive {
            fl.set(SegFlags::KEEP_ALIVE);
            self.stats.keep_alives += 1;
        } else {
            c.last_active_ns = Some(seg.ts_ns);
        }

        // Data.
        if seg.payload_len > 0 && !keep_alive {
            // It reaches the right edge of the window the peer advertised.
            let end = seg.seq.wrapping_add(seg.payload_len);
            if c.dirs[i].syn_seen
                && c.dirs[j].syn_seen
                && c.dirs[i]
                    .acked
                    .is_some_and(|a| a.wrapping_add(c.dirs[j].window) == end)
            {
                fl.set(SegFlags::WINDOW_FULL);
            }
            let d = &mut c.dirs[i];
            if !d.started {
                d.started = true;
                d.isn = seg.seq.wrapping_sub(1);
                d.nxt = seg.seq;
            }
            let end = seg.seq.wrapping_add(seg.payload_len);

            d.unseen_flagged = false;
            if seq_gt(end, d.nxt) {
                // Partly sent before (re-segmented after a loss): Wireshark's retransmission
                // (it starts below the highest sequence sent; not the byte before it, where a
                // zero-window probe sits). Its new bytes are new data to the trackers.
                if seq_gt(d.nxt, seg.seq) && seg.seq != d.nxt.wrapping_sub(1) {
                    fl.set(SegFlags::RETRANSMISSION);
                }
                d.loss.on_new_data(pkt, seg.seq, d.nxt, d.acked, seg.ip_id);
                // A FIN with the data takes one more sequence number.
                d.nxt = end.wrapping_add(u32::from(f.fin()));
                self.stats.data_segments += 1;
                self.stats.quality.captured_bytes += u64::from(seg.payload_len);
                // Re-orient a guessed connection (picked up mid-stream).
                if c.reason < Reason::Payload {
                    reorient_guess(c, &self.shared, &key, i, seg.payload);
                }
                let from_server = c.server == i;
                let pkt = Pkt { from_server, ..pkt };
                self.hub.on_new_data(c, i, pkt, end, seg.payload);
                if let Some(b) = super::bulk::on_new_data(c, i, pkt, seg.seq, end) {
                    self.hub.bulk_turn_ended(c, i, *b);
                }
            } else {
                let old = d
                    .loss
                    .on_old_data(pkt, seg.seq, end, d.nxt, d.acked, c.rtt_ns, seg.ip_id);
                let pkt = Pkt {
                    from_server: c.server == i,
                    ..pkt
                };
                self.hub.on_old_data(c, pkt, seg.seq, seg.payload);
                match old {
                    Old::OutOfOrder => {
                        self.stats.out_of_order_segments += 1;
                        fl.set(SegFlags::OUT_OF_ORDER);
                    }
                    Old::Retransmission {
                        spurious,
                        class,
                        at_dupack,
                        sacked,
                    } => {
                        let timeout = class == RetxClass::Timeout;
                        let wasted = spurious || sacked;
                        super::bulk::on_retransmission(c, i, pkt, seg.seq, wasted, timeout);
                        // Resent into the receiver's closed window: a probe of a full window
                        // (`ppa-inconsistent_printer`), the reader's stop, not a loss.
                        if c.dirs[j].zero.active() {
                            c.dirs[i].loss.note_window_closed();
                        }
                        let d = &mut c.dirs[i];
                        self.stats.retransmitted_segments += 1;
                        self.stats.spurious_retransmissions += u64::from(spurious);
                        d.disturbed = true;
                        fl.set(SegFlags::RETRANSMISSION);
                        if spurious {
                            fl.set(SegFlags::SPURIOUS_RETRANSMISSION);
                        }
                        if at_dupack {
                            fl.set(SegFlags::FAST_RETRANSMISSION);
                        } else if class == RetxClass::Fast {
                            fl.set(SegFlags::FAST_RECOVERY);
                        }
                        match class {
                            RetxClass::Fast | RetxClass::Quick => {
                                self.stats.fast_retransmissions += 1;
                            }
                            RetxClass::Timeout => {
                                self.stats.rto_retransmissions += 1;
                                fl.set(SegFlags::RTO_RETRANSMISSION);
                            }
                            RetxClass::Probe => {
                                self.stats.tail_loss_probes += 1;
                                fl.set(SegFlags::TAIL_LOSS_PROBE);
                            }
                        }
                    }
                }
            }
        } else if seg.seq_len() > 0 {
            let d = &mut c.dirs[i];
            let end = seg.seq.wrapping_add(seg.seq_len());
            if !d.started {
                d.started = true;
                d.isn = seg.seq.wrapping_sub(1);
                d.nxt = end;
            } else if seq_gt(end, d.nxt) {
                if jumped {
                    // A bare FIN past data the capture never saw: remember the range, or its
                    // retransmission would look like a resend of captured data.
                    d.loss.open_hole(d.nxt, seg.seq, seg.ip_id);
                }
                d.nxt = end;
            } else if f.fin() && !f.rst() {
                // A FIN again.
                fl.set(SegFlags::RETRANSMISSION);
            }
        } else if jumped && seg.payload_len == 0 {
            // An empty segment past the highest byte captured: the data before it was sent.
            let d = &mut c.dirs[i];
            d.loss.open_hole(d.nxt, seg.seq, seg.ip_id);
            d.nxt = seg.seq;
        }

        if !f.rst() && c.dirs[i].started {
            let e = seg.seq.wrapping_add(seg.seq_len());
            let d = &mut c.dirs[i];
            if d.seen_nxt.is_none_or(|s| seq_gt(e, s)) {
                d.seen_nxt = Some(e);
            }
        }

        // Teardown.
        if (f.fin() || f.rst()) && c.first_close.is_none() {
            c.first_close = Some(pkt);
            // A close that cut a response short of its framing's end ended no idle
            // connection, however long the response had stalled; nor did one whose end the
            // capture cannot tell (not taken as complete). A header the snap length cut
            // (`HeadUnseen`) says nothing either way: the silence before the close is still
            // the connection's idle time, as before framing was read (session 17: taking it
            // as cut lost the idle-timeout story of every live run against nginx, whose
            // header the default 256-byte snap length cuts).
            let cut = c.phase == Phase::Response
                && c.cur.is_some_and(|x| {
                    !matches!(x.framing, Framing::Open | Framing::HeadUnseen) && !x.answered()
                });
            c.idle_before_close_ns = prev_active.filter(|_| !cut).map(|t| (seg.ts_ns - t).max(0));
        }
        if f.fin() && i == c.server && c.first_close.is_some_and(|p| !p.from_server) {
            c.crossed_fin |= c.crossed_by(seg);
        }
        if f.fin() {
            c.dirs[i].fin = true;
        }
        if f.rst() {
            self.stats.resets += 1;
            let after_fin = c
                .first_close
                .filter(|p| p.flags.fin() && p.frame != pkt.frame);
            let idle_ns = prev_active.map_or(0, |t| (seg.ts_ns - t).max(0));
            if after_fin.is_some() {
                fl.set(SegFlags::RESET_AFTER_FIN);
            }
            if idle_ns >= IDLE_RESET_NS {
                fl.set(SegFlags::RESET_AFTER_IDLE);
            }
            let forged = c.dirs[i].forged(seg.ttl, seg.reserved, false);
            // The closed socket of an earlier reset answering a leftover segment: that reset's
            // consequence, not a reset of its own.
            if c.after_reset != Some(i as u8) {
                self.hub.on_reset(
                    c,
                    pkt,
                    ResetContext {
                        after_fin,
                        idle_ns,
                        forged,
                        ..ResetContext::default()
                    },
                );
            }
        }
        if (f.rst() || (c.dirs[0].fin && c.dirs[1].fin))
            && let Some(c) = self.conns.remove(&key)
        {
            if f.rst() {
                if self.reset_keys.len() >= super::MAX_UNTRACKED_KEYS {
                    self.reset_keys.clear();
                }
                self.reset_keys.insert(key, i as u8);
            }
            self.close(c);
        }
        fl
    }
}

impl Analyzer {
    /// A SYN on a 4-tuple with state: `None` for a copy of a frame (a mirror, merged
    /// captures); else whether the connection stays (the same SYN again, a retransmission:
    /// `Some(true)`, the filter has seen it) or was closed for a new one reusing the 4-tuple
    /// (`Some(false)`). Kept out of line: the per-packet path stays small.
    #[cold]
    #[inline(never)]
    fn syn_on_open_conn(&mut self, key: ConnKey, i: usize, seg: &TcpSegment<'_>) -> Option<bool> {
        let old = self.conns.get_mut(&key)?;
        if old.dirs[i].dups.is_copy(seg) {
            self.stats.quality.duplicate_frames += 1;
            return None;
        }
        let d = &old.dirs[i];
        let repeat = old.syn.first_syn.is_some()
            && d.started
            && d.isn == seg.seq
            && d.nxt == seg.seq.wrapping_add(1);
        if !repeat && let Some(old) = self.conns.remove(&key) {
            self.close(old);
        }
        Some(repeat)
    }
}

/// A reset from endpoint `i` while the peer's SYN waits for its answer (SYN-SENT), that does
/// not acknowledge the SYN: RFC 9293 §3.10.7.3 (and Linux) drop it, and the handshake can go
/// on (zeek-rst-inject-rae: a forged reset acknowledging the SYN's own sequence number, then
/// the server's real SYN/ACK). A refusal (`[R.]` acknowledging the SYN) is not one.
#[inline]
fn ignored_in_syn_sent(c: &Conn, i: usize, seg: &TcpSegment<'_>) -> bool {
    let j = 1 - i;
    !c.synack_seen
        && !c.dirs[i].started
        && c.syn.first_syn.is_some()
        && c.dirs[j].syn_seen
        && !(seg.flags.ack() && seg.ack == c.dirs[j].isn.wrapping_add(1))
}

/// A connection ends with a reset it had to ignore ([`ignored_in_syn_sent`]): when its sender
/// sent more afterwards (the handshake went on), it ended nothing and is told only when its
/// header shows it came from elsewhere ([`crate::event::Forged`]); otherwise it was the last
/// word of its sender and is told as the reset it looked like.
impl Analyzer {
    #[cold]
    #[inline(never)]
    pub(super) fn judge_stray_reset(&mut self, c: &Conn) {
        let Some(s) = c.stray_rst else {
            return;
        };
        let d = &c.dirs[s.from];
        let went_on = d.ttl_n > s.before;
        let forged = d.forged(s.ttl, s.reserved, went_on);
        if went_on && forged.is_none() {
            return;
        }
        let context = ResetContext {
            forged,
            ..ResetContext::default()
        };
        self.hub.on_reset(c, s.pkt, context);
    }
}

/// State for a new connection, oriented; its endpoints are noted for [`Shared`] (servers of
/// handshakes, both ends of connections picked up mid-stream). Once per connection: kept out
/// of line so the per-packet path stays small.
#[inline(never)]
fn open_conn(
    cfg: &AnalyzerConfig,
    shared: &mut Shared,
    key: ConnKey,
    i: usize,
    seg: &TcpSegment<'_>,
) -> Conn {
    let c = Conn::new(cfg, shared, key, i, seg);
    if c.reason == Reason::Handshake {
        shared.note(if c.server == 0 { key.lo } else { key.hi });
    } else {
        shared.note(key.lo);
        shared.note(key.hi);
    }
    c
}

/// New data from endpoint `i` of a connection whose server end was guessed: re-orient it on
/// the first telling payload, or (a guess from the lower port, before its first exchange
/// completed) when its ends are now shared unequally. An exchange in progress under the old
/// guess is dropped. Only connections picked up mid-stream get here.
#[cold]
#[inline(never)]
fn reorient_guess(c: &mut Conn, shared: &Shared, key: &ConnKey, i: usize, payload: &[u8]) {
    let (server, reason) = if c.cur.is_none()
        && let Some(s) = reorient(i, payload)
    {
        (s, Reason::Payload)
    } else if c.reason == Reason::LowerPort
        && !c.carried_turns()
        && let Some(s) = shared.server(key)
    {
        (s, Reason::Shared)
    } else {
        return;
    };
    if server != c.server {
        c.cur = None;
        c.phase = Phase::Idle;
    }
    c.server = server;
    c.reason = reason;
}

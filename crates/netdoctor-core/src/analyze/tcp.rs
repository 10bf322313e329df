//! The per-segment path: handshake, window, ACKs of the peer's data, new and old data,
//! teardown. Statically dispatched: the trackers in [`Dir`](super::conn::Dir) are updated in
//! place, and only what they conclude goes to the [`Hub`](super::hub::Hub) as events.

use std::collections::hash_map::Entry;

use super::conn::Conn;
use super::flow::{ConnKey, conn_key, seq_gt};
use super::http::Phase;
use super::orient::{Reason, Shared, reorient};
use super::{Analyzer, AnalyzerConfig, MAX_CONNECTIONS};
use crate::decode::TcpSegment;
use crate::event::Pkt;
use crate::track::loss::Old;

impl Analyzer {
    pub(super) fn on_segment(&mut self, seg: &TcpSegment<'_>) {
        let (key, i) = conn_key(seg.src, seg.dst);
        let j = 1 - i;
        let f = seg.flags;
        let opening = f.syn() && !f.ack();

        if opening && let Some(old) = self.conns.get(&key) {
            // The same SYN again (same ISN from the same side) is a retransmission; otherwise
            // a new connection reuses the 4-tuple.
            let d = &old.dirs[i];
            let repeat = old.syn.first_syn.is_some()
                && d.started
                && d.isn == seg.seq
                && d.nxt == seg.seq.wrapping_add(1);
            if !repeat && let Some(old) = self.conns.remove(&key) {
                self.close(old);
            }
        }
        let n_conns = self.conns.len();
        let c = match self.conns.entry(key) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                // Only a SYN, a SYN/ACK or data opens state: trailing ACKs/FINs of a closed
                // connection must not resurrect it.
                if !(f.syn() || seg.payload_len > 0) || f.rst() {
                    return;
                }
                if n_conns >= MAX_CONNECTIONS {
                    self.stats.connections_untracked += 1;
                    return;
                }
                self.stats.connections += 1;
                if f.syn() {
                    self.stats.connections_with_handshake += 1;
                }
                v.insert(open_conn(&self.cfg, &mut self.shared, key, i, seg))
            }
        };
        let from_server = c.server == i;
        let pkt = Pkt {
            frame: seg.frame,
            ts_ns: seg.ts_ns,
            from_server,
            flags: f,
            len: seg.payload_len,
        };
        c.last = Some(pkt);

        // Handshake.
        if f.syn() {
            let d = &mut c.dirs[i];
            let repeat = d.started && d.isn == seg.seq && (opening || c.synack_seen);
            if repeat {
                self.stats.syn_retransmits += 1;
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
            c.syn.done = Some(pkt);
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
                    self.hub.handshake_rtt.record_ns(rtt);
                }
            }
        }

        // The peer's view of this endpoint's window before this segment: the right edge it
        // may send up to (known only when both SYNs, hence the window scale, were seen).
        let edge = (c.dirs[i].syn_seen && c.dirs[j].syn_seen)
            .then(|| c.dirs[j].acked.map(|a| a.wrapping_add(c.dirs[i].window)))
            .flatten();

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
            let mss = u32::from(c.dirs[i].mss.unwrap_or(1460)).saturating_sub(40);
            let peer = &mut c.dirs[j];
            let news = peer.loss.on_peer_ack(
                seg.ts_ns,
                seg.ack,
                peer.acked,
                peer.nxt,
                seg.sack.as_slice(),
                pure,
                mss,
            );
            if peer.acked.is_none_or(|a| seq_gt(seg.ack, a)) {
                peer.acked = Some(seg.ack);
            }
            if pure {
                peer.nagle.on_peer_ack(seg.ack, pkt, edge);
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
            self.stats.duplicate_acks += u64::from(news.dup);
            self.stats.spurious_retransmissions += u64::from(news.dsack);
            self.stats.capture_gaps += u64::from(news.capture_gaps);
            if let Some(ep) = news.closed {
                self.hub.on_episode(c, ep);
            }
        }

        // Data.
        if seg.payload_len > 0 {
            let d = &mut c.dirs[i];
            if !d.started {
                d.started = true;
                d.isn = seg.seq.wrapping_sub(1);
                d.nxt = seg.seq;
            }
            let end = seg.seq.wrapping_add(seg.payload_len);
            if seq_gt(end, d.nxt) {
                d.loss.on_new_data(pkt, seg.seq, d.nxt, d.acked, seg.ip_id);
                d.nxt = end;
                self.stats.data_segments += 1;
                // Re-orient a guessed connection (picked up mid-stream).
                if c.reason < Reason::Payload {
                    reorient_guess(c, &self.shared, &key, i, seg.payload);
                }
                let from_server = c.server == i;
                let pkt = Pkt { from_server, ..pkt };
                self.hub.on_new_data(c, i, pkt, end, seg.payload);
            } else {
                match d
                    .loss
                    .on_old_data(pkt, seg.seq, end, d.nxt, d.acked, c.rtt_ns, seg.ip_id)
                {
                    Old::OutOfOrder => self.stats.out_of_order_segments += 1,
                    Old::Retransmission { spurious } => {
                        self.stats.retransmitted_segments += 1;
                        self.stats.spurious_retransmissions += u64::from(spurious);
                        d.disturbed = true;
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
                d.nxt = end;
            }
        }

        // Teardown.
        if f.fin() || f.rst() {
            c.first_close.get_or_insert(pkt);
        }
        if f.fin() {
            c.dirs[i].fin = true;
        }
        if f.rst() {
            self.stats.resets += 1;
            self.hub.on_reset(c, pkt);
        }
        if (f.rst() || (c.dirs[0].fin && c.dirs[1].fin))
            && let Some(c) = self.conns.remove(&key)
        {
            self.close(c);
        }
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
        && c.exchanges == 0
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

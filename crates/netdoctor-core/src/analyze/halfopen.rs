//! Half-open connections (a SYN seen, no handshake completed) under a SYN flood or a scan.
//!
//! Spoofed SYNs each open a connection that never completes; tracked in full (about 1.8 KB
//! each) they would fill the table up to [`super::MAX_CONNECTIONS`] (over 100 MB). At most
//! [`MAX_HALF_OPEN`] half-open connections are kept in full; past it the oldest one is evicted
//! (counted in [`super::CaptureStats::half_open_evicted`]) into a compact record, a [`Tomb`]
//! (its ends, its handshake state, its ISNs: about 300 bytes), of which at most
//! [`MAX_TOMBS`] are kept. The oldest are the ones the kernel keeps in its SYN queue and
//! retransmits SYN/ACKs for (newer ones get SYN cookies), so a full tomb table keeps its
//! records and the connection evicted next is ended at once.
//!
//! A tomb goes on counting the repeated SYNs and SYN/ACKs of its connection (the
//! `syn_retransmit` evidence of a flood: a SYN/ACK repeated 1 s, 3 s, 7 s later to a
//! spoofed client that never answers) and ends as the connection would have: with a reset,
//! a new connection on the 4-tuple, the idle timeout or the end of the capture, handing the
//! detectors the same [`crate::event::ConnDone`]. What a tomb does not do: the handshake's
//! last ACK or data of an evicted connection end the tomb there (the handshake counts as
//! completed), and its data is then analyzed as a connection picked up mid-stream.
//!
//! The caps are per analyzer: with `analyze -j N` each worker has its own (as for
//! [`super::MAX_CONNECTIONS`]), so a capture with more than [`MAX_HALF_OPEN`] half-open
//! connections at once may differ between `-j 1` and `-j N` in what the evicted connections'
//! later data shows.

use std::collections::{HashMap, VecDeque};

use super::Analyzer;
use super::conn::Conn;
use super::flow::ConnKey;
use crate::decode::TcpSegment;
use crate::event::{ConnDone, Ends, Event, Pkt};
use crate::track::dup::DUP_WINDOW_WEAK_NS;
use crate::track::flags::SegFlags;
use crate::track::syn::SynState;

/// Half-open connections kept in full at once. 1024 would keep the table at 2048 buckets
/// (3.7 MB) under a flood (2048 lets it double: 7.5 MB) but is below the scan of the corpus's
/// `ppa-synscan.pcapng`, whose report must stay the same with `-j N` (each worker has its own
/// cap): 1024 saved 1.2 MiB in the soak.
pub const MAX_HALF_OPEN: usize = 2048;

/// Evicted half-open connections kept as compact records (7/8 of a power of two: the table
/// stays at 8192 buckets).
pub const MAX_TOMBS: usize = 7168;

/// An evicted half-open connection: what its `ConnDone` needs, and its ISNs to recognise
/// repeated SYNs and SYN/ACKs.
pub(super) struct Tomb {
    pub ends: Ends,
    /// Index of the server endpoint (in the key's order).
    pub server: u8,
    pub isn: [Option<u32>; 2],
    pub syn: SynState,
    pub first_close: Option<Pkt>,
    pub first_frame: u64,
    pub last_ns: i64,
    /// The last SYN or SYN/ACK (time, sequence number, checksum, IP id): a copy of it (a port
    /// mirror, merged captures) is not a retransmission.
    last_sig: (i64, u32, u16, u16),
}

impl Tomb {
    pub(super) fn of(c: &Conn) -> Tomb {
        let isn = |k: usize| c.dirs[k].started.then_some(c.dirs[k].isn);
        Tomb {
            ends: c.ends(),
            server: c.server as u8,
            isn: [isn(0), isn(1)],
            syn: c.syn,
            first_close: c.first_close,
            first_frame: c.first_frame,
            last_ns: c.last.map_or(i64::MIN, |p| p.ts_ns),
            last_sig: (i64::MIN, 0, 0, 0),
        }
    }

    /// Whether `seg` copies the last SYN or SYN/ACK seen (within the weak duplicate window:
    /// a retransmission is at least a second later); if not, it is remembered.
    pub(super) fn is_copy(&mut self, seg: &TcpSegment<'_>) -> bool {
        let (ts, seq, sum, id) = self.last_sig;
        let dt = seg.ts_ns.saturating_sub(ts);
        if seq == seg.seq
            && sum == seg.checksum
            && id == seg.ip_id.unwrap_or(0)
            && (0..=DUP_WINDOW_WEAK_NS).contains(&dt)
        {
            return true;
        }
        self.last_sig = (seg.ts_ns, seg.seq, seg.checksum, seg.ip_id.unwrap_or(0));
        false
    }

    pub(super) fn done(&self) -> ConnDone {
        ConnDone {
            ends: self.ends,
            syn: self.syn,
            first_req: None,
            exchanges: 0,
            first_close: self.first_close,
            idle_before_close_ns: None,
            asked: Default::default(),
            tls: Default::default(),
            crossed_fin: false,
        }
    }
}

/// The half-open connections of the table in the order they opened, and the tombs.
#[derive(Default)]
pub(super) struct HalfOpen {
    /// (key, first frame) of connections opened by a SYN or SYN/ACK, oldest first. Entries
    /// of connections that completed or ended stay until skipped or pruned.
    pub order: VecDeque<(ConnKey, u64)>,
    /// Connections in the table marked half-open ([`Conn::half_open`]).
    pub live: usize,
    pub tombs: HashMap<ConnKey, Tomb, foldhash::fast::RandomState>,
}

impl HalfOpen {
    /// A connection of the table stopped being half-open or left the table.
    #[inline]
    pub(super) fn left(&mut self, c: &mut Conn) {
        if c.half_open {
            c.half_open = false;
            self.live -= 1;
        }
    }

    /// A connection opened by a SYN or SYN/ACK joined the table.
    #[inline]
    pub(super) fn opened(&mut self, key: ConnKey, frame: u64) {
        self.live += 1;
        self.order.push_back((key, frame));
    }

    /// The oldest connection of the table still half-open.
    pub(super) fn oldest<S: std::hash::BuildHasher>(
        &mut self,
        conns: &HashMap<ConnKey, Conn, S>,
    ) -> Option<ConnKey> {
        while let Some((k, f)) = self.order.pop_front() {
            if is_half_open(conns, &k, f) {
                return Some(k);
            }
        }
        None
    }
}

fn is_half_open<S: std::hash::BuildHasher>(
    conns: &HashMap<ConnKey, Conn, S>,
    k: &ConnKey,
    frame: u64,
) -> bool {
    conns
        .get(k)
        .is_some_and(|c| c.half_open && c.first_frame == frame)
}

impl Analyzer {
    /// Makes room for a new half-open connection: the oldest one leaves the table, into a
    /// tomb while there is room, else ended at once.
    #[cold]
    #[inline(never)]
    pub(super) fn evict_half_open(&mut self) {
        let Some(key) = self.half.oldest(&self.conns) else {
            return;
        };
        let Some(mut c) = self.conns.remove(&key) else {
            return;
        };
        self.stats.half_open_evicted += 1;
        if self.half.tombs.len() < MAX_TOMBS {
            self.judge_stray_reset(&c);
            self.half.left(&mut c);
            self.hub.flush_stalls(&mut c);
            self.half.tombs.insert(key, Tomb::of(&c));
        } else {
            self.close(c);
        }
    }

    /// Drops entries of `order` that no longer stand for a half-open connection, once it
    /// holds twice the cap (at most every [`MAX_HALF_OPEN`] openings: after it, it holds at
    /// most the cap).
    #[cold]
    #[inline(never)]
    pub(super) fn prune_half_open(&mut self) {
        let conns = &self.conns;
        self.half.order.retain(|(k, f)| is_half_open(conns, k, *f));
    }

    /// A segment on the 4-tuple of a tomb: `Some` when the tomb took it (a SYN or SYN/ACK
    /// of its handshake, repeated or not), `None` when the tomb ended with it (the
    /// handshake's last ACK, data, a FIN or a reset, a SYN with a new ISN) and the segment
    /// goes on as one of a connection without state.
    #[cold]
    #[inline(never)]
    pub(super) fn on_tomb(
        &mut self,
        key: ConnKey,
        i: usize,
        seg: &TcpSegment<'_>,
    ) -> Option<SegFlags> {
        let t = self.half.tombs.get_mut(&key)?;
        let f = seg.flags;
        let from_server = usize::from(t.server) == i;
        let pkt = Pkt {
            frame: seg.frame,
            ts_ns: seg.ts_ns,
            from_server,
            flags: f,
            len: seg.payload_len,
        };
        let mut fl = SegFlags::default();
        let opening = f.syn() && !f.ack();
        let same = t.isn[i] == Some(seg.seq);
        if f.syn() && !f.rst() && seg.payload_len == 0 && (same || !opening) {
            if t.is_copy(seg) {
                self.stats.quality.duplicate_frames += 1;
                fl.set(SegFlags::DUPLICATE_FRAME);
                return Some(fl);
            }
            // As on a tracked connection (see `tcp`): the same ISN again is a repeat.
            if same && (opening || t.syn.synacks > 0) {
                self.stats.syn_retransmits += 1;
                fl.set(SegFlags::RETRANSMISSION);
            }
            t.isn[i] = Some(seg.seq);
            t.last_ns = seg.ts_ns;
            if opening {
                t.syn.on_syn(pkt);
            } else {
                t.syn.on_synack(pkt);
            }
            return Some(fl);
        }
        if !f.syn() && f.ack() && !from_server && t.syn.synacks > 0 && t.syn.done.is_none() {
            t.syn.on_client_ack(pkt);
        }
        if f.fin() || f.rst() {
            t.first_close.get_or_insert(pkt);
        }
        if f.rst() {
            self.stats.resets += 1;
        }
        let t = self.half.tombs.remove(&key)?;
        self.hub.emit(&Event::ConnDone(&t.done()));
        None
    }
}

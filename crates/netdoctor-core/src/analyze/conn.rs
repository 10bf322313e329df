//! Connection state: per direction the sequence space, the window and the trackers
//! ([`crate::track`]); per connection the orientation, the handshake and the exchange source
//! with the exchanges in progress ([`Source`]). Only sequence numbers and a few `Copy` packet summaries are kept; payload
//! bytes never are.

use std::net::SocketAddr;

use super::AnalyzerConfig;
use super::flow::ConnKey;
use super::h2::H2Conn;
use super::http::{Exchange, Phase};
use super::orient::{Reason, orient};
use crate::decode::TcpSegment;
use crate::event::{Ends, Pkt};
use crate::track::dup::DupFilter;
use crate::track::loss::LossDir;
use crate::track::nagle::NagleDir;
use crate::track::syn::SynState;
use crate::track::zero::ZeroDir;

/// One direction of a connection: the data sent by one endpoint.
#[derive(Clone, Copy, Default)]
pub(super) struct Dir {
    pub started: bool,
    /// This endpoint's SYN was captured (its window scale option, or its absence, is known).
    pub syn_seen: bool,
    pub isn: u32,
    /// Highest sequence number sent + 1 (absolute).
    pub nxt: u32,
    /// Highest ACK received from the peer for this direction's data.
    pub acked: Option<u32>,
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    /// Last advertised receive window of this endpoint, scaled when both sides negotiated it.
    pub window: u32,
    pub fin: bool,
    pub nagle: NagleDir,
    pub loss: LossDir,
    /// Zero-window periods of this endpoint as a receiver, and the smallest window of the
    /// period in progress, bytes. A receiver that never advertises a true zero (some embedded
    /// stacks shrink their window to a few bytes instead) is near zero below one MSS and a
    /// quarter of its largest window, once both SYNs (hence the scale and the MSS) are known.
    pub zero: ZeroDir,
    pub zero_min: u32,
    /// The largest window this endpoint advertised (bytes), and whether it ever advertised
    /// a true zero (then only true zeros count: it is a stack that closes its window).
    pub max_window: u32,
    pub saw_zero: bool,
    /// Since this direction's last new data: a retransmission, or the peer closed its
    /// window. A late ACK then is not a delayed-ACK stall.
    pub disturbed: bool,
    /// The last few segments, to drop copies of them ([`crate::track::dup`]).
    pub dups: DupFilter,
    /// Highest sequence number + 1 of this direction's segments actually captured (`nxt`
    /// also moves up to ACKs of data the capture never saw).
    pub seen_nxt: Option<u32>,
    /// An ACK of data the capture never saw was flagged since this direction's last
    /// captured data (flagged once per gap, as tshark does).
    pub unseen_flagged: bool,
    /// This direction's request/response turn, and before it is watched as a bulk transfer
    /// when its first bytes went, so its chart starts there ([`super::bulk::PreBulk`]).
    pub pre_bulk: super::bulk::PreBulk,
    /// A packet of this endpoint was captured, and one carrying payload: a connection with
    /// one end's data and none of the other end's packets was captured in one direction only.
    pub seen: bool,
    pub data_segs: u8,
}

/// Where a connection's exchanges come from: direction turns (HTTP/1 recognised, TLS
/// records, any request/response protocol: `super::http`), or HTTP/2 frames (`super::h2`),
/// chosen at the client's first data.
pub(super) enum Source {
    Turns,
    H2(Box<H2Conn>),
}

pub(super) struct Conn {
    pub ep: [SocketAddr; 2],
    /// Index of the server endpoint and why.
    pub server: usize,
    pub reason: Reason,
    pub dirs: [Dir; 2],
    pub syn_ts: Option<i64>,
    pub synack_seen: bool,
    pub rtt_ns: Option<i64>,
    pub phase: Phase,
    pub cur: Option<Exchange>,
    pub source: Source,
    pub syn: SynState,
    /// Completed exchanges on this connection and the first request's first packet.
    pub exchanges: u32,
    pub first_req: Option<Pkt>,
    /// Pipelined or multiplexed traffic seen (HTTP/1 pipelining, the HTTP/2 preface): the
    /// exchanges found from turns are approximate.
    pub ambiguous: bool,
    /// Last packet seen on the connection (ends open zero-window periods; idle eviction).
    pub last: Option<Pkt>,
    /// The first FIN or RST (who closed first).
    pub first_close: Option<Pkt>,
    /// Time of the last packet that was not a keep-alive probe (how long a reset followed
    /// silence).
    pub last_active_ns: Option<i64>,
    /// The frame that opened the state (orders the connections still open at the end).
    pub first_frame: u64,
    /// Per direction, its bulk-transfer view once it carried one ([`super::bulk`]).
    pub bulk: [Option<Box<super::bulk::BulkDir>>; 2],
    /// Opened by a SYN or SYN/ACK, handshake not completed, no data yet (see
    /// `super::halfopen`).
    pub half_open: bool,
}

impl Conn {
    pub(super) fn new(
        cfg: &AnalyzerConfig,
        shared: &super::orient::Shared,
        key: ConnKey,
        i: usize,
        seg: &TcpSegment<'_>,
    ) -> Conn {
        let ep = if i == 0 {
            [seg.src, seg.dst]
        } else {
            [seg.dst, seg.src]
        };
        let (server, reason) = orient(cfg, shared, key, i, seg);
        Conn {
            ep,
            server,
            reason,
            dirs: [Dir::default(); 2],
            syn_ts: None,
            synack_seen: false,
            rtt_ns: None,
            phase: Phase::Idle,
            cur: None,
            source: Source::Turns,
            syn: SynState::default(),
            exchanges: 0,
            first_req: None,
            ambiguous: false,
            last: None,
            first_close: None,
            last_active_ns: None,
            first_frame: seg.frame,
            bulk: [None, None],
            half_open: false,
        }
    }

    /// The exchanges in progress, to charge a stall to: the one of the turns source, or every
    /// open HTTP/2 stream (a stall of the connection holds them all).
    pub(super) fn in_progress(&mut self) -> Box<dyn Iterator<Item = &mut Exchange> + '_> {
        match &mut self.source {
            Source::Turns => Box::new(self.cur.iter_mut()),
            Source::H2(h) => Box::new(h.in_progress()),
        }
    }

    /// The connection ends: the exchanges whose response began (the turns source's current
    /// one once its response arrives, the HTTP/2 streams answered), taken out.
    pub(super) fn take_answered(&mut self) -> Vec<Exchange> {
        match &mut self.source {
            Source::Turns => {
                if self.phase == Phase::Response {
                    self.cur.take().into_iter().collect()
                } else {
                    Vec::new()
                }
            }
            Source::H2(h) => h.take_answered(),
        }
    }

    /// The connection ends: the exchanges that the bytes an HTTP/2 reassembler still held
    /// complete (none for the turns source, which holds no bytes).
    pub(super) fn flush_held(&mut self) -> Vec<Exchange> {
        match &mut self.source {
            Source::Turns => Vec::new(),
            Source::H2(h) => h.flush(),
        }
    }

    /// HTTP/2 holes given up because too much data waited behind them (0 for turns).
    pub(super) fn reassembly_overflows(&self) -> u32 {
        match &self.source {
            Source::Turns => 0,
            Source::H2(h) => h.reassembly_overflows(),
        }
    }

    /// HTTP/2 streams ended in a capture gap (0 for the turns source).
    pub(super) fn h2_gap_cut(&self) -> u32 {
        match &self.source {
            Source::Turns => 0,
            Source::H2(h) => h.facts().gap_cut,
        }
    }

    /// Times the HTTP/2 framing was lost (0 for the turns source).
    pub(super) fn h2_framing_lost(&self) -> u32 {
        match &self.source {
            Source::Turns => 0,
            Source::H2(h) => h.framing_lost(),
        }
    }

    /// Captured in one direction only: one end sent data (two segments at least: one alone
    /// says little, e.g. a capture of one packet) and not one packet of the other end was
    /// captured (its ACKs went another way, or the capture filtered them). `Some(true)` when
    /// the server's packets are the ones captured.
    pub(super) fn one_way(&self) -> Option<bool> {
        let s = &self.dirs[self.server];
        let c = &self.dirs[1 - self.server];
        match (s.seen, c.seen) {
            (true, false) if s.data_segs >= 2 => Some(true),
            (false, true) if c.data_segs >= 2 => Some(false),
            _ => None,
        }
    }

    pub(super) fn ends(&self) -> Ends {
        Ends {
            client: self.ep[1 - self.server],
            server: self.ep[self.server],
        }
    }
}

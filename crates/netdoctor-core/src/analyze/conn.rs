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
use crate::event::{Ends, Forged, Pkt};
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
    /// The IP TTLs (hop limits) of this endpoint's packets other than resets: lowest,
    /// highest, how many; and whether any had reserved TCP bits set. A reset outside them came
    /// from elsewhere on the path ([`crate::event::Forged`]).
    pub ttl_lo: u8,
    pub ttl_hi: u8,
    pub ttl_n: u32,
    pub reserved_seen: bool,
    /// The IPv4 id of this endpoint's last packet, whether that packet was one segment (not
    /// coalesced by GRO/TSO, which carry the first of several ids), and how many steps its
    /// ids took of +1, of a small skip (2 to 64 after one segment) and of anything farther
    /// or backwards (see [`Dir::note_ip_id`]).
    pub last_ip_id: Option<u16>,
    pub last_single: bool,
    pub id_ones: u16,
    pub id_skips: u16,
    pub id_far: u16,
    /// Since this direction's last new data, its IP ids skipped: a small segment after a
    /// late ACK then is a resend, not one Nagle held (only Nagle stalls are dropped for it).
    pub id_skipped: bool,
    /// A packet of this endpoint was captured, and one carrying payload: a connection with
    /// one end's data and none of the other end's packets was captured in one direction only.
    pub seen: bool,
    pub data_segs: u8,
    /// Its TCP timestamps against the capture's clock: when its segments left, when a TSval
    /// was current (`track::tsclock`; the server's for queue wait, the client's for echoes).
    pub ts: crate::track::tsclock::TsClock,
    /// When this endpoint's latest packet (not a reset) was captured: a server segment right
    /// after the client's packet may have been released by it ([`super::http::paced_ns`]).
    pub last_ns: i64,
}

impl Dir {
    /// Notes the header traits of this endpoint's packet (not a reset).
    #[inline]
    pub(super) fn note_traits(&mut self, ttl: u8, reserved: u8) {
        if self.ttl_n == 0 {
            self.ttl_lo = ttl;
            self.ttl_hi = ttl;
        } else {
            self.ttl_lo = self.ttl_lo.min(ttl);
            self.ttl_hi = self.ttl_hi.max(ttl);
        }
        self.ttl_n = self.ttl_n.saturating_add(1);
        self.reserved_seen |= reserved != 0;
    }

    /// Notes the IPv4 id of this endpoint's packet (`single`: at most one segment); true when
    /// it skipped ids while they count one per packet: a packet of this endpoint the capture
    /// never saw went in between (lost before the capture point), so this one may be its
    /// resend.
    ///
    /// Linux numbers a connection's packets one by one: its steps are +1 (a GRO/TSO packet
    /// carries the first of its ids), and a small skip is a packet lost before the capture. A
    /// stack with one counter for the host (or, like Windows, for the path) steps by whatever
    /// the host sent in between: by far more than 64 or backwards once it is busy, by small
    /// skips as often as by +1 with a few connections. So the skips are believed while no step
    /// went far and +1 steps are at least as many as the skips, or, after a far step, while
    /// +1 steps are at least twice all others. A loss is a skip too: the look-alike of
    /// `client_drop.rs` lost the first response (skip), sent one more (+1), and lost the next
    /// body (skip) before the client's delayed ACK; asking for two +1 steps for each other
    /// step, as before, let that resend read as Nagle.
    ///
    /// An id of 0 is no id: Linux sends its SYN/ACKs (from the request socket, before the
    /// connection's counter exists) with 0, as do stacks that zero the id of every atomic
    /// datagram (RFC 6864). Only after 0xffff is it the counter's next value.
    #[inline]
    pub(super) fn note_ip_id(&mut self, id: Option<u16>, single: bool) -> bool {
        let Some(b) = id.filter(|&b| b != 0 || self.last_ip_id == Some(u16::MAX)) else {
            return false;
        };
        let mut skipped = false;
        if let Some(a) = self.last_ip_id {
            let step = b.wrapping_sub(a);
            let ones = u32::from(self.id_ones);
            let (skips, far) = (u32::from(self.id_skips), u32::from(self.id_far));
            let counted = if far == 0 {
                ones >= 1 && ones >= skips
            } else {
                ones >= 2 && ones >= 2 * (skips + far)
            };
            skipped = self.last_single && counted && (2..=64).contains(&step);
            if step == 1 {
                self.id_ones = self.id_ones.saturating_add(1);
            } else if !(1..=64).contains(&step) {
                self.id_far = self.id_far.saturating_add(1);
            } else if self.last_single {
                self.id_skips = self.id_skips.saturating_add(1);
            }
        }
        self.last_ip_id = Some(b);
        self.last_single = single;
        skipped
    }

    /// How a reset with `ttl` and `reserved` bits from this endpoint differs from its other
    /// packets: `None` when it does not (or there are none to compare with).
    pub(super) fn forged(&self, ttl: u8, reserved: u8, ignored: bool) -> Option<Forged> {
        if self.ttl_n == 0 {
            return None;
        }
        let f = Forged {
            ttl,
            ttl_lo: self.ttl_lo,
            ttl_hi: self.ttl_hi,
            others: self.ttl_n,
            reserved: reserved != 0 && !self.reserved_seen,
            ignored,
        };
        (f.ttl_differs() || f.reserved).then_some(f)
    }
}

/// A reset the receiver had to ignore (in SYN-SENT, one that does not acknowledge the SYN:
/// RFC 9293 §3.10.7.3); judged when the connection ends, against its sender's packets before
/// and after it.
#[derive(Clone, Copy)]
pub(super) struct StrayRst {
    pub pkt: Pkt,
    /// The sender's endpoint index, its TTL and reserved bits, and how many packets the
    /// sender had sent before it.
    pub from: usize,
    pub ttl: u8,
    pub reserved: u8,
    pub before: u32,
}

/// Where a connection's exchanges come from: direction turns (HTTP/1 recognised, TLS
/// records, any request/response protocol: `super::http`), or HTTP/2 frames (`super::h2`),
/// chosen at the client's first data; or none: DNS over TCP (port 53 at either end, chosen
/// when the connection opens), whose messages are lookups (`super::dns`, read from the same
/// segments before this path), not exchanges.
pub(super) enum Source {
    Turns,
    H2(Box<H2Conn>),
    Dns,
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
    /// A request's first segment held the next request too (HTTP/1 pipelining in one
    /// segment, `http::Exchange::pipelined`): every request of the connection is read for it.
    pub pipelines: bool,
    /// The server answered 101 Switching Protocols (WebSocket, h2c): what follows is another
    /// protocol whose server pushes nobody asked for, so no more exchanges are read here.
    pub upgraded: bool,
    /// An answer on this connection began with an HTTP/1.x status line.
    pub http_answered: bool,
    /// What the last HTTP/1.x request asked about the connection (`Connection:`, version),
    /// read on the connection's first three requests only ([`super::http`]).
    pub asked: crate::event::ClientAsked,
    /// Last packet seen on the connection (ends open zero-window periods; idle eviction).
    pub last: Option<Pkt>,
    /// The first FIN or RST (who closed first).
    pub first_close: Option<Pkt>,
    /// The silence before `first_close` (see [`crate::event::ConnDone`]).
    pub idle_before_close_ns: Option<i64>,
    /// Time of the last packet that was not a keep-alive probe (how long a reset followed
    /// silence).
    pub last_active_ns: Option<i64>,
    /// Its value before the current packet (the silence a new request followed).
    pub prev_active_ns: Option<i64>,
    /// The most segments one of its responses sent in one flight so far (the window the
    /// server grew: `super::flights::Flights::max_flight`; 0: not followed).
    pub grown_segs: u32,
    /// The frame that opened the state (orders the connections still open at the end).
    pub first_frame: u64,
    /// Per direction, its bulk-transfer view once it carried one ([`super::bulk`]).
    pub bulk: [Option<Box<super::bulk::BulkDir>>; 2],
    /// Opened by a SYN or SYN/ACK, handshake not completed, no data yet (see
    /// `super::halfopen`).
    pub half_open: bool,
    /// A reset the receiver had to ignore, judged when the connection ends.
    pub stray_rst: Option<StrayRst>,
    /// The server's echoes of the client's TSval clock (`track::echo`).
    pub echo: crate::track::echo::Echo,
    /// Opened by a segment arriving after endpoint `n` had reset this 4-tuple (data in flight
    /// when the reset left, or sent after it): until `n` sends anything but a reset, a reset
    /// from `n` is its closed socket answering that segment, a consequence of the first reset
    /// and not a second one (zeek-rst-inject-rae frame 9).
    pub after_reset: Option<u8>,
    /// How far the server had acknowledged the client's data when the answer in progress
    /// began: an ACK past it and past every client byte captured, on more of that answer,
    /// means the client sent a request the capture missed ([`Conn::request_unseen`]).
    pub resp_ack: Option<u32>,
    /// The TLS handshake's turns, read on the first turns (`super::http`).
    pub tls: crate::event::TlsSetup,
    /// The client's FIN came first at the capture point, and the server's did not acknowledge
    /// it: they crossed (see [`crate::event::ConnDone::crossed_fin`]).
    pub crossed_fin: bool,
}

impl Conn {
    /// The server's FIN `seg` came after the client's at the capture point but does not
    /// acknowledge it: the server closed on its own and the two FINs crossed (a capture at the
    /// client sees the client's first; `detect::short_connections::limit`).
    #[cold]
    pub(super) fn crossed_by(&self, seg: &crate::decode::TcpSegment<'_>) -> bool {
        let client = &self.dirs[1 - self.server];
        self.first_close.is_some_and(|p| p.flags.fin())
            && client.fin
            && seg.flags.ack()
            && client
                .seen_nxt
                .is_some_and(|end| super::flow::seq_gt(end, seg.ack))
    }

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
            source: if seg.src.port() == 53 || seg.dst.port() == 53 {
                Source::Dns
            } else {
                Source::Turns
            },
            syn: SynState::default(),
            exchanges: 0,
            first_req: None,
            ambiguous: false,
            pipelines: false,
            upgraded: false,
            http_answered: false,
            asked: crate::event::ClientAsked::Unknown,
            last: None,
            first_close: None,
            idle_before_close_ns: None,
            last_active_ns: None,
            prev_active_ns: None,
            grown_segs: 0,
            first_frame: seg.frame,
            bulk: [None, None],
            half_open: false,
            stray_rst: None,
            echo: Default::default(),
            after_reset: None,
            resp_ack: None,
            tls: Default::default(),
            crossed_fin: false,
        }
    }

    /// A request/response turn completed on the connection: an exchange, or a TLS
    /// handshake's turn (`super::tls`).
    pub(super) fn carried_turns(&self) -> bool {
        self.exchanges > 0 || self.tls.turns > 0 || self.tls.answered
    }

    /// The exchanges in progress, to charge a stall to: the one of the turns source, or every
    /// open HTTP/2 stream (a stall of the connection holds them all).
    pub(super) fn in_progress(&mut self) -> Box<dyn Iterator<Item = &mut Exchange> + '_> {
        match &mut self.source {
            Source::Turns | Source::Dns => Box::new(self.cur.iter_mut()),
            Source::H2(h) => Box::new(h.in_progress()),
        }
    }

    /// The connection ends: the exchanges whose response began (the turns source's current
    /// one once its response arrives, the HTTP/2 streams answered), taken out.
    pub(super) fn take_answered(&mut self) -> Vec<Exchange> {
        match &mut self.source {
            Source::Dns => Vec::new(),
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
            Source::Turns | Source::Dns => Vec::new(),
            Source::H2(h) => h.flush(),
        }
    }

    /// HTTP/2 holes given up because too much data waited behind them (0 for turns).
    pub(super) fn reassembly_overflows(&self) -> u32 {
        match &self.source {
            Source::Turns | Source::Dns => 0,
            Source::H2(h) => h.reassembly_overflows(),
        }
    }

    /// HTTP/2 streams ended in a capture gap (0 for the turns source).
    pub(super) fn h2_gap_cut(&self) -> u32 {
        match &self.source {
            Source::Turns | Source::Dns => 0,
            Source::H2(h) => h.facts().gap_cut,
        }
    }

    /// Times the HTTP/2 framing was lost (0 for the turns source).
    pub(super) fn h2_framing_lost(&self) -> u32 {
        match &self.source {
            Source::Turns | Source::Dns => 0,
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

#[cfg(test)]
mod tests {
    use super::Dir;

    /// The skips `note_ip_id` believes over a run of ids (single segments each).
    fn skips(ids: &[u16]) -> Vec<usize> {
        let mut d = Dir::default();
        ids.iter()
            .enumerate()
            .filter(|&(_, &id)| d.note_ip_id(Some(id), true))
            .map(|(k, _)| k)
            .collect()
    }

    #[test]
    fn a_per_connection_counter_shows_the_packet_lost_before_the_capture() {
        // Linux (`out-drop-nagle-early`): the SYN/ACK's 0, then one per packet; 0x8192 and
        // 0x8195 never reached the capture. The first skip comes before any +1 step, when the
        // counter is not yet known to be the connection's own: only the second is believed.
        assert_eq!(skips(&[0, 0x8191, 0x8193, 0x8194, 0x8196]), [4]);
    }

    #[test]
    fn a_host_wide_counter_and_zeroed_ids_show_no_loss() {
        // Windows numbers the host's packets (or a path's) with one counter: with other
        // connections busy, its steps skip as often as they step by one, and go far.
        let windows = [
            0x1783, 0x1789, 0x1790, 0x1793, 0x1794, 0x1795, 0x17a0, 0x17a1, 0x17a4, 0x2000, 0x2002,
            0x2003, 0x2006,
        ];
        assert_eq!(skips(&windows), Vec::<usize>::new());
        // Stacks that zero the id of every atomic datagram (RFC 6864): no id at all.
        assert_eq!(skips(&[0, 0, 0, 0]), Vec::<usize>::new());
    }
}

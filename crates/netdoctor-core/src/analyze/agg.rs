//! The aggregation side of the analyzer: capture-wide latency histograms, exchange counters,
//! the per-request breakdown and the detectors ([`crate::detect::REGISTRY`]). The per-connection
//! side ([`super::hub::Hub`]) hands it every conclusion as an [`Entry`]: applied at once in a
//! single-threaded analyzer ([`Out::Direct`]), or recorded with the frame that raised it
//! ([`Out::Log`]) by a worker of the sharded analyzer ([`super::shard`]), whose merger replays
//! the workers' logs in frame order into one `Agg`. The histograms keep float sums and the
//! detectors keep their first examples, so the replay order is what makes the sharded result
//! byte-identical to the single-threaded one.

use super::h2::H2Done;
use super::http::Found;
use crate::breakdown::{BreakdownAgg, SYN_RETRANSMIT};
use crate::detect::{self, Detector};
use crate::event::{ConnDone, Event, ExchangeDone, Interests};
use crate::stats::Hist;

pub(super) struct Agg {
    pub handshake_rtt: Hist,
    pub latency: Hist,
    pub server_time: Hist,
    pub exchanges: u64,
    /// Of [`Agg::exchanges`], those cut by the end of the capture while their response was
    /// arriving (first-byte time known, latency not).
    pub incomplete: u64,
    /// Of [`Agg::incomplete`], those whose answer its framing says was unfinished: when each
    /// one's response was last seen and its connection's round trip, told apart at the end
    /// from the capture's last frame ([`super::quality::lost_ends`]).
    pub cut_ends: Vec<(i64, Option<i64>)>,
    /// Of [`Agg::exchanges`], those whose request starts with an HTTP/1.x method (the others
    /// were found from direction turns alone).
    pub http1_exchanges: u64,
    /// Of [`Agg::exchanges`], HTTP/2 streams.
    pub h2_exchanges: u64,
    /// TLS handshake turns (setup, not among [`Agg::exchanges`]) and their server time.
    pub tls_turns: u64,
    pub tls_server_time: Option<Hist>,
    pub breakdown: BreakdownAgg,
    /// The clients' reuse gaps of the complete exchanges: recorded here once for the
    /// detectors that tell them (`Context::reuse_gaps`), not by each of them.
    pub reuse_gaps: Option<Hist>,
    pub detectors: Vec<Box<dyn Detector>>,
    /// The largest bulk transfers ([`super::bulk::MAX_CHARTED`]), for charts.
    pub bulk: Vec<super::bulk::BulkTransfer>,
    /// Per event kind, the indices of the detectors that want it.
    by_kind: [Vec<u8>; Interests::KINDS],
}

/// What a first exchange's client waited for a repeated SYN or SYN/ACK, added to its
/// breakdown (zero for every other exchange): from the first SYN to the request, of which one
/// handshake RTT is network and the rest is charged to the SYN retransmission on `sides`.
#[derive(Clone, Copy, Default)]
pub(super) struct Setup {
    pub setup_ns: i64,
    pub handshake_ns: i64,
    pub sides: u8,
}

/// One conclusion of the per-connection side.
#[derive(Clone)]
pub(super) enum Entry {
    /// A handshake RTT, ns.
    Rtt(i64),
    /// A finished exchange (or one cut by the end of the capture, `done.cut`; a TLS handshake
    /// turn with `found` [`Found::TlsSetup`]): its figures
    /// for the aggregates, then [`Event::ExchangeDone`] (or [`Event::ExchangeCut`]) for the
    /// detectors. One entry, not two: the log is copied once per exchange.
    Exchange {
        found: Found,
        setup: Setup,
        done: ExchangeDone,
        /// Cut while its answer was unfinished by its HTTP/1.x framing (`Framing::short`).
        short: bool,
    },
    /// An event without borrowed parts (stall, loss episode, zero window, reset).
    Event(Event<'static>),
    ConnDone(ConnDone),
    /// A bulk transfer's summary (boxed: it holds its series).
    Bulk(Box<super::bulk::BulkTransfer>),
    /// An HTTP/2 connection's summary (boxed: it holds lists).
    H2 {
        ends: crate::event::Ends,
        rtt_ns: Option<i64>,
        done: Box<H2Done>,
    },
}

impl Entry {
    /// The owned form of `ev` (observations are never logged: they go to the merger's `Agg`).
    pub(super) fn of(ev: &Event<'_>) -> Option<Entry> {
        Some(match *ev {
            Event::Stall { ends, stall } => Entry::Event(Event::Stall { ends, stall }),
            Event::LossEpisode { ends, episode } => {
                Entry::Event(Event::LossEpisode { ends, episode })
            }
            Event::ZeroWindow {
                ends,
                reader_is_server,
                period,
                near_zero,
            } => Entry::Event(Event::ZeroWindow {
                ends,
                reader_is_server,
                period,
                near_zero,
            }),
            Event::Reset {
                ends,
                kind,
                before,
                rst,
                req,
                context,
            } => Entry::Event(Event::Reset {
                ends,
                kind,
                before,
                rst,
                req,
                context,
            }),
            // Logged with their figures ([`Entry::Exchange`]), never alone.
            Event::ExchangeDone(_) | Event::ExchangeCut(_) | Event::TlsTurn(_) => return None,
            Event::ConnDone(d) => Entry::ConnDone(*d),
            Event::H2 { ends, rtt_ns, done } => Entry::H2 {
                ends,
                rtt_ns,
                done: Box::new(done.clone()),
            },
            Event::Bulk(t) => Entry::Bulk(Box::new(t.clone())),
            Event::Observed(_) => return None,
        })
    }
}

impl Agg {
    pub(super) fn new() -> Self {
        let mut agg = Agg {
            handshake_rtt: Hist::new(),
            latency: Hist::new(),
            server_time: Hist::new(),
            exchanges: 0,
            incomplete: 0,
            cut_ends: Vec::new(),
            http1_exchanges: 0,
            h2_exchanges: 0,
            tls_turns: 0,
            tls_server_time: None,
            breakdown: BreakdownAgg::new(),
            reuse_gaps: None,
            detectors: Vec::new(),
            bulk: Vec::new(),
            by_kind: Default::default(),
        };
        for d in detect::all() {
            agg.add(d);
        }
        agg
    }

    fn add(&mut self, d: Box<dyn Detector>) {
        let k = u8::try_from(self.detectors.len()).expect("fewer than 256 detectors");
        let wants = d.interests();
        for (kind, list) in self.by_kind.iter_mut().enumerate() {
            if wants.wants(kind) {
                list.push(k);
            }
        }
        self.detectors.push(d);
    }

    /// Hands `ev` to every detector that wants its kind, in registry order.
    #[inline]
    pub(super) fn emit(&mut self, ev: &Event<'_>) {
        for &k in &self.by_kind[ev.kind()] {
            self.detectors[usize::from(k)].on_event(ev);
        }
    }

    /// Applies one conclusion.
    #[inline]
    pub(super) fn apply(&mut self, e: &Entry) {
        match e {
            Entry::Rtt(ns) => self.handshake_rtt.record_ns(*ns),
            Entry::Exchange { found, .. } if *found == Found::TlsSetup => self.tls_turn(e),
            Entry::Exchange {
                found,
                setup,
                done,
                short,
            } => {
                let cut = done.cut;
                self.exchanges += 1;
                self.incomplete += u64::from(cut);
                self.http1_exchanges += u64::from(*found == Found::Http1);
                self.h2_exchanges += u64::from(*found == Found::H2);
                self.server_time.record_ns(done.server_total_ns());
                if !cut {
                    self.latency.record_ns(done.latency_ns);
                    let mut parts = done.parts;
                    parts.stalls[SYN_RETRANSMIT] += setup.setup_ns - setup.handshake_ns;
                    parts.sides[SYN_RETRANSMIT] |= setup.sides;
                    self.breakdown.record(
                        done.latency_ns + setup.setup_ns,
                        done.leg_ns.unwrap_or(0) + setup.handshake_ns,
                        done.server_total_ns(),
                        &parts,
                    );
                    if let Some(g) = done.reuse_gap_ns {
                        self.reuse_gaps.get_or_insert_with(Hist::new).record_ns(g);
                    }
                    self.emit(&Event::ExchangeDone(done));
                } else {
                    if *short {
                        self.cut_ends.push((done.last_resp.ts_ns, done.rtt_ns));
                    }
                    self.emit(&Event::ExchangeCut(done));
                }
            }
            Entry::Event(ev) => self.emit(ev),
            Entry::ConnDone(d) => self.emit(&Event::ConnDone(d)),
            Entry::H2 { ends, rtt_ns, done } => self.emit(&Event::H2 {
                ends: *ends,
                rtt_ns: *rtt_ns,
                done,
            }),
            Entry::Bulk(t) => self.on_bulk(t),
        }
    }

    /// A TLS handshake turn ([`Found::TlsSetup`]): counted apart from the exchanges and handed
    /// on as [`Event::TlsTurn`].
    #[cold]
    #[inline(never)]
    fn tls_turn(&mut self, e: &Entry) {
        if let Entry::Exchange { done, .. } = e {
            self.tls_turns += 1;
            self.tls_server_time
                .get_or_insert_with(Hist::new)
                .record_ns(done.server_time_ns);
            self.emit(&Event::TlsTurn(done));
        }
    }

    /// A bulk transfer: to the detectors, and kept for charts when among the largest.
    pub(super) fn on_bulk(&mut self, t: &super::bulk::BulkTransfer) {
        self.emit(&Event::Bulk(t));
        let max = super::bulk::MAX_CHARTED;
        if self.bulk.len() < max {
            self.bulk.push(t.clone());
        } else if let Some((k, _)) = self
            .bulk
            .iter()
            .enumerate()
            .filter(|(_, b)| b.bytes < t.bytes)
            .min_by_key(|(_, b)| b.bytes)
        {
            self.bulk.remove(k);
            self.bulk.push(t.clone());
        }
    }
}

/// Where the per-connection side's conclusions go.
pub(super) enum Out {
    Direct(Box<Agg>),
    /// A shard worker's: each entry with the frame that raised it (at the end of the capture,
    /// the first frame of the connection being flushed).
    Log {
        tag: u64,
        entries: Log,
    },
}

/// A shard worker's conclusions, each with the frame that raised it (its tag), in the order
/// raised. Tags and entries in two vectors, not one of pairs: an entry is moved into its
/// vector straight from where it was built (an exchange is 384 bytes; a pair was built first,
/// then moved: two copies, session 23), and the merge scans the tags alone.
#[derive(Default)]
pub(super) struct Log {
    tags: Vec<u64>,
    entries: Vec<Entry>,
}

impl Log {
    #[inline]
    pub(super) fn push(&mut self, tag: u64, e: Entry) {
        self.tags.push(tag);
        self.entries.push(e);
    }

    pub(super) fn clear(&mut self) {
        self.tags.clear();
        self.entries.clear();
    }

    /// The tag of entry `i`.
    #[inline]
    pub(super) fn tag(&self, i: usize) -> Option<u64> {
        self.tags.get(i).copied()
    }

    /// Entry `i`.
    #[inline]
    pub(super) fn entry(&self, i: usize) -> &Entry {
        &self.entries[i]
    }
}

impl Out {
    /// A bulk transfer (kept for charts as well as handed to the detectors).
    pub(super) fn bulk(&mut self, t: super::bulk::BulkTransfer) {
        match self {
            Out::Direct(agg) => agg.on_bulk(&t),
            Out::Log { tag, entries } => entries.push(*tag, Entry::Bulk(Box::new(t))),
        }
    }

    #[inline]
    pub(super) fn put(&mut self, e: Entry) {
        match self {
            Out::Direct(agg) => agg.apply(&e),
            Out::Log { tag, entries } => entries.push(*tag, e),
        }
    }

    #[inline]
    pub(super) fn emit(&mut self, ev: &Event<'_>) {
        match self {
            Out::Direct(agg) => agg.emit(ev),
            Out::Log { tag, entries } => {
                if let Some(e) = Entry::of(ev) {
                    entries.push(*tag, e);
                }
            }
        }
    }
}

//! The sharded analyzer (`analyze -j N`): N threads, the caller's one of them, with the same
//! result as a single [`Analyzer`] over the same packets.
//!
//! - The reader (the caller's thread, [`ShardedAnalyzer::push`]) counts each packet and picks its
//!   worker from the connection's endpoints read straight from the frame (untagged Ethernet IPv4 by
//!   [`ipv4_route`]; every other frame through [`crate::decode::tcp_ends`]: VLAN/SLL/loopback/raw
//!   IP, IPv6): their hash ([`route_hash`]) is symmetric, so both directions of a connection go to
//!   one worker. The worker is picked when the connection's hash bucket is first seen ([`Owners`]):
//!   the one given the fewest packets lately, the reader's own counted heavier
//!   ([`route::READER_EIGHTHS`]; heavier still when it also merges the file's runs by time,
//!   [`ShardedAnalyzer::merging_by_time`], or also walks the file's record headers as it reads,
//!   [`ShardedAnalyzer::walking_and_merging`]), so a capture of a few long connections splits
//!   evenly (the bench capture's 101 connections split 56/44 by the hash alone). While it runs,
//!   the reader hands connections to a worker when it is the slower thread ([`balance`]): the
//!   split depends on the threads' times, but no result depends on it (a connection lives on one
//!   worker at a time, and the merge orders every conclusion by its frame). A frame that lies in the map of the file
//!   ([`ShardedAnalyzer::with_region`]) goes into that worker's batch as an offset into the map,
//!   any other is copied into the batch (one buffer per batch); the decoding is left to the worker.
//!   The reader of the map is told how far every worker got, so it drops pages only behind them.
//!   Only the frames `tcp_ends` does not take (fragments, IPv6 extension headers, other
//!   protocols, malformed headers) are decoded on the reader: a segment goes to the worker of
//!   its key (decoded there again), anything else is counted there. Frames go in rounds of
//!   [`ROUND`] packets or [`ROUND_BYTES`] bytes, every worker getting its part of each round
//!   (maybe empty), so workers advance together.
//! - Worker 0 is the reader itself: at the end of each round it sends the other workers their
//!   batches, then analyzes its own (so it never waits on a worker for frames it has not
//!   handed on), then merges. Workers 1.. are threads.
//! - A worker is an [`Analyzer`] whose hub logs its conclusions with their frame's place in the
//!   order the frames were pushed (`Frame::seq`, not the frame number) instead of applying them ([`super::agg::Out::Log`]): connection state is per connection, so the
//!   worker computes what the single analyzer would for its connections. The one exception,
//!   endpoint sharing for orienting connections picked up mid-stream, is kept across workers
//!   in [`shared`].
//! - The merge (on the reader, between rounds, never waiting: [`Merge`]) replays each round's
//!   logs in the order the frames were pushed into one [`Agg`] (histograms with float sums,
//!   detectors keeping their first examples and worst cases: the order matters) once every worker
//!   has logged it. That is the order a single analyzer sees, also when the reader pushes frames
//!   out of frame order (a file's runs merged by time, frames mended by the reorder buffer);
//!   replayed by frame number, such a file's findings showed other evidence packets than
//!   `-j 1`'s (issue 25, session 21). At the end the
//!   connections still open, ordered by their first frame as [`Analyzer::finish`] orders
//!   them. The counters are summed ([`add_counts`]).
//!
//! How the split is balanced while it runs, and why the reader takes fewer connections:
//! [`balance`]. Why the reader works and merges, and what else was tried and measured (a
//! reader that decodes, workers that walk the file, order-free aggregation, fusing the route
//! into the header walk, what holds `-j 2` below 2×): docs/design-notes.md, "What `-j N` tried
//! (sessions 13–27)".
//!
//! Hand-written over a channel crate or a thread pool: the round structure (every worker gets
//! every round) is what lets the merge order the logs and the shared counts stay exact, and
//! std's channels are enough for it.

mod balance;
mod merge;
mod route;
pub(super) mod shared;
mod stamps;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use super::flow::Endpoint;
use super::hub::Hub;
use super::orient::Shared;
use super::{Analysis, Analyzer, AnalyzerConfig, CaptureStats, conclude};
use crate::decode::{decode, tcp_ends};
use crate::packet::{LinkType, RawPacket};
use balance::{Balance, Moved};
pub use balance::{Clock, wall};
use merge::{Merge, add_counts};
use route::{Owners, end_bits, ipv4_route, route_hash};
use stamps::Stamps;

/// Packets per round (over all workers).
const ROUND: usize = 4096;

/// Frame bytes per round (over all workers): with [`DEPTH`], bounds a worker's batches to a
/// few MiB whatever the snap length.
const ROUND_BYTES: usize = 1 << 20;

/// Rounds in flight per worker (bounds the memory between the reader and a worker).
const DEPTH: usize = 2;

/// How many frames ahead of the one it decodes a worker warms a frame's bytes ([`Warm`]).
const WARM_AHEAD: usize = 4;

/// Asks the CPU to bring a frame's first cache lines into its caches (a hint; the caller's
/// `netdoctor_sys::mmap::warm_lines`: this crate has no `unsafe`). A worker decodes frames the
/// reader's core touched last (it routed them), so each frame's first read waited on the
/// other core's cache or memory: warmed [`WARM_AHEAD`] frames ahead, the bench capture's
/// `decode_at` fell from ~1160 to ~540 samples per `-j 2` run on the worker and the run's CPU by
/// ~6 % (session 22, perf cpu-clock at 20 kHz, 3 runs each).
pub type Warm = fn(&[u8]);

/// One frame of a batch: its bytes are `off..off + len` of the shared bytes when `shared`
/// (the map of the file, [`Region`]), else of the batch's own `data`.
#[derive(Clone, Copy)]
struct Frame {
    frame: u64,
    /// Its place in the order the frames were pushed (1 for the first): the order the
    /// conclusions are merged in and the shared counts are kept by. Not the frame number: a
    /// reader that merges the file's runs by time pushes frames out of frame order.
    seq: u64,
    ts_ns: i64,
    off: u64,
    len: u32,
    /// The length on the wire: a frame the snap length cut is read as one (its TCP options).
    orig_len: u32,
    link: LinkType,
    shared: bool,
}

/// Bytes every thread can read for the whole run (the map of the capture file): a frame that
/// lies inside them goes to its worker as an offset, not as a copy.
pub type Region = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Told how many of the frames pushed every worker is done with (called on the reader's
/// thread after each merged round): the reader of a shared [`Region`] may then drop their
/// pages.
pub type DoneThrough = Box<dyn FnMut(u64)>;

/// Where the shared bytes lie in memory, and who is told what is done with.
struct MapShare {
    region: Region,
    base: usize,
    len: usize,
    done: DoneThrough,
    /// Frames pushed by the end of each round sent and not merged yet, oldest first.
    ends: VecDeque<u64>,
}

/// One round's frames for one worker, copied into one buffer.
struct Batch {
    frames: Vec<Frame>,
    data: Vec<u8>,
    /// The [`Frame::seq`] of the round's last frame pushed: the worker has processed every
    /// packet up to it after it.
    cut: u64,
    /// Connections the reader hands over before the round's frames ([`balance`]).
    moved: Vec<Moved>,
    /// How the worker times the batch.
    clock: Clock,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            frames: Vec::new(),
            data: Vec::new(),
            cut: 0,
            moved: Vec::new(),
            clock: wall,
        }
    }
}

/// A worker's log of one round, or its last one (the connections open at the end) with its
/// counters.
enum Msg {
    /// A round's log and how long the worker was busy with the round.
    Round(Log, Duration),
    End(Log, Box<CaptureStats>),
}

// A worker's conclusions of one round, each with its frame ([`Log`]). The merge hands the
// emptied log back, so a worker logs into memory it has used before (a fresh vector per round
// cost page faults and a cold copy of every entry).
use super::agg::Log;

/// A worker thread's channels: batches in and back to the reader, logs out and back. The log
/// channel is unbounded: the reader merges between its own work and must never wait on a
/// worker that waits to hand it a log (a worker is at most [`DEPTH`] rounds ahead of the
/// reader's merge, so the logs in flight stay bounded).
struct WorkerChans {
    rx: Receiver<Batch>,
    log: Sender<Msg>,
    recycle: SyncSender<Batch>,
    logs_back: Receiver<Log>,
}

/// [`Analyzer`]'s offline path over `workers` threads, the caller's one of them. See the
/// module docs.
pub struct ShardedAnalyzer {
    stats: CaptureStats,
    stamps: Stamps,
    in_round: usize,
    round_bytes: usize,
    /// This round's frames per worker; `batches[0]` are the reader's own.
    batches: Vec<Batch>,
    /// The reader's own analyzer (worker 0).
    own: Box<Analyzer>,
    /// The worker threads' queues (workers 1..).
    to_workers: Vec<SyncSender<Batch>>,
    recycle: Receiver<Batch>,
    workers: Vec<JoinHandle<()>>,
    merge: Merge,
    owners: Owners,
    map: Option<MapShare>,
    warm: Option<Warm>,
    /// The frames that are no TCP segment, read for DNS lookups (see [`super::dns`]).
    dns: super::dns::DnsLog,
    /// The threads' times, and the connections moved to even them out ([`balance`]).
    balance: Balance,
    /// The last frame's time when the balance's window began.
    window_ts: i64,
    /// How every thread times its rounds ([`balance`]).
    clock: Clock,
}

/// A shard worker's analyzer: logging hub, the shared endpoint counts as worker `me`.
fn worker_analyzer(cfg: AnalyzerConfig, global: Arc<shared::Global>, me: usize) -> Analyzer {
    let mut a = Analyzer::new(cfg);
    a.hub = Hub::logging();
    a.shared = Shared::global(shared::Handle::new(global, me));
    a
}

impl ShardedAnalyzer {
    /// `workers` ≥ 2 threads, the caller's included (1 is [`Analyzer`] itself).
    pub fn new(cfg: AnalyzerConfig, workers: usize) -> ShardedAnalyzer {
        ShardedAnalyzer::build(cfg, workers, None, None)
    }

    /// As [`ShardedAnalyzer::new`], for frames that lie in `region` (the map of the capture
    /// file): they reach their worker as offsets into it instead of copies (session 17: the
    /// copy was ~5 % of the reader's CPU on the bench capture). `done` is told, after each
    /// merged round, how many of the frames pushed every worker is done with. Frames from
    /// elsewhere are copied as by `new`. `warm`, when given, is how a worker warms the bytes
    /// of the frames it reads next ([`Warm`]).
    pub fn with_region(
        cfg: AnalyzerConfig,
        workers: usize,
        region: Region,
        done: DoneThrough,
        warm: Option<Warm>,
    ) -> ShardedAnalyzer {
        let bytes = (*region).as_ref();
        let (base, len) = (bytes.as_ptr() as usize, bytes.len());
        let map = MapShare {
            region,
            base,
            len,
            done,
            ends: VecDeque::new(),
        };
        ShardedAnalyzer::build(cfg, workers, Some(map), warm)
    }

    fn build(
        cfg: AnalyzerConfig,
        workers: usize,
        map: Option<MapShare>,
        warm: Option<Warm>,
    ) -> ShardedAnalyzer {
        // A worker's index fits the owner table's u16 (below its empty mark).
        let n = workers.clamp(2, usize::from(Owners::NONE));
        let global = shared::Global::new(n);
        let (recycle_tx, recycle) = sync_channel::<Batch>(n * (DEPTH + 2));
        let mut to_workers = Vec::new();
        let mut from_workers = Vec::new();
        let mut handles = Vec::new();
        let mut logs_back = Vec::new();
        for me in 1..n {
            let (tx, rx) = sync_channel::<Batch>(DEPTH);
            let (log_tx, log_rx) = channel::<Msg>();
            let (back_tx, back_rx) = sync_channel::<Log>(DEPTH + 1);
            let cfg = cfg.clone();
            let global = Arc::clone(&global);
            let recycle_tx = recycle_tx.clone();
            let region = map.as_ref().map(|m| Arc::clone(&m.region));
            let h = std::thread::Builder::new()
                .name(format!("analyze-{me}"))
                .spawn(move || {
                    let chans = WorkerChans {
                        rx,
                        log: log_tx,
                        recycle: recycle_tx,
                        logs_back: back_rx,
                    };
                    worker(me, cfg, global, chans, (region, warm));
                })
                .expect("spawn an analyzer worker");
            to_workers.push(tx);
            from_workers.push(log_rx);
            logs_back.push(back_tx);
            handles.push(h);
        }
        let own = Box::new(worker_analyzer(cfg, global, 0));
        ShardedAnalyzer {
            stats: CaptureStats::default(),
            stamps: Stamps::default(),
            in_round: 0,
            round_bytes: 0,
            batches: (0..n).map(|_| Batch::new()).collect(),
            own,
            to_workers,
            recycle,
            workers: handles,
            merge: Merge::new(from_workers, logs_back),
            owners: Owners::new(n),
            map,
            warm,
            dns: super::dns::DnsLog::default(),
            balance: Balance::new(n - 1),
            window_ts: i64::MIN,
            clock: wall,
        }
    }

    /// For a reader that also puts the frames in timestamp order (merging the file's runs or
    /// reordering them) before it pushes them: it is given fewer connections
    /// ([`route::READER_EIGHTHS_MERGING`]). Call before the first push; no result depends on
    /// it, only how the work is split.
    pub fn merging_by_time(mut self) -> ShardedAnalyzer {
        self.owners = Owners::weighted(self.batches.len(), route::READER_EIGHTHS_MERGING);
        self
    }

    /// For a reader that also walks the file's record headers as it reads them and merges
    /// its runs by time (`CaptureFile::merge_walking`): it is given fewer connections still
    /// ([`route::READER_EIGHTHS_WALKING`]). Call before the first push; no result depends on
    /// it, only how the work is split.
    pub fn walking_and_merging(mut self) -> ShardedAnalyzer {
        self.owners = Owners::weighted(self.batches.len(), route::READER_EIGHTHS_WALKING);
        self
    }

    /// Moves connections of the reader's to a worker at every round, whatever the threads'
    /// times ([`balance`]): for tests, whose analysis must stay the single thread's.
    pub fn moving_every_round(mut self) -> ShardedAnalyzer {
        self.balance.always = true;
        self
    }

    /// Every thread times its rounds by `clock` (the default, [`wall`], reads a preempted
    /// thread as busy: give a thread CPU clock where there is one). Call before the first push.
    pub fn timed_by(mut self, clock: Clock) -> ShardedAnalyzer {
        self.clock = clock;
        self
    }

    /// Connections the reader handed to a worker so far ([`balance`]).
    pub fn connections_moved(&self) -> u64 {
        self.balance.moved
    }

    /// Drops the analysis without a result (the caller reads the capture again another
    /// way): the workers end and are joined.
    pub fn abandon(mut self) {
        self.to_workers.clear();
        if let Some(h) = self.own.shared.handle() {
            h.publish(u64::MAX);
        }
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }

    /// As [`Analyzer::note_sorted_frames`].
    pub fn note_sorted_frames(&mut self, frames: u64) {
        self.stats.quality.sorted_frames += frames;
    }

    /// Feeds one captured packet (as [`Analyzer::push`]). Inlined into the reader's loop: it
    /// is the reader's whole per-frame work (session 15: 178 instructions a frame before the
    /// stamps were kept as below).
    #[inline]
    pub fn push(&mut self, pkt: &RawPacket<'_>) {
        let ts = self.stamps.take(pkt.ts_ns, pkt.orig_len);
        let h = match ipv4_route(pkt) {
            Some(h) => {
                if route::port_53(pkt.data) {
                    self.dns_tcp(pkt, ts);
                }
                h
            }
            None => match self.other_route(pkt, ts) {
                Some(h) => h,
                None => return,
            },
        };
        let w = self.owners.pick(h);
        let b = &mut self.batches[w];
        let at = pkt.data.as_ptr() as usize;
        // Inside the map: `rel` (wrapping below its start) leaves room for the frame.
        let rel = |m: &MapShare| at.wrapping_sub(m.base);
        let (off, shared) = match &self.map {
            Some(m) if rel(m) <= m.len && pkt.data.len() <= m.len - rel(m) => (rel(m) as u64, true),
            _ => {
                let off = b.data.len() as u64;
                b.data.extend_from_slice(pkt.data);
                (off, false)
            }
        };
        // Captured lengths are at most the reader's limit (256 KiB), so they fit in u32.
        b.frames.push(Frame {
            frame: pkt.frame,
            seq: self.stamps.packets,
            ts_ns: ts,
            off,
            len: pkt.data.len() as u32,
            orig_len: pkt.orig_len,
            link: pkt.link,
            shared,
        });
        self.count_in_round(pkt.data.len());
    }

    /// The route hash of a frame [`ipv4_route`] does not take (tags, other link types, IPv6,
    /// fragments, malformed headers), or `None` for a frame that is no TCP segment (counted
    /// here). A segment is decoded here to find its connection, and again by its worker.
    #[cold]
    fn other_route(&mut self, pkt: &RawPacket<'_>, ts: i64) -> Option<u64> {
        let (src, dst) = match tcp_ends(pkt) {
            Some(ends) => ends,
            None => match decode(pkt) {
                Ok(Some(seg)) => (seg.src, seg.dst),
                Ok(None) => {
                    self.stats.other_packets += 1;
                    self.dns.push(pkt, ts);
                    self.count_in_round(0);
                    return None;
                }
                Err(e) => {
                    self.stats.count_decode_error(&e);
                    self.count_in_round(0);
                    return None;
                }
            },
        };
        if src.port() == 53 || dst.port() == 53 {
            self.dns_tcp(pkt, ts);
        }
        Some(route_hash(
            end_bits(Endpoint::from(src)),
            end_bits(Endpoint::from(dst)),
        ))
    }

    /// A TCP segment with port 53 at one end: read for DNS over TCP here, in capture order
    /// (as a single analyzer reads it, before its TCP path), and routed to its worker as any
    /// other segment (whose connection yields no exchanges: `Source::Dns`).
    #[cold]
    #[inline(never)]
    fn dns_tcp(&mut self, pkt: &RawPacket<'_>, ts: i64) {
        if let Ok(Some(seg)) = decode(&RawPacket { ts_ns: ts, ..*pkt }) {
            self.dns.push_tcp(&seg);
        }
    }

    /// One more packet (of `bytes`, copied or not) in the round; the round goes when full.
    #[inline]
    fn count_in_round(&mut self, bytes: usize) {
        self.in_round += 1;
        self.round_bytes += bytes;
        if self.in_round >= ROUND || self.round_bytes >= ROUND_BYTES {
            self.send_round(false);
        }
    }

    /// Ends a round: the workers' batches go first (so a worker is never waited on for
    /// frames it has not been given), then the reader analyzes its own, publishes its
    /// progress and merges every round all workers have logged.
    /// `last`: the capture's last round (no connection moves after it).
    fn send_round(&mut self, last: bool) {
        self.owners.age();
        self.in_round = 0;
        self.round_bytes = 0;
        let cut = self.stamps.packets;
        let own_packets = self.batches[0].frames.len();
        let mut given = Vec::with_capacity(self.to_workers.len());
        let sending = (self.clock)();
        for (w, tx) in self.to_workers.iter().enumerate() {
            let mut fresh = self.recycle.try_recv().unwrap_or_else(|_| Batch::new());
            fresh.frames.clear();
            fresh.data.clear();
            let mut b = std::mem::replace(&mut self.batches[w + 1], fresh);
            b.cut = cut;
            b.clock = self.clock;
            given.push(b.frames.len());
            // A worker gone (it panicked) is reported when it is joined.
            let _ = tx.send(b);
        }
        let waited = (self.clock)().saturating_sub(sending);
        let own = &mut self.batches[0];
        own.cut = cut;
        let region = self.map.as_ref().map(|m| (*m.region).as_ref());
        run_batch(&mut self.own, own, region, self.warm);
        own.frames.clear();
        own.data.clear();
        let log = take_log(&mut self.own.hub, self.merge.spare());
        self.merge.own(log);
        if let Some(m) = &mut self.map {
            m.ends.push_back(self.stamps.packets);
        }
        let merged = self.merge.poll();
        if let Some(m) = &mut self.map {
            let mut done = None;
            for _ in 0..merged {
                done = m.ends.pop_front();
            }
            if let Some(n) = done {
                (m.done)(n);
            }
        }
        if !last {
            self.rebalance(waited, own_packets, &given);
        }
    }

    /// Ends the analysis (as [`Analyzer::finish`]).
    pub fn finish(mut self) -> Analysis {
        if self.in_round > 0 {
            self.send_round(true);
        }
        // Connections handed over for a round that never came stay the reader's.
        for b in &mut self.batches[1..] {
            let moved = std::mem::take(&mut b.moved);
            self.own.take_over(moved);
        }
        let clamped_ts = self.stamps.write_into(&mut self.stats);
        self.to_workers.clear();
        if let Some(h) = self.own.shared.handle() {
            h.publish(u64::MAX);
        }
        self.own.flush_open();
        let entries = take_log(&mut self.own.hub, Log::default());
        let own_stats = self.own.stats.clone();
        self.merge.own(entries);
        let (mut agg, counts) = self.merge.finish();
        for h in self.workers.drain(..) {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p);
            }
        }
        add_counts(&mut self.stats, &counts);
        add_counts(&mut self.stats, &own_stats);
        let mut a = conclude(&mut self.stats, clamped_ts, &mut agg);
        super::add_dns(&mut a, &self.dns);
        a
    }
}

/// Analyzes the frames of one batch (a worker's round) with `a`, and publishes the progress.
/// `region`: the shared bytes that frames marked `shared` lie in; `warm`: how to warm a frame
/// [`WARM_AHEAD`] frames ahead.
fn run_batch(a: &mut Analyzer, b: &Batch, region: Option<&[u8]>, warm: Option<Warm>) {
    let (shared, own) = (region.unwrap_or(&[]), &b.data[..]);
    let bytes = |f: &Frame| {
        let from = if f.shared { shared } else { own };
        let off = f.off as usize;
        &from[off..off + f.len as usize]
    };
    for (i, f) in b.frames.iter().enumerate() {
        if let Some(warm) = warm
            && let Some(next) = b.frames.get(i + WARM_AHEAD)
        {
            warm(bytes(next));
        }
        let pkt = RawPacket {
            frame: f.frame,
            ts_ns: f.ts_ns,
            link: f.link,
            data: bytes(f),
            orig_len: f.orig_len,
        };
        match decode(&pkt) {
            Ok(Some(ref seg)) => {
                a.stats.tcp_segments += 1;
                a.hub.tag(f.seq);
                if let Some(h) = a.shared.handle() {
                    h.at(f.seq);
                }
                a.on_segment(seg);
            }
            Ok(None) => a.stats.other_packets += 1,
            Err(e) => a.stats.count_decode_error(&e),
        }
    }
    if let Some(h) = a.shared.handle() {
        h.publish(b.cut);
    }
}

/// One worker thread: an analyzer over its connections, logging.
fn worker(
    me: usize,
    cfg: AnalyzerConfig,
    global: Arc<shared::Global>,
    chans: WorkerChans,
    (region, warm): (Option<Region>, Option<Warm>),
) {
    let WorkerChans {
        rx,
        log,
        recycle,
        logs_back,
    } = chans;
    /// Others never wait on a worker that ended, also by a panic.
    struct Done(Arc<shared::Global>, usize);
    impl Drop for Done {
        fn drop(&mut self) {
            self.0.publish(self.1, u64::MAX, &mut Vec::new());
        }
    }
    let _done = Done(Arc::clone(&global), me);
    let mut a = worker_analyzer(cfg, global, me);
    let region = region.as_deref().map(AsRef::as_ref);
    for mut b in rx {
        let start = (b.clock)();
        a.take_over(std::mem::take(&mut b.moved));
        run_batch(&mut a, &b, region, warm);
        let busy = (b.clock)().saturating_sub(start);
        let entries = take_log(&mut a.hub, logs_back.try_recv().unwrap_or_default());
        if log.send(Msg::Round(entries, busy)).is_err() {
            return;
        }
        let _ = recycle.try_send(b);
    }
    if let Some(h) = a.shared.handle() {
        h.publish(u64::MAX);
    }
    a.flush_open();
    let entries = take_log(&mut a.hub, Log::default());
    let _ = log.send(Msg::End(entries, Box::new(a.stats.clone())));
}

/// The hub's log so far, `fresh` (empty) taking its place.
fn take_log(hub: &mut Hub, fresh: Log) -> Log {
    match &mut hub.out {
        super::agg::Out::Log { entries, .. } => std::mem::replace(entries, fresh),
        super::agg::Out::Direct(_) => Log::default(),
    }
}

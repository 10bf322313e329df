//! `analyze -j N` without a reader thread: every worker walks the whole capture itself
//! ([`analyze_walking`]), computes every frame's route exactly as [`super::ShardedAnalyzer`]'s
//! reader does (the same [`super::Owners`] table: each worker sees the same frames in the same
//! order, so each fills the same table), and decodes and analyzes only its own frames. The walk
//! (record headers and a few header bytes per frame) is duplicated instead of copying every
//! frame into a batch and handing it to another thread: no copy, no channel per round for the
//! frames, N threads for N cores plus the merger, which is unchanged (each worker's log of a
//! round of [`super::ROUND`] frames, replayed in frame order). Worker 0 also counts what the
//! reader counted (packets, bytes, timestamps, frames that are no TCP segment).
//!
//! Only for a capture that can be read N times from the start (a regular file); a pipe, a
//! followed file and a second reading in timestamp order go through the reader.

use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};

use super::super::hub::Hub;
use super::super::orient::Shared;
use super::super::{Analysis, Analyzer, AnalyzerConfig, CaptureStats, conclude, stamp};
use super::{
    DEPTH, Log, Msg, Owners, ROUND, ROUND_BYTES, add_counts, end_bits, ipv4_route, merge,
    route_hash, shared, take_log,
};
use crate::analyze::flow::Endpoint;
use crate::decode::{decode, tcp_ends};
use crate::packet::RawPacket;

/// The analysis of a capture that `walk(w, f)` reads (from its start, every call the same
/// frames) into `f`, over `workers` ≥ 2 threads (the caller's one of them), with worker 0's
/// walk result. A walk that fails returns its error; the analysis is then of no use.
pub fn analyze_walking<R: Send, W>(cfg: AnalyzerConfig, workers: usize, walk: W) -> (Analysis, R)
where
    W: Fn(usize, &mut dyn FnMut(&RawPacket<'_>)) -> R + Sync,
{
    let n = workers.clamp(2, usize::from(Owners::NONE));
    let global = shared::Global::new(n);
    let mut to_merger = Vec::new();
    let mut from_workers = Vec::new();
    let mut logs_back = Vec::new();
    let mut back_rx = Vec::new();
    for _ in 0..n {
        let (log_tx, log_rx) = sync_channel::<Msg>(DEPTH);
        let (back_tx, brx) = sync_channel::<Log>(DEPTH + 1);
        to_merger.push(log_tx);
        from_workers.push(log_rx);
        logs_back.push(back_tx);
        back_rx.push(brx);
    }
    std::thread::scope(|s| {
        let merger = std::thread::Builder::new()
            .name("analyze-merge".into())
            .spawn_scoped(s, move || merge(from_workers, logs_back))
            .expect("spawn the analyzer's merger");
        let mut chans: Vec<_> = to_merger.into_iter().zip(back_rx).collect();
        let (tx0, back0) = chans.remove(0);
        let mut handles = Vec::new();
        for (i, (tx, back)) in chans.into_iter().enumerate() {
            let me = i + 1;
            let (cfg, global, walk) = (cfg.clone(), Arc::clone(&global), &walk);
            handles.push(
                std::thread::Builder::new()
                    .name(format!("analyze-{me}"))
                    .spawn_scoped(s, move || {
                        let mut w = Walker::new(me, n, cfg, global, tx, back);
                        walk(me, &mut |p| w.push(p));
                        w.end();
                    })
                    .expect("spawn an analyzer worker"),
            );
        }
        let mut w0 = Walker::new(0, n, cfg, Arc::clone(&global), tx0, back0);
        let r = walk(0, &mut |p| w0.push(p));
        let (mut stats, clamped_ts) = w0.end();
        for h in handles {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p);
            }
        }
        let (mut agg, counts) = match merger.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        };
        add_counts(&mut stats, &counts);
        (conclude(&mut stats, clamped_ts, &mut agg), r)
    })
}

/// One worker walking the capture.
struct Walker {
    me: usize,
    /// The reader's counts (packets, bytes, timestamps, frames no worker takes); worker 0's are
    /// the run's.
    reader: CaptureStats,
    clamped_ts: u64,
    owners: Owners,
    last_frame: u64,
    in_round: usize,
    round_bytes: usize,
    a: Analyzer,
    log: SyncSender<Msg>,
    logs_back: std::sync::mpsc::Receiver<Log>,
    gone: bool,
    _done: Done,
}

/// Others never wait on a worker that ended, also by a panic.
struct Done(Arc<shared::Global>, usize);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.publish(self.1, u64::MAX, &mut Vec::new());
    }
}

impl Walker {
    fn new(
        me: usize,
        n: usize,
        cfg: AnalyzerConfig,
        global: Arc<shared::Global>,
        log: SyncSender<Msg>,
        logs_back: std::sync::mpsc::Receiver<Log>,
    ) -> Walker {
        let mut a = Analyzer::new(cfg);
        a.hub = Hub::logging();
        a.shared = Shared::global(shared::Handle::new(Arc::clone(&global), me));
        Walker {
            me,
            reader: CaptureStats::default(),
            clamped_ts: 0,
            owners: Owners::new(n),
            last_frame: 0,
            in_round: 0,
            round_bytes: 0,
            a,
            log,
            logs_back,
            gone: false,
            _done: Done(global, me),
        }
    }

    #[inline]
    fn push(&mut self, pkt: &RawPacket<'_>) {
        let ts = stamp(&mut self.reader, &mut self.clamped_ts, pkt);
        let pkt = &RawPacket { ts_ns: ts, ..*pkt };
        self.last_frame = pkt.frame;
        let h = match ipv4_route(pkt) {
            Some(h) => h,
            None => match self.other_route(pkt) {
                Some(h) => h,
                None => return,
            },
        };
        if self.owners.pick(h) == self.me {
            let a = &mut self.a;
            match decode(pkt) {
                Ok(Some(ref seg)) => {
                    a.stats.tcp_segments += 1;
                    a.hub.tag(seg.frame);
                    if let Some(h) = a.shared.handle() {
                        h.at(seg.frame);
                    }
                    a.on_segment(seg);
                }
                Ok(None) => a.stats.other_packets += 1,
                Err(_) => a.stats.decode_errors += 1,
            }
        }
        self.count_in_round(pkt.data.len());
    }

    /// As [`super::ShardedAnalyzer::other_route`]: a frame that is no TCP segment is counted
    /// in the reader's counts.
    #[cold]
    fn other_route(&mut self, pkt: &RawPacket<'_>) -> Option<u64> {
        let (src, dst) = match tcp_ends(pkt) {
            Some(ends) => ends,
            None => match decode(pkt) {
                Ok(Some(seg)) => (seg.src, seg.dst),
                Ok(None) => {
                    self.reader.other_packets += 1;
                    self.count_in_round(0);
                    return None;
                }
                Err(_) => {
                    self.reader.decode_errors += 1;
                    self.count_in_round(0);
                    return None;
                }
            },
        };
        Some(route_hash(
            end_bits(Endpoint::from(src)),
            end_bits(Endpoint::from(dst)),
        ))
    }

    /// The same rounds as the reader's: every worker ends each at the same frame.
    #[inline]
    fn count_in_round(&mut self, bytes: usize) {
        self.in_round += 1;
        self.round_bytes += bytes;
        if self.in_round >= ROUND || self.round_bytes >= ROUND_BYTES {
            self.end_round();
        }
    }

    fn end_round(&mut self) {
        self.owners.age();
        self.in_round = 0;
        self.round_bytes = 0;
        if let Some(h) = self.a.shared.handle() {
            h.publish(self.last_frame);
        }
        let entries = take_log(
            &mut self.a.hub,
            self.logs_back.try_recv().unwrap_or_default(),
        );
        if !self.gone && self.log.send(Msg::Round(entries)).is_err() {
            self.gone = true;
        }
    }

    /// The last round, the connections still open and this worker's counts to the merger;
    /// the reader's counts back (worker 0's are the run's).
    fn end(mut self) -> (CaptureStats, u64) {
        if self.in_round > 0 {
            self.end_round();
        }
        if let Some(h) = self.a.shared.handle() {
            h.publish(u64::MAX);
        }
        self.a.flush_open();
        let entries = take_log(&mut self.a.hub, Vec::new());
        let _ = self
            .log
            .send(Msg::End(entries, Box::new(self.a.stats.clone())));
        (self.reader.clone(), self.clamped_ts)
    }
}

//! Live capture on one ring, or on N rings of one PACKET_FANOUT group when one reader cannot
//! keep up with the packet rate.
//!
//! With one ring ([`LiveRings::open`] with `rings` 1) this is [`LiveCapture`] itself: no thread,
//! no copy, the memory of one ring. With N rings, N sockets with the same filter join one
//! `PACKET_FANOUT_HASH` group (the kernel spreads the packets by a symmetric flow hash, so both
//! directions of a connection land in one ring, in order), and one thread per ring drains its
//! ring into chunks of copied packets that the caller's thread hands to its callback, numbered
//! in the order they arrive. The kernel's drops are counted per ring (`PACKET_STATISTICS` of
//! each socket) and summed; a window with drops names each ring's count.
//!
//! Packets of different connections may reach the callback out of time order by up to one
//! chunk ([`CHUNK_NS`]); packets of one connection never are. The group's id is picked by the
//! kernel (`PACKET_FANOUT_FLAG_UNIQUEID`), so another process's group is never joined.
//!
//! No `unsafe` here: the sockets and the fanout option are [`LiveCapture`]'s (its `sys`
//! wrappers, over `netdoctor_sys::sockopt`).

use crate::live::{LiveCapture, LiveConfig};
use crate::{ObserveError, SourceSummary};
use netdoctor_core::{LinkType, RawPacket};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, SyncSender, sync_channel};
use std::time::Duration;

/// A chunk is handed over after this many packets, bytes, or ns of capture time.
const CHUNK_PACKETS: usize = 512;
const CHUNK_BYTES: usize = 256 << 10;
const CHUNK_NS: i64 = 5_000_000;
/// Chunks in flight between the ring threads and the caller's thread.
const CHUNKS_IN_FLIGHT: usize = 64;

/// Packets copied out of one ring: (timestamp, length on the wire, offset, captured length).
struct Chunk {
    data: Vec<u8>,
    pkts: Vec<(i64, u32, u32, u32)>,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            data: Vec::with_capacity(CHUNK_BYTES),
            pkts: Vec::with_capacity(CHUNK_PACKETS),
        }
    }
}

/// One ring, or N rings of one fanout group. See the module docs.
pub struct LiveRings {
    rings: Vec<LiveCapture>,
    frames: u64,
    max_packets: Option<u64>,
}

impl LiveRings {
    /// Opens `rings` (at least 1) capturing sockets for `cfg`, each with a ring of about
    /// `ring_bytes`; with more than one they share the packets through one fanout group.
    /// Capturing when this returns.
    pub fn open(
        cfg: &LiveConfig,
        ring_bytes: usize,
        rings: usize,
    ) -> Result<LiveRings, ObserveError> {
        let snaplen = match cfg.snaplen {
            0 => 65_535,
            n => n,
        };
        let (block, blocks) = crate::live::ring_geometry_for(ring_bytes, snaplen);
        LiveRings::open_geometry(cfg, (block, blocks), rings)
    }

    /// Like [`open`](Self::open), each ring `blocks.1` blocks of `blocks.0` bytes (see
    /// [`LiveCapture::open_with_geometry`]).
    pub fn open_geometry(
        cfg: &LiveConfig,
        (block, blocks): (u32, u32),
        rings: usize,
    ) -> Result<LiveRings, ObserveError> {
        let n = rings.max(1);
        if n == 1 {
            return Ok(LiveRings {
                rings: vec![LiveCapture::open_with_geometry(cfg, block, blocks)?],
                frames: 0,
                max_packets: None,
            });
        }
        // The packet limit applies to the packets handed over, counted here.
        let each = LiveConfig {
            max_packets: None,
            ..cfg.clone()
        };
        let mut all: Vec<LiveCapture> = Vec::with_capacity(n);
        let mut group = None;
        for _ in 0..n {
            let c = LiveCapture::open_with_geometry(&each, block, blocks)?;
            group = Some(c.join_fanout(group)?);
            all.push(c);
        }
        Ok(LiveRings {
            rings: all,
            frames: 0,
            max_packets: cfg.max_packets,
        })
    }

    /// One ring waits on `wake` beside its socket (see [`crate::live::Wake`]). N rings do not:
    /// their readers and the caller's thread look at `stop` every 50 ms as before (a port
    /// with N rings is busy, its readers rarely wait).
    pub fn set_wake(&mut self, wake: &crate::live::Wake) {
        if let [one] = self.rings.as_mut_slice() {
            one.set_wake(wake);
        }
    }

    /// The kernel's drops over every ring since they opened, as of the end of the last
    /// [`run_flow`](Self::run_flow) (a [`hand_over`](Self::hand_over) reads them once more).
    pub fn drops(&self) -> u64 {
        self.rings.iter().map(LiveCapture::drops).sum()
    }

    /// How many rings.
    pub fn rings(&self) -> usize {
        self.rings.len()
    }

    /// Captures until `stop` is set (packets already in the rings are still read) or the
    /// packet limit, calling `f` for each packet; `f` may end the capture. As
    /// [`LiveCapture::run_flow`]: `drops` in the summary is cumulative over the sockets' life.
    pub fn run_flow(
        &mut self,
        stop: &AtomicBool,
        f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
    ) -> Result<SourceSummary, ObserveError> {
        if let [one] = self.rings.as_mut_slice() {
            return one.run_flow(stop, f);
        }
        let n = self.rings.len();
        let quit = AtomicBool::new(false);
        let (tx, rx) = sync_channel::<Chunk>(CHUNKS_IN_FLIGHT);
        let start = self.frames;
        let max = self.max_packets;
        let frames = &mut self.frames;
        let results: Vec<Result<SourceSummary, ObserveError>> = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .rings
                .iter_mut()
                .enumerate()
                .map(|(k, ring)| {
                    let tx = tx.clone();
                    let quit = &quit;
                    std::thread::Builder::new()
                        .name(format!("capture-ring-{k}"))
                        .spawn_scoped(s, move || drain(ring, quit, tx))
                        .expect("spawn a capture ring thread")
                })
                .collect();
            drop(tx);
            let mut ended = false;
            loop {
                if stop.load(Ordering::Relaxed) {
                    quit.store(true, Ordering::Relaxed);
                }
                let chunk = match rx.recv_timeout(Duration::from_millis(50)) {
                    Ok(c) => c,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                };
                // After the end, the rest is read and dropped so the ring threads can finish.
                if ended {
                    continue;
                }
                for &(ts_ns, orig_len, off, len) in &chunk.pkts {
                    *frames += 1;
                    let (off, len) = (off as usize, len as usize);
                    let pkt = RawPacket {
                        frame: *frames,
                        ts_ns,
                        link: LinkType::Raw,
                        data: &chunk.data[off..off + len],
                        orig_len,
                    };
                    if f(&pkt).is_break() || max.is_some_and(|m| *frames >= m) {
                        ended = true;
                        quit.store(true, Ordering::Relaxed);
                        break;
                    }
                }
            }
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut summary = SourceSummary {
            packets: self.frames - start,
            ..Default::default()
        };
        let mut per_ring = Vec::with_capacity(n);
        for (k, r) in results.into_iter().enumerate() {
            let r = r?;
            summary.drops += r.drops;
            summary.ring_fill = summary.ring_fill.max(r.ring_fill);
            per_ring.push(r.drops);
            summary.warnings.extend(
                r.warnings
                    .into_iter()
                    .map(|w| format!("ring {} of {n}: {w}", k + 1)),
            );
        }
        if summary.warnings.len() > 1 {
            summary.warnings.push(format!(
                "kernel drops per ring since the capture started: {per_ring:?}"
            ));
        }
        Ok(summary)
    }

    /// Hands the capture over to `next` (already open, so capturing) without losing or
    /// repeating a packet: these sockets stop taking packets, what is left in their rings is
    /// read into `f`, and `next` skips the packets up to the last one read here (the two
    /// overlapped from `next`'s bind to here). Returns the packets read.
    pub fn hand_over(
        &mut self,
        next: &mut LiveRings,
        f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
    ) -> u64 {
        // A socket whose stop failed keeps taking packets while it is read: whatever `next`
        // got up to the last one read here is still skipped as a repeat.
        for r in &self.rings {
            let _ = r.stop_intake();
        }
        let done = AtomicBool::new(true);
        let mut last: Option<i64> = None;
        let mut n = 0u64;
        let _ = self.run_flow(&done, &mut |p| {
            last = Some(last.map_or(p.ts_ns, |l| l.max(p.ts_ns)));
            n += 1;
            f(p)
        });
        if let Some(t) = last {
            for r in &mut next.rings {
                r.skip_through(t);
            }
        }
        n
    }

    /// The link type of the packets it yields: always [`LinkType::Raw`] (cooked sockets).
    pub fn link_type(&self) -> LinkType {
        LinkType::Raw
    }
}

/// One ring's thread: copies its packets into chunks for the caller's thread until `quit`.
fn drain(
    ring: &mut LiveCapture,
    quit: &AtomicBool,
    tx: SyncSender<Chunk>,
) -> Result<SourceSummary, ObserveError> {
    let mut chunk = Chunk::new();
    let mut first_ts = 0i64;
    let mut gone = false;
    let r = ring.run_flow(quit, &mut |p| {
        if chunk.pkts.is_empty() {
            first_ts = p.ts_ns;
        }
        let off = chunk.data.len() as u32;
        chunk.data.extend_from_slice(p.data);
        chunk
            .pkts
            .push((p.ts_ns, p.orig_len, off, p.data.len() as u32));
        if chunk.pkts.len() >= CHUNK_PACKETS
            || chunk.data.len() >= CHUNK_BYTES
            || p.ts_ns - first_ts >= CHUNK_NS
        {
            // Blocks while the caller's thread is behind: the ring fills and the kernel
            // counts the drops, as with one ring.
            if tx
                .send(std::mem::replace(&mut chunk, Chunk::new()))
                .is_err()
            {
                gone = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    if !gone && !chunk.pkts.is_empty() {
        let _ = tx.send(chunk);
    }
    r
}

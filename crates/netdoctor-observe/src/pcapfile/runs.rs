//! A mapped capture read in timestamp order by merging its in-order runs.
//!
//! `mergecap -a` of captures whose times overlap (two interfaces, rotated captures of the same
//! period, a file appended to itself) writes every file's frames before the next file's: the
//! result is a few long runs, each in timestamp order, that overlap in time. A bounded reorder
//! buffer (`netdoctor_core::analyze::order::TimeOrder`) cannot mend that (a frame of the second
//! run is earlier than thousands held) and pays a scan of its whole window per frame. Through
//! the map of the file the runs are merged instead, as `reordercap` would order them: a walk of
//! the record headers finds where each run starts ([`TimeRuns`]), then a heap holds the next
//! frame of every run that overlaps the current time (O(n log k) for k runs, no frame copied).
//! Runs enter the heap only when their first frame is due, so a capture with many short runs
//! (a multi-queue capture's jitter) keeps a small heap.
//!
//! The key is the reorder buffer's, (timestamp, frame number): frames come out in the same
//! order it gives whenever it can mend the file, and frame numbers stay the file's. Memory is
//! [`RUN_BYTES`] a run; the caller bounds the runs (a file with more goes through the buffer).
//! `analyze` reads a mapped pcap with the walk a chunk ahead of the merge (`super::stream`);
//! this walk-first reading is for a file that stops that merge.
//! Only a classic pcap file on the mapped path with no record the streaming reader would
//! complain of (cut short, too long) is taken: anything else gives `None` and the caller keeps
//! the streaming reader and its warnings.

use super::mapped::{AHEAD, MappedState, STEP};
use super::{LegacyHeader, MAX_CAPLEN, read_u32};
use crate::SourceSummary;
use netdoctor_core::RawPacket;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bytes a run costs while merging: its [`Run`], its place in the queue of runs not yet due
/// and its heap entry.
pub const RUN_BYTES: usize = std::mem::size_of::<Run>() + 8 + 24;

/// Frames in timestamp order from byte `pos` up to byte `end`; the first is frame `frame`,
/// stamped `ts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub(super) pos: usize,
    pub(super) end: usize,
    pub(super) frame: u64,
    pub(super) ts: i64,
}

/// The in-order runs of a mapped capture, found by [`walk`]; [`TimeRuns::for_each`] delivers
/// the frames merged by timestamp.
pub struct TimeRuns<'a> {
    st: &'a MappedState,
    runs: Vec<Run>,
    frames: u64,
}

/// One record: (timestamp, captured bytes, original length, the next record's position).
/// `None` when it is cut short or longer than `limit` (the streaming reader's cases).
#[inline]
pub(super) fn record<'d>(
    data: &'d [u8],
    pos: usize,
    h: &LegacyHeader,
    limit: u32,
) -> Option<(i64, &'d [u8], u32, usize)> {
    let rec = data.get(pos..pos + 16)?;
    let u32_at = |o: usize| read_u32(&rec[o..o + 4], h.big_endian);
    let caplen = u32_at(8);
    if caplen > limit {
        return None;
    }
    let start = pos + 16;
    let next = start + caplen as usize;
    let bytes = data.get(start..next)?;
    let frac = if h.nanos {
        i64::from(u32_at(4))
    } else {
        i64::from(u32_at(4)) * 1000
    };
    let ts = i64::from(u32_at(0)) * 1_000_000_000 + frac;
    Some((ts, bytes, u32_at(12), next))
}

pub(super) fn limit(h: &LegacyHeader) -> u32 {
    if h.snaplen == 0 {
        MAX_CAPLEN
    } else {
        h.snaplen.min(MAX_CAPLEN)
    }
}

/// Whether a frame stamped `ts` after one stamped `prev` is backdated, in a capture whose first
/// frame is stamped `first` (the analyzer's judgement, passed in by the caller).
pub type Backdated = dyn Fn(i64, i64, i64) -> bool + Sync;

/// What a walk of part of the file found: runs numbered from frame 1 of the part.
struct Part {
    runs: Vec<Run>,
    frames: u64,
    backdated: u64,
    first_ts: i64,
    last_ts: i64,
    /// Where the walk stopped: the next part's start when the parts were cut right.
    end: usize,
}

/// Files smaller than this are walked on one thread (a thread costs more than the walk).
const SPLIT_BYTES: usize = 8 << 20;

/// Records a candidate part start must chain through ([`chains`]) to be taken.
const CHAIN: usize = 8;

/// Bytes after a cut point searched for a record start.
const SEARCH: usize = 256 << 10;

/// Walks the record headers of `st` and splits the file where a timestamp is earlier than the
/// one before it; with the count of frames `backdated` calls backdated. `None` when a record is
/// cut short or too long, or there are more than `max_runs` runs.
///
/// With `parts` > 1 (`analyze -j N`) a large file is walked in that many parts at once: the
/// walk is a chain of dependent loads (each record's length says where the next starts), so
/// it runs at memory latency and is the one stretch of the analysis no worker can help with.
/// A part starts at the first offset after its cut point from which [`CHAIN`] records parse
/// as records (a classic pcap has no sync marks); the part before must end exactly there, or
/// the cut was not a record start and the file is walked again on one thread. The result is
/// the one-thread walk's either way.
pub(super) fn walk<'a>(
    st: &'a MappedState,
    max_runs: usize,
    parts: usize,
    backdated: &Backdated,
) -> Option<(TimeRuns<'a>, u64)> {
    let h = &st.header;
    let limit = limit(h);
    let data = st.map.bytes();
    let Some((first, ..)) = record(data, 24, h, limit) else {
        // No frame (an empty file), or a first record cut short or too long.
        let part = walk_part(st, 24, data.len(), max_runs, 0, backdated)?;
        return finish(st, vec![part], max_runs, backdated);
    };
    let mut starts = vec![24usize];
    if parts > 1 && data.len() >= SPLIT_BYTES {
        for k in 1..parts {
            let cut = 24 + (data.len() - 24) / parts * k;
            if let Some(p) =
                (cut..(cut + SEARCH).min(data.len())).find(|&p| chains(data, p, h, limit, first))
                && p > *starts.last().unwrap_or(&0)
            {
                starts.push(p);
            }
        }
    }
    if starts.len() > 1 {
        let ends: Vec<usize> = starts[1..]
            .iter()
            .copied()
            .chain(std::iter::once(data.len()))
            .collect();
        let found: Vec<Option<Part>> = std::thread::scope(|s| {
            let others: Vec<_> = starts[1..]
                .iter()
                .zip(&ends[1..])
                .map(|(&from, &to)| {
                    std::thread::Builder::new()
                        .name("walk".into())
                        .spawn_scoped(s, move || {
                            walk_part(st, from, to, max_runs, first, backdated)
                        })
                })
                .collect();
            let mut found = vec![walk_part(
                st, starts[0], ends[0], max_runs, first, backdated,
            )];
            // A thread that could not start leaves its part unwalked: one thread then.
            found.extend(
                others
                    .into_iter()
                    .map(|t| t.ok().and_then(|t| t.join().ok().flatten())),
            );
            found
        });
        // Every part walked, and each ended exactly where the next began.
        let cut_right = found.iter().all(Option::is_some)
            && found
                .iter()
                .zip(&ends)
                .all(|(p, &to)| p.as_ref().is_some_and(|p| p.end == to));
        if cut_right {
            return finish(
                st,
                found.into_iter().flatten().collect(),
                max_runs,
                backdated,
            );
        }
    }
    let part = walk_part(st, 24, data.len(), max_runs, first, backdated)?;
    finish(st, vec![part], max_runs, backdated)
}

/// Whether [`CHAIN`] records (or records up to the end of the file) parse from `pos`: a
/// captured length within the limit and the original length, a fraction of a second below
/// one second, a time within ten years of the first frame's.
fn chains(data: &[u8], mut pos: usize, h: &LegacyHeader, limit: u32, first: i64) -> bool {
    const TEN_YEARS_NS: i64 = 10 * 366 * 86_400 * 1_000_000_000;
    let one = if h.nanos { 1_000_000_000 } else { 1_000_000 };
    for _ in 0..CHAIN {
        if pos == data.len() {
            return true;
        }
        let Some(rec) = data.get(pos..pos + 16) else {
            return false;
        };
        let u32_at = |o: usize| read_u32(&rec[o..o + 4], h.big_endian);
        let (frac, caplen, orig) = (u32_at(4), u32_at(8), u32_at(12));
        if frac >= one || caplen > limit || orig < caplen {
            return false;
        }
        let Some((ts, _, _, next)) = record(data, pos, h, limit) else {
            return false;
        };
        if (ts - first).abs() > TEN_YEARS_NS {
            return false;
        }
        pos = next;
    }
    true
}

/// Walks the records from byte `from` until one starts at or after `to`.
fn walk_part(
    st: &MappedState,
    from: usize,
    to: usize,
    max_runs: usize,
    first: i64,
    backdated: &Backdated,
) -> Option<Part> {
    let h = &st.header;
    let limit = limit(h);
    let data = st.map.bytes();
    let mut runs: Vec<Run> = Vec::new();
    let mut pos = from;
    let mut frame = 0u64;
    let mut last = i64::MIN;
    let mut first_ts = 0;
    let mut back = 0u64;
    // The walk drops the pages behind it too (the merge faults them back from the page cache),
    // and maps the next step at once (one call, not a fault per 64 KiB), as `read_mapped` does.
    let mut walked = from;
    st.map.prefetch(from, from + 2 * STEP);
    while pos < to {
        st.map.warm(pos + AHEAD);
        let (ts, _, _, next) = record(data, pos, h, limit)?;
        frame += 1;
        if frame == 1 {
            first_ts = ts;
        } else {
            back += u64::from(backdated(first, last, ts));
        }
        if ts < last || runs.is_empty() {
            if runs.len() == max_runs {
                return None;
            }
            if let Some(r) = runs.last_mut() {
                r.end = pos;
            }
            runs.push(Run {
                pos,
                end: to,
                frame,
                ts,
            });
        }
        last = ts;
        pos = next;
        if pos - walked >= STEP {
            st.map.prefetch(pos + STEP, pos + 2 * STEP);
            st.map.release(walked, pos);
            walked = pos;
        }
    }
    Some(Part {
        runs,
        frames: frame,
        backdated: back,
        first_ts,
        last_ts: last,
        end: pos,
    })
}

/// The parts' runs as one file's (frame numbers counted on, a run that goes on across a cut
/// joined), and the frames backdated.
fn finish<'a>(
    st: &'a MappedState,
    parts: Vec<Part>,
    max_runs: usize,
    backdated: &Backdated,
) -> Option<(TimeRuns<'a>, u64)> {
    let data = st.map.bytes();
    let first = parts.first().map_or(0, |p| p.first_ts);
    let mut runs: Vec<Run> = Vec::new();
    let mut frames = 0u64;
    let mut back = 0u64;
    let mut last: Option<i64> = None;
    for p in parts {
        let mut these = p
            .runs
            .into_iter()
            .map(|r| Run {
                frame: r.frame + frames,
                ..r
            })
            .peekable();
        if let (Some(prev), Some(r)) = (last, these.peek()) {
            back += u64::from(backdated(first, prev, r.ts));
            // The frame after the cut is not earlier than the one before it: one run.
            if r.ts >= prev
                && let (Some(l), Some(r)) = (runs.last_mut(), these.next())
            {
                l.end = r.end;
            }
        }
        runs.extend(these);
        frames += p.frames;
        back += p.backdated;
        if p.frames > 0 {
            last = Some(p.last_ts);
        }
    }
    if runs.len() > max_runs {
        return None;
    }
    if let Some(l) = runs.last_mut() {
        l.end = data.len();
    }
    Some((TimeRuns { st, runs, frames }, back))
}

impl TimeRuns<'_> {
    /// Runs in the file (1 for a file in timestamp order, 0 for one without frames).
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// The first frame stamped before the frame ahead of it (where the second run starts).
    pub fn first_backdated(&self) -> Option<u64> {
        self.runs.get(1).map(|r| r.frame)
    }

    /// The map, for a consumer that reads frames after [`TimeRuns::for_each`]'s callback
    /// returns (pages are then released only behind it).
    pub fn share_map(&self) -> super::SharedMap {
        self.st.share()
    }

    /// Whether the file holds no frame.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Frames in the file.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Hands every frame to `f` by (timestamp, frame number). Also returns how far a frame
    /// moved ahead the most: the frames before it in the file that came after it (a reorder
    /// buffer of that depth or less could not have put it in place).
    pub fn for_each(&self, f: &mut dyn FnMut(&RawPacket<'_>)) -> (SourceSummary, u64) {
        let h = &self.st.header;
        let limit = limit(h);
        let data = self.st.map.bytes();
        let st = self.st;
        // Runs not yet due, the latest first key first: the next due is popped off the end.
        let mut waiting: Vec<usize> = (0..self.runs.len()).collect();
        waiting.sort_unstable_by_key(|&i| Reverse((self.runs[i].ts, self.runs[i].frame)));
        let mut at: Vec<usize> = self.runs.iter().map(|r| r.pos).collect();
        // Read pages are dropped from the process behind every run's reader, as the in-order
        // reader drops them behind itself: up to `released[i]` for run i.
        let mut released = at.clone();
        // Every byte before the reader of the first run (in file order) not yet read through
        // has been read: with many short runs none gets a step long, this mark does.
        let mut open = 0usize;
        let mut low = at.first().copied().unwrap_or(0);
        let mut heap: BinaryHeap<Reverse<(i64, u64, usize)>> = BinaryHeap::new();
        let mut delivered = 0u64;
        let mut moved = 0u64;
        loop {
            // A run is due once its first key is not after the earliest held one: every frame
            // of a run keys at or after its first.
            while let Some(&i) = waiting.last() {
                let r = &self.runs[i];
                if heap
                    .peek()
                    .is_some_and(|Reverse((ts, frame, _))| (*ts, *frame) < (r.ts, r.frame))
                {
                    break;
                }
                heap.push(Reverse((r.ts, r.frame, i)));
                waiting.pop();
            }
            let Some(Reverse((mut ts, mut frame, i))) = heap.pop() else {
                break;
            };
            // The run goes on without the heap while its next key stays before every other
            // run's (the held ones and the next one due): in a capture of a few overlapping
            // runs that is nearly every frame, one comparison instead of a push and a pop.
            let bound = match (heap.peek(), waiting.last()) {
                (Some(Reverse((t, f, _))), Some(&w)) => {
                    Some((*t, *f).min((self.runs[w].ts, self.runs[w].frame)))
                }
                (Some(Reverse((t, f, _))), None) => Some((*t, *f)),
                (None, Some(&w)) => Some((self.runs[w].ts, self.runs[w].frame)),
                (None, None) => None,
            };
            loop {
                let pos = at[i];
                // The walk read every record of the file already.
                let Some((_, bytes, orig_len, next)) = record(data, pos, h, limit) else {
                    break;
                };
                f(&RawPacket {
                    frame,
                    ts_ns: ts,
                    link: h.link,
                    data: bytes,
                    orig_len,
                });
                // Frames before it in the file: frame - 1; delivered before it: `delivered`.
                moved = moved.max((frame - 1).saturating_sub(delivered));
                delivered += 1;
                at[i] = next;
                st.map.warm(next + AHEAD);
                if next - released[i] >= STEP {
                    self.st.release(released[i], next, delivered);
                    released[i] = next;
                }
                if i == open {
                    while open < at.len() && at[open] >= self.runs[open].end {
                        open += 1;
                    }
                    let mark = at.get(open).copied().unwrap_or(data.len());
                    if mark - low >= STEP {
                        self.st.release(low, mark, delivered);
                        low = mark;
                    }
                }
                if next >= self.runs[i].end {
                    break;
                }
                let Some((next_ts, ..)) = record(data, next, h, limit) else {
                    break;
                };
                frame += 1;
                ts = next_ts;
                if bound.is_some_and(|b| (ts, frame) > b) {
                    heap.push(Reverse((ts, frame, i)));
                    break;
                }
            }
        }
        let summary = SourceSummary {
            packets: delivered,
            ..Default::default()
        };
        (summary, moved)
    }
}

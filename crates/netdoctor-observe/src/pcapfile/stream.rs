//! A mapped capture merged by timestamp while its record headers are still being walked.
//!
//! `super::runs` walks every record header of the file before the first frame is merged:
//! a pass over the whole map that reads it from memory once more and, since the walk drops
//! the pages behind it, maps every page twice (session 20: a third of `analyze -j 2`'s wall
//! time on the bench capture). Here the merge's own thread walks a [`CHUNK`] (256 KiB) at a
//! time, at most [`LEAD`] ahead of the oldest frame not read yet, and merges what it walked
//! while its pages are mapped and its cache lines still in the core's cache: one pass over
//! memory, the pages mapped once (`MADV_POPULATE_READ` by the walk, released by the merge).
//! A walker thread of its own was tried (session 21): on 2 cores its third thread cost ~5 %
//! more CPU than the walk on the reader (the frames read on another core), for no gain.
//!
//! The merge hands on a frame only once the walk has passed it, and only if no frame walked
//! after it keys before it; what it cannot know is whether a run the walk has not reached yet
//! starts before a frame already handed on. So it stays [`HOLD_NS`] of capture time behind the
//! last frame walked (or twice the furthest a run started back so far), and checks each run as
//! the walk finds it: a run that starts before the last frame handed on ([`Abort::Late`]:
//! frames appended far out of time order, as `mergecap -a` writes), more runs than the caller
//! allows, a merge held back by a run the walk cannot go [`LEAD`] past, or anything the full
//! walk would refuse (a record too long, cut short in a file out of order) stops the merge with
//! an [`Abort`]: the caller drops what it analyzed and reads the file as before (walk first,
//! then [`super::TimeRuns`], the reorder buffer or file order). When it ends, the frames were
//! handed on exactly as [`super::TimeRuns::for_each`] (or, for a file in order, the in-order
//! reader) hands them on.
//!
//! A capture taken on several CPUs or NIC queues (runs backdated by microseconds) does not
//! stop: the bench capture's 57 runs start at most 35 µs before the frame ahead of them.

use super::mapped::{AHEAD, MappedState, STEP};
use super::runs::{Backdated, Run, limit, record};
use super::{is_pcap_magic, read_u32, truncated_warning};
use crate::SourceSummary;
use netdoctor_core::RawPacket;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bytes the walk goes ahead of the merge's oldest unread frame at most: what it maps ahead
/// stays within this (plus the merge's window).
pub const LEAD: usize = 4 << 20;

/// Bytes walked at a time, each time the merge has read what was walked.
const CHUNK: usize = 256 << 10;

/// How far (in capture time) the merge stays behind the last frame walked at least: a run
/// the walk finds next may start that much before it without stopping the merge. Twice the
/// furthest a run started back so far is kept if more; when the walk is [`LEAD`] ahead the
/// merge goes on up to the last frame walked.
const HOLD_NS: i64 = 10_000_000;

/// Why a merge during the walk stopped before the end of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abort {
    /// A run starts before a frame already handed on.
    Late,
    /// More runs than the caller allows.
    Runs,
    /// A run holds the merge back and the walk cannot go [`LEAD`] past it.
    Lead,
    /// A record too long or that starts with a pcap file header (the reader's errors), one
    /// cut short in a file out of order, or runs that only the clamp puts in order: the
    /// full walk's caller reads such a file another way.
    Odd,
}

/// What a merge during the walk found, for the report.
#[derive(Debug)]
pub struct Streamed {
    /// Frames handed on, and the cut-short warning of a truncated file (in order).
    pub summary: SourceSummary,
    /// Runs in timestamp order (1 for a file in order).
    pub runs: usize,
    /// How far a frame moved ahead the most ([`super::TimeRuns::for_each`]).
    pub moved: u64,
    /// Frames the `backdated` judgement called backdated.
    pub backdated: u64,
    /// Where the second run starts.
    pub first_backdated: Option<u64>,
}

/// How the walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Done,
    Cut,
    Bad(Abort),
}

/// What the walk found so far: the runs since the last hand-over and where it got.
#[derive(Default)]
struct Found {
    new: Vec<Run>,
    /// The next record's position.
    frontier: usize,
    /// The last walked frame's key (timestamp, frame number).
    last: (i64, u64),
    end: Option<Ending>,
    backdated: u64,
    runs: usize,
    /// A run started at a frame the clamp does not call backdated.
    clamp_only: bool,
    /// The furthest a run started before the frame ahead of it (ns).
    deepest: i64,
}

/// The walk over the record headers, a [`CHUNK`] at a time.
struct Walker<'a> {
    st: &'a MappedState,
    limit: u32,
    max_runs: usize,
    pos: usize,
    frame: u64,
    first: i64,
    last: i64,
    /// Mapped ahead up to here (`MADV_POPULATE_READ`): the merge finds the pages mapped.
    mapped: usize,
    found: Found,
}

impl<'a> Walker<'a> {
    fn new(st: &'a MappedState, max_runs: usize) -> Walker<'a> {
        Walker {
            st,
            limit: limit(&st.header),
            max_runs,
            pos: 24,
            frame: 0,
            first: 0,
            last: i64::MIN,
            mapped: 0,
            found: Found {
                frontier: 24,
                last: (i64::MIN, 0),
                ..Found::default()
            },
        }
    }

    /// Walks the records from where it stopped until one starts at or after `to`, or the
    /// walk ends.
    fn walk_to(&mut self, to: usize, backdated: &Backdated) {
        let data = self.st.map.bytes();
        let h = &self.st.header;
        let to = to.min(data.len());
        if self.mapped < to {
            let end = (to + STEP).min(data.len());
            self.st.map.prefetch(self.mapped, end);
            self.mapped = end;
        }
        while self.pos < to && self.found.end.is_none() {
            self.st.map.warm(self.pos + AHEAD);
            let pos = self.pos;
            let Some((ts, bytes, _, next)) = record(data, pos, h, self.limit) else {
                // Too long is the reader's error; cut short its warning.
                let too_long = data
                    .get(pos + 8..pos + 12)
                    .is_some_and(|c| read_u32(c, h.big_endian) > self.limit);
                self.found.end = Some(if too_long {
                    Ending::Bad(Abort::Odd)
                } else {
                    Ending::Cut
                });
                break;
            };
            // An empty record may be a second file header (`cat`): the reader's error.
            if bytes.is_empty()
                && let Some(&[a, b, c, d]) = data.get(pos..pos + 4)
                && is_pcap_magic([a, b, c, d])
            {
                self.found.end = Some(Ending::Bad(Abort::Odd));
                break;
            }
            self.frame += 1;
            let starts = if self.frame == 1 {
                self.first = ts;
                true
            } else {
                let back = backdated(self.first, self.last, ts);
                self.found.backdated += u64::from(back);
                if ts < self.last {
                    self.found.clamp_only |= !back;
                    self.found.deepest = self.found.deepest.max(self.last.saturating_sub(ts));
                }
                ts < self.last
            };
            if starts {
                if self.found.runs == self.max_runs {
                    self.found.end = Some(Ending::Bad(Abort::Runs));
                    break;
                }
                self.found.runs += 1;
                self.found.new.push(Run {
                    pos,
                    end: usize::MAX,
                    frame: self.frame,
                    ts,
                });
            }
            self.last = ts;
            self.pos = next;
        }
        if self.pos >= data.len() && self.found.end.is_none() {
            self.found.end = Some(Ending::Done);
        }
        self.found.frontier = self.pos;
        self.found.last = (self.last, self.frame);
    }

    /// Hands what was found since the last call over to `to`.
    fn hand_over(&mut self, to: &mut Found) {
        to.new.append(&mut self.found.new);
        to.frontier = self.found.frontier;
        to.last = self.found.last;
        to.end = self.found.end;
        to.backdated = self.found.backdated;
        to.runs = self.found.runs;
        to.clamp_only = self.found.clamp_only;
        to.deepest = self.found.deepest;
    }
}

/// The walk for the merge: a [`CHUNK`] more each time the merge needs more.
impl Walker<'_> {
    /// Walks on and hands over what it found to `to`; the merge has read every byte before
    /// `low`. `false` when the walk is [`LEAD`] ahead of `low` (nothing walked).
    fn more(&mut self, low: usize, backdated: &Backdated, to: &mut Found) -> bool {
        if self.pos >= low + LEAD && self.found.end.is_none() {
            return false;
        }
        self.walk_to((self.pos + CHUNK).min(low + LEAD), backdated);
        self.hand_over(to);
        true
    }
}

/// Hands every frame of `st` to `f` by (timestamp, frame number) while the walk goes on;
/// `Err` when the merge had to stop (the frames handed on so far are to be dropped). See the
/// module docs.
pub(super) fn merge_walking(
    st: &MappedState,
    max_runs: usize,
    backdated: &Backdated,
    f: &mut dyn FnMut(&RawPacket<'_>),
) -> Result<Streamed, Abort> {
    let mut walker = Walker::new(st, max_runs);
    let h = &st.header;
    let limit = limit(h);
    let data = st.map.bytes();
    let mut found = Found::default();
    let mut runs: Vec<Run> = Vec::new();
    // Per run: its reader's position and frame number, and what is released behind it.
    let mut at: Vec<usize> = Vec::new();
    let mut frame_at: Vec<u64> = Vec::new();
    let mut released: Vec<usize> = Vec::new();
    let mut heap: BinaryHeap<Reverse<(i64, u64, usize)>> = BinaryHeap::new();
    // The last run, whose reader reached the walk's frontier: its next key is not known yet.
    let mut stalled: Option<usize> = None;
    let mut ended = false;
    // As in `TimeRuns::for_each`: every byte before the first unfinished run's reader is read.
    let mut open = 0usize;
    let mut low = 24usize;
    let mut delivered = 0u64;
    let mut moved = 0u64;
    let mut last_out: Option<(i64, u64)> = None;
    loop {
        // Walk on until the earliest held frame keys at or before the horizon: a frame not
        // walked yet keys after the last walked one, or starts a run (checked as it comes);
        // held back by the hold unless the walker waits for the merge.
        let mut blocked = false;
        let horizon = loop {
            let horizon = if blocked {
                found.last
            } else {
                let hold = HOLD_NS.max(found.deepest.saturating_mul(2));
                (found.last.0.saturating_sub(hold), u64::MAX)
            };
            if ended
                || heap
                    .peek()
                    .is_some_and(|Reverse((ts, fr, _))| (*ts, *fr) <= horizon)
            {
                break horizon;
            }
            if blocked {
                // The walker waits for the merge, which waits for the walker.
                return Err(Abort::Lead);
            }
            if !walker.more(low, backdated, &mut found) {
                blocked = true;
                continue;
            }
            if let Some(Ending::Bad(why)) = found.end {
                return Err(why);
            }
            ended = found.end.is_some();
            for r in found.new.drain(..) {
                if last_out.is_some_and(|k| (r.ts, r.frame) < k) {
                    return Err(Abort::Late);
                }
                if let Some(p) = runs.last_mut() {
                    p.end = r.pos;
                }
                heap.push(Reverse((r.ts, r.frame, runs.len())));
                at.push(r.pos);
                frame_at.push(r.frame);
                released.push(r.pos);
                runs.push(r);
            }
            if let Some(l) = runs.last_mut() {
                l.end = found.frontier;
            }
            if let Some(i) = stalled.take()
                && at[i] < runs[i].end
            {
                // Walked now: the run goes on.
                if let Some((ts, ..)) = record(data, at[i], h, limit) {
                    heap.push(Reverse((ts, frame_at[i], i)));
                }
            }
        };
        let Some(Reverse((mut ts, mut frame, i))) = heap.pop() else {
            break;
        };
        let held = heap.peek().map(|Reverse((t, fr, _))| (*t, *fr));
        let bound = if ended {
            held
        } else {
            Some(held.map_or(horizon, |b| b.min(horizon)))
        };
        loop {
            let pos = at[i];
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
            last_out = Some((ts, frame));
            moved = moved.max((frame - 1).saturating_sub(delivered));
            delivered += 1;
            at[i] = next;
            frame_at[i] = frame + 1;
            st.map.warm(next + AHEAD);
            if next - released[i] >= STEP {
                st.release(released[i], next, delivered);
                released[i] = next;
            }
            if i == open {
                // The last run is finished only when the walk is.
                while open < at.len()
                    && at[open] >= runs[open].end
                    && (ended || open + 1 < runs.len())
                {
                    open += 1;
                }
                let mark = at.get(open).copied().unwrap_or(data.len());
                if mark - low >= STEP {
                    st.release(low, mark, delivered);
                    low = mark;
                }
            }
            if next >= runs[i].end {
                if !ended && i + 1 == runs.len() {
                    stalled = Some(i);
                }
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
    // The full walk's caller reads these another way: a file cut short and out of order
    // (the reorder buffer), runs that only the clamp puts in order (file order).
    let cut = found.end == Some(Ending::Cut);
    if (cut && found.backdated > 0)
        || (found.backdated == 0 && (runs.len() > 1 || found.clamp_only))
    {
        return Err(Abort::Odd);
    }
    let mut summary = SourceSummary {
        packets: delivered,
        ..Default::default()
    };
    if cut {
        summary.warnings.push(truncated_warning(delivered));
    }
    Ok(Streamed {
        summary,
        runs: runs.len(),
        moved,
        backdated: found.backdated,
        first_backdated: runs.get(1).map(|r| r.frame),
    })
}

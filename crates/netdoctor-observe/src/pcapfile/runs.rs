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
//! Only a classic pcap file on the mapped path with no record the streaming reader would
//! complain of (cut short, too long) is taken: anything else gives `None` and the caller keeps
//! the streaming reader and its warnings.

use super::mapped::{MappedState, STEP};
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
    pos: usize,
    end: usize,
    frame: u64,
    ts: i64,
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
fn record<'d>(
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

fn limit(h: &LegacyHeader) -> u32 {
    if h.snaplen == 0 {
        MAX_CAPLEN
    } else {
        h.snaplen.min(MAX_CAPLEN)
    }
}

/// Walks the record headers of `st`, calling `on_stamp` with every timestamp in file order,
/// and splits the file where a timestamp is earlier than the one before it. `None` when a
/// record is cut short or too long, or there are more than `max_runs` runs.
pub(super) fn walk<'a>(
    st: &'a MappedState,
    max_runs: usize,
    on_stamp: &mut dyn FnMut(i64),
) -> Option<TimeRuns<'a>> {
    let h = &st.header;
    let limit = limit(h);
    let data = st.map.bytes();
    let mut runs: Vec<Run> = Vec::new();
    let mut pos = 24usize;
    let mut frame = 0u64;
    let mut last = i64::MIN;
    // The walk drops the pages behind it too (the merge faults them back from the page cache).
    let mut walked = 0usize;
    while pos < data.len() {
        let (ts, _, _, next) = record(data, pos, h, limit)?;
        frame += 1;
        if ts < last || runs.is_empty() {
            if runs.len() == max_runs {
                return None;
            }
            if let Some(r) = runs.last_mut() {
                r.end = pos;
            }
            runs.push(Run {
                pos,
                end: data.len(),
                frame,
                ts,
            });
        }
        on_stamp(ts);
        last = ts;
        pos = next;
        if pos - walked >= STEP {
            st.map.release(walked, pos);
            walked = pos;
        }
    }
    Some(TimeRuns {
        st,
        runs,
        frames: frame,
    })
}

impl TimeRuns<'_> {
    /// Runs in the file (1 for a file in timestamp order, 0 for one without frames).
    pub fn len(&self) -> usize {
        self.runs.len()
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
            let Some(Reverse((ts, frame, i))) = heap.pop() else {
                break;
            };
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
            if next - released[i] >= STEP {
                self.st.map.release(released[i], next);
                released[i] = next;
            }
            if i == open {
                while open < at.len() && at[open] >= self.runs[open].end {
                    open += 1;
                }
                let mark = at.get(open).copied().unwrap_or(data.len());
                if mark - low >= STEP {
                    self.st.map.release(low, mark);
                    low = mark;
                }
            }
            if next < self.runs[i].end
                && let Some((ts, ..)) = record(data, next, h, limit)
            {
                heap.push(Reverse((ts, frame + 1, i)));
            }
        }
        let summary = SourceSummary {
            packets: delivered,
            ..Default::default()
        };
        (summary, moved)
    }
}

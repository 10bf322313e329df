//! Frames put back in timestamp order before the analysis, as `reordercap` sorts a file.
//!
//! A capture taken on several NIC queues or CPUs (or merged from several captures) can hold a
//! frame after one it preceded on the wire: its timestamp is earlier than its predecessor's.
//! Read in file order, a server's segment written after the client's ACK of it looks resent
//! though the client had it ("spurious retransmission"), an ACK of data not yet read looks
//! like a capture gap. The timestamps are the wire's order, the file's is the capture's
//! queueing: [`TimeOrder`] holds the last [`DEPTH`] frames and hands them on by timestamp
//! (file order among equal ones). Frame numbers stay the file's, so evidence can be found in
//! Wireshark. A frame later than the window can mend stays where it is and is counted by the
//! analyzer again (`CaptureQuality::backdated_frames`). A mapped classic pcap file whose frames
//! are a few long runs in time order (captures appended with `mergecap -a`) is not read through
//! this window at all: `netdoctor_observe::pcapfile::TimeRuns` merges its runs by the same key.
//!
//! Holding frames costs a copy of each, so `analyze` sorts only a file that holds a backdated
//! frame (and can be read again): [`StampOrder`] finds the first one on the analyzer's own
//! clamped timestamps. An uncompressed file's stamps are walked before any analysis (a
//! loopback capture's first backdated frame can come late: frame 229,977 of 251,541 in
//! bench/README.md's); a gzip'd one is analyzed in file order until that frame and then again.
//! [`StampOrder`] also counts them over the sorted reading exactly as the analyzer in file
//! order would have. Held frames keep their buffers for the next frame (up to [`REUSE_BYTES`]
//! each), not an allocation a frame.

use std::collections::VecDeque;

use crate::packet::{LinkType, RawPacket};

/// Frames held back: a multi-queue capture interleaves frames of a few interrupts' batches.
pub const DEPTH: usize = 4096;

/// A held frame's buffer is kept for the next frame up to this capacity (bounds what
/// [`DEPTH`] buffers keep after a burst of large frames to 8 MiB); larger ones are freed.
pub const REUSE_BYTES: usize = 2048;

/// Counts frames stamped before the frame ahead of them, as the analyzer counts them
/// (`CaptureQuality::backdated_frames`: on timestamps clamped near the first one).
#[derive(Default)]
pub struct StampOrder {
    /// The first timestamp (what the clamp keeps others near) and the last one, raw.
    first: i64,
    last: i64,
    started: bool,
    backdated: u64,
}

impl StampOrder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next frame's timestamp in file order; true when it is backdated.
    #[inline]
    pub fn push(&mut self, ts_ns: i64) -> bool {
        if !self.started {
            (self.first, self.last, self.started) = (ts_ns, ts_ns, true);
            return false;
        }
        let back = backdated_after(self.first, self.last, ts_ns);
        self.last = ts_ns;
        self.backdated += u64::from(back);
        back
    }

    /// Backdated frames so far.
    pub fn backdated(&self) -> u64 {
        self.backdated
    }
}

/// Whether a frame stamped `ts` right after one stamped `prev` is backdated as the analyzer
/// counts it (on timestamps clamped near the capture's `first`): what [`StampOrder`] counts,
/// for a walk that counts parts of a file apart.
#[inline]
pub fn backdated_after(first: i64, prev: i64, ts: i64) -> bool {
    // The clamp keeps order, so a timestamp not before the last raw one is not backdated after
    // the clamp either: one comparison for nearly every frame.
    ts < prev && super::clamp_stamp(first, ts) < super::clamp_stamp(first, prev)
}

/// One frame held back, owning its bytes.
struct Held {
    frame: u64,
    ts_ns: i64,
    link: LinkType,
    orig_len: u32,
    data: Vec<u8>,
}

/// A bounded buffer that re-sorts frames by timestamp (see the module docs).
#[derive(Default)]
pub struct TimeOrder {
    /// (timestamp, frame, slot) of the held frames, kept sorted, earliest first. Not a heap:
    /// frames come nearly in order, so a new one goes in at the back or a few places before it
    /// (one or two comparisons), where a heap's pop sifts through all its levels.
    held: VecDeque<(i64, u64, usize)>,
    slots: Vec<Held>,
    free: Vec<usize>,
}

impl TimeOrder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one frame; hands on the earliest held one when more than [`DEPTH`] are held.
    pub fn push(&mut self, pkt: &RawPacket<'_>, out: &mut impl FnMut(&RawPacket<'_>)) {
        let slot = match self.free.pop() {
            Some(i) => {
                let h = &mut self.slots[i];
                h.frame = pkt.frame;
                h.ts_ns = pkt.ts_ns;
                h.link = pkt.link;
                h.orig_len = pkt.orig_len;
                h.data.clear();
                h.data.extend_from_slice(pkt.data);
                i
            }
            None => {
                self.slots.push(Held {
                    frame: pkt.frame,
                    ts_ns: pkt.ts_ns,
                    link: pkt.link,
                    orig_len: pkt.orig_len,
                    data: pkt.data.to_vec(),
                });
                self.slots.len() - 1
            }
        };
        let key = (pkt.ts_ns, pkt.frame, slot);
        let mut at = self.held.len();
        while at > 0 && self.held[at - 1] > key {
            at -= 1;
        }
        self.held.insert(at, key);
        if self.held.len() > DEPTH {
            self.pop(out);
        }
    }

    /// Hands on every frame still held, in timestamp order.
    pub fn finish(&mut self, out: &mut impl FnMut(&RawPacket<'_>)) {
        while !self.held.is_empty() {
            self.pop(out);
        }
    }

    fn pop(&mut self, out: &mut impl FnMut(&RawPacket<'_>)) {
        let Some((_, _, slot)) = self.held.pop_front() else {
            return;
        };
        let h = &mut self.slots[slot];
        out(&RawPacket {
            frame: h.frame,
            ts_ns: h.ts_ns,
            link: h.link,
            data: &h.data,
            orig_len: h.orig_len,
        });
        if h.data.capacity() > REUSE_BYTES {
            h.data = Vec::new();
        }
        self.free.push(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stamps: &[i64]) -> Vec<u64> {
        let mut o = TimeOrder::new();
        let mut got = Vec::new();
        let data = [0u8; 4];
        for (i, &ts) in stamps.iter().enumerate() {
            let p = RawPacket {
                frame: i as u64 + 1,
                ts_ns: ts,
                link: LinkType::Ethernet,
                data: &data,
                orig_len: 4,
            };
            o.push(&p, &mut |p| got.push(p.frame));
        }
        o.finish(&mut |p| got.push(p.frame));
        got
    }

    #[test]
    fn frames_come_out_by_timestamp_and_by_file_order_among_equal_ones() {
        assert_eq!(run(&[10, 30, 20, 20, 40]), vec![1, 3, 4, 2, 5]);
        assert_eq!(run(&[1, 2, 3]), vec![1, 2, 3]);
    }

    #[test]
    fn stamp_order_counts_frames_before_the_frame_ahead() {
        let mut o = StampOrder::new();
        let back: Vec<bool> = [10, 30, 20, 20, 40, 5].iter().map(|&t| o.push(t)).collect();
        assert_eq!(back, [false, false, true, false, false, true]);
        assert_eq!(o.backdated(), 2);
        // Beyond the clamp's bound two timestamps compare equal, as the analyzer sees them.
        let mut o = StampOrder::new();
        let far = 1i64 << 60;
        assert!(!o.push(0) && !o.push(far) && !o.push(far - 1));
        assert!(o.push(5));
        assert_eq!(o.backdated(), 1);
    }

    #[test]
    fn held_buffers_are_reused_and_large_ones_freed() {
        let mut o = TimeOrder::new();
        let big = vec![7u8; REUSE_BYTES * 4];
        let small = [1u8; 60];
        let mut lens = Vec::new();
        for i in 0..(DEPTH as u64 * 3) {
            let data: &[u8] = if i % 5 == 0 { &big } else { &small };
            let p = RawPacket {
                frame: i + 1,
                ts_ns: i as i64,
                link: LinkType::Ethernet,
                data,
                orig_len: data.len() as u32,
            };
            o.push(&p, &mut |p| lens.push((p.frame, p.data.len(), p.data[0])));
        }
        o.finish(&mut |p| lens.push((p.frame, p.data.len(), p.data[0])));
        // Every frame comes out once, in order, with its own bytes (no stale tail of a reused one).
        assert_eq!(lens.len(), DEPTH * 3);
        for (i, &(frame, len, first)) in lens.iter().enumerate() {
            assert_eq!(frame, i as u64 + 1);
            let want = if i % 5 == 0 {
                (big.len(), 7)
            } else {
                (small.len(), 1)
            };
            assert_eq!((len, first), want);
        }
        // No more than DEPTH + 1 buffers, none of them kept larger than REUSE_BYTES once free.
        assert!(o.slots.len() <= DEPTH + 1);
        assert!(o.slots.iter().all(|h| h.data.capacity() <= REUSE_BYTES));
    }

    #[test]
    fn a_frame_later_than_the_window_stays_where_it_is() {
        let mut stamps: Vec<i64> = (1..=(DEPTH as i64 + 2)).collect();
        stamps.push(0);
        let got = run(&stamps);
        assert_eq!(got.len(), stamps.len());
        // The two frames handed on before the late one arrived stay first.
        assert_eq!(&got[..3], &[1, 2, DEPTH as u64 + 3]);
    }
}

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
//! analyzer again (`CaptureQuality::backdated_frames`).
//!
//! Holding frames costs a copy of each, so `analyze` reads a file in order first and sorts only
//! when that reading counted a backdated frame (and the file can be read again).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::packet::{LinkType, RawPacket};

/// Frames held back: a multi-queue capture interleaves frames of a few interrupts' batches.
pub const DEPTH: usize = 4096;

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
    /// (timestamp, frame, slot) of the held frames, earliest first.
    heap: BinaryHeap<Reverse<(i64, u64, usize)>>,
    slots: Vec<Option<Held>>,
    free: Vec<usize>,
}

impl TimeOrder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one frame; hands on the earliest held one when more than [`DEPTH`] are held.
    pub fn push(&mut self, pkt: &RawPacket<'_>, out: &mut impl FnMut(&RawPacket<'_>)) {
        let held = Held {
            frame: pkt.frame,
            ts_ns: pkt.ts_ns,
            link: pkt.link,
            orig_len: pkt.orig_len,
            data: pkt.data.to_vec(),
        };
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(held);
                i
            }
            None => {
                self.slots.push(Some(held));
                self.slots.len() - 1
            }
        };
        self.heap.push(Reverse((pkt.ts_ns, pkt.frame, slot)));
        if self.heap.len() > DEPTH {
            self.pop(out);
        }
    }

    /// Hands on every frame still held, in timestamp order.
    pub fn finish(&mut self, out: &mut impl FnMut(&RawPacket<'_>)) {
        while !self.heap.is_empty() {
            self.pop(out);
        }
    }

    fn pop(&mut self, out: &mut impl FnMut(&RawPacket<'_>)) {
        let Some(Reverse((_, _, slot))) = self.heap.pop() else {
            return;
        };
        if let Some(h) = self.slots[slot].take() {
            out(&RawPacket {
                frame: h.frame,
                ts_ns: h.ts_ns,
                link: h.link,
                data: &h.data,
                orig_len: h.orig_len,
            });
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
    fn a_frame_later_than_the_window_stays_where_it_is() {
        let mut stamps: Vec<i64> = (1..=(DEPTH as i64 + 2)).collect();
        stamps.push(0);
        let got = run(&stamps);
        assert_eq!(got.len(), stamps.len());
        // The two frames handed on before the late one arrived stay first.
        assert_eq!(&got[..3], &[1, 2, DEPTH as u64 + 3]);
    }
}

//! In-order reassembly of one direction's byte stream, for an exchange source that reads the
//! bytes themselves (the HTTP/2 frame reader, `super::h2`), placed before it.
//!
//! A segment past a hole (lost before the capture point, or reordered) is held until the
//! segment that fills the hole arrives (the retransmission, or the late one); then the held
//! bytes behind it are handed on in sequence order with their own packet and the filling
//! one ([`Run::held`]): the filling segment's arrival is when the receiver's application
//! got them (TCP delivers in order), which is what head-of-line blocking measures, and
//! their own is when they were sent.
//!
//! Bytes the capture never held are not waited for: a hole the receiver acknowledged without
//! the capture ever seeing its bytes (a capture drop, frames cut out with `editcap`) is
//! handed on as unknown bytes at that ACK, and what was held behind it goes on with its own
//! packets (the network did not hold it). Memory is bounded: at most [`MAX_HELD_BYTES`]
//! captured bytes in [`MAX_HELD_SEGS`] segments per direction; past either, the first hole is
//! given up (its bytes unknown to the reader, as with no reassembly) and counted in
//! [`Reassembler::overflows`]. A connection's end hands on what is still held the same way.
//!
//! The direction-turns source (HTTP/1, TLS records: `super::http`) has nothing of this to
//! share: it reads only the first bytes of each new segment and cuts exchanges where the
//! sending side changes, so it never needs the bytes in order. Hand-written: stream
//! reassembly crates (for IDS use) keep the whole stream or deliver bytes without the
//! segment that delivered them; here only out-of-order bytes are kept, and the delivering
//! packet is the point.

use super::flow::seq_gt;
use crate::event::Pkt;

/// Captured bytes held per direction at most (out-of-order data waiting for a hole).
pub(crate) const MAX_HELD_BYTES: usize = 1024 * 1024;
/// Segments held per direction at most.
pub(crate) const MAX_HELD_SEGS: usize = 2048;

/// Bytes handed on in sequence order: `len` bytes at `seq`, of which `bytes` (a prefix) were
/// captured, that came in `pkt`. A `seq` past the end of the previous run is a hole that will
/// not be filled (its bytes unknown).
pub(crate) struct Run<'a> {
    pub pkt: Pkt,
    /// They waited behind a hole until this segment filled it.
    pub held: Option<Pkt>,
    pub seq: u32,
    pub bytes: &'a [u8],
    pub len: u32,
}

struct Held {
    seq: u32,
    len: u32,
    pkt: Pkt,
    bytes: Vec<u8>,
}

/// The reassembler of one direction.
#[derive(Default)]
pub(crate) struct Reassembler {
    /// The next sequence number to hand on (`None` until the first segment).
    next: Option<u32>,
    /// Segments past a hole, by sequence number.
    held: Vec<Held>,
    held_bytes: usize,
    /// Holes given up because too much was held behind them.
    pub overflows: u32,
    /// Holes filled by a later segment (a retransmission or a late one).
    pub filled: u32,
    /// Holes handed on as unknown: acknowledged by the receiver, never captured.
    pub gaps: u32,
}

impl Reassembler {
    /// A reassembler whose stream continues at `next` (when known: data before it was sent
    /// before this reader began).
    pub(crate) fn new(next: Option<u32>) -> Reassembler {
        Reassembler {
            next,
            ..Reassembler::default()
        }
    }

    /// A segment `pkt` of `len` bytes at `seq`, of which `captured` (a prefix) was captured.
    pub(crate) fn push(
        &mut self,
        pkt: Pkt,
        seq: u32,
        captured: &[u8],
        len: u32,
        out: &mut impl FnMut(Run<'_>),
    ) {
        let captured = &captured[..captured.len().min(len as usize)];
        let next = *self.next.get_or_insert(seq);
        let end = seq.wrapping_add(len);
        if len == 0 || !seq_gt(end, next) {
            // Handed on already (a retransmission of data the capture saw).
            return;
        }
        if seq_gt(seq, next) {
            self.hold(pkt, seq, captured, len);
            while self.held_bytes > MAX_HELD_BYTES || self.held.len() > MAX_HELD_SEGS {
                self.overflows += 1;
                self.give_up_hole(out);
            }
            return;
        }
        deliver(pkt, None, seq, captured, len, next, out);
        self.next = Some(end);
        if !self.held.is_empty() {
            let before = self.held.len();
            // Held data behind the hole reached the receiver's application with this one.
            self.drain(Some(pkt), out);
            if self.held.len() < before {
                self.filled += 1;
            }
        }
    }

    /// The receiver acknowledged everything below `ack` (`pkt`): bytes below it that never
    /// came are a capture gap, handed on as unknown; held data after them goes on.
    pub(crate) fn on_ack(&mut self, ack: u32, out: &mut impl FnMut(Run<'_>)) {
        while let Some(next) = self.next
            && seq_gt(ack, next)
        {
            let to = match self.held.first() {
                Some(h) if seq_gt(ack, h.seq) => h.seq,
                _ => ack,
            };
            if seq_gt(to, next) {
                self.gaps += 1;
                self.next = Some(to);
            }
            if self.held.first().is_none_or(|h| seq_gt(h.seq, to)) {
                break;
            }
            self.drain(None, out);
        }
    }

    /// The connection (or the capture) ends: what is still held goes on, holes unknown.
    pub(crate) fn flush(&mut self, out: &mut impl FnMut(Run<'_>)) {
        while !self.held.is_empty() {
            self.give_up_hole(out);
        }
    }

    /// Captured bytes held now.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    fn hold(&mut self, pkt: Pkt, seq: u32, captured: &[u8], len: u32) {
        let next = self.next.unwrap_or(seq);
        let off = seq.wrapping_sub(next);
        let at = self
            .held
            .partition_point(|h| h.seq.wrapping_sub(next) <= off);
        self.held_bytes += captured.len();
        self.held.insert(
            at,
            Held {
                seq,
                len,
                pkt,
                bytes: captured.to_vec(),
            },
        );
    }

    /// The first hole is not waited for any more: skip to the first held segment.
    fn give_up_hole(&mut self, out: &mut impl FnMut(Run<'_>)) {
        if let Some(h) = self.held.first() {
            self.next = Some(h.seq);
            self.drain(None, out);
        }
    }

    /// Hands on the held segments that now continue the stream, held until `by` (the
    /// segment that filled the hole; `None`: the hole was not waited for).
    fn drain(&mut self, by: Option<Pkt>, out: &mut impl FnMut(Run<'_>)) {
        let Some(mut next) = self.next else {
            return;
        };
        let mut k = 0;
        while k < self.held.len() && !seq_gt(self.held[k].seq, next) {
            let h = &self.held[k];
            let end = h.seq.wrapping_add(h.len);
            if seq_gt(end, next) {
                deliver(h.pkt, by, h.seq, &h.bytes, h.len, next, out);
                next = end;
            }
            self.held_bytes -= h.bytes.len();
            k += 1;
        }
        self.held.drain(..k);
        self.next = Some(next);
    }
}

/// Hands on the part of `[seq, seq + len)` from `next` on.
fn deliver(
    pkt: Pkt,
    held: Option<Pkt>,
    seq: u32,
    captured: &[u8],
    len: u32,
    next: u32,
    out: &mut impl FnMut(Run<'_>),
) {
    let over = next.wrapping_sub(seq);
    let over = if seq_gt(next, seq) { over } else { 0 };
    let bytes = captured.get(over as usize..).unwrap_or(&[]);
    out(Run {
        pkt,
        held,
        seq: seq.wrapping_add(over),
        bytes,
        len: len - over,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags;

    fn pkt(frame: u64) -> Pkt {
        Pkt {
            frame,
            ts_ns: frame as i64 * 1000,
            from_server: true,
            flags: TcpFlags(0x18),
            len: 0,
        }
    }

    /// Runs as (frame, seq, captured bytes, len) and the frame that filled their hole.
    type Got = Vec<(u64, u32, Vec<u8>, u32)>;

    fn sink<'a>(got: &'a mut Got, held: &'a mut Vec<u64>) -> impl FnMut(Run<'_>) + 'a {
        |r| {
            got.push((r.pkt.frame, r.seq, r.bytes.to_vec(), r.len));
            held.push(r.held.map_or(0, |p| p.frame));
        }
    }

    #[test]
    fn a_retransmission_delivers_what_waited_behind_it_at_its_own_time() {
        let mut r = Reassembler::new(None);
        let (mut got, mut held) = (Got::new(), Vec::new());
        r.push(pkt(1), 100, b"aaaa", 4, &mut sink(&mut got, &mut held));
        // 104..108 lost; 108..116 arrive first.
        r.push(pkt(2), 108, b"cccc", 4, &mut sink(&mut got, &mut held));
        r.push(pkt(3), 112, b"dd", 4, &mut sink(&mut got, &mut held));
        assert_eq!(got.len(), 1);
        assert_eq!(r.held_bytes(), 6);
        // Duplicate ACKs (at the hole) change nothing.
        r.on_ack(104, &mut sink(&mut got, &mut held));
        assert_eq!(got.len(), 1);
        // The retransmission, re-segmented over part of what was held.
        r.push(pkt(9), 104, b"bbbbcc", 6, &mut sink(&mut got, &mut held));
        assert_eq!(
            got,
            [
                (1, 100, b"aaaa".to_vec(), 4),
                (9, 104, b"bbbbcc".to_vec(), 6),
                (2, 110, b"cc".to_vec(), 2),
                (3, 112, b"dd".to_vec(), 4),
            ]
        );
        // What waited behind the hole was handed on when frame 9 filled it.
        assert_eq!(held, [0, 0, 9, 9]);
        assert_eq!(
            (r.filled, r.gaps, r.overflows, r.held_bytes()),
            (1, 0, 0, 0)
        );
        // An old copy of delivered data is dropped.
        r.push(pkt(10), 100, b"aaaa", 4, &mut sink(&mut got, &mut held));
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn a_capture_gap_is_not_waited_for_past_the_receivers_ack() {
        let mut r = Reassembler::new(Some(100));
        let (mut got, mut held) = (Got::new(), Vec::new());
        r.push(pkt(2), 108, b"cccc", 4, &mut sink(&mut got, &mut held));
        r.push(pkt(3), 116, b"ee", 2, &mut sink(&mut got, &mut held));
        // The receiver had 100..112 (the capture never saw 100..108): 108..112 goes on, not
        // held by the network; the hole at 112 is still waited for.
        r.on_ack(112, &mut sink(&mut got, &mut held));
        assert_eq!(got, [(2, 108, b"cccc".to_vec(), 4)]);
        r.on_ack(118, &mut sink(&mut got, &mut held));
        assert_eq!(got[1], (3, 116, b"ee".to_vec(), 2));
        assert_eq!(held, [0, 0]);
        assert_eq!(r.gaps, 2);
        // The next segment continues from the ACK.
        r.push(pkt(4), 118, b"f", 1, &mut sink(&mut got, &mut held));
        assert_eq!(got[2], (4, 118, b"f".to_vec(), 1));
    }

    #[test]
    fn holding_is_bounded_and_counted() {
        let mut r = Reassembler::new(Some(0));
        let (mut got, mut held) = (Got::new(), Vec::new());
        let seg = vec![7u8; 1000];
        let n = MAX_HELD_BYTES / 1000 + 1;
        for k in 0..n as u32 {
            let p = pkt(u64::from(k));
            r.push(
                p,
                1000 + k * 1000,
                &seg,
                1000,
                &mut sink(&mut got, &mut held),
            );
        }
        assert_eq!(r.overflows, 1);
        assert!(r.held_bytes() <= MAX_HELD_BYTES);
        // The hole was given up: everything after it went on, not held.
        assert_eq!(got.len(), n);
        assert_eq!(got[0].1, 1000);
        assert!(held.iter().all(|&h| h == 0));
        // The end hands on what is held; a truncated segment keeps its length.
        let seq = 1000 + n as u32 * 1000 + 10;
        r.push(pkt(99), seq, b"ab", 50, &mut sink(&mut got, &mut held));
        r.flush(&mut sink(&mut got, &mut held));
        assert_eq!(got.last().unwrap().3, 50);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let start = u32::MAX - 3;
        let mut r = Reassembler::new(Some(start));
        let (mut got, mut held) = (Got::new(), Vec::new());
        let late = start.wrapping_add(8);
        r.push(pkt(2), late, b"cccc", 4, &mut sink(&mut got, &mut held));
        r.push(
            pkt(3),
            start,
            b"aaaabbbb",
            8,
            &mut sink(&mut got, &mut held),
        );
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], (2, 4, b"cccc".to_vec(), 4));
        assert_eq!(held, [0, 3]);
    }
}

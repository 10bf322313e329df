//! Writing classic pcap files with nanosecond timestamps (magic 0xa1b23c4d, native byte order
//! written little-endian) that tcpdump, tshark and Wireshark read.
//!
//! Hand-written because the format is 24 + 16 bytes of fixed headers and `pcap-parser`'s
//! serializer sits behind a feature that pulls more than it gives here.
//!
//! Frames are written in timestamp order. A capture ring fed by two CPUs can hand over a
//! frame stamped microseconds before the one ahead of it; a file holding that makes readers
//! (ours, tshark) see reordering or resends that never happened, and `analyze` warns about it.
//! So each frame waits in a small buffer ([`HOLD_NS`] of capture time, at most [`MAX_HELD`]
//! frames) and leaves it in stamp order; a frame stamped before one already written (later
//! than the hold) is written where it came and counted ([`PcapWriter::late`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::ObserveError;
use crate::error::io_error;
use netdoctor_core::{LinkType, RawPacket};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Nanosecond pcap magic.
pub const PCAP_NSEC_MAGIC: u32 = 0xa1b2_3c4d;

/// How long (capture time) a frame is held for a frame stamped before it to come.
pub const HOLD_NS: i64 = 2_000_000;
/// At most this many frames are held.
pub const MAX_HELD: usize = 4096;

/// A held frame: its stamp, its arrival number (equal stamps keep their order), the record.
struct Held {
    ts_ns: i64,
    seq: u64,
    orig_len: u32,
    data: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.ts_ns, self.seq) == (o.ts_ns, o.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.ts_ns, self.seq).cmp(&(o.ts_ns, o.seq))
    }
}

/// Writes packets of one link type into a pcap stream, in timestamp order.
pub struct PcapWriter<W: Write> {
    out: W,
    link: LinkType,
    snaplen: u32,
    name: String,
    written: u64,
    held: BinaryHeap<Reverse<Held>>,
    /// Buffers of written frames, reused for the next ones held.
    spare: Vec<Vec<u8>>,
    newest_ns: i64,
    last_written_ns: i64,
    late: u64,
}

impl PcapWriter<BufWriter<File>> {
    /// Creates (or truncates) `path` and writes the file header.
    pub fn create(path: &Path, link: LinkType, snaplen: u32) -> Result<Self, ObserveError> {
        let file = File::create(path).map_err(|e| io_error("create", path, &e))?;
        let mut w = PcapWriter::new(BufWriter::new(file), link, snaplen)?;
        w.name = path.display().to_string();
        Ok(w)
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header into `w`. A `snaplen` of 0 means 262144, tcpdump's default.
    pub fn new(mut w: W, link: LinkType, snaplen: u32) -> Result<Self, ObserveError> {
        let snaplen = if snaplen == 0 { 262_144 } else { snaplen };
        let mut hdr = [0u8; 24];
        hdr[0..4].copy_from_slice(&PCAP_NSEC_MAGIC.to_le_bytes());
        hdr[4..6].copy_from_slice(&2u16.to_le_bytes());
        hdr[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0.
        hdr[16..20].copy_from_slice(&snaplen.to_le_bytes());
        hdr[20..24].copy_from_slice(&link.to_pcap().to_le_bytes());
        let name = "pcap stream".to_string();
        w.write_all(&hdr)
            .map_err(|e| io_error("write", Path::new(&name), &e))?;
        Ok(PcapWriter {
            out: w,
            link,
            snaplen,
            name,
            written: 0,
            held: BinaryHeap::new(),
            spare: Vec::new(),
            newest_ns: i64::MIN,
            last_written_ns: i64::MIN,
            late: 0,
        })
    }

    /// Appends one packet; bytes beyond the snap length are cut (its wire length is kept).
    pub fn write(&mut self, pkt: &RawPacket<'_>) -> Result<(), ObserveError> {
        let bad = |message: String| ObserveError::BadPacket {
            path: self.name.clone(),
            frame: pkt.frame,
            message,
        };
        if pkt.link != self.link {
            return Err(bad(format!(
                "link type {:?} differs from the file's {:?}",
                pkt.link, self.link
            )));
        }
        if pkt.ts_ns < 0 {
            return Err(bad(format!(
                "timestamp {} ns is before 1970 and cannot be stored in pcap",
                pkt.ts_ns
            )));
        }
        if pkt.ts_ns / 1_000_000_000 > i64::from(u32::MAX) {
            return Err(bad(format!("timestamp {} ns is after 2106", pkt.ts_ns)));
        }
        let caplen = pkt.data.len().min(self.snaplen as usize);
        let orig_len = pkt
            .orig_len
            .max(u32::try_from(pkt.data.len()).unwrap_or(u32::MAX));
        let mut data = self.spare.pop().unwrap_or_default();
        data.clear();
        data.extend_from_slice(&pkt.data[..caplen]);
        let seq = self.written + self.held.len() as u64;
        self.held.push(Reverse(Held {
            ts_ns: pkt.ts_ns,
            seq,
            orig_len,
            data,
        }));
        self.newest_ns = self.newest_ns.max(pkt.ts_ns);
        while let Some(Reverse(oldest)) = self.held.peek()
            && (self.held.len() > MAX_HELD || self.newest_ns - oldest.ts_ns > HOLD_NS)
        {
            self.release()?;
        }
        Ok(())
    }

    /// Writes the held frame stamped earliest.
    fn release(&mut self) -> Result<(), ObserveError> {
        let Some(Reverse(h)) = self.held.pop() else {
            return Ok(());
        };
        if h.ts_ns < self.last_written_ns {
            self.late += 1;
        }
        self.last_written_ns = self.last_written_ns.max(h.ts_ns);
        let secs = (h.ts_ns / 1_000_000_000) as u32;
        let nsec = (h.ts_ns % 1_000_000_000) as u32;
        let mut hdr = [0u8; 16];
        hdr[0..4].copy_from_slice(&secs.to_le_bytes());
        hdr[4..8].copy_from_slice(&nsec.to_le_bytes());
        hdr[8..12].copy_from_slice(&(h.data.len() as u32).to_le_bytes());
        hdr[12..16].copy_from_slice(&h.orig_len.to_le_bytes());
        let path = Path::new(&self.name);
        self.out
            .write_all(&hdr)
            .and_then(|()| self.out.write_all(&h.data))
            .map_err(|e| io_error("write", path, &e))?;
        self.written += 1;
        if self.spare.len() < 64 {
            self.spare.push(h.data);
        }
        Ok(())
    }

    /// Packets taken so far (written, or held to be written in stamp order).
    pub fn packets(&self) -> u64 {
        self.written + self.held.len() as u64
    }

    /// Frames stamped before a frame already written (more than [`HOLD_NS`] late, or past
    /// [`MAX_HELD`]): written where they came, out of stamp order.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Writes the frames still held, in stamp order, and flushes everything to the
    /// underlying writer.
    pub fn finish(mut self) -> Result<(), ObserveError> {
        while !self.held.is_empty() {
            self.release()?;
        }
        let path = Path::new(&self.name);
        self.out.flush().map_err(|e| io_error("write", path, &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(w: &[u8]) -> Vec<(i64, u8)> {
        let mut v = Vec::new();
        let mut off = 24;
        while off + 16 <= w.len() {
            let secs = i64::from(u32::from_le_bytes(w[off..off + 4].try_into().unwrap()));
            let ns = i64::from(u32::from_le_bytes(w[off + 4..off + 8].try_into().unwrap()));
            let len = u32::from_le_bytes(w[off + 8..off + 12].try_into().unwrap()) as usize;
            v.push((secs * 1_000_000_000 + ns, w[off + 16]));
            off += 16 + len;
        }
        v
    }

    fn write_all(stamps: &[(i64, u8)]) -> (Vec<(i64, u8)>, u64) {
        let mut out = Vec::new();
        let late;
        {
            let mut w = PcapWriter::new(&mut out, LinkType::Raw, 0).unwrap();
            for &(ts, tag) in stamps {
                let data = [tag; 20];
                w.write(&RawPacket {
                    frame: 0,
                    ts_ns: ts,
                    link: LinkType::Raw,
                    orig_len: 20,
                    data: &data,
                })
                .unwrap();
            }
            late = w.late();
            assert_eq!(w.packets(), stamps.len() as u64);
            w.finish().unwrap();
        }
        (frames(&out), late)
    }

    #[test]
    fn frames_stamped_out_of_order_are_written_in_stamp_order() {
        // Two CPUs: frame 2 stamped 5 µs before frame 1; equal stamps keep their order.
        let t = 1_700_000_000_000_000_000;
        let (got, late) = write_all(&[(t + 5_000, 1), (t, 2), (t + 9_000, 3), (t + 9_000, 4)]);
        assert_eq!(
            got,
            [(t, 2), (t + 5_000, 1), (t + 9_000, 3), (t + 9_000, 4)]
        );
        assert_eq!(late, 0);
    }

    #[test]
    fn the_hold_is_bounded_and_a_frame_later_than_it_is_written_where_it_came() {
        let t = 1_700_000_000_000_000_000;
        // Frame 3 comes after frame 4 released frame 2 (stamped more than the hold before
        // it), stamped before frame 2: written where it came, counted.
        let (got, late) = write_all(&[
            (t, 1),
            (t + 5_000_000, 2),
            (t + 8_000_000, 4),
            (t + 1_000_000, 3),
        ]);
        assert_eq!(
            got,
            [
                (t, 1),
                (t + 5_000_000, 2),
                (t + 1_000_000, 3),
                (t + 8_000_000, 4)
            ]
        );
        assert_eq!(late, 1);
        // More than MAX_HELD frames within the hold: the oldest leave, in order.
        let many: Vec<(i64, u8)> = (0..MAX_HELD as i64 + 10).map(|k| (t + k, 7)).collect();
        let (got, late) = write_all(&many);
        assert_eq!(got.len(), many.len());
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(late, 0);
    }
}

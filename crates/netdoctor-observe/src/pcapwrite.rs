//! Writing classic pcap files with nanosecond timestamps (magic 0xa1b23c4d, native byte order
//! written little-endian) that tcpdump, tshark and Wireshark read.
//!
//! Hand-written because the format is 24 + 16 bytes of fixed headers and `pcap-parser`'s
//! serializer sits behind a feature that pulls more than it gives here.

use crate::ObserveError;
use crate::error::io_error;
use netdoctor_core::{LinkType, RawPacket};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Nanosecond pcap magic.
pub const PCAP_NSEC_MAGIC: u32 = 0xa1b2_3c4d;

/// Writes packets of one link type into a pcap stream.
pub struct PcapWriter<W: Write> {
    out: W,
    link: LinkType,
    snaplen: u32,
    name: String,
    written: u64,
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
        let secs = u32::try_from(pkt.ts_ns / 1_000_000_000)
            .map_err(|_| bad(format!("timestamp {} ns is after 2106", pkt.ts_ns)))?;
        let nsec = (pkt.ts_ns % 1_000_000_000) as u32;
        let caplen = pkt.data.len().min(self.snaplen as usize);
        let orig_len = pkt
            .orig_len
            .max(u32::try_from(pkt.data.len()).unwrap_or(u32::MAX));
        let mut hdr = [0u8; 16];
        hdr[0..4].copy_from_slice(&secs.to_le_bytes());
        hdr[4..8].copy_from_slice(&nsec.to_le_bytes());
        hdr[8..12].copy_from_slice(&(caplen as u32).to_le_bytes());
        hdr[12..16].copy_from_slice(&orig_len.to_le_bytes());
        let path = Path::new(&self.name);
        self.out
            .write_all(&hdr)
            .and_then(|()| self.out.write_all(&pkt.data[..caplen]))
            .map_err(|e| io_error("write", path, &e))?;
        self.written += 1;
        Ok(())
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.written
    }

    /// Flushes everything to the underlying writer.
    pub fn finish(mut self) -> Result<(), ObserveError> {
        let path = Path::new(&self.name);
        self.out.flush().map_err(|e| io_error("write", path, &e))
    }
}

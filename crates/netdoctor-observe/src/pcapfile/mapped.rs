//! A classic pcap file read in place from a map of it ([`netdoctor_sys::mmap::Mapped`]) instead
//! of through `read(2)` and the parser's buffer: the kernel's copy of every byte goes.
//!
//! Taken only for a regular file that is not followed, not gzip'd, with one of the four usual
//! pcap magics and a file header `pcap-parser` accepts; everything else (pcapng, the "modified"
//! format, pipes, `--follow`) stays on the streaming path. The record checks are that path's:
//! the same limit on the captured length with the same error, a cut record a warning.

use super::{LegacyHeader, MAX_CAPLEN, odd_record, read_u32, truncated_warning};
use crate::{ObserveError, SourceSummary};
use netdoctor_core::RawPacket;
use netdoctor_sys::mmap::Mapped;
use std::collections::VecDeque;
use std::fs::File;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Pages are released behind the reader (and the next ones mapped in advance) in steps of
/// this many bytes: what is resident of the file stays within about two steps. A consumer that
/// keeps frames past the callback either copies them or takes the map ([`SharedMap`]) and
/// tells the reader how far it got, so pages are released only behind it.
pub(super) const STEP: usize = 1 << 20;

/// How far ahead of a walk the next records' cache lines are asked for
/// ([`netdoctor_sys::mmap::Mapped::warm`]): 8 KiB was the best of 1–64 KiB on the bench capture
/// (farther lands on pages not mapped yet, where a prefetch does nothing).
pub(super) const AHEAD: usize = 8 << 10;

pub(super) struct MappedState {
    pub map: Arc<Mapped>,
    pub header: LegacyHeader,
    /// Set once a consumer shares the map ([`MappedState::share`]).
    hold: OnceLock<PageHold>,
}

/// The map of a capture shared with a consumer that reads its frames after the reader's
/// callback returns (`analyze -j N`'s workers read frames where the map holds them instead of
/// from copies the reader made), and the hold that keeps the pages it has not read yet.
pub struct SharedMap {
    /// The file's bytes; a frame the reader delivers from the map lies inside them.
    pub bytes: Arc<Mapped>,
    /// Tell it how many of the delivered frames the consumer is done with.
    pub hold: PageHold,
}

/// Pages the reader would release now, held until the consumer is done with every frame
/// delivered before ([`PageHold::done_through`]): a page released early would only be faulted
/// back in from the page cache (the same bytes), but it would then stay in the process for the
/// rest of the run. Cloned handles share one hold.
#[derive(Clone, Default)]
pub struct PageHold(Arc<Held>);

#[derive(Default)]
struct Held {
    /// Frames delivered that the consumer is done with (it counts them as delivered).
    done: AtomicU64,
    /// Ranges to release, each once this many frames are done.
    queue: Mutex<VecDeque<(u64, usize, usize)>>,
}

impl PageHold {
    /// The consumer is done with the first `frames` frames delivered.
    pub fn done_through(&self, frames: u64) {
        self.0.done.fetch_max(frames, Ordering::Release);
    }
}

impl MappedState {
    /// The map of `file` when it is a plain classic pcap file (see the module docs).
    pub(super) fn open(file: &File) -> Option<MappedState> {
        let map = Mapped::of(file).ok()??;
        let head = map.bytes().get(..24)?;
        let m = [head[0], head[1], head[2], head[3]];
        let usual = matches!(
            u32::from_le_bytes(m),
            0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1
        );
        if !usual || pcap_parser::pcap::parse_pcap_header(head).is_err() {
            return None;
        }
        let header = LegacyHeader::of(head).ok()?;
        Some(MappedState {
            map: Arc::new(map),
            header,
            hold: OnceLock::new(),
        })
    }

    /// The map for a consumer that reads frames after the callback; from now on pages are
    /// released only behind it.
    pub(super) fn share(&self) -> SharedMap {
        SharedMap {
            bytes: Arc::clone(&self.map),
            hold: self.hold.get_or_init(PageHold::default).clone(),
        }
    }

    /// Releases `start..end` (read through by the reader once `delivered` frames were
    /// delivered) now, or once a consumer that shares the map is done with those frames.
    pub(super) fn release(&self, start: usize, end: usize, delivered: u64) {
        let Some(hold) = self.hold.get() else {
            self.map.release(start, end);
            return;
        };
        let done = hold.0.done.load(Ordering::Acquire);
        let mut q = hold.0.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.push_back((delivered, start, end));
        while let Some(&(at, s, e)) = q.front()
            && at <= done
        {
            self.map.release(s, e);
            q.pop_front();
        }
    }
}

/// Delivers every record of the map (as `read_legacy` does from a stream).
pub(super) fn read_mapped(
    path: &str,
    st: &MappedState,
    f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
) -> Result<SourceSummary, ObserveError> {
    let h = &st.header;
    let data = st.map.bytes();
    let mut summary = SourceSummary::default();
    let limit = if h.snaplen == 0 {
        MAX_CAPLEN
    } else {
        h.snaplen.min(MAX_CAPLEN)
    };
    let mut pos = 24usize;
    let mut next_step = STEP;
    st.map.prefetch(0, STEP);
    while pos < data.len() {
        let Some(rec) = data.get(pos..pos + 16) else {
            summary.warnings.push(truncated_warning(summary.packets));
            break;
        };
        st.map.warm(pos + AHEAD);
        let u32_at = |o: usize| read_u32(&rec[o..o + 4], h.big_endian);
        let caplen = u32_at(8);
        if caplen == 0 || caplen > limit {
            let at = (summary.packets + 1, pos as u64);
            if let Some(e) = odd_record(path, rec, at, caplen, limit, h.snaplen) {
                return Err(e);
            }
        }
        let start = pos + 16;
        let Some(bytes) = data.get(start..start + caplen as usize) else {
            summary.warnings.push(truncated_warning(summary.packets));
            break;
        };
        let frac = if h.nanos {
            i64::from(u32_at(4))
        } else {
            i64::from(u32_at(4)) * 1000
        };
        summary.packets += 1;
        let pkt = RawPacket {
            frame: summary.packets,
            ts_ns: i64::from(u32_at(0)) * 1_000_000_000 + frac,
            link: h.link,
            data: bytes,
            orig_len: u32_at(12),
        };
        let flow = f(&pkt);
        pos = start + caplen as usize;
        if pos >= next_step {
            st.map.prefetch(next_step, next_step + STEP);
            st.release(next_step - STEP, next_step, summary.packets);
            next_step += STEP;
        }
        if flow.is_break() {
            break;
        }
    }
    Ok(summary)
}

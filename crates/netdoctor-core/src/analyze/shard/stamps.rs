//! The reader's count of packets, bytes and timestamps ([`Stamps`]): apart from the reader's
//! loop because it is the one part of `push` that must give the single analyzer's figures
//! exactly (its clamp, its count of frames stamped before their predecessor).

use super::super::{CaptureStats, TS_BOUND_NS};

/// The reader's count of packets, bytes and timestamps: what [`super::super::stamp`] keeps in
/// [`CaptureStats`] for [`super::super::Analyzer::push`], with the clamp's bounds computed once at the
/// first packet instead of at every one (two saturating sums a frame), written into the
/// stats at the end ([`Stamps::write_into`]). Same figures, same clamped timestamps.
#[derive(Default)]
pub(super) struct Stamps {
    pub(super) packets: u64,
    bytes: u64,
    /// The first raw timestamp, and the clamp's bounds around it.
    first: Option<i64>,
    lo: i64,
    hi: i64,
    /// The last clamped timestamp.
    pub(super) last: i64,
    clamped: u64,
    backdated: u64,
}

impl Stamps {
    /// Counts a packet; its timestamp, clamped as [`super::super::clamp_stamp`] clamps it.
    #[inline]
    pub(super) fn take(&mut self, raw: i64, orig_len: u32) -> i64 {
        self.packets += 1;
        self.bytes += u64::from(orig_len);
        if self.first.is_none() {
            self.first = Some(raw);
            self.lo = raw.saturating_sub(TS_BOUND_NS);
            self.hi = raw.saturating_add(TS_BOUND_NS);
            self.last = raw;
        }
        // Both counts are rare: branches the CPU predicts cost less than two sums a frame.
        let ts = if raw < self.lo || raw > self.hi {
            self.clamp(raw)
        } else {
            raw
        };
        if ts < self.last {
            self.backdated += 1;
        }
        self.last = ts;
        ts
    }

    /// A timestamp outside the clamp's bounds, clamped and counted.
    #[cold]
    fn clamp(&mut self, raw: i64) -> i64 {
        self.clamped += 1;
        raw.clamp(self.lo, self.hi)
    }

    /// Writes the counts into `stats` (as `stamp` would have); the clamped packets.
    pub(super) fn write_into(&self, stats: &mut CaptureStats) -> u64 {
        stats.packets += self.packets;
        stats.bytes += self.bytes;
        if let Some(first) = self.first {
            stats.first_ts_ns.get_or_insert(first);
            stats.last_ts_ns = Some(self.last);
        }
        stats.quality.backdated_frames += self.backdated;
        self.clamped
    }
}

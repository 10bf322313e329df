//! The reader's pause between batches: how the live capture coalesces its wake-ups, as a pure
//! function of the batch it just read and the fastest block's fill time, so it is tested
//! without a ring.

use super::BLOCK_TIMEOUT_MS;
use std::time::Duration;

/// Wake-ups are coalesced: after reading a batch of `b` blocks, the reader pauses until
/// `COALESCE × min(1, limit / b)` after the wake that started the batch, `limit` being
/// 1/[`COALESCE_SHARE`] of the ring's blocks, before it looks again. A steady stream is then
/// read ~25 times a second in batches of about `limit` blocks rather than once per block
/// (each wake-up is a context switch and a cold cache: at 5k HTTP requests/s on loopback the
/// reader woke ~150 times a second for one 64 KiB block each, at 10k ~66 times with a fixed
/// 20 ms pause). A faster stream gets shorter pauses, so the pause holds about `limit` blocks
/// whatever the rate (the ring's quiet threshold, [`crate::SourceSummary::ring_fill`] 0.25 in
/// the agent, stays above it), and a reader with half the ring waiting does not pause.
///
/// The batch alone misjudges a burst: after an idle second the first block of a burst wakes
/// the reader, the batch is that one block, and a 40 ms pause let a 20k-packet burst (trafgen
/// `-b 20000pps` sends each second's packets in ~30 ms, ~700 per ms) overrun the 2 MiB ring
/// that `watch` starts on (~11k such packets) while its reader slept: about 9k drops a burst.
/// So the pause is also at most the time `limit` blocks take to fill at the rate of the
/// fastest block of the batch (its first to last packet, scaled from the bytes it holds to a
/// whole block; blocks handed over on their timeout count too, scaled the same way); a batch
/// without such a block (one packet each) keeps the previous batch's rate, until the reader
/// catches up and waits for the kernel again. A burst is then read as it comes. A rate
/// misjudged still costs no overrun: the pause is slept in [`PAUSE_SLICE`]s and ends once
/// `limit` blocks wait.
pub(super) const COALESCE: Duration = Duration::from_millis(40);
/// A pause is slept in slices of at most this, the ring looked at after each (status words
/// only): at most ~10k packets arrive in one even at 1 M packets/s, less than the 2 MiB start
/// ring holds (~11k small ones).
pub(super) const PAUSE_SLICE: Duration = Duration::from_millis(BLOCK_TIMEOUT_MS as u64);
pub(super) const COALESCE_SHARE: usize = 5;

/// The reader's pause after a batch of `batch` blocks, at whose fastest rate a whole block
/// fills in `full_ns` (see [`COALESCE`]).
pub(super) fn pause(batch: usize, limit: usize, full_ns: Option<u64>) -> Duration {
    let by_batch = if batch <= limit {
        COALESCE
    } else {
        COALESCE * limit as u32 / batch as u32
    };
    match full_ns {
        Some(ns) => by_batch.min(Duration::from_nanos(ns.saturating_mul(limit as u64))),
        None => by_batch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_holds_about_a_fifth_of_the_ring_whatever_the_rate() {
        let limit = 32 / COALESCE_SHARE;
        // Small batches: the whole pause.
        for b in 1..=limit {
            assert_eq!(pause(b, limit, None), COALESCE);
        }
        // Larger ones: shorter in proportion, so about `limit` blocks wait at the next look.
        assert_eq!(pause(2 * limit, limit, None), COALESCE / 2);
        let mut last = COALESCE;
        for b in limit + 1..=32 {
            let p = pause(b, limit, None);
            assert!(p < last, "{b} blocks: {p:?}");
            let held = p.as_secs_f64() / COALESCE.as_secs_f64() * b as f64;
            assert!((held - limit as f64).abs() < 0.01, "{b} blocks hold {held}");
            last = p;
        }
    }

    #[test]
    fn a_burst_shortens_the_pause_to_what_the_ring_holds() {
        let limit = 32 / COALESCE_SHARE;
        // One block read after an idle second, filled in 0.5 ms (a burst of ~700 packets per
        // ms): the pause lets `limit` such blocks come, 3 ms, not 40.
        assert_eq!(pause(1, limit, Some(500_000)), Duration::from_millis(3));
        // A slow full block (200 ms) changes nothing.
        assert_eq!(pause(1, limit, Some(200_000_000)), COALESCE);
        assert_eq!(pause(2 * limit, limit, Some(200_000_000)), COALESCE / 2);
    }
}

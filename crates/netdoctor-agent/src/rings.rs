//! How many capture rings a watched port gets ([`netdoctor_observe::fanout::LiveRings`]), and
//! how large.
//!
//! A port starts on one small ring ([`START_RING_BYTES`], or its share of `--ring-mb` if that
//! is less): the kernel allocates a ring whole and maps it at setup, so its size is resident
//! from the first packet, and most ports need little. A window with kernel drops doubles the
//! ring, up to the port's share of `--ring-mb` ([`next_size`]), by adding blocks of the start
//! ring's size (at rates where the kernel hands blocks over on their 10 ms timeout, larger
//! blocks would hold no more time); [`QUIET_WINDOWS`] quiet windows in a row (no drop, at
//! most [`QUIET_FILL`] of the blocks waiting at once) halve it again, down to the start size
//! ([`RingSize`]). With [`RingPolicy::Auto`], a
//! window whose packet rate reached [`FANOUT_PPS`], or that dropped on a ring already at its
//! largest, moves the port to `max` rings of one PACKET_FANOUT group from the next window on;
//! it stays there for the rest of the run (a rate that came once comes again, and each reopening
//! costs a drain of the old rings, ~60 ms). A reopened port loses no packet: the new rings
//! capture before the old ones stop, the old ones' unread packets are read into the window, and
//! the new ones skip what both got ([`netdoctor_observe::fanout::LiveRings::hand_over`]).
//! [`RingPolicy::Fixed`] keeps the count it names.

use std::time::Duration;

/// Packet rate (per second, over a window) from which the port moves to N rings before any
/// drop: one thread reads the ring, runs the analyzer and writes the window's pcap, and at this
/// rate it is near half a core. `bench/watch-rings.sh` (bench/watch.md) measured one ring's
/// reader at 0.47 µs of CPU per packet (mean over 16 steps on a shared machine), drop-free at
/// the 200k packets/s its generator reaches (drops there came from stalls, at any rate and
/// ring count), and N rings at ~1.3× the CPU per packet (each packet is copied once more, to
/// the analyzing thread): fanning out at 150k packets/s, as before, cost CPU and saved no
/// drop. Drops on a ring already at its largest fan out at any rate.
pub const FANOUT_PPS: f64 = 1_000_000.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingPolicy {
    /// Always this many rings (1: never fan out).
    Fixed(usize),
    /// One ring until a window needs more, then `max`.
    Auto { max: usize },
}

impl Default for RingPolicy {
    /// Auto, up to the available cores (one ring on a one-core machine).
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        RingPolicy::Auto {
            max: cores.min(MAX_RINGS),
        }
    }
}

/// Most rings a port gets.
pub const MAX_RINGS: usize = 16;

/// Ring a port starts on: 32 blocks of 64 KiB at snap length 256, so the reader may be away
/// about 320 ms at low rates before the kernel drops (the 16 MiB ring of earlier versions gave
/// the same, in larger blocks).
pub const START_RING_BYTES: usize = 2 << 20;

/// The ring of the next window after one with `drops` kernel drops on a ring of `current`
/// bytes: twice as large on drops, at most `max` bytes.
pub fn next_size(current: usize, max: usize, drops: u64) -> usize {
    if drops > 0 && current < max {
        current.saturating_mul(2).min(max)
    } else {
        current
    }
}

/// A window is quiet when nothing was dropped and at most this share of the ring's blocks
/// waited for the reader at once: the ring at half its size would have been at most half
/// full.
pub const QUIET_FILL: f64 = 0.25;

/// Quiet windows in a row after which a grown ring is halved. Growing takes one window with
/// drops, shrinking this many without: a load that drops now and then keeps its ring, and a
/// halved ring, at most half full in each of these windows, does not grow back at once.
pub const QUIET_WINDOWS: u32 = 6;

/// The size of one port's ring over the run: doubled after a window with drops (up to `max`),
/// halved after [`QUIET_WINDOWS`] quiet windows in a row (down to `start`). The memory a
/// burst of drops took comes back once the burst is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSize {
    pub bytes: usize,
    start: usize,
    max: usize,
    quiet: u32,
}

impl RingSize {
    pub fn new(start: usize, max: usize) -> RingSize {
        let start = start.min(max);
        RingSize {
            bytes: start,
            start,
            max,
            quiet: 0,
        }
    }

    /// The size for the next window after one with `drops` drops whose ring was at most
    /// `fill` (0–1) full ([`netdoctor_observe::SourceSummary::ring_fill`]).
    pub fn next(&mut self, drops: u64, fill: f64) -> usize {
        if drops > 0 {
            self.quiet = 0;
            self.bytes = next_size(self.bytes, self.max, drops);
        } else if fill <= QUIET_FILL && self.bytes > self.start {
            self.quiet += 1;
            if self.quiet >= QUIET_WINDOWS {
                self.quiet = 0;
                self.bytes = (self.bytes / 2).max(self.start);
            }
        } else {
            self.quiet = 0;
        }
        self.bytes
    }
}

impl RingPolicy {
    /// Rings to open at the start.
    pub fn initial(self) -> usize {
        match self {
            RingPolicy::Fixed(n) => n.clamp(1, MAX_RINGS),
            RingPolicy::Auto { .. } => 1,
        }
    }

    /// Rings for the next window after one of `packets` packets and `drops` kernel drops over
    /// `span`, on `current` rings (drops count only once the ring can grow no more: see
    /// [`next_size`]).
    pub fn next(self, current: usize, packets: u64, drops: u64, span: Duration) -> usize {
        match self {
            RingPolicy::Fixed(_) => current,
            RingPolicy::Auto { max } => {
                let secs = span.as_secs_f64().max(1e-3);
                let busy = drops > 0 || packets as f64 / secs >= FANOUT_PPS;
                if busy && current < max { max } else { current }
            }
        }
    }

    /// Rings and ring size for the next window: the ring grows first, and shrinks after quiet
    /// windows ([`RingSize`]); the port fans out on rate, or on drops at the largest size.
    pub fn next_plan(
        self,
        rings: usize,
        size: &mut RingSize,
        packets: u64,
        drops: u64,
        fill: f64,
        span: Duration,
    ) -> (usize, usize) {
        let before = size.bytes;
        let bytes = size.next(drops, fill);
        let drops_left = if bytes > before { 0 } else { drops };
        (self.next(rings, packets, drops_left, span), bytes)
    }

    /// Parses `auto` or a number of rings from 1 to [`MAX_RINGS`].
    pub fn parse(s: &str) -> Result<RingPolicy, String> {
        if s.trim() == "auto" {
            return Ok(RingPolicy::default());
        }
        match s.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_RINGS).contains(&n) => Ok(RingPolicy::Fixed(n)),
            _ => Err(format!(
                "'{s}' is not 'auto' or a number of capture rings from 1 to {MAX_RINGS}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_starts_on_one_ring_and_fans_out_on_drops_or_rate() {
        let p = RingPolicy::Auto { max: 4 };
        assert_eq!(p.initial(), 1);
        let w = Duration::from_secs(10);
        assert_eq!(p.next(1, 10_000, 0, w), 1, "1 kpps, no drops");
        assert_eq!(p.next(1, 10_000, 3, w), 4, "drops");
        assert_eq!(p.next(1, 2_000_000, 0, w), 1, "200 kpps: one ring takes it");
        assert_eq!(p.next(1, 10_000_000, 0, w), 4, "1 Mpps");
        assert_eq!(p.next(4, 10, 0, w), 4, "stays fanned out");
        assert_eq!(RingPolicy::Auto { max: 1 }.next(1, 9_000_000, 9, w), 1);
    }

    #[test]
    fn the_ring_grows_on_drops_before_it_fans_out() {
        let p = RingPolicy::Auto { max: 4 };
        let w = Duration::from_secs(10);
        let mb = 1 << 20;
        let at = |bytes: usize, max: usize| {
            let mut s = RingSize::new(2 * mb, max);
            s.bytes = bytes;
            s
        };
        assert_eq!(
            p.next_plan(1, &mut at(2 * mb, 8 * mb), 1000, 0, 0.5, w),
            (1, 2 * mb)
        );
        assert_eq!(
            p.next_plan(1, &mut at(2 * mb, 8 * mb), 1000, 5, 1.0, w),
            (1, 4 * mb)
        );
        assert_eq!(
            p.next_plan(1, &mut at(4 * mb, 6 * mb), 1000, 5, 1.0, w),
            (1, 6 * mb)
        );
        assert_eq!(
            p.next_plan(1, &mut at(8 * mb, 8 * mb), 1000, 5, 1.0, w),
            (4, 8 * mb)
        );
        // Rate alone fans out at any size.
        assert_eq!(
            p.next_plan(1, &mut at(2 * mb, 8 * mb), 10_000_000, 0, 0.1, w),
            (4, 2 * mb)
        );
        assert_eq!(
            RingPolicy::Fixed(2).next_plan(2, &mut at(2 * mb, 8 * mb), 9, 9, 1.0, w),
            (2, 4 * mb)
        );
        assert_eq!(next_size(8 * mb, 8 * mb, 1), 8 * mb);
    }

    #[test]
    fn a_ring_grown_under_drops_shrinks_after_quiet_windows_without_flapping() {
        let mb = 1 << 20;
        let mut s = RingSize::new(2 * mb, 16 * mb);
        // Three windows with drops: 2 → 4 → 8 → 16 MiB, and no further.
        for want in [4, 8, 16, 16] {
            assert_eq!(s.next(100, 1.0), want * mb);
        }
        // Five quiet windows: not yet; a busy (not dropping) window starts the count again.
        for _ in 0..QUIET_WINDOWS - 1 {
            assert_eq!(s.next(0, 0.05), 16 * mb);
        }
        assert_eq!(s.next(0, 0.6), 16 * mb, "a half-full ring is not quiet");
        for _ in 0..QUIET_WINDOWS - 1 {
            assert_eq!(s.next(0, 0.05), 16 * mb);
        }
        assert_eq!(
            s.next(0, 0.05),
            8 * mb,
            "the sixth quiet window in a row halves it"
        );
        // Each further halving needs its own run of quiet windows, down to the start size.
        let mut sizes = Vec::new();
        for _ in 0..4 * QUIET_WINDOWS {
            sizes.push(s.next(0, 0.0) / mb);
        }
        assert_eq!(
            sizes.iter().filter(|&&b| b == 8).count() as u32,
            QUIET_WINDOWS - 1
        );
        assert_eq!(
            sizes.iter().filter(|&&b| b == 4).count() as u32,
            QUIET_WINDOWS
        );
        assert_eq!(*sizes.last().unwrap(), 2, "never below the start");
        // Drops after the shrink grow it again at once.
        assert_eq!(s.next(1, 1.0), 4 * mb);
    }

    #[test]
    fn fixed_keeps_its_count_and_parse_names_bad_values() {
        assert_eq!(RingPolicy::parse("3"), Ok(RingPolicy::Fixed(3)));
        assert_eq!(RingPolicy::Fixed(3).initial(), 3);
        assert_eq!(
            RingPolicy::Fixed(3).next(3, u64::MAX, 99, Duration::ZERO),
            3
        );
        assert!(matches!(
            RingPolicy::parse("auto"),
            Ok(RingPolicy::Auto { .. })
        ));
        for bad in ["0", "17", "x", ""] {
            let e = RingPolicy::parse(bad).unwrap_err();
            assert!(e.contains("capture rings"), "{e}");
        }
    }
}

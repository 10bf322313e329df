//! How many capture rings a watched port gets ([`netdoctor_observe::fanout::LiveRings`]).
//!
//! A port starts on one ring (one socket, one mapped ring: the small case's memory). With
//! [`RingPolicy::Auto`], a window whose kernel drops were not zero, or whose packet rate
//! reached [`FANOUT_PPS`], moves the port to `max` rings of one PACKET_FANOUT group from the
//! next window on; it stays there for the rest of the run (a rate that came once comes again,
//! and reopening costs a short gap). [`RingPolicy::Fixed`] keeps the count it names.

use std::time::Duration;

/// Packet rate (per second, over a window) from which one ring is not enough: one thread then
/// reads the ring, runs the analyzer and writes the window's pcap, and the kernel starts to
/// drop on a busy ring well before the analyzer's own limit. Measured with
/// `bench/watch-rings.sh` (bench/README.md).
pub const FANOUT_PPS: f64 = 150_000.0;

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

impl RingPolicy {
    /// Rings to open at the start.
    pub fn initial(self) -> usize {
        match self {
            RingPolicy::Fixed(n) => n.clamp(1, MAX_RINGS),
            RingPolicy::Auto { .. } => 1,
        }
    }

    /// Rings for the next window after one of `packets` packets and `drops` kernel drops over
    /// `span`, on `current` rings.
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
        assert_eq!(p.next(1, 2_000_000, 0, w), 4, "200 kpps");
        assert_eq!(p.next(4, 10, 0, w), 4, "stays fanned out");
        assert_eq!(RingPolicy::Auto { max: 1 }.next(1, 9_000_000, 9, w), 1);
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

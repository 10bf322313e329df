//! The run's time line: requests, errors and latency percentiles per second, so a report can show
//! requests/s and latency over the run rather than one average.
//!
//! Each worker keeps a [`Recorder`]: one slot per second of the run (longer runs use wider slots,
//! so there are at most [`MAX_SLOTS`]), each with two counters and a small HDR histogram
//! (2 significant digits, `u32` counts: about 10 KB) allocated when the slot sees its first
//! request. Recording a request is an index computation and a histogram increment: no
//! allocation per request, and memory is bounded by the duration (at most [`MAX_SLOTS`] slots).
//! A request counts in the slot in which its response completed; an error in the slot in which it
//! was noticed. Slots are merged across workers at the end; a slot without any request stays in
//! the time line (a stall that stopped all progress shows as a gap, not as nothing).

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Most slots a time line has; a run longer than this many seconds gets wider slots.
pub const MAX_SLOTS: usize = 600;

/// One slot of the time line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Start of the slot, seconds since the start of the load.
    pub t_s: f64,
    /// Length of the slot in seconds (1, or wider for long runs; the last may be shorter).
    pub len_s: f64,
    /// Responses completed in the slot.
    pub requests: u64,
    /// Errors noticed in the slot (all kinds).
    pub errors: u64,
    pub requests_per_s: f64,
    /// Latency percentiles of the slot's responses; absent when it had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
}

#[derive(Default)]
struct Slot {
    requests: u64,
    errors: u64,
    hist: Option<Histogram<u32>>,
}

fn slot_histogram() -> Histogram<u32> {
    // 1 µs .. 60 s at 2 significant digits: valid bounds, cannot fail.
    Histogram::new_with_bounds(1, 60_000_000, 2).unwrap_or_else(|_| Histogram::new(2).unwrap())
}

/// Slot width for a run of `duration`: 1 s, or whole seconds so that at most [`MAX_SLOTS`] fit.
fn slot_width(duration: Duration) -> Duration {
    let secs = duration.as_secs_f64().ceil() as u64;
    Duration::from_secs(secs.div_ceil(MAX_SLOTS as u64).max(1))
}

/// One worker's time line while the run goes on.
pub(crate) struct Recorder {
    start: Instant,
    slot: Duration,
    slots: Vec<Slot>,
}

impl Recorder {
    pub(crate) fn new(start: Instant, duration: Duration) -> Recorder {
        let slot = slot_width(duration);
        let n = (duration.as_secs_f64() / slot.as_secs_f64()).ceil() as usize + 1;
        let mut slots = Vec::with_capacity(n.min(MAX_SLOTS + 1));
        slots.resize_with(n.min(MAX_SLOTS + 1), Slot::default);
        Recorder { start, slot, slots }
    }

    fn at(&mut self, now: Instant) -> &mut Slot {
        // Slots are whole seconds: a u64 division, not a u128 one.
        let i = now.saturating_duration_since(self.start).as_secs() / self.slot.as_secs().max(1);
        let i = usize::try_from(i)
            .unwrap_or(usize::MAX)
            .min(self.slots.len() - 1);
        &mut self.slots[i]
    }

    /// A response completed at `now` after `us` microseconds.
    pub(crate) fn request(&mut self, now: Instant, us: u64) {
        let s = self.at(now);
        s.requests += 1;
        s.hist
            .get_or_insert_with(slot_histogram)
            .saturating_record(us.max(1));
    }

    /// An error was noticed at `now`.
    pub(crate) fn error(&mut self, now: Instant) {
        self.at(now).errors += 1;
    }
}

/// Merges the workers' time lines of a run that lasted `elapsed`.
pub(crate) fn merge(parts: Vec<Recorder>, elapsed: Duration) -> Vec<TimelinePoint> {
    let Some(first) = parts.first() else {
        return Vec::new();
    };
    let slot = first.slot.as_secs_f64();
    let total = elapsed.as_secs_f64();
    let n = ((total / slot).ceil() as usize)
        .max(1)
        .min(first.slots.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut requests = 0;
        let mut errors = 0;
        let mut hist: Option<Histogram<u32>> = None;
        for p in &parts {
            let Some(s) = p.slots.get(i) else { continue };
            requests += s.requests;
            errors += s.errors;
            if let Some(h) = &s.hist {
                // Same bounds on both sides: `add` cannot fail; ignore rather than panic.
                let _ = hist.get_or_insert_with(slot_histogram).add(h);
            }
        }
        let t_s = i as f64 * slot;
        let len_s = slot.min(total - t_s).max(1e-9);
        let ms = |h: &Histogram<u32>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        out.push(TimelinePoint {
            t_s,
            len_s,
            requests,
            errors,
            requests_per_s: requests as f64 / len_s,
            p50_ms: hist.as_ref().map(|h| ms(h, 0.5)),
            p99_ms: hist.as_ref().map(|h| ms(h, 0.99)),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_land_in_their_second_and_empty_seconds_stay() {
        let start = Instant::now();
        let mut a = Recorder::new(start, Duration::from_secs(3));
        let mut b = Recorder::new(start, Duration::from_secs(3));
        for _ in 0..100 {
            a.request(start + Duration::from_millis(200), 2_000);
        }
        b.request(start + Duration::from_millis(900), 44_000);
        b.error(start + Duration::from_millis(2_500));
        let t = merge(vec![a, b], Duration::from_secs(3));
        assert_eq!(t.len(), 3);
        assert_eq!((t[0].requests, t[0].errors), (101, 0));
        assert!((t[0].p50_ms.unwrap() - 2.0).abs() < 0.05, "{:?}", t[0]);
        assert!((t[0].p99_ms.unwrap() - 2.0).abs() < 0.05, "{:?}", t[0]);
        assert_eq!(t[1].requests, 0, "a second without responses stays");
        assert_eq!(t[1].p50_ms, None);
        assert_eq!((t[2].requests, t[2].errors), (0, 1));
        assert!((t[0].requests_per_s - 101.0).abs() < 1e-9);
    }

    #[test]
    fn long_runs_get_wider_slots_and_bounded_memory() {
        let start = Instant::now();
        let d = Duration::from_secs(3_600);
        let mut r = Recorder::new(start, d);
        assert_eq!(r.slot, Duration::from_secs(6));
        assert!(r.slots.len() <= MAX_SLOTS + 1);
        // Far past the end (a late drain): clamped into the last slot, no growth.
        r.request(start + Duration::from_secs(10_000), 1_000);
        assert!(r.slots.len() <= MAX_SLOTS + 1);
        let t = merge(vec![r], d);
        assert_eq!(t.len(), MAX_SLOTS);
        assert!((t[1].t_s - 6.0).abs() < 1e-9);
    }
}

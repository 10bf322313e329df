//! Per-request latency breakdown for HTTP/1.x exchanges: where the time of a request went.
//!
//! An exchange's latency (first request byte → last response byte, at the capture point) is
//! split into parts that add up to it:
//!
//! 1. **stalls**, by cause: intervals in which the exchange waited on a detected problem.
//!    - `nagle_delayed_ack` / `delayed_ack_stall`: from the segment before the held one to the
//!      held segment's departure;
//!    - `packet_loss_retransmission` / `retransmission_timeout`: from the last known progress
//!      (cumulative ACK advance, or the start of the flight) to the last retransmission of the
//!      loss episode (see [`crate::detect::loss`]); spurious retransmissions add nothing;
//!    - `zero_window`: from the zero-window advertisement to the reopening.
//!
//!    Intervals are clipped to the exchange and never counted twice: a stall that overlaps an
//!    earlier one of the same exchange only adds its non-overlapping part.
//! 2. **network**: one path RTT (the connection's handshake RTT; 0 when it was not captured),
//!    at most what the stalls left.
//! 3. **server**: first response byte − last request byte − RTT (the server's think time), at
//!    most what was left.
//! 4. **transfer**: the rest: moving the request and response bytes (serialization, windows,
//!    the client's own pacing).
//!
//! `breakdown_p50_ms` describes a typical request: the mean breakdown of the exchanges whose
//! latency fell in the same bucket (buckets 2^¼ ≈ 19% wide) as the median latency, so its parts
//! add up to ≈ p50. `breakdown_mean_ms` is the mean over all exchanges. Memory is fixed
//! (`BUCKETS` × the parts), whatever the number of exchanges.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::finding::FindingId;

/// The finding ids that are stall causes, in the order the breakdown charges and prints them.
/// A detector whose events stall exchanges adds its id here (one line) and charges its
/// intervals with [`cause_index`] of that id.
pub const STALL_CAUSES: [FindingId; 5] = [
    FindingId::NagleDelayedAck,
    FindingId::DelayedAckStall,
    FindingId::PacketLossRetransmission,
    FindingId::RetransmissionTimeout,
    FindingId::ZeroWindow,
];

pub(crate) const CAUSES: usize = STALL_CAUSES.len();

/// Index of a stall cause in [`STALL_CAUSES`]; `None` for ids that are not stall causes.
#[inline]
pub const fn cause_index(id: FindingId) -> Option<usize> {
    let mut k = 0;
    while k < CAUSES {
        if STALL_CAUSES[k] as u32 == id as u32 {
            return Some(k);
        }
        k += 1;
    }
    None
}

/// [`cause_index`] for ids known to be causes (a compile-time error otherwise when used in a
/// `const`).
pub(crate) const fn cause(id: FindingId) -> usize {
    match cause_index(id) {
        Some(k) => k,
        None => panic!("not a stall cause"),
    }
}

pub(crate) const NAGLE: usize = cause(FindingId::NagleDelayedAck);
pub(crate) const DELAYED_ACK: usize = cause(FindingId::DelayedAckStall);
pub(crate) const LOSS: usize = cause(FindingId::PacketLossRetransmission);
pub(crate) const TIMEOUT: usize = cause(FindingId::RetransmissionTimeout);
pub(crate) const ZERO_WINDOW: usize = cause(FindingId::ZeroWindow);

/// Stall time per cause, in milliseconds, keyed by finding id. Serialized as a JSON object
/// with one member per [`STALL_CAUSES`] id, in that order (the contract of
/// `breakdown_*_ms.stalls`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stalls([f64; CAUSES]);

impl Stalls {
    /// Milliseconds charged to `id` (0 for ids that are not stall causes).
    pub fn get(&self, id: FindingId) -> f64 {
        cause_index(id).map_or(0.0, |k| self.0[k])
    }

    /// Sets the milliseconds of a stall cause; ids that are not causes are ignored.
    pub fn set(&mut self, id: FindingId, ms: f64) {
        if let Some(k) = cause_index(id) {
            self.0[k] = ms;
        }
    }

    /// Every cause with its milliseconds, in [`STALL_CAUSES`] order.
    pub fn iter(&self) -> impl Iterator<Item = (FindingId, f64)> + '_ {
        STALL_CAUSES.iter().copied().zip(self.0.iter().copied())
    }
}

impl Serialize for Stalls {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(CAUSES))?;
        for (id, v) in self.iter() {
            m.serialize_entry(id.as_str(), &v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Stalls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Stalls;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of stall milliseconds keyed by finding id")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Stalls, A::Error> {
                let mut s = Stalls::default();
                while let Some((k, v)) = a.next_entry::<String, f64>()? {
                    // Causes a newer netdoctor added are skipped, not an error.
                    if let Some(id) = STALL_CAUSES.iter().find(|id| id.as_str() == k) {
                        s.set(*id, v);
                    }
                }
                Ok(s)
            }
        }
        d.deserialize_map(V)
    }
}

/// Where the time of a request went, in milliseconds; `network + server + transfer + stalls`
/// adds up to `latency`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Breakdown {
    pub latency: f64,
    pub network: f64,
    pub server: f64,
    pub transfer: f64,
    pub stalls: Stalls,
}

impl Breakdown {
    /// Sum of the stall parts.
    pub fn stalls_total(&self) -> f64 {
        self.stalls.0.iter().sum()
    }
}

/// Stall accounting of one exchange in progress (`Copy`, no allocation).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ExchangeParts {
    pub stalls: [i64; CAUSES],
    /// Per cause, which sides were hit (bit 1: server side, 2: client side; see
    /// [`crate::event::ExchangeDone::stalled`]).
    pub sides: [u8; CAUSES],
    /// End of the latest stall charged: later stalls only add what lies after it.
    mark: i64,
}

impl ExchangeParts {
    /// Charges the interval `[start, end]` (ns) to `cause`, clipped to after `from` (the
    /// exchange's first request byte) and to what earlier stalls did not cover.
    pub(crate) fn add(&mut self, cause: usize, from: i64, start: i64, end: i64) {
        let s = start.max(self.mark).max(from);
        if end > s {
            self.stalls[cause] += end - s;
        }
        self.mark = self.mark.max(end);
    }
}

/// Latency buckets: 4 per power of two of microseconds, up to 2^32 µs.
pub(crate) const BUCKETS: usize = 128;
/// Parts summed per bucket: latency, network, server, transfer, then the stalls.
const PARTS: usize = 4 + CAUSES;

fn bucket(latency_ns: i64) -> usize {
    let us = (latency_ns.max(0) as f64 / 1000.0) + 1.0;
    ((us.log2() * 4.0) as usize).min(BUCKETS - 1)
}

pub(crate) struct BreakdownAgg {
    counts: Box<[u64; BUCKETS]>,
    sums: Box<[[f64; PARTS]; BUCKETS]>,
}

impl BreakdownAgg {
    pub(crate) fn new() -> Self {
        BreakdownAgg {
            counts: Box::new([0; BUCKETS]),
            sums: Box::new([[0.0; PARTS]; BUCKETS]),
        }
    }

    /// Records one finished exchange (all values in ns).
    pub(crate) fn record(&mut self, latency: i64, rtt: i64, server: i64, parts: &ExchangeParts) {
        let latency = latency.max(0);
        let mut stalls = [0i64; CAUSES];
        let mut left = latency;
        for (k, s) in parts.stalls.iter().enumerate() {
            stalls[k] = (*s).clamp(0, left);
            left -= stalls[k];
        }
        let network = rtt.clamp(0, left);
        left -= network;
        let server = server.clamp(0, left);
        left -= server;
        let b = bucket(latency);
        self.counts[b] += 1;
        let row = &mut self.sums[b];
        let vals = [latency, network, server, left];
        for (k, v) in vals.iter().chain(stalls.iter()).enumerate() {
            row[k] += *v as f64 / 1e6;
        }
    }

    fn mean(counts: u64, row: &[f64; PARTS]) -> Breakdown {
        let n = counts.max(1) as f64;
        let v = |k: usize| row[k] / n;
        Breakdown {
            latency: v(0),
            network: v(1),
            server: v(2),
            transfer: v(3),
            stalls: Stalls(std::array::from_fn(|k| v(4 + k))),
        }
    }

    /// (median bucket's mean breakdown, overall mean); `None` without exchanges.
    pub(crate) fn finish(&self) -> Option<(Breakdown, Breakdown)> {
        let total: u64 = self.counts.iter().sum();
        if total == 0 {
            return None;
        }
        let mut all = [0.0; PARTS];
        for row in self.sums.iter() {
            for (a, v) in all.iter_mut().zip(row) {
                *a += v;
            }
        }
        let half = total.div_ceil(2);
        let mut seen = 0;
        let mut med = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= half {
                med = b;
                break;
            }
        }
        Some((
            Self::mean(self.counts[med], &self.sums[med]),
            Self::mean(total, &all),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn parts_add_up_and_overlaps_count_once() {
        let mut p = ExchangeParts::default();
        // Two overlapping stalls: 10..50 ms Nagle, 30..70 ms loss → 40 + 20 ms.
        p.add(NAGLE, 0, 10 * MS, 50 * MS);
        p.add(LOSS, 0, 30 * MS, 70 * MS);
        // Before the exchange started: clipped away.
        p.add(ZERO_WINDOW, 0, -20 * MS, -10 * MS);
        assert_eq!(p.stalls[NAGLE], 40 * MS);
        assert_eq!(p.stalls[LOSS], 20 * MS);
        assert_eq!(p.stalls[ZERO_WINDOW], 0);
        let mut a = BreakdownAgg::new();
        a.record(100 * MS, MS, 5 * MS, &p);
        let (med, mean) = a.finish().unwrap();
        assert_eq!(med, mean);
        assert!((med.latency - 100.0).abs() < 1e-9);
        assert!((med.stalls.get(FindingId::NagleDelayedAck) - 40.0).abs() < 1e-9);
        assert!((med.network - 1.0).abs() < 1e-9);
        assert!((med.server - 5.0).abs() < 1e-9);
        assert!((med.transfer - 34.0).abs() < 1e-9);
        let sum = med.network + med.server + med.transfer + med.stalls_total();
        assert!((sum - med.latency).abs() < 1e-9);
    }

    #[test]
    fn median_bucket_describes_the_typical_request() {
        let mut a = BreakdownAgg::new();
        let none = ExchangeParts::default();
        let mut nagle = ExchangeParts::default();
        nagle.add(NAGLE, 0, 0, 40 * MS);
        // 7 stalled requests of ~44 ms, 3 fast ones of 2 ms: the median is a stalled one.
        for _ in 0..7 {
            a.record(44 * MS, MS / 10, MS / 10, &nagle);
        }
        for _ in 0..3 {
            a.record(2 * MS, MS / 10, MS / 10, &none);
        }
        let (med, mean) = a.finish().unwrap();
        assert!((med.latency - 44.0).abs() < 1e-9, "{med:?}");
        assert!((med.stalls.get(FindingId::NagleDelayedAck) - 40.0).abs() < 1e-9);
        assert!((mean.latency - (7.0 * 44.0 + 3.0 * 2.0) / 10.0).abs() < 1e-9);
        // Over-long stalls are clipped to the latency.
        let mut b = BreakdownAgg::new();
        let mut huge = ExchangeParts::default();
        huge.add(TIMEOUT, 0, 0, 500 * MS);
        b.record(300 * MS, MS, MS, &huge);
        let (m, _) = b.finish().unwrap();
        assert!((m.stalls.get(FindingId::RetransmissionTimeout) - 300.0).abs() < 1e-9);
        assert_eq!((m.network, m.server, m.transfer), (0.0, 0.0, 0.0));
        assert!(BreakdownAgg::new().finish().is_none());
    }

    #[test]
    fn stalls_serialize_as_an_object_keyed_by_finding_id() {
        let mut s = Stalls::default();
        s.set(FindingId::NagleDelayedAck, 43.8);
        s.set(FindingId::ZeroWindow, 1.5);
        s.set(FindingId::HighBaseRtt, 9.0); // not a cause: ignored
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(
            json,
            "{\"nagle_delayed_ack\":43.8,\"delayed_ack_stall\":0.0,\
             \"packet_loss_retransmission\":0.0,\"retransmission_timeout\":0.0,\
             \"zero_window\":1.5}"
        );
        let back: Stalls = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.get(FindingId::HighBaseRtt), 0.0);
        // Unknown causes (from a newer writer) are skipped.
        let newer: Stalls = serde_json::from_str("{\"zero_window\":2.0,\"x\":1.0}").unwrap();
        assert_eq!(newer.get(FindingId::ZeroWindow), 2.0);
    }
}

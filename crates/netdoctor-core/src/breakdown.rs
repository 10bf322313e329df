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
//! 2. **network**: the round trip between the capture point and the server (SYN → SYN/ACK:
//!    the whole handshake RTT at the client, next to nothing at the server; the handshake RTT
//!    when the handshake was repeated; 0 when it was not captured), at most what the stalls
//!    left.
//! 3. **server**: first response byte − last request byte − that round trip (the server's
//!    think time), at most what was left. When a queue filled under load (the exchange's round trip under load,
//!    from the TCP timestamps, `track::echo::queued` against the handshake RTT), that round
//!    trip is subtracted instead: the first byte waited in the queue too, and that wait goes
//!    to transfer (the bytes moving through the rate and its queue), not to the server.
//! 4. **transfer**: the rest: moving the request and response bytes (serialization, windows,
//!    the client's own pacing).
//!
//! 5. **syn_retransmit** (a connection's first exchange only): when the SYN or the SYN/ACK was
//!    sent again, the client waited from its first SYN to its first request byte before the
//!    exchange began. That wait is what the client saw, so the breakdown adds it to the
//!    exchange's latency: one handshake RTT goes to network, the rest to `syn_retransmit`.
//!    (`latency_ms` of the exchanges stays first request byte → last response byte.)
//!
//! **Bands, not single requests.** `breakdown_p50_ms` describes a typical request: the mean
//! breakdown of the exchanges whose latency fell in the same bucket (buckets 2^¼ ≈ 19% wide)
//! as the median latency, so its parts add up to ≈ p50. `breakdown_p90_ms`, `_p99_ms`,
//! `_p999_ms` do the same for the bucket of that percentile, and `breakdown_max_ms` for the
//! slowest non-empty bucket: the tail is described by every request in its band, and
//! [`Breakdown::requests`] says how many that was. [`Breakdown::share`] is, per cause, the
//! fraction of the band's requests that cause stalled. `breakdown_mean_ms` is the mean over all
//! exchanges. Memory is fixed (`BUCKETS` × the parts), whatever the number of exchanges.
//!
//! Hand-written rather than a histogram crate's: an HDR histogram keeps counts per value, and
//! the band needs per bucket the *sums of every part* too (and the per-cause hit counts).

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::finding::FindingId;

/// The finding ids that are stall causes, in the order the breakdown charges and prints them.
/// A detector whose events stall exchanges adds its id here (one line) and charges its
/// intervals with [`cause_index`] of that id.
pub const STALL_CAUSES: [FindingId; 6] = [
    FindingId::NagleDelayedAck,
    FindingId::DelayedAckStall,
    FindingId::PacketLossRetransmission,
    FindingId::RetransmissionTimeout,
    FindingId::ZeroWindow,
    FindingId::SynRetransmit,
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
pub(crate) const SYN_RETRANSMIT: usize = cause(FindingId::SynRetransmit);

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

    /// Whether every cause is 0 (for `skip_serializing_if`).
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|v| *v == 0.0)
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

/// Where the time of the requests of a band went, in milliseconds (means over the band);
/// `network + server + transfer + stalls` adds up to `latency`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Breakdown {
    pub latency: f64,
    pub network: f64,
    pub server: f64,
    pub transfer: f64,
    pub stalls: Stalls,
    /// Requests in the band (absent in reports written before bands existed: 0).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub requests: u64,
    /// Per cause, the fraction (0–1) of the band's requests that cause stalled.
    #[serde(default, skip_serializing_if = "Stalls::is_zero")]
    pub share: Stalls,
    /// The fraction (0–1) of the band's requests that any cause stalled.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub stalled: f64,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

impl Breakdown {
    /// Sum of the stall parts.
    pub fn stalls_total(&self) -> f64 {
        self.stalls.0.iter().sum()
    }

    /// The stall causes of the band, largest first, with their milliseconds and the share of
    /// the band's requests they hit; causes below `min_ms` are left out.
    pub fn causes(&self, min_ms: f64) -> Vec<(FindingId, f64, f64)> {
        let mut v: Vec<(FindingId, f64, f64)> = self
            .stalls
            .iter()
            .zip(self.share.iter())
            .filter(|((_, ms), _)| *ms >= min_ms)
            .map(|((id, ms), (_, sh))| (id, ms, sh))
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    }
}

/// The bands of the tail: the breakdown of the requests around each percentile.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bands {
    pub p50: Breakdown,
    pub p90: Breakdown,
    pub p99: Breakdown,
    pub p999: Breakdown,
    pub max: Breakdown,
    pub mean: Breakdown,
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
/// The percentiles whose bands are described (the last band is the slowest bucket).
const QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

/// The bucket by its definition, `⌊4·log2(µs + 1)⌋`: a `log2` call (~50 instructions), which
/// [`bucket`] replaces on the per-exchange path with a look at the exponent and its thresholds.
fn bucket_by_log2(us: f64) -> usize {
    ((us.log2() * 4.0) as usize).min(BUCKETS - 1)
}

/// Per bucket `k`, the smallest `µs + 1` that [`bucket_by_log2`] puts in bucket `k` or above,
/// found once by a binary search over the ordered bit patterns of positive floats.
fn thresholds() -> &'static [f64; BUCKETS] {
    static T: std::sync::OnceLock<[f64; BUCKETS]> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut t = [1.0f64; BUCKETS];
        for (k, v) in t.iter_mut().enumerate().skip(1) {
            let (mut lo, mut hi) = (1.0f64.to_bits(), f64::MAX.to_bits());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if bucket_by_log2(f64::from_bits(mid)) >= k {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            *v = f64::from_bits(lo);
        }
        t
    })
}

/// [`bucket_by_log2`] of an exchange's latency without the `log2`: `µs + 1 ≥ 1` lies in
/// `[2^e, 2^(e+1))` for its exponent `e`, whose bucket is `4e` to `4e + 4` (a value just below
/// `2^(e+1)` may round up to `4(e+1)`); the thresholds pick which. Same bucket for every
/// latency (`tests::bucket_matches_log2`).
fn bucket(latency_ns: i64) -> usize {
    let us = (latency_ns.max(0) as f64 / 1000.0) + 1.0;
    let e = ((us.to_bits() >> 52) & 0x7ff).saturating_sub(1023) as usize;
    let base = 4 * e;
    if base >= BUCKETS - 1 {
        return BUCKETS - 1;
    }
    let t = thresholds();
    let mut b = base;
    while b < base + 4 && b + 1 < BUCKETS && us >= t[b + 1] {
        b += 1;
    }
    b
}

pub(crate) struct BreakdownAgg {
    counts: Box<[u64; BUCKETS]>,
    sums: Box<[[f64; PARTS]; BUCKETS]>,
    /// Per bucket and cause, the exchanges that cause stalled.
    hits: Box<[[u64; CAUSES]; BUCKETS]>,
    /// Per bucket, the exchanges any cause stalled.
    stalled: Box<[u64; BUCKETS]>,
}

impl BreakdownAgg {
    pub(crate) fn new() -> Self {
        BreakdownAgg {
            counts: Box::new([0; BUCKETS]),
            sums: Box::new([[0.0; PARTS]; BUCKETS]),
            hits: Box::new([[0; CAUSES]; BUCKETS]),
            stalled: Box::new([0; BUCKETS]),
        }
    }

    /// Records one finished exchange (all values in ns). (`#[inline]`: called once per
    /// exchange from `Agg::apply`; the compiler's choice to keep it apart, after unrelated
    /// changes in session 25, cost ~17 M instructions on the bench capture, callgrind.)
    #[inline]
    pub(crate) fn record(&mut self, latency: i64, rtt: i64, server: i64, parts: &ExchangeParts) {
        let latency = latency.max(0);
        let mut stalls = [0i64; CAUSES];
        let mut left = latency;
        // `left` never goes below 0, so `max(0).min(left)` is `clamp(0, left)` without its
        // check that the bounds are ordered (once per exchange, per part).
        for (k, s) in parts.stalls.iter().enumerate() {
            stalls[k] = (*s).max(0).min(left);
            left -= stalls[k];
        }
        let network = rtt.max(0).min(left);
        left -= network;
        let server = server.max(0).min(left);
        left -= server;
        let b = bucket(latency);
        self.counts[b] += 1;
        let row = &mut self.sums[b];
        let vals = [latency, network, server, left];
        for (k, v) in vals.iter().chain(stalls.iter()).enumerate() {
            row[k] += *v as f64 / 1e6;
        }
        for (h, s) in self.hits[b].iter_mut().zip(stalls) {
            *h += u64::from(s > 0);
        }
        self.stalled[b] += u64::from(stalls.iter().any(|s| *s > 0));
    }

    fn mean(count: u64, row: &[f64; PARTS], hits: &[u64; CAUSES], stalled: u64) -> Breakdown {
        let n = count.max(1) as f64;
        let v = |k: usize| row[k] / n;
        Breakdown {
            latency: v(0),
            network: v(1),
            server: v(2),
            transfer: v(3),
            stalls: Stalls(std::array::from_fn(|k| v(4 + k))),
            requests: count,
            share: Stalls(std::array::from_fn(|k| hits[k] as f64 / n)),
            stalled: stalled as f64 / n,
        }
    }

    fn band(&self, b: usize) -> Breakdown {
        Self::mean(
            self.counts[b],
            &self.sums[b],
            &self.hits[b],
            self.stalled[b],
        )
    }

    /// The bands of the tail and the overall mean; `None` without exchanges.
    pub(crate) fn finish(&self) -> Option<Bands> {
        let total: u64 = self.counts.iter().sum();
        if total == 0 {
            return None;
        }
        let mut all = [0.0; PARTS];
        let mut all_hits = [0u64; CAUSES];
        for (row, hits) in self.sums.iter().zip(self.hits.iter()) {
            for (a, v) in all.iter_mut().zip(row) {
                *a += v;
            }
            for (a, h) in all_hits.iter_mut().zip(hits) {
                *a += h;
            }
        }
        // The bucket holding each quantile (the rank HDR histograms use: ⌈q·n⌉).
        let at = |q: f64| {
            let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
            let mut seen = 0;
            for (b, &c) in self.counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return b;
                }
            }
            BUCKETS - 1
        };
        let last = self.counts.iter().rposition(|&c| c > 0).unwrap_or(0);
        let [p50, p90, p99, p999] = QUANTILES.map(|q| self.band(at(q)));
        Some(Bands {
            p50,
            p90,
            p99,
            p999,
            max: self.band(last),
            mean: Self::mean(total, &all, &all_hits, self.stalled.iter().sum()),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bucket_matches_log2() {
        let by_log2 = |ns: i64| super::bucket_by_log2((ns.max(0) as f64 / 1000.0) + 1.0);
        // Every nanosecond up to 3 ms, then steps of 0.01 % up to the top bucket and beyond.
        for ns in -5..3_000_000 {
            assert_eq!(super::bucket(ns), by_log2(ns), "{ns} ns");
        }
        let mut ns = 3_000_000i64;
        while ns < i64::MAX / 2 {
            assert_eq!(super::bucket(ns), by_log2(ns), "{ns} ns");
            ns += ns / 10_000 + 1;
        }
        // Both sides of every threshold.
        for (k, t) in super::thresholds().iter().enumerate().skip(1) {
            for us in [
                *t,
                f64::from_bits(t.to_bits() - 1),
                f64::from_bits(t.to_bits() + 1),
            ] {
                let ns = ((us - 1.0) * 1000.0) as i64;
                for d in -2..=2 {
                    assert_eq!(
                        super::bucket(ns + d),
                        by_log2(ns + d),
                        "bucket {k}: {} ns",
                        ns + d
                    );
                }
            }
        }
        assert_eq!(super::bucket(i64::MAX), super::BUCKETS - 1);
    }

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
        let bands = a.finish().unwrap();
        let (med, mean) = (bands.p50, bands.mean);
        assert_eq!(med, mean);
        assert_eq!(
            (med.requests, med.share.get(FindingId::NagleDelayedAck)),
            (1, 1.0)
        );
        assert_eq!(med.share.get(FindingId::ZeroWindow), 0.0);
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
        let bands = a.finish().unwrap();
        let (med, mean) = (bands.p50, bands.mean);
        assert!((med.latency - 44.0).abs() < 1e-9, "{med:?}");
        assert!((med.stalls.get(FindingId::NagleDelayedAck) - 40.0).abs() < 1e-9);
        assert!((mean.latency - (7.0 * 44.0 + 3.0 * 2.0) / 10.0).abs() < 1e-9);
        // Over-long stalls are clipped to the latency.
        let mut b = BreakdownAgg::new();
        let mut huge = ExchangeParts::default();
        huge.add(TIMEOUT, 0, 0, 500 * MS);
        b.record(300 * MS, MS, MS, &huge);
        let m = b.finish().unwrap().p50;
        assert!((m.stalls.get(FindingId::RetransmissionTimeout) - 300.0).abs() < 1e-9);
        assert_eq!((m.network, m.server, m.transfer), (0.0, 0.0, 0.0));
        assert!(BreakdownAgg::new().finish().is_none());
    }

    #[test]
    fn each_band_is_described_by_its_own_requests() {
        // 980 fast requests (2 ms), 15 stalled by Nagle (~44 ms), 5 by an RTO (~210 ms):
        // p50 is a fast one, p99 a Nagle band, p999 and max the RTO band.
        let mut a = BreakdownAgg::new();
        let none = ExchangeParts::default();
        let mut nagle = ExchangeParts::default();
        nagle.add(NAGLE, 0, MS, 41 * MS);
        let mut rto = ExchangeParts::default();
        rto.add(TIMEOUT, 0, MS, 201 * MS);
        for _ in 0..980 {
            a.record(2 * MS, MS / 10, MS, &none);
        }
        for _ in 0..15 {
            a.record(44 * MS, MS / 10, MS, &nagle);
        }
        for _ in 0..5 {
            a.record(210 * MS, MS / 10, MS, &rto);
        }
        let b = a.finish().unwrap();
        assert_eq!((b.p50.requests, b.p50.stalls_total()), (980, 0.0));
        assert_eq!(b.p90, b.p50);
        assert_eq!(b.p99.requests, 15);
        assert!((b.p99.latency - 44.0).abs() < 1e-9);
        assert_eq!(b.p99.share.get(FindingId::NagleDelayedAck), 1.0);
        assert_eq!(
            b.p99.causes(0.005),
            vec![(FindingId::NagleDelayedAck, 40.0, 1.0)]
        );
        assert_eq!(b.p999.requests, 5);
        assert!((b.p999.stalls.get(FindingId::RetransmissionTimeout) - 200.0).abs() < 1e-9);
        assert_eq!(b.max, b.p999);
        assert_eq!(b.mean.requests, 1000);
        assert!((b.mean.share.get(FindingId::NagleDelayedAck) - 0.015).abs() < 1e-12);
        assert!((b.mean.stalled - 0.02).abs() < 1e-12);
        assert_eq!((b.p50.stalled, b.p99.stalled), (0.0, 1.0));
        // Parts add up in every band.
        for x in [b.p50, b.p90, b.p99, b.p999, b.max, b.mean] {
            let sum = x.network + x.server + x.transfer + x.stalls_total();
            assert!((sum - x.latency).abs() < 1e-9, "{x:?}");
        }
    }

    #[test]
    fn old_breakdowns_without_bands_still_read() {
        let b: Breakdown = serde_json::from_str(
            "{\"latency\":2.0,\"network\":1.0,\"server\":1.0,\"transfer\":0.0,\"stalls\":{}}",
        )
        .unwrap();
        assert_eq!(
            (b.requests, b.share, b.stalled),
            (0, Stalls::default(), 0.0)
        );
        let json = serde_json::to_string(&b).unwrap();
        assert!(
            !json.contains("requests") && !json.contains("share") && !json.contains("stalled"),
            "{json}"
        );
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
             \"zero_window\":1.5,\"syn_retransmit\":0.0}"
        );
        let back: Stalls = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.get(FindingId::HighBaseRtt), 0.0);
        // Unknown causes (from a newer writer) are skipped.
        let newer: Stalls = serde_json::from_str("{\"zero_window\":2.0,\"x\":1.0}").unwrap();
        assert_eq!(newer.get(FindingId::ZeroWindow), 2.0);
    }
}

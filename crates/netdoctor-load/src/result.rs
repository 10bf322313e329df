//! What a run measured ([`LoadResult`], its error counts and HTTP/2 figures) and how the
//! workers' outcomes merge into it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::{LatencyBucket, Percentiles, QuantilePoint, TimelinePoint};
use crate::{distribution, h2, timeline, worker};

/// Errors by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// connect() failed (refused, unreachable, ...).
    pub connect: u64,
    /// Of `connect`: failed with EADDRNOTAVAIL ("Cannot assign requested address"): this
    /// host had no local port left for the target (absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connect_addr_not_avail: u64,
    /// read failed, the response was malformed, or the server closed before it was complete.
    pub read: u64,
    /// write failed.
    pub write: u64,
    /// no complete response within the timeout.
    pub timeout: u64,
    /// Of `timeout`: connect() had not completed when the timeout cut it (SYNs repeated or
    /// unanswered), absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connect_timeout: u64,
    /// responses with a status other than 2xx/3xx (and, for gRPC, a `grpc-status` other than
    /// 0 or none).
    pub status: u64,
    /// HTTP/2: streams reset by the server (RST_STREAM other than REFUSED_STREAM, which is
    /// retried) and GOAWAYs with an error code (absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stream: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout + self.status + self.stream
    }

    fn add(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.connect_addr_not_avail += o.connect_addr_not_avail;
        self.read += o.read;
        self.write += o.write;
        self.timeout += o.timeout;
        self.connect_timeout += o.connect_timeout;
        self.status += o.status;
        self.stream += o.stream;
    }
}

/// What a run measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoadResult {
    pub connections: usize,
    pub threads: usize,
    /// Wall time of the run.
    pub duration_s: f64,
    /// Completed responses (any status).
    pub requests: u64,
    pub requests_per_s: f64,
    /// Response bytes read (headers and bodies).
    pub bytes_read: u64,
    /// Bytes per second read.
    pub transfer_per_s: f64,
    pub latency_ms: Percentiles,
    /// Responses by status code.
    pub status: BTreeMap<u16, u64>,
    pub errors: ErrorCounts,
    /// connect() calls the load made (successful or not; absent when 0, e.g. in reports
    /// written before it was counted).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connects: u64,
    /// The first error seen, e.g. `connect 127.0.0.1:1: connection refused`.
    pub first_error: Option<String>,
    /// The constant rate asked for (requests/s), when the run was open loop; latencies are then
    /// measured from each request's intended send time (coordinated omission corrected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Latency histogram: log-spaced buckets (20 per decade) from the fastest request's to the
    /// slowest's; absent when no request completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<Vec<LatencyBucket>>,
    /// Latency at quantiles crowding toward the tail (0 .. 99.999 %, then the maximum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_curve: Option<Vec<QuantilePoint>>,
    /// Requests, errors and latency per second of the run (wider slots for runs over
    /// 600 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<TimelinePoint>>,
    /// The protocol spoken: `http/1.1`, `h2` (HTTP/2 over TLS) or `h2c` (cleartext HTTP/2);
    /// absent in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// HTTP/2: streams per connection, resets and GOAWAYs by code, gRPC statuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2: Option<H2Result>,
    /// How long the load's own threads waited for a CPU: the run's evidence about its own
    /// starvation (absent without schedstats, and in reports written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait: Option<CpuWait>,
    /// What the spin before sleep did ([`crate::LoadConfig::spin`]), summed over the threads;
    /// absent when the threads did not spin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin: Option<SpinCounts>,
}

/// The waits of the load threads that napped or spun before sleeping
/// ([`crate::LoadConfig::nap`], [`crate::LoadConfig::spin`]). `hits / spins` is the spin's hit
/// rate and `spin_us / requests` its CPU per request; `nap_hits / naps` the nap's hit rate
/// (`nap_us` is time asleep, not CPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpinCounts {
    /// Waits for events (each pass of the event loop that had nothing left to do).
    pub waits: u64,
    /// Waits that found nothing ready and spun.
    pub spins: u64,
    /// Spins that found an event before the budget ran out (the rest timed out and slept).
    pub hits: u64,
    /// Waits that slept at once: the back-off after spins that timed out or naps that found
    /// nothing.
    pub skipped: u64,
    /// Time spent spinning, µs.
    pub spin_us: u64,
    /// Waits that found nothing ready and napped (slept a few µs, then polled once).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub naps: u64,
    /// Naps after which events were ready (the rest slept in `epoll_wait`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nap_hits: u64,
    /// Time spent napping, µs (asleep: not CPU).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nap_us: u64,
    /// Naps that lasted more than twice their length (+20 µs): the thread got its CPU back
    /// late (a busy CPU), so their responses were read late.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub naps_late: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl SpinCounts {
    fn add(&mut self, o: &SpinCounts) {
        self.waits += o.waits;
        self.spins += o.spins;
        self.hits += o.hits;
        self.skipped += o.skipped;
        self.spin_us += o.spin_us;
        self.naps += o.naps;
        self.nap_hits += o.nap_hits;
        self.nap_us += o.nap_us;
        self.naps_late += o.naps_late;
    }
}

/// The load threads' scheduler figures over the run (`/proc/thread-self/schedstat`, summed
/// over the threads). A load thread that is runnable but not on a CPU cannot read a response
/// or send a request: its wait lands in the latencies it measures, so a run whose load
/// generator was starved measured the host as much as the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuWait {
    /// Time the threads waited on a run queue (runnable, not running), ms.
    pub wait_ms: f64,
    /// Time they ran on a CPU, ms.
    pub run_ms: f64,
    /// Times they were put on a CPU (each wake-up or preemption ends one wait).
    pub slices: u64,
    /// The tail of the waits (`worker::sched`): the 99th percentile of the wait before each
    /// wake-up of the event loop, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_p99_ms: Option<f64>,
    /// The longest wait before a wake-up, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_max_ms: Option<f64>,
    /// Wake-ups that waited over 1 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_waits: Option<u64>,
    /// The 99th percentile of each request's thread wait during its life, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_wait_p99_ms: Option<f64>,
    /// The latency p50 and p99 net of each request's own thread wait, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_p99_ms: Option<f64>,
}

impl CpuWait {
    /// The share of the threads' wall time spent waiting for a CPU (0..=1).
    pub fn share(&self, threads: usize, duration_s: f64) -> f64 {
        let wall_ms = threads.max(1) as f64 * duration_s * 1000.0;
        if wall_ms > 0.0 {
            (self.wait_ms / wall_ms).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The mean wait before each time on a CPU, ms.
    pub fn per_slice_ms(&self) -> f64 {
        if self.slices > 0 {
            self.wait_ms / self.slices as f64
        } else {
            0.0
        }
    }

    /// This thread's counters now: (on-CPU ns, run-queue ns, slices); `None` without
    /// schedstats.
    pub(crate) fn thread_now() -> Option<[u64; 3]> {
        let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        let mut it = s.split_whitespace().map(|v| v.parse::<u64>().ok());
        Some([it.next()??, it.next()??, it.next()??])
    }

    /// The sum over threads of (before, after) readings.
    pub(crate) fn from_threads(readings: &[Option<([u64; 3], [u64; 3])>]) -> Option<CpuWait> {
        let mut w = CpuWait::default();
        let mut any = false;
        for (a, b) in readings.iter().flatten() {
            any = true;
            w.run_ms += b[0].saturating_sub(a[0]) as f64 / 1e6;
            w.wait_ms += b[1].saturating_sub(a[1]) as f64 / 1e6;
            w.slices += b[2].saturating_sub(a[2]);
        }
        any.then_some(w)
    }

    /// These sums with the tail of the waits from the threads' clocks (when they read any).
    pub(crate) fn with_tail(mut self, clocks: &[&worker::sched::SchedClock]) -> CpuWait {
        let mut wakes = worker::new_histogram();
        let mut req = worker::new_histogram();
        let mut net = worker::new_histogram();
        let mut long = 0;
        for c in clocks.iter().filter(|c| c.enabled()) {
            let _ = wakes.add(&c.wakes);
            let _ = req.add(&c.request_wait);
            let _ = net.add(&c.net);
            long += c.long_waits;
        }
        let ms = |h: &Histogram<u64>, q: f64| {
            (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
        };
        self.wake_p99_ms = ms(&wakes, 0.99);
        self.wake_max_ms = ms(&wakes, 1.0);
        self.long_waits = (!wakes.is_empty()).then_some(long);
        self.request_wait_p99_ms = ms(&req, 0.99);
        self.net_p50_ms = ms(&net, 0.5);
        self.net_p99_ms = ms(&net, 0.99);
        self
    }
}

/// What an HTTP/2 run saw beyond the HTTP/1.1 figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct H2Result {
    /// Concurrent streams per connection asked for (`-m`).
    pub streams: usize,
    /// The largest SETTINGS_MAX_CONCURRENT_STREAMS the server announced (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_max_streams: Option<u32>,
    /// RST_STREAM frames received, by error code name (`REFUSED_STREAM`, `CANCEL` ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rst_stream: BTreeMap<String, u64>,
    /// GOAWAY frames received, by error code name (`NO_ERROR` is a graceful close, e.g.
    /// nginx's `keepalive_requests`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub goaway: BTreeMap<String, u64>,
    /// gRPC: responses by `grpc-status` name (`OK`, `UNIMPLEMENTED` ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_status: BTreeMap<String, u64>,
}

pub(crate) fn merge(
    connections: usize,
    threads: usize,
    elapsed: Duration,
    parts: Vec<worker::Outcome>,
) -> LoadResult {
    let mut hist = worker::new_histogram();
    let mut requests = 0;
    let mut bytes_read = 0;
    let mut connects = 0;
    let mut errors = ErrorCounts::default();
    let mut status = BTreeMap::new();
    let mut first: Option<(Instant, String)> = None;
    let mut timelines = Vec::with_capacity(parts.len());
    let mut h2: Option<H2Result> = None;
    let mut spin: Option<SpinCounts> = None;
    for p in parts {
        if let Some(c) = &p.spin {
            spin.get_or_insert_with(SpinCounts::default).add(c);
        }
        if let Some(c) = &p.h2 {
            let r = h2.get_or_insert_with(H2Result::default);
            let add = |m: &mut BTreeMap<String, u64>,
                       from: &BTreeMap<u32, u64>,
                       name: fn(u32) -> String| {
                for (k, v) in from {
                    *m.entry(name(*k)).or_insert(0) += v;
                }
            };
            add(&mut r.rst_stream, &c.rst_stream, h2::error_name);
            add(&mut r.goaway, &c.goaway, h2::error_name);
            add(&mut r.grpc_status, &c.grpc_status, |g| {
                worker::h2::grpc_name(g).to_string()
            });
            if c.server_max_streams > 0 {
                r.server_max_streams =
                    Some(r.server_max_streams.unwrap_or(0).max(c.server_max_streams));
            }
        }
        timelines.push(p.timeline);
        // Same bounds on both sides: `add` cannot fail; ignore rather than panic.
        let _ = hist.add(&p.hist);
        requests += p.requests;
        bytes_read += p.bytes_read;
        connects += p.connects;
        errors.add(&p.errors);
        for (code, n) in p.status.iter().enumerate() {
            if *n > 0 {
                *status.entry(code as u16).or_insert(0) += n;
            }
        }
        if let Some((t, msg)) = p.first_error
            && first.as_ref().is_none_or(|(ft, _)| t < *ft)
        {
            first = Some((t, msg));
        }
    }
    let secs = elapsed.as_secs_f64();
    let per_s = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
    LoadResult {
        connections,
        threads,
        duration_s: secs,
        requests,
        requests_per_s: per_s(requests),
        bytes_read,
        transfer_per_s: per_s(bytes_read),
        latency_ms: percentiles(&hist),
        status,
        errors,
        connects,
        first_error: first.map(|(_, m)| m),
        rate: None,
        latency_histogram: Some(distribution::buckets(&hist)).filter(|b| !b.is_empty()),
        latency_curve: Some(distribution::curve(&hist)).filter(|c| !c.is_empty()),
        timeline: Some(timeline::merge(timelines, elapsed)).filter(|t| !t.is_empty()),
        protocol: None,
        h2,
        cpu_wait: None,
        spin,
    }
}

pub(crate) fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let ms = |us: u64| us as f64 / 1000.0;
    Percentiles {
        mean: h.mean() / 1000.0,
        p50: ms(h.value_at_quantile(0.50)),
        p75: ms(h.value_at_quantile(0.75)),
        p90: ms(h.value_at_quantile(0.90)),
        p99: ms(h.value_at_quantile(0.99)),
        p999: ms(h.value_at_quantile(0.999)),
        max: ms(h.max()),
        stdev: h.stdev() / 1000.0,
    }
}

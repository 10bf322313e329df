//! What limited a TCP transfer, judged on the sending side from its `TCP_INFO` sampled every
//! interval (bytes in flight against the peer's advertised window and the congestion window,
//! queued bytes against the send buffer, the RTT against its minimum, retransmits and
//! backoff), this side's sysctls, and the bytes the receiver counted. DESIGN.md's bulk-transfer
//! facts: `rwnd_limited`/`sndbuf_limited` times depend on pacing, so those counters are
//! evidence, not the rule.
//!
//! One limit per transfer, tried in this order (each excludes the ones after it):
//!
//! | id | rule | look-alike kept apart |
//! |---|---|---|
//! | `mss_mtu_problem` | the sender sent ≥ 10 segments, < 5 % were acknowledged, the RTO backed off, the peer's window is open | a zero window (window 0), a dead peer (the control connection on the same path works, or there would be no report) |
//! | `mss_mtu_problem` (small MSS) | `snd_mss` < 1200 while the path MTU allows ≥ 240 bytes more, ≥ 90 % of the bytes acknowledged | the black hole (little acknowledged), a 1280-byte IPv6-minimum path (MSS ≥ 1220) |
//! | `application_limited` | a target bitrate was set and reached (±10 %), in flight under half of both windows | a target the window cannot reach (missed) |
//! | `receive_window_limited` | in ≥ 60 % of the intervals with data to send (at the edge, or in flight in the reads inside), ≥ 80 % of the peer's window in flight and cwnd above it, or the window closed (zero), at the edge or in most of the interval's 100 ms reads, or tcp_info's rwnd-limited time ≥ half the interval's busy time (beside busy loops the edges caught nothing in flight in every interval); or the window's median under a quarter of cwnd's with the stream at ≥ a quarter of what it carries per smoothed RTT, caught full at least once (one 100 ms read or one edge, not a whole interval) and the kernel's rwnd-limited ≥ 10 % (on a loaded host the writer's own work with a window of 3 segments hides the rest); with one such sample, tcp_info's rwnd-limited time ≥ 30 % of busy; or, whatever the samples, tcp_info's rwnd-limited time ≥ 50 % of busy (a small window on a fast path fills and drains between samples) | a shaper or loss (cwnd ≤ window) |
//! | `receiver_softirq_saturated` | the receiver's busiest CPU in softirq had no time left (idle ≤ 10 %), ≥ 25 % of it in softirq, and its receive softirq squeezed (out of budget with packets left) or dropped at its backlog ≥ 2/s, or at all with ≥ 50 % in softirq (beside busy loops `ksoftirqd` seldom squeezes); or that CPU's `ksoftirqd` waited on the run queue ≥ 20 % of the test (beside busy tasks the softirq runs there at a task's share: 11–42 % softirq, 1–5 squeezes) (the receiver's `/proc/stat`, `/proc/softirqs`, `/proc/net/softnet_stat`, sent by a netdoctor server) | a CPU busy in user space (little softirq, no squeeze), softirq that kept up (no squeeze, idle time), a shaper's queue and a lossy path (their CPU is not in softirq) |
//! | `shaper_limited` | on the samples whose rate the path set (not those with nothing unsent and the writer asleep < 10 %: a writer short of CPU): flat rate (interval CV ≤ 10 %), RTT ≥ 2 ms and ≥ 2× over its minimum (a standing queue), in flight ≥ half of cwnd in ≥ 60 % of samples, at the edge or, for a sender late to send (≥ a cwnd unsent, the peer's window not full), in the interval's 100 ms reads | random loss (no queue, rate varies), the writer (not cwnd-bound, nothing unsent), a small send buffer (less than a cwnd unsent), the receiver's window (full) |
//! | `congestion_limited` | ≥ 0.5 % of the bytes retransmitted and cwnd the bound (in flight ≥ 80 % of cwnd, or cwnd under half the window) | a shaper's drops (queue and flat rate, caught above) |
//! | `send_buffer_limited` | no target reached; the writing thread asleep ≥ 10 % of each interval's time not spent waiting for a CPU (median; `/proc/thread-self/schedstat`: neither running nor runnable, which an unthrottled writer is only in `write()` waiting for buffer space; run-queue time is left out of the share, else a busy host hides the buffer: the lab's writer slept 31–38 % of the interval quiet, 20–32 % beside a busy loop, 14–27 % on a loaded CI host), little unsent (< half of in flight) in most samples, in flight < 80 % of both windows in ≥ 60 %, the connection idle ≥ 10 % of the test (`tcpi_busy_time`), and the most in flight (at the edges or in the 100 ms reads) ≥ 40 % of SO_SNDBUF (the kernel counts about twice the payload, so a full buffer holds about half in flight) | a CPU-bound writer (idle connection too, but never asleep), a flat-out sender with a big buffer (unsent bytes pile up behind cwnd), a rate-limited writer (target reached), a writer asleep on a loaded CPU with its buffer far from full (0 B of 2.11 MB in flight) |
//!
//! [`window`] has the endpoint limits (receive window, send buffer, the writer), [`softirq`] the
//! receiver's CPU, [`path`] the path's (shaper, loss, MTU).

mod path;
mod softirq;
mod window;

use crate::report::{IntervalStream, Report, Sum, TcpSnapshot};
use crate::text::{fmt_bits, fmt_bytes};
use netdoctor_core::{Evidence, Finding, Side};
use std::collections::BTreeMap;

/// The sysctls read into [`Report::sysctls`].
const SYSCTLS: [&str; 6] = [
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_mtu_probing",
    "net.core.wmem_max",
    "net.core.rmem_max",
];

/// This network namespace's TCP sysctls (those that are readable).
pub fn read_sysctls() -> BTreeMap<String, String> {
    SYSCTLS
        .iter()
        .filter_map(|k| {
            let path = format!("/proc/sys/{}", k.replace('.', "/"));
            let v = std::fs::read_to_string(path).ok()?;
            Some((
                k.to_string(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            ))
        })
        .collect()
}

/// What the detectors share: the sending streams' samples and the test's sums.
pub(crate) struct Facts<'a> {
    pub r: &'a Report,
    /// Sender samples after the first interval (slow start) that moved data.
    pub ss: Vec<&'a IntervalStream>,
    pub sent: &'a Sum,
    pub received: &'a Sum,
    pub sender: Side,
    pub receiver: Side,
    /// The first sending stream's `TCP_INFO` at the end.
    pub info: Option<&'a TcpSnapshot>,
}

impl Facts<'_> {
    pub fn n(&self) -> usize {
        self.ss.len()
    }

    /// The median of a sample field over [`Facts::ss`].
    pub fn med(&self, f: impl Fn(&IntervalStream) -> u64) -> u64 {
        let mut v: Vec<u64> = self.ss.iter().map(|s| f(s)).collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    }

    /// The median smoothed RTT over the samples, µs (0 where none was read).
    pub fn srtt_us(&self) -> u64 {
        self.med(|s| u64::from(s.rtt_us.unwrap_or(0)))
    }

    /// The test's sending rate per stream, bits/s.
    pub fn per_stream_bps(&self) -> f64 {
        self.sent.bits_per_second / f64::from(self.r.setup.num_streams.max(1))
    }

    /// How many samples satisfy `p`.
    pub fn count(&self, p: impl Fn(&IntervalStream) -> bool) -> usize {
        self.ss.iter().filter(|s| p(s)).count()
    }

    /// The medians of in flight, the peer's window and cwnd, as one evidence line.
    pub fn window_note(&self) -> String {
        format!(
            "median over {} samples: {} in flight, peer window {}, cwnd {}, unsent {}, send buffer {}",
            self.n(),
            fmt_bytes(self.med(inflight) as f64),
            fmt_bytes(self.med(wnd) as f64),
            fmt_bytes(self.med(cwnd) as f64),
            fmt_bytes(self.med(|s| s.notsent.unwrap_or(0)) as f64),
            fmt_bytes(self.med(|s| s.sndbuf.unwrap_or(0)) as f64),
        )
    }

    /// The `TCP_INFO` reads inside the intervals (every 100 ms by the writer) as one evidence
    /// line; `None` without them.
    pub fn reads_note(&self) -> Option<String> {
        let rs: Vec<_> = self.ss.iter().filter_map(|s| s.tcp_reads).collect();
        if rs.is_empty() {
            return None;
        }
        let n: u32 = rs.iter().map(|r| r.reads).sum();
        let at: u32 = rs.iter().map(|r| r.at_window).sum();
        let lo = rs.iter().map(|r| r.cwnd_min).min().unwrap_or(0);
        let hi = rs.iter().map(|r| r.cwnd_max).max().unwrap_or(0);
        let med = |f: fn(&crate::report::TcpReads) -> f64| {
            let mut v: Vec<f64> = rs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2] * 100.0
        };
        let peak =
            |f: fn(&crate::report::TcpReads) -> f64| rs.iter().map(f).fold(0.0, f64::max) * 100.0;
        Some(format!(
            "tcp_info read {n} times inside {} intervals (every 100 ms and at each edge): the peer's window full in {at} of {n}, cwnd {}–{}; per interval (median) busy {:.0} %, rwnd-limited {:.0} % (busiest 100 ms {:.0} %), sndbuf-limited {:.0} % (busiest 100 ms {:.0} %)",
            rs.len(),
            fmt_bytes(lo as f64),
            fmt_bytes(hi as f64),
            med(|r| r.busy),
            med(|r| r.rwnd_limited),
            peak(|r| r.rwnd_limited_peak),
            med(|r| r.sndbuf_limited),
            peak(|r| r.sndbuf_limited_peak),
        ))
    }

    /// The end-of-test `TCP_INFO` counters as one evidence line.
    pub fn counters(&self) -> Option<String> {
        self.info.map(|t| {
            format!(
                "tcp_info at the end: busy {} ms, rwnd_limited {} ms, sndbuf_limited {} ms, min_rtt {} µs, srtt {} µs, cwnd {} × {} B, ssthresh {}, retransmitted {} of {} sent, {} acknowledged, backoff {}, delivery rate {}",
                t.busy_time_us / 1000,
                t.rwnd_limited_us / 1000,
                t.sndbuf_limited_us / 1000,
                t.min_rtt_us,
                t.rtt_us,
                t.snd_cwnd,
                t.snd_mss,
                t.snd_ssthresh,
                fmt_bytes(t.bytes_retrans as f64),
                fmt_bytes(t.bytes_sent as f64),
                fmt_bytes(t.bytes_acked as f64),
                t.backoff,
                fmt_bits(t.delivery_rate as f64 * 8.0)
            )
        })
    }

    /// Named sysctls as one evidence line (those that were read).
    pub fn sysctl_note(&self, keys: &[&str]) -> Option<String> {
        let v: Vec<String> = keys
            .iter()
            .filter_map(|k| Some(format!("{k} = {}", self.r.sysctls.get(*k)?)))
            .collect();
        (!v.is_empty()).then(|| format!("the sender's sysctls: {}", v.join(", ")))
    }

    /// Adds the window medians, the counters and the given sysctls as evidence.
    pub fn evidence(&self, f: &mut Finding, sysctls: &[&str]) {
        let notes = std::iter::once(Some(self.window_note()))
            .chain([
                self.reads_note(),
                self.counters(),
                self.sysctl_note(sysctls),
            ])
            .flatten();
        for note in notes {
            f.evidence.push(Evidence::Probe {
                probe: "tcp_info".into(),
                note,
            });
        }
    }
}

pub(crate) fn inflight(s: &IntervalStream) -> u64 {
    s.inflight.unwrap_or(0)
}
pub(crate) fn wnd(s: &IntervalStream) -> u64 {
    s.snd_wnd.unwrap_or(0)
}
pub(crate) fn cwnd(s: &IntervalStream) -> u64 {
    s.snd_cwnd.unwrap_or(0)
}

/// The findings of a finished test, for the side that sent (the report's own senders).
pub fn findings(r: &Report) -> Vec<Finding> {
    if r.setup.protocol != "tcp" {
        return Vec::new();
    }
    let all: Vec<&IntervalStream> = r
        .intervals
        .iter()
        .skip(1)
        .flat_map(|iv| iv.streams.iter())
        .filter(|s| s.sender && s.inflight.is_some() && s.snd_wnd.is_some())
        .collect();
    // The direction this side sent in: the test's direction unless -R (the client receives) or
    // the bidir reverse (the server sends).
    let local_client = r.role == "client";
    let (sent, received) = if local_client != r.setup.reverse {
        (&r.end.sum_sent, &r.end.sum_received)
    } else {
        (
            r.end
                .sum_sent_bidir_reverse
                .as_ref()
                .unwrap_or(&r.end.sum_sent),
            r.end
                .sum_received_bidir_reverse
                .as_ref()
                .unwrap_or(&r.end.sum_received),
        )
    };
    let (sender, receiver) = if local_client {
        (Side::Client, Side::Server)
    } else {
        (Side::Server, Side::Client)
    };
    let facts = Facts {
        r,
        ss: all.into_iter().filter(|s| s.bytes > 0).collect(),
        sent,
        received,
        sender,
        receiver,
        info: r.sender_tcp_info.first().map(|t| &t.info),
    };
    if let Some(f) = path::mtu_black_hole(&facts).or_else(|| path::small_mss(&facts)) {
        return vec![f];
    }
    if facts.n() < 2 {
        return Vec::new();
    }
    let detectors: [fn(&Facts) -> Option<Finding>; 6] = [
        window::application_limited,
        window::receive_window_limited,
        softirq::receiver_softirq_saturated,
        path::shaper_limited,
        path::congestion_limited,
        window::send_buffer_limited,
    ];
    detectors
        .iter()
        .find_map(|d| d(&facts))
        .into_iter()
        .collect()
}

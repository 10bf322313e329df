//! What limited a TCP transfer, judged on the sending side from its `TCP_INFO` sampled every
//! interval: bytes in flight against the peer's advertised window and the congestion window
//! (DESIGN.md's bulk-transfer facts: `rwnd_limited` times depend on pacing, so the counters
//! are evidence, not the rule).
//!
//! - `receive_window_limited`: in most intervals the data in flight reached ≥ 80 % of the
//!   peer's window while the congestion window had room (window < cwnd). The receiver's buffer
//!   is the limit.
//! - `application_limited`: a target bitrate was set, the sender reached it (±10 %), and the
//!   data in flight stayed under half of both windows: the network and the receiver had room,
//!   the writer did not use it.
//!
//! Look-alikes kept apart: a sender that paces itself never fills the window, so it is not
//! window-limited; a window-limited flow with `-b` above what the window allows misses the
//! target, so it is not application-limited; a flow limited by its congestion window (loss,
//! a shaper) has cwnd ≤ window and is neither.

use crate::report::{IntervalStream, Report, fmt_bits, fmt_bytes};
use netdoctor_core::{Evidence, Finding, FindingId, Severity, Side};

/// The samples of one sending stream, skipping the first interval (slow start).
fn samples(r: &Report) -> Vec<&IntervalStream> {
    r.intervals
        .iter()
        .skip(1)
        .flat_map(|iv| iv.streams.iter())
        .filter(|s| s.sender && s.inflight.is_some() && s.snd_wnd.is_some() && s.bytes > 0)
        .collect()
}

/// The findings of a finished test, for the side that sent (the report's own senders).
pub fn findings(r: &Report) -> Vec<Finding> {
    if r.setup.protocol != "tcp" {
        return Vec::new();
    }
    let ss = samples(r);
    if ss.len() < 2 {
        return Vec::new();
    }
    let cwnd = |s: &IntervalStream| s.snd_cwnd.unwrap_or(0);
    let at_window = ss
        .iter()
        .filter(|s| {
            let (inf, wnd) = (s.inflight.unwrap_or(0), s.snd_wnd.unwrap_or(0));
            wnd > 0 && inf * 10 >= wnd * 8 && wnd < cwnd(s)
        })
        .count();
    let roomy = ss
        .iter()
        .filter(|s| {
            let (inf, wnd) = (s.inflight.unwrap_or(0), s.snd_wnd.unwrap_or(0));
            inf * 2 < wnd.min(cwnd(s)).max(1)
        })
        .count();
    let n = ss.len();
    let med = |f: &dyn Fn(&IntervalStream) -> u64| {
        let mut v: Vec<u64> = ss.iter().map(|s| f(s)).collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (m_inf, m_wnd, m_cwnd) = (
        med(&|s| s.inflight.unwrap_or(0)),
        med(&|s| s.snd_wnd.unwrap_or(0)),
        med(&|s| s.snd_cwnd.unwrap_or(0)),
    );
    // The direction this side sent in: the test's direction unless -R (the client receives) or
    // the bidir reverse (the server sends).
    let local_client = r.role == "client";
    let sent = if local_client != r.setup.reverse {
        &r.end.sum_sent
    } else {
        r.end
            .sum_sent_bidir_reverse
            .as_ref()
            .unwrap_or(&r.end.sum_sent)
    };
    let receiver = if local_client {
        Side::Server
    } else {
        Side::Client
    };
    let sender = if local_client {
        Side::Client
    } else {
        Side::Server
    };
    let info = r.sender_tcp_info.first().map(|t| &t.info);
    let counters = info
        .map(|t| {
            format!(
                "tcp_info at the end: busy {} ms, rwnd_limited {} ms, sndbuf_limited {} ms, min_rtt {} µs, delivery rate {}",
                t.busy_time_us / 1000,
                t.rwnd_limited_us / 1000,
                t.sndbuf_limited_us / 1000,
                t.min_rtt_us,
                fmt_bits(t.delivery_rate as f64 * 8.0)
            )
        })
        .unwrap_or_default();
    let window_note = format!(
        "median over {n} samples: {} in flight, peer window {}, cwnd {}",
        fmt_bytes(m_inf as f64),
        fmt_bytes(m_wnd as f64),
        fmt_bytes(m_cwnd as f64)
    );
    let mut out = Vec::new();
    let target = r.setup.target_bitrate * u64::from(r.setup.num_streams);
    let reached = target > 0 && {
        let ratio = sent.bits_per_second / target as f64;
        (0.9..=1.1).contains(&ratio)
    };
    if reached && roomy * 2 > n {
        let mut f = Finding::new(
            FindingId::ApplicationLimited,
            Severity::Info,
            sender,
            format!(
                "the sender wrote at its target {} and the path had room: {} in flight of a {} window",
                fmt_bits(target as f64),
                fmt_bytes(m_inf as f64),
                fmt_bytes(m_wnd.min(m_cwnd) as f64)
            ),
        );
        f.confidence = roomy as f64 / n as f64;
        f.explanation = format!(
            "The transfer ran at {} against a target of {}; in {roomy} of {n} samples the data in flight stayed under half of both the peer's window and the congestion window, so neither the network nor the receiver held it back: the writer did.",
            fmt_bits(sent.bits_per_second),
            fmt_bits(target as f64)
        );
        f.fix = "Let the application write faster (remove the rate limit, larger writes, more parallel streams), or accept this rate as intended; no network or kernel setting needs to change.".into();
        f.evidence.push(Evidence::Probe {
            probe: "tcp_info".into(),
            note: window_note.clone(),
        });
        out.push(f);
    } else if at_window * 10 >= n * 6 {
        let rtt = info.map(|t| t.min_rtt_us).unwrap_or(0);
        let mut f = Finding::new(
            FindingId::ReceiveWindowLimited,
            Severity::Warning,
            receiver,
            format!(
                "limited by the receiver's window: {} in flight against a {} window while cwnd allowed {}",
                fmt_bytes(m_inf as f64),
                fmt_bytes(m_wnd as f64),
                fmt_bytes(m_cwnd as f64)
            ),
        );
        f.confidence = at_window as f64 / n as f64;
        f.explanation = format!(
            "In {at_window} of {n} samples the sender had at least 80 % of the receiver's advertised window in flight, and its congestion window was larger than that window: it waited for the receiver, not for the network. At a minimum RTT of {rtt} µs, a {} window carries at most {} per stream.",
            fmt_bytes(m_wnd as f64),
            fmt_bits(if rtt > 0 {
                m_wnd as f64 * 8.0 / (f64::from(rtt) / 1e6)
            } else {
                0.0
            })
        );
        f.fix = "On the receiver, raise the maximum of net.ipv4.tcp_rmem (or the SO_RCVBUF the program sets) to at least the bandwidth-delay product; accepted sockets inherit the listener's buffers, so set it before the server starts.".into();
        f.evidence.push(Evidence::Probe {
            probe: "tcp_info".into(),
            note: window_note.clone(),
        });
        if !counters.is_empty() {
            f.evidence.push(Evidence::Probe {
                probe: "tcp_info".into(),
                note: counters.clone(),
            });
        }
        out.push(f);
    }
    out
}

//! The base round trip from every source a diagnosis has (issue 20): the SYN probe, the
//! handshakes of the captured connections, the kernel's `tcpi_min_rtt` of the load's own
//! connections (sock_diag, sampled while the load runs) and, when the target is behind
//! routers, the trace.
//! A path without routers (a VPN, a stretched VLAN, a bridge) has no trace, yet its round trip
//! can be most of the request latency; `high_base_rtt` then comes from the other sources.
//! When the trace already made the finding, the other sources join it as evidence.
//!
//! **Why `min_rtt` is the round trip and not the server's time.** The kernel's `min_rtt` of a
//! client socket is the lowest RTT sample over the connection's life (a 5-minute window,
//! `tcp_min_rtt_wlen`), and its first sample is the SYN → SYN/ACK, which the listener answers
//! in the kernel: a server slow to answer (its time is between the request and the response)
//! never lowers it, and later samples can only be larger. The smoothed RTT (`srtt`) is what the
//! round trip was *during* the load: far above `min_rtt`, the difference is a queue on the path
//! (a shaper, a full buffer), not distance, and the evidence says so; the base is `min_rtt`.
//! On loopback `min_rtt` is a few microseconds: no finding.

use netdoctor_core::analyze::Analysis;
use netdoctor_core::finding::{Evidence, Finding, FindingId};
use netdoctor_observe::sockdiag::ConnInfo;
use netdoctor_report::Report;
use netdoctor_route::findings::{RttSource, Thresholds, high_base_rtt_from};

/// The smoothed RTT at least this many times `min_rtt` (and [`QUEUE_MIN_MS`] above it) is
/// named as a queue on the path in the evidence.
const QUEUE_RATIO: f64 = 2.0;
/// … and at least this many milliseconds above it.
const QUEUE_MIN_MS: f64 = 2.0;

/// The kernel's view of the load's connections: the median of their `min_rtt` is the round
/// trip (each is already that connection's lowest sample; the median of many is not moved by
/// one odd socket), with the best and the smoothed RTT beside it. `None` without a connection
/// that has an RTT sample (the kernel reports `min_rtt` as `~0` before the first one).
pub fn kernel_source(conns: &[ConnInfo]) -> Option<RttSource> {
    let mut min: Vec<u32> = conns
        .iter()
        .map(|c| c.min_rtt_us)
        .filter(|&m| m > 0 && m != u32::MAX)
        .collect();
    if min.is_empty() {
        return None;
    }
    min.sort_unstable();
    let mut srtt: Vec<u32> = conns
        .iter()
        .filter(|c| c.min_rtt_us > 0 && c.min_rtt_us != u32::MAX)
        .map(|c| c.rtt_us)
        .collect();
    srtt.sort_unstable();
    let ms = |us: u32| f64::from(us) / 1000.0;
    let median = ms(min[min.len() / 2]);
    let srtt = ms(srtt[srtt.len() / 2]);
    let queue = if srtt >= QUEUE_RATIO * median && srtt - median >= QUEUE_MIN_MS {
        format!(
            "; the smoothed RTT is {:.1} ms above min_rtt: a queue on the path during the load, not distance",
            srtt - median
        )
    } else {
        String::new()
    };
    Some(RttSource {
        source: "tcp_info min_rtt".into(),
        ms: median,
        note: format!(
            "kernel tcp_info of {} of the load's connections: min_rtt median {median:.2} ms (best {:.2} ms), smoothed RTT median {srtt:.2} ms{queue}",
            min.len(),
            ms(min[0]),
        ),
    })
}

/// The round trips the run measured outside the trace.
pub fn sources(report: &Report, analysis: &Analysis, load_conns: &[ConnInfo]) -> Vec<RttSource> {
    let mut v = Vec::new();
    if let Some(syn) = report
        .measurements
        .probe
        .as_ref()
        .and_then(|p| p.syn.as_ref())
        && let Some(min) = syn.min_ms
    {
        v.push(RttSource {
            source: "syn probe".into(),
            ms: min,
            note: format!(
                "{} of {} SYNs answered: best {min:.1} ms, median {:.1} ms ({})",
                syn.answered,
                syn.sent,
                syn.median_ms.unwrap_or(min),
                match syn.method {
                    netdoctor_probe::SynMethod::RawSyn => "raw SYN",
                    _ => "connect() timing",
                }
            ),
        });
    }
    if let Some(rtt) = analysis.exchanges.rtt_ms {
        v.push(RttSource {
            source: "captured handshakes".into(),
            ms: rtt,
            note: format!(
                "median handshake round trip (SYN to the ACK of the SYN/ACK) {rtt:.1} ms over {} connections",
                analysis.stats.connections_with_handshake
            ),
        });
    }
    v.extend(kernel_source(load_conns));
    v
}

/// Adds `high_base_rtt` from the SYN probe, the handshakes and the load's `min_rtt` when the
/// trace did not make it, or their evidence to the trace's finding.
pub fn apply(
    report: &Report,
    analysis: &Analysis,
    load_conns: &[ConnInfo],
    findings: &mut Vec<Finding>,
) {
    let src = sources(report, analysis, load_conns);
    if src.is_empty() {
        return;
    }
    if let Some(f) = findings.iter_mut().find(|f| f.id == FindingId::HighBaseRtt) {
        f.evidence.extend(src.into_iter().map(|s| Evidence::Probe {
            probe: s.source,
            note: s.note,
        }));
        return;
    }
    let request_ms = report
        .measurements
        .load
        .as_ref()
        .map(|l| l.latency_ms.p50)
        .or_else(|| (analysis.exchanges.count > 0).then_some(analysis.exchanges.latency_ms.p50));
    let target = report
        .target
        .address
        .clone()
        .unwrap_or_else(|| report.target.input.clone());
    findings.extend(high_base_rtt_from(
        &target,
        &src,
        request_ms,
        &Thresholds::default(),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(min_rtt_us: u32, rtt_us: u32) -> ConnInfo {
        ConnInfo {
            local: "10.0.0.1:40000".parse().unwrap(),
            remote: "10.0.0.2:80".parse().unwrap(),
            state: 1,
            rtt_us,
            rttvar_us: 0,
            min_rtt_us,
            rto_us: 200_000,
            total_retrans: 0,
            lost: 0,
            delivery_rate: 0,
            snd_cwnd: 10,
            bytes_acked: 0,
            bytes_received: 0,
        }
    }

    #[test]
    fn min_rtt_is_the_median_of_the_connections_and_says_its_figures() {
        let s = kernel_source(&[
            conn(40_100, 40_900),
            conn(40_300, 41_000),
            conn(u32::MAX, 0),
            conn(39_900, 40_500),
        ])
        .unwrap();
        assert_eq!(s.source, "tcp_info min_rtt");
        assert!((s.ms - 40.1).abs() < 1e-9, "{}", s.ms);
        assert!(s.note.contains("3 of the load's connections"), "{}", s.note);
        assert!(s.note.contains("best 39.90 ms"), "{}", s.note);
        assert!(!s.note.contains("queue"), "{}", s.note);
        assert!(kernel_source(&[]).is_none());
        assert!(kernel_source(&[conn(u32::MAX, 0), conn(0, 0)]).is_none());
    }

    /// Queueing on the path: min_rtt low, srtt high. The base stays min_rtt; the evidence
    /// names the queue.
    #[test]
    fn a_queue_is_srtt_above_min_rtt_not_distance() {
        let s = kernel_source(&[conn(300, 25_000), conn(320, 30_000), conn(310, 28_000)]).unwrap();
        assert!((s.ms - 0.31).abs() < 1e-9, "{}", s.ms);
        assert!(s.note.contains("a queue on the path"), "{}", s.note);
        // Loopback: microseconds, noisy srtt ratio but under 2 ms: not a queue.
        let s = kernel_source(&[conn(8, 40), conn(9, 60)]).unwrap();
        assert!(!s.note.contains("queue"), "{}", s.note);
    }
}

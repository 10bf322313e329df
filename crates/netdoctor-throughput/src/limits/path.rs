//! The path's limits: a shaper or policer (`shaper_limited`), loss (`congestion_limited`) and
//! full-size segments that vanish (`mss_mtu_problem`).

use super::{Facts, cwnd, inflight, wnd};
use crate::text::{fmt_bits, fmt_bytes};
use netdoctor_core::{Finding, FindingId, Severity, Side};

/// The interval rates' coefficient of variation (standard deviation over mean).
fn rate_cv(x: &Facts) -> f64 {
    let v: Vec<f64> = x.ss.iter().map(|s| s.bits_per_second).collect();
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    if mean <= 0.0 {
        return f64::INFINITY;
    }
    let var = v.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / v.len().max(1) as f64;
    var.sqrt() / mean
}

/// Median RTT and the minimum RTT (µs) over the samples.
fn rtts(x: &Facts) -> (u64, u64) {
    let srtt = x.med(|s| u64::from(s.rtt_us.unwrap_or(0)));
    let min =
        x.ss.iter()
            .filter_map(|s| s.min_rtt_us)
            .chain(x.info.map(|t| t.min_rtt_us))
            .filter(|m| *m > 0)
            .min()
            .map_or(0, u64::from);
    (srtt, min)
}

/// How many samples had at least half of cwnd in flight (bbr keeps 80–100 % in flight behind
/// a shaper, and reno's cwnd saws; a writer or a window that holds the sender back keeps less).
fn cwnd_bound(x: &Facts) -> usize {
    x.count(|s| cwnd(s) > 0 && inflight(s) * 2 >= cwnd(s))
}

fn retrans_share(x: &Facts) -> f64 {
    x.info
        .map(|t| t.bytes_retrans as f64 / t.bytes_sent.max(1) as f64)
        .unwrap_or(0.0)
}

/// A flat rate with a standing queue, bounded by cwnd.
pub(super) fn shaper_limited(x: &Facts) -> Option<Finding> {
    let n = x.n();
    if n < 3 {
        return None;
    }
    let cv = rate_cv(x);
    let (srtt, min_rtt) = rtts(x);
    let queue = srtt.saturating_sub(min_rtt);
    let bound = cwnd_bound(x);
    if cv > 0.10 || queue < 2000 || srtt < 2 * min_rtt.max(1) || bound * 10 < n * 6 {
        return None;
    }
    let rate = x.med(|s| s.bits_per_second as u64);
    let retr = x.info.map(|t| t.total_retrans).unwrap_or(0);
    let mut f = Finding::new(
        FindingId::ShaperLimited,
        Severity::Warning,
        Side::Network,
        format!(
            "limited by a shaper or policer on the path: a flat {} with {:.1} ms of queueing (RTT {:.1} ms against a minimum of {:.2} ms)",
            fmt_bits(rate as f64),
            queue as f64 / 1000.0,
            srtt as f64 / 1000.0,
            min_rtt as f64 / 1000.0
        ),
    );
    f.confidence = (bound as f64 / n as f64).min(1.0 - cv);
    f.explanation = format!(
        "Over {n} intervals the rate varied by only {:.1} % (coefficient of variation) while the smoothed RTT stayed {:.1} ms above the minimum RTT: data waits in a queue in front of a fixed rate. In {bound} of {n} samples the data in flight filled at least half of the congestion window, and the receiver's window had room, so neither end set this rate. {}",
        cv * 100.0,
        queue as f64 / 1000.0,
        if retr > 0 {
            format!("{retr} segments were retransmitted: the queue overflowed now and then.")
        } else {
            "Nothing was retransmitted: the sender's congestion control kept the queue from overflowing.".to_string()
        }
    );
    f.fix = "Find what sets this rate on the path (tc -s qdisc on the routers, a cloud instance's or link's bandwidth cap, the carrier's contract) and raise it, or accept it; tuning TCP on either end cannot beat a shaper.".into();
    x.evidence(&mut f, &["net.ipv4.tcp_congestion_control"]);
    Some(f)
}

/// Retransmits with cwnd as the bound and no standing queue.
pub(super) fn congestion_limited(x: &Facts) -> Option<Finding> {
    let n = x.n();
    let share = retrans_share(x);
    let limited =
        x.count(|s| cwnd(s) > 0 && (inflight(s) * 10 >= cwnd(s) * 8 || cwnd(s) * 2 < wnd(s)));
    if share < 0.005 || limited * 10 < n * 6 {
        return None;
    }
    let cw: Vec<u64> = x.ss.iter().map(|s| cwnd(s)).collect();
    let (lo, hi) = (
        cw.iter().copied().min().unwrap_or(0),
        cw.iter().copied().max().unwrap_or(0),
    );
    let (srtt, min_rtt) = rtts(x);
    let retr = x.info.map(|t| t.total_retrans).unwrap_or(0);
    let ssthresh = x.info.map(|t| t.snd_ssthresh).unwrap_or(0);
    let mut f = Finding::new(
        FindingId::CongestionLimited,
        Severity::Warning,
        Side::Network,
        format!(
            "limited by loss: {:.1} % of the bytes retransmitted ({retr} segments) and cwnd between {} and {} while the peer's window was {}",
            share * 100.0,
            fmt_bytes(lo as f64),
            fmt_bytes(hi as f64),
            fmt_bytes(x.med(wnd) as f64)
        ),
    );
    f.confidence = limited as f64 / n as f64;
    f.explanation = format!(
        "The sender retransmitted {:.1} % of what it sent, and in {limited} of {n} samples the congestion window, not the receiver's window or the send buffer, bounded the data in flight; it ended with ssthresh {ssthresh} segments{}. The RTT ({:.2} ms against a minimum of {:.2} ms) shows no standing queue, so the drops are loss on the path, not a shaper's full queue.",
        share * 100.0,
        if lo * 4 <= hi {
            format!(
                ", after collapsing from {} to {}",
                fmt_bytes(hi as f64),
                fmt_bytes(lo as f64)
            )
        } else {
            String::new()
        },
        srtt as f64 / 1000.0,
        min_rtt as f64 / 1000.0
    );
    f.fix = "Find where packets are lost (netdoctor trace for the hop, interface and qdisc drop counters, firewall rules, a bad cable or Wi-Fi) and fix it; on a path that stays lossy, a loss-tolerant congestion control (bbr) keeps more of the rate.".into();
    x.evidence(&mut f, &["net.ipv4.tcp_congestion_control"]);
    Some(f)
}

/// Full-size segments never acknowledged while the connection itself works.
pub(super) fn mtu_black_hole(x: &Facts) -> Option<Finding> {
    let t = x.info?;
    let mss = u64::from(t.snd_mss);
    if mss == 0
        || t.bytes_sent < 10 * mss
        || t.bytes_acked * 20 > t.bytes_sent
        || (t.backoff == 0 && t.total_retrans < 2)
        || t.snd_wnd == 0
    {
        return None;
    }
    let mut f = Finding::new(
        FindingId::MssMtuProblem,
        Severity::Critical,
        Side::Network,
        format!(
            "full-size segments vanish on the path (an MTU black hole): {} sent in {} B segments, {} acknowledged, the receiver counted {}",
            fmt_bytes(t.bytes_sent as f64),
            t.snd_mss,
            fmt_bytes(t.bytes_acked as f64),
            fmt_bytes(x.received.bytes as f64)
        ),
    );
    f.confidence = 0.9;
    f.explanation = format!(
        "The handshake and the test's control messages crossed the same path, but of {} sent in segments of {} bytes (path MTU {} as this host knows it) only {} were acknowledged; the sender retransmitted {} times and its timer backed off {} times, while the receiver's window stayed open ({}). Small packets pass and large ones do not: a hop with a smaller MTU drops them, and the ICMP that should tell the sender to use smaller packets does not arrive.{}",
        fmt_bytes(t.bytes_sent as f64),
        t.snd_mss,
        t.pmtu,
        fmt_bytes(t.bytes_acked as f64),
        t.total_retrans,
        t.backoff,
        fmt_bytes(f64::from(t.snd_wnd)),
        x.r.sysctls
            .get("net.ipv4.tcp_mtu_probing")
            .map(|v| format!(" net.ipv4.tcp_mtu_probing is {v} here."))
            .unwrap_or_default()
    );
    f.fix = "Let ICMP fragmentation-needed (type 3 code 4) and ICMPv6 packet-too-big through the firewalls on the path; or clamp the MSS to the path MTU on the router (iptables -t mangle … TCPMSS --clamp-mss-to-pmtu), or set net.ipv4.tcp_mtu_probing=1 on the sender.".into();
    x.evidence(&mut f, &["net.ipv4.tcp_mtu_probing"]);
    Some(f)
}

/// Below this MSS (bytes) a path is a small-MSS one: a 1280-byte IPv6-minimum hop still gives
/// 1220, Ethernet 1448 with timestamps.
pub(super) const SMALL_MSS: u32 = 1200;

/// Every segment small (a peer or a clamp announced a small MSS) while the path's MTU allows
/// far more: the transfer is bound by packets per second. Not a black hole: the segments
/// arrive (most bytes are acknowledged).
pub(super) fn small_mss(x: &Facts) -> Option<Finding> {
    let t = x.info?;
    let mss = t.snd_mss;
    if mss == 0
        || mss >= SMALL_MSS
        || t.pmtu < mss + 40 + 200
        || t.bytes_sent < 100 * u64::from(mss)
        || t.bytes_acked * 10 < t.bytes_sent * 9
    {
        return None;
    }
    let secs = x.sent.seconds.max(1e-3);
    let pps = x.sent.bytes as f64 / f64::from(mss) / secs;
    let full = t.pmtu.saturating_sub(52).max(mss);
    let mut f = Finding::new(
        FindingId::MssMtuProblem,
        Severity::Warning,
        Side::Network,
        format!(
            "small segments: the sender's MSS is {mss} bytes on a path whose MTU is {} ({:.0} packets/s for {})",
            t.pmtu,
            pps,
            fmt_bits(x.sent.bits_per_second)
        ),
    );
    f.confidence = 0.9;
    f.explanation = format!(
        "The peer's SYN (or a middlebox rewriting it) announced an MSS that leaves {mss} bytes per segment, while this host's path MTU is {} and would carry {full}: {:.1}× the packets for the same bytes, so per-packet costs on both hosts and every hop bound the rate. The segments arrived ({} of {} acknowledged): this is not a black hole.",
        t.pmtu,
        f64::from(full) / f64::from(mss),
        fmt_bytes(t.bytes_acked as f64),
        fmt_bytes(t.bytes_sent as f64)
    );
    f.fix = "Find what lowers the MSS: an `iptables … -j TCPMSS --set-mss` clamp or a tunnel on the path, or the receiver's route (`ip route … advmss`) or MTU; clamp to the path MTU instead (`--clamp-mss-to-pmtu`).".into();
    x.evidence(&mut f, &[]);
    Some(f)
}

//! The path's limits: a shaper or policer (`shaper_limited`), loss (`congestion_limited`) and
//! full-size segments that vanish (`mss_mtu_problem`).

use super::{Facts, cwnd, inflight, wnd};
use crate::report::IntervalStream;
use crate::text::{fmt_bits, fmt_bytes};
use netdoctor_core::{Evidence, Finding, FindingId, Severity, Side};

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
    let srtt = x.srtt_us();
    let min =
        x.ss.iter()
            .filter_map(|s| s.min_rtt_us)
            .chain(x.info.map(|t| t.min_rtt_us))
            .filter(|m| *m > 0)
            .min()
            .map_or(0, u64::from);
    (srtt, min)
}

/// A sample with at least half of cwnd in flight at the interval's edge (bbr keeps 80–100 % in
/// flight behind a shaper, and reno's cwnd saws; a writer or a window that holds the sender
/// back keeps less).
fn at_cwnd(s: &IntervalStream) -> bool {
    cwnd(s) > 0 && inflight(s) * 2 >= cwnd(s)
}

/// A sample whose edge read undercounts what the path held: under half of cwnd in flight at
/// the edge while at least a cwnd waited unsent and the peer's window had room (so neither
/// the writer nor the receiver held the data back), and the reads inside the interval (every
/// 100 ms) saw at least half of the interval's largest cwnd in flight. The sender had data,
/// room and cwnd, and sent it when its host got to it: a sending host short of CPU (session
/// 19, load 5.4: 65 KB in flight of a 150–185 KB cwnd with 1.2 MB unsent, 2 of 4 edges under
/// half while every interval's reads reached it). A writer that cannot keep up has nothing
/// unsent; a small send buffer holds less than a cwnd; a receiver's window is full.
fn lagging(s: &IntervalStream) -> bool {
    let c = cwnd(s);
    let Some(r) = s.tcp_reads else {
        return false;
    };
    c > 0
        && !at_cwnd(s)
        && s.notsent.unwrap_or(0) >= c
        && inflight(s) * 10 < wnd(s) * 8
        && r.inflight_max * 2 >= r.cwnd_max.max(c)
}

/// How many samples had the path holding at least half of cwnd: at the edge, or inside an
/// interval whose edge read caught a lagging sender ([`lagging`]); and how many of them only
/// inside.
fn cwnd_bound(x: &Facts) -> (usize, usize) {
    let edge = x.count(at_cwnd);
    let lag = x.count(lagging);
    (edge + lag, lag)
}

/// The median share of the intervals the writer waited on a run queue for a CPU, over the
/// lagging samples (`None` without schedstats).
fn lag_runq(x: &Facts) -> Option<f64> {
    let mut v: Vec<f64> =
        x.ss.iter()
            .filter(|s| lagging(s))
            .filter_map(|s| s.writer_runq)
            .collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The sentence and evidence line for the lagging samples, if any.
fn lag_note(x: &Facts, lag: usize) -> Option<(String, String)> {
    if lag == 0 {
        return None;
    }
    let lagged: Vec<&IntervalStream> = x.ss.iter().copied().filter(|s| lagging(s)).collect();
    let med = |f: &dyn Fn(&IntervalStream) -> u64| {
        let mut v: Vec<u64> = lagged.iter().map(|s| f(s)).collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (inf, cw, unsent) = (med(&inflight), med(&cwnd), med(&|s| s.notsent.unwrap_or(0)));
    let peak = med(&|s| s.tcp_reads.map_or(0, |r| r.inflight_max));
    let runq = lag_runq(x);
    let cpu = match runq {
        Some(q) if q >= 0.05 => format!(
            " The sending host was short of CPU: its writer waited for one {:.0} % of those intervals.",
            q * 100.0
        ),
        Some(q) => format!(
            " (Its writer waited for a CPU only {:.0} % of those intervals: what delayed the sending is not measured here.)",
            q * 100.0
        ),
        None => String::new(),
    };
    let [inf, cw, unsent, peak] =
        [inf, cw, unsent, peak].map(|b| fmt_bytes(b as f64).trim().to_string());
    let sentence = format!(
        "In {lag} of them the read at the interval's edge caught less than half ({inf} of a {cw} cwnd) while {unsent} waited unsent and the peer's window had room, and the reads inside the interval saw {peak} in flight: the sender was late to send what it had, not held back by the path, the writer or the receiver.{cpu}",
    );
    let note = format!(
        "{lag} samples under half of cwnd at the edge but not in the interval (median): {inf} in flight, cwnd {cw}, unsent {unsent}, the interval's most in flight {peak}{}",
        runq.map_or(String::new(), |q| format!(
            ", the writer waiting for a CPU {:.0} % of the interval",
            q * 100.0
        ))
    );
    Some((sentence, note))
}

fn retrans_share(x: &Facts) -> f64 {
    x.info
        .map(|t| t.bytes_retrans as f64 / t.bytes_sent.max(1) as f64)
        .unwrap_or(0.0)
}

/// A sample whose rate the writer set, not the path: nothing waited unsent at the edge and the
/// unthrottled writer hardly slept (it sleeps only waiting for buffer space), so it spent the
/// interval writing or waiting for a CPU. Session 20, the shaper lab beside busy loops (one
/// per CPU, load 10): one interval at 25 Mbit/s behind the 100 Mbit/s shaper, 0 B unsent, the
/// writer asleep 0 % and its 100 ms tick run twice in the second; the others 96–118 Mbit/s.
fn writer_bound(s: &IntervalStream) -> bool {
    s.notsent == Some(0) && s.writer_asleep.is_some_and(|a| a < 0.1)
}

/// The sentence for the samples left out as the writer's ([`writer_bound`]), if any.
fn writer_note(all: &Facts) -> Option<String> {
    let left: Vec<&IntervalStream> = all.ss.iter().copied().filter(|s| writer_bound(s)).collect();
    if left.is_empty() {
        return None;
    }
    let rates: Vec<String> = left.iter().map(|s| fmt_bits(s.bits_per_second)).collect();
    let mut q: Vec<f64> = left.iter().filter_map(|s| s.writer_runq).collect();
    q.sort_by(f64::total_cmp);
    Some(format!(
        "Left out: {} of the {} intervals ({}), with nothing unsent and the writer never waiting for buffer space, so the writer set their rate, not the path{}.",
        left.len(),
        all.n(),
        rates.join(", "),
        q.get(q.len() / 2).map_or(String::new(), |m| format!(
            " (it waited for a CPU {:.0} % of the time: the sending host was short of CPU)",
            m * 100.0
        ))
    ))
}

/// A flat rate with a standing queue, bounded by cwnd. Judged on the samples whose rate the
/// path set (those [`writer_bound`] are left out).
pub(super) fn shaper_limited(all: &Facts) -> Option<Finding> {
    let kept = Facts {
        ss: all
            .ss
            .iter()
            .copied()
            .filter(|s| !writer_bound(s))
            .collect(),
        ..*all
    };
    let x = &kept;
    let n = x.n();
    if n < 3 {
        return None;
    }
    let cv = rate_cv(x);
    let (srtt, min_rtt) = rtts(x);
    let queue = srtt.saturating_sub(min_rtt);
    let (bound, lag) = cwnd_bound(x);
    // The queue: at least 2 ms, and a twentieth of the path's own RTT. Behind a shaper reno
    // and cubic fill the shaper's queue (the lab's: ms over a path of µs), but bbr keeps it
    // small: 3.3 ms over a 37 ms path (session 29, 50 Mbit/s htb). Loss without a queue,
    // a small window or a slow writer leave srtt at the minimum.
    if cv > 0.10 || queue < 2000 || queue * 20 < min_rtt || bound * 10 < n * 6 {
        return None;
    }
    let rate = x.med(|s| s.bits_per_second as u64);
    let retr = x.info.map(|t| t.total_retrans).unwrap_or(0);
    let note = lag_note(x, lag);
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
        "Over {n} intervals the rate varied by only {:.1} % (coefficient of variation) while the smoothed RTT stayed {:.1} ms above the minimum RTT: data waits in a queue in front of a fixed rate. In {bound} of {n} samples the data in flight filled at least half of the congestion window, and the receiver's window had room, so neither end set this rate.{}{} {}",
        cv * 100.0,
        queue as f64 / 1000.0,
        writer_note(all).map_or(String::new(), |w| format!(" {w}")),
        note.as_ref()
            .map_or(String::new(), |(sentence, _)| format!(" {sentence}")),
        if retr > 0 {
            format!("{retr} segments were retransmitted: the queue overflowed now and then.")
        } else {
            "Nothing was retransmitted: the sender's congestion control kept the queue from overflowing.".to_string()
        }
    );
    f.fix = "Find what sets this rate on the path (tc -s qdisc on the routers, a cloud instance's or link's bandwidth cap, the carrier's contract) and raise it, or accept it; tuning TCP on either end cannot beat a shaper.".into();
    x.evidence(&mut f, &["net.ipv4.tcp_congestion_control"]);
    if let Some((_, line)) = note {
        f.evidence.push(Evidence::Probe {
            probe: "tcp_info".into(),
            note: line,
        });
    }
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

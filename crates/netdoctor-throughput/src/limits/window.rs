//! The endpoints' limits: the writer (`application_limited`), the receiver's buffer
//! (`receive_window_limited`) and the sender's buffer (`send_buffer_limited`).

use super::{Facts, cwnd, inflight, wnd};
use crate::report::IntervalStream;
use crate::text::{fmt_bits, fmt_bytes};
use netdoctor_core::{Finding, FindingId, Severity};

/// The sender wrote at its target and the path had room.
pub(super) fn application_limited(x: &Facts) -> Option<Finding> {
    let r = x.r;
    let n = x.n();
    let target = r.setup.target_bitrate * u64::from(r.setup.num_streams);
    let ratio = x.sent.bits_per_second / target.max(1) as f64;
    if target == 0 || !(0.9..=1.1).contains(&ratio) {
        return None;
    }
    let roomy = x.count(|s| inflight(s) * 2 < wnd(s).min(cwnd(s)).max(1));
    if roomy * 2 <= n {
        return None;
    }
    let (m_inf, m_wnd, m_cwnd) = (x.med(inflight), x.med(wnd), x.med(cwnd));
    let mut f = Finding::new(
        FindingId::ApplicationLimited,
        Severity::Info,
        x.sender,
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
        fmt_bits(x.sent.bits_per_second),
        fmt_bits(target as f64)
    );
    f.fix = "Let the application write faster (remove the rate limit, larger writes, more parallel streams), or accept this rate as intended; no network or kernel setting needs to change.".into();
    x.evidence(&mut f, &[]);
    Some(f)
}

/// In flight sits at the peer's window while cwnd has room. A closed window (zero: the
/// receiving application fell behind, e.g. short of CPU, with a buffer too small to absorb it)
/// holds the sender back too and counts; it is named apart in the explanation.
pub(super) fn receive_window_limited(x: &Facts) -> Option<Finding> {
    let n = x.n();
    // A sample where the sender had nothing at all (nothing in flight, nothing unsent) says
    // nothing about the window at its edge: on a fast path with a small window the writer is
    // often just behind (short of CPU) at the sampled instant. The reads inside the interval
    // (every 100 ms) still do: beside busy loops the small-rmem lab's edges caught 0 B in
    // flight in every interval while the reads inside saw 4,344 B against a 4.6 KB window in 7
    // of 10 (session 20's CI).
    let idle = |s: &IntervalStream| inflight(s) == 0 && s.notsent.unwrap_or(0) == 0;
    let active = |s: &IntervalStream| !idle(s) || s.tcp_reads.is_some_and(|t| t.inflight_max > 0);
    let n_active = x.count(active);
    let closed = x.count(|s| !idle(s) && wnd(s) == 0);
    let at_edge = |s: &IntervalStream| {
        let (inf, w) = (inflight(s), wnd(s));
        !idle(s) && (w == 0 || (inf * 10 >= w * 8 && w < cwnd(s)))
    };
    // Inside the interval: most reads at the window (≥ 80 % of it in flight, cwnd above it, or
    // closed), or the kernel's clock had the window stopping the sender for most of the time
    // it had data in flight. A shaper, loss or a slow writer gives neither: cwnd or the writer
    // is the bound, the window is far from full.
    let inside = |s: &IntervalStream| {
        s.tcp_reads.is_some_and(|t| {
            (t.reads > 0 && t.at_window * 2 > t.reads)
                || (t.busy > 0.0 && t.rwnd_limited >= t.busy * 0.5)
        })
    };
    let at_window = x.count(|s| active(s) && (at_edge(s) || inside(s)));
    // With one sample with data, the kernel's own rwnd-limited time must agree (≥ 30 % of the
    // time the connection was busy).
    let kernel_share = x
        .info
        .map(|t| t.rwnd_limited_us as f64 / t.busy_time_us.max(1) as f64)
        .unwrap_or(0.0);
    let by_samples = at_window * 10 >= n_active * 6 && (n_active >= 2 || kernel_share >= 0.3);
    // The kernel's own clock counts the time the window, not cwnd, stopped the sender over the
    // whole test; on a fast path a small window fills and drains between two edge samples
    // (loopback, 32 KiB window, 10.8 Gbit/s: rwnd-limited 55-60 % of busy in every interval
    // while the edges caught it at the window in fewer than 6 of 10).
    let by_kernel = kernel_share >= 0.5;
    // The window's size against cwnd and the rate: far under cwnd in the median (a quarter),
    // and the stream ran at ≥ a quarter of what that window carries per smoothed RTT, with
    // the window caught full at least once and the kernel's clock agreeing in part (≥ 10 %).
    // Session 21, the small-rmem case on a loaded host: a 4.6 KB window against a 201 KB cwnd,
    // 860 Mbit/s of the 1.23 Gbit/s it carries at 30 µs, while the writer, busy with the
    // tiny segments' ACKs, kept little unsent: the edges caught the window full in 2 of 3, the
    // reads in 15 of 42, the kernel's clock 20 %. The look-alikes' windows are 2–4,000 times
    // cwnd's quarter (shaper, loss, small send buffer, slow writer, softirq).
    let (w_med, c_med) = (x.med(wnd), x.med(cwnd));
    let srtt_us = x.srtt_us();
    let window_rate = if srtt_us > 0 {
        w_med as f64 * 8.0 / (srtt_us as f64 / 1e6)
    } else {
        0.0
    };
    let per_stream = x.per_stream_bps();
    // "Caught full once" is any single read or edge at the window, not an interval judged
    // full: stop 39's CI (nothing else running) saw the 4.6 KB window full in 5 of 42 reads
    // and at no edge (1.4–2.9 KB in flight), the kernel's clock 17 %, at 878 Mbit/s of the
    // ~1 Gbit/s it carries; counting intervals found nothing.
    let reads = x.ss.iter().filter_map(|s| s.tcp_reads);
    let (reads_full, reads_all) =
        reads.fold((0u32, 0u32), |(f, a), t| (f + t.at_window, a + t.reads));
    let edges_full = x.count(at_edge);
    let by_size = w_med > 0
        && w_med * 4 < c_med
        && window_rate > 0.0
        && per_stream * 4.0 >= window_rate
        && (at_window > 0 || reads_full > 0 || edges_full > 0)
        && kernel_share >= 0.1;
    if n_active == 0 || !(by_samples || by_kernel || by_size) {
        return None;
    }
    // In flight at the edge, or the most the reads inside saw when the edge caught nothing:
    // a sentence saying "0 B in flight" beside "at the window in 7 of 10" would contradict
    // itself.
    let (m_inf, m_cwnd) = (
        x.med(|s| inflight(s).max(s.tcp_reads.map_or(0, |t| t.inflight_max))),
        c_med,
    );
    // The window the receiver offered when it offered one (a closed window is not its size).
    let mut open: Vec<u64> = x.ss.iter().map(|s| wnd(s)).filter(|&w| w > 0).collect();
    open.sort_unstable();
    let m_wnd = open.get(open.len() / 2).copied().unwrap_or(0);
    let rtt = x.info.map(|t| t.min_rtt_us).unwrap_or(0);
    let mut f = Finding::new(
        FindingId::ReceiveWindowLimited,
        Severity::Warning,
        x.receiver,
        format!(
            "limited by the receiver's window: {} in flight against a {} window while cwnd allowed {}",
            fmt_bytes(m_inf as f64),
            fmt_bytes(m_wnd as f64),
            fmt_bytes(m_cwnd as f64)
        ),
    );
    let how = if by_samples {
        f.confidence = at_window as f64 / n_active as f64;
        format!(
            "In {at_window} of the {n_active} intervals with data to send (of {n}) the sender had at least 80 % of the receiver's advertised window in flight (or the window was closed), at the interval's edge or in most of the reads inside it (every 100 ms), or the kernel counted it stopped by that window for most of the interval's busy time, and its congestion window was larger than that window: it waited for the receiver, not for the network."
        )
    } else if !by_kernel {
        f.confidence = 0.7;
        format!(
            "The receiver's window ({}, the median of {n} samples) was under a quarter of the congestion window ({}), and the stream ran at {} of the {} that window carries per round trip at the smoothed RTT of {srtt_us} µs: the window set the rate. The edges caught it full in {edges_full} of {n} samples and the reads inside the intervals in {reads_full} of {reads_all} reads, and the kernel counted the sender stopped by it {:.0} % of the time it had data in flight; the rest went to the sender's own work: with a window of a few segments each one waits for the receiver's next window update.",
            fmt_bytes(w_med as f64),
            fmt_bytes(c_med as f64),
            fmt_bits(per_stream),
            fmt_bits(window_rate),
            kernel_share * 100.0
        )
    } else {
        f.confidence = kernel_share.min(0.9);
        let (limited, busy) = x
            .info
            .map_or((0, 0), |t| (t.rwnd_limited_us, t.busy_time_us));
        format!(
            "The kernel counted the sender stopped by the receiver's window, with room left in its congestion window, for {:.0} % of the time it had data in flight (tcp_info: rwnd-limited {} ms of {} ms busy): it waited for the receiver, not for the network. The samples at interval edges caught it at the window in {at_window} of {n_active}: on a fast path a small window fills and drains between samples.",
            kernel_share * 100.0,
            limited / 1000,
            busy / 1000
        )
    };
    f.explanation = format!(
        "{how} At a minimum RTT of {rtt} µs, a {} window carries at most {} per stream.{}",
        fmt_bytes(m_wnd as f64),
        fmt_bits(if rtt > 0 {
            m_wnd as f64 * 8.0 / (f64::from(rtt) / 1e6)
        } else {
            0.0
        }),
        if closed > 0 {
            format!(
                " In {closed} of those samples the window was closed (zero): the receiving application also fell behind in reading, and the small buffer could not absorb it."
            )
        } else {
            String::new()
        }
    );
    f.fix = if closed * 2 > n {
        "On the receiver, make the application read faster (its CPU, its read loop) and raise the maximum of net.ipv4.tcp_rmem (or the SO_RCVBUF the program sets) to at least the bandwidth-delay product; accepted sockets inherit the listener's buffers, so set it before the server starts."
    } else {
        "On the receiver, raise the maximum of net.ipv4.tcp_rmem (or the SO_RCVBUF the program sets) to at least the bandwidth-delay product; accepted sockets inherit the listener's buffers, so set it before the server starts."
    }
    .into();
    x.evidence(&mut f, &[]);
    Some(f)
}

/// The median share of its time off a run queue an unthrottled writer sleeps, at least, for
/// its buffer to count.
const MIN_ASLEEP: f64 = 0.1;

/// The unthrottled writer sleeps (waiting in `write()` for buffer space), almost nothing
/// waits unsent, both windows have room, and either the connection sits idle part of the test
/// (the small buffer drains before the blocked writer refills it: a path of a few µs) or the
/// kernel's own clock counts the sender short of buffer most of the time it had data in flight
/// (a path of milliseconds: the buffer empties into the network and waits a round trip for
/// the ACKs that free it). (No target reached: checked before.)
pub(super) fn send_buffer_limited(x: &Facts) -> Option<Finding> {
    let n = x.n();
    let t = x.info?;
    let mut w: Vec<f64> = x.ss.iter().filter_map(|s| s.writer_asleep).collect();
    w.sort_by(f64::total_cmp);
    let asleep = w.get(w.len() / 2).copied().unwrap_or(0.0);
    // Data waiting behind the windows: the buffer is not what holds the sender back.
    let backlogged = x.count(|s| inflight(s) > 0 && s.notsent.unwrap_or(0) * 2 >= inflight(s));
    let room = x.count(|s| inflight(s) * 10 < cwnd(s).min(wnd(s)) * 8);
    let secs = x.sent.seconds.max(1e-3);
    let busy = (t.busy_time_us as f64 / 1e6 / secs).min(1.0);
    // The kernel's clock (tcp_info sndbuf_limited, jiffies): the time the writer waited for
    // buffer space while data was in flight. Each wait on a path of µs is shorter than a
    // jiffy, so the labs' small buffers read 0 (every recorded case); over the far-l2 lab's
    // 40 ms bridge a 16 KB buffer read 3,808 ms of 6,100 ms busy, the connection never idle.
    let kernel_share = t.sndbuf_limited_us as f64 / t.busy_time_us.max(1) as f64;
    let by_kernel = kernel_share >= 0.5;
    // An unthrottled writer sleeps only in write(): the lab's slept 31–38 % of its time off a
    // run queue quiet, 20–32 % beside a busy loop, 14–27 % in session 21's loaded CI (when it
    // waited on a run queue 42–46 %). A CPU-starved writer with room in its buffer sleeps ~0.
    // Data waiting unsent says the windows, not the buffer, held the sender back, unless the
    // kernel counted the writer short of buffer (it does not while data waits behind cwnd: 0 in
    // the shaper and loss cases): over the 40 ms bridge BBR's pacer kept 62 KB (one write past
    // SO_SNDBUF) unsent at half the edges with cwnd 150 KB and the window 275 KB open.
    let held_back = backlogged * 2 >= n && !by_kernel;
    // A path of µs shows the buffer as idle time; a path of ms as the kernel's clock.
    let idle = busy < 0.9;
    if asleep < MIN_ASLEEP || held_back || room * 10 < n * 6 || !(idle || by_kernel) {
        return None;
    }
    let n_full = room;
    let buf = x.med(|s| s.sndbuf.unwrap_or(0));
    // The most in flight at the edges or in the reads inside the intervals (every 100 ms):
    // beside busy loops the small-wmem lab's edges caught 0–1,448 B in every sample while the
    // reads inside saw 65 KB (session 20, 3 runs of 6).
    let max_inf =
        x.ss.iter()
            .map(|s| inflight(s).max(s.tcp_reads.map_or(0, |r| r.inflight_max)))
            .max()
            .unwrap_or(0);
    // The buffer must be small against the round trip: under two round trips of data at the
    // rate each sample reached (its own rate × srtt; the kernel counts about twice the payload
    // against SO_SNDBUF, so a buffer that bounds the rate holds about one). A flat-out loopback
    // transfer beside two busy loops (session 29, 2 runs of 6) had its writer asleep 13–31 %
    // and on a run queue 38–54 %, the connection idle 20 %, 3.2–3.7 MB of its 4 MB buffer in
    // flight: 10–14 round trips (307–429 KB at 27–32 Gbit/s), not its bound. Every recorded
    // small buffer is under one (16 KB against 38–172 KB; 48 KB over the 40 ms bridge).
    let bdp = x.med(|s| (s.bits_per_second / 8.0 * f64::from(s.rtt_us.unwrap_or(0)) / 1e6) as u64);
    // And it capped the data in flight (a read caught at least 40 % of it in flight; session
    // 15's loaded sender sleeping for other reasons: 0 B of 2.11 MB), or holds less than one
    // round trip: on a path of a few µs the reads may never catch data in flight (stop 44's
    // CI: 0 B in every edge and read, 16 KB against 38 KB at 11.97 Gbit/s and 26 µs).
    let caught = max_inf * 5 >= buf * 2;
    if buf == 0 || buf >= bdp * 2 || !(caught || buf < bdp) {
        return None;
    }
    let (m_wnd, m_cwnd) = (x.med(wnd), x.med(cwnd));
    let wmem = x.r.sysctls.get("net.ipv4.tcp_wmem");
    let held = if caught {
        format!("let at most {} in flight", fmt_bytes(max_inf as f64))
    } else {
        format!(
            "holds less than one round trip of data at the rate reached ({} at {} and {} µs)",
            fmt_bytes(bdp as f64),
            fmt_bits(x.per_stream_bps()),
            x.srtt_us()
        )
    };
    let (tail, why, drains) = if idle {
        (
            format!(
                "the connection sat idle {:.0} % of the test",
                (1.0 - busy) * 100.0
            ),
            format!(
                "yet the connection had nothing in flight for {:.0} % of the test (tcp_info busy time {} ms of {secs:.1} s)",
                (1.0 - busy) * 100.0,
                t.busy_time_us / 1000
            ),
            "drains faster than the blocked writer refills it",
        )
    } else {
        (
            format!(
                "the writer waited for buffer space {:.0} % of the time data was in flight",
                kernel_share * 100.0
            ),
            format!(
                "and the kernel counted it waiting for buffer space for {:.0} % of the time the connection had data in flight (tcp_info: sndbuf-limited {} ms of {} ms busy)",
                kernel_share * 100.0,
                t.sndbuf_limited_us / 1000,
                t.busy_time_us / 1000
            ),
            "empties into the network and waits a round trip for the ACKs that free it",
        )
    };
    let mut f = Finding::new(
        FindingId::SendBufferLimited,
        Severity::Warning,
        x.sender,
        format!(
            "limited by the sender's buffer: a {} send buffer {held} while cwnd ({}) and the peer's window ({}) allowed more, and {}",
            fmt_bytes(buf as f64),
            fmt_bytes(m_cwnd as f64),
            fmt_bytes(m_wnd as f64),
            tail
        ),
    );
    f.confidence = (n_full as f64 / n as f64)
        .max(1.0 - busy)
        .max(kernel_share.min(0.9))
        .min(1.0);
    f.explanation = format!(
        "The writer had no rate limit and slept {:.0} % of the time it was not waiting for a CPU (median over {n} intervals; neither on a CPU nor on a run queue, per /proc/thread-self/schedstat), which an unthrottled writer does only in write() waiting for buffer space, {why}. In {n_full} of {n} samples the data in flight stayed under 80 % of both the congestion window and the receiver's window, and almost nothing waited unsent: the send buffer (SO_SNDBUF {}) {drains}; neither the network nor the receiver held the sender back.{} (The kernel lets one write of up to 64 KB past SO_SNDBUF, so in flight can exceed it.)",
        asleep * 100.0,
        fmt_bytes(buf as f64),
        wmem.map(|w| format!(" The sender's net.ipv4.tcp_wmem is {w}."))
            .unwrap_or_default()
    );
    f.fix = "On the sender, raise the maximum of net.ipv4.tcp_wmem (or the SO_SNDBUF the program sets) to at least twice the bandwidth-delay product, then run the test again.".into();
    x.evidence(&mut f, &["net.ipv4.tcp_wmem", "net.core.wmem_max"]);
    Some(f)
}

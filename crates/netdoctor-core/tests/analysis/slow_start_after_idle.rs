//! `slow_start_after_idle` on the captures of testdata/captures/initcwnd (see its README):
//! reno restarting slow start on a kept connection after 1 s idle over +37 ms is told with the
//! round trips beyond the window the earlier answers grew; the same connection with the sysctl
//! off, first answers on new connections and bbr (which skips the restart) are not.

use crate::common;

use common::{analyze, findings, frames, one};
use netdoctor_core::finding::{FindingId, Severity, Side};

#[test]
fn reno_restarting_after_idle_is_told_against_the_grown_window() {
    // Three 300 KB answers 1 s apart on one connection. The first grows the window to flights
    // of 59 segments (84,992 B); after 1,038 ms of the server's silence (RTO ≈ 237 ms) the
    // second starts again from 10 (tshark: frame 104, nginx's 244-byte header + 7,240 +
    // 5,792 B; frame 110 opens the next flight 37.2 ms later) and doubles: 5 round trips
    // for 214 segments that 59 at once send in 4. The third, after the second grew flights
    // of 80, restarts from 14 (the window halved once per RTO of idle) and takes 5 for 3.
    let (an, _) = analyze("idle-restart-reno.pcap.gz");
    let f = one(&an, FindingId::SlowStartAfterIdle);
    assert_eq!(f.side, Side::Server);
    assert_eq!(f.severity, Severity::Warning);
    let d = f.impact.added_latency_ms.unwrap();
    assert!((55.0..=57.0).contains(&d), "{d}");
    let fraction = f.impact.affected_fraction.unwrap();
    assert!((fraction - 2.0 / 3.0).abs() < 1e-9, "{fraction}");
    for part in [
        "grown to 80 segments",
        "back at 10–14 segments",
        "1.04 s idle",
    ] {
        assert!(f.summary.contains(part), "{part}: {}", f.summary);
    }
    assert!(f.fix.contains("tcp_slow_start_after_idle=0"), "{}", f.fix);
    assert_eq!(frames(f), vec![vec![104, 110], vec![250, 256]]);
    // Restarting from the default 10 is no small initial window.
    assert!(findings(&an, FindingId::SmallInitialWindow).is_empty());
}

#[test]
fn the_sysctl_off_is_silent() {
    // tcp_slow_start_after_idle=0: turn 1's first flight is 111 segments (it lost 7 at the
    // delay hop: `packet_loss_retransmission`'s), turn 2 goes in one flight.
    let (an, _) = analyze("idle-norestart-reno.pcap.gz");
    assert!(
        findings(&an, FindingId::SlowStartAfterIdle).is_empty(),
        "{:#?}",
        an.findings
    );
    one(&an, FindingId::PacketLossRetransmission);
}

#[test]
fn first_answers_and_bbr_keep_their_own_story() {
    // New connections (curl each time): their first flights are the initial window's
    // (`small_initial_window` for initcwnd 1, nothing for 10), never a restart.
    for (name, small) in [("initcwnd1-far.pcap.gz", 1), ("initcwnd10-far.pcap.gz", 0)] {
        let (an, _) = analyze(name);
        assert!(
            findings(&an, FindingId::SlowStartAfterIdle).is_empty(),
            "{name}"
        );
        assert_eq!(
            findings(&an, FindingId::SmallInitialWindow).len(),
            small,
            "{name}"
        );
    }
    // bbr with initcwnd 1 and the sysctl on: the kernel skips the restart for a congestion
    // control with its own `cong_control`, so the answers after 1 s idle go out in one
    // flight (63 ms, not the first answer's 294): nothing to tell after idle; the first
    // answer stays `small_initial_window`'s (one example).
    let (an, _) = analyze("idle-restart-bbr-initcwnd1.pcap.gz");
    assert!(findings(&an, FindingId::SlowStartAfterIdle).is_empty());
    assert_eq!(one(&an, FindingId::SmallInitialWindow).evidence.len(), 1);
}

/// The look-alikes recorded by `testdata/captures/initcwnd/ssai.sh` (far-server lab, reno,
/// the sysctl on, 300 KB answers 1 s apart unless said).
#[test]
fn look_alikes_keep_their_own_story() {
    for name in [
        // Next to the server (0.03 ms RTT): a restart there costs nothing (flights are not
        // followed under 200 µs of RTT).
        "idle-restart-lan.pcap.gz",
        // A new connection per request, 1 s apart: each starts from the initial window; no
        // window was grown on it to restart.
        "idle-reopen-reno.pcap.gz",
        // A client with SO_RCVBUF 16 KB: its window (13–14 segments) held every answer's
        // flights, before the pause and after.
        "idle-restart-rcvbuf.pcap.gz",
    ] {
        let (an, _) = analyze(name);
        assert!(
            findings(&an, FindingId::SlowStartAfterIdle).is_empty()
                && findings(&an, FindingId::SmallInitialWindow).is_empty(),
            "{name}: {:#?}",
            an.findings
        );
    }
    // The router next to the server dropped one of every 60 of its packets: each answer
    // after the pause restarted and lost segments; loss tells it, not the restart.
    let (an, _) = analyze("idle-restart-loss.pcap.gz");
    assert!(findings(&an, FindingId::SlowStartAfterIdle).is_empty());
    one(&an, FindingId::PacketLossRetransmission);
    // The answers after the pause are written 8 KB every 50 ms (the first at once grew the
    // window): the writer's pace, told as the server writing its body slowly. The first
    // write's tail (952 B, frame 106) did wait a round trip for the restarted window, but
    // the answer's end is the writer's; and the flights (6 segments, then 6 with the
    // coalesced 2,896 B packets counted as 2) do not grow. nd-start25 told it as a small
    // initial window (+37.3 ms): the 952 B tail, read first, was taken for the segment size.
    let (an, _) = analyze("idle-slow-writer.pcap.gz");
    assert!(findings(&an, FindingId::SlowStartAfterIdle).is_empty());
    assert!(findings(&an, FindingId::SmallInitialWindow).is_empty());
    one(&an, FindingId::SlowServerProcessing);
}

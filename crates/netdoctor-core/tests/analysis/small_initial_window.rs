//! `small_initial_window` on the captures of testdata/captures/initcwnd (see its README): a
//! route with `initcwnd 1` over +37 ms is told with the round trips it cost; the default, slow
//! start after idle (reno restarts from 10 segments), loss, a client that does not read and
//! a loopback path are not.

use crate::common;

use common::{analyze, findings, frames, one};
use netdoctor_core::finding::{FindingId, Severity, Side};

#[test]
fn initcwnd_one_costs_two_round_trips_per_response() {
    // 5 curl downloads of 300 KB: 1, 4, 8 segments one RTT (37 ms) apart, then bbr's paced
    // rest; 294 ms against 213 ms with initcwnd 10 (initcwnd10-far).
    let (an, _) = analyze("initcwnd1-far.pcap.gz");
    let f = one(&an, FindingId::SmallInitialWindow);
    assert_eq!(f.side, Side::Server);
    assert_eq!(f.severity, Severity::Warning);
    let d = f.impact.added_latency_ms.unwrap();
    assert!((70.0..=80.0).contains(&d), "{d}");
    assert_eq!(f.impact.affected_fraction, Some(1.0));
    assert!(
        f.summary.contains("1 segment in the first flight"),
        "{}",
        f.summary
    );
    assert!(f.fix.contains("initcwnd 10"), "{}", f.fix);
    // tshark: frame 6 is the first response (nginx's 244-byte header alone), frame 8 the
    // first segment of the second flight, 37.3 ms later.
    assert_eq!(frames(f)[0], vec![6, 8]);
    // bbr after idle skips the restart: only the connection's first answer is held.
    let (an, _) = analyze("idle-restart-bbr-initcwnd1.pcap.gz");
    let f = one(&an, FindingId::SmallInitialWindow);
    assert_eq!(f.evidence.len(), 1);
}

#[test]
fn the_default_window_and_its_look_alikes_stay_silent() {
    for name in [
        // initcwnd 10: a first flight of 10 segments.
        "initcwnd10-far.pcap.gz",
        // reno restarting from 10 segments after 1 s idle: not a small initial window.
        "idle-restart-reno.pcap.gz",
        // a burst that lost 7 segments: the loss story.
        "idle-norestart-reno.pcap.gz",
        // a client that does not read (its window is the bound) and loopback paths.
        "zero-window.pcap",
        "slow-reader.pcap",
        "route-lossy.pcap",
        "healthy-eth.pcap",
    ] {
        let (an, _) = analyze(name);
        assert!(
            findings(&an, FindingId::SmallInitialWindow).is_empty(),
            "{name}: {:#?}",
            findings(&an, FindingId::SmallInitialWindow)
        );
    }
}

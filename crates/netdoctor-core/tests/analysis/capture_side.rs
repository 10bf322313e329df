//! Which side of a connection the capture was taken on, judged from its handshake legs, must
//! not be a coin flip on a path of microseconds. `shaper-receiver.pcap.gz` was captured by
//! `netdoctor diagnose --pcap` in the client's namespace of `crates/netdoctor/tests/live/shaper.rs`'s
//! lab (nginx serving 200 KB behind `tbf rate 20mbit burst 32kb latency 50ms` on the server's
//! veth, `-c 4 -d 4s`): its four handshakes have legs of 23.5/11.3, 22.5/12.8, 2.5/2.6 and
//! 3.6/2.9 µs. Before, two connections were judged "captured at the server" (the sender) and
//! left out of the receiver's summed arrivals: `shaper_limited` said "a flat 14.0 Mbit/s
//! across 3 connections" under a 20 Mbit/s bucket (the live test failed in CI on it).
//! The look-alike that must keep its side, `bulk-shaper.pcap.gz` (an iperf3 capture at the
//! sender, legs 83/17 and 20/5 µs, where the sender-side rule names the shaper), is in
//! `bulk.rs`.

use crate::common::{analyze, one};
use netdoctor_core::finding::FindingId;

#[test]
fn microsecond_handshake_legs_do_not_split_one_capture_point() {
    let (an, _) = analyze("shaper-receiver.pcap.gz");
    let f = one(&an, FindingId::ShaperLimited);
    assert!(
        f.summary.contains("across 4 connections"),
        "every connection's arrivals are summed: {}",
        f.summary
    );
    let rate: f64 = f
        .summary
        .split("a flat ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no rate in {}", f.summary));
    // tbf counts headers too: the payload arrives a little under 20 Mbit/s.
    assert!((17.0..=20.5).contains(&rate), "{}", f.summary);
}

//! A stall cause's severity follows what its stalls took of the requests they hit (session
//! 27, explore11). `rate-limited-reader.pcap.gz` (`make-rate-limited-reader.sh`): `curl
//! --limit-rate 200k` fetching 5 MB from nginx between two namespaces. curl paused reading for
//! seconds (its window shut 11.1 s of the 11.9 s request): the client-reads-slowly story,
//! critical, side client. One 36 ms delayed-ACK stall in the same 11.9 s request was
//! `delayed_ack_stall` **critical** ("100 % of requests": the one request); it is 0.3 % of that
//! request's time: info. Look-alikes that keep their critical: `delack-stall.pcap` (3 stalls of
//! ~43 ms in short 64 KB requests), `zero-window.pcap` (one 409 ms period), `slow-reader.pcap`
//! and the Nagle captures (each request stalled 40 ms of ~44), held by the goldens.

use crate::common::{analyze, one};
use netdoctor_core::finding::{FindingId, Severity, Side};

#[test]
fn one_short_stall_in_a_long_transfer_is_no_critical_cause() {
    let (an, _) = analyze("rate-limited-reader.pcap.gz");
    let d = one(&an, FindingId::DelayedAckStall);
    assert_eq!(d.severity, Severity::Info, "{}", d.summary);
    assert!(d.summary.contains("1 times"), "{}", d.summary);
    // The reader that stopped reading is still the story, on the client.
    let z = one(&an, FindingId::ZeroWindow);
    assert_eq!(
        (z.severity, z.side),
        (Severity::Critical, Side::Client),
        "{}",
        z.summary
    );
    assert!(
        z.summary.starts_with("The client stopped reading"),
        "{}",
        z.summary
    );
    assert_eq!(
        an.findings[0].id,
        FindingId::ZeroWindow,
        "{:#?}",
        an.findings
    );
}

#[test]
fn stalls_that_are_most_of_short_requests_stay_critical() {
    let (an, _) = analyze("delack-stall.pcap");
    assert_eq!(
        one(&an, FindingId::DelayedAckStall).severity,
        Severity::Critical
    );
    let (an, _) = analyze("zero-window.pcap");
    assert_eq!(one(&an, FindingId::ZeroWindow).severity, Severity::Critical);
}

//! A server's wait that is the same every time is a timer, not load (session 30, s30a; found
//! by s29d: a long poll was told as a CRITICAL slow handler to profile). Real traffic between
//! two namespaces (`testdata/captures/make-server-wait.sh`), captured at the client:
//! - `longpoll.pcap.gz`: the server holds each of 6 GETs 1.5 s on purpose: told as a held
//!   request or a timer inside the server, with both in the fix and a lower confidence;
//! - `slow-varied.pcap.gz`: a slow handler, 1.10-1.80 s, different every time: the plain
//!   story (look inside the server);
//! - `longpoll-two.pcap.gz`: the long poll's server, 2 GETs only: too few to call it a timer.
//! - `proxy-504.pcap.gz` (12 answers each 1.00 s, 504): the proxy's timeout is `http_errors`'
//!   story (`proxy_errors.rs`), not this one.

use crate::common::{analyze, one, probe, probe_note};
use netdoctor_core::detect::slow_server_processing::{FIXED_WAIT_EVIDENCE, TIMER_CONFIDENCE};
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

fn slow(name: &str) -> Finding {
    let (an, _) = analyze(name);
    one(&an, FindingId::SlowServerProcessing).clone()
}

#[test]
fn a_long_poll_is_told_as_a_held_request_or_a_timer() {
    let f = slow("longpoll.pcap.gz");
    // The verdict stays (a 5 s resolver timeout is as bad as it looks); the story changes.
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Server));
    assert!(f.confidence <= TIMER_CONFIDENCE, "{}", f.confidence);
    assert!(
        f.summary
            .contains("; every slow request waited the same 1.50 s (within "),
        "{}",
        f.summary
    );
    assert!(
        f.summary.ends_with(
            "a request held on purpose (a long poll) or a timer inside the server, not load"
        ),
        "{}",
        f.summary
    );
    assert!(
        f.explanation
            .contains("a wait that is the same every time is a timer")
    );
    assert!(
        f.fix
            .starts_with("Look in the handler for a deliberate wait or a timeout of 1.50 s"),
        "{}",
        f.fix
    );
    assert!(f.fix.contains("long poll"), "{}", f.fix);
    assert!(!f.fix.contains("profile the request handler"), "{}", f.fix);
    let note = probe_note(&f, FIXED_WAIT_EVIDENCE);
    assert!(
        note.starts_with("6 of 6 requests each waited within "),
        "{note}"
    );
    assert!(note.ends_with(" of 1.50 s"), "{note}");
}

#[test]
fn a_slow_handler_at_varied_times_keeps_its_story() {
    let f = slow("slow-varied.pcap.gz");
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Server));
    assert!(f.confidence > TIMER_CONFIDENCE, "{}", f.confidence);
    assert!(probe(&f, FIXED_WAIT_EVIDENCE).is_none(), "{f:#?}");
    assert!(!f.summary.contains("timer"), "{}", f.summary);
    assert!(f.fix.starts_with("Look inside the server"), "{}", f.fix);
}

#[test]
fn two_equal_waits_are_too_few_to_call_a_timer() {
    let f = slow("longpoll-two.pcap.gz");
    assert!(probe(&f, FIXED_WAIT_EVIDENCE).is_none(), "{f:#?}");
    assert!(f.fix.starts_with("Look inside the server"), "{}", f.fix);
}

#[test]
fn a_proxys_504_timeout_is_not_told_as_a_held_request() {
    let f = slow("proxy-504.pcap.gz");
    assert!(probe(&f, FIXED_WAIT_EVIDENCE).is_none(), "{f:#?}");
    assert!(!f.summary.contains("long poll"), "{}", f.summary);
}

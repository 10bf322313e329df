//! A server that answers after the client's FIN: the echo of the FIN's timestamp is not a
//! round trip.
//!
//! `serial-abandoned.pcap.gz` (testdata/captures/README.md): a single-threaded python3
//! `http.server` (one keep-alive connection at a time, 2–5 ms a request) loaded by `diagnose`
//! with 100 connections. Five connections were accepted by the kernel but not by the
//! application: their request waited, netdoctor's 2 s timeout closed them (FIN at 2.01 s) and
//! the server answered when it got to them, 5.09 s after the request, echoing the FIN's TSval.
//! That echo was read as a 3.07 s round trip under load (`track::echo`), so the slowest band
//! said "2.00 s server + 3.07 s transfer" of a 140-byte answer. All 5.09 s are the server's.
//! Look-alike kept: the same capture's served exchanges (3.7 ms, all server).

use crate::common;

use common::analyze;

#[test]
fn an_answer_after_the_clients_fin_is_server_time_not_transfer() {
    let (an, _) = analyze("serial-abandoned.pcap.gz");
    let e = &an.exchanges;
    let max = e.breakdown_max_ms.expect("max band");
    assert_eq!(max.requests, 5, "{max:?}");
    assert!(max.latency > 5000.0, "{max:?}");
    assert!(max.server > 0.99 * max.latency, "{max:?}");
    assert!(max.transfer < 1.0, "{max:?}");
    // The served ones: the server's 2–5 ms, nothing of it transfer.
    let p50 = e.breakdown_p50_ms.expect("p50 band");
    assert!(
        (2.0..6.0).contains(&p50.server) && p50.transfer < 0.5,
        "{p50:?}"
    );
}

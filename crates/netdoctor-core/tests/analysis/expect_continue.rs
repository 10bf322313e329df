//! `Expect: 100-continue` (session 30, s30a): curl POSTs 3000 bytes 5 times with the header
//! (`testdata/captures/make-server-wait.sh`, captured at the client).
//! - `expect-100.pcap.gz`: the server answers `100 Continue` and curl sends the body at once:
//!   5 HTTP/1.x exchanges, each from the request's first byte to its final answer (before, the
//!   100 ended the request and the body was read as a request of its own: 10 exchanges,
//!   "found in more than one way");
//! - `expect-ignored.pcap.gz`: the server never answers 100 and curl sends each body after its
//!   1 s expect timeout: 5 exchanges of about 1 s, with no server time in them.

use crate::common::analyze;
use netdoctor_core::analyze::ExchangeMethod;

#[test]
fn a_100_continue_does_not_split_the_request_from_its_body() {
    let (an, _) = analyze("expect-100.pcap.gz");
    let x = &an.exchanges;
    assert_eq!((x.count, x.incomplete), (5, 0), "{x:#?}");
    assert_eq!(x.method, Some(ExchangeMethod::Http1));
    // The final answer leaves at once after the body: no server time.
    assert!(x.server_time_ms.p50 < 5.0, "{}", x.server_time_ms.p50);
}

#[test]
fn an_ignored_expect_is_the_clients_wait_not_the_servers() {
    let (an, _) = analyze("expect-ignored.pcap.gz");
    let x = &an.exchanges;
    assert_eq!((x.count, x.incomplete), (5, 0), "{x:#?}");
    assert!(x.latency_ms.p50 > 990.0, "{}", x.latency_ms.p50);
    assert!(x.server_time_ms.p50 < 5.0, "{}", x.server_time_ms.p50);
}

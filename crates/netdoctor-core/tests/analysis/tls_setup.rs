//! A TLS handshake's round trips are setup, not requests. Exchanges are found from direction
//! turns, so the handshake's turns were counted as requests: a TLS 1.2 client opening a
//! connection per request over +37 ms (curl: 152 ms a request, 114 ms of it setup) read as
//! "18 exchanges" on 6 connections, 3.0 each, and nothing was found; over TLS 1.3 "2.0
//! requests each" with a setup of 37 ms (the TCP handshake's alone). Real traffic over the
//! far-server lab (`testdata/captures/tls-short/run.sh`).

use crate::common::{analyze, one, probe_note};
use netdoctor_core::detect::short_connections::TLS_EVIDENCE;
use netdoctor_core::finding::{FindingId, Severity, Side};

#[test]
fn a_tls12_connection_per_request_pays_two_tls_round_trips_of_setup() {
    let (an, _) = analyze("tls12-short.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    assert!(
        f.summary
            .starts_with("One connection per request: 6 connections carried 1.0 requests each"),
        "{}",
        f.summary
    );
    // TCP 37 ms + TLS 2 × 37 ms, as curl timed it (time_appconnect − time_connect 77–81 ms).
    assert!(
        f.summary
            .contains("(TCP handshake 37.22 ms + TLS handshake 76.48 ms, 2 round trips)"),
        "{}",
        f.summary
    );
    let added = f.impact.added_latency_ms.unwrap();
    assert!((110.0..=120.0).contains(&added), "{added}");
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(f.side, Side::Client, "curl closed every connection first");
    assert_eq!(f.impact.affected_fraction, Some(1.0));
    assert!(
        probe_note(f, TLS_EVIDENCE)
            .starts_with("6 of 6 connections: a TLS handshake of 2 round trips"),
        "{}",
        probe_note(f, TLS_EVIDENCE)
    );
    assert!(
        f.explanation
            .contains("before it wrote its TLS ClientHello")
            || !f.summary.contains("waited"),
        "{}",
        f.explanation
    );
}

#[test]
fn a_tls13_connection_per_request_pays_one_tls_round_trip_of_setup() {
    let (an, _) = analyze("tls13-short.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    assert!(
        f.summary
            .contains("7 connections carried 1.0 requests each"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("1 round trip)"), "{}", f.summary);
    assert!(
        probe_note(f, TLS_EVIDENCE)
            .starts_with("7 of 7 connections: a TLS handshake of 1 round trip"),
        "{}",
        probe_note(f, TLS_EVIDENCE)
    );
    // TLS 1.3's second flight (ChangeCipherSpec, Finished and the request together) is the
    // request, not setup: one round trip, not two.
    let added = f.impact.added_latency_ms.unwrap();
    assert!((70.0..=80.0).contains(&added), "{added}");
}

/// The look-alike: TLS on kept connections (wrk, 4 connections, ~300 requests): the handshake
/// is paid once per connection, nothing to tell.
#[test]
fn tls_on_kept_connections_is_not_short_connections() {
    let (an, _) = analyze("tls-healthy.pcap");
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::ShortConnections),
        "{:#?}",
        an.findings
    );
}

/// The handshake's turns are setup at the exchange source: not among the exchanges (their
/// count, the latency percentiles), counted apart with the server's time in them. Before,
/// tls12-short read 18 exchanges (6 requests + 12 handshake turns), tls13-short 15 (7 + 8, one
/// connection carried only its handshake) and tls-healthy 319 (311 + 8: on kept connections
/// the first exchange after the handshake is a request, and stays one).
#[test]
fn tls_handshake_turns_are_not_exchanges() {
    for (cap, exchanges, turns) in [
        ("tls12-short.pcap.gz", 6, 12),
        ("tls13-short.pcap.gz", 7, 8),
        ("tls-healthy.pcap", 311, 8),
    ] {
        let (an, _) = analyze(cap);
        let tls = an.exchanges.tls_handshake.expect("tls handshake figures");
        assert_eq!((an.exchanges.count, tls.turns), (exchanges, turns), "{cap}");
        assert!(tls.server_time_ms.max > 0.0, "{cap}: {tls:?}");
    }
    // tls13-short's slowest handshake turn (3.7 ms of server time) no longer sets the p99 of
    // the requests (40.9 ms before; each request is one 37.2 ms round trip).
    let (an, _) = analyze("tls13-short.pcap.gz");
    let l = an.exchanges.latency_ms;
    assert!(l.max < 38.0, "{l:?}");
}

/// A server slow in the TLS handshake, recorded (`testdata/captures/tls-short/rsa8192.sh`:
/// nginx with an RSA-8192 key on loopback, 8 curl over TLS 1.2 then 8 over TLS 1.3, a new
/// connection each): every handshake waits ~26–30 ms for the server's signature, the requests
/// take 0.1 ms. The slow handshake is the server's (`slow_server_processing`, the turns as
/// evidence), and each connection carries one request: TLS 1.3's client Finished, answered on
/// loopback by the server's session tickets before curl writes its request, is setup, not a
/// request (it read "16 connections carried 1.5 requests each", 24 exchanges).
#[test]
fn a_server_slow_in_the_tls_handshake_is_told_on_real_traffic() {
    let (an, _) = analyze("tls-rsa8192.pcap.gz");
    assert_eq!(an.exchanges.count, 16, "one request per connection");
    let tls = an.exchanges.tls_handshake.expect("handshake turns");
    // 8 × 2 (TLS 1.2) + 8 × 2 (TLS 1.3: the ClientHello's turn and the Finished's).
    assert_eq!(tls.turns, 32);
    let slow = one(&an, FindingId::SlowServerProcessing);
    assert_eq!(slow.side, Side::Server);
    assert!(
        slow.summary
            .starts_with("The server takes 26.0 ms to answer in the TLS handshake (16 of 32"),
        "{}",
        slow.summary
    );
    let short = one(&an, FindingId::ShortConnections);
    assert!(
        short
            .summary
            .contains("16 connections carried 1.0 requests each"),
        "{}",
        short.summary
    );
}

/// HTTP/2 over TLS (`testdata/captures/tls-short/h2.sh`: curl fetching 20 files multiplexed
/// on one connection, twice over TLS 1.2 and twice over TLS 1.3; look-alikes in the same
/// capture: 3 files over one HTTP/1.1 connection on TLS 1.3, h2 offered over TLS 1.3 to a
/// TLS 1.2-only server (the handshake fails), h2 offered over TLS 1.2 to a server without it):
/// the 85 requests read as 90 exchanges found from direction turns. The hellos
/// say which connections may be HTTP/2 (tshark: two TLS 1.2 ServerHellos name h2, one names
/// http/1.1; the TLS 1.3 ones encrypt the choice, their ClientHello offered `h2,http/1.1`; the
/// HTTP/1.1 client offered `http/1.1` alone), and the report says the exchanges there are not
/// the requests.
#[test]
fn http2_over_tls_is_said_to_make_the_exchanges_approximate() {
    let (an, _) = analyze("tls-h2.pcap.gz");
    assert_eq!(an.stats.tls_h2_connections, 2, "{:?}", an.stats);
    assert_eq!(an.stats.tls_h2_maybe_connections, 2, "{:?}", an.stats);
    let w = an
        .warnings
        .iter()
        .find(|w| w.contains("HTTP/2"))
        .expect("a warning about HTTP/2 over TLS");
    assert!(
        w.starts_with(
            "2 TLS connections chose HTTP/2 (ALPN h2 in the ServerHello) and 2 more offered it"
        ),
        "{w}"
    );
    assert!(w.contains("not its requests"), "{w}");
}

/// Look-alikes: TLS whose ServerHello chose HTTP/1.1 (tls12-short, tls-rsa8192's TLS 1.2
/// half: ALPN `http/1.1`), TLS 1.3 whose ClientHello the snap length cut before its ALPN
/// (tls13-short, 200 bytes: the offer is not in the capture) and plain HTTP: nothing said.
#[test]
fn tls_over_http1_and_cut_hellos_are_not_taken_for_http2() {
    for cap in [
        "tls12-short.pcap.gz",
        "tls13-short.pcap.gz",
        "tls-rsa8192.pcap.gz",
        "lab-healthy.pcap",
    ] {
        let (an, _) = analyze(cap);
        assert_eq!(
            (
                an.stats.tls_h2_connections,
                an.stats.tls_h2_maybe_connections
            ),
            (0, 0),
            "{cap}"
        );
        assert!(!an.warnings.iter().any(|w| w.contains("HTTP/2")), "{cap}");
    }
}

/// TLS 1.3 early data (0-RTT), recorded (`testdata/captures/tls-short/zerortt.sh`: nginx with
/// `ssl_early_data on`, `openssl s_client` resuming a session and sending `GET /` with its
/// ClientHello; two takes). The early data is the request; the client's EndOfEarlyData +
/// Finished flight after it is setup, and so is its close_notify alert as it closes: 2
/// requests in all (3 before). nginx closes with that flight or alert unread and resets, which
/// read as "the server reset 1 connections in the middle of a request/response", critical:
/// both requests were answered in full (tshark: 257-byte responses before the reset).
#[test]
fn tls13_early_data_and_close_notify_are_not_requests_and_their_reset_fails_none() {
    for cap in ["tls13-0rtt.pcap.gz", "tls13-0rtt-alert.pcap.gz"] {
        let (an, _) = analyze(cap);
        assert_eq!(an.exchanges.count, 2, "{cap}");
        let r = one(&an, FindingId::ConnectionReset);
        assert_eq!(r.severity, Severity::Info, "{cap}: {}", r.summary);
        assert!(
            r.summary
                .starts_with("The server reset 1 idle connections between requests; no request"),
            "{cap}: {}",
            r.summary
        );
        assert!(!r.summary.contains("middle of"), "{cap}: {}", r.summary);
    }
}

/// With early data (0-RTT) the request rides with the ClientHello, and the server's next turn
/// opens with its ServerHello flight (ServerHello, ChangeCipherSpec, then EncryptedExtensions
/// and Finished as application data records) before the response. The response's first byte
/// is the server's segment after that flight, not the flight: the first byte was timed to the
/// flight, 0.43 ms after the request (tls13-0rtt stream 1), for a response 1.14 ms after it.
/// On tls13-0rtt-alert the client's EndOfEarlyData + Finished came between the flight and the
/// response and ended the exchange at the flight (latency 0.49 ms), the response going to that
/// setup turn. Frame times from `tshark -r CAP -T fields -e frame.number -e
/// frame.time_relative -e tcp.len -e tls.record.content_type -e tls.handshake.type`.
#[test]
fn an_early_data_request_is_timed_to_its_response_not_to_the_server_hello() {
    // (capture, the early data, the ServerHello flight, the response, the exchange's last
    // server segment), seconds.
    for (cap, req, hello, resp, last) in [
        ("tls13-0rtt.pcap.gz", 0.546765, 0.547199, 0.547905, 0.547905),
        // The response (26), then the server's close_notify (27).
        (
            "tls13-0rtt-alert.pcap.gz",
            0.538466,
            0.538955,
            0.539592,
            0.539635,
        ),
    ] {
        let (an, _) = analyze(cap);
        let e = &an.exchanges;
        assert_eq!(e.count, 2, "{cap}");
        let max = e.breakdown_max_ms.expect("max band");
        let ttfb = max.network + max.server;
        let want = (resp - req) * 1e3;
        assert!(
            (ttfb - want).abs() < 0.01,
            "{cap}: {ttfb} ms to the first byte, want {want}: {max:?}"
        );
        assert!(ttfb > (hello - req) * 1e3 + 0.5, "{cap}: {max:?}");
        let latency = (last - req) * 1e3;
        assert!(
            (e.latency_ms.max - latency).abs() < 0.01,
            "{cap}: {:?}",
            e.latency_ms
        );
        assert!((max.latency - latency).abs() < 0.01, "{cap}: {max:?}");
    }
}

//! Findings on third-party captures from `../shared/realworld-pcaps/` (see its NOTICE.md):
//! cut captures, non-HTTP peers, refused and closed connections. Each test skips when the
//! folder (or its file) is missing; the files are never copied into the repository.

use crate::common;

use common::{corpus_file, for_each_packet};
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

/// The analysis of corpus file `name`, or `None` (with a line saying so) when it is missing.
fn analyze(name: &str) -> Option<Analysis> {
    let path = corpus_file(name)?;
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(path.to_str().unwrap(), |p| a.push(p));
    Some(a.finish())
}

fn one(an: &Analysis, id: FindingId) -> &Finding {
    let v: Vec<&Finding> = an.findings.iter().filter(|f| f.id == id).collect();
    assert_eq!(v.len(), 1, "{id}: {:#?}", an.findings);
    v[0]
}

fn none(an: &Analysis, id: FindingId) {
    assert!(
        an.findings.iter().all(|f| f.id != id),
        "{id}: {:#?}",
        an.findings
    );
}

#[test]
fn a_slow_first_byte_in_a_cut_capture_is_the_servers_time() {
    // ppa-latency4: SYN, SYN/ACK, ACK, GET, the server's ACK 48 ms later, the first response
    // byte 983 ms after that ACK; the capture ends there.
    let Some(an) = analyze("ppa-latency4.pcapng") else {
        return;
    };
    assert_eq!((an.exchanges.count, an.exchanges.incomplete), (1, 1));
    let f = one(&an, FindingId::SlowServerProcessing);
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Server));
    // 1030.9 ms from the GET to the first byte, less the capture point's 18.6 ms round trip
    // to the server (SYN → SYN/ACK; the whole 34.8 ms handshake RTT before: 996 ms).
    let st = f.impact.added_latency_ms.unwrap();
    assert!((1005.0..1020.0).contains(&st), "{st}");
    assert!(
        f.summary
            .contains("(1 request; the capture ends before the response does)"),
        "{}",
        f.summary
    );
    none(&an, FindingId::HighBaseRtt);
}

#[test]
fn a_slow_path_is_not_a_slow_server() {
    // ppa-latency2: the SYN/ACK 879 ms after the SYN, the request acknowledged 1155 ms after
    // it left, the first byte 16 ms after that: the wire, not the server.
    let Some(an) = analyze("ppa-latency2.pcapng") else {
        return;
    };
    let f = one(&an, FindingId::HighBaseRtt);
    assert_eq!((f.severity, f.side), (Severity::Warning, Side::Network));
    assert!(f.summary.contains("handshake took 89"), "{}", f.summary);
    none(&an, FindingId::SlowServerProcessing);
    none(&an, FindingId::SynRetransmit);
    // ppa-latency3: the client waited 1.3 s before its request; the server and the path
    // were quick. ppa-latency1: all quick.
    for quick in ["ppa-latency3.pcapng", "ppa-latency1.pcapng"] {
        let Some(an) = analyze(quick) else {
            return;
        };
        assert!(
            an.findings.iter().all(|f| f.severity == Severity::Info),
            "{quick}: {:#?}",
            an.findings
        );
    }
}

#[test]
fn one_captured_http_500_is_an_http_error() {
    let Some(an) = analyze("arkime-http-500-head.pcap") else {
        return;
    };
    let f = one(&an, FindingId::HttpErrors);
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Server));
    assert!(
        f.summary
            .starts_with("1 of 1 captured HTTP requests failed (100.0%): HTTP 500 Internal"),
        "{}",
        f.summary
    );
}

#[test]
fn a_printer_whose_window_stays_near_zero_is_a_window_problem() {
    // A raw print job to port 9100: the printer's window falls to 80..1092 bytes (never 0)
    // and reopens about 1.2 s later, 4 times; the last time it never does (the job's last
    // segment is resent twice over 11 s).
    let Some(an) = analyze("ppa-inconsistent_printer.pcapng") else {
        return;
    };
    let f = one(&an, FindingId::ZeroWindow);
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Server));
    assert!(
        f.summary
            .contains("near-zero (down to 80 bytes, less than one MSS of 1460)"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("holding 1 connection"), "{}", f.summary);
    // The time it held the connection, not "+0.0 ms on 0 %".
    let held = f.impact.added_latency_ms.unwrap();
    assert!(held > 15_000.0, "{held}");
    assert_eq!(f.impact.affected_fraction, None);
    // Between those periods the printer ACKs four full segments at once every ~70 ms, its
    // 6 KB window full (#11-#17): a reader that is not reading, not a delayed ACK (it read as
    // "the client waits for the server's delayed ACK: +134.8 ms, 22 times").
    none(&an, FindingId::DelayedAckStall);
}

#[test]
fn a_refused_syn_is_not_listening_and_resets_are_one_finding() {
    let Some(an) = analyze("ppa-tcp_refuseconnection.pcapng") else {
        return;
    };
    let f = one(&an, FindingId::ServerNotListening);
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Server));
    assert!(
        f.summary
            .starts_with("Nothing listens on 192.168.100.1:80: 1 connection attempt was"),
        "{}",
        f.summary
    );
    none(&an, FindingId::ConnectionReset);
    // Resets of several kinds: one connection_reset finding. Its "refusal" was a forged reset
    // the client ignored (the handshake went on): not a refusal (`injected_reset.rs`).
    let Some(an) = analyze("zeek-rst-inject-rae.pcap") else {
        return;
    };
    one(&an, FindingId::ConnectionReset);
    none(&an, FindingId::ServerNotListening);
}

#[test]
fn a_reset_after_the_servers_fin_is_not_a_failed_request() {
    // ppa-http_espn_fail: the server sends FIN 15 s after its last response; 45 s later the
    // client's keep-alive probe gets a reset.
    let Some(an) = analyze("ppa-http_espn_fail.pcapng") else {
        return;
    };
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!((f.severity, f.side), (Severity::Info, Side::Server));
    assert!(
        f.summary
            .starts_with("The server reset 1 connections it had already closed (FIN sent)"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("middle"), "{}", f.summary);
}

#[test]
fn a_fin_with_window_zero_is_a_close_not_a_stopped_reader() {
    // arkime-wireshark-retrans: four requests whose bodies wait on Nagle and the server's
    // delayed ACK; the server's last segment is its FIN, advertising window 0. That is the
    // server closing, not its application failing to read: no zero_window, Nagle stays.
    let Some(an) = analyze("arkime-wireshark-retrans.pcap") else {
        return;
    };
    none(&an, FindingId::ZeroWindow);
    let f = one(&an, FindingId::NagleDelayedAck);
    assert_eq!(f.side, Side::Client);
}

#[test]
fn a_reset_answering_the_clients_close_is_not_a_refusal() {
    // zeek-fin_retransmission: the client sends its FIN 291 ms into a handshake whose SYN/ACK
    // comes at 305 ms, repeats it with the ACK, and the server resets. The client gave up on
    // a connection it never used; the server refused nothing. Info on the client's side; the
    // slow handshake stays the warning.
    let Some(an) = analyze("zeek-fin_retransmission.pcap") else {
        return;
    };
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Info, Side::Client),
        "{f:#?}"
    );
    assert!(!f.summary.contains("refused"), "{}", f.summary);
    one(&an, FindingId::HighBaseRtt);
}

#[test]
fn a_port_scan_is_neither_a_slow_setup_nor_a_dead_server() {
    // ppa-synscan: 172.16.0.8 sends 1,994 SYNs to 1,000 ports of 64.13.134.52 and never
    // answers: 3 open ports repeat their SYN/ACK (at 3, 9, 21 s) to nobody, 5 closed ports
    // reset. Neither is the server's fault; the listen queue has nothing to do with it.
    let Some(an) = analyze("ppa-synscan.pcapng") else {
        return;
    };
    let f = one(&an, FindingId::SynRetransmit);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Info, Side::Client),
        "{f:#?}"
    );
    assert_eq!(f.impact.added_latency_ms, None);
    assert!(
        f.summary
            .starts_with("The server repeated its SYN/ACK on 3 of 1994 connections whose client"),
        "{}",
        f.summary
    );
    let f = one(&an, FindingId::ServerNotListening);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Info, Side::Client),
        "{f:#?}"
    );
    assert!(
        f.summary
            .starts_with("A port scan: 172.16.0.8 sent SYNs to 1000 ports of 64.13.134.52; 5"),
        "{}",
        f.summary
    );
    assert!(an.findings.iter().all(|f| f.severity == Severity::Info));
    // The look-alike whose client did answer (ppa-sessionhijacking: the server repeats its
    // SYN/ACK 31 s after the client's ACK, which it did not take, and the client answers
    // again) is told apart by what the client did, in
    // `idle_preconnects_on_a_defer_accept_server_are_no_setup_delay`; a client that answered
    // and then waited is the server's delayed setup (attribution.rs, banner-ack-lost.pcap).
}

#[test]
fn a_response_before_the_servers_fin_is_complete() {
    // ppa-http_post: a POST answered by a 302, a GET answered by a 200 (Content-Length 8388,
    // all of it captured), the server's FIN 1.9 s later and the client's ACK of it; the
    // capture ends before the client closes. The 200 is complete: the server closed.
    let Some(an) = analyze("ppa-http_post.pcapng") else {
        return;
    };
    assert_eq!((an.exchanges.count, an.exchanges.incomplete), (2, 0));
    let f = one(&an, FindingId::SlowServerProcessing);
    assert_eq!(f.side, Side::Server);
    // A response still arriving when the capture ends stays cut (ppa-latency4's, tested
    // above, has no FIN).
    let Some(an) = analyze("ppa-latency4.pcapng") else {
        return;
    };
    assert_eq!((an.exchanges.count, an.exchanges.incomplete), (1, 1));
}

#[test]
fn wifi_and_nflog_captures_are_read() {
    // arkime-80211http: HTTP over 802.11 with radiotap (link type 127);
    // zeek-nflog-http: the same kind of GET logged by netfilter (link type 239), its SYN
    // logged three times (the same packet at several rules): copies, not retransmissions.
    let Some(an) = analyze("arkime-80211http.pcap") else {
        return;
    };
    assert!(an.stats.connections_with_handshake >= 1, "{:#?}", an.stats);
    assert_eq!(an.exchanges.count, 7, "{:#?}", an.exchanges);
    // Two of its seven requests are answered 405 Not Allowed (tshark agrees): the client's.
    let f = one(&an, FindingId::HttpErrors);
    assert_eq!(f.side, Side::Client);
    assert!(
        f.summary
            .starts_with("2 of 7 captured HTTP requests failed"),
        "{}",
        f.summary
    );
    let Some(an) = analyze("zeek-nflog-http.pcap") else {
        return;
    };
    assert_eq!(an.stats.connections_with_handshake, 1, "{:#?}", an.stats);
    assert_eq!(an.exchanges.count, 1, "{:#?}", an.exchanges);
    none(&an, FindingId::SynRetransmit);
}

#[test]
fn idle_preconnects_on_a_defer_accept_server_are_no_setup_delay() {
    // ppa-sessionhijacking: a browser opens 3 connections to 172.16.16.181:80 and uses one.
    // The two idle ones ACKed the SYN/ACK 18 ms after their SYN (#20, #21); the server repeated
    // its SYN/ACK 31.2 s later (#90, #91: TCP_DEFER_ACCEPT's single repeat) and the clients
    // answered it. It used to read as a critical +31392 ms setup delay ("handshake completed
    // 31384 ms after the first SYN"); nobody waited.
    let Some(an) = analyze("ppa-sessionhijacking.pcapng") else {
        return;
    };
    let f = one(&an, FindingId::SynRetransmit);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Info, Side::Client),
        "{f:#?}"
    );
    assert_eq!(f.impact.added_latency_ms, None);
    assert!(
        f.summary.contains("on 2 of 13 connections"),
        "{}",
        f.summary
    );
    assert!(
        an.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        an.findings
    );
}

#[test]
fn an_http_get_inside_vxlan_is_read() {
    // zeek-vxlan-encapsulated-http: one GET to 54.86.237.188:80 and its response, all 12
    // frames inside VXLAN (UDP 4789); tshark reads the inner conversation. It read as "the
    // capture contains no TCP segments".
    let Some(an) = analyze("zeek-vxlan-encapsulated-http.pcap") else {
        return;
    };
    assert_eq!(an.stats.tcp_segments, 12, "{:#?}", an.stats);
    assert_eq!(an.stats.connections, 1, "{:#?}", an.stats);
    assert_eq!(an.exchanges.count, 1, "{:#?}", an.exchanges);
}

#[test]
fn tcp_inside_pppoe_under_qinq_is_read() {
    // ppp-one_http_stream_rst: a GET and its answer in PPPoE session frames under two
    // VLAN tags (a DSL access network's capture). Before: "the capture contains no TCP
    // segments" (all 10 frames counted as other packets).
    let Some(an) = analyze("ppp-one_http_stream_rst.pcap") else {
        return;
    };
    assert_eq!(
        (an.stats.tcp_segments, an.stats.other_packets),
        (10, 0),
        "{:#?}",
        an.stats
    );
    assert_eq!(an.stats.connections_with_handshake, 1, "{:#?}", an.stats);
    assert_eq!(an.exchanges.count, 1, "{:#?}", an.exchanges);
    assert!(
        an.warnings.iter().all(|w| !w.contains("no TCP")),
        "{:?}",
        an.warnings
    );
    // Its answer is a 503 (tshark: "Service Temporarily Unavailable"), missed before.
    let f = one(&an, FindingId::HttpErrors);
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Server));
    // The look-alikes without PPPoE keep their reading: QinQ (zeek-http-qinq-0), two VLAN
    // tags (arkime-twovlan).
    for (name, segs) in [("zeek-http-qinq-0.pcap", 14), ("arkime-twovlan.pcap", 6)] {
        let Some(an) = analyze(name) else {
            return;
        };
        assert_eq!(an.stats.tcp_segments, segs, "{name}");
        assert_eq!(an.exchanges.count, 1, "{name}");
    }
}

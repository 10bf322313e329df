//! Exchanges from HTTP/2 frames on real cleartext (h2c) captures made in two namespaces by
//! `testdata/captures/make-h2.sh`: nginx 1.22 (`listen … http2;`) under
//! `h2load -n 200 -c 4 -m 10` with every other request a 404, and a python3-h2 server with
//! Nagle on that writes its headers and body apart, under `h2load -n 40 -c 1 -m 1`.

use crate::common;

use common::for_each_packet;
use netdoctor_core::analyze::ExchangeMethod;
use netdoctor_core::finding::{FindingId, Severity, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze(name: &str) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

#[test]
fn nginx_h2c_gives_one_exchange_per_request_with_its_status() {
    let an = analyze("h2c-nginx.pcap");
    assert_eq!(an.stats.decode_errors, 0);
    assert_eq!(an.stats.connections_with_handshake, 4, "{:?}", an.stats);
    // h2load sent 200 requests: 200 exchanges, none approximate.
    assert_eq!(an.exchanges.count, 200, "{:?}", an.exchanges);
    assert_eq!(an.exchanges.incomplete, 0);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::H2));
    assert_eq!(an.stats.pipelined_connections, 0);
    assert!(an.exchanges.latency_ms.p50 < 20.0, "{:?}", an.exchanges);
    // Half were 404 (HPACK-decoded `:status`): http_errors from the capture alone.
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::HttpErrors)
        .unwrap_or_else(|| panic!("{:#?}", an.findings));
    assert!(
        f.summary.contains("50.0%") || f.summary.contains("100 of 200"),
        "{}",
        f.summary
    );
    assert!(format!("{:?}", f.evidence).contains("HTTP 404"));
    assert!(an.warnings.is_empty(), "{:?}", an.warnings);
}

#[test]
fn nagle_on_h2_server_is_server_nagle_per_stream() {
    let an = analyze("h2c-nagle.pcap");
    assert_eq!(an.exchanges.count, 40, "{:?}", an.exchanges);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::H2));
    let f = &an.findings[0];
    assert_eq!(f.id, FindingId::NagleDelayedAck, "{:#?}", an.findings);
    assert_eq!(f.side, Side::Server);
    let frac = f.impact.affected_fraction.unwrap();
    assert!(frac >= 0.9, "affected fraction {frac}");
    assert!(
        (35.0..=60.0).contains(&an.exchanges.latency_ms.p50),
        "{:?}",
        an.exchanges
    );
}

#[test]
fn nginx_h2c_at_the_live_snap_length_says_which_streams_it_lost() {
    // Live captures keep 256 bytes per packet by default (Ethernet here: 14 + IP + TCP
    // headers, the rest payload): a frame body past the cut is only unknown, but the client's
    // first segment carries 10 HEADERS frames in 262 bytes, and those past the cut are lost
    // until a segment starts with a frame header again; the report says so.
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet("h2c-nginx.pcap", |p| {
        let cut = netdoctor_core::RawPacket {
            data: &p.data[..p.data.len().min(256)],
            ..*p
        };
        a.push(&cut);
    });
    let an = a.finish();
    assert!(
        (150..200).contains(&an.exchanges.count),
        "{:?}",
        an.exchanges
    );
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::H2));
    assert!(an.stats.h2_framing_lost > 0);
    assert!(
        an.warnings.iter().any(|w| w.contains("--snaplen 65535")),
        "{:?}",
        an.warnings
    );
}

fn find(an: &Analysis, id: FindingId) -> Option<&netdoctor_core::Finding> {
    an.findings.iter().find(|f| f.id == id)
}

#[test]
fn refused_streams_are_shared_by_code_and_sender() {
    // python3-h2 answers RST_STREAM REFUSED_STREAM on every third of 60 streams.
    let an = analyze("h2c-refused.pcap");
    assert_eq!(an.exchanges.count, 40, "{:?}", an.exchanges);
    let f = find(&an, FindingId::H2StreamResets).unwrap_or_else(|| panic!("{:#?}", an.findings));
    assert_eq!(f.side, Side::Server);
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.summary
            .contains("20 RST_STREAM: server REFUSED_STREAM 20 (100%)"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("33.3% of 60 streams"), "{}", f.summary);
    // The client's GOAWAY NO_ERROR at its close is not a reset worth naming.
    assert!(!f.summary.contains("GOAWAY"), "{}", f.summary);
    // A healthy h2c capture has no reset finding at all.
    let healthy = analyze("h2c-nginx.pcap");
    assert!(find(&healthy, FindingId::H2StreamResets).is_none());
}

#[test]
fn a_stream_limit_of_4_under_16_wanted_streams_is_named() {
    // nginx http2_max_concurrent_streams 4, h2load -m 16: the 8 streams over the limit sent
    // before the server's SETTINGS arrived are refused, then the client fills 4 at a time.
    let an = analyze("h2c-stream-limit.pcap");
    let f = find(&an, FindingId::H2StreamLimit).unwrap_or_else(|| panic!("{:#?}", an.findings));
    assert!(f.summary.contains("stream limit of 4"), "{}", f.summary);
    assert_eq!(f.side, Side::Server);
    let r = find(&an, FindingId::H2StreamResets).expect("the refused streams");
    assert!(r.summary.contains("REFUSED_STREAM"), "{}", r.summary);
    // nginx's default limit (128) is never reached by h2load -m 10.
    let healthy = analyze("h2c-nginx.pcap");
    assert!(find(&healthy, FindingId::H2StreamLimit).is_none());
}

#[test]
fn a_loss_repaired_in_microseconds_is_not_head_of_line_blocking() {
    // 5 % of the server's segments dropped after the capture point on a LAN: the loss is
    // there (retransmissions, several streams in progress), but each repair took well under
    // a millisecond, which no request notices.
    let an = analyze("h2c-hol.pcap");
    assert_eq!(an.exchanges.count, 24, "{:?}", an.exchanges);
    assert!(an.stats.retransmitted_segments > 0, "{:?}", an.stats);
    assert!(find(&an, FindingId::PacketLossRetransmission).is_some());
    assert!(
        find(&an, FindingId::H2HeadOfLine).is_none(),
        "{:#?}",
        an.findings
    );
}

/// `name` analyzed with every `nth` frame left out (what `editcap -d` does), or with each
/// frame twice (`mergecap` of a capture with itself: equal timestamps, so the copies follow
/// each other).
fn analyze_edited(name: &str, nth: Option<u64>, twice: bool) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    let mut k = 0;
    for_each_packet(name, |p| {
        if nth.is_some_and(|n| p.frame % n == 0) {
            return;
        }
        for _ in 0..=usize::from(twice) {
            k += 1;
            a.push(&netdoctor_core::RawPacket { frame: k, ..*p });
        }
    });
    a.finish()
}

#[test]
fn a_client_side_capture_behind_loss_replays_each_hole_once_it_is_filled() {
    // The lab case h2-head-of-line (h2load -c 1 -m 10 -n 30 per connection, 32 KiB answers,
    // +40 ms RTT and 2 % loss each way) captured in the client's namespace: every loss of
    // the server's data is a hole in the capture, filled ~1 RTT later by the retransmission.
    // The frames behind a hole are read when it is filled, so the streams end and each loss
    // holds at most the client's 10 streams (without reassembly, streams in a hole never
    // ended, and the capture's 103 answered streams, counted by tshark with
    // tcp.reassemble_out_of_order, came out as fewer exchanges).
    let an = analyze("h2c-hol-client.pcap.gz");
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::H2));
    assert!(
        (100..=106).contains(&an.exchanges.count),
        "{:?}",
        an.exchanges
    );
    assert_eq!(an.stats.h2_framing_lost, 0, "{:?}", an.stats);
    assert_eq!(an.stats.h2_reassembly_overflows, 0, "{:?}", an.stats);
    assert!(an.warnings.is_empty(), "{:?}", an.warnings);
    let f = find(&an, FindingId::H2HeadOfLine).unwrap_or_else(|| panic!("{:#?}", an.findings));
    assert_eq!(f.side, Side::Network);
    // "{episodes} TCP loss episodes each held {per} HTTP/2 streams on average …"
    let n: Vec<f64> = f
        .summary
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.trim_matches('.').parse().ok())
        .collect();
    assert!(n[0] >= 5.0, "{}", f.summary);
    assert!((2.0..=10.0).contains(&n[1]), "{}", f.summary);
    // A hole held the streams about a round trip (40 ms), not for ever.
    let median = f.impact.added_latency_ms.unwrap();
    assert!((20.0..=500.0).contains(&median), "{}", f.summary);
    // The responses were held by the loss, not slow to start: the server is not blamed.
    assert!(
        find(&an, FindingId::SlowServerProcessing).is_none(),
        "{:#?}",
        an.findings
    );
    // Merged with itself: the copies are dropped and the figures are the same.
    let merged = analyze_edited("h2c-hol-client.pcap.gz", None, true);
    assert_eq!(merged.exchanges.count, an.exchanges.count);
    let g = find(&merged, FindingId::H2HeadOfLine).expect("head-of-line in the merged copy");
    assert_eq!(g.summary, f.summary);
}

#[test]
fn capture_gaps_and_copies_of_a_lossless_h2_run_are_not_head_of_line_blocking() {
    // nginx h2c, 4 connections × 10 streams, no loss: no head-of-line blocking.
    let clean = analyze("h2c-nginx.pcap");
    assert!(find(&clean, FindingId::H2HeadOfLine).is_none());
    // Every 40th frame cut out: holes the receiver acknowledged that the capture never saw.
    // They are not waited for (nor are they losses): the streams behind them still end.
    let cut = analyze_edited("h2c-nginx.pcap", Some(40), false);
    assert!(cut.stats.capture_gaps > 0, "{:?}", cut.stats);
    assert!(
        find(&cut, FindingId::H2HeadOfLine).is_none(),
        "{:#?}",
        cut.findings
    );
    assert!(
        cut.exchanges.count >= 150,
        "{:?} of {:?}",
        cut.exchanges,
        clean.exchanges
    );
    // Merged with itself.
    let merged = analyze_edited("h2c-nginx.pcap", None, true);
    assert!(find(&merged, FindingId::H2HeadOfLine).is_none());
    assert_eq!(merged.exchanges.count, clean.exchanges.count);
}

/// `editcap ARGS IN OUT` on committed capture `name` (frames cut out, or a range kept), the
/// result analyzed; `None` after the skip line where editcap is missing.
fn editcap(name: &str, args: &[&str]) -> Option<Analysis> {
    let have = std::process::Command::new("editcap")
        .arg("-h")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("skipped: needs editcap (apt-get install tshark)");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("nd-h2gap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{}-{}.pcap", name, args.join("_")));
    let ok = std::process::Command::new("editcap")
        .args(args.iter().take_while(|a| a.starts_with('-')))
        .arg(common::capture_path(name))
        .arg(&out)
        .args(args.iter().skip_while(|a| a.starts_with('-')))
        .status()
        .unwrap();
    assert!(ok.success(), "editcap {args:?}");
    let an = analyze(out.to_str().unwrap());
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_dir(&dir);
    Some(an)
}

#[test]
fn an_end_stream_in_a_capture_gap_ends_the_stream_there() {
    // h2c-nginx.pcap, first connection: frame 21 is the server's HEADERS of stream 1, frame 23
    // its DATA with END_STREAM, acknowledged by the client in frame 24. Cut out with editcap,
    // the capture has a real gap (the receiver acknowledged bytes the capture never held) and
    // stream 1's end is in it: it ends there, counted as incomplete like an exchange the end
    // of the capture cut, not open until the connection closes.
    let clean = analyze("h2c-nginx.pcap");
    assert_eq!(clean.stats.h2_streams_cut_by_gap, 0);
    let Some(gap) = editcap("h2c-nginx.pcap", &["23"]) else {
        return;
    };
    assert!(gap.stats.capture_gaps >= 1, "{:?}", gap.stats);
    assert_eq!(gap.stats.h2_streams_cut_by_gap, 1, "{:?}", gap.stats);
    assert_eq!(gap.exchanges.incomplete, 1, "{:?}", gap.exchanges);
    // Still one exchange per stream (incomplete ones included).
    assert_eq!(gap.exchanges.count, clean.exchanges.count);
    // The other streams of the connection, set aside at the gap with it, came back with
    // their own frames; nothing reads as queueing or blocking, and the latency is the clean
    // run's.
    for id in [FindingId::H2StreamLimit, FindingId::H2HeadOfLine] {
        assert!(find(&gap, id).is_none(), "{:#?}", gap.findings);
    }
    let (p50, clean_p50) = (gap.exchanges.latency_ms.p50, clean.exchanges.latency_ms.p50);
    assert!(
        (p50 - clean_p50).abs() <= 0.5 * clean_p50.max(0.1),
        "{p50} vs {clean_p50}"
    );
    assert!(
        gap.warnings
            .iter()
            .any(|w| w.contains("1 streams whose end")),
        "{:?}",
        gap.warnings
    );

    // Look-alike: a gap that swallows a stream's HEADERS (frame 25, stream 3) but not its
    // END_STREAM (frame 27): the stream goes on after the gap and ends with its latency.
    let Some(headers_gap) = editcap("h2c-nginx.pcap", &["25"]) else {
        return;
    };
    assert!(headers_gap.stats.capture_gaps >= 1);
    assert_eq!(headers_gap.stats.h2_streams_cut_by_gap, 0);
    assert_eq!(headers_gap.exchanges.incomplete, 0);
    assert_eq!(headers_gap.exchanges.count, clean.exchanges.count);

    // Look-alike: the stream really still open when the capture ends (frames 1-22 kept): cut
    // by the end of the capture, no gap.
    let Some(open) = editcap("h2c-nginx.pcap", &["-r", "1-22"]) else {
        return;
    };
    assert_eq!(open.stats.capture_gaps, 0, "{:?}", open.stats);
    assert_eq!(open.stats.h2_streams_cut_by_gap, 0);
    assert!(open.exchanges.incomplete >= 1, "{:?}", open.exchanges);
}

#[test]
fn resets_goaway_and_real_loss_are_not_streams_cut_by_a_gap() {
    // Streams reset by RST_STREAM end at the reset.
    let refused = analyze("h2c-refused.pcap");
    assert_eq!(refused.stats.h2_streams_cut_by_gap, 0);
    assert_eq!(refused.exchanges.count, 40);
    // nginx keepalive_requests 15: 15 streams answered, then its GOAWAY (last stream 29) and
    // the close leave streams 31-39 unanswered: no exchange, and nothing was missed.
    let goaway = analyze("h2c-goaway.pcap");
    assert_eq!(goaway.exchanges.method, Some(ExchangeMethod::H2));
    assert_eq!(goaway.exchanges.count, 15, "{:?}", goaway.exchanges);
    assert_eq!(goaway.exchanges.incomplete, 0, "{:?}", goaway.exchanges);
    assert_eq!(goaway.stats.capture_gaps, 0);
    assert_eq!(goaway.stats.h2_streams_cut_by_gap, 0);
    // Holes that the retransmission fills (a client-side capture behind loss) and the other
    // committed captures: no stream ends in a gap.
    for name in [
        "h2c-hol-client.pcap.gz",
        "h2c-hol.pcap",
        "h2c-nagle.pcap",
        "h2c-stream-limit.pcap",
    ] {
        let an = analyze(name);
        assert_eq!(an.stats.h2_streams_cut_by_gap, 0, "{name}: {:?}", an.stats);
    }
}

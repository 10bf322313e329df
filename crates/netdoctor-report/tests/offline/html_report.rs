//! The HTML report on real data: reports built in-process the way `netdoctor analyze` and
//! `diagnose` build them (the committed captures; a real load against the built-in reference
//! server on 127.0.0.1, captured live when this process may), rendered, and checked as text.
//! `html_chromium.rs` opens the same pages in real headless Chromium. The pages are kept under
//! `$CARGO_TARGET_TMPDIR/html-test/` for people to open.

use crate::html_common;

use html_common::*;
use netdoctor_core::{Evidence, FindingId, Verdict};
use netdoctor_report::html;

#[test]
fn every_committed_capture_renders_with_its_findings_and_ladders() {
    for (name, id) in [
        ("nagle-eth.pcap", Some(FindingId::NagleDelayedAck)),
        ("delack-stall.pcap", Some(FindingId::DelayedAckStall)),
        ("rto.pcap", Some(FindingId::RetransmissionTimeout)),
        ("zero-window.pcap", Some(FindingId::ZeroWindow)),
        ("loss.pcap", Some(FindingId::PacketLossRetransmission)),
        ("syn-retransmit.pcap", Some(FindingId::SynRetransmit)),
        ("slow-eth.pcap", Some(FindingId::SlowServerProcessing)),
        ("reset.pcap", Some(FindingId::ServerNotListening)),
        ("healthy-eth.pcap", None),
    ] {
        let report = report_from_capture(name);
        let page = render(&report);
        let stem = name.trim_end_matches(".pcap");
        save(&format!("{stem}.html"), &page);
        assert!(page.len() < MAX_BYTES, "{name}: {} bytes", page.len());
        assert_structure(&page);
        let verdict = format!(
            r#"id="verdict" class="verdict v-{}""#,
            verdict_word(&report)
        );
        assert!(page.contains(&verdict), "{name}: no {verdict}");
        assert_eq!(
            page.matches(r#"<article class="finding"#).count(),
            report.findings.len(),
            "{name}: one card per finding"
        );
        match id {
            Some(id) => assert_eq!(report.findings[0].id, id, "{name}"),
            None => assert_eq!(report.verdict, Verdict::Healthy, "{name}"),
        }
        for (i, f) in report.findings.iter().enumerate() {
            let has_packets = f
                .evidence
                .iter()
                .any(|e| matches!(e, Evidence::Packets { .. }));
            assert_eq!(
                page.contains(&format!(r#"id="ladder-{}""#, i + 1)),
                has_packets,
                "{name}: ladder of finding {} ({})",
                i + 1,
                f.id
            );
            assert!(page.contains(&html::esc(&f.summary).to_string()), "{name}");
        }
        // Offline: no load, so the load charts say so instead of drawing anything.
        assert!(
            page.contains("Load not measured: offline analysis of a capture file."),
            "{name}"
        );
        assert!(!page.contains(r#"id="histogram""#), "{name}");
    }
}

#[test]
fn the_nagle_ladder_shows_the_gap_the_late_ack_and_the_held_segment() {
    let report = report_from_capture("nagle-eth.pcap");
    let page = render(&report);
    let ladder = between(&page, r#"id="ladder-1""#, "</svg>");
    // Frames 116 (headers), 117 (the client's ACK 45.3 ms later), 127 (the held body).
    for want in [
        "#116",
        "#117",
        "#127",
        "45.3 ms gap",
        "late ACK: the delayed-ACK timer fired",
        "held segment: Nagle kept it until the ACK",
        "S→C [P.] len=616",
        "client",
        "127.0.0.1:35044",
        "127.0.0.1:18081",
    ] {
        assert!(ladder.contains(want), "ladder lacks {want:?}");
    }
    // The breakdown bar is drawn from the capture, with the Nagle stall as its biggest part.
    let bar = between(&page, r#"id="breakdown-bar""#, "</figure>");
    assert!(bar.contains("stall: nagle_delayed_ack: 43.8 ms"), "{bar}");
}

#[test]
fn the_tail_bars_show_what_each_band_is_made_of() {
    // syn-tail.pcap: typical requests waited in the accept queue; the slowest band waited
    // for a repeated SYN (1 s) and a resent request.
    let report = report_from_capture("syn-tail.pcap");
    let page = render(&report);
    save("syn-tail.html", &page);
    assert_structure(&page);
    let bars = between(&page, r#"id="tail-bars""#, "</figure>");
    assert!(bars.contains("Where the tail goes"), "{bars}");
    for band in ["p50", "max"] {
        assert!(bars.contains(band), "no {band} bar: {bars}");
    }
    assert!(
        bars.contains("stall: syn_retransmit (on 100 % of the band&#39;s requests)"),
        "{bars}"
    );
    assert!(bars.contains("part stall s-syn_retransmit"), "{bars}");
    // One band everywhere (nagle-eth: every percentile is the 44 ms Nagle bucket): no
    // second chart.
    let page = render(&report_from_capture("nagle-eth.pcap"));
    if !page.contains(r#"id="tail-bars""#) {
        return;
    }
    let bars = between(&page, r#"id="tail-bars""#, "</figure>");
    assert!(bars.contains("nagle_delayed_ack"), "{bars}");
}

#[test]
fn hostile_text_cannot_inject_markup() {
    let report = hostile_report();
    let page = render(&report);
    save("hostile.html", &page);
    assert_structure(&page);
    let lower = page.to_ascii_lowercase();
    for bad in ["<script", "<img", "<iframe", "javascript:", "<svg onload"] {
        assert!(!lower.contains(bad), "{bad} got through");
    }
    // The text is there, escaped, also where the load's first error is shown.
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(
        page.contains("; the first: <code>&lt;script&gt;"),
        "first error not shown"
    );
    assert!(page.contains("Responses by status: 500: 1. Errors: <b>1</b>"));
    assert!(page.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"));
}

#[test]
fn a_live_load_report_has_the_charts_and_follows_the_schema() {
    let Some(report) = live_report(LOAD_SECS) else {
        return;
    };
    let load = report.measurements.load.as_ref().unwrap();
    assert!(load.requests > 0, "the load completed no request");
    let hist = load.latency_histogram.as_ref().expect("histogram");
    assert_eq!(hist.iter().map(|b| b.count).sum::<u64>(), load.requests);
    let tl = load.timeline.as_ref().expect("timeline");
    assert_eq!(tl.iter().map(|p| p.requests).sum::<u64>(), load.requests);
    assert!(
        (LOAD_SECS as usize..=LOAD_SECS as usize + 1).contains(&tl.len()),
        "{} slots for a {LOAD_SECS} s run",
        tl.len()
    );
    let curve = load.latency_curve.as_ref().expect("curve");
    assert_eq!(curve.last().unwrap().quantile, 1.0);
    assert!((curve.last().unwrap().ms - load.latency_ms.max).abs() < 0.01);

    // The new fields are in the schema: valid as written, rejected when broken.
    let v = serde_json::to_value(&report).unwrap();
    let validator = validator();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let mut bad = v.clone();
    bad["measurements"]["load"]["timeline"][0]["requests"] = (-1).into();
    assert!(
        !validator.is_valid(&bad),
        "negative per-second count accepted"
    );
    let mut bad = v.clone();
    bad["measurements"]["load"]["latency_histogram"][0]
        .as_object_mut()
        .unwrap()
        .remove("count");
    assert!(!validator.is_valid(&bad), "bucket without a count accepted");
    let mut bad = v;
    bad["measurements"]["load"]["latency_curve"][0]["quantile"] = 1.5.into();
    assert!(!validator.is_valid(&bad), "quantile above 1 accepted");

    let page = render(&report);
    save("live-nagle.html", &page);
    assert!(page.len() < MAX_BYTES, "{} bytes", page.len());
    assert_structure(&page);
    for id in [
        r#"id="histogram""#,
        r#"id="percentiles""#,
        "requests per second and latency over the run",
        r#"id="baseline""#,
    ] {
        assert!(page.contains(id), "no {id}");
    }
    eprintln!(
        "live report: {} requests, p50 {:.1} ms, {} findings, page {} bytes",
        load.requests,
        load.latency_ms.p50,
        report.findings.len(),
        page.len()
    );
}

#[test]
fn a_root_cause_lists_its_consequences_and_they_point_back() {
    use netdoctor_core::{Finding, Severity, Side};
    let mut report = report_from_capture("lab-healthy.pcap");
    report.findings = vec![
        Finding::new(
            FindingId::SynRetransmit,
            Severity::Critical,
            Side::Host,
            "SYNs repeated after 1 s",
        ),
        Finding::new(
            FindingId::ListenQueueOverflow,
            Severity::Warning,
            Side::Server,
            "the accept queue overflowed",
        ),
    ];
    report.decide(&netdoctor_core::verdict::VerdictInputs {
        exchanges: 100,
        capture_present: true,
        ..Default::default()
    });
    let page = render(&report);
    save("root-cause.html", &page);
    assert_structure(&page);
    let root = page
        .find("Root cause of: <code>syn_retransmit</code>")
        .expect("root");
    let back = page
        .find("Consequence of <code>listen_queue_overflow</code>")
        .expect("consequence");
    assert!(root < back, "the root cause comes first");
}

/// The HTML one-request line means what the terminal's means: first byte counted from the
/// start (curl's time_starttransfer, not the server's wait after the request), and it shows the
/// TLS handshake.
#[test]
fn the_one_request_line_matches_the_terminal_and_shows_tls() {
    let mut report = report_from_capture("healthy-eth.pcap");
    report.measurements.probe = Some(netdoctor_report::ProbeSection {
        syn: None,
        connect: None,
        http: Some(netdoctor_probe::HttpTiming {
            connect_ms: 0.21,
            tls_ms: Some(3.17),
            ttfb_ms: 0.07,
            first_byte_ms: 4.04,
            total_ms: 4.2,
            status: 200,
            header_bytes: 238,
            body_bytes: 615,
            protocol: None,
        }),
    });
    let page = render(&report);
    let line = between(&page, r#"id="baseline""#, "</p>");
    assert!(line.contains("first byte 4.04 ms"), "{line}");
    assert!(line.contains("TLS 3.17 ms"), "{line}");
    assert!(!line.contains("0.07"), "{line}");
    let mut term = Vec::new();
    netdoctor_report::terminal::render(&report, &mut term).unwrap();
    let term = String::from_utf8(term).unwrap();
    assert!(
        term.contains("first byte 4.04 ms") && term.contains("TLS 3.17 ms"),
        "{term}"
    );
}

/// A listening socket sends nothing: its TCP_NODELAY is shown without the red "Nagle on" mark
/// that a connection with TCP_NODELAY off gets.
#[test]
fn listening_sockets_are_not_marked_as_nagle_on() {
    use netdoctor_core::sockets::{ServerSocket, SocketState};
    let sock = |state, local: &str| ServerSocket {
        pid: 11040,
        process: "nginx".into(),
        fd: 6,
        state,
        local: local.into(),
        tcp_nodelay: false,
        tcp_cork: false,
        sndbuf: 87040,
        rcvbuf: 131072,
    };
    let mut report = report_from_capture("healthy-eth.pcap");
    report.measurements.server_sockets = Some(vec![
        sock(SocketState::Listen, "0.0.0.0:8081"),
        sock(SocketState::Established, "10.213.0.1:8081"),
    ]);
    let page = render(&report);
    let listener = between(&page, "<code>0.0.0.0:8081</code>", "</tr>");
    assert!(
        !listener.contains(r#"class="off""#) && listener.contains("a listener sends nothing"),
        "{listener}"
    );
    let conn = between(&page, "<code>10.213.0.1:8081</code>", "</tr>");
    assert!(conn.contains(r#"class="off">off (Nagle on)"#), "{conn}");
}

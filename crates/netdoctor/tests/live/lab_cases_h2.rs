//! The HTTP/2 lab cases (`lab start --case h2-…`), each diagnosed with the command it prints
//! and, while it runs, its look-alike on the control port of the same path, which must not
//! carry the case's finding. Needs root, h2load (nghttp2-client) and python3-h2 for
//! /usr/bin/python3 (each test skips with one line otherwise).

use crate::labcase::*;
// The panicking lookup of the lab cases, not common's Option.
use crate::labcase::finding;
use netdoctor_lab::h2case;
use serde_json::Value;

fn have_tools() -> bool {
    if skip() {
        return false;
    }
    if !netdoctor_lab::tools::have(&[("h2load", "nghttp2-client")]) {
        return false;
    }
    let h2 = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import h2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !h2 {
        eprintln!("skipped: needs python3-h2 (apt-get install python3-h2)");
    }
    h2
}

/// The case's command with its URL's port replaced by `port` (the control), run in the lab.
fn diagnose_port(info: &Value, port: u16) -> (i32, Value) {
    let mut argv = suggested(info);
    let url = format!("http://{}:{port}/", netdoctor_lab::route_lab::SERVER_IP);
    *argv.last_mut().unwrap() = &url;
    run_like_suggested(info, &argv)
}

fn has(report: &Value, id: &str) -> bool {
    ids(report).iter().any(|i| i == id)
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The numbers in an evidence note, in order.
fn numbers(note: &str) -> Vec<f64> {
    note.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.trim_matches('.').parse().ok())
        .collect()
}

#[test]
fn h2_window_is_a_flow_control_stall_on_the_servers_side() {
    let _turn = crate::common::file_turn(file!());
    if !have_tools() {
        return;
    }
    let report = case_round_trip("h2-window", "h2w");
    let f = finding(&report, "h2_flow_control_stall");
    // The client's uploads wait for the server's 64 KB windows: the server is to change.
    assert_eq!(f["side"], "server", "{f}");
    let summary = f["summary"].as_str().unwrap();
    assert!(summary.contains("window is 65535 bytes"), "{summary}");
    // Each wait is about the bridge's 40 ms round trip.
    let added = num(&f["impact"]["added_latency_ms"]);
    assert!((35.0..=200.0).contains(&added), "{f}");
    // h2 exchanges (with turns for a connection already open when the capture began).
    let method = &report["measurements"]["capture"]["exchanges"]["method"];
    assert!(method == "h2" || method == "mixed", "{report}");
}

#[test]
fn a_small_stream_limit_is_told_from_a_slow_server_without_one() {
    let _turn = crate::common::file_turn(file!());
    if !have_tools() {
        return;
    }
    let mut control = Value::Null;
    let report = case_round_trip_with("h2-stream-limit", "h2l", |info| {
        control = diagnose_port(info, h2case::UNLIMITED_PORT).1;
    });
    let f = finding(&report, "h2_stream_limit");
    assert_eq!(f["side"], "server", "{f}");
    let summary = f["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("stream limit of {}", h2case::STREAM_LIMIT)),
        "{summary}"
    );
    // The client wants 8 streams of a limit of 2: most new streams fill it (the first burst,
    // sent before the SETTINGS arrived, does not), so the share is large: a warning.
    assert_eq!(f["severity"], "warning", "{f}");
    let share = num(&f["impact"]["affected_fraction"]);
    assert!((0.3..=1.0).contains(&share), "{f}");
    // Evidence: a stream ended, the next one filled the limit again soon after (the client
    // opens it as the END_STREAM arrives: well under the shortest answer time, 60 ms).
    let ev = f["evidence"].as_array().unwrap();
    assert!(!ev.is_empty(), "{f}");
    for e in ev {
        let note = e["note"].as_str().unwrap();
        let n = numbers(note);
        assert_eq!(n[0], f64::from(h2case::STREAM_LIMIT), "{note}");
        assert!((0.0..50.0).contains(&n[1]), "{note}");
    }
    // The same slow answers from a server allowing 100 streams: no limit finding, and the
    // requests are served (no resets, no errors).
    assert!(control["findings"].is_array(), "{control}");
    assert!(!has(&control, "h2_stream_limit"), "{control}");
    assert!(!has(&control, "h2_stream_resets"), "{control}");
    let method = &control["measurements"]["capture"]["exchanges"]["method"];
    assert!(method == "h2" || method == "mixed", "{control}");
}

#[test]
fn stream_resets_are_told_from_http_5xx() {
    let _turn = crate::common::file_turn(file!());
    if !have_tools() {
        return;
    }
    let mut control = Value::Null;
    let report = case_round_trip_with("h2-resets", "h2r", |info| {
        control = diagnose_port(info, h2case::ERRORS_PORT).1;
    });
    let f = finding(&report, "h2_stream_resets");
    assert_eq!(f["side"], "server", "{f}");
    // A quarter of the streams reset with an error code: critical.
    assert_eq!(f["severity"], "critical", "{f}");
    let summary = f["summary"].as_str().unwrap();
    assert!(summary.contains("server INTERNAL_ERROR"), "{summary}");
    assert!(summary.contains("(100%)"), "{summary}");
    let share = num(&f["impact"]["affected_fraction"]);
    assert!((0.2..=0.3).contains(&share), "{f}");
    assert!(!f["evidence"].as_array().unwrap().is_empty(), "{f}");
    // Reset streams have no status: they are not HTTP errors.
    assert!(!has(&report, "http_errors"), "{report}");
    // The control answers every 4th stream with 503: HTTP errors, no resets.
    assert!(has(&control, "http_errors"), "{control}");
    assert!(!has(&control, "h2_stream_resets"), "{control}");
}

#[test]
fn head_of_line_blocking_is_told_from_plain_loss_on_http1() {
    let _turn = crate::common::file_turn(file!());
    if !have_tools() {
        return;
    }
    if !netdoctor_lab::tools::have(&[("ethtool", "ethtool")]) {
        return;
    }
    let mut control = Value::Null;
    let report = case_round_trip_with("h2-head-of-line", "h2h", |info| {
        control = diagnose_port(info, h2case::HOL_H1_PORT).1;
    });
    let f = finding(&report, "h2_head_of_line");
    assert_eq!(f["side"], "network", "{f}");
    // Losses repaired within about a round trip (40 ms; the server sees the duplicate ACKs
    // half a round trip after the loss) or a timeout, each holding several streams.
    let median = num(&f["impact"]["added_latency_ms"]);
    assert!((5.0..=1500.0).contains(&median), "{f}");
    // Several episodes: at least a warning (critical once the median reaches 20 ms).
    assert!(
        f["severity"] == "critical" || f["severity"] == "warning",
        "{f}"
    );
    let summary = f["summary"].as_str().unwrap();
    eprintln!("client side: {summary}");
    let n = numbers(summary);
    // "{episodes} TCP loss episodes each held {per} HTTP/2 streams on average …": never more
    // than the client's 10 streams per connection. Diagnosed in the client's namespace:
    // each hole behind a loss is read when its retransmission fills it, so the streams in
    // it end (without that they piled up: 11.2 per episode).
    assert!(n[0] >= 3.0 && n[1] >= 2.0 && n[1] <= 10.0, "{summary}");
    for e in f["evidence"].as_array().unwrap() {
        let note = e["note"].as_str().unwrap();
        let n = numbers(note);
        assert!(n[0] >= 2.0 && n[0] <= 10.0, "{note}");
        assert!(n[1] >= 1.0, "{note}");
    }
    // The loss itself is reported too.
    assert!(has(&report, "packet_loss_retransmission"), "{report}");
    // HTTP/1.1 over the same lossy path: the loss, not head-of-line blocking.
    assert!(has(&control, "packet_loss_retransmission"), "{control}");
    assert!(!has(&control, "h2_head_of_line"), "{control}");
}

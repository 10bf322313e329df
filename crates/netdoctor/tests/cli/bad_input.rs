//! Bad input through the real binary: one clear line, the right exit code, never a panic.

use crate::common;
use common::*;
use std::io::Write;

fn assert_clean_error(o: &std::process::Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    assert!(err.starts_with("error: "), "stderr: {err}");
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
}

#[test]
fn invalid_url_is_a_usage_error() {
    let o = netdoctor(&["diagnose", "http://[::1/", "--json"]);
    assert_clean_error(&o, "invalid URL");
    let o = netdoctor(&["diagnose", "ftp://127.0.0.1/"]);
    assert_clean_error(&o, "scheme 'ftp'");
}

#[test]
fn host_that_does_not_resolve_is_named() {
    let o = netdoctor(&["diagnose", "http://nosuch-host.invalid:8080/"]);
    assert_clean_error(&o, "nosuch-host.invalid");
}

#[test]
fn bad_duration_is_rejected_by_the_parser() {
    let o = netdoctor(&["diagnose", "-d", "0s", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("greater than zero"), "{}", stderr(&o));
}

#[test]
fn nothing_listening_is_a_finding_with_valid_json() {
    // A port where nothing listens, held for the test (a freed port may be taken meanwhile).
    let closed = netdoctor_lab::ports::ClosedPort::loopback();
    let port = closed.port();
    let url = format!("http://127.0.0.1:{port}/");
    let o = netdoctor(&["diagnose", &url, "--json"]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let v = json(&o);
    assert_schema(&v);
    assert_eq!(v["verdict"], "problem");
    assert_eq!(v["findings"][0]["id"], "server_not_listening");
    let load = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "load")
        .unwrap();
    assert_eq!(load["status"], "skipped");
    assert!(load["reason"].as_str().unwrap().contains(&port.to_string()));
}

#[test]
fn analyze_missing_file() {
    let o = netdoctor(&["analyze", "/nonexistent/capture.pcap"]);
    assert_clean_error(&o, "/nonexistent/capture.pcap");
}

#[test]
fn analyze_empty_and_text_files() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pcap");
    std::fs::File::create(&empty).unwrap();
    let o = netdoctor(&["analyze", empty.to_str().unwrap()]);
    assert_clean_error(&o, "empty");
    let text = dir.path().join("notes.txt");
    std::fs::File::create(&text)
        .unwrap()
        .write_all(b"hello, this is not a capture\n")
        .unwrap();
    let o = netdoctor(&["analyze", text.to_str().unwrap()]);
    assert_clean_error(&o, "not a pcap or pcapng file");
}

#[test]
fn analyze_truncated_capture_warns_and_reports_what_it_read() {
    let src = captures_dir().join("nagle-eth.pcap");
    let bytes = std::fs::read(&src).expect("committed capture");
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.pcap");
    // Cut in the middle of a packet, two thirds in.
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3 + 7]).unwrap();
    let o = netdoctor(&["analyze", cut.to_str().unwrap(), "--json"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "stderr: {}",
        stderr(&o)
    );
    let v = json(&o);
    assert_schema(&v);
    let warnings = v["measurements"]["capture"]["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("truncated")),
        "{warnings:?}"
    );
    assert!(
        v["measurements"]["capture"]["stats"]["packets"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn help_lists_every_command() {
    let o = netdoctor(&["--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    for cmd in ["diagnose", "analyze", "lab", "demo"] {
        assert!(help.contains(cmd), "{cmd} missing from --help");
    }
}

#[test]
fn broken_pipe_exits_quietly() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args([
            "analyze",
            captures_dir().join("nagle-eth.pcap").to_str().unwrap(),
        ])
        .env("NETDOCTOR_QUIET", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
}

//! `netdoctor watch` bad input through the real binary: one clear line, exit code 2, no panic.

mod common;
use common::*;

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
fn short_window_port_zero_and_tls_collector_are_named() {
    let o = netdoctor(&["watch", "-p", "1", "--window", "500ms", "--windows", "1"]);
    assert_clean_error(&o, "window length must be at least 1s");
    let o = netdoctor(&["watch", "-p", "0", "--windows", "1"]);
    assert_clean_error(&o, "invalid port 0");
    let o = netdoctor(&["watch", "-p", "1", "--otlp", "https://collector:4318"]);
    assert_clean_error(&o, "only http:// is supported");
}

#[test]
fn a_port_list_that_does_not_parse_is_a_usage_error() {
    let o = netdoctor(&["watch", "-p", "80,http"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("invalid value 'http'"),
        "{}",
        stderr(&o)
    );
}

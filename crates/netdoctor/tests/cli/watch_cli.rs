//! `netdoctor watch` bad input through the real binary: one clear line, exit code 2, no panic.

use crate::common;
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
fn a_ring_budget_out_of_range_is_a_usage_error() {
    let o = netdoctor(&["watch", "-p", "1", "--ring-mb", "0", "--windows", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("invalid value '0' for '--ring-mb <MIB>'"),
        "{}",
        stderr(&o)
    );
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

/// Without CAP_NET_RAW, watch says so and what it means, in one line (run as nobody via
/// setpriv; skipped when not root or setpriv is missing).
#[test]
fn without_cap_net_raw_the_missing_capability_is_named() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/usr/bin/setpriv").exists() {
        eprintln!("SKIPPED: needs root and /usr/bin/setpriv to drop to nobody");
        return;
    }
    // A copy that nobody can execute (the target directory may not be readable by nobody).
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let bin = dir.path().join("netdoctor");
    // Copied by `cp`, not std::fs::copy: a child another test of this process spawns while
    // the copy is open for writing inherits that descriptor until its exec, and exec of the
    // copy then fails with ETXTBSY ("Text file busy"). In `cp`'s process no test forks.
    let cp = std::process::Command::new("cp")
        .arg(env!("CARGO_BIN_EXE_netdoctor"))
        .arg(&bin)
        .status()
        .unwrap();
    assert!(cp.success(), "cp the binary: {cp}");
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["watch", "-p", "80", "--window", "1s", "--windows", "1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_clean_error(&o, "watch needs CAP_NET_RAW to capture tcp port 80");
}

#[test]
fn pods_without_a_proc_root_or_without_pods_are_named() {
    let o = netdoctor(&[
        "watch",
        "--pods",
        "--proc-root",
        "/nonexistent-netdoctor-proc",
        "--windows",
        "1",
    ]);
    assert_clean_error(&o, "/nonexistent-netdoctor-proc");
    let empty = tempfile::tempdir().unwrap();
    let root = empty.path().to_str().unwrap();
    let o = netdoctor(&["watch", "--pods", "--proc-root", root, "--windows", "1"]);
    assert_clean_error(&o, "no listener in any other network namespace");
}

//! Ctrl-C and SIGTERM during `diagnose`: the run stops the load, finishes the capture cleanly,
//! analyzes what it has and prints the report marked `interrupted`, with exit code 130 / 143.

use crate::common::*;
use netdoctor_lab::builtin::BuiltinServers;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn server() -> (BuiltinServers, String) {
    // Below the ephemeral range: a port bind(0) freed could be taken before the server binds it.
    // TCP_NODELAY off: the reference stall, so the partial run has something to find.
    let (s, addr) = netdoctor_lab::ports::on_unused_port([127, 0, 0, 1], |port| {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        Ok((BuiltinServers::start(&[(addr, false)])?, addr))
    })
    .expect("start built-in server");
    (s, format!("http://{addr}/"))
}

/// Starts a 10 s diagnose, sends `signal` once the load has run for a while, and returns the
/// exit code, the JSON report, how long the run went on after the signal, and how much of the
/// 10 s load was left when it was sent.
fn interrupted_run(
    signal: i32,
    pcap: &std::path::Path,
) -> (i32, serde_json::Value, Duration, Duration) {
    let (_srv, url) = server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["diagnose", "-d", "10s", "-c", "20", "--json", "--pcap"])
        .arg(pcap)
        .arg(&url)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run netdoctor");
    // Ready signal: the progress line that says the load started.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        let n = err.read_line(&mut line).unwrap();
        assert!(n > 0, "netdoctor ended before the load started");
        if line.contains("loading") {
            break;
        }
    }
    let loading = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on the PID of the child this test spawned and has not yet waited for.
    unsafe { libc::kill(child.id() as i32, signal) };
    let signalled = Instant::now();
    let load_left = Duration::from_secs(10).saturating_sub(signalled - loading);
    let out = child.wait_with_output().unwrap();
    let code = out.status.code().expect("exited, not killed");
    (code, json(&out), signalled.elapsed(), load_left)
}

#[test]
fn sigint_during_diagnose_reports_what_was_measured() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (packet capture)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("run.pcap");
    let (code, v, after_signal, load_left) = interrupted_run(libc::SIGINT, &pcap);
    assert_eq!(code, 130);
    // Measured from the signal, not from the start (a busy machine may take seconds to reach
    // the load): a run that ignored it would still load for `load_left`, then analyze.
    assert!(
        after_signal < load_left,
        "the load was not cut short: {after_signal:?} after the signal, {load_left:?} of load left"
    );
    assert_schema(&v);
    assert_eq!(v["interrupted"], true);
    let load_s = v["measurements"]["load"]["duration_s"].as_f64().unwrap();
    assert!(load_s < 9.0, "load ran {load_s} s");
    assert_eq!(v["findings"][0]["id"], "nagle_delayed_ack", "{v:#}");
    // The pcap is complete and valid: tshark (when installed) and our reader read it whole.
    let file = netdoctor_observe::pcapfile::CaptureFile::open(&pcap).unwrap();
    drop(file);
    let out = netdoctor(&["analyze", "--json", pcap.to_str().unwrap()]);
    let a = json(&out);
    // No warning but the one that frames delivered by two CPUs may earn: a frame stamped a
    // few microseconds before the one written ahead of it (read in timestamp order).
    let warnings: Vec<&str> = a["measurements"]["capture"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| !w.contains("stamped earlier than the frame before them"))
        .collect();
    assert!(warnings.is_empty(), "{a:#}");
    if let Ok(t) = Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .arg("-c")
        .arg("1")
        .output()
    {
        assert!(
            t.status.success(),
            "tshark: {}",
            String::from_utf8_lossy(&t.stderr)
        );
    }
}

#[test]
fn sigterm_during_diagnose_exits_143_with_a_report() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (packet capture)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, v, _, _) = interrupted_run(libc::SIGTERM, &dir.path().join("run.pcap"));
    assert_eq!(code, 143);
    assert_eq!(v["interrupted"], true);
    assert_schema(&v);
}

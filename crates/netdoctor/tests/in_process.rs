//! `run(Cli::parse_from(..))` in-process against the built-in reference server on loopback
//! (no namespaces needed): the verdict logic around what could and could not be checked.

mod common;
use clap::Parser;
use common::*;
use netdoctor::{Cli, run};
use netdoctor_lab::builtin::BuiltinServers;
use std::net::SocketAddr;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// Starts a built-in server on loopback; returns it with its URL.
fn server(nodelay: bool) -> (BuiltinServers, String) {
    // Below the ephemeral range: a port bind(0) freed could be taken before the server binds it.
    let (s, addr) = netdoctor_lab::ports::on_unused_port([127, 0, 0, 1], |port| {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        Ok((BuiltinServers::start(&[(addr, nodelay)])?, addr))
    })
    .expect("start built-in server");
    (s, format!("http://{addr}/"))
}

fn run_json(args: &[&str]) -> (i32, serde_json::Value) {
    let cli = Cli::parse_from(std::iter::once("netdoctor").chain(args.iter().copied()));
    let mut out = Vec::new();
    let code = run(cli, &mut out).expect("run");
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON report");
    assert_schema(&v);
    assert_reads_back(&out);
    (code, v)
}

/// A diagnose report (probe, load, counters, sockets sections) reads back into a `Report` and
/// writes the same JSON again.
fn assert_reads_back(json: &[u8]) {
    let text = std::str::from_utf8(json).unwrap();
    let report: netdoctor_report::Report =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("does not read back: {e}\n{text}"));
    let mut again = Vec::new();
    netdoctor_report::Format::Json
        .write(&report, &mut again)
        .unwrap();
    assert_eq!(std::str::from_utf8(&again).unwrap(), text);
}

fn check<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {v:#}"))
}

#[test]
fn without_a_capture_the_verdict_is_inconclusive_and_says_why() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (srv, url) = server(true);
    let (code, v) = run_json(&[
        "diagnose",
        "--no-capture",
        "-d",
        "500ms",
        "-c",
        "4",
        "--json",
        &url,
    ]);
    srv.stop();
    assert_eq!(code, 3, "{v:#}");
    assert_eq!(v["verdict"], "inconclusive");
    assert_eq!(check(&v, "capture")["status"], "skipped");
    assert!(
        check(&v, "verdict")["reason"]
            .as_str()
            .unwrap()
            .contains("capture")
    );
    // What could be measured still is.
    assert!(v["measurements"]["load"]["requests"].as_u64().unwrap() > 0);
    assert_eq!(v["measurements"]["probe"]["http"]["status"], 200);
}

#[test]
fn loopback_nagle_server_is_found_and_nodelay_server_is_healthy() {
    if !is_root() {
        eprintln!("skipped: needs root (packet capture)");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (off, off_url) = server(false);
    let (code, v) = run_json(&["diagnose", "-d", "2s", "-c", "20", "--json", &off_url]);
    off.stop();
    assert_eq!(code, 1, "{v:#}");
    let f = &v["findings"][0];
    assert_eq!(f["id"], "nagle_delayed_ack", "{v:#}");
    assert_eq!(f["side"], "server");
    let added = f["impact"]["added_latency_ms"].as_f64().unwrap();
    assert!((35.0..=60.0).contains(&added), "added {added} ms");

    let (on, on_url) = server(true);
    let (code, v) = run_json(&["diagnose", "-d", "2s", "-c", "20", "--json", &on_url]);
    on.stop();
    assert_eq!(v["verdict"], "healthy", "{v:#}");
    assert_eq!(code, 0);
}

//! The reference case end to end against real nginx in the lab: the `tcp_nodelay off` server
//! must come out as `nagle_delayed_ack` (side server, ≈ 40 ms), the `on` server healthy.
//! Needs root and nginx-light; skips with the reason otherwise. The tests run one at a time
//! (a load on a 2-core machine disturbs another load).

use crate::common::*;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn assert_nagle(off: &serde_json::Value) {
    assert_eq!(off["verdict"], "problem", "{off:#}");
    let f =
        finding(off, "nagle_delayed_ack").unwrap_or_else(|| panic!("no nagle finding: {off:#}"));
    assert_eq!(
        off["findings"][0]["id"], "nagle_delayed_ack",
        "not ranked first"
    );
    assert_eq!(f["side"], "server");
    let added = f["impact"]["added_latency_ms"].as_f64().unwrap();
    assert!((35.0..=60.0).contains(&added), "added latency {added} ms");
    let frac = f["impact"]["affected_fraction"].as_f64().unwrap();
    assert!(frac > 0.5, "affected fraction {frac}");
    let ev = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "packets")
        .unwrap_or_else(|| panic!("no packet evidence: {f:#}"));
    assert!(ev["packets"].as_array().unwrap().len() >= 3);
    let p50 = off["measurements"]["load"]["latency_ms"]["p50"]
        .as_f64()
        .unwrap();
    assert!(p50 > 30.0, "p50 under load {p50} ms");
}

fn assert_healthy(on: &serde_json::Value) {
    assert_eq!(on["verdict"], "healthy", "{on:#}");
    assert!(finding(on, "nagle_delayed_ack").is_none());
    assert!(finding(on, "slow_server_processing").is_none());
    // Our own load generator's end of run is not a reset (in-flight responses are drained).
    assert!(finding(on, "connection_reset").is_none(), "{on:#}");
    let p50 = on["measurements"]["load"]["latency_ms"]["p50"]
        .as_f64()
        .unwrap();
    assert!(p50 < 20.0, "p50 under load {p50} ms");
}

fn no_namespaces_named(prefix: &str) {
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(
        !list.lines().any(|l| l.starts_with(prefix)),
        "namespaces left behind: {list}"
    );
}

#[test]
fn demo_finds_nagle_on_the_slow_server_and_calls_the_other_healthy() {
    let _turn = crate::common::file_turn(file!());
    if let Some(why) = lab_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let o = netdoctor(&["demo", "--json", "-d", "3s"]);
    let v = json(&o);
    let reports = v.as_array().expect("array of two reports");
    assert_eq!(reports.len(), 2);
    for r in reports {
        assert_schema(r);
    }
    let (on, off) = (&reports[0], &reports[1]);
    assert_healthy(on);
    assert_nagle(off);
    // Same path RTT on both: the SYN probe cannot tell them apart.
    let syn_on = on["measurements"]["probe"]["syn"]["median_ms"]
        .as_f64()
        .unwrap();
    let syn_off = off["measurements"]["probe"]["syn"]["median_ms"]
        .as_f64()
        .unwrap();
    assert!(
        syn_on < 5.0 && syn_off < 5.0,
        "SYN RTT {syn_on} / {syn_off}"
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "demo exit code; stderr: {}",
        stderr(&o)
    );
    no_namespaces_named("nd-demo");
}

#[test]
fn demo_with_the_builtin_server_gives_the_same_diagnosis() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let o = netdoctor(&["demo", "--json", "-d", "3s", "--server", "builtin"]);
    let v = json(&o);
    let reports = v.as_array().expect("array of two reports");
    for r in reports {
        assert_schema(r);
    }
    assert_healthy(&reports[0]);
    assert_nagle(&reports[1]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    no_namespaces_named("nd-demo");
}

#[test]
fn lab_diagnose_pcap_then_analyze_agree() {
    let _turn = crate::common::file_turn(file!());
    if let Some(why) = lab_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = format!("ndt{}", std::process::id());
    let start = netdoctor(&["lab", "start", "--name", &name, "--json"]);
    assert!(start.status.success(), "lab start: {}", stderr(&start));
    // From here on, stop the lab whatever happens.
    struct Stop(String);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = netdoctor(&["lab", "stop", "--name", &self.0]);
        }
    }
    let _stop = Stop(name.clone());
    let servers = json(&start);
    let off = servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tcp_nodelay"] == false)
        .expect("a tcp_nodelay off server");
    let url = off["url"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("off.pcap");
    let client = format!("{name}-cli");
    let o = netdoctor(&[
        "diagnose",
        "--netns",
        &client,
        "-d",
        "2s",
        "--json",
        "--pcap",
        pcap.to_str().unwrap(),
        url,
    ]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let live = json(&o);
    assert_schema(&live);
    assert_nagle(&live);
    // The server's own sockets confirm it: nginx's connections have TCP_NODELAY off.
    let f = finding(&live, "nagle_delayed_ack").unwrap();
    let sockopt = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "socket_option")
        .unwrap_or_else(|| panic!("no socket_option evidence: {f:#}"));
    assert_eq!(sockopt["option"], "TCP_NODELAY");
    assert!(
        sockopt["value"].as_str().unwrap().starts_with('0'),
        "{sockopt}"
    );
    let socks = live["measurements"]["server_sockets"].as_array().unwrap();
    assert!(
        socks
            .iter()
            .any(|s| s["process"] == "nginx" && s["state"] == "established")
    );

    // The written capture gives the same answer offline.
    let a = netdoctor(&["analyze", "--json", pcap.to_str().unwrap()]);
    assert_eq!(a.status.code(), Some(1), "stderr: {}", stderr(&a));
    let offline = json(&a);
    assert_schema(&offline);
    let f = finding(&offline, "nagle_delayed_ack").expect("nagle offline");
    assert_eq!(f["side"], "server");
    assert_eq!(
        offline["measurements"]["capture"]["stats"]["packets"],
        live["measurements"]["capture"]["stats"]["packets"],
        "the pcap holds every analyzed packet"
    );
    // tshark reads it too (the file is for people's own tools).
    if let Ok(t) = std::process::Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-c", "5"])
        .output()
    {
        assert!(
            t.status.success(),
            "tshark: {}",
            String::from_utf8_lossy(&t.stderr)
        );
    }

    let stop = netdoctor(&["lab", "stop", "--name", &name]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    no_namespaces_named(&name);
    // Not running any more: exit status 1, as `lab status --help` says.
    let status = netdoctor(&["lab", "status", "--name", &name, "--json"]);
    assert_eq!(status.status.code(), Some(1), "{}", stderr(&status));
    assert_eq!(json(&status)["running"], false);
}

//! `netdoctor host` in-process: the snapshot's JSON, bounded `--watch`, and `--netns` reading a
//! namespace this test creates (as root; skipped with a reason otherwise).

use clap::Parser;
use netdoctor::{Cli, run};
use std::net::TcpListener;

fn run_args(args: &[&str]) -> (i32, String) {
    let cli = Cli::parse_from(std::iter::once("netdoctor").chain(args.iter().copied()));
    let mut out = Vec::new();
    let code = run(cli, &mut out).expect("run");
    (code, String::from_utf8(out).unwrap())
}

fn assert_host_schema(v: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(netdoctor::hostcmd::HOST_SCHEMA_JSON).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "host output breaks its schema: {errors:#?}"
    );
}

/// 1 when a finding above info stands out, else 0.
fn exit_code_for(v: &serde_json::Value) -> i32 {
    let problem = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["severity"] != "info");
    i32::from(problem)
}

#[test]
fn snapshot_json_lists_our_listener_and_backlog() {
    let _turn = crate::common::file_turn(file!());
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (code, out) = run_args(&["host", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(code, exit_code_for(&v));
    assert_host_schema(&v);
    assert_eq!(v["schema"], "netdoctor.host/v1");
    let mine = v["listeners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["local"] == format!("127.0.0.1:{port}"))
        .expect("our listener");
    assert_eq!(mine["backlog"], 128);
    assert!(v["sysctls"]["somaxconn"].as_u64().unwrap() > 0);
    assert!(
        v["counters"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["meaning"].is_string())
    );
}

#[test]
fn schema_rejects_what_it_should() {
    let _turn = crate::common::file_turn(file!());
    let (_, out) = run_args(&["host", "--json"]);
    let mut v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["checks"] = serde_json::json!([{"name": "capture", "status": "ok", "reason": ""}]);
    let schema: serde_json::Value =
        serde_json::from_str(netdoctor::hostcmd::HOST_SCHEMA_JSON).unwrap();
    assert!(!jsonschema::is_valid(&schema, &v));
}

#[test]
fn watch_is_bounded_by_count() {
    let _turn = crate::common::file_turn(file!());
    let (code, out) = run_args(&["host", "--watch", "0.2", "--count", "2", "--json"]);
    assert_eq!(code, 0);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0]["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["name"] == "lo")
    );
    assert!(
        lines[1]["tcp"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t[0] == "retrans/s")
    );
    let (_, text) = run_args(&["host", "--watch", "0.1", "--count", "1"]);
    assert!(
        text.contains("rxpck/s") && text.contains("retrans/s"),
        "{text}"
    );
}

#[test]
fn netns_reads_that_namespace() {
    let _turn = crate::common::file_turn(file!());
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root (needs to create a network namespace)");
        return;
    }
    let lab = netdoctor_lab::hostcases::HostLab::create(
        &format!("nd-host-{}-cmd", std::process::id()),
        false,
    )
    .unwrap();
    let srv = lab.server_netns().to_string();
    let _l = lab
        .in_ns(&srv, || TcpListener::bind("0.0.0.0:4242").unwrap())
        .unwrap();
    let (code, out) = run_args(&["host", "--json", "--netns", &srv]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_host_schema(&v);
    let listeners = v["listeners"].as_array().unwrap();
    assert_eq!(listeners.len(), 1, "{listeners:?}");
    assert_eq!(listeners[0]["local"], "0.0.0.0:4242");
    let ifaces: Vec<&str> = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(ifaces, ["lo", "h-srv"]);
}

#[test]
fn unprivileged_host_still_reports_and_names_the_missing_capability() {
    let _turn = crate::common::file_turn(file!());
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipped: needs root and setpriv to drop to nobody without capabilities");
        return;
    }
    let restricted =
        std::fs::read_to_string("/proc/sys/kernel/dmesg_restrict").is_ok_and(|s| s.trim() == "1");
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["host", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(exit_code_for(&v)));
    assert_host_schema(&v);
    // sock_diag, counters, sysctls and interfaces need no privilege.
    assert!(v["listeners"].is_array() && v["sysctls"]["somaxconn"].is_u64());
    assert!(!v["counters"].as_array().unwrap().is_empty());
    let checks = v["checks"].as_array().unwrap();
    if restricted {
        let kmsg = checks
            .iter()
            .find(|c| c["name"] == "kernel_log")
            .expect("kernel_log check");
        assert_eq!(kmsg["status"], "skipped");
        assert!(
            kmsg["reason"]
                .as_str()
                .unwrap()
                .contains("needs CAP_SYSLOG"),
            "{kmsg}"
        );
    }
}

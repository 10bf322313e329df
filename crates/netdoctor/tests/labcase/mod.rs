//! The lab-case tests' shared steps (`lab_cases`, `lab_cases_h2`): start a case through the
//! real binary, run the command it printed, check its promise, stop it and check that nothing
//! is left.
#![allow(dead_code)]

pub use crate::common::ids;
use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The cases measure latencies and load the machine: one at a time.
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Stops the lab by name when dropped (also on a failed assertion).
pub struct Stop(pub String);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = netdoctor(&["lab", "stop", "--name", &self.0]);
    }
}

pub fn name(tag: &str) -> String {
    format!("ndc{}-{tag}", std::process::id())
}

pub fn start(case: &str, name: &str) -> (Value, Stop) {
    let out = netdoctor(&["lab", "start", "--case", case, "--name", name, "--json"]);
    let guard = Stop(name.to_string());
    assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
    (json(&out), guard)
}

/// The command the case printed, as arguments (`netdoctor` first).
pub fn suggested(info: &Value) -> Vec<&str> {
    info["diagnose"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// Runs the command the case printed, through the real binary, with `--json`.
pub fn run_suggested(info: &Value) -> (i32, Value) {
    run_like_suggested(info, &suggested(info))
}

/// Runs `argv` (`netdoctor` first) where the case's command runs (its `ip netns exec`), with
/// `--json`.
pub fn run_like_suggested(info: &Value, argv: &[&str]) -> (i32, Value) {
    assert_eq!(argv[0], "netdoctor");
    let mut cmd = match info["netns_exec"].as_str() {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_netdoctor")]);
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_netdoctor")),
    };
    let out = cmd
        .args(&argv[1..])
        .arg("--json")
        .env("NETDOCTOR_QUIET", "1")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), json(&out))
}

pub fn pid_alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !matches!(s.rsplit_once(") ").map(|(_, r)| &r[..1]), Some("Z")))
}

/// Start, status, the suggested command and its finding, stop, nothing left. Returns the
/// suggested command's report.
pub fn case_round_trip(case: &str, tag: &str) -> Value {
    case_round_trip_with(case, tag, |_| {})
}

/// [`case_round_trip`], with `more` run on the case's info while the lab still runs.
pub fn case_round_trip_with(case: &str, tag: &str, more: impl FnOnce(&Value)) -> Value {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = name(tag);
    let (info, guard) = start(case, &lab);
    assert_eq!(info["case"], case);
    let namespaces: Vec<String> = info["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    for ns in &namespaces {
        assert!(netdoctor_lab::netns_exists(ns), "{case}: {ns} missing");
    }
    let pid = info["pid"].as_u64();
    if case != "nagle" {
        assert!(pid_alive(pid.expect("a case process")), "{case}: {info}");
    }

    // `lab status` shows the case.
    let status = netdoctor(&["lab", "status", "--name", &lab, "--json"]);
    let st = json(&status);
    assert_eq!(st["running"], true, "{case}: {st}");
    if case != "nagle" {
        assert_eq!(st["case"]["case"], case, "{st}");
        assert_eq!(st["case"]["command"], info["command"], "{st}");
    }
    // The flood runs as its own recorded process, ended with the lab.
    let flood_pid = st["case"]["processes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["label"].as_str().is_some_and(|l| l.contains("SYN flood")))
        .map(|p| {
            assert_eq!(p["alive"], true, "{st}");
            p["pid"].as_u64().unwrap()
        });
    assert_eq!(flood_pid.is_some(), case == "syn-flood", "{st}");

    // The suggested command finds what the case promises.
    let (code, report) = run_suggested(&info);
    let expect: Vec<String> = info["expect"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    let found = ids(&report);
    for e in &expect {
        assert!(
            found.contains(e),
            "{case}: `{}` found {found:?}, not {e}: {report}",
            info["command"]
        );
    }
    assert_eq!(code, 1, "{case}: a problem found exits 1: {report}");
    more(&info);

    // Stop: it says what it removed, and nothing is left.
    let out = netdoctor(&["lab", "stop", "--name", &lab]);
    assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    for ns in &namespaces {
        assert!(said.contains(ns), "{case}: stop did not name {ns}: {said}");
    }
    assert_nothing_left(case, &lab, &namespaces, pid);
    if let Some(flood) = flood_pid {
        assert!(!pid_alive(flood), "the flood (hping3 {flood}) still runs");
    }
    drop(guard);
    report
}

pub fn finding<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id}: {report}"))
}

pub fn assert_nothing_left(case: &str, lab: &str, namespaces: &[String], pid: Option<u64>) {
    for ns in namespaces {
        assert!(!netdoctor_lab::netns_exists(ns), "{case}: {ns} left behind");
        assert!(
            !Path::new("/etc/netns").join(ns).exists(),
            "{case}: /etc/netns/{ns} left behind"
        );
    }
    if let Some(pid) = pid {
        assert!(!pid_alive(pid), "{case}: case process {pid} still runs");
    }
    assert!(
        !Path::new(&format!("/run/netdoctor/lab-{lab}")).exists(),
        "{case}: state dir left behind"
    );
}

pub fn skip() -> bool {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return true;
    }
    false
}

//! A demo killed with SIGKILL leaves its lab behind (namespaces, state); `netdoctor lab stop`
//! without `--name` finds and removes it, and a new demo would clean it itself. The same `lab
//! stop` ends a running lab case's process by its recorded PID and removes a case whose process
//! was killed (its router namespaces and /etc/netns dir included). One test in its own binary:
//! `lab stop` without a name removes every lab, so nothing else may run beside it.

use crate::common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn namespaces() -> String {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sigkill_of_demo_then_lab_stop_leaves_nothing() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    // The syn-flood case below runs hping3 and iptables.
    if !netdoctor_lab::tools::have(&[("hping3", "hping3"), ("iptables", "iptables")]) {
        return;
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["demo", "--server", "builtin", "-d", "10s", "-c", "4"])
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ready signal: the demo is diagnosing, so its lab exists.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "demo ended early");
        if line.contains("diagnosing") {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();

    // Two lab cases: one left running, one whose process is killed (SIGKILL: no handler runs).
    let running_case = format!("ndlo{}-run", std::process::id());
    let killed_case = format!("ndlo{}-kill", std::process::id());
    let mut case_netns = Vec::new();
    let mut case_pids = Vec::new();
    for (lab, case) in [(&running_case, "syn-flood"), (&killed_case, "no-dns")] {
        let out = netdoctor(&["lab", "start", "--case", case, "--name", lab, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
        let info = json(&out);
        for ns in info["namespaces"].as_array().unwrap() {
            case_netns.push(ns.as_str().unwrap().to_string());
        }
        case_pids.push(info["pid"].as_u64().unwrap());
    }
    let killed = Command::new("kill")
        .args(["-KILL", &case_pids[1].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(
        namespaces().contains("nd-demo"),
        "the killed demo left no lab?"
    );

    let status = netdoctor(&["lab", "status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("nd-demo"),
        "lab status does not list the leftover: {}",
        String::from_utf8_lossy(&status.stdout)
    );
    let stop = netdoctor(&["lab", "stop"]);
    assert_eq!(stop.status.code(), Some(0), "{}", stderr(&stop));
    // It names what it is about to remove first.
    assert!(
        stderr(&stop).contains("removing every lab netdoctor left")
            && stderr(&stop).contains("nd-demo"),
        "{}",
        stderr(&stop)
    );
    let said = String::from_utf8_lossy(&stop.stdout);
    assert!(
        said.contains("nd-demo"),
        "lab stop did not say what it removed: {said}"
    );
    assert!(!namespaces().contains("nd-demo"), "{}", namespaces());
    for lab in [&running_case, &killed_case] {
        assert!(
            said.contains(lab.as_str()),
            "lab stop did not name {lab}: {said}"
        );
    }
    assert!(said.contains("case process"), "{said}");
    for ns in &case_netns {
        assert!(!netdoctor_lab::netns_exists(ns), "{ns} left behind");
        assert!(
            !std::path::Path::new("/etc/netns").join(ns).exists(),
            "/etc/netns/{ns} left"
        );
    }
    for pid in &case_pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z"),
            "case process {pid} still runs: {stat}"
        );
    }
    let again = netdoctor(&["lab", "stop"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to remove"));
}

//! A demo killed with SIGKILL leaves its lab behind (namespaces, state); `netdoctor lab stop`
//! without `--name` finds and removes it, and a new demo would clean it itself. One test in its
//! own binary: `lab stop` without a name removes every lab, so nothing else may run beside it.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn namespaces() -> String {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sigkill_of_demo_then_lab_stop_leaves_nothing() {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
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
    let said = String::from_utf8_lossy(&stop.stdout);
    assert!(
        said.contains("nd-demo"),
        "lab stop did not say what it removed: {said}"
    );
    assert!(!namespaces().contains("nd-demo"), "{}", namespaces());
    let again = netdoctor(&["lab", "stop"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to remove"));
}

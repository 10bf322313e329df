//! Requests that time out because the server's answer is lost on the path are the path's
//! failure, not the server's (built in namespaces this test creates, as root).
//!
//! client → router → server; the router's link to the client has MTU 1280. With the router's
//! ICMP "fragmentation needed" dropped, the server's full-size segments vanish (a path MTU
//! black hole): the server's kernel resends its answer (eBPF) and nothing reaches the client,
//! so `http_errors` is side network. Look-alikes on the same topology: a server that reads the
//! request and never answers, one that answers after the load's timeout (both stay the
//! server's), random loss on the router (the answers get through: no path failure of this
//! kind) and the same small MTU with ICMP allowed (PMTUD works: no request fails). Every
//! namespace (with its rules) and the server process are removed on drop.

mod common;
use common::*;
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SERVER_IP: &str = "10.252.1.2";

struct PathLab {
    ns: [String; 3],
    server: Option<Child>,
}

impl Drop for PathLab {
    fn drop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().expect("run ip");
    assert!(st.success(), "ip {args:?} failed");
}

/// The topology with the server in `mode` (see `lostanswer/server.py`); `icmp_dropped`: the
/// router drops its own fragmentation-needed; `loss`: the router drops this share of what it
/// forwards to the client.
fn lab(tag: &str, mode: &str, icmp_dropped: bool, loss: Option<&str>) -> PathLab {
    let p = format!("ndla{tag}{}", std::process::id());
    let lab = PathLab {
        ns: [format!("{p}c"), format!("{p}r"), format!("{p}s")],
        server: None,
    };
    let [c, r, s] = &lab.ns;
    for n in &lab.ns {
        ip(&["netns", "add", n]);
        ip(&["-n", n, "link", "set", "lo", "up"]);
    }
    ip(&[
        "link", "add", "la", "netns", c, "type", "veth", "peer", "name", "lb", "netns", r,
    ]);
    ip(&[
        "link", "add", "ld", "netns", r, "type", "veth", "peer", "name", "le", "netns", s,
    ]);
    for (n, dev, addr) in [
        (c, "la", "10.252.0.1/24"),
        (r, "lb", "10.252.0.2/24"),
        (r, "ld", "10.252.1.1/24"),
        (s, "le", "10.252.1.2/24"),
    ] {
        ip(&["-n", n, "addr", "add", addr, "dev", dev]);
        ip(&["-n", n, "link", "set", dev, "up"]);
    }
    ip(&["-n", c, "route", "add", "default", "via", "10.252.0.2"]);
    ip(&["-n", s, "route", "add", "default", "via", "10.252.1.1"]);
    ip(&["netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    ip(&["-n", r, "link", "set", "lb", "mtu", "1280"]);
    if icmp_dropped {
        ip(&[
            "netns",
            "exec",
            r,
            "iptables",
            "-A",
            "OUTPUT",
            "-p",
            "icmp",
            "--icmp-type",
            "fragmentation-needed",
            "-j",
            "DROP",
        ]);
    }
    if let Some(p) = loss {
        ip(&[
            "netns",
            "exec",
            r,
            "iptables",
            "-A",
            "FORWARD",
            "-s",
            SERVER_IP,
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            p,
            "-j",
            "DROP",
        ]);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lostanswer/server.py");
    let mut lab = lab;
    lab.server = Some(
        Command::new("ip")
            .args(["netns", "exec", &lab.ns[2], "/usr/bin/python3", script])
            .args([mode, SERVER_IP, "8080"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the python server"),
    );
    let begun = Instant::now();
    loop {
        let out = Command::new("ip")
            .args(["netns", "exec", &lab.ns[2], "ss", "-Hltn", "sport = :8080"])
            .output()
            .expect("run ss");
        if !out.stdout.is_empty() {
            break;
        }
        assert!(
            begun.elapsed() < Duration::from_secs(20),
            "the server did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    lab
}

fn diagnose(lab: &PathLab, tag: &str) -> Value {
    let url = format!("http://{SERVER_IP}:8080/big");
    let out = netdoctor(&[
        "diagnose", &url, "--netns", &lab.ns[0], "-c", "4", "-d", "4s", "--json",
    ]);
    let r = json(&out);
    assert_schema(&r);
    for f in r["findings"].as_array().unwrap() {
        eprintln!(
            "{tag}: {} {} {} : {}",
            f["id"], f["severity"], f["side"], f["summary"]
        );
    }
    r
}

fn http_errors(r: &Value) -> Option<&Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "http_errors")
}

/// Root, iptables, python3 and eBPF (the server's retransmissions are the evidence).
fn can_run() -> bool {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return false;
    }
    if !netdoctor_bpf::BUILT {
        eprintln!("skipped: needs the eBPF programs (clang at build time)");
        return false;
    }
    netdoctor_lab::tools::have(&[("iptables", "iptables"), ("ss", "iproute2")])
        && std::path::Path::new("/usr/bin/python3").exists()
}

#[test]
fn answers_lost_in_a_path_mtu_black_hole_are_the_paths_failure() {
    if !can_run() {
        return;
    }
    let lab = lab("bh", "big", true, None);
    let r = diagnose(&lab, "black hole");
    let f = http_errors(&r).unwrap_or_else(|| panic!("no http_errors: {r:#}"));
    let m = &r["measurements"];
    eprintln!(
        "kernel: {:#}\ncapture: {:#}",
        m["kernel"], m["capture"]["stats"]
    );
    assert_eq!(f["side"], "network", "{f:#}");
    let s = f["summary"].as_str().unwrap();
    assert!(s.contains("the server answered"), "{s}");
    assert!(r["measurements"]["kernel"]["target_retransmits"].as_u64() > Some(0));
    let (_, pre) = check(&r, "preflight");
    assert!(!pre.contains("not the client's or the path's"), "{pre}");
}

#[test]
fn a_server_that_never_answers_stays_the_servers() {
    if !can_run() {
        return;
    }
    for (tag, mode) in [("hg", "hang"), ("sl", "slow")] {
        let lab = lab(tag, mode, true, None);
        let r = diagnose(&lab, mode);
        let f = http_errors(&r).unwrap_or_else(|| panic!("{mode}: no http_errors: {r:#}"));
        assert_eq!(f["side"], "server", "{mode}: {f:#}");
        assert!(
            !f["summary"].as_str().unwrap().contains("server answered"),
            "{mode}: {f:#}"
        );
    }
}

#[test]
fn random_loss_and_working_pmtud_are_no_lost_answers() {
    if !can_run() {
        return;
    }
    for (tag, dropped, loss) in [("ls", false, Some("0.03")), ("ok", false, None)] {
        let lab = lab(tag, "big", dropped, loss);
        let r = diagnose(&lab, tag);
        if let Some(f) = http_errors(&r) {
            assert_ne!(f["side"], "network", "{tag}: {f:#}");
        }
        let load = &r["measurements"]["load"];
        assert!(load["requests"].as_u64() > Some(0), "{tag}: {load:#}");
    }
}

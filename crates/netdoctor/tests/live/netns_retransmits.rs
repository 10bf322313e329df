//! The eBPF retransmission count of a run is the target's own namespace's, when a neighbouring
//! namespace serves the same address and port (every pod of a node can be `10.x:8080`; this
//! crate's labs are alike). Built as root in namespaces this test creates (`nd-netns-*`, port
//! 19800), removed on drop with their processes.
//!
//! Two client → server pairs with the same addresses: the lossy one's client drops 5 % of
//! what its server sends (iptables in the client's namespace), so that server resends; the
//! clean one's server reads requests and never answers, so it has nothing to resend. The
//! kernel draws ephemeral ports from one sequence for all namespaces, so the lossy client's
//! connections end up on the very 4-tuples the clean run uses; here that is made certain: the
//! clean client may only use ports 19810–19849 and the lossy client holds connections from all
//! of them. Session 13's CI failed so (a hang lab counted 31 retransmits of the black-hole lab
//! beside it; the 4-tuple alone picked the wrong server namespace).

use crate::common::*;
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CLIENT_IP: &str = "10.253.9.1";
const SERVER_IP: &str = "10.253.9.2";
const PORT: &str = "19800";
const HELD: (u16, u16) = (19810, 19849);

struct Pair {
    ns: [String; 2],
    kids: Vec<Child>,
}

impl Drop for Pair {
    fn drop(&mut self) {
        for c in &mut self.kids {
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

fn spawn_in(ns: &str, args: &[&str]) -> Child {
    Command::new("ip")
        .args(["netns", "exec", ns])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a process in the lab")
}

/// A client and a server namespace on one veth; the server runs `lostanswer/server.py` in
/// `mode` and listens when this returns.
fn pair(tag: &str, mode: &str) -> Pair {
    let p = format!("nd-netns-{}-{tag}", std::process::id());
    let mut pair = Pair {
        ns: [format!("{p}c"), format!("{p}s")],
        kids: Vec::new(),
    };
    let [c, s] = pair.ns.clone();
    for n in [&c, &s] {
        ip(&["netns", "add", n]);
        ip(&["-n", n, "link", "set", "lo", "up"]);
    }
    ip(&[
        "link", "add", "va", "netns", &c, "type", "veth", "peer", "name", "vb", "netns", &s,
    ]);
    for (n, dev, addr) in [(&c, "va", CLIENT_IP), (&s, "vb", SERVER_IP)] {
        ip(&["-n", n, "addr", "add", &format!("{addr}/24"), "dev", dev]);
        ip(&["-n", n, "link", "set", dev, "up"]);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lostanswer/server.py");
    pair.kids.push(spawn_in(
        &s,
        &["/usr/bin/python3", script, mode, SERVER_IP, PORT],
    ));
    let begun = Instant::now();
    while Command::new("ip")
        .args(["netns", "exec", &s, "ss", "-Hltn", "sport = :19800"])
        .output()
        .expect("run ss")
        .stdout
        .is_empty()
    {
        assert!(begun.elapsed() < Duration::from_secs(20), "no listener");
        std::thread::sleep(Duration::from_millis(100));
    }
    pair
}

/// In the lossy pair's client: holds a connection from every port in `HELD` and fetches the
/// 200 KB answer over and over for `secs` seconds (5 % of it dropped: the server resends).
const LOSSY_CLIENT: &str = r#"
import socket, sys, time
lo, hi, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
held = []
for p in range(lo, hi + 1):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("10.253.9.1", p)); s.connect(("10.253.9.2", 19800)); held.append(s)
end = time.time() + secs
while time.time() < end:
    try:
        s = socket.create_connection(("10.253.9.2", 19800), timeout=2)
        s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while s.recv(65536): pass
        s.close()
    except OSError:
        pass
"#;

fn kernel(r: &Value) -> &Value {
    &r["measurements"]["kernel"]
}

#[test]
fn a_neighbours_retransmits_on_the_same_address_are_not_counted() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    if !netdoctor_bpf::BUILT {
        eprintln!("skipped: needs the eBPF programs (clang at build time)");
        return;
    }
    if !netdoctor_lab::tools::have(&[("iptables", "iptables"), ("ss", "iproute2")])
        || !std::path::Path::new("/usr/bin/python3").exists()
    {
        eprintln!("skipped: needs python3");
        return;
    }
    // The lossy pair first: its server has the lower pid, the one a tie went to.
    let mut lossy = pair("l", "big");
    let clean = pair("c", "hang");
    let lc = lossy.ns[0].clone();
    ip(&[
        "netns",
        "exec",
        &lc,
        "iptables",
        "-A",
        "INPUT",
        "-p",
        "tcp",
        "--sport",
        PORT,
        "-m",
        "statistic",
        "--mode",
        "random",
        "--probability",
        "0.05",
        "-j",
        "DROP",
    ]);
    ip(&[
        "netns",
        "exec",
        &clean.ns[0],
        "sysctl",
        "-qw",
        &format!("net.ipv4.ip_local_port_range={} {}", HELD.0, HELD.1),
    ]);
    let (lo, hi) = (HELD.0.to_string(), HELD.1.to_string());
    lossy.kids.push(spawn_in(
        &lc,
        &["/usr/bin/python3", "-c", LOSSY_CLIENT, &lo, &hi, "40"],
    ));
    std::thread::sleep(Duration::from_secs(2));
    let url = format!("http://{SERVER_IP}:{PORT}/big");
    // 2 s runs: the lossy server resends many times a second, so a 2 s window of the clean run
    // holds plenty of its neighbour's retransmissions to miscount, and the lossy run's own.
    // The clean server never answers: its requests time out after 1 s, not the default 2 s
    // (the preflight's, the probe's and the load's last ones each waited that out).
    let mut all = vec!["--netns", clean.ns[0].as_str()];
    all.extend(["-c", "4", "-d", "2s", "--timeout", "1s"]);
    let r = diagnose_json("clean", &url, &all);
    let k = kernel(&r);
    eprintln!("clean: {k:#}");
    assert_eq!(k["server_netns"], true, "{k:#}");
    assert_eq!(k["target_retransmits"], 0, "{k:#}");
    assert_eq!(k["retransmits_total"], 0, "{k:#}");
    let mut all = vec!["--netns", lc.as_str()];
    all.extend(["-c", "4", "-d", "2s"]);
    let r = diagnose_json("lossy", &url, &all);
    let k = kernel(&r);
    eprintln!("lossy: {k:#}");
    assert_eq!(k["server_netns"], true, "{k:#}");
    assert!(k["target_retransmits"].as_u64() > Some(0), "{k:#}");
}

//! A real spoofed SYN flood (hping3 `--rand-source`, bounded in count) from one namespace to
//! a listener in another, captured there by tcpdump and analyzed: the analyzer keeps at most
//! `MAX_HALF_OPEN` half-open connections (the rest are evicted, oldest first, and counted),
//! and the server's repeated SYN/ACKs (Linux repeats those of its SYN queue after 1 s to the
//! spoofed clients that never answer) still make the `syn_retransmit` finding, the same with
//! `-j 1` and `-j 2`: info, on the clients' side (they never answered; nobody waited).
//!
//! Namespaces `ndagfS<pid>`/`ndagfC<pid>`, the listener, tcpdump and hping3 are removed or
//! ended by PID when the test ends, also on failure.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{is_root, json, netdoctor};
use netdoctor_core::analyze::{MAX_HALF_OPEN, MAX_TOMBS};

const SYNS: u32 = 20_000;

struct Lab {
    ns: [String; 2],
    children: Vec<Child>,
    dir: std::path::PathBuf,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().expect("run ip");
    assert!(st.success(), "ip {args:?}: {st}");
}

fn missing_tool() -> Option<&'static str> {
    for (bin, pkg) in [
        ("/usr/sbin/hping3", "hping3"),
        ("/usr/bin/tcpdump", "tcpdump"),
        ("/usr/bin/python3", "python3"),
    ] {
        if !Path::new(bin).exists() {
            eprintln!("skipped: needs {bin} (apt-get install {pkg})");
            return Some(bin);
        }
    }
    None
}

#[test]
fn spoofed_syn_flood_is_capped_and_still_a_syn_retransmit() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    if missing_tool().is_some() {
        return;
    }
    let pid = std::process::id();
    let (s, c) = (format!("ndagfS{pid}"), format!("ndagfC{pid}"));
    let mut lab = Lab {
        ns: [s.clone(), c.clone()],
        children: Vec::new(),
        dir: std::env::temp_dir().join(format!("ndagf{pid}")),
    };
    std::fs::create_dir_all(&lab.dir).unwrap();
    ip(&["netns", "add", &s]);
    ip(&["netns", "add", &c]);
    let (vs, vc) = (format!("ndfs{pid}"), format!("ndfc{pid}"));
    ip(&[
        "link", "add", &vs, "netns", &s, "type", "veth", "peer", "name", &vc, "netns", &c,
    ]);
    ip(&["-n", &s, "addr", "add", "10.231.7.1/24", "dev", &vs]);
    ip(&["-n", &c, "addr", "add", "10.231.7.2/24", "dev", &vc]);
    for (ns, dev) in [(&s, &vs), (&c, &vc)] {
        ip(&["-n", ns, "link", "set", dev, "up"]);
        ip(&["-n", ns, "link", "set", "lo", "up"]);
    }
    // SYN/ACKs to the spoofed sources leave towards the client namespace, which drops them
    // (no forwarding): no client ever answers.
    ip(&["-n", &s, "route", "add", "default", "via", "10.231.7.2"]);

    // A listener that never accepts.
    let mut listener = Command::new("ip")
        .args(["netns", "exec", &s, "/usr/bin/python3", "-c"])
        .arg(
            "import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
             s.bind(('10.231.7.1',8080))\ns.listen(4096)\nprint('ready',flush=True)\ntime.sleep(120)",
        )
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the listener");
    let out = listener.stdout.take().unwrap();
    lab.children.push(listener);
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");

    let pcap = lab.dir.join("flood.pcap");
    let mut dump = Command::new("ip")
        .args([
            "netns", "exec", &s, "tcpdump", "-i", &vs, "-s", "128", "-U", "-B", "16384",
        ])
        .args(["-w", pcap.to_str().unwrap(), "tcp port 8080"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tcpdump");
    let err = dump.stderr.take().unwrap();
    lab.children.push(dump);
    let mut line = String::new();
    BufReader::new(err).read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "tcpdump: {line}");

    let t0 = Instant::now();
    let st = Command::new("timeout")
        .args([
            "60", "ip", "netns", "exec", &c, "hping3", "-q", "-S", "-p", "8080",
        ])
        .args([
            "-c",
            &SYNS.to_string(),
            "-i",
            "u20",
            "--rand-source",
            "10.231.7.1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run hping3");
    eprintln!("hping3: {SYNS} SYNs in {:?} ({st})", t0.elapsed());
    // The SYN queue's SYN/ACKs are repeated 1 s after the first, then 3 s.
    std::thread::sleep(Duration::from_millis(3500));
    // tcpdump writes its last packets on SIGINT (its child: `ip netns exec` execs it).
    let dump_pid = lab.children[1].id();
    // kill(1) by the PID of the tcpdump this test started.
    let _ = Command::new("kill")
        .args(["-INT", &dump_pid.to_string()])
        .status();
    let _ = lab.children[1].wait();

    let mut reports = Vec::new();
    for j in ["1", "2"] {
        let o = netdoctor(&[
            "analyze",
            "--format",
            "json",
            "-j",
            j,
            pcap.to_str().unwrap(),
        ]);
        // 3, inconclusive: no request was made, and SYN/ACKs repeated to clients that never
        // answered slowed nobody (an info finding on the clients' side).
        assert!(o.status.code().is_some_and(|c| c <= 3), "{o:?}");
        reports.push(json(&o));
    }
    let r = &reports[0];
    let stats = &r["measurements"]["capture"]["stats"];
    let n = |k: &str| stats[k].as_u64().unwrap_or(0);
    let (opened, evicted) = (n("connections_with_handshake"), n("half_open_evicted"));
    eprintln!(
        "opened {opened}, half-open evicted {evicted}, SYN retransmits {}, capture drops {}",
        n("syn_retransmits"),
        n("capture_drops")
    );
    assert!(opened > (MAX_HALF_OPEN + MAX_TOMBS) as u64, "{stats}");
    // At the end at most the cap is still held: all the others were evicted.
    assert!(
        evicted >= opened - MAX_HALF_OPEN as u64 && evicted < opened,
        "{stats}"
    );
    assert!(n("syn_retransmits") > 0, "{stats}");
    let findings = r["findings"].as_array().unwrap();
    let f = findings
        .iter()
        .find(|f| f["id"] == "syn_retransmit")
        .unwrap_or_else(|| panic!("no syn_retransmit in {findings:#?}"));
    let summary = f["summary"].as_str().unwrap();
    eprintln!("{summary}");
    assert!(summary.contains("SYN/ACK"), "{summary}");
    // Spoofed sources never answer a SYN/ACK: the repeats are theirs, not a slow server's.
    assert_eq!(
        (&f["side"], &f["severity"]),
        (&"client".into(), &"info".into()),
        "{f:#}"
    );
    let warned = r["measurements"]["capture"]["warnings"]
        .as_array()
        .unwrap()
        .iter();
    assert!(
        warned
            .clone()
            .any(|w| w.as_str().unwrap().contains("half-open")),
        "{:?}",
        r["measurements"]["capture"]["warnings"]
    );
    // The half-open cap is per worker: the two-worker run also evicted, and saw the same
    // flood (the finding and the repeats).
    let r2 = &reports[1];
    let s2 = &r2["measurements"]["capture"]["stats"];
    assert!(s2["half_open_evicted"].as_u64().unwrap_or(0) > 0, "{s2}");
    assert!(
        r2["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["id"] == "syn_retransmit")
    );
}

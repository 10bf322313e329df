//! The bulk-transfer lab cases (`lab start --case small-wmem|small-rmem|path-loss|shaper|
//! mtu-blackhole|slow-writer|small-mss|softirq-bound`): each is started through the real binary, the command it prints
//! is run (plus `--json`), and the report must name that case's limit and none of the others
//! (the look-alikes: a shaper, a small receive window and a slow writer all give a flat rate;
//! a shaper's full queue and random loss both retransmit; a saturated receive softirq queues
//! like a shaper; the small receive window and the slow writer must not read as softirq). Then the lab is stopped by name and
//! nothing of it may be left. A small send buffer is also run over the `far-l2` lab's 40 ms
//! bridge (the form a path of milliseconds shows: never idle, the kernel's sndbuf-limited clock),
//! and a shaper at the far end of the `far-server` lab's 37 ms path (bbr keeps its queue small).
//! Needs root, iptables, tc and ethtool (skips with one line).

use crate::common::*;
use serde_json::Value;
use std::process::Command;

/// The transfers load the machine: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The transfer-limit ids: a report names exactly one of them.
const LIMITS: [&str; 7] = [
    "send_buffer_limited",
    "receive_window_limited",
    "congestion_limited",
    "shaper_limited",
    "mss_mtu_problem",
    "application_limited",
    "receiver_softirq_saturated",
];

struct Stop(String);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = netdoctor(&["lab", "stop", "--name", &self.0]);
    }
}

fn skipped() -> bool {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return true;
    }
    for (tool, pkg) in [
        ("/usr/sbin/iptables", "iptables"),
        ("/usr/sbin/tc", "iproute2"),
        ("/usr/sbin/ethtool", "ethtool"),
    ] {
        if !std::path::Path::new(tool).exists() {
            eprintln!("skipped: needs {tool} (apt-get install {pkg})");
            return true;
        }
    }
    false
}

/// Starts the case, runs its command, stops it; returns the command's report.
fn run_case(case: &str) -> Value {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = format!(
        "ndbulk{}-{}",
        std::process::id(),
        &case[..case.len().min(6)]
    );
    let out = netdoctor(&["lab", "start", "--case", case, "--name", &lab, "--json"]);
    let guard = Stop(lab.clone());
    assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
    let info = json(&out);
    let argv: Vec<&str> = info["diagnose"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv[..2], ["netdoctor", "throughput"], "{info}");
    let ns = info["netns_exec"].as_str().expect("run in the client");
    assert!(
        info["command"]
            .as_str()
            .unwrap()
            .starts_with(&format!("ip netns exec {ns} netdoctor throughput ")),
        "{info}"
    );
    let run = Command::new("ip")
        .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_netdoctor")])
        .args(&argv[1..])
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{case}: {}", stderr(&run));
    let report = json(&run);
    let namespaces: Vec<String> = info["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let stop = netdoctor(&["lab", "stop", "--name", &lab]);
    assert_eq!(stop.status.code(), Some(0), "{case}: {}", stderr(&stop));
    for n in &namespaces {
        assert!(!netdoctor_lab::netns_exists(n), "{case}: {n} left behind");
    }
    if let Some(pid) = info["pid"].as_u64() {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z")),
            "{case}: case process {pid} still runs"
        );
    }
    drop(guard);
    let expect = info["expect"][0].as_str().unwrap().to_string();
    let found: Vec<&str> = report["findings"]
        .as_array()
        .map(|v| v.iter().filter_map(|f| f["id"].as_str()).collect())
        .unwrap_or_default();
    let limits: Vec<&str> = found
        .iter()
        .copied()
        .filter(|id| LIMITS.contains(id))
        .collect();
    assert_eq!(
        limits,
        [expect.as_str()],
        "{case}: expected only {expect}: {}\nsender tcp_info: {}\nintervals: {}\nreceiver_cpu: {}",
        serde_json::to_string_pretty(&report["findings"]).unwrap(),
        report["sender_tcp_info"],
        report["intervals"],
        report["receiver_cpu"]
    );
    report
}

fn finding<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap()
}

#[test]
fn a_small_send_buffer_is_send_buffer_limited() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let r = run_case("small-wmem");
    let f = finding(&r, "send_buffer_limited");
    assert_eq!(f["side"], "client", "{f}");
    assert!(
        f.to_string().contains("tcp_wmem = 4096 16384 16384"),
        "the sysctl is evidence: {f}"
    );
}

#[test]
fn a_small_receive_buffer_is_receive_window_limited() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let r = run_case("small-rmem");
    assert_eq!(finding(&r, "receive_window_limited")["side"], "server");
}

#[test]
fn random_loss_is_congestion_limited() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let r = run_case("path-loss");
    let f = finding(&r, "congestion_limited");
    assert_eq!(f["side"], "network");
    assert!(r["end"]["sum_sent"]["retransmits"].as_i64().unwrap() > 0);
}

#[test]
fn an_htb_shaper_is_shaper_limited() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let r = run_case("shaper");
    let f = finding(&r, "shaper_limited");
    assert_eq!(f["side"], "network");
    // The shaper's rate, within 15 %.
    let bps = r["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    assert!((85e6..=115e6).contains(&bps), "{bps}");
}

#[test]
fn a_small_mtu_hop_without_icmp_is_an_mtu_black_hole() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let r = run_case("mtu-blackhole");
    let f = finding(&r, "mss_mtu_problem");
    assert_eq!(f["severity"], "critical");
    assert!(r["end"]["sum_received"]["bytes"].as_u64().unwrap() < 100_000);
}

#[test]
fn a_rate_limited_writer_is_application_limited() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let r = run_case("slow-writer");
    assert_eq!(finding(&r, "application_limited")["side"], "client");
}

/// A router clamping the MSS to 536: `mss_mtu_problem` as a small MSS, a warning, and not the
/// black hole (the data arrives, the summary names the MSS).
#[test]
fn an_mss_clamp_is_a_small_mss_not_a_black_hole() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let r = run_case("small-mss");
    let f = finding(&r, "mss_mtu_problem");
    assert_eq!(f["severity"], "warning", "{f}");
    let summary = f["summary"].as_str().unwrap();
    assert!(summary.contains("MSS is 524 bytes"), "{summary}");
    assert!(!summary.contains("vanish"), "{summary}");
    assert!(r["end"]["sum_received"]["bytes"].as_u64().unwrap() > 10_000_000);
}

/// 10,000 iptables rules walked per packet in the receiver's softirq on the one CPU RPS
/// steers to: `receiver_softirq_saturated` names that CPU, and not a shaper (its backlog queues
/// like one) or loss.
#[test]
fn a_receiver_cpu_saturated_in_softirq() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let r = run_case("softirq-bound");
    let f = finding(&r, "receiver_softirq_saturated");
    assert_eq!(f["side"], "server", "{f}");
    let cpu = netdoctor_lab::bulk_lab::softirq_cpu();
    let summary = f["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("CPU {cpu} was saturated")),
        "{summary}\n{}",
        r["receiver_cpu"]
    );
    let top = &r["receiver_cpu"]["busiest"][0];
    assert_eq!(
        top["cpu"].as_u64(),
        Some(cpu as u64),
        "{}",
        r["receiver_cpu"]
    );
    assert!(top["softirq"].as_f64().unwrap() >= 0.25, "{top}");
    assert!(top["time_squeeze"].as_u64().unwrap() > 0, "{top}");
}

/// Kills the throughput server it holds, by PID, also when the test fails.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One 5 s transfer from the route lab `lab`'s client to `throughput --server` started in its
/// server namespace (waited for until it listens, at most 5 s; killed after): the report.
fn transfer_in_route_lab(lab: &str) -> Value {
    let (cli, srv) = (format!("{lab}-cli"), format!("{lab}-srv"));
    let _server = Server(
        Command::new("ip")
            .args(["netns", "exec", &srv, env!("CARGO_BIN_EXE_netdoctor")])
            .args(["throughput", "--server", "--one-off"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t0 = std::time::Instant::now();
    while !String::from_utf8_lossy(
        &Command::new("ip")
            .args(["netns", "exec", &srv, "ss", "-Hltn", "sport = :5201"])
            .output()
            .unwrap()
            .stdout,
    )
    .contains("5201")
    {
        assert!(
            t0.elapsed().as_secs() < 5,
            "the server in {srv} never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let server = netdoctor_lab::route_lab::SERVER_IP.to_string();
    let o = Command::new("ip")
        .args(["netns", "exec", &cli, env!("CARGO_BIN_EXE_netdoctor")])
        .args(["throughput", &server, "-t", "5", "--json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{lab}: {}", stderr(&o));
    json(&o)
}

/// The transfer-limit ids a report names.
fn limits_of(r: &Value) -> Vec<String> {
    r["findings"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(|f| f["id"].as_str())
                .filter(|id| LIMITS.contains(id))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `ip netns exec NS ARGS…`, which must succeed.
fn in_ns(ns: &str, args: &[&str]) {
    let st = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(args)
        .status()
        .unwrap();
    assert!(st.success(), "{ns}: {args:?}");
}

/// A send buffer that limits the textbook way: 16 KB over the `far-l2` lab's 40 ms bridge,
/// where the connection is never idle (the buffer empties into the network and waits a round
/// trip for its ACKs) and the kernel counts the writer short of buffer. The bulk lab's
/// small-wmem case only shows the other form (a path of µs: idle gaps). The look-alike on the
/// same path: the default buffer (4 MB) is not the limit. The client's `tcp_wmem` is set
/// inside its namespace.
#[test]
fn a_small_send_buffer_over_a_long_path_is_send_buffer_limited() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = format!("ndbulk{}-far", std::process::id());
    let out = netdoctor(&["lab", "start", "--case", "far-l2", "--name", &lab, "--json"]);
    let guard = Stop(lab.clone());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let cli = format!("{lab}-cli");
    in_ns(
        &cli,
        &["sysctl", "-qw", "net.ipv4.tcp_wmem=4096 16384 16384"],
    );
    let small = transfer_in_route_lab(&lab);
    in_ns(
        &cli,
        &["sysctl", "-qw", "net.ipv4.tcp_wmem=4096 16384 4194304"],
    );
    let default = transfer_in_route_lab(&lab);
    drop(guard);
    assert!(!netdoctor_lab::netns_exists(&cli), "{cli} left behind");
    assert_eq!(
        limits_of(&small),
        ["send_buffer_limited"],
        "{}\nsender tcp_info: {}\nintervals: {}",
        small["findings"],
        small["sender_tcp_info"],
        small["intervals"]
    );
    let f = finding(&small, "send_buffer_limited");
    assert_eq!(f["side"], "client", "{f}");
    assert!(
        f["explanation"]
            .as_str()
            .unwrap()
            .contains("sndbuf-limited"),
        "the kernel's clock is the evidence: {f}"
    );
    assert!(
        !limits_of(&default).contains(&"send_buffer_limited".to_string()),
        "{}",
        default["findings"]
    );
}

/// A shaper far away: htb at 50 Mbit/s (200-packet pfifo) on the last router of the
/// `far-server` lab's 37 ms path, the sender on bbr (this machine's default), which keeps the
/// shaper's queue to a few ms (RTT 40–47 ms against 37) and about half its cwnd in flight: the
/// rule wanted the RTT doubled and half the cwnd in flight at most edges, and found nothing.
/// The look-alike: the same path without the shaper (the user-space bridge sets ~720 Mbit/s,
/// retransmitting, with no queue) is not a shaper. The qdisc is set inside the lab's router
/// namespace.
#[test]
fn a_shaper_far_away_is_shaper_limited_under_bbr() {
    let _turn = crate::common::file_turn(file!());
    if skipped() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = format!("ndbulk{}-fsh", std::process::id());
    let out = netdoctor(&[
        "lab",
        "start",
        "--case",
        "far-server",
        "--name",
        &lab,
        "--json",
    ]);
    let guard = Stop(lab.clone());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let open = transfer_in_route_lab(&lab);
    let r2 = format!("{lab}-r2");
    for tc in [
        "qdisc add dev r2-srv root handle 1: htb default 10",
        "class add dev r2-srv parent 1: classid 1:10 htb rate 50mbit ceil 50mbit",
        "qdisc add dev r2-srv parent 1:10 handle 10: pfifo limit 200",
    ] {
        let mut args = vec!["tc"];
        args.extend(tc.split(' '));
        in_ns(&r2, &args);
    }
    let shaped = transfer_in_route_lab(&lab);
    drop(guard);
    assert!(!netdoctor_lab::netns_exists(&r2), "{r2} left behind");
    assert_eq!(
        limits_of(&shaped),
        ["shaper_limited"],
        "{}\nsender tcp_info: {}\nintervals: {}",
        shaped["findings"],
        shaped["sender_tcp_info"],
        shaped["intervals"]
    );
    assert_eq!(finding(&shaped, "shaper_limited")["side"], "network");
    assert!(
        !limits_of(&open).contains(&"shaper_limited".to_string()),
        "{}",
        open["findings"]
    );
}

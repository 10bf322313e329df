//! One root, its consequences under it, on real loss built in namespaces this test creates:
//!
//! - a lossy hop on a routed path (netdoctor-lab's route lab: cli → r1 → loss hop → r2 → srv):
//!   `route_problem` (path loss) is the root; the repeated SYNs, RTOs and lost segments the
//!   packets show are its consequences (`caused_by`), side network, never the server's;
//! - SYNs dropped at the server (iptables `-m statistic` in the server's namespace of a
//!   `HostLab`) so connects take 1 s or 3 s: netdoctor's own 2 s timeout cuts the 3 s ones.
//!   Those are `http_errors` on the client side tied to `syn_retransmit`, never the server's.
//!
//! Each asserts the finding, its side, its severity and the verdict. Every namespace (with its
//! iptables rules) is removed on drop, also when an assertion fails.

use crate::common::*;
use netdoctor_lab::builtin::BuiltinServers;
use netdoctor_lab::hostcases::{HOST_SERVER_IP, HostLab};
use netdoctor_lab::route_lab::{RouteLab, RouteLabConfig, SERVER_IP};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

fn findings(r: &Value) -> &Vec<Value> {
    r["findings"].as_array().unwrap()
}

fn ids(r: &Value) -> Vec<&str> {
    findings(r)
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect()
}

fn at_least_warning(f: &Value) -> bool {
    f["severity"] == "warning" || f["severity"] == "critical"
}

#[test]
fn a_lossy_hop_is_the_root_and_the_lost_syns_and_rtos_are_its_consequences() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    // 20 % each way through the middle hop: about 36 % of round trips lose a packet.
    let lab = RouteLab::start(&RouteLabConfig {
        loss: 0.2,
        ..Default::default()
    })
    .expect("start route lab");
    let server = netdoctor_lab::in_netns(lab.server_netns(), || {
        BuiltinServers::start(&[((SERVER_IP, 8080).into(), true)])
    })
    .expect("enter the server namespace")
    .expect("start the built-in server");
    let url = format!("http://{SERVER_IP}:8080/");
    // A connection per request, so the SYNs meet the loss too.
    let out = Command::new("ip")
        .args(["netns", "exec", lab.client_netns()])
        .arg(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["diagnose", &url, "-c", "8", "-d", "4s", "--no-keepalive"])
        .arg("--json")
        .env("NETDOCTOR_QUIET", "1")
        .output()
        .expect("run netdoctor");
    let r = json(&out);
    assert_schema(&r);
    for f in findings(&r) {
        eprintln!(
            "lossy hop: {} {} {} caused_by={} : {}",
            f["id"], f["severity"], f["side"], f["caused_by"], f["summary"]
        );
    }
    assert_eq!(r["verdict"], "problem", "{r:#}");
    // The root: the trace's lossy hop (`route_problem`), or, when the diagnosis's short trace
    // did not place the loss, the loss the packets show on the path.
    let root = &findings(&r)[0];
    let root_id = root["id"].as_str().unwrap();
    assert!(
        ["route_problem", "packet_loss_retransmission"].contains(&root_id),
        "the root ranks first: {:?}",
        ids(&r)
    );
    assert_eq!(root["side"], "network", "{root:#}");
    assert!(at_least_warning(root), "{root:#}");
    assert!(root["caused_by"].is_null(), "{root:#}");
    // What the loss caused sits under it (the client's own resets are its own); at least one
    // such consequence was seen.
    let consequences: Vec<&Value> = findings(&r)
        .iter()
        .skip(1)
        .filter(|f| f["side"] != "client")
        .filter(|f| {
            [
                "route_problem",
                "syn_retransmit",
                "retransmission_timeout",
                "packet_loss_retransmission",
                "connection_reset",
                // Abandoned handshakes look like refused connects in the packets.
                "server_not_listening",
            ]
            .contains(&f["id"].as_str().unwrap())
        })
        .collect();
    assert!(!consequences.is_empty(), "{:?}", ids(&r));
    let listed: Vec<&str> = root["consequences"]
        .as_array()
        .map(|v| v.iter().map(|x| x.as_str().unwrap()).collect())
        .unwrap_or_default();
    for c in &consequences {
        assert_eq!(c["caused_by"], root_id, "{c:#}");
        assert_ne!(c["side"], "server", "{c:#}");
        assert!(listed.contains(&c["id"].as_str().unwrap()), "{listed:?}");
    }
    // Handshakes abandoned on the lossy path are not "nothing listens": the text says what
    // was seen (N abandoned while others completed, or the client's own resets) and that the
    // path loss explains it, and it is never critical.
    if let Some(f) = finding(&r, "server_not_listening") {
        let summary = f["summary"].as_str().unwrap();
        assert!(!summary.contains("Nothing listens"), "{f:#}");
        assert!(summary.contains("abandoned before completing"), "{f:#}");
        assert!(
            summary.ends_with(&format!("consistent with the loss on the path ({root_id})")),
            "{f:#}"
        );
        assert_ne!(f["severity"], "critical", "{f:#}");
        assert_eq!(f["evidence"][0]["probe"], "handshakes", "{f:#}");
    }
    // Nothing here is the server's doing, and the segments the path lost never reached the
    // client's host (the capture is after the loss): never retold on the client's side.
    for f in findings(&r) {
        if f["side"] == "server" {
            assert_eq!(f["severity"], "info", "{f:#}");
        }
        if ["packet_loss_retransmission", "retransmission_timeout"]
            .contains(&f["id"].as_str().unwrap())
        {
            assert_ne!(f["side"], "client", "{f:#}");
        }
    }
    server.stop();
    lab.stop().unwrap();
}

#[test]
fn connects_cut_by_netdoctors_own_timeout_are_client_side_and_tied_to_the_syn_retransmits() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    if !netdoctor_lab::tools::have(&[("iptables", "iptables")]) {
        return;
    }
    let lab =
        HostLab::create(&format!("ndsyn-{}", std::process::id()), false).expect("create netns");
    let server = lab
        .in_ns(lab.server_netns(), || {
            BuiltinServers::start(&[((HOST_SERVER_IP, 8080).into(), true)])
        })
        .unwrap()
        .expect("start the built-in server");
    // Half of the SYNs dropped: connects take 0 s, 1 s, 3 s (cut by the 2 s timeout), 7 s …
    let st = lab
        .command(lab.server_netns(), "iptables")
        .unwrap()
        .args(["-A", "INPUT", "-p", "tcp", "--syn", "--dport", "8080"])
        .args([
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            "0.5",
        ])
        .args(["-j", "DROP"])
        .status()
        .expect("run iptables");
    assert!(st.success(), "iptables failed");
    let url = format!("http://{HOST_SERVER_IP}:8080/");
    let r = diagnose_json(
        "SYN drops",
        &url,
        &[
            "--netns",
            lab.client_netns(),
            "-c",
            "16",
            "-d",
            "5s",
            "--no-keepalive",
        ],
    );
    assert_eq!(r["verdict"], "problem", "{r:#}");
    let syn = finding(&r, "syn_retransmit").unwrap_or_else(|| panic!("{:?}", ids(&r)));
    assert!(at_least_warning(syn), "{syn:#}");
    let load = &r["measurements"]["load"];
    let timeouts = load["errors"]["timeout"].as_u64().unwrap_or(0);
    if timeouts > 0 {
        let e = finding(&r, "http_errors").unwrap_or_else(|| panic!("{r:#}"));
        assert_eq!(e["side"], "client", "{e:#}");
        assert_eq!(e["caused_by"], "syn_retransmit", "{e:#}");
        assert!(
            e["summary"]
                .as_str()
                .unwrap()
                .contains("netdoctor's own timeout cut"),
            "{e:#}"
        );
    } else {
        eprintln!("no connect was cut this time: {load:#}");
    }
    assert!(
        !findings(&r)
            .iter()
            .any(|f| f["id"] == "http_errors" && f["side"] == "server"),
        "{r:#}"
    );
    drop(server);
    std::thread::sleep(Duration::from_millis(10));
}

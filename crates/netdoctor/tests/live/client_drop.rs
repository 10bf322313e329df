//! Packets dropped on the client's own host, after they reached it, are the client's problem,
//! not the path's and not the server's (built in namespaces this test creates, as root).
//!
//! `diagnose` captures in the client's namespace, on its interface, before the client's
//! firewall. A server segment (or SYN/ACK) the capture saw arrive and the client never
//! acknowledged, sent again by the server, was dropped inside the client's host: an INPUT
//! rule, a full receive buffer, a bad checksum. The look-alike drops the same share in the
//! server's OUTPUT: the capture never sees the first copy, and that is loss before the client
//! (network side, as before), and a response body lost there and resent after the client's
//! delayed ACK is not Nagle. Every namespace and its iptables rules are removed on drop.

use crate::common::*;
use netdoctor_lab::builtin::BuiltinServers;
use netdoctor_lab::hostcases::{HOST_SERVER_IP, HostLab};
use serde_json::Value;

fn findings(r: &Value) -> &Vec<Value> {
    r["findings"].as_array().unwrap()
}

/// Diagnoses the built-in server with 5 % of the server's packets dropped by an iptables rule
/// in `chain` of the client's (`INPUT`) or the server's (`OUTPUT`) namespace.
fn run_with_drop(tag: &str, client_side: bool) -> Value {
    let lab =
        HostLab::create(&format!("ndcd{tag}-{}", std::process::id()), false).expect("create netns");
    let server = lab
        .in_ns(lab.server_netns(), || {
            BuiltinServers::start(&[((HOST_SERVER_IP, 8080).into(), true)])
        })
        .unwrap()
        .expect("start the built-in server");
    let (ns, chain, port_opt) = if client_side {
        (lab.client_netns(), "INPUT", "--sport")
    } else {
        (lab.server_netns(), "OUTPUT", "--sport")
    };
    let st = lab
        .command(ns, "iptables")
        .unwrap()
        .args(["-A", chain, "-p", "tcp", port_opt, "8080"])
        .args([
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            "0.05",
        ])
        .args(["-j", "DROP"])
        .status()
        .expect("run iptables");
    assert!(st.success(), "iptables failed");
    let url = format!("http://{HOST_SERVER_IP}:8080/");
    let r = diagnose_json(
        tag,
        &url,
        &["--netns", lab.client_netns(), "-c", "8", "-d", "3s"],
    );
    drop(server);
    r
}

/// The findings retold on the client's side (fast retransmissions and tail-loss probes too:
/// the look-alike on a lossy routed path is told apart in `detect/loss/arrived.rs` and tested
/// in `lossy_path.rs`).
const LOSS_IDS: [&str; 3] = [
    "retransmission_timeout",
    "syn_retransmit",
    "packet_loss_retransmission",
];

#[test]
fn segments_dropped_by_the_clients_own_firewall_are_the_clients_side() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    if !netdoctor_lab::tools::have(&[("iptables", "iptables")]) {
        return;
    }
    let r = run_with_drop("in", true);
    let lost: Vec<&Value> = findings(&r)
        .iter()
        .filter(|f| LOSS_IDS.contains(&f["id"].as_str().unwrap()))
        .collect();
    assert!(!lost.is_empty(), "no loss finding: {r:#}");
    for f in &lost {
        assert_eq!(f["side"], "client", "{f:#}");
        let text = format!("{} {}", f["summary"], f["explanation"]);
        assert!(text.contains("client's host"), "{f:#}");
    }
    // Nothing is blamed on the server above info.
    for f in findings(&r) {
        if f["side"] == "server" {
            assert_eq!(f["severity"], "info", "{f:#}");
        }
    }

    // The look-alike: the same share dropped before the capture (the server's OUTPUT). The
    // capture never saw the first copies: lost before the client, not the client's doing.
    let r = run_with_drop("out", false);
    let lost: Vec<&Value> = findings(&r)
        .iter()
        .filter(|f| LOSS_IDS.contains(&f["id"].as_str().unwrap()))
        .collect();
    assert!(!lost.is_empty(), "no loss finding: {r:#}");
    for f in &lost {
        assert_ne!(f["side"], "client", "{f:#}");
    }
    // The built-in server writes each response with TCP_NODELAY: a body dropped in its OUTPUT
    // and resent right after the client's delayed ACK of the header is loss, not Nagle (the
    // IPv4 ids show the packet the capture never saw; `out-drop-nagle.pcap.gz` holds one run).
    for f in findings(&r) {
        assert_ne!(f["id"], "nagle_delayed_ack", "{f:#}");
    }
}

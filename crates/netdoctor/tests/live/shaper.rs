//! An HTTP server whose egress a token bucket shapes (`tc qdisc … tbf rate 20mbit`, as the
//! Kubernetes bandwidth plugin does), diagnosed from the client's namespace: the story is
//! `shaper_limited` first (the summed arrivals flat at the bucket's rate, seen from the
//! receiver) with the loss as its consequence, not "loss on a LAN" as the root cause. The
//! look-alike drops 2 % of the same server's packets at random (iptables, no shaper): no
//! `shaper_limited`. Built in namespaces this test creates (nginx serves a 200 KB file, one
//! process: `master_process off`, so killing it leaves no worker behind);
//! everything is removed on drop, also on failure.

use crate::common::*;
use netdoctor_lab::hostcases::{HOST_SERVER_IP, HostLab};
use serde_json::Value;

/// Diagnoses nginx serving a 200 KB file in a fresh lab whose server namespace `setup` (one
/// command, run in it) impairs.
fn diagnose_with(tag: &str, setup: &[&str]) -> Value {
    let name = format!("ndshp{tag}{}", std::process::id());
    let mut lab = HostLab::create(&name, false).expect("create netns");
    let srv = lab.server_netns().to_string();
    let _files = nginx_serving_file(&mut lab, &name, HOST_SERVER_IP.into(), 200_000);
    let st = lab
        .command(&srv, setup[0])
        .unwrap()
        .args(&setup[1..])
        .status()
        .expect("run the impairment");
    assert!(st.success(), "{setup:?} failed");
    let url = format!("http://{HOST_SERVER_IP}:8080/big.bin");
    diagnose_json(
        tag,
        &url,
        &["--netns", lab.client_netns(), "-c", "4", "-d", "4s"],
    )
}

fn ids(r: &Value) -> Vec<&str> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect()
}

#[test]
fn a_token_bucket_on_the_servers_egress_is_the_story_and_random_loss_is_not() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    if !netdoctor_lab::tools::have(&[
        ("tc", "iproute2"),
        ("nginx", "nginx-light"),
        ("iptables", "iptables"),
    ]) {
        return;
    }
    let r = diagnose_with(
        "t",
        &[
            "tc", "qdisc", "add", "dev", "h-srv", "root", "tbf", "rate", "20mbit", "burst", "32kb",
            "latency", "50ms",
        ],
    );
    let found = ids(&r);
    assert_eq!(found.first(), Some(&"shaper_limited"), "{r:#}");
    let shaper = &r["findings"][0];
    let rate: f64 = shaper["summary"]
        .as_str()
        .unwrap()
        .split("a flat ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no rate in {shaper:#}"));
    assert!((14.0..=21.0).contains(&rate), "rate {rate}: {shaper:#}");
    // The loss is the shaper's consequence, never its own root on the path, and on the
    // shaper's side (the server's, when eBPF saw its qdisc drop).
    for f in r["findings"].as_array().unwrap() {
        if f["id"] == "packet_loss_retransmission" {
            assert_eq!(f["caused_by"], "shaper_limited", "{f:#}");
            assert_eq!(f["side"], shaper["side"], "{f:#}");
        }
    }
    // The verdict's claim holds: the shaper's part (the transfer) is most of a typical request.
    let b = &r["measurements"]["capture"]["exchanges"]["breakdown_p50_ms"];
    let (transfer, latency) = (
        b["transfer"].as_f64().unwrap(),
        b["latency"].as_f64().unwrap(),
    );
    assert!(transfer >= 0.5 * latency, "{b:#}");

    // The look-alike: 2 % of the server's packets dropped at random, no shaper.
    let r = diagnose_with(
        "r",
        &[
            "iptables",
            "-A",
            "OUTPUT",
            "-p",
            "tcp",
            "--sport",
            "8080",
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            "0.02",
            "-j",
            "DROP",
        ],
    );
    assert!(!ids(&r).contains(&"shaper_limited"), "{r:#}");
}

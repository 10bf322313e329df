//! Retransmissions that are not path loss, and repeated SYNs that are not a delayed setup, on
//! third-party captures (`../shared/realworld-pcaps/`, skipped when missing), with the
//! look-alikes that must keep their story:
//!
//! - `zeek-206_example_b`: the client (the capture is next to it) stops sending at 1.408 s;
//!   the server's timer resends its two oldest segments 12 times over 65 s, then resets. A
//!   client that stopped acknowledging, its reset a consequence; the earlier fast recovery
//!   (the client dup-ACKing a real hole) stays path loss.
//! - `ppa-tcp_retransmissions`: one direction only (no ACK ever captured): the capture cannot
//!   tell, so it stays a retransmission timeout on the network, "resent up to 5 times".
//! - `ppa-inconsistent_printer`: a server's near-zero window; the client's resends into the
//!   closed window are probes, not loss: the window is the one finding, on the server.
//! - `ppa-http_espn_fail`: 11 SYNs over 67 s with no answer: failed connects, not "+67437 ms
//!   setup delayed". `suri-syn_retransmit_with_ts` (a SYN answered after one retry) stays a
//!   delayed setup; `ppa-tcp_refuseconnection` (a SYN answered by a reset) is refused.

use crate::common;

use std::path::PathBuf;

use common::{json, netdoctor};
use serde_json::Value;

fn corpus() -> PathBuf {
    std::env::var_os("NETDOCTOR_REALWORLD_PCAPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realworld-pcaps")
        })
}

/// `netdoctor analyze --json` of corpus file `name`, or `None` (one line) when it is missing.
fn analyze(name: &str) -> Option<Value> {
    let path = corpus().join(name);
    if !path.exists() {
        eprintln!(
            "skipped: needs {} (the shared realworld-pcaps corpus)",
            path.display()
        );
        return None;
    }
    let o = netdoctor(&["analyze", "--json", path.to_str().unwrap()]);
    // 0 healthy, 1 problem, 3 inconclusive: a verdict, never an error.
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{o:?}");
    Some(json(&o))
}

fn finding<'a>(r: &'a Value, id: &str) -> &'a Value {
    let v: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id)
        .collect();
    assert_eq!(v.len(), 1, "{id}: {:#}", r["findings"]);
    v[0]
}

fn summary(f: &Value) -> &str {
    f["summary"].as_str().unwrap()
}

#[test]
fn a_client_that_stops_acknowledging_is_not_path_loss() {
    let Some(r) = analyze("zeek-206_example_b.pcap") else {
        return;
    };
    let rto = finding(&r, "retransmission_timeout");
    let s = summary(rto);
    assert_eq!(rto["side"], "client", "{s}");
    assert!(s.starts_with("The client stopped acknowledging"), "{s}");
    // tshark: each of the 2 oldest segments resent 12 times by the timer; the first of them
    // twice more by the fast recovery before. Never "76 times" (the episode's packets).
    assert!(s.contains("timer fired 12 times over 65.1 s"), "{s}");
    assert!(s.contains("resent 14 times in all"), "{s}");
    assert!(!s.contains("76 times"), "{s}");
    assert!(!s.contains("waiting for lost segments"), "{s}");
    // A window that reopened 13.6 ms after closing, a second before, explains no silence.
    assert!(rto["caused_by"].is_null(), "{rto:#}");
    // The server's reset after 81 s is it giving up on the silent client.
    let rst = finding(&r, "connection_reset");
    assert_eq!(rst["caused_by"], "retransmission_timeout", "{rst:#}");
    assert_eq!(rst["side"], "client", "{rst:#}");
    // The earlier fast recovery (64 duplicate ACKs from a live client) is real loss: kept.
    let loss = finding(&r, "packet_loss_retransmission");
    assert_eq!(loss["side"], "network");
    assert!(summary(loss).contains("31 segments"), "{}", summary(loss));
}

#[test]
fn retransmissions_without_any_ack_captured_stay_a_timeout_on_the_network() {
    // One direction only: whether the peer answered is unknown, not silent.
    let Some(r) = analyze("ppa-tcp_retransmissions.pcapng") else {
        return;
    };
    let rto = finding(&r, "retransmission_timeout");
    let s = summary(rto);
    assert_eq!(rto["side"], "network", "{s}");
    assert!(!s.contains("stopped acknowledging"), "{s}");
    assert!(s.contains("(resent up to 5 times)"), "{s}");
}

#[test]
fn a_shut_window_with_answered_probes_is_not_a_silent_peer() {
    // The printer's near-zero window: the client's data resent into it probes the window
    // (session 19; before, a critical retransmission_timeout "find where packets are lost"
    // caused by the window): the window alone is the story, on the printer.
    let Some(r) = analyze("ppa-inconsistent_printer.pcapng") else {
        return;
    };
    let ids: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert_eq!(ids, ["zero_window"], "{:#}", r["findings"]);
    let w = finding(&r, "zero_window");
    assert_eq!(w["side"], "server", "{w:#}");
    assert!(!summary(w).contains("stopped acknowledging"), "{w:#}");
}

#[test]
fn syns_never_answered_are_failed_connects_not_a_delay() {
    let Some(r) = analyze("ppa-http_espn_fail.pcapng") else {
        return;
    };
    let f = finding(&r, "syn_retransmit");
    let s = summary(f);
    assert!(
        s.starts_with("Connection attempts failed on 9 of 16 connections: no answer to any SYN"),
        "{s}"
    );
    assert!(s.contains("up to 11 SYNs over 67.4 s"), "{s}");
    assert!(!s.contains("delayed") && !s.contains("67437"), "{s}");
    assert!(f["impact"]["added_latency_ms"].is_null(), "{f:#}");
    assert_eq!(f["severity"], "critical");
}

#[test]
fn a_syn_answered_after_a_retry_stays_a_delayed_setup() {
    let Some(r) = analyze("suri-syn_retransmit_with_ts.pcap") else {
        return;
    };
    let f = finding(&r, "syn_retransmit");
    let s = summary(f);
    assert!(
        s.starts_with("Connection setup delayed on 1 of 1 connections"),
        "{s}"
    );
    assert!(!s.contains("never opened"), "{s}");
}

#[test]
fn a_syn_answered_by_a_reset_is_refused_not_failed() {
    let Some(r) = analyze("ppa-tcp_refuseconnection.pcapng") else {
        return;
    };
    finding(&r, "server_not_listening");
    assert!(
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| !summary(f).contains("no answer to any SYN")),
        "{:#}",
        r["findings"]
    );
}

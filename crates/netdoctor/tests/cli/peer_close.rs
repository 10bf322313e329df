//! Resets after the *other* side closed an idle connection first, on third-party captures
//! (`../shared/realworld-pcaps/`, skipped when missing).
//!
//! - `zeek-m57-long-49583-80`: the last answer ends at #214 (1.376 s), the server closes the
//!   idle connection with a FIN at #222 (4.274 s, 2.90 s later), the client acknowledges it
//!   (#224) and resets at #226 (5.623 s, 1.35 s after the FIN) (tshark). Told before as "The
//!   client reset 1 idle connections between requests", evidence "1.35 s after its last
//!   packet" beside #214 (4.25 s earlier), fix "the client should close idle keep-alive
//!   connections before the server": the server had closed first.
//! - Look-alike `zeek-retransmit-fast009`: the client resets 60 s after the last answer with
//!   no FIN from either side: a client reset of an idle connection, kept.
//! - Look-alike `suri-tcp-empty-sack` (`client_abort.rs`): the server's FIN answers the
//!   phone's own TLS close alert 116 ms after it, no idle close: kept.
//! - `zeek-206_example_b`: a server reset during an exchange leads; the other connection's
//!   client reset came 26.2 s after the server's FIN (#1554), told as that close.

use crate::common;

use common::{corpus_file, json, netdoctor};
use serde_json::Value;

fn reset_finding(name: &str) -> Option<Value> {
    let path = corpus_file(name)?;
    let o = netdoctor(&["analyze", "--json", path.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{o:?}");
    let r = json(&o);
    let v: Vec<Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "connection_reset")
        .cloned()
        .collect();
    assert_eq!(v.len(), 1, "{:#}", r["findings"]);
    v.into_iter().next()
}

/// The frames of the evidence's packets.
fn frames(f: &Value) -> Vec<u64> {
    f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["packets"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["frame"].as_u64())
        .collect()
}

#[test]
fn a_client_reset_after_the_servers_idle_close_says_the_server_closed_first() {
    let Some(f) = reset_finding("zeek-m57-long-49583-80.pcap") else {
        return;
    };
    let s = f["summary"].as_str().unwrap();
    assert!(
        s.starts_with("The server closed 1 idle connections first (FIN 2.90 s after the last"),
        "{f:#}"
    );
    assert!(s.contains("a reset 1.35 s later: no request failed"), "{s}");
    assert_eq!(f["severity"], "info", "{f:#}");
    assert_eq!(f["side"], "server", "{f:#}");
    // The last answer, the server's FIN, the client's reset.
    assert_eq!(frames(&f), vec![214, 222, 226], "{f:#}");
    let fix = f["fix"].as_str().unwrap();
    assert!(fix.starts_with("Nothing to fix in the resets"), "{fix}");
    assert!(!fix.contains("before the server"), "{fix}");
    assert!(
        f["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["probe"] == "closed_by_peer_first"),
        "{f:#}"
    );
    let zh = common::zh_finding_block(
        &corpus_file("zeek-m57-long-49583-80.pcap").unwrap(),
        "connection_reset",
    );
    assert!(
        zh.contains("服务端先关闭了空闲连接（FIN），客户端随后用RST结束了自己一侧"),
        "{zh}"
    );
}

/// No FIN either way: the client reset a connection idle for 60 s itself.
#[test]
fn a_client_reset_with_no_fin_before_it_stays_the_clients_idle_reset() {
    let Some(f) = reset_finding("zeek-retransmit-fast009.pcap") else {
        return;
    };
    let s = f["summary"].as_str().unwrap();
    assert!(
        s.starts_with("The client reset 1 idle connections between requests"),
        "{f:#}"
    );
    assert_eq!(f["side"], "client", "{f:#}");
    assert_eq!(frames(&f), vec![26, 39], "{f:#}");
}

/// A server reset during an exchange leads; the other connection's late client reset follows
/// as the server's close.
#[test]
fn a_peer_close_beside_a_failed_request_follows_it() {
    let Some(f) = reset_finding("zeek-206_example_b.pcap") else {
        return;
    };
    let s = f["summary"].as_str().unwrap();
    assert!(
        s.starts_with("The server reset 1 connections in the middle of a request/response"),
        "{f:#}"
    );
    assert!(
        s.contains("also, the server closed 1 idle connections first (FIN 3.79 s after"),
        "{s}"
    );
    assert!(frames(&f).contains(&1554), "{f:#}");
}

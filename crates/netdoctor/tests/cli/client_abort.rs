//! Client resets during a response on third-party captures (`../shared/realworld-pcaps/`,
//! skipped when missing): a client that gave up on a response that had stopped arriving is a
//! failed request, not a browser leaving a page; a reset while the response still moved keeps
//! its info story.
//!
//! - `suri-rst-unacked-http`: a 181 KB page (Content-Length 181348) over a lossy, slow path;
//!   58 KB delivered, the server's last captured segment at 50.39 s, the client's reset at
//!   93.46 s (tshark). Told before as "The client reset 1 connections while a response was
//!   arriving" (info, "it does not slow the other requests down").
//! - `suri-tcp-empty-sack`: the phone's reset comes 3.9 s after the server's TLS close alert
//!   (1.1 s after its last resend; the phone had dropped the connection: `silent_peer`'s
//!   story); under the 5 s of a stall, so it stays an info abort, a consequence of that story.
//!   Its reset has no ACK flag (#42, `[R]`): a host that no longer had the connection, not a
//!   client closing with data unread (those reset with ACK). Told before as "The client reset
//!   1 connections while a response was arriving", "Nothing to do unless the client did not
//!   mean to abort". The same capture with that reset made a RST|ACK keeps that story
//!   (`silent_peer`'s look-alike). Since session 25 the phone's TLS close_notify (#36) is no
//!   request, so no request was in progress at the reset: the host-without-the-connection
//!   story is kept on the capture with #36 made application data.

use crate::common;

use std::path::PathBuf;

use common::{corpus_file, json, netdoctor};
use serde_json::Value;

fn analyze(name: &str) -> Option<Value> {
    let path = corpus_file(name)?;
    let o = netdoctor(&["analyze", "--json", path.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{o:?}");
    Some(json(&o))
}

/// The `connection_reset` block of the Chinese terminal report of the capture at `path`.
fn zh_reset_block(path: &std::path::Path) -> String {
    common::zh_finding_block(path, "connection_reset")
}

fn reset_finding(r: &Value) -> &Value {
    let v: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "connection_reset")
        .collect();
    assert_eq!(v.len(), 1, "{:#}", r["findings"]);
    v[0]
}

#[test]
fn a_client_that_gave_up_on_a_stalled_response_failed_its_request() {
    let Some(r) = analyze("suri-rst-unacked-http.pcap") else {
        return;
    };
    let f = reset_finding(&r);
    let s = f["summary"].as_str().unwrap();
    assert!(
        s.starts_with("The client gave up on 1 responses that had stopped arriving"),
        "{s}"
    );
    // 93.460411 s − 50.386377 s.
    assert!(s.contains("no response byte for up to 43.1 s"), "{s}");
    assert!(s.contains("those requests failed"), "{s}");
    assert_ne!(f["severity"], "info", "{f:#}");
    // The stall is the server's or the path's: the packets do not tell which.
    assert_eq!(f["side"], "network", "{f:#}");
    let note = f["evidence"][0]["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("43.1 s after the response's last byte"),
        "{f:#}"
    );
}

/// `suri-tcp-empty-sack` with the phone's close_notify (#36) made data
/// ([`crate::silent_peer::close_notify_as_data`]), at `dir`.
fn empty_sack_with_data(dir: &std::path::Path) -> Option<PathBuf> {
    let mut b = std::fs::read(corpus_file("suri-tcp-empty-sack.pcap")?).unwrap();
    crate::silent_peer::close_notify_as_data(&mut b);
    let path = dir.join("empty-sack-data.pcap");
    std::fs::write(&path, &b).unwrap();
    Some(path)
}

/// As captured, the phone's reset comes after its own TLS close_notify, which is no request:
/// no request was in progress (the vanished connection is `silent_peer`'s story, told by
/// `retransmission_timeout`). It read as a reset "while a response was arriving" (the server's
/// answering alert and FIN) before session 25.
#[test]
fn a_bare_reset_after_the_clients_close_notify_fails_no_request() {
    let Some(r) = analyze("suri-tcp-empty-sack.pcap") else {
        return;
    };
    let f = reset_finding(&r);
    let s = f["summary"].as_str().unwrap();
    assert!(
        s.starts_with("The client reset 1 idle connections between requests; no request"),
        "{f:#}"
    );
    assert_eq!(f["severity"], "info", "{f:#}");
    assert_eq!(
        r["measurements"]["capture"]["exchanges"]["count"], 1,
        "one request"
    );
}

/// With data where the close_notify was, the server's alert and FIN are an answer arriving and
/// the phone's bare reset (#42, `[R]`, no ACK) is a host that no longer had the connection.
#[test]
fn a_bare_reset_soon_after_the_last_response_byte_is_a_host_without_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let Some(path) = empty_sack_with_data(dir.path()) else {
        return;
    };
    let o = netdoctor(&["analyze", "--json", path.to_str().unwrap()]);
    let r = json(&o);
    let f = reset_finding(&r);
    let s = f["summary"].as_str().unwrap();
    assert!(
        s.starts_with("The client's host reset 1 connections while a response was arriving"),
        "{f:#}"
    );
    assert!(s.contains("resets that acknowledge nothing"), "{s}");
    let why = f["explanation"].as_str().unwrap();
    assert!(
        !why.contains("closed its socket with response data"),
        "{why}"
    );
    assert!(
        !f["fix"].as_str().unwrap().contains("Nothing to do"),
        "{f:#}"
    );
    let note = f["evidence"][0]["note"].as_str().unwrap_or_default();
    assert!(note.contains("acknowledging nothing"), "{f:#}");
    assert_eq!(f["severity"], "info", "{f:#}");
    assert_eq!(f["side"], "client", "{f:#}");
}

/// The same two stories in the Chinese report: their own texts (not the generic list of reset
/// causes), the client named, and the English text's numbers.
#[test]
fn client_abort_stories_are_told_in_chinese_with_their_numbers() {
    let dir = tempfile::tempdir().unwrap();
    if let Some(p) = empty_sack_with_data(dir.path()) {
        let b = zh_reset_block(&p);
        assert!(b.contains("需修改的一方：客户端"), "{b}");
        assert!(b.contains("客户端的主机在响应到达期间复位了1个连接"), "{b}");
        assert!(b.contains("它已经没有这些连接了"), "{b}");
        assert!(b.contains("RFC9293"), "{b}");
        assert!(!b.contains("客户端用RST复位了连接"), "{b}");
    }
    if let Some(p) = corpus_file("suri-rst-unacked-http.pcap") {
        let b = zh_reset_block(&p);
        assert!(b.contains("需修改的一方：网络"), "{b}");
        // 93.460411 s − 50.386377 s, as in the English summary.
        assert!(
            b.contains("客户端放弃了1个已经停止到达的响应：最长43.1s没有收到响应的任何字节"),
            "{b}"
        );
        assert!(b.contains("这些请求失败了"), "{b}");
        assert!(!b.contains("用RST复位了连接：影响"), "{b}");
    }
}

/// The client's resets at setup (of the server's SYN/ACK, a load ending its run over +37 ms;
/// `testdata/captures/abandoned-connects.pcap.gz`) in Chinese: their own story, on the client,
/// with the count, and not the generic text that says the reset requests failed.
#[test]
fn client_resets_at_setup_are_told_in_chinese_as_attempts_given_up() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/abandoned-connects.pcap.gz");
    let b = zh_reset_block(&path);
    assert!(b.contains("需修改的一方：客户端"), "{b}");
    assert!(
        b.contains("复位了10个连接（或复位了服务端的SYN/ACK）"),
        "{b}"
    );
    assert!(b.contains("也没有请求失败"), "{b}");
    assert!(!b.contains("被复位的请求都失败了"), "{b}");
    let r = json(&netdoctor(&["analyze", "--json", path.to_str().unwrap()]));
    let f = reset_finding(&r);
    assert!(
        f["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["probe"] == "client_setup_abort"
                && e["note"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("10 of 10 client resets")),
        "{f:#}"
    );
}

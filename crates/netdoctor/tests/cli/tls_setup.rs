//! `short_connections` stories in the Chinese report: the TLS handshake's round trips told as
//! setup, and a server's per-connection request limit (the English texts are checked on the
//! same captures in netdoctor-core's `tls_setup` and `request_limit` tests).

use crate::common;
use std::path::PathBuf;

/// A connection per request over TLS (`testdata/captures/tls12-short.pcap.gz`) in Chinese:
/// the TLS handshake's round trips counted as setup, not the TCP-only text that says the setup
/// ends at the handshake's ACK.
#[test]
fn short_tls_connections_are_told_in_chinese_with_the_tls_handshake() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/tls12-short.pcap.gz");
    let b = common::zh_finding_block(&path, "short_connections");
    assert!(b.contains("（100%的请求新建了连接）"), "{b}");
    assert!(b.contains("（中位数113.7ms）"), "{b}");
    assert!(b.contains("TLS握手再花一到两个往返时间"), "{b}");
    assert!(!b.contains("只算到客户端对SYN/ACK的ACK为止"), "{b}");
}

/// The server's request limit (`testdata/captures/keepalive-requests5.pcap.gz`) in Chinese: its
/// own story with the connections' count, not "one connection per request".
#[test]
fn a_request_limit_is_told_in_chinese_as_the_servers_limit() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/keepalive-requests5.pcap.gz");
    let b = common::zh_finding_block(&path, "short_connections");
    assert!(b.contains("需修改的一方：服务端"), "{b}");
    assert!(
        b.contains("（6/6个连接）：20%的请求要付出新建连接的开销"),
        "{b}"
    );
    assert!(b.contains("keepalive_requests"), "{b}");
    assert!(!b.contains("每个请求一个连接"), "{b}");
}

/// A server slow in the TLS handshake (`testdata/captures/tls-rsa8192.pcap.gz`: nginx with an
/// RSA-8192 key) in Chinese: the handshake's own story and fix, not the text about a server
/// slow between a request's last byte and its response.
#[test]
fn a_server_slow_in_the_tls_handshake_is_told_in_chinese_as_such() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/tls-rsa8192.pcap.gz");
    let b = common::zh_finding_block(&path, "slow_server_processing");
    assert!(b.contains("需修改的一方：服务端"), "{b}");
    assert!(
        b.contains("服务端在TLS握手中要26.0ms才回复（16/32次握手往返）"),
        "{b}"
    );
    assert!(b.contains("ECDSA"), "{b}");
    assert!(!b.contains("从请求的最后一个字节到响应的第一个字节"), "{b}");
}

//! The Chinese texts of stories a finding id tells beside its plain one, picked by evidence
//! marks or probes: a silent peer (`retransmission_timeout`), all nameservers silent
//! (`dns_server_unreachable`), a proxy's timeout or refusing upstream (`http_errors`).

use super::*;
use netdoctor_core::Side;

/// A receiver that went silent (`detect::loss::silent`) is told in Chinese as the English
/// text tells it: a host without the connection (its reset acknowledges nothing), a capture
/// next to the silent receiver, a capture next to the sender (silent peer or dead path),
/// some episodes only; ordinary loss keeps the plain RTO text (session 27: zh told every
/// silent peer as loss on the path, "找出丢包的位置").
#[test]
fn a_silent_peer_is_told_in_chinese_not_as_loss() {
    use netdoctor_core::detect::loss::{FORGOT_NOTE_MARK, SILENT_NOTE_MARK, SILENT_PEER_MARK};
    let packets = |note: String| Evidence::Packets {
        connection: "10.0.0.1:5000 → 10.0.0.2:443".into(),
        packets: vec![],
        note,
    };
    // The notes as the detector writes them (`silent::evidence`).
    let silent = |rcv: &str| {
        packets(format!(
            "4 retransmission(s), 3 of them by the timer over 2.4 s, the oldest segment resent 3 \
             times; never acknowledged: the {rcv} {SILENT_NOTE_MARK}"
        ))
    };
    let forgot = |rcv: &str| {
        packets(format!(
            "4 retransmission(s), 3 of them by the timer over 2.4 s, the oldest segment resent 3 \
             times; never acknowledged: the {rcv} {SILENT_NOTE_MARK} but {FORGOT_NOTE_MARK} (no \
             such connection)"
        ))
    };
    let zh = |side: Side, summary: &str, ev: Vec<Evidence>| {
        let mut f = Finding::new(
            FindingId::RetransmissionTimeout,
            Severity::Critical,
            side,
            summary,
        );
        f.explanation = "e".into();
        f.fix = "x".into();
        f.evidence = ev;
        let t = texts(&f, Lang::Zh);
        (
            t.summary.into_owned(),
            t.explanation.into_owned(),
            t.fix.into_owned(),
        )
    };
    let all = format!("The client {SILENT_PEER_MARK}: ...");
    let (s, e, x) = zh(Side::Client, &all, vec![forgot("client")]);
    assert!(s.starts_with("客户端不再确认任何数据"), "{s}");
    assert!(s.contains("不是路径丢包") && s.contains("RST"), "{s}");
    assert!(e.contains("RFC 9293") && e.contains("服务端的分段"), "{e}");
    assert!(x.contains("IP TTL") && !x.contains("找出丢包"), "{x}");
    let (s, e, x) = zh(Side::Client, &all, vec![silent("client")]);
    assert!(s.contains("抓包点在客户端旁边"), "{s}");
    assert!(e.contains("tcp_retries2"), "{e}");
    assert!(x.contains("tcpdump -i any"), "{x}");
    let all = format!("The server {SILENT_PEER_MARK}, or the path to it dropped everything");
    let (s, e, x) = zh(Side::Network, &all, vec![silent("server")]);
    assert!(
        s.starts_with("服务端不再确认任何数据，或者到它的路径"),
        "{s}"
    );
    assert!(e.contains("抓包点在客户端旁边"), "{e}");
    assert!(x.contains("netdoctor trace"), "{x}");
    let loss = packets("3 retransmission(s), 1 of them by the timer".into());
    let (s, e, x) = zh(
        Side::Network,
        "Retransmission timeouts ...; 1 of them on connections whose server then answered \
         nothing at all",
        vec![loss.clone(), silent("server")],
    );
    assert!(
        s.starts_with("重传超时（RTO）") && s.contains("服务端随后完全没有应答"),
        "{s}"
    );
    assert!(e.contains("沉默的对端"), "{e}");
    assert!(x.contains("找出丢包的位置"), "{x}");
    let (s, e, x) = zh(Side::Network, "Retransmission timeouts ...", vec![loss]);
    assert!(
        s.starts_with("重传超时（RTO）") && !s.contains("应答"),
        "{s}"
    );
    assert!(!e.contains("沉默") && !e.contains("RFC 9293"), "{e}");
    assert!(x.contains("找出丢包的位置"), "{x}");
}

/// Every nameserver asked silent (`analyze::dns`, ppa-nowebaccess1): in Chinese too, what
/// they share first; a dead server beside a live one keeps "remove or replace".
#[test]
fn all_nameservers_silent_is_told_in_chinese_as_a_shared_cause() {
    use netdoctor_core::analyze::ALL_SILENT_FIX;
    let zh = |fix: String| {
        let mut f = Finding::new(
            FindingId::DnsServerUnreachable,
            Severity::Critical,
            Side::Network,
            "nameserver 4.2.2.2 does not answer (timeouts)",
        );
        f.explanation = "e".into();
        f.fix = fix;
        let t = texts(&f, Lang::Zh);
        (t.explanation.into_owned(), t.fix.into_owned())
    };
    let (e, x) = zh(format!(
        "{ALL_SILENT_FIX} (4.2.2.2, 4.2.2.1) was silent: look at what they share first."
    ));
    assert!(e.contains("共用"), "{e}");
    assert!(
        x.starts_with("客户端问过的每个 nameserver 都没有应答"),
        "{x}"
    );
    let (e, x) = zh("Remove or replace this nameserver in the client's resolv.conf".into());
    assert!(!e.contains("共用"), "{e}");
    assert!(x.starts_with("从 resolv.conf 中去掉"), "{x}");
}

/// A proxy's steady 504s and quick 502s (`detect::http_errors::proxy`) have their own
/// Chinese texts, with the timeout's seconds; other errors keep the plain text.
#[test]
fn a_proxys_timeout_and_a_refusing_upstream_are_told_in_chinese() {
    use netdoctor_core::detect::http_errors::{PROXY_TIMEOUT_EVIDENCE, UPSTREAM_REFUSED_EVIDENCE};
    let zh = |probe: &str, note: &str| {
        let mut f = Finding::new(FindingId::HttpErrors, Severity::Critical, Side::Server, "s");
        f.explanation = "e".into();
        f.fix = "x".into();
        f.evidence.push(Evidence::Probe {
            probe: probe.into(),
            note: note.into(),
        });
        let t = texts(&f, Lang::Zh);
        (t.summary.into_owned(), t.fix.into_owned())
    };
    let (s, x) = zh(
        PROXY_TIMEOUT_EVIDENCE,
        "12 of 12 captured HTTP 504 answers came within 8 ms of 1.00 s after their request",
    );
    assert!(
        s.starts_with("12 个请求收到 HTTP 504") && s.contains("1.00 s"),
        "{s}"
    );
    assert!(s.contains("代理的超时"), "{s}");
    assert!(
        x.starts_with("查看代理后面的上游") && x.contains("proxy_read_timeout"),
        "{x}"
    );
    let (s, x) = zh(
        UPSTREAM_REFUSED_EVIDENCE,
        "12 of 12 captured HTTP 502 answers came 0.23 ms (median) after their request",
    );
    assert!(s.contains("上游宕机"), "{s}");
    assert!(x.contains("Connection refused"), "{x}");
    let (s, _) = zh(
        "capture",
        "HTTP 504 Gateway Timeout: 12 of 12 captured HTTP responses",
    );
    assert!(!s.contains("代理"), "{s}");
}

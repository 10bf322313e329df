//! The Chinese finding texts: every id's, the variants chosen by evidence, notes, numbers.

use super::*;
use netdoctor_core::{Impact, PacketRef, Side};
use std::collections::BTreeSet;

#[test]
fn a_dead_first_address_beside_a_live_one_is_told_in_chinese_too() {
    let mut f = Finding::new(
        FindingId::NeighbourUnreachable,
        Severity::Critical,
        Side::Network,
        "10.0.0.3 does not answer ARP; web.example also resolves to 10.0.0.2:80",
    );
    f.explanation = "x".into();
    f.fix = "y".into();
    let plain = {
        let t = texts(&f, Lang::Zh);
        (t.summary.into_owned(), t.fix.into_owned())
    };
    assert!(!plain.0.contains("失效地址"), "{}", plain.0);
    f.evidence.push(Evidence::Probe {
        probe: "other_addresses".into(),
        note: "web.example resolves to 2 addresses, 10.0.0.3:80 first; the others: \
               10.0.0.2:80 accepted a connection in 0.2 ms"
            .into(),
    });
    let t = texts(&f, Lang::Zh);
    assert!(t.summary.starts_with(&plain.0), "{}", t.summary);
    assert!(t.summary.contains("失效地址"), "{}", t.summary);
    assert!(t.explanation.contains("连接超时"), "{}", t.explanation);
    assert!(t.fix.starts_with("从名字的记录"), "{}", t.fix);
    assert!(t.fix.ends_with(&plain.1), "{}", t.fix);
    assert!(!t.summary.contains('⟦'), "{}", t.summary);
    if let Some(Evidence::Probe { note, .. }) = f.evidence.last_mut() {
        *note = "the others: 10.0.0.4:80 did not accept a connection within 2 s".into();
    }
    let t = texts(&f, Lang::Zh);
    assert!(
        t.summary.contains("其他地址也都不接受连接"),
        "{}",
        t.summary
    );
    assert_eq!(t.fix, plain.1);
}

#[test]
fn a_share_under_one_percent_is_never_printed_as_zero_in_chinese() {
    let zh = |fraction: Option<f64>| {
        let mut f = Finding::new(
            FindingId::NagleDelayedAck,
            Severity::Info,
            Side::Server,
            "Server's Nagle algorithm waits for the client's delayed ACK: +43.7 ms on 1 of 4878 requests",
        );
        f.impact = Impact {
            added_latency_ms: Some(43.7),
            affected_fraction: fraction,
        };
        texts(&f, Lang::Zh).summary.into_owned()
    };
    let small = zh(Some(1.0 / 4878.0));
    assert!(small.contains("影响 <1% 的请求"), "{small}");
    assert!(zh(Some(0.25)).contains("影响 25% 的请求"));
    let none = zh(Some(0.0));
    assert!(!none.contains('%'), "{none}");
}

#[test]
fn every_finding_id_has_its_zh_texts_and_no_other_id_does() {
    let ids = super::super::message_ids(super::super::FINDINGS_ZH).expect("findings.zh.ftl parses");
    let have: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(
        have.len(),
        ids.len(),
        "findings.zh.ftl defines a message twice"
    );
    let mut want = BTreeSet::new();
    for id in ALL_IDS {
        for part in ["summary", "explanation", "fix"] {
            want.insert(message_id(id, part));
        }
    }
    let missing: Vec<_> = want.difference(&have).collect();
    let stray: Vec<_> = have
        .difference(&want)
        .filter(|m| !m.starts_with("common-"))
        .collect();
    assert!(missing.is_empty(), "finding texts without zh: {missing:?}");
    assert!(stray.is_empty(), "zh texts of no finding id: {stray:?}");
    // ALL_IDS is every id: each one's JSON name is distinct and round-trips.
    let names: BTreeSet<_> = ALL_IDS.iter().map(|i| i.as_str()).collect();
    assert_eq!(names.len(), ALL_IDS.len());
}

/// A finding of `id` with every structured field set, for each side and severity.
fn samples() -> Vec<Finding> {
    let mut out = Vec::new();
    for id in ALL_IDS {
        for (side, severity) in [Side::Server, Side::Client, Side::Network, Side::Host]
            .into_iter()
            .flat_map(|s| [(s, Severity::Critical), (s, Severity::Info)])
        {
            for with_numbers in [true, false] {
                let mut f = Finding::new(id, severity, side, "s");
                f.explanation = "e".into();
                f.fix = "f".into();
                if with_numbers {
                    f.impact = Impact {
                        added_latency_ms: Some(43.8),
                        affected_fraction: Some(0.95),
                    };
                    f.evidence = vec![
                        Evidence::Packets {
                            connection: "10.0.0.1:40000 → 10.0.0.2:80".into(),
                            packets: vec![PacketRef {
                                frame: 1,
                                time: 0.0,
                                ts: 0.0,
                                dir: "S→C".into(),
                                desc: "[P.] len=238".into(),
                            }],
                            note: "n".into(),
                        },
                        Evidence::Counter {
                            name: "TcpExt.ListenOverflows".into(),
                            before: 10,
                            after: 52,
                            note: "n".into(),
                        },
                    ];
                }
                out.push(f);
            }
        }
    }
    out
}

#[test]
fn every_zh_text_renders_whole_and_in_chinese() {
    for f in samples() {
        let t = texts(&f, Lang::Zh);
        for (part, s) in [
            ("summary", &t.summary),
            ("explanation", &t.explanation),
            ("fix", &t.fix),
        ] {
            let ctx = format!("{} {:?} {part}: {s}", f.id, f.side);
            assert!(!s.contains('⟦') && !s.contains("{$"), "{ctx}");
            assert!(
                s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{ctx}"
            );
            assert!(!s.contains("  "), "double space: {ctx}");
        }
        if f.impact.added_latency_ms.is_some()
            && matches!(
                f.id,
                FindingId::NagleDelayedAck
                    | FindingId::DelayedAckStall
                    | FindingId::SlowServerProcessing
            )
        {
            assert!(t.summary.contains("43.8 ms"), "{}: {}", f.id, t.summary);
        }
    }
}

/// The info variant of `listen_queue_overflow` is another listener's overflow in the
/// namespace: its Chinese text must not say the server accepts too slowly.
#[test]
fn another_listeners_overflow_reads_as_such_in_chinese() {
    let f = |severity| {
        let mut f = Finding::new(FindingId::ListenQueueOverflow, severity, Side::Server, "s");
        f.fix = "f".into();
        texts(&f, Lang::Zh).summary.into_owned()
    };
    assert!(
        f(Severity::Info).contains("另一个监听者"),
        "{}",
        f(Severity::Info)
    );
    assert!(
        f(Severity::Critical).contains("服务端来不及"),
        "{}",
        f(Severity::Critical)
    );
}

#[test]
fn nagle_notes_are_told_from_the_packets() {
    let p = |time: f64, desc: &str| PacketRef {
        frame: 1,
        time,
        ts: 0.0,
        dir: "S→C".into(),
        desc: desc.into(),
    };
    let pkts = [
        p(0.004331, "[P.] len=256"),
        p(0.044766, "[.] len=0"),
        p(0.044869, "[P.] len=615"),
    ];
    let en = "ACK after 40.4 ms (delayed ACK), held 615 bytes left 0.10 ms after it";
    assert_eq!(
        packets_note(FindingId::NagleDelayedAck, &pkts, en, Lang::En),
        en
    );
    let zh = packets_note(FindingId::NagleDelayedAck, &pkts, en, Lang::Zh);
    assert!(
        zh.contains("40.4 ms") && zh.contains("615") && zh.contains("0.10 ms"),
        "{zh}"
    );
    assert!(zh.contains("延迟确认"), "{zh}");
    let zh = packets_note(FindingId::DelayedAckStall, &pkts, en, Lang::Zh);
    assert!(zh.contains("40.4 ms") && zh.contains("615"), "{zh}");
    // Other ids, or packets of another shape, keep the detector's note.
    assert_eq!(packets_note(FindingId::ZeroWindow, &pkts, en, Lang::Zh), en);
    assert_eq!(
        packets_note(FindingId::NagleDelayedAck, &pkts[..2], en, Lang::Zh),
        en
    );
}

/// Abandoned handshakes under path loss are not "nothing listens" in Chinese either.
#[test]
fn abandoned_handshakes_say_what_was_seen_in_chinese() {
    let mut f = Finding::new(
        FindingId::ServerNotListening,
        Severity::Warning,
        Side::Network,
        "3 handshakes to 10.0.0.2:80 abandoned before completing",
    );
    f.explanation = "e".into();
    f.fix = "x".into();
    f.impact.affected_fraction = Some(0.07);
    f.evidence.push(Evidence::Probe {
        probe: netdoctor_core::detect::server_not_listening::ABANDONED_EVIDENCE.into(),
        note: "3 attempts".into(),
    });
    f.caused_by = Some(FindingId::RouteProblem);
    let zh = texts(&f, Lang::Zh);
    assert!(zh.summary.contains("握手被放弃"), "{}", zh.summary);
    assert!(zh.summary.contains("7%"), "{}", zh.summary);
    assert!(zh.summary.contains("route_problem"), "{}", zh.summary);
    assert!(
        !zh.summary.contains("没有程序在监听目标端口"),
        "{}",
        zh.summary
    );
    assert!(!zh.fix.contains("启动服务"), "{}", zh.fix);
    // Without a root it does not claim one; a real refusal keeps its sentence.
    f.caused_by = None;
    assert!(!texts(&f, Lang::Zh).summary.contains("丢包"));
    f.evidence.clear();
    let zh = texts(&f, Lang::Zh);
    assert!(
        zh.summary.contains("没有程序在监听目标端口"),
        "{}",
        zh.summary
    );
}

#[test]
fn a_rate_limit_is_told_as_one_in_chinese_and_other_errors_keep_theirs() {
    let mut f = Finding::new(
        FindingId::HttpErrors,
        Severity::Warning,
        Side::Server,
        "195933 of 196088 requests failed (99.9%): HTTP 429 Too Many Requests",
    );
    f.explanation = "e".into();
    f.fix = "x".into();
    f.impact.affected_fraction = Some(0.999);
    f.evidence.push(Evidence::Probe {
        probe: netdoctor_core::detect::http_errors::RATE_LIMIT_EVIDENCE.into(),
        note: "155 of 196088 requests got through the limit".into(),
    });
    let zh = texts(&f, Lang::Zh);
    assert!(zh.summary.contains("429"), "{}", zh.summary);
    assert!(zh.summary.contains("限流"), "{}", zh.summary);
    assert!(!zh.fix.contains("错误日志"), "{}", zh.fix);
    assert!(zh.fix.contains("--rate"), "{}", zh.fix);
    // The load's own evidence first: the server's errors, its error log.
    f.evidence[0] = Evidence::Probe {
        probe: "load".into(),
        note: "HTTP 503".into(),
    };
    let zh = texts(&f, Lang::Zh);
    assert!(!zh.summary.contains("429"), "{}", zh.summary);
    assert!(zh.fix.contains("错误日志"), "{}", zh.fix);
}

/// The Chinese summary, explanation and fix of `f` (given placeholder English texts)
/// with one probe evidence named `probe`.
fn zh_with_probe(mut f: Finding, probe: &str) -> (String, String, String) {
    f.explanation = "e".into();
    f.fix = "x".into();
    f.evidence.push(Evidence::Probe {
        probe: probe.into(),
        note: "n".into(),
    });
    let t = texts(&f, Lang::Zh);
    (
        t.summary.into_owned(),
        t.explanation.into_owned(),
        t.fix.into_owned(),
    )
}

/// A loss told only by IPv4 id skips is told as lost before the capture point, one with
/// some such resends adds a sentence, and a slow handshake acknowledged by something near
/// the capture point says the round trip lies beyond it; the plain texts stay.
#[test]
fn losses_before_the_capture_point_and_near_acks_are_told_in_chinese() {
    use netdoctor_core::detect::loss::{BEFORE_CAPTURE_EVIDENCE, SOME_BEFORE_CAPTURE_EVIDENCE};
    use netdoctor_core::detect::slow_handshake::NEAR_ACK_EVIDENCE;
    let zh = |id: FindingId, probe: &str| {
        zh_with_probe(
            Finding::new(id, Severity::Warning, Side::Network, "s"),
            probe,
        )
    };
    let loss = FindingId::PacketLossRetransmission;
    let (summary, explanation, fix) = zh(loss, BEFORE_CAPTURE_EVIDENCE);
    assert!(summary.contains("抓包点之前"), "{summary}");
    assert!(explanation.contains("IPv4 id"), "{explanation}");
    assert!(fix.contains("发送方"), "{fix}");
    let (summary, explanation, _) = zh(loss, SOME_BEFORE_CAPTURE_EVIDENCE);
    assert!(!summary.contains("抓包点之前"), "{summary}");
    assert!(explanation.contains("IPv4 id"), "{explanation}");
    let (_, explanation, _) = zh(loss, "load");
    assert!(!explanation.contains("IPv4 id"), "{explanation}");
    let rtt = FindingId::HighBaseRtt;
    assert!(zh(rtt, NEAR_ACK_EVIDENCE).1.contains("代理"));
    assert!(!zh(rtt, "load").1.contains("代理"));
}

/// A reset whose answer's end the capture cannot tell, and an abortive close that lost the
/// next request: their own texts, not the plain reset's or the harmless close's.
#[test]
fn resets_the_capture_cannot_tell_and_lost_next_requests_are_told_in_chinese() {
    use netdoctor_core::detect::connection_reset::{
        AFTER_ANSWER_LOST_EVIDENCE, ANSWER_UNSEEN_EVIDENCE,
    };
    let zh = |probe: &str| {
        let f = Finding::new(
            FindingId::ConnectionReset,
            Severity::Critical,
            Side::Server,
            "s",
        );
        zh_with_probe(f, probe)
    };
    let (s, e, x) = zh(ANSWER_UNSEEN_EVIDENCE);
    assert!(s.contains("无法判断响应是否完整"), "{s}");
    assert!(e.contains("快照长度"), "{e}");
    assert!(x.contains("tcpdump -s 0"), "{x}");
    let (s, e, _) = zh(AFTER_ANSWER_LOST_EVIDENCE);
    assert!(s.contains("这些请求丢失了"), "{s}");
    assert!(!s.contains("没有请求丢失"), "{s}");
    assert!(e.contains("下一个请求"), "{e}");
}

/// A client abort's own stories in Chinese, with the English text's numbers (read from
/// the probe's note, written as the detector writes it): a host without the connection
/// (`suri-tcp-empty-sack`), a client that gave up on a stalled response
/// (`suri-rst-unacked-http`); each also when only some of the resets were so.
#[test]
fn client_aborts_are_told_in_chinese_with_their_numbers() {
    use netdoctor_core::detect::connection_reset::{
        CLIENT_HOST_GONE_EVIDENCE, RESPONSE_STALLED_EVIDENCE, STALLED_NS,
    };
    let zh = |side: Side, probe: &str, note: &str| {
        let mut f = Finding::new(FindingId::ConnectionReset, Severity::Info, side, "s");
        f.explanation = "e".into();
        f.fix = "x".into();
        f.impact.affected_fraction = Some(0.2);
        f.evidence.push(Evidence::Probe {
            probe: probe.into(),
            note: note.into(),
        });
        let t = texts(&f, Lang::Zh);
        (
            t.summary.into_owned(),
            t.explanation.into_owned(),
            t.fix.into_owned(),
        )
    };
    let (s, e, x) = zh(
        Side::Client,
        CLIENT_HOST_GONE_EVIDENCE,
        "1 of 1 client resets acknowledge nothing: the client's host no longer had those \
         connections",
    );
    assert!(
        s.starts_with("客户端的主机在响应到达期间复位了 1 个连接"),
        "{s}"
    );
    assert!(s.contains("已经没有这些连接"), "{s}");
    assert!(e.contains("RFC 9293") && !e.contains("压测工具停止"), "{e}");
    assert!(
        x.contains("休眠") && !x.contains("tcp_abort_on_overflow"),
        "{x}"
    );
    let (s, e, _) = zh(
        Side::Client,
        CLIENT_HOST_GONE_EVIDENCE,
        "1 of 2 client resets acknowledge nothing: the client's host no longer had those \
         connections",
    );
    assert!(
        s.starts_with("客户端在响应到达期间复位了 2 个连接；其中 1 个"),
        "{s}"
    );
    assert!(e.contains("RFC 9293") && e.contains("压测工具停止"), "{e}");
    let (s, e, x) = zh(
        Side::Network,
        RESPONSE_STALLED_EVIDENCE,
        "1 of 1 client resets came after the response had stopped arriving: no response \
         byte for up to 43.1 s",
    );
    assert!(s.starts_with("客户端放弃了 1 个已经停止到达的响应"), "{s}");
    assert!(s.contains("最长 43.1 s") && s.contains("请求失败"), "{s}");
    let stalled = format!("已经有 {} s 或更久", STALLED_NS / 1_000_000_000);
    assert!(e.contains(&stalled), "{e}");
    assert!(x.contains("netdoctor trace"), "{x}");
    let (s, e, _) = zh(
        Side::Network,
        RESPONSE_STALLED_EVIDENCE,
        "2 of 3 client resets came after the response had stopped arriving: no response \
         byte for up to 6.0 s",
    );
    assert!(
        s.starts_with("客户端在响应到达期间复位了 3 个连接；其中 2 个"),
        "{s}"
    );
    assert!(s.contains("最长 6.0 s"), "{s}");
    assert!(e.contains("压测工具停止"), "{e}");
    // Without such a probe, the plain reset text.
    let (s, _, _) = zh(Side::Client, "load", "1 of 1 client resets");
    assert!(s.starts_with("客户端用 RST 复位了连接"), "{s}");
}

#[test]
fn english_is_the_detectors_text_and_empty_stays_empty() {
    let mut f = Finding::new(
        FindingId::NagleDelayedAck,
        Severity::Critical,
        Side::Server,
        "Server's Nagle algorithm waits",
    );
    f.fix = "Enable TCP_NODELAY".into();
    let en = texts(&f, Lang::En);
    assert_eq!(en.summary, "Server's Nagle algorithm waits");
    assert_eq!(en.explanation, "");
    let zh = texts(&f, Lang::Zh);
    assert!(zh.summary.contains("Nagle 算法"), "{}", zh.summary);
    assert!(zh.summary.contains("延迟确认"), "{}", zh.summary);
    assert_eq!(zh.explanation, "");
    assert!(zh.fix.contains("TCP_NODELAY"), "{}", zh.fix);
}

/// `dns_slow` told of the search list (probe `dns_search_list`, as netdoctor-route's
/// `dns_search_list` writes it) says the names tried and their cost in Chinese, and so do
/// `analyze`'s unanswered share (`dns_unanswered`) and truncated answers (`dns_truncated`);
/// other `dns_slow` stories keep the plain text.
#[test]
fn a_search_list_cost_is_told_in_chinese_with_its_numbers() {
    let zh = |probe: &str, note: &str| {
        let mut f = Finding::new(FindingId::DnsSlow, Severity::Warning, Side::Client, "s");
        f.explanation = "e".into();
        f.fix = "x".into();
        f.impact.added_latency_ms = Some(900.0);
        f.evidence.push(Evidence::Probe {
            probe: probe.into(),
            note: note.into(),
        });
        let t = texts(&f, Lang::Zh);
        (
            t.summary.into_owned(),
            t.explanation.into_owned(),
            t.fix.into_owned(),
        )
    };
    let (s, e, x) = zh(
        "dns_search_list",
        "3 of 4 names asked at 10.0.0.2 were NXDOMAIN before api.example.com answered: \
         900 ms of the 1211 ms lookup",
    );
    assert!(
        s.starts_with("搜索列表让解析先问了 3 个不存在的名字（共问了 4 个）"),
        "{s}"
    );
    assert!(s.contains("900"), "{s}");
    assert!(e.contains("ndots") && e.contains("NXDOMAIN"), "{e}");
    assert!(x.contains("ndots:1") && x.contains("dnsConfig"), "{x}");
    let (s, _, _) = zh("dns", "10.0.0.2 udp for api.test.: 301 ms");
    assert!(s.starts_with("名字解析很慢或不稳定"), "{s}");
    // `analyze`'s partly answering server and its truncated answers (analyze::dns::partial).
    let (s, e, x) = zh(
        "dns_unanswered",
        "22 of 68 queries to 10.0.53.2 unanswered; 22 lookup(s) answered after a retry, 0 never \
         answered",
    );
    assert!(
        s.starts_with("域名服务器有应答，但 68 个查询中有 22 个没有得到应答") && s.contains("900"),
        "{s}"
    );
    assert!(e.contains("超时") && x.contains("timeout"), "{e} {x}");
    let (s, e, x) = zh(
        "dns_truncated",
        "4 answer(s) from 10.0.53.2 had the TC bit: A big.lab",
    );
    assert!(s.contains("TC 位") && s.contains("TCP"), "{s}");
    // The lookups' whole time with their TCP retry (analyze::dns::legs).
    assert!(s.contains("每次查找共约") && s.contains("900"), "{s}");
    assert!(e.contains("EDNS") && x.contains("edns0"), "{e} {x}");
}

/// A server slow in the TLS handshake: its own text when the handshake is the whole story
/// (the probe leads the evidence, as the detector orders it; the recorded `tls-rsa8192`
/// capture is checked in the cli's tests), a sentence more after the slow requests' text when
/// the requests were slow too (the probe follows their evidence).
#[test]
fn a_slow_tls_handshake_is_told_in_chinese_alone_or_beside_slow_requests() {
    let probe = Evidence::Probe {
        probe: TLS_SERVER_EVIDENCE.into(),
        note: "16 of 32 TLS handshake turns: the server's time 26.0 ms (median of the slow \
               ones), 29.6 ms at most"
            .into(),
    };
    let packets = Evidence::Packets {
        connection: "10.0.0.1:5000 → 10.0.0.2:443".into(),
        packets: vec![],
        note: "n".into(),
    };
    let mut f = Finding::new(
        FindingId::SlowServerProcessing,
        Severity::Warning,
        Side::Server,
        "s",
    );
    f.explanation = "x".into();
    f.fix = "y".into();
    f.impact.added_latency_ms = Some(26.0);
    let plain = texts(&f, Lang::Zh).explanation.into_owned();
    f.evidence = vec![probe.clone(), packets.clone()];
    let squash = |s: &str| s.split_whitespace().collect::<String>();
    let alone = texts(&f, Lang::Zh);
    assert!(
        squash(&alone.summary).starts_with("服务端在TLS握手中要26.0ms才回复（16/32次握手往返）"),
        "{}",
        alone.summary
    );
    assert!(alone.explanation.starts_with("请求本身回答得很及时"));
    assert!(alone.fix.contains("ECDSA"), "{}", alone.fix);
    f.evidence = vec![packets, probe];
    let both = texts(&f, Lang::Zh);
    assert!(
        squash(&both.summary).starts_with("服务端要26.0ms才开始回复"),
        "{}",
        both.summary
    );
    assert!(both.explanation.starts_with(&plain), "{}", both.explanation);
    assert!(
        squash(&both.explanation).contains("TLS握手也慢：在16/32次TLS握手往返"),
        "{}",
        both.explanation
    );
    assert!(!both.fix.contains("ECDSA"), "{}", both.fix);
}

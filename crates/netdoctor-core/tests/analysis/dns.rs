//! DNS lookups in captures (`analyze::dns`), on third-party captures from
//! `../shared/realworld-pcaps/` (each test skips when the file is missing).

use crate::common;

use common::{corpus_file, for_each_packet};
use netdoctor_core::finding::{Evidence, FindingId, Layer, Severity, Side};
use netdoctor_core::packet::{LinkType, RawPacket};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze(name: &str) -> Option<Analysis> {
    analyze_with(name, |_| 1)
}

/// The analysis of corpus file `name` with each frame pushed `copies(frame)` times.
fn analyze_with(name: &str, copies: impl Fn(u64) -> usize) -> Option<Analysis> {
    let path = corpus_file(name)?;
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(path.to_str().unwrap(), |p| {
        for _ in 0..copies(p.frame) {
            a.push(p)
        }
    });
    Some(a.finish())
}

fn dns_ids(an: &Analysis) -> Vec<FindingId> {
    an.findings
        .iter()
        .filter(|f| f.layer == Layer::Dns)
        .map(|f| f.id)
        .collect()
}

#[test]
fn queries_never_answered_by_two_nameservers_are_unreachable_servers() {
    // ppa-nowebaccess1: A www.google.com (id 0x80d1) to 4.2.2.2 at 0, 2, 4, 8 s and to
    // 4.2.2.1 at 1, 4, 8 s, no answer; the gateway's ARP reply shows the capture sees
    // traffic toward the client.
    let Some(an) = analyze("ppa-nowebaccess1.pcapng") else {
        return;
    };
    assert_eq!(
        dns_ids(&an),
        [
            FindingId::DnsServerUnreachable,
            FindingId::DnsServerUnreachable
        ],
        "{:#?}",
        an.findings
    );
    let mut servers = Vec::new();
    for f in &an.findings {
        assert_eq!((f.severity, f.side), (Severity::Critical, Side::Network));
        // Both silent: what they share (the site's path to port 53) before replacing each
        // (session 26; before, each said "Remove or replace this nameserver").
        assert!(
            f.fix.starts_with(
                "Every nameserver the client asked (4.2.2.2, 4.2.2.1) was silent: look at what \
                 they share first."
            ),
            "{}",
            f.fix
        );
        let Evidence::Packets { packets, note, .. } = &f.evidence[0] else {
            panic!("{:?}", f.evidence)
        };
        assert!(
            note.contains("www.google.com") && note.contains("6 retries"),
            "{note}"
        );
        servers.push((
            f.summary.clone(),
            packets.iter().map(|p| p.frame).collect::<Vec<_>>(),
        ));
    }
    servers.sort();
    assert_eq!(
        servers,
        [
            (
                "nameserver 4.2.2.1 does not answer (timeouts)".to_string(),
                vec![4, 6, 8]
            ),
            (
                "nameserver 4.2.2.2 does not answer (timeouts)".to_string(),
                vec![3, 5, 7, 9]
            ),
        ]
    );
}

#[test]
fn servfail_is_a_server_error() {
    // ppa-stranded_clientside: A appserver answered SERVFAIL in 0.35 ms.
    let Some(an) = analyze("ppa-stranded_clientside.pcapng") else {
        return;
    };
    assert_eq!(
        dns_ids(&an),
        [FindingId::DnsServerError],
        "{:#?}",
        an.findings
    );
    let f = &an.findings[0];
    assert!(
        f.summary
            .contains("172.16.16.251 answers SERVFAIL for appserver"),
        "{}",
        f.summary
    );
    assert!(matches!(&f.evidence[0], Evidence::Probe { probe, .. } if probe == "dns_servfail"));
}

#[test]
fn one_query_at_the_capture_end_blames_nobody() {
    // ppa-udp_dnsrequest: one query, the capture ends with it.
    let Some(an) = analyze("ppa-udp_dnsrequest.pcapng") else {
        return;
    };
    assert_eq!(dns_ids(&an), [], "{:#?}", an.findings);
    assert!(
        an.warnings.iter().any(|w| w
            .starts_with("1 DNS lookup(s) unanswered when the capture ended")
            && w.contains("wireshark.org")),
        "{:?}",
        an.warnings
    );
}

#[test]
fn quick_answers_beside_http_tell_nothing() {
    // ppa-http_espn: 4.2.2.1 answers every lookup in 11-65 ms.
    for name in ["ppa-http_espn.pcapng", "ndpi-iphone.pcap"] {
        let Some(an) = analyze(name) else {
            return;
        };
        assert_eq!(dns_ids(&an), [], "{name}: {:#?}", an.findings);
        assert!(
            an.warnings.iter().all(|w| !w.contains("DNS")),
            "{name}: {:?}",
            an.warnings
        );
    }
}

#[test]
fn a_duplicated_query_frame_is_not_a_retry() {
    // ppa-nowebaccess1 with its first query (frame 3) in the capture twice.
    let Some(an) = analyze_with("ppa-nowebaccess1.pcapng", |f| if f == 3 { 2 } else { 1 }) else {
        return;
    };
    let f = an
        .findings
        .iter()
        .find(|f| f.summary.contains("4.2.2.2"))
        .expect("4.2.2.2 unreachable");
    let Evidence::Packets { packets, note, .. } = &f.evidence[0] else {
        panic!("{:?}", f.evidence)
    };
    assert_eq!(packets.len(), 4, "{packets:?}");
    assert!(
        note.contains("sent 4 time(s)") && note.contains("6 retries"),
        "{note}"
    );
    assert!(note.contains("1 duplicated frame(s)"), "{note}");
}

#[test]
fn a_capture_of_one_direction_cannot_say_the_server_is_dead() {
    // ppa-nowebaccess1 without the gateway's ARP reply (frame 2): nothing toward the client
    // is left, as with an outgoing-only capture filter.
    let Some(an) = analyze_with("ppa-nowebaccess1.pcapng", |f| usize::from(f != 2)) else {
        return;
    };
    assert_eq!(dns_ids(&an), [], "{:#?}", an.findings);
    assert!(
        an.warnings
            .iter()
            .any(|w| w.contains("it sees one direction") && w.contains("www.google.com")),
        "{:?}",
        an.warnings
    );
}

#[test]
fn mdns_is_not_a_nameserver() {
    // arkime-v6-http: mDNS (5353) queries and answers beside IPv6 HTTP.
    let Some(an) = analyze("arkime-v6-http.pcap") else {
        return;
    };
    assert_eq!(dns_ids(&an), [], "{:#?}", an.findings);
    assert!(
        an.warnings.iter().all(|w| !w.contains("DNS")),
        "{:?}",
        an.warnings
    );
}

/// An Ethernet/IPv4/UDP frame with a DNS message of one question (A): a query from
/// 10.0.0.5:40000 to 10.0.0.53:53, or (`rcode` given) the server's answer with that rcode.
fn dns_frame(id: u16, name: &str, rcode: Option<u8>) -> Vec<u8> {
    let mut dns = id.to_be_bytes().to_vec();
    dns.extend_from_slice(&match rcode {
        None => [0x01, 0x00],
        Some(rc) => [0x81, 0x80 | rc],
    });
    dns.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        dns.push(label.len() as u8);
        dns.extend_from_slice(label.as_bytes());
    }
    dns.extend_from_slice(&[0, 0, 1, 0, 1]);
    let (client, server) = ([10, 0, 0, 5], [10, 0, 0, 53]);
    let (src, dst, sport, dport) = match rcode {
        None => (client, server, 40000u16, 53u16),
        Some(_) => (server, client, 53, 40000),
    };
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + 8 + dns.len()) as u16;
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let ulen = (8 + dns.len()) as u16;
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&ulen.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&dns);
    f
}

/// Frames (milliseconds, id, name, rcode: `None` for the query) through an analyzer.
fn lookups(frames: &[(i64, u16, &str, Option<u8>)]) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for (i, &(ms, id, name, rcode)) in frames.iter().enumerate() {
        let data = dns_frame(id, name, rcode);
        a.push(&RawPacket {
            frame: i as u64 + 1,
            ts_ns: 1_700_000_000_000_000_000 + ms * 1_000_000,
            link: LinkType::Ethernet,
            data: &data,
            orig_len: data.len() as u32,
        });
    }
    a.finish()
}

#[test]
fn the_search_list_walk_is_the_clients_cost_not_a_missing_name() {
    // ndots:5 with three cluster suffixes: three NXDOMAINs (2 ms each) before the name as
    // written answers.
    let an = lookups(&[
        (0, 1, "api.example.com.default.svc.cluster.local", None),
        (2, 1, "api.example.com.default.svc.cluster.local", Some(3)),
        (3, 2, "api.example.com.svc.cluster.local", None),
        (5, 2, "api.example.com.svc.cluster.local", Some(3)),
        (6, 3, "api.example.com.cluster.local", None),
        (8, 3, "api.example.com.cluster.local", Some(3)),
        (9, 4, "api.example.com", None),
        (11, 4, "api.example.com", Some(0)),
    ]);
    assert_eq!(dns_ids(&an), [FindingId::DnsSlow], "{:#?}", an.findings);
    let f = &an.findings[0];
    assert_eq!((f.side, f.severity), (Side::Client, Severity::Info));
    assert_eq!(
        f.summary,
        "api.example.com: 3 names tried before the one that answered (each NXDOMAIN, 3.0 ms \
         each): 9.0 ms of the 11.0 ms lookup"
    );
    assert!(
        matches!(&f.evidence[0], Evidence::Probe { probe, note } if probe == "dns_search_list"
            && note.starts_with("3 of 4 names")),
        "{:?}",
        f.evidence
    );
}

#[test]
fn a_name_that_does_not_exist_is_not_found() {
    let an = lookups(&[
        (0, 7, "nosuch.example", None),
        (12, 7, "nosuch.example", Some(3)),
    ]);
    assert_eq!(
        dns_ids(&an),
        [FindingId::DnsNameNotFound],
        "{:#?}",
        an.findings
    );
    assert_eq!(an.findings[0].side, Side::Client);
}

#[test]
fn an_answer_after_a_retry_is_slow_not_dead() {
    // Lost once: re-sent after 1 s, answered 20 ms later; and an answer 6 s late, after the
    // client's last try at 5 s (a client that gave up).
    let an = lookups(&[
        (0, 9, "slow.example", None),
        (1000, 9, "slow.example", None),
        (1020, 9, "slow.example", Some(0)),
        (2000, 10, "late.example", None),
        (7000, 10, "late.example", None),
        (8000, 10, "late.example", Some(0)),
    ]);
    assert_eq!(dns_ids(&an), [FindingId::DnsSlow], "{:#?}", an.findings);
    let f = &an.findings[0];
    assert_eq!(f.side, Side::Network);
    assert_eq!(
        f.summary,
        "nameserver 10.0.0.53 left 2 of 4 queries unanswered (50 %): 2 lookup(s) answered only \
         after a retry (6000 ms median)"
    );
}

//! DNS lookups in captures (`analyze::dns`), on third-party captures from
//! `../shared/realworld-pcaps/` (each test skips when the file is missing).

use crate::common;

use common::{corpus_file, for_each_packet};
use netdoctor_core::finding::{Evidence, FindingId, Layer, Severity, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze(name: &str) -> Option<Analysis> {
    let path = corpus_file(name)?;
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(path.to_str().unwrap(), |p| a.push(p));
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
        an.warnings
            .iter()
            .any(|w| w.starts_with("1 DNS lookup(s) unanswered") && w.contains("wireshark.org")),
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

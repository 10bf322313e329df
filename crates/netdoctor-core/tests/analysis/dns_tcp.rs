//! DNS over TCP port 53 in the committed lab captures of `testdata/captures/make-dns.sh`
//! (glibc's resolver, `getent ahosts`, against `dns-responder.py`): lookups asked over TCP
//! from the start (`options use-vc`: A and AAAA in one segment on one connection), answered at
//! once or after 300 ms; answers truncated over UDP (TC) and asked again over TCP, answered
//! there, or the TCP leg failing: nothing listens on TCP 53 (the kernel resets the SYN), or a
//! DROP rule in the server's namespace (SYNs unanswered).

use crate::common;

use common::probe_note;
use netdoctor_core::Analysis;
use netdoctor_core::finding::{Evidence, Finding, FindingId, Layer, Severity, Side};

fn lab(name: &str) -> Analysis {
    common::analyze(&format!("{name}.pcap.gz")).0
}

fn dns(an: &Analysis) -> Vec<&Finding> {
    an.findings
        .iter()
        .filter(|f| f.layer == Layer::Dns)
        .collect()
}

/// The frame numbers of each packet evidence (probes skipped), and the notes.
fn pframes(f: &Finding) -> Vec<(Vec<u64>, String)> {
    f.evidence
        .iter()
        .filter_map(|e| match e {
            Evidence::Packets { packets, note, .. } => {
                Some((packets.iter().map(|p| p.frame).collect(), note.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn lookups_over_tcp_answered_at_once_are_no_finding_and_no_exchange() {
    // dns-tcp: three lookups (A + AAAA each) over three connections, answered in < 0.2 ms.
    // Read as turns, the connections were 3 request/response exchanges.
    let an = lab("dns-tcp");
    assert!(an.findings.is_empty(), "{:#?}", an.findings);
    assert_eq!(an.exchanges.count, 0);
}

#[test]
fn a_slow_answer_over_tcp_is_dns_slow_from_the_connections_syn() {
    // dns-tcp-slow: the same, every answer after 300 ms (the responder answers one query at a
    // time: A at 300 ms, AAAA at 600 ms). Read as turns, it was `slow_server_processing`.
    let an = lab("dns-tcp-slow");
    let v = dns(&an);
    assert_eq!(v.len(), 1, "{:#?}", an.findings);
    assert_eq!(an.findings.len(), 1, "{:#?}", an.findings);
    let f = v[0];
    assert_eq!(
        (f.id, f.severity, f.side),
        (FindingId::DnsSlow, Severity::Warning, Side::Network)
    );
    assert!(
        f.summary
            .starts_with("nameserver 10.0.53.2 is slow: 6 lookup(s) answered after 6"),
        "{}",
        f.summary
    );
    // The first lookup: its connection's SYN, the query (A and AAAA in frame 4), the answer.
    let (frames, note) = &pframes(f)[0];
    assert_eq!(frames[0], 1, "{frames:?}");
    assert_eq!(frames[1], 4, "{frames:?}");
    assert!(
        note.ends_with("over TCP, from its connection's SYN"),
        "{note}"
    );
    assert_eq!(an.exchanges.count, 0);
}

#[test]
fn truncated_answers_give_the_lookups_whole_time_with_their_tcp_leg() {
    // dns-tc: A big.lab / big2.lab truncated over UDP, answered in full over TCP (glibc asks
    // A and AAAA again there, same ids): frame 1 query, 3 TC answer, 4 the SYN, 8 the query
    // over TCP, 10 its answer 0.61 ms after the first query.
    let an = lab("dns-tc");
    let v = dns(&an);
    assert_eq!(v.len(), 1, "{:#?}", an.findings);
    let f = v[0];
    assert_eq!((f.id, f.severity), (FindingId::DnsSlow, Severity::Info));
    assert_eq!(
        f.summary,
        "nameserver 10.0.53.2 truncated 4 answer(s) over UDP (TC): the client had to ask again \
         over TCP (4 answered there, 0.3 ms per lookup in all, median)"
    );
    let p = pframes(f);
    assert_eq!(p[0].0, [1, 3, 8, 10]);
    assert!(
        p[0].1
            == "A big.lab answered truncated (TC), answered over TCP 0.6 ms after the first \
                query, 0.2 ms of it from the TCP SYN",
        "{}",
        p[0].1
    );
    assert_eq!(an.exchanges.count, 0);
}

#[test]
fn a_reset_tcp_leg_fails_the_lookup_on_the_server() {
    // dns-tc-rst: A big.lab truncated (frames 1, 3), the SYN to port 53 (5) reset at once (6).
    let an = lab("dns-tc-rst");
    let v = dns(&an);
    assert_eq!(v.len(), 1, "{:#?}", an.findings);
    let f = v[0];
    assert_eq!(
        (f.id, f.severity, f.side),
        (FindingId::DnsServerError, Severity::Critical, Side::Server)
    );
    assert_eq!(
        f.summary,
        "nameserver 10.0.53.2 truncates its answer for big.lab over UDP and TCP fails: the \
         server reset the TCP connection: nothing listens on TCP port 53 there"
    );
    assert!(
        probe_note(f, "dns_truncated").starts_with("1 answer(s) from 10.0.53.2 had the TC bit"),
        "{:?}",
        f.evidence
    );
    assert_eq!(pframes(f)[0].0, [1, 3, 5, 6]);
}

#[test]
fn an_unanswered_syn_fails_the_lookup_on_the_network() {
    // dns-tc-drop: A big.lab truncated (frames 1, 2), the SYN (4) repeated 3 times over 3.1 s
    // and never answered (a DROP rule for TCP 53 in the server's namespace).
    let an = lab("dns-tc-drop");
    let v = dns(&an);
    assert_eq!(v.len(), 1, "{:#?}", an.findings);
    let f = v[0];
    assert_eq!(
        (f.id, f.severity, f.side),
        (FindingId::DnsServerError, Severity::Critical, Side::Network)
    );
    assert!(
        f.summary.ends_with(
            "the TCP connection was never answered (SYN repeated, no SYN/ACK): TCP port 53 is \
             dropped on the way"
        ),
        "{}",
        f.summary
    );
    let p = pframes(f);
    assert_eq!(p[0].0, [1, 2, 4]);
    assert_eq!(p[0].1, "A big.lab: 4 TCP SYN(s), no SYN/ACK");
}

#[test]
fn a_slow_answer_over_tcp_after_a_truncated_one_is_dns_slow_and_the_whole_time() {
    // dns-tc-slow: A big.lab truncated over UDP at once (frames 1, 2), asked again over TCP
    // with its AAAA (8), answered there after 300 ms (10) and 600 ms (12); getent asks twice.
    // The AAAA lookups were answered over UDP at once, but glibc waited for their TCP answer.
    let an = lab("dns-tc-slow");
    let v = dns(&an);
    assert_eq!(v.len(), 2, "{:#?}", an.findings);
    let slow = v.iter().find(|f| f.severity == Severity::Warning).unwrap();
    assert_eq!(slow.id, FindingId::DnsSlow);
    assert_eq!(
        slow.summary,
        "nameserver 10.0.53.2 is slow: 4 lookup(s) answered after 601 ms (median)"
    );
    let p = pframes(slow);
    assert_eq!(p[0].0, [1, 2, 8, 10]);
    assert_eq!(p[0].1, "answered in 300.9 ms (its TCP retry's answer)");
    let tc = v.iter().find(|f| f.severity == Severity::Info).unwrap();
    assert!(
        tc.summary
            .ends_with("(2 answered there, 300.9 ms per lookup in all, median)"),
        "{}",
        tc.summary
    );
    assert_eq!(an.exchanges.count, 0);
}

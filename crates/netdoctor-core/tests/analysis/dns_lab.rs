//! DNS lookups in the committed lab captures made by `testdata/captures/make-dns.sh` (glibc's
//! resolver, `getent`, against `dns-responder.py` in a namespace): REFUSED, a nameserver
//! dropping every 3rd query, PTR queries dropped, every answer slow, answers truncated over
//! UDP (TC). And hand-made frames for what the lab does not record: a second, dead server
//! beside a lossy one, and a lossy server whose answers are slow too.

use crate::common;

use common::{frames, one, probe_note};
use netdoctor_core::finding::{Evidence, Finding, FindingId, Layer, Severity, Side};
use netdoctor_core::packet::{LinkType, RawPacket};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn lab(name: &str) -> Analysis {
    common::analyze(&format!("{name}.pcap.gz")).0
}

/// The frame numbers of each packet evidence (probes skipped).
fn pframes(f: &Finding) -> Vec<Vec<u64>> {
    f.evidence
        .iter()
        .filter_map(|e| match e {
            Evidence::Packets { packets, .. } => Some(packets.iter().map(|p| p.frame).collect()),
            _ => None,
        })
        .collect()
}

fn dns_ids(an: &Analysis) -> Vec<FindingId> {
    an.findings
        .iter()
        .filter(|f| f.layer == Layer::Dns)
        .map(|f| f.id)
        .collect()
}

#[test]
fn refused_answers_are_a_server_error_on_real_traffic() {
    // dns-refused: api.lab and www.lab, A and AAAA, each answered REFUSED; glibc asks each
    // three times (same id, answered each time in < 0.2 ms): 12 answers.
    let an = lab("dns-refused");
    assert_eq!(
        dns_ids(&an),
        [FindingId::DnsServerError],
        "{:#?}",
        an.findings
    );
    let f = &an.findings[0];
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Network));
    assert_eq!(
        f.summary,
        "nameserver 10.0.53.2 answers REFUSED for api.lab: it refuses to resolve for this client"
    );
    assert!(
        probe_note(f, "dns_refused").starts_with("12 lookup(s) answered REFUSED"),
        "{:?}",
        f.evidence
    );
    assert_eq!(pframes(f)[0], [1, 3]);
}

#[test]
fn a_server_dropping_every_third_query_is_slow_not_dead() {
    // dns-lossy: 12 names, A and AAAA in parallel; 68 queries, 46 answers (tshark). glibc
    // re-sends a lost query after its 1 s timeout, at times from a new socket with the same
    // id: the same lookup, so every lookup got its answer in the end.
    let an = lab("dns-lossy");
    assert_eq!(dns_ids(&an), [FindingId::DnsSlow], "{:#?}", an.findings);
    let f = &an.findings[0];
    assert_eq!((f.severity, f.side), (Severity::Warning, Side::Network));
    assert_eq!(
        f.summary,
        "nameserver 10.0.53.2 left 22 of 68 queries unanswered (32 %): 22 lookup(s) answered \
         only after a retry (1001 ms median)"
    );
    assert!(
        probe_note(f, "dns_unanswered").starts_with("22 of 68 queries to 10.0.53.2 unanswered"),
        "{:?}",
        f.evidence
    );
    assert!(f.explanation.contains("were quick"), "{}", f.explanation);
    let fr = pframes(f);
    // A h2.lab lost (5), re-sent at 1 s (8), answered (9); then AAAA h2.lab re-sent on the
    // old socket (10), lost, and once more from a new socket (13), answered (14).
    assert_eq!(fr[0], [5, 8, 9]);
    assert_eq!(fr[1], [10, 13, 14]);
    assert!((f.impact.added_latency_ms.unwrap() - 1000.5).abs() < 1.0);
}

#[test]
fn ptr_queries_left_unanswered_are_reverse_dns_timeouts() {
    // dns-ptr: A/AAAA api.lab answered at once; PTR of 10.9.0.7 and 10.9.0.8 asked three
    // times each (1 s apart), never answered; the capture ends with the last PTR query.
    let an = lab("dns-ptr");
    assert_eq!(
        dns_ids(&an),
        [FindingId::ReverseDnsTimeout],
        "{:#?}",
        an.findings
    );
    let f = &an.findings[0];
    assert_eq!((f.severity, f.side), (Severity::Warning, Side::Network));
    assert_eq!(
        f.summary,
        "reverse (PTR) lookups of 10.9.0.7, 10.9.0.8 time out at 10.0.53.2: 5 of 5 PTR queries \
         unanswered"
    );
    assert!(
        f.explanation.contains("forward queries were answered"),
        "{}",
        f.explanation
    );
    assert_eq!(frames(f), [vec![5, 6, 7], vec![8, 9, 10]]);
    assert!((f.impact.added_latency_ms.unwrap() - 2002.0).abs() < 5.0);
}

#[test]
fn a_server_answering_every_lookup_slowly_is_slow_not_partly_dead() {
    // dns-slow: every answer 300 ms after its query (the responder answers one at a time:
    // AAAA waits for A, 600 ms); nothing lost.
    let an = lab("dns-slow");
    assert_eq!(dns_ids(&an), [FindingId::DnsSlow], "{:#?}", an.findings);
    let f = &an.findings[0];
    assert_eq!(
        f.summary,
        "nameserver 10.0.53.2 is slow: 8 lookup(s) answered after 601 ms (median)"
    );
    assert_eq!(f.side, Side::Network);
    assert_eq!(frames(f)[0], [1, 3]);
}

#[test]
fn truncated_answers_tell_the_retry_over_tcp() {
    // dns-tc: A big.lab / big2.lab answered with the TC bit over UDP (40 addresses do not
    // fit), glibc asks again over TCP port 53 (answered there in full); AAAA fits.
    let an = lab("dns-tc");
    assert_eq!(dns_ids(&an), [FindingId::DnsSlow], "{:#?}", an.findings);
    let f = &an.findings[0];
    assert_eq!((f.severity, f.side), (Severity::Info, Side::Server));
    assert!(
        f.summary.starts_with(
            "nameserver 10.0.53.2 truncated 4 answer(s) over UDP (TC): the client had to ask \
             again over TCP"
        ),
        "{}",
        f.summary
    );
    // Each: the query and its TC answer over UDP, the query and its answer over TCP.
    assert_eq!(
        pframes(f),
        [
            vec![1, 3, 8, 10],
            vec![17, 18, 24, 26],
            vec![33, 34, 39, 41],
            vec![47, 48, 54, 58]
        ]
    );
}

/// One hand-made DNS frame: (ms, client port, server's last octet, id, name, qtype, rcode:
/// `None` for the query). Client 10.0.0.5, servers 10.0.0.x, port 53.
type F<'a> = (i64, u16, u8, u16, &'a str, u16, Option<u8>);

fn frame(&(_, port, srv, id, name, qtype, rcode): &F) -> Vec<u8> {
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
    dns.push(0);
    dns.extend_from_slice(&qtype.to_be_bytes());
    dns.extend_from_slice(&[0, 1]);
    let (client, server) = ([10, 0, 0, 5], [10, 0, 0, srv]);
    let (src, dst, sport, dport) = match rcode {
        None => (client, server, port, 53u16),
        Some(_) => (server, client, 53, port),
    };
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + 8 + dns.len()) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + dns.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&dns);
    f
}

fn run(frames: &[F]) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for (i, f) in frames.iter().enumerate() {
        let data = frame(f);
        a.push(&RawPacket {
            frame: i as u64 + 1,
            ts_ns: 1_700_000_000_000_000_000 + f.0 * 1_000_000,
            link: LinkType::Ethernet,
            data: &data,
            orig_len: data.len() as u32,
        });
    }
    a.finish()
}

#[test]
fn a_dead_server_beside_a_lossy_one_stays_unreachable() {
    // glibc with two nameservers: .53 never answers (first try of each lookup), .54 answers
    // two lookups at once and loses one query (re-sent 1 s later, answered).
    let an = run(&[
        (0, 4000, 53, 1, "a.example", 1, None),
        (1000, 4000, 54, 1, "a.example", 1, None),
        (1002, 4000, 54, 1, "a.example", 1, Some(0)),
        (2000, 4001, 53, 2, "b.example", 1, None),
        (3000, 4001, 54, 2, "b.example", 1, None),
        (4000, 4001, 54, 2, "b.example", 1, None),
        (4002, 4001, 54, 2, "b.example", 1, Some(0)),
        (6000, 4002, 54, 3, "c.example", 1, None),
        (6002, 4002, 54, 3, "c.example", 1, Some(0)),
    ]);
    let mut ids = dns_ids(&an);
    ids.sort_by_key(|i| i.to_string());
    assert_eq!(
        ids,
        [FindingId::DnsServerUnreachable, FindingId::DnsSlow],
        "{:#?}",
        an.findings
    );
    let dead = one(&an, FindingId::DnsServerUnreachable);
    assert_eq!(
        dead.summary,
        "nameserver 10.0.0.53 does not answer (timeouts)"
    );
    assert_eq!(dead.severity, Severity::Warning);
    // Beside a live one, the dead server alone is to replace.
    assert!(
        dead.fix
            .starts_with("Remove or replace this nameserver in the client's resolv.conf"),
        "{}",
        dead.fix
    );
    let lossy = one(&an, FindingId::DnsSlow);
    assert!(
        lossy
            .summary
            .starts_with("nameserver 10.0.0.54 left 1 of 4 queries unanswered (25 %)"),
        "{}",
        lossy.summary
    );
    // The lookup's frames: its first try went to the dead .53.
    assert_eq!(pframes(lossy), [vec![4, 5, 6, 7]]);
}

#[test]
fn a_lossy_server_whose_answers_are_slow_too_is_the_server() {
    // Answers at the first try take 400 ms; one query in three is never answered.
    let an = run(&[
        (0, 4000, 53, 1, "a.example", 1, None),
        (400, 4000, 53, 1, "a.example", 1, Some(0)),
        (1000, 4001, 53, 2, "b.example", 1, None),
        (2000, 4001, 53, 2, "b.example", 1, None),
        (2400, 4001, 53, 2, "b.example", 1, Some(0)),
        (3000, 4002, 53, 3, "c.example", 1, None),
        (3400, 4002, 53, 3, "c.example", 1, Some(0)),
        (5000, 4003, 53, 4, "d.example", 1, None),
        (7000, 4003, 53, 4, "d.example", 1, None),
        (9500, 4004, 53, 5, "e.example", 1, None),
        (9900, 4004, 53, 5, "e.example", 1, Some(0)),
    ]);
    assert_eq!(dns_ids(&an), [FindingId::DnsSlow], "{:#?}", an.findings);
    let f = &an.findings[0];
    assert_eq!(f.side, Side::Server);
    assert_eq!(
        f.summary,
        "nameserver 10.0.0.53 left 3 of 7 queries unanswered (43 %): 1 lookup(s) answered only \
         after a retry (1400 ms median), 1 never answered"
    );
    assert!(f.explanation.contains("overloaded"), "{}", f.explanation);
}

#[test]
fn a_ptr_answered_late_after_retries_is_a_reverse_timeout_not_slow_dns() {
    // The PTR answered after two lost tries (2 s); the A lookups answered at once.
    let an = run(&[
        (0, 4000, 53, 1, "a.example", 1, None),
        (1, 4000, 53, 1, "a.example", 1, Some(0)),
        (10, 4001, 53, 2, "9.0.0.10.in-addr.arpa", 12, None),
        (1010, 4001, 53, 2, "9.0.0.10.in-addr.arpa", 12, None),
        (2010, 4001, 53, 2, "9.0.0.10.in-addr.arpa", 12, None),
        (2012, 4001, 53, 2, "9.0.0.10.in-addr.arpa", 12, Some(0)),
        (3000, 4002, 53, 3, "b.example", 1, None),
        (3001, 4002, 53, 3, "b.example", 1, Some(0)),
    ]);
    assert_eq!(
        dns_ids(&an),
        [FindingId::ReverseDnsTimeout],
        "{:#?}",
        an.findings
    );
    let f = &an.findings[0];
    assert!(
        f.summary
            .starts_with("reverse (PTR) lookups of 10.0.0.9 time out at 10.0.0.53: 2 of 3"),
        "{}",
        f.summary
    );
    assert_eq!(frames(f), [vec![3, 4, 5, 6]]);
}

//! Stories a capture gap on the client's side made up (corpus captures of
//! `../shared/realworld-pcaps/`, skipped when missing; the files are never copied here).
//!
//! - A request the capture missed, on a keep-alive connection: its answer ran on as the body
//!   of the answer before it, so two quick exchanges 15 s apart became one of 15 s. The
//!   server's ACK tells it: it covers client bytes the capture never saw, past what it had
//!   acknowledged when the answer in progress began. The look-alike keeps its reading: a
//!   request whose tail the capture missed (the answer's first segment already acknowledges
//!   it) is still answered by the whole answer.
//! - A handshake slower than the path: the first request's ACK (154 ms, a delayed ACK in it)
//!   made a 407 ms handshake "the path", while later requests on the connection were
//!   acknowledged in 111 ms and took 135 ms (median) at the client. The look-alikes keep
//!   `high_base_rtt`: ppa-latency2 (the path really is slow), arkime-http-500-head (a far
//!   client behind the capture point, whose 2.8 ms requests are not "mostly this path time").

use crate::common;

use common::{corpus_file, for_each_packet};
use netdoctor_core::finding::{FindingId, Severity, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

/// Corpus file `name` without the frames in `drop` (numbers from 1), or `None` (with a line
/// saying so) when it is missing.
fn without(name: &str, drop: &[u64]) -> Option<Analysis> {
    let path = corpus_file(name)?;
    let mut a = Analyzer::new(AnalyzerConfig::default());
    let mut k = 0u64;
    for_each_packet(path.to_str().unwrap(), |p| {
        k += 1;
        if !drop.contains(&k) {
            a.push(p);
        }
    });
    Some(a.finish())
}

#[test]
fn an_answer_to_a_request_the_capture_missed_is_not_the_answer_before() {
    // zeek-zero-length-bodies-with-drops: a GET at 122.40 s answered at 122.53 s (a whole
    // `Content-Length: 0` answer), a GET the capture missed (the server's ACK at 137.60 s
    // covers its 1275 bytes) answered at 137.60 s. Before: one exchange of 15.2 s, the p99.
    let Some(an) = without("zeek-zero-length-bodies-with-drops.pcap", &[]) else {
        return;
    };
    assert_eq!(an.exchanges.count, 7);
    let max = an.exchanges.latency_ms.max;
    assert!(max < 1000.0, "max latency {max} ms");

    // ppa-http_post without frame 7 (the GET after the POST): the 200 answer to it, 1 s
    // later, is not the POST's. Before: the POST's exchange ran to 2.53 s.
    let Some(whole) = without("ppa-http_post.pcapng", &[]) else {
        return;
    };
    let an = without("ppa-http_post.pcapng", &[7]).unwrap();
    assert_eq!((whole.exchanges.count, an.exchanges.count), (2, 1));
    let post = an.exchanges.latency_ms.max;
    assert!((1350.0..1365.0).contains(&post), "POST exchange {post} ms");
}

#[test]
fn a_request_whose_tail_the_capture_missed_keeps_its_whole_answer() {
    // ppp-one_tcp_stream_max_seq: a POST in three segments (frames 4–6, and 7 resending the
    // end of it); without 6 and 7 the server's ACK (frame 9) and every segment of its answer
    // (frames 10–15) cover 31 bytes the capture never saw. They were acknowledged before the
    // answer began: the answer is still the POST's, 197.9 ms from its first byte to the last.
    let Some(whole) = without("ppp-one_tcp_stream_max_seq.pcap", &[]) else {
        return;
    };
    let an = without("ppp-one_tcp_stream_max_seq.pcap", &[6, 7]).unwrap();
    assert_eq!(an.exchanges.count, whole.exchanges.count);
    let (a, b) = (whole.exchanges.latency_ms.p50, an.exchanges.latency_ms.p50);
    assert!((197.0..199.0).contains(&a), "whole {a} ms");
    assert!((a - b).abs() < 0.5, "whole {a} ms, without the tail {b} ms");
}

#[test]
fn a_handshake_slower_than_the_requests_is_a_slow_setup_not_a_slow_path() {
    let Some(an) = without("zeek-zero-length-bodies-with-drops.pcap", &[]) else {
        return;
    };
    assert!(
        an.findings.iter().all(|f| f.id != FindingId::HighBaseRtt),
        "{:#?}",
        an.findings
    );
    let f: Vec<_> = an
        .findings
        .iter()
        .filter(|f| f.id == FindingId::SynRetransmit)
        .collect();
    assert_eq!(f.len(), 1, "{:#?}", an.findings);
    assert_eq!(
        (f[0].severity, f[0].side),
        (Severity::Warning, Side::Server)
    );
    assert!(
        f[0].summary.contains("the SYN/ACK came late"),
        "{}",
        f[0].summary
    );
    // Beyond the path's 111 ms round trip: about 296 ms.
    let added = f[0].impact.added_latency_ms.unwrap();
    assert!((280.0..310.0).contains(&added), "{added}");
}

#[test]
fn a_slow_path_stays_one_and_is_not_said_of_requests_quicker_than_it() {
    // ppa-latency2: SYN/ACK 879 ms after the SYN, the request acknowledged 1155 ms after it
    // left: the path.
    if let Some(an) = without("ppa-latency2.pcapng", &[]) {
        assert!(
            an.findings.iter().any(|f| f.id == FindingId::HighBaseRtt),
            "{:#?}",
            an.findings
        );
    }
    // arkime-http-500-head: 385 ms handshake (384 ms of it on the client's side of the capture
    // point), requests of 2.8 ms as captured: still the path, but not "mostly this path time".
    let Some(an) = without("arkime-http-500-head.pcap", &[]) else {
        return;
    };
    let f: Vec<_> = an
        .findings
        .iter()
        .filter(|f| f.id == FindingId::HighBaseRtt)
        .collect();
    assert_eq!(f.len(), 1, "{:#?}", an.findings);
    assert!(
        !f[0].explanation.contains("mostly this path time"),
        "{}",
        f[0].explanation
    );
    assert!(
        f[0].explanation.contains("less than one such round trip"),
        "{}",
        f[0].explanation
    );
}

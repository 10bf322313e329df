//! A connection per request does not cost the SYNs nobody answered (session 30).
//! `syn-lost-client.pcap.gz` (`make-syn-vantage.sh`): an HTTP/1.0 client opens six
//! connections; the listener's accept queue is full for 2.5 s, so four of them repeat their
//! SYN for 3 s. `short_connections` counted the setup from the first SYN (3055 ms per request,
//! critical) and led the verdict, where the story is the lost SYNs: a connection that went
//! through costs a 0.18 ms handshake on this veth. The setup is now counted from the SYN the
//! server answered, the repeats named as `syn_retransmit`'s. Look-alikes: the same run seen at
//! the server; every frame captured twice (a port mirror: a duplicate SYN is no repeat); short
//! connections to a far server without any repeat keep their setup from the first SYN
//! (`abandoned-connects.pcap.gz`: 37 ms handshakes).

use crate::common::{analyze, one};
use netdoctor_core::finding::{Finding, FindingId, Severity, rank};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

/// The ranked and related findings, as the report orders them.
fn told(an: &Analysis) -> Vec<Finding> {
    let mut v = an.findings.clone();
    rank(&mut v);
    netdoctor_core::relate::relate(&mut v);
    v
}

fn lost_syns_lead(an: &Analysis) {
    let v = told(an);
    assert_eq!(v[0].id, FindingId::SynRetransmit, "{v:#?}");
    let f = one(an, FindingId::ShortConnections);
    assert_eq!(f.severity, Severity::Info, "{f:#?}");
    let setup = f.impact.added_latency_ms.unwrap();
    assert!(setup < 1.0, "setup {setup} ms");
    assert!(
        f.summary.contains(
            "not counted: 4 connections waited 3060 ms (median) on repeated SYNs before the \
             server answered (syn_retransmit)"
        ),
        "{}",
        f.summary
    );
    assert!(
        f.explanation.contains("from the SYN the server answered"),
        "{}",
        f.explanation
    );
}

#[test]
fn the_lost_syns_lead_not_the_connection_per_request() {
    for name in ["syn-lost-client.pcap.gz", "syn-lost-server.pcap.gz"] {
        let (an, _) = analyze(name);
        lost_syns_lead(&an);
    }
}

#[test]
fn duplicated_frames_are_no_repeated_syns() {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    crate::common::for_each_packet("syn-lost-client.pcap.gz", |p| {
        a.push(p);
        a.push(p);
    });
    lost_syns_lead(&a.finish());
}

#[test]
fn without_repeats_the_setup_runs_from_the_first_syn() {
    // A far server (37 ms handshakes), no SYN repeated: the setup is the whole handshake.
    let (an, _) = analyze("abandoned-connects.pcap.gz");
    let f = one(&an, FindingId::ShortConnections);
    assert!(!f.summary.contains("not counted"), "{}", f.summary);
    assert!(
        f.explanation.contains("here from the SYN to"),
        "{}",
        f.explanation
    );
    let setup = f.impact.added_latency_ms.unwrap();
    assert!((30.0..45.0).contains(&setup), "setup {setup} ms");
}

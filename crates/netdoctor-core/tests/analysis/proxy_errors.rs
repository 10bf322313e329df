//! A reverse proxy's 504 and 502 told as such (session 27, explore11; `make-proxy.sh`:
//! nginx `proxy_pass` between two namespaces, captured next to the client, 12 requests each).
//! `proxy-504`: `proxy_read_timeout 1s` before an upstream that needs 3 s, each 504 after
//! 1.00 s: the proxy's timeout, the upstream to look at. `proxy-502`: nothing listens on the
//! upstream port, each 502 in ~0.2 ms: the upstream refused (down). Look-alike: `app-504`, an
//! application answering 504 itself after 0.2-1.6 s: the plain text (no common wait).

use crate::common::{analyze, one, probe};
use netdoctor_core::detect::http_errors::{
    PROXY_TIMEOUT_EVIDENCE, PROXY_WAITED_EVIDENCE, UPSTREAM_REFUSED_EVIDENCE,
};
use netdoctor_core::finding::{FindingId, Severity, Side};

#[test]
fn steady_504s_are_the_proxys_timeout_and_the_upstream_is_to_look_at() {
    let (an, _) = analyze("proxy-504.pcap.gz");
    let f = one(&an, FindingId::HttpErrors);
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Server));
    assert!(
        f.summary.ends_with(
            "HTTP 504 Gateway Timeout, each 1.00 s after its request: a proxy's timeout, it \
             gave up waiting for its upstream"
        ),
        "{}",
        f.summary
    );
    assert!(f.fix.starts_with("Look at the upstream"), "{}", f.fix);
    assert!(f.fix.contains("proxy_read_timeout"), "{}", f.fix);
    let note = probe(f, PROXY_TIMEOUT_EVIDENCE).unwrap_or_else(|| panic!("{f:#?}"));
    assert!(
        note.starts_with("12 of 12 captured HTTP 504 answers"),
        "{note}"
    );
}

#[test]
fn quick_502s_are_an_upstream_that_refused() {
    let (an, _) = analyze("proxy-502.pcap.gz");
    let f = one(&an, FindingId::HttpErrors);
    assert!(
        f.summary
            .contains("the proxy's upstream refused or closed the connection at once"),
        "{}",
        f.summary
    );
    assert!(f.fix.contains("Connection refused"), "{}", f.fix);
    assert!(probe(f, UPSTREAM_REFUSED_EVIDENCE).is_some(), "{f:#?}");
}

#[test]
fn an_application_answering_504_at_varied_times_is_no_proxy_timeout() {
    let (an, _) = analyze("app-504.pcap.gz");
    let f = one(&an, FindingId::HttpErrors);
    assert!(
        f.summary.ends_with("HTTP 504 Gateway Timeout"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("proxy"), "{}", f.summary);
    assert!(probe(f, PROXY_TIMEOUT_EVIDENCE).is_none(), "{f:#?}");
}

/// The run's findings as the report shows them: ranked, then related.
fn related(name: &str) -> Vec<netdoctor_core::finding::Finding> {
    let (an, _) = analyze(name);
    let mut v = an.findings;
    netdoctor_core::finding::rank(&mut v);
    netdoctor_core::relate::relate(&mut v);
    v
}

#[test]
fn the_server_time_of_a_proxy_timeout_is_its_wait_for_the_upstream_one_story() {
    let v = related("proxy-504.pcap.gz");
    let ids: Vec<FindingId> = v.iter().map(|f| f.id).collect();
    assert_eq!(
        ids,
        [FindingId::HttpErrors, FindingId::SlowServerProcessing],
        "{v:#?}"
    );
    let slow = &v[1];
    assert_eq!(slow.caused_by, Some(FindingId::HttpErrors));
    assert_eq!(v[0].consequences, [FindingId::SlowServerProcessing]);
    // Severity and side stay (the verdict is untouched); the text is the proxy's wait.
    assert_eq!(
        (slow.severity, slow.side),
        (Severity::Critical, Side::Server)
    );
    assert!(
        slow.summary.ends_with(
            "; this is the proxy's 1.00 s timeout: it waited for its upstream, gave up and \
             answered 504, not its own work"
        ),
        "{}",
        slow.summary
    );
    assert!(
        slow.fix
            .starts_with("Caused by http_errors (above): look at the upstream behind the proxy"),
        "{}",
        slow.fix
    );
    assert!(
        !slow.fix.contains("profile the request handler"),
        "{}",
        slow.fix
    );
    let note = probe(slow, PROXY_WAITED_EVIDENCE).unwrap_or_else(|| panic!("{slow:#?}"));
    assert!(note.contains("is the proxy's 1.00 s timeout"), "{note}");
}

#[test]
fn an_application_slow_at_varied_times_keeps_its_own_server_story() {
    // app-504: the same 504s, no common wait: the server's time is its own.
    let v = related("app-504.pcap.gz");
    let slow = v
        .iter()
        .find(|f| f.id == FindingId::SlowServerProcessing)
        .unwrap_or_else(|| panic!("{v:#?}"));
    assert_eq!(slow.caused_by, None);
    assert!(probe(slow, PROXY_WAITED_EVIDENCE).is_none(), "{slow:#?}");
    assert!(
        slow.fix.starts_with("Look inside the server"),
        "{}",
        slow.fix
    );
}

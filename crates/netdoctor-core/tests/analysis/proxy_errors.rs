//! A reverse proxy's 504 and 502 told as such (session 27, explore11; `make-proxy.sh`:
//! nginx `proxy_pass` between two namespaces, captured next to the client, 12 requests each).
//! `proxy-504`: `proxy_read_timeout 1s` before an upstream that needs 3 s, each 504 after
//! 1.00 s: the proxy's timeout, the upstream to look at. `proxy-502`: nothing listens on the
//! upstream port, each 502 in ~0.2 ms: the upstream refused (down). Look-alike: `app-504`, an
//! application answering 504 itself after 0.2-1.6 s: the plain text (no common wait).

use crate::common::{analyze, one, probe};
use netdoctor_core::detect::http_errors::{PROXY_TIMEOUT_EVIDENCE, UPSTREAM_REFUSED_EVIDENCE};
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

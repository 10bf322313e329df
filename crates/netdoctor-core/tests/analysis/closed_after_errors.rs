//! One connection per request because every answer was an error the server closes after.
//!
//! `error-answers-close.pcap.gz` (testdata/captures/README.md): nginx `return 400;` (nginx
//! closes after a 400 with `Connection: close`), `netdoctor load --rate 40 -d 1s -c 4`. The same
//! signature came live from an nginx that requires a TLS client certificate
//! (`ssl_verify_client on`): 100 % 400s, each on its own connection, and `diagnose` led with a
//! critical `short_connections` on the server: "Let the server keep connections open: enable
//! HTTP keep-alive". The server's keep-alive was on; the errors closed the connections.
//!
//! Look-alike kept: `idle-server-close.pcap.gz`, nginx `keepalive_timeout 0` answering 200s:
//! the server's keep-alive setting, side server, its own root.

use crate::common;

use common::analyze;
use netdoctor_core::finding::{Finding, FindingId, Side};
use netdoctor_core::relate::relate;

fn related(name: &str) -> Vec<Finding> {
    let (an, _) = analyze(name);
    let mut v = an.findings;
    relate(&mut v);
    v
}

fn the(v: &[Finding], id: FindingId) -> &Finding {
    let f: Vec<&Finding> = v.iter().filter(|f| f.id == id).collect();
    assert_eq!(f.len(), 1, "{id}: {v:#?}");
    f[0]
}

#[test]
fn connections_closed_after_error_answers_follow_from_the_errors() {
    let v = related("error-answers-close.pcap.gz");
    let errors = the(&v, FindingId::HttpErrors);
    assert_eq!(errors.side, Side::Client);
    assert!(
        errors.summary.contains("40 of 40") && errors.summary.contains("HTTP 400"),
        "{}",
        errors.summary
    );
    let short = the(&v, FindingId::ShortConnections);
    assert_eq!(short.caused_by, Some(FindingId::HttpErrors), "{short:#?}");
    assert_eq!(short.side, Side::Client, "{short:#?}");
    assert!(
        short.fix.starts_with(
            "Caused by http_errors (above): the server closes a connection after an error answer"
        ),
        "{}",
        short.fix
    );
    // The root first, its consequence right after it.
    let pos = |id| v.iter().position(|f| f.id == id);
    assert_eq!(
        pos(FindingId::ShortConnections),
        pos(FindingId::HttpErrors).map(|p| p + 1)
    );
}

#[test]
fn a_server_with_keep_alive_off_is_still_its_own_root() {
    let v = related("idle-server-close.pcap.gz");
    assert!(v.iter().all(|f| f.id != FindingId::HttpErrors), "{v:#?}");
    let short = the(&v, FindingId::ShortConnections);
    assert_eq!((short.side, short.caused_by), (Side::Server, None));
    assert!(
        short
            .fix
            .starts_with("Let the server keep connections open"),
        "{}",
        short.fix
    );
}

//! A client that gives up on its own connection attempts is not refused.
//!
//! `abandoned-connects.pcap.gz` (see testdata/captures/README.md): `netdoctor diagnose
//! --no-keepalive -c 10 -d 1s` from the far-server lab's client to an nginx behind the +37 ms
//! hop. When the load stopped, its last 10 connection attempts were still waiting for their
//! SYN/ACK; each came one round trip after the only SYN and the client's kernel, whose socket
//! was gone, reset it: SYN, SYN/ACK, client `[R]`. The server accepted every one on time.
//! Before the fix these were read as "SYN answered by a reset" (a refusal): a critical
//! `connection_reset` "although nginx listens" (firewall, tcp_abort_on_overflow, loss) in
//! `diagnose`, a `server_not_listening` warning on the server in `analyze`.
//!
//! Look-alikes still told as before: `route-lossy.pcap` (the SYN repeated over a lossy hop, the
//! client's connect timed out and it reset the late SYN/ACK: an abandoned handshake told with
//! the loss) and `reset.pcap` (the server's reset answers the SYN: nothing listens).

use crate::common;

use common::for_each_packet;
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};
use netdoctor_core::observation::{Observation, ServerSocket, SocketState};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

const ABANDONED: &str = "abandoned-connects.pcap.gz";

/// The capture, with the listener `diagnose` saw (nginx on the port) when `listening`.
fn analyze(name: &str, listening: bool) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    if listening {
        a.observe(Observation::ServerSockets(vec![ServerSocket {
            pid: 7754,
            process: "nginx".into(),
            fd: 6,
            state: SocketState::Listen,
            local: "10.231.3.2:8090".into(),
            tcp_nodelay: false,
            tcp_cork: false,
            sndbuf: 0,
            rcvbuf: 0,
        }]));
    }
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

fn of(an: &Analysis, id: FindingId) -> Vec<&Finding> {
    an.findings.iter().filter(|f| f.id == id).collect()
}

#[test]
fn a_client_resetting_the_syn_ack_of_its_only_syn_gave_up_itself() {
    for listening in [true, false] {
        let an = analyze(ABANDONED, listening);
        assert!(
            of(&an, FindingId::ServerNotListening).is_empty(),
            "listening {listening}: {:#?}",
            an.findings
        );
        let r = of(&an, FindingId::ConnectionReset);
        assert_eq!(r.len(), 1, "listening {listening}: {:#?}", an.findings);
        let f = r[0];
        assert_eq!(
            (f.side, f.severity),
            (Side::Client, Severity::Info),
            "{f:#?}"
        );
        assert!(
            f.summary
                .starts_with("The client reset 10 connections right after the handshake")
                && f.summary
                    .contains("it gave up on them at setup: nothing was refused"),
            "{}",
            f.summary
        );
        assert!(!f.summary.contains("listens"), "{}", f.summary);
        assert!(f.explanation.contains("load generator ending its run"));
        assert!(!f.fix.contains("iptables"), "{}", f.fix);
        // The evidence is the SYN/ACK and the client's reset after it.
        let text = format!("{:?}", f.evidence);
        assert!(
            text.contains("[S.]")
                && text.contains("[R]")
                && text.contains("the client reset the server's SYN/ACK"),
            "{text}"
        );
        assert!(
            an.findings
                .iter()
                .all(|f| f.severity < Severity::Warning || f.id == FindingId::ShortConnections),
            "{:#?}",
            an.findings
        );
    }
}

/// The same three packets after a repeated SYN (a lossy hop): the client's connect timed out
/// and the SYN/ACK came late. Still an abandoned handshake told with the loss.
#[test]
fn a_reset_of_a_late_syn_ack_after_a_repeated_syn_is_still_an_abandoned_handshake() {
    let an = analyze("route-lossy.pcap", false);
    let f = of(&an, FindingId::ServerNotListening);
    assert_eq!(f.len(), 1, "{:#?}", an.findings);
    assert!(
        f[0].summary
            .starts_with("2 handshakes to 10.231.3.2:8080 abandoned before completing"),
        "{}",
        f[0].summary
    );
    assert_eq!(f[0].severity, Severity::Warning);
}

/// The server's own reset of a SYN is still a refusal.
#[test]
fn a_server_reset_answering_the_syn_is_still_a_refusal() {
    let an = analyze("reset.pcap", false);
    let f = of(&an, FindingId::ServerNotListening);
    assert_eq!(f.len(), 1, "{:#?}", an.findings);
    assert_eq!(f[0].side, Side::Server);
    assert!(f[0].summary.contains("Nothing listens"), "{}", f[0].summary);
}

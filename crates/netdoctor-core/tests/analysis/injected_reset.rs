//! Resets a middlebox forged in a host's name (`connection_reset`, kind injected, side
//! network) against the host's own resets. The real capture is zeek-rst-inject-rae from the
//! shared corpus (`../shared/realworld-pcaps/`, skipped when missing); the look-alikes are the
//! committed lab captures, read as they are and with their IP TTLs rewritten in memory the way
//! a load balancer, a route change or an injector would leave them.

use crate::common;

use common::{corpus_file, for_each_packet};
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, RawPacket};

/// The findings as (id, severity, side) triples, to compare two analyses.
fn shape(an: &Analysis) -> Vec<(FindingId, Severity, Side)> {
    an.findings
        .iter()
        .map(|f| (f.id, f.severity, f.side))
        .collect()
}

fn reset_finding(an: &Analysis) -> &Finding {
    an.findings
        .iter()
        .find(|f| f.id == FindingId::ConnectionReset)
        .unwrap_or_else(|| panic!("no connection_reset: {:#?}", an.findings))
}

/// Analyses committed Ethernet/IPv4 capture `name`, each packet's TTL first rewritten by
/// `ttl(frame, from_port, is_rst, ttl)` (`from_port`: the TCP source port). The IP checksum is
/// left as it is: the analysis does not check it.
fn analyze_with_ttl(name: &str, ttl: impl Fn(u64, u16, bool, u8) -> u8) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(name, |p| {
        let mut data = p.data.to_vec();
        // Ethernet, IPv4 with TCP: TTL at 14 + 8, the TCP header after the IP header.
        if data.len() >= 14 + 20 + 20 && data[12..14] == [0x08, 0x00] && data[14] >> 4 == 4 {
            let ihl = usize::from(data[14] & 0x0f) * 4;
            let tcp = 14 + ihl;
            if data[14 + 9] == 6 && data.len() >= tcp + 14 {
                let sport = u16::from_be_bytes([data[tcp], data[tcp + 1]]);
                let rst = data[tcp + 13] & 0x04 != 0;
                data[14 + 8] = ttl(p.frame, sport, rst, data[14 + 8]);
            }
        }
        a.push(&RawPacket { data: &data, ..*p });
    });
    a.finish()
}

#[test]
fn forged_resets_in_zeek_rst_inject_rae_are_the_paths_not_the_servers() {
    // Frame 2: a [R.] with TTL 46 (the server's other packets: 49), reserved bits set, the
    // client's SYN's IP id, acknowledging the SYN's own sequence number: the client ignores it
    // and the server's SYN/ACK follows a second later. Frame 7 is the server's own reset
    // (TTL 49, the next IP id after its ACK).
    let Some(path) = corpus_file("zeek-rst-inject-rae.pcap") else {
        return;
    };
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(path.to_str().unwrap(), |p| a.push(p));
    let an = a.finish();
    let f = reset_finding(&an);
    let text = format!("{} {}", f.summary, f.explanation);
    assert!(
        text.contains("1 reset carrying the server's address probably came from a middlebox"),
        "{text}"
    );
    assert!(
        text.contains("IP TTL 46 where the server's 2 other packets on the connection had 49"),
        "{text}"
    );
    assert!(text.contains("reserved TCP header bits"), "{text}");
    assert!(
        text.contains("ignored it and the connection went on"),
        "{text}"
    );
    let evidence = format!("{:?}", f.evidence);
    assert!(evidence.contains("frame: 2"), "{evidence}");
    // Frame 8 is the client's data sent 2 ms after the server's reset (frame 7); frame 9, a
    // bare [R] with the sequence number frame 8 acknowledged, is the closed socket answering
    // it: the first reset's consequence, not a second mid-exchange reset.
    assert!(text.starts_with("The server reset 1 connection"), "{text}");
    assert!(!evidence.contains("frame: 9"), "{evidence}");
    assert!(evidence.contains("frame: 7"), "{evidence}");
    // The server's own reset of the request stays the server's (and leads).
    assert_eq!(
        (f.side, f.severity),
        (Side::Server, Severity::Critical),
        "{f:#?}"
    );
    // The forged reset is no longer a refused handshake: the handshake went on.
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::ServerNotListening),
        "{:#?}",
        an.findings
    );
}

/// reset.pcap: a routed server (TTL 63) resets 3 connections mid-exchange, and 2 SYNs to a
/// closed port are refused.
const RESET: &str = "reset.pcap";
const SERVER_PORT: u16 = 18094;

#[test]
fn the_servers_own_resets_stay_the_servers_whatever_its_ttl() {
    let plain = analyze_with_ttl(RESET, |_, _, _, t| t);
    let f = reset_finding(&plain);
    assert_eq!(f.side, Side::Server, "{f:#?}");
    assert!(!f.summary.contains("middlebox"), "{}", f.summary);
    // A load balancer answering for the server with one TTL of its own, resets included.
    let lb = analyze_with_ttl(
        RESET,
        |_, port, _, t| if port == SERVER_PORT { 52 } else { t },
    );
    assert_eq!(shape(&lb), shape(&plain));
    // A route change: every server packet from frame 30 on is one hop longer, resets
    // included (connections 2 and 3 see both TTLs, the last one only the new one).
    let moved = analyze_with_ttl(RESET, |frame, port, _, t| {
        if port == SERVER_PORT && frame >= 30 {
            t - 1
        } else {
            t
        }
    });
    assert_eq!(shape(&moved), shape(&plain));
    assert!(!reset_finding(&moved).summary.contains("middlebox"));
}

#[test]
fn a_reset_with_a_ttl_none_of_the_servers_packets_had_is_injected() {
    // The same capture, only the server's resets arrive 3 hops nearer.
    let an = analyze_with_ttl(
        RESET,
        |_, port, rst, t| {
            if port == SERVER_PORT && rst { t + 3 } else { t }
        },
    );
    let f = reset_finding(&an);
    assert_eq!(f.side, Side::Network, "{f:#?}");
    assert_eq!(f.severity, Severity::Warning, "{f:#?}");
    assert!(
        f.summary.starts_with(
            "3 resets carrying the server's address probably came from a middlebox on the path, \
             not from the server (IP TTL 66 where the server's"
        ),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("3 ended a connection"), "{}", f.summary);
    // The refused SYNs have no other server packet to compare with: still refused.
    assert!(
        an.findings
            .iter()
            .any(|f| f.id == FindingId::ServerNotListening),
        "{:#?}",
        an.findings
    );
}

#[test]
fn a_reset_after_the_servers_fin_stays_the_end_of_a_closed_connection() {
    for name in ["rst-after-fin.pcap", "rst-after-fin-lab.pcap"] {
        let an = analyze_with_ttl(name, |_, _, _, t| t);
        for f in &an.findings {
            assert!(
                !f.summary.contains("middlebox") && f.side != Side::Network,
                "{name}: {f:#?}"
            );
        }
    }
}

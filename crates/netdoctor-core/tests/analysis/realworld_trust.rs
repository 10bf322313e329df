//! What a third-party capture cannot show must not become a story: a capture of one direction
//! only, retransmissions the receiver reported as duplicates, an added latency below the
//! summary's precision. On captures of `../shared/realworld-pcaps/` (see its NOTICE.md; each
//! test skips when the folder is missing, the files are never copied into the repository),
//! some of them with packets left out as a capture of one direction or a lossy capture would
//! leave them out, and their look-alikes that must not change.

use crate::common;

use common::{corpus_file, for_each_packet};
use netdoctor_core::finding::{Finding, FindingId, Severity, Side, Verdict};
use netdoctor_core::verdict::{Reason, decide};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig, RawPacket, decode};

/// The analysis of corpus file `name` with only the packets `keep` accepts (its TCP
/// segment's source port and whether it carries payload, `None` for what is not TCP), or
/// `None` (with a line saying so) when the file is missing.
fn analyze_kept(name: &str, keep: impl Fn(Option<(u16, u32)>) -> bool) -> Option<Analysis> {
    let path = corpus_file(name)?;
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for_each_packet(path.to_str().unwrap(), |p: &RawPacket<'_>| {
        let seg = decode(p)
            .ok()
            .flatten()
            .map(|s| (s.src.port(), s.payload_len));
        if keep(seg) {
            a.push(p);
        }
    });
    Some(a.finish())
}

fn analyze(name: &str) -> Option<Analysis> {
    analyze_kept(name, |_| true)
}

fn of(an: &Analysis, id: FindingId) -> Vec<&Finding> {
    an.findings.iter().filter(|f| f.id == id).collect()
}

fn verdict(an: &Analysis) -> (Verdict, Vec<Reason>) {
    let mut findings = an.findings.clone();
    let o = decide(&mut findings, &an.verdict_inputs());
    (o.verdict, o.reasons)
}

fn loss_findings(an: &Analysis) -> Vec<(FindingId, Severity, Side)> {
    an.findings
        .iter()
        .filter(|f| {
            matches!(
                f.id,
                FindingId::PacketLossRetransmission | FindingId::RetransmissionTimeout
            )
        })
        .map(|f| (f.id, f.severity, f.side))
        .collect()
}

fn one_way_warning(an: &Analysis) -> Option<&String> {
    an.warnings
        .iter()
        .find(|w| w.contains("captured in one direction only"))
}

#[test]
fn a_capture_of_the_servers_packets_only_is_inconclusive_not_loss() {
    // ppp-650HttpResponses: 682 frames, every one from port 80, on 284 connections; the
    // server's timer resent data 5 times, the client's ACKs are simply not in the file. Was:
    // retransmission_timeout warning on the network, verdict problem.
    let Some(an) = analyze("ppp-650HttpResponses.pcap") else {
        return;
    };
    assert!(loss_findings(&an).is_empty(), "{:#?}", an.findings);
    let q = &an.stats.quality;
    assert_eq!(q.server_unseen_connections, 0, "{q:?}");
    // Connections with two data segments or more (one alone says little).
    assert!(q.client_unseen_connections >= 100, "{q:?}");
    let w = one_way_warning(&an).expect("a one-way warning");
    assert!(
        w.contains("(the server's packets, none of the client's)"),
        "{w}"
    );
    assert!(
        w.contains("whether their data arrived cannot be seen"),
        "{w}"
    );
    let (v, reasons) = verdict(&an);
    assert_eq!(v, Verdict::Inconclusive, "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|r| matches!(r, Reason::CaptureIncomplete { detail }
            if detail.contains("captured in one direction only"))),
        "{reasons:?}"
    );
}

#[test]
fn a_sender_backing_off_alone_is_still_unanswered() {
    // ppa-tcp_retransmissions: one segment resent 5 times over 9.2 s with the timer doubling,
    // and no packet of the peer: the sender itself shows no ACK reached it. One-way, but
    // the timeouts stay.
    let Some(an) = analyze("ppa-tcp_retransmissions.pcapng") else {
        return;
    };
    assert!(one_way_warning(&an).is_some(), "{:?}", an.warnings);
    assert_eq!(
        loss_findings(&an),
        [(
            FindingId::RetransmissionTimeout,
            Severity::Critical,
            Side::Network
        )]
    );
}

#[test]
fn a_capture_started_mid_connection_is_not_one_way() {
    // ppa-tcp_zerowindowrecovery: the receiver's five pure ACKs (its window closing) come
    // before the sender's first captured data, so they open no connection state: both ends
    // are in the capture all the same.
    let Some(an) = analyze("ppa-tcp_zerowindowrecovery.pcapng") else {
        return;
    };
    assert_eq!(an.stats.quality.client_unseen_connections, 0);
    assert_eq!(an.stats.quality.server_unseen_connections, 0);
    assert!(one_way_warning(&an).is_none(), "{:?}", an.warnings);
}

/// ppp-http-packets: 12 connections of a client (ports 8868–8881) to 172.16.210.84:31600;
/// the server resent a segment on connections :8869 and :8870 (tshark: frames 618, 656).
const HTTP_PACKETS: &str = "ppp-http-packets.pcap";
const SERVER_PORT: u16 = 31600;

#[test]
fn lossy_connections_captured_both_ways_stay_loss_beside_one_way_ones() {
    let Some(full) = analyze(HTTP_PACKETS) else {
        return;
    };
    let lossy = loss_findings(&full);
    assert_eq!(
        lossy,
        [(
            FindingId::PacketLossRetransmission,
            Severity::Warning,
            Side::Network
        )]
    );
    assert!(one_way_warning(&full).is_none(), "{:?}", full.warnings);

    // A few of the client's packets missing (every 20th; the file holds no pure ACK, only
    // segments with data): still two-way everywhere, the loss unchanged.
    let n = std::cell::Cell::new(0u32);
    let Some(gappy) = analyze_kept(HTTP_PACKETS, |s| match s {
        Some((port, _)) if port != SERVER_PORT => {
            n.set(n.get() + 1);
            !n.get().is_multiple_of(20)
        }
        _ => true,
    }) else {
        return;
    };
    assert!(n.get() >= 100, "{}", n.get());
    assert!(one_way_warning(&gappy).is_none(), "{:?}", gappy.warnings);
    assert_eq!(loss_findings(&gappy), lossy);

    // Asymmetric routing: the client's packets of two other connections went another way.
    // The loss on :8869 and :8870 stays (its severity follows the exchanges left, fewer
    // now), and the two are named.
    let Some(asym) = analyze_kept(HTTP_PACKETS, |s| !matches!(s, Some((8871 | 8868, _)))) else {
        return;
    };
    let w = one_way_warning(&asym).expect("a one-way warning");
    assert!(
        w.contains("2 connections were captured in one direction only (the server's packets"),
        "{w}"
    );
    let f = of(&asym, FindingId::PacketLossRetransmission);
    assert_eq!(f.len(), 1, "{:#?}", asym.findings);
    assert_eq!(f[0].side, Side::Network);
    assert!(
        f[0].summary
            .starts_with("Packet loss: 2 segments of the server's data retransmitted"),
        "{}",
        f[0].summary
    );

    // The client's packets of the lossy connections themselves missing: its retransmissions cannot
    // be told from resends whose ACK was late, and are not read as loss.
    let Some(blind) = analyze_kept(HTTP_PACKETS, |s| !matches!(s, Some((8869 | 8870, _)))) else {
        return;
    };
    assert!(one_way_warning(&blind).is_some(), "{:?}", blind.warnings);
    assert!(loss_findings(&blind).is_empty(), "{:#?}", blind.findings);
}

#[test]
fn tail_probes_the_receiver_reported_twice_are_spurious_not_loss() {
    // ppp-one_tcp_stream_max_seq: the client resent its last 1420 bytes 31 ms and 30 ms after
    // sending them (RTT 15.6 ms, no duplicate ACK: tail-loss probes), and the server's next
    // ACK, covering everything sent, carried one SACK block of exactly those 1420 bytes, in a
    // sequence space 1,143,864,130 away (a middlebox rewrote the sequence numbers, not the
    // SACK option): a D-SACK. Was: packet_loss_retransmission warning, 9.52 % loss.
    let Some(an) = analyze("ppp-one_tcp_stream_max_seq.pcap") else {
        return;
    };
    assert!(loss_findings(&an).is_empty(), "{:#?}", an.findings);
    assert_eq!(an.stats.retransmitted_segments, 2, "{:?}", an.stats);
    // The keep-alive probe's byte, D-SACKed too, is not a retransmission.
    assert_eq!(an.stats.spurious_retransmissions, 2, "{:?}", an.stats);
    let f = of(&an, FindingId::SpuriousRetransmission);
    assert_eq!(f.len(), 1, "{:#?}", an.findings);
    let f = f[0];
    assert_eq!((f.severity, f.side), (Severity::Info, Side::Client));
    assert!(
        f.summary.contains("(9.52% of data segments)"),
        "{}",
        f.summary
    );
    assert!(
        f.summary
            .contains("the server reported each one as received twice (D-SACK)"),
        "{}",
        f.summary
    );
    assert!(
        f.explanation.contains("tail-loss probe"),
        "{}",
        f.explanation
    );
    assert_ne!(verdict(&an).0, Verdict::Problem);
}

#[test]
fn resends_after_duplicate_acks_stay_loss_and_nothing_spurious_is_invented() {
    // zeek-retransmit-fast009 and ppp-http-packets: fast retransmissions the receiver asked
    // for; no D-SACK came back.
    for name in ["zeek-retransmit-fast009.pcap", HTTP_PACKETS] {
        let Some(an) = analyze(name) else {
            return;
        };
        assert!(!loss_findings(&an).is_empty(), "{name}: {:#?}", an.findings);
        assert!(
            of(&an, FindingId::SpuriousRetransmission).is_empty(),
            "{name}: {:#?}",
            an.findings
        );
    }
}

#[test]
fn a_stall_below_a_tenth_of_a_millisecond_is_said_at_its_precision() {
    // ppa-tcp_dupack: one fast retransmission, stalled 0.33 ms, no HTTP exchange to charge
    // it to. Was: "+0.0 ms" beside evidence saying "stalled 0.33 ms".
    let Some(an) = analyze("ppa-tcp_dupack.pcapng") else {
        return;
    };
    let f = of(&an, FindingId::PacketLossRetransmission);
    assert_eq!(f.len(), 1, "{:#?}", an.findings);
    let f = f[0];
    assert!(
        f.summary.ends_with("stalled up to 0.33 ms"),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains("+0.0 ms"), "{}", f.summary);
    assert_eq!(f.impact.added_latency_ms, None);
    // ppp-http-packets: a median that rounds to 9.8 keeps its second decimal below 10 ms.
    let Some(an) = analyze(HTTP_PACKETS) else {
        return;
    };
    let f = of(&an, FindingId::PacketLossRetransmission)[0];
    let added = f.impact.added_latency_ms.unwrap();
    assert!(
        f.summary.contains(&format!("+{added:.2} ms")),
        "{added} {}",
        f.summary
    );
}

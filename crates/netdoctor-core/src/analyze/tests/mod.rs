//! The analyzer on scripted conversations (see [`script`]).

mod bulk_turns;
mod h2;
mod halfopen;
mod script;
mod turns;
mod windows;

use super::*;
use crate::decode::TcpFlags as F;
use crate::finding::{Evidence, FindingId, Severity, Side};
use crate::packet::LinkType;
use script::*;

#[test]
fn client_side_nagle_is_side_client() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..12 {
        // Request headers, then the body held by the client's Nagle until the server's
        // delayed ACK 40 ms later.
        s.send(
            MS,
            true,
            F::PSH | F::ACK,
            b"POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\n",
        );
        s.send(40 * MS, false, F::ACK, b"");
        s.send(100_000, true, F::PSH | F::ACK, b"0123456789");
        s.send(200_000, false, F::PSH | F::ACK, HDR);
        s.send(50_000, true, F::ACK, b"");
    }
    s.close();
    let an = s.a.finish();
    assert_eq!(an.exchanges.count, 12);
    let f = &an.findings[0];
    assert_eq!(f.id, FindingId::NagleDelayedAck);
    assert_eq!(f.side, Side::Client);
    assert!(f.fix.contains("client"));
    let added = f.impact.added_latency_ms.unwrap();
    assert!((39.0..=41.0).contains(&added), "{added}");
    assert_eq!(f.impact.affected_fraction, Some(1.0));
    assert_eq!(an.stats.connections, 1);
    // The RTT is 100 µs: latency ≈ 40 + 0.1 + 0.2 ms.
    assert!(
        (40.0..41.0).contains(&an.exchanges.latency_ms.p50),
        "{:?}",
        an.exchanges
    );
}

#[test]
fn prompt_ack_or_new_request_is_not_a_stall() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..10 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        // The client ACKs promptly; the body follows only 45 ms later (server think
        // time between two writes, not Nagle).
        s.send(50_000, true, F::ACK, b"");
        s.send(45 * MS, false, F::PSH | F::ACK, &[b'x'; 600]);
        // Idle client: delayed ACK 40 ms later, then the next request (peer data).
        s.send(40 * MS, true, F::ACK, b"");
    }
    s.close();
    let an = s.a.finish();
    assert_eq!(an.exchanges.count, 10);
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::NagleDelayedAck),
        "{:#?}",
        an.findings
    );
}

#[test]
fn retransmission_is_not_new_data() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    s.send(MS, true, F::PSH | F::ACK, REQ);
    s.send(100_000, false, F::PSH | F::ACK, HDR);
    // Retransmit the same response segment 200 ms later.
    s.sseq -= HDR.len() as u32;
    s.send(200 * MS, false, F::PSH | F::ACK, HDR);
    s.send(50_000, true, F::ACK, b"");
    s.close();
    let an = s.a.finish();
    assert_eq!(an.stats.retransmitted_segments, 1);
    assert_eq!(an.stats.data_segments, 2);
    assert_eq!(an.exchanges.count, 1);
    // The retransmission is not a new response segment, but it was needed (no D-SACK):
    // the client got the response only then, 200 ms after the original.
    let lat = an.exchanges.latency_ms.max;
    assert!((200.0..201.0).contains(&lat), "{:?}", an.exchanges);
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::RetransmissionTimeout)
        .unwrap();
    assert!((199.0..201.0).contains(&f.impact.added_latency_ms.unwrap()));
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert!(
        (199.0..201.0).contains(&b.stalls.get(FindingId::RetransmissionTimeout)),
        "{b:?}"
    );
}

#[test]
fn closed_connections_free_their_state() {
    let mut a = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    for port in 0..200u16 {
        a.c.set_port(20000 + port);
        a.handshake();
        a.send(MS, true, F::PSH | F::ACK, REQ);
        a.send(100_000, false, F::PSH | F::ACK, HDR);
        a.close();
        assert!(a.a.conns.is_empty(), "state kept after FIN/FIN/ACK");
    }
    // A reset also frees it.
    a.c.set_port(30000);
    a.handshake();
    a.send(MS, true, F::RST, b"");
    assert!(a.a.conns.is_empty());
    let an = a.a.finish();
    assert_eq!(an.stats.connections, 201);
    assert_eq!(an.exchanges.count, 200);
    assert_eq!(an.exchanges.rtt_ms, Some(0.1));
}

#[test]
fn mid_stream_orientation_from_status_line() {
    // The server has the HIGHER port and the handshake is missing: the status line
    // decides.
    let mut s = Script::new("10.0.0.1:80", "10.0.0.2:50000");
    for _ in 0..6 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        s.send(40 * MS, true, F::ACK, b"");
        s.send(100_000, false, F::PSH | F::ACK, &[b'x'; 600]);
    }
    let an = s.a.finish();
    assert_eq!(an.stats.connections_with_handshake, 0);
    // 6 requests; the last one is still in progress at the end of the capture: counted as
    // incomplete (its first byte came).
    assert_eq!((an.exchanges.count, an.exchanges.incomplete), (6, 1));
    let f = &an.findings[0];
    assert_eq!((f.id, f.side), (FindingId::NagleDelayedAck, Side::Server));
    let Evidence::Packets { connection, .. } = &f.evidence[0] else {
        panic!()
    };
    assert_eq!(connection, "10.0.0.1:80 → 10.0.0.2:50000");
}

const SEG: usize = 1400;

/// Server sends segments 0,2 then (after the client's SACK) 1, with the given IP ids for
/// segment 1 (2 is sent with id 102). Returns the analysis.
fn hole_then_fill(fill_id: u16, fill_delay: i64, complain: bool) -> Analysis {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    s.send(MS, true, F::PSH | F::ACK, REQ);
    let (c, b) = (s.cseq, s.sseq);
    let seg = [b'x'; SEG];
    let at = |k: u32| b.wrapping_add(k * SEG as u32);
    s.raw(100_000, false, at(0), c, F::ACK, &seg, 0xffff, &[], 100);
    s.raw(10_000, false, at(2), c, F::ACK, &seg, 0xffff, &[], 102);
    if complain {
        s.raw(
            2_000,
            true,
            c,
            at(1),
            F::ACK,
            b"",
            0xffff,
            &[(at(2), at(3))],
            7,
        );
    }
    s.raw(
        fill_delay,
        false,
        at(1),
        c,
        F::ACK,
        &seg,
        0xffff,
        &[],
        fill_id,
    );
    s.raw(5_000, true, c, at(3), F::ACK, b"", 0xffff, &[], 8);
    s.sseq = at(3);
    s.close();
    s.a.finish()
}

#[test]
fn reordering_is_not_retransmission() {
    // The late segment has the smaller IP id: it was sent before the one that overtook it,
    // even though it arrives after the client's SACK, 2 ms later.
    let an = hole_then_fill(101, 2 * MS, true);
    assert_eq!(an.stats.out_of_order_segments, 1, "{:?}", an.stats);
    assert_eq!(an.stats.retransmitted_segments, 0);
    assert_eq!(an.stats.capture_gaps, 0);
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::PacketLossRetransmission),
        "{:#?}",
        an.findings
    );
    // Without IP ids: arriving before any complaint means reordering too.
    let an = hole_then_fill(0, 20_000, false);
    assert_eq!(an.stats.out_of_order_segments, 1, "{:?}", an.stats);
    assert_eq!(an.stats.retransmitted_segments, 0);
}

#[test]
fn signalled_hole_filled_later_is_loss() {
    // Larger IP id: sent again after the client's SACK reported the hole.
    let an = hole_then_fill(103, 300_000, true);
    assert_eq!(an.stats.retransmitted_segments, 1, "{:?}", an.stats);
    assert_eq!(an.stats.out_of_order_segments, 0);
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::PacketLossRetransmission)
        .unwrap_or_else(|| panic!("{:#?}", an.findings));
    assert_eq!(f.side, Side::Network);
    assert_eq!(f.impact.affected_fraction, Some(1.0));
    // No IP ids, but the fill came well after the complaint (RTT 0.1 ms here): loss too.
    let an = hole_then_fill(0, 300_000, true);
    assert_eq!(an.stats.retransmitted_segments, 1, "{:?}", an.stats);
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert!(
        b.stalls.get(FindingId::PacketLossRetransmission) > 0.0,
        "{b:?}"
    );
}

#[test]
fn dsack_spurious_retransmissions_keep_a_healthy_server_healthy() {
    // 100 exchanges; on each the client is slow to ACK (4 ms, starved of CPU), the server
    // retransmits its response (tail-loss probe), and the client reports the duplicate
    // with a D-SACK. tshark flags all 100 as retransmissions; they cost nothing.
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..100 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        let (c, b) = (s.cseq, s.sseq);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        let e = s.sseq;
        s.raw(4 * MS, false, b, c, F::PSH | F::ACK, HDR, 0xffff, &[], 0);
        s.raw(100_000, true, c, e, F::ACK, b"", 0xffff, &[(b, e)], 0);
    }
    s.close();
    let an = s.a.finish();
    assert_eq!(an.exchanges.count, 100);
    assert_eq!(an.stats.retransmitted_segments, 100);
    assert_eq!(an.stats.spurious_retransmissions, 100, "{:?}", an.stats);
    assert!(
        an.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        an.findings
    );
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::PacketLossRetransmission
                && f.id != FindingId::RetransmissionTimeout),
        "{:#?}",
        an.findings
    );
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert_eq!(b.stalls_total(), 0.0, "{b:?}");
    assert!(an.exchanges.latency_ms.p50 < 1.0, "{:?}", an.exchanges);
}

#[test]
fn repeated_syn_is_one_connection_and_a_syn_retransmit() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.send(0, true, F::SYN, b"");
    s.cseq -= 1;
    s.send(1000 * MS, true, F::SYN, b"");
    s.send(50_000, false, F::SYN | F::ACK, b"");
    s.send(50_000, true, F::ACK, b"");
    s.send(MS, true, F::PSH | F::ACK, REQ);
    s.send(100_000, false, F::PSH | F::ACK, HDR);
    s.close();
    let an = s.a.finish();
    assert_eq!(an.stats.connections, 1);
    assert_eq!(an.stats.syn_retransmits, 1);
    assert_eq!(an.exchanges.count, 1);
    // The RTT comes from the SYN that was answered.
    assert_eq!(an.exchanges.rtt_ms, Some(0.1));
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::SynRetransmit)
        .unwrap();
    assert!(f.summary.contains("repeat its SYN"), "{}", f.summary);
    let added = f.impact.added_latency_ms.unwrap();
    assert!((1000.0..1001.0).contains(&added), "{added}");
    assert_eq!(f.severity, Severity::Critical);

    // The SYN/ACK repeated instead (the client's ACK was lost).
    let mut s = Script::new("10.0.0.1:40001", "10.0.0.2:80");
    s.send(0, true, F::SYN, b"");
    s.send(50_000, false, F::SYN | F::ACK, b"");
    s.sseq -= 1;
    s.send(1000 * MS, false, F::SYN | F::ACK, b"");
    s.send(50_000, true, F::ACK, b"");
    s.close();
    let an = s.a.finish();
    assert_eq!(an.stats.connections, 1);
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::SynRetransmit)
        .unwrap();
    assert!(f.summary.contains("SYN/ACK"), "{}", f.summary);
    assert_eq!(an.exchanges.rtt_ms, Some(0.1));
}

#[test]
fn zero_window_names_the_reader_and_its_time() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..3 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::ACK, &[b'x'; SEG]);
        let (c, b) = (s.cseq, s.sseq);
        // The client's buffer is full: window 0 for 100 ms, then reopened.
        s.raw(50_000, true, c, b, F::ACK, b"", 0, &[], 0);
        s.raw(100 * MS, true, c, b, F::ACK, b"", 0xffff, &[], 0);
        s.send(50_000, false, F::PSH | F::ACK, &[b'x'; 100]);
        s.send(50_000, true, F::ACK, b"");
    }
    s.close();
    let an = s.a.finish();
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::ZeroWindow)
        .unwrap_or_else(|| panic!("{:#?}", an.findings));
    assert_eq!(f.side, Side::Client);
    assert!(f.severity >= Severity::Warning);
    let d = f.impact.added_latency_ms.unwrap();
    assert!((99.0..101.0).contains(&d), "{d}");
    assert_eq!(f.impact.affected_fraction, Some(1.0));
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert!(
        (99.0..101.0).contains(&b.stalls.get(FindingId::ZeroWindow)),
        "{b:?}"
    );
    // Not a delayed-ACK stall: the window, not the ACK timer, held the server.
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::DelayedAckStall && f.id != FindingId::NagleDelayedAck),
        "{:#?}",
        an.findings
    );
}

#[test]
fn resets_say_who_and_when() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    // Refused: SYN answered by RST/ACK.
    s.send(0, true, F::SYN, b"");
    s.send(50_000, false, F::RST | F::ACK, b"");
    // Server resets mid-response, 3 times.
    for port in 40001..40004 {
        s.c.set_port(port);
        s.handshake();
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::ACK, &[b'x'; SEG]);
        s.send(10 * MS, false, F::RST | F::ACK, b"");
    }
    // A client that aborts while the response arrives: info only.
    s.c.set_port(40010);
    s.handshake();
    s.send(MS, true, F::PSH | F::ACK, REQ);
    s.send(100_000, false, F::ACK, &[b'x'; SEG]);
    s.send(100_000, true, F::RST | F::ACK, b"");
    let an = s.a.finish();
    assert_eq!(an.stats.resets, 5);
    let resets: Vec<_> = an
        .findings
        .iter()
        .filter(|f| f.id == FindingId::ConnectionReset)
        .collect();
    // One finding for every kind; the refusal is server_not_listening's.
    assert_eq!(resets.len(), 1, "{resets:#?}");
    let refused = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::ServerNotListening)
        .unwrap();
    // Four other connections to the same address completed their handshake: something
    // listens there, so the refusal is said as what was seen, a warning (issue 20).
    assert_eq!(
        (refused.side, refused.severity),
        (Side::Server, Severity::Warning)
    );
    assert!(
        refused
            .summary
            .starts_with("1 handshake to 10.0.0.2:80 abandoned")
            && refused
                .summary
                .contains("4 other connections to the same address completed theirs"),
        "{}",
        refused.summary
    );
    let mid = resets[0];
    assert_eq!((mid.side, mid.severity), (Side::Server, Severity::Critical));
    assert!(
        mid.summary
            .starts_with("The server reset 3 connections in the middle"),
        "{}",
        mid.summary
    );
    assert!(
        mid.summary
            .contains("; also, the client reset 1 connections while a response was arriving"),
        "{}",
        mid.summary
    );
}

#[test]
fn delayed_ack_stall_without_nagle() {
    // A window-limited server: one full-size segment in flight, the client delays its ACK
    // 40 ms, the next full segment leaves right after the ACK. Nagle never holds full
    // segments, so this is delayed_ack_stall, side client (the one delaying ACKs).
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..6 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::ACK, &[b'x'; 1420]);
        s.send(40 * MS, true, F::ACK, b"");
        s.send(100_000, false, F::PSH | F::ACK, &[b'x'; 1420]);
        s.send(50_000, true, F::ACK, b"");
    }
    s.close();
    let an = s.a.finish();
    let f = &an.findings[0];
    assert_eq!(f.id, FindingId::DelayedAckStall, "{:#?}", an.findings);
    assert_eq!(f.side, Side::Client);
    assert_eq!(f.severity, Severity::Critical);
    let added = f.impact.added_latency_ms.unwrap();
    assert!((39.0..41.0).contains(&added), "{added}");
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::NagleDelayedAck)
    );
    let b = an.exchanges.breakdown_p50_ms.unwrap();
    assert!(
        (39.0..41.0).contains(&b.stalls.get(FindingId::DelayedAckStall)),
        "{b:?}"
    );
}

#[test]
fn data_acked_but_never_captured_is_a_capture_gap() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..6 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        // The body's first segment is missing from the capture, the client ACKs it all.
        s.sseq += SEG as u32;
        s.send(100_000, false, F::ACK, &[b'x'; SEG]);
        s.send(50_000, true, F::ACK, b"");
    }
    s.close();
    let an = s.a.finish();
    assert_eq!(an.stats.capture_gaps, 6, "{:?}", an.stats);
    assert_eq!(an.stats.retransmitted_segments, 0);
    assert!(
        an.warnings
            .iter()
            .any(|w| w.contains("6 segments (") && w.contains("never captured")),
        "{:?}",
        an.warnings
    );
}

#[test]
fn one_request_per_connection_is_short_connections() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    for port in 0..10u16 {
        s.c.set_port(41000 + port);
        s.handshake();
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
        s.close();
    }
    let an = s.a.finish();
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::ShortConnections)
        .unwrap_or_else(|| panic!("{:#?}", an.findings));
    // SYN → request: 0.1 ms handshake, then 1 ms the client took after its ACK before it
    // wrote: that wait is the client's own, not setup (it was charged as 1.1 ms of setup, a
    // warning); the handshake alone is cheap.
    let added = f.impact.added_latency_ms.unwrap();
    assert!((0.05..0.2).contains(&added), "{added}");
    assert_eq!(f.impact.affected_fraction, Some(1.0));
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.summary.contains("the client then waited 1.0"),
        "{}",
        f.summary
    );
    // Keep-alive: no finding.
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    for _ in 0..10 {
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(100_000, false, F::PSH | F::ACK, HDR);
    }
    s.close();
    let an = s.a.finish();
    assert!(
        an.findings
            .iter()
            .all(|f| f.id != FindingId::ShortConnections)
    );
}

#[test]
fn garbage_is_counted_and_warned() {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for len in 0..64usize {
        let data: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8 | 0x40).collect();
        a.push(&RawPacket {
            frame: len as u64 + 1,
            ts_ns: len as i64,
            link: LinkType::Ethernet,
            data: &data,
            orig_len: len as u32,
        });
    }
    a.note_capture_drops(3);
    let an = a.finish();
    assert_eq!(an.stats.packets, 64);
    assert!(an.stats.decode_errors > 0);
    assert!(
        an.warnings
            .iter()
            .any(|w| w.ends_with("packets could not be decoded"))
    );
    assert!(
        an.warnings
            .iter()
            .any(|w| w.contains("capture dropped 3 packets"))
    );
    assert!(an.findings.is_empty());
}

/// The connection_reset finding of one scripted connection.
fn reset_finding(s: Script) -> crate::finding::Finding {
    let an = s.a.finish();
    let v: Vec<_> = an
        .findings
        .into_iter()
        .filter(|f| f.id == FindingId::ConnectionReset)
        .collect();
    assert_eq!(v.len(), 1, "{v:#?}");
    v.into_iter().next().unwrap()
}

#[test]
fn a_reset_after_a_close_or_a_quiet_response_is_not_mid_exchange() {
    const S: i64 = 1_000_000_000;
    // The server answers, closes 15 s later (FIN); 45 s later the client's keep-alive probe
    // gets a reset.
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    s.send(MS, true, F::PSH | F::ACK, REQ);
    s.send(MS, false, F::PSH | F::ACK, HDR);
    s.send(MS, true, F::ACK, b"");
    s.send(15 * S, false, F::FIN | F::ACK, b"");
    s.send(MS, true, F::ACK, b"");
    s.send(45 * S, true, F::ACK, b"");
    s.send(MS, false, F::RST, b"");
    let f = reset_finding(s);
    assert_eq!((f.severity, f.side), (Severity::Info, Side::Server));
    assert!(
        f.summary.contains("already closed (FIN sent)"),
        "{}",
        f.summary
    );

    // Look-alike: the client half-closed after its request and the server reset while its
    // response was arriving: that request failed.
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    s.send(MS, true, F::PSH | F::ACK, REQ);
    s.send(MS, true, F::FIN | F::ACK, b"");
    s.send(MS, false, F::PSH | F::ACK, HDR);
    s.send(MS, false, F::RST, b"");
    let f = reset_finding(s);
    assert_eq!((f.severity, f.side), (Severity::Critical, Side::Server));
    assert!(f.summary.contains("in the middle"), "{}", f.summary);

    // A response fully acknowledged, 30 s of silence, then the server's reset: an idle
    // connection dropped, not a request.
    let quiet = |gap: i64| {
        let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
        s.handshake();
        s.send(MS, true, F::PSH | F::ACK, REQ);
        s.send(MS, false, F::PSH | F::ACK, HDR);
        s.send(MS, true, F::ACK, b"");
        s.send(gap, false, F::RST, b"");
        reset_finding(s)
    };
    let f = quiet(30 * S);
    assert_eq!((f.severity, f.side), (Severity::Info, Side::Server));
    assert!(f.summary.contains("idle connections"), "{}", f.summary);
    // Look-alike: 2 s after the last response byte, the response may still be coming.
    let f = quiet(2 * S);
    assert_eq!(f.severity, Severity::Critical, "{}", f.summary);
    assert!(f.summary.contains("in the middle"), "{}", f.summary);
}

//! Bulk transfers per request/response turn (`analyze::bulk`): a direction's transfer ends when
//! the peer answered it (the peer's data came with everything the direction had sent
//! acknowledged) and the direction sends again. The look-alikes: keep-alive traffic of small
//! answers (never one large transfer), two downloads on one connection (two transfers), a
//! bidirectional transfer and pipelined requests (the peer's data comes while data is in
//! flight: one transfer each).

use super::*;

const SEG: usize = 1400;

fn server_transfers(a: &Analysis) -> Vec<&bulk::BulkTransfer> {
    a.stats.bulk.iter().filter(|t| t.sender_is_server).collect()
}

/// Bytes the transfer's chart holds (its first byte on, the part before the watch included).
fn charted(t: &bulk::BulkTransfer) -> u64 {
    t.bins.iter().map(|b| b.bytes).sum()
}

/// The server sends `bytes` in full segments; the client acknowledges every second one.
fn download(s: &mut Script, bytes: usize) {
    let seg = [0u8; SEG];
    for k in 0..bytes / SEG {
        s.send(20_000, false, F::ACK, &seg);
        if k % 2 == 1 {
            s.send(20_000, true, F::ACK, b"");
        }
    }
    s.send(20_000, true, F::ACK, b"");
}

/// 1,000 requests answered with 600 bytes each: 600 KB from the server, no bulk transfer
/// (each answer is its own turn; the reference demo's healthy keep-alive server read as one
/// loss-limited transfer when the whole direction was one).
#[test]
fn keep_alive_answers_are_not_one_transfer() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:80");
    s.handshake();
    let answer = [b'x'; 600];
    for _ in 0..1000 {
        s.send(MS, true, F::ACK | F::PSH, REQ);
        s.send(100_000, false, F::ACK | F::PSH, &answer);
    }
    s.close();
    let a = s.a.finish();
    assert!(a.stats.bulk.is_empty(), "{:#?}", a.stats.bulk);
}

/// Two 700 KB downloads on one keep-alive connection: two transfers, turn 0 and turn 1, each
/// charted from its own first byte.
#[test]
fn each_download_of_a_connection_is_its_own_transfer() {
    let mut s = Script::new("10.0.0.1:40001", "10.0.0.2:80");
    s.handshake();
    let bytes = 500 * SEG;
    s.send(MS, true, F::ACK | F::PSH, REQ);
    download(&mut s, bytes);
    s.send(MS, true, F::ACK | F::PSH, REQ);
    download(&mut s, bytes);
    s.close();
    let a = s.a.finish();
    let t = server_transfers(&a);
    assert_eq!(t.len(), 2, "{t:#?}");
    assert_eq!((t[0].turn, t[1].turn), (0, 1));
    for x in &t {
        assert_eq!(charted(x), bytes as u64, "{x:#?}");
        assert!(x.chart_start_ns <= x.start_ns);
    }
    assert!(t[0].end_ns < t[1].chart_start_ns, "{t:#?}");
}

/// Both ends send 700 KB at once, each acknowledging the other's data a few segments behind:
/// the peer's data always comes with data in flight, so each direction is one transfer.
#[test]
fn a_bidirectional_transfer_is_one_transfer_each_way() {
    let mut s = Script::new("10.0.0.1:40002", "10.0.0.2:5001");
    s.handshake();
    let (c0, s0) = (s.cseq, s.sseq);
    let seg = [0u8; SEG];
    let n = 500u32;
    let at = |base: u32, k: u32| base.wrapping_add(SEG as u32 * k);
    for k in 0..n {
        let c_ack = at(s0, k.saturating_sub(4));
        s.raw(20_000, true, at(c0, k), c_ack, F::ACK, &seg, 0xffff, &[], 0);
        let s_ack = at(c0, k.saturating_sub(3));
        s.raw(
            20_000,
            false,
            at(s0, k),
            s_ack,
            F::ACK,
            &seg,
            0xffff,
            &[],
            0,
        );
    }
    s.raw(
        20_000,
        true,
        at(c0, n),
        at(s0, n),
        F::ACK,
        b"",
        0xffff,
        &[],
        0,
    );
    s.raw(
        20_000,
        false,
        at(s0, n),
        at(c0, n),
        F::ACK,
        b"",
        0xffff,
        &[],
        0,
    );
    let a = s.a.finish();
    assert_eq!(a.stats.bulk.len(), 2, "{:#?}", a.stats.bulk);
    for t in &a.stats.bulk {
        assert_eq!(charted(t), u64::from(n) * SEG as u64, "{t:#?}");
        assert_eq!(t.turn, 0);
    }
}

/// Three pipelined requests, answered by 3 × 300 KB back to back, and a fourth request sent
/// while the answers still stream (data in flight): one transfer of the server.
#[test]
fn pipelined_answers_are_one_transfer() {
    let mut s = Script::new("10.0.0.1:40003", "10.0.0.2:80");
    s.handshake();
    for _ in 0..3 {
        s.send(10_000, true, F::ACK | F::PSH, REQ);
    }
    let seg = [0u8; SEG];
    let total = 4 * 220;
    for k in 0..total {
        s.send(20_000, false, F::ACK, &seg);
        if k % 2 == 1 {
            // The client's ACK (or its fourth request) lags two segments behind.
            let behind = s.sseq.wrapping_sub(2 * SEG as u32);
            let req: &[u8] = if k == total / 2 + 1 { REQ } else { b"" };
            s.raw(20_000, true, s.cseq, behind, F::ACK, req, 0xffff, &[], 0);
            s.cseq = s.cseq.wrapping_add(req.len() as u32);
        }
    }
    s.send(20_000, true, F::ACK, b"");
    let a = s.a.finish();
    let t = server_transfers(&a);
    assert_eq!(t.len(), 1, "{t:#?}");
    assert_eq!(charted(t[0]), (total * SEG) as u64);
    assert!(
        t[0].peer_bytes > 0,
        "the fourth request came during the transfer"
    );
}

//! Exchanges from HTTP/2 frames (cleartext, prior knowledge): one per stream.

use super::script::*;
use crate::analyze::ExchangeMethod;
use crate::analyze::h2::frame::{
    DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PREFACE, RST_STREAM, SETTINGS,
};
use crate::decode::TcpFlags as F;
use crate::finding::FindingId;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    v.extend([kind, flags]);
    v.extend(stream.to_be_bytes());
    v.extend(payload);
    v
}

/// `GET /` (static indices: :method GET, :scheme http, :path /).
const GET: &[u8] = &[0x82, 0x86, 0x84];

fn cat(frames: &[Vec<u8>]) -> Vec<u8> {
    frames.concat()
}

#[test]
fn each_stream_is_an_exchange_with_its_status_even_interleaved() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:8080");
    s.handshake();
    let mut hello = PREFACE.to_vec();
    hello.extend(frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]));
    s.send(MS, true, F::PSH | F::ACK, &hello);
    s.send(
        100_000,
        false,
        F::PSH | F::ACK,
        &frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 128, 0, 4, 0, 1, 0, 0]),
    );
    // Two requests in one segment, then the two responses interleaved: 3 answers first.
    let reqs = cat(&[
        frame(HEADERS, END_HEADERS | END_STREAM, 1, GET),
        frame(HEADERS, END_HEADERS | END_STREAM, 3, GET),
    ]);
    s.send(MS, true, F::PSH | F::ACK, &reqs);
    // :status 404 (static index 13) on 3, 200 (index 8) on 1 with DATA to follow.
    let r1 = cat(&[
        frame(HEADERS, END_HEADERS, 3, &[0x8d]),
        frame(HEADERS, END_HEADERS, 1, &[0x88]),
        frame(DATA, 0, 1, &[0; 100]),
    ]);
    s.send(5 * MS, false, F::PSH | F::ACK, &r1);
    let r2 = cat(&[
        frame(DATA, END_STREAM, 3, &[0; 10]),
        frame(DATA, END_STREAM, 1, &[0; 10]),
    ]);
    s.send(20 * MS, false, F::PSH | F::ACK, &r2);
    // A third stream the server refuses after its headers; a fourth never answered.
    s.send(
        MS,
        true,
        F::PSH | F::ACK,
        &frame(HEADERS, END_HEADERS | END_STREAM, 5, GET),
    );
    let r3 = cat(&[
        frame(HEADERS, END_HEADERS, 5, &[0x8e]),
        frame(RST_STREAM, 0, 5, &[0, 0, 0, 2]),
        frame(GOAWAY, 0, 0, &[0, 0, 0, 5, 0, 0, 0, 0]),
    ]);
    s.send(MS, false, F::PSH | F::ACK, &r3);
    s.send(
        MS,
        true,
        F::PSH | F::ACK,
        &frame(HEADERS, END_HEADERS | END_STREAM, 7, GET),
    );
    s.close();
    let an = s.a.finish();
    assert_eq!(an.exchanges.count, 3);
    assert_eq!(an.exchanges.incomplete, 0);
    assert_eq!(an.exchanges.method, Some(ExchangeMethod::H2));
    assert_eq!(an.stats.pipelined_connections, 0);
    // Streams 1 and 3 took 5 + 20 ms after their requests; stream 5 one ms.
    let l = &an.exchanges.latency_ms;
    assert!((l.max - 25.0).abs() < 0.5, "{l:?}");
    assert!((l.mean - 17.0).abs() < 0.5, "{l:?}");
    // The statuses, HPACK-decoded: 404 and 500 fail, 200 does not.
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::HttpErrors)
        .expect("http_errors");
    let text = format!("{:?}", f.evidence);
    assert!(
        text.contains("HTTP 404") && text.contains("HTTP 500"),
        "{text}"
    );
    assert!(
        f.summary.contains("2 of 3") || f.summary.contains("66.7"),
        "{}",
        f.summary
    );
}

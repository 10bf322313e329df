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

/// A client uploading `n` DATA frames of 16 KiB on stream 1 against the default 64 KiB
/// windows; the server's WINDOW_UPDATEs (stream and connection, 64 KiB each) come back after
/// `late_ms`, either once the window is used up (`after_exhaustion`) or before it is.
fn upload(s: &mut Script, frames: usize, late_ms: i64, after_exhaustion: bool) {
    use crate::analyze::h2::frame::WINDOW_UPDATE;
    s.send(MS, true, F::PSH | F::ACK, PREFACE);
    s.send(100_000, false, F::PSH | F::ACK, &frame(SETTINGS, 0, 0, &[]));
    s.send(
        MS,
        true,
        F::PSH | F::ACK,
        &frame(HEADERS, END_HEADERS, 1, &[0x83, 0x86, 0x84]),
    );
    let chunk = vec![0u8; 16_383];
    let wu = |stream: u32| frame(WINDOW_UPDATE, 0, stream, &65_532u32.to_be_bytes());
    for k in 0..frames {
        let last = k + 1 == frames;
        let flags = if last { END_STREAM } else { 0 };
        s.send(
            100_000,
            true,
            F::PSH | F::ACK,
            &frame(DATA, flags, 1, &chunk),
        );
        // Four frames of 16 383 bytes use 65 532 of the 65 535-byte windows... and a fifth
        // byte-sized frame the rest; modelled as: after every 4th frame the window is spent.
        if (k + 1) % 4 == 0 && !last {
            s.send(100_000, true, F::PSH | F::ACK, &frame(DATA, 0, 1, &[0; 3]));
            let when = if after_exhaustion {
                late_ms * MS
            } else {
                100_000
            };
            s.send(when, false, F::PSH | F::ACK, &cat(&[wu(0), wu(1)]));
            // Top up what the 3 bytes used, too.
            s.send(
                100_000,
                false,
                F::PSH | F::ACK,
                &cat(&[
                    frame(WINDOW_UPDATE, 0, 0, &3u32.to_be_bytes()),
                    frame(WINDOW_UPDATE, 0, 1, &3u32.to_be_bytes()),
                ]),
            );
        }
    }
    s.send(
        5 * MS,
        false,
        F::PSH | F::ACK,
        &frame(HEADERS, END_HEADERS | END_STREAM, 1, &[0x88]),
    );
}

#[test]
fn an_upload_that_waits_for_each_window_update_is_a_flow_control_stall() {
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:8080");
    s.handshake();
    upload(&mut s, 16, 40, true);
    s.close();
    let an = s.a.finish();
    assert_eq!(an.exchanges.count, 1);
    let f = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::H2FlowControlStall)
        .unwrap_or_else(|| panic!("{:#?}", an.findings));
    assert_eq!(f.side, crate::finding::Side::Server);
    assert!(f.summary.contains("3 times"), "{}", f.summary);
    assert!(f.summary.contains("window is 65535 bytes"), "{}", f.summary);
    // Three waits of ~40 ms on the one stream.
    let added = f.impact.added_latency_ms.unwrap();
    assert!((115.0..=130.0).contains(&added), "{added}");
}

#[test]
fn window_updates_ahead_of_the_sender_are_no_stall() {
    // The same upload, but the server reopens the windows before they run out... here: the
    // updates come 0.1 ms after the frame that would have spent them, i.e. the sender never
    // had to wait long: still an exhausted window, but a sub-millisecond one, info at most.
    let mut s = Script::new("10.0.0.1:40000", "10.0.0.2:8080");
    s.handshake();
    upload(&mut s, 16, 40, false);
    s.close();
    let an = s.a.finish();
    if let Some(f) = an
        .findings
        .iter()
        .find(|f| f.id == FindingId::H2FlowControlStall)
    {
        assert_eq!(f.severity, crate::finding::Severity::Info, "{f:?}");
    }
}

//! `analyze -j N` with connections handed between workers while the analysis runs (the
//! balancer's moves, forced here at every round so they happen whatever the threads' speeds):
//! the analysis is still the single thread's, on every committed capture one after the other
//! (~20,000 frames, several rounds) and on every capture of the shared corpus (skipped when
//! it is missing). A move that lost a connection's state, left a half-open connection out of
//! its worker's count, or replayed a conclusion out of frame order changes the JSON.

use crate::common;
use crate::shard_region::{all_captures, json, pkt};

use common::{corpus, for_each_packet};
use netdoctor_core::analyze::shard::ShardedAnalyzer;
use netdoctor_core::{Analyzer, AnalyzerConfig, RawPacket};

/// Feeds the same frames to any analyzer's `push`.
type Feed<'a> = &'a dyn Fn(&mut dyn FnMut(&RawPacket<'_>));

/// A sharded analysis of `jobs` workers moving buckets every `every` rounds of `round`
/// packets, and its moves.
fn sharded_with_moves(
    jobs: usize,
    (every, round): (usize, usize),
    feed: Feed<'_>,
) -> (String, u64) {
    let mut a = ShardedAnalyzer::new(AnalyzerConfig::default(), jobs);
    a.force_moves_every(every, round);
    feed(&mut |p| a.push(p));
    let moves = a.moves();
    (json(&a.finish()), moves)
}

#[test]
fn connections_handed_between_workers_give_the_single_threads_analysis() {
    let (metas, bytes) = all_captures();
    assert!(metas.len() > 3 * 4096, "{} frames", metas.len());
    let mut one = Analyzer::new(AnalyzerConfig::default());
    for m in &metas {
        one.push(&pkt(m, &bytes));
    }
    let want = json(&one.finish());
    for (jobs, every, round) in [(2, 1, 4096), (3, 1, 500), (2, 2, 61), (4, 1, 7)] {
        let feed = |push: &mut dyn FnMut(&RawPacket<'_>)| {
            for m in &metas {
                push(&pkt(m, &bytes));
            }
        };
        let (got, moves) = sharded_with_moves(jobs, (every, round), &feed);
        assert!(moves > 0, "-j {jobs}: no bucket was moved");
        assert!(
            got == want,
            "-j {jobs}, moves every {every} rounds of {round} packets ({moves} moves): the \
             analysis differs"
        );
    }
}

#[test]
fn corpus_captures_give_the_same_analysis_with_moves() {
    let dir = corpus();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "skipped: needs {} (the shared realworld-pcaps corpus)",
            dir.display()
        );
        return;
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".pcap") || n.ends_with(".pcapng") || n.ends_with(".pcap.gz")
        })
        .collect();
    files.sort();
    let mut differ = Vec::new();
    let mut moved = 0;
    for f in &files {
        let name = f.to_string_lossy().into_owned();
        // Frames of this capture, kept to be fed twice (the reader may stop at a bad record:
        // both analyzers get the same frames).
        let mut frames = Vec::new();
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for_each_packet(&name, |p| {
                frames.push((p.frame, p.ts_ns, p.link, p.orig_len, p.data.to_vec()))
            })
        }));
        if read.is_err() || frames.is_empty() {
            continue;
        }
        let feed = |push: &mut dyn FnMut(&RawPacket<'_>)| {
            for (frame, ts_ns, link, orig_len, data) in &frames {
                push(&RawPacket {
                    frame: *frame,
                    ts_ns: *ts_ns,
                    link: *link,
                    data,
                    orig_len: *orig_len,
                });
            }
        };
        let mut one = Analyzer::new(AnalyzerConfig::default());
        feed(&mut |p| one.push(p));
        let want = json(&one.finish());
        // Rounds of 29 packets, moves at every one: most connections change workers often.
        let (got, moves) = sharded_with_moves(2, (1, 29), &feed);
        moved += u64::from(moves > 0);
        if got != want {
            differ.push(name);
        }
    }
    assert!(
        differ.is_empty(),
        "analysis differs with moves: {differ:#?}"
    );
    assert!(
        files.is_empty() || moved > 0,
        "no corpus capture had a bucket moved"
    );
}

/// An Ethernet frame of an IPv4 TCP segment (checksums left 0: not checked).
fn frame(
    src: ([u8; 4], u16),
    dst: ([u8; 4], u16),
    seq: u32,
    ack: u32,
    flags: u8,
    len: usize,
) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 20 + len) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&dst.0);
    f.extend_from_slice(&src.1.to_be_bytes());
    f.extend_from_slice(&dst.1.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&ack.to_be_bytes());
    f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend(std::iter::repeat_n(b'x', len));
    f
}

const ACK: u8 = 0x10;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;

/// Connections whose per-key state outside the connection table must move with them: each
/// `events` step of every connection in turn (so moves fall between any two of them).
fn interleaved(conns: usize, events: impl Fn(usize) -> Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let per: Vec<Vec<Vec<u8>>> = (0..conns).map(&events).collect();
    let steps = per.iter().map(Vec::len).max().unwrap_or(0);
    (0..steps)
        .flat_map(|s| per.iter().filter_map(move |p| p.get(s).cloned()))
        .collect()
}

#[test]
fn keys_remembered_outside_the_connection_table_move_with_their_bucket() {
    let (c, s) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    // A reset connection, then the server's data still in flight (a leftover of it, not a
    // connection picked up mid-stream) and the closed socket's reset of it.
    let reset = interleaved(24, |k| {
        let (cl, sv) = ((c, 40_000 + k as u16), (s, 80));
        vec![
            frame(cl, sv, 1000, 0, SYN, 0),
            frame(sv, cl, 5000, 1001, SYN | ACK, 0),
            frame(cl, sv, 1001, 5001, ACK, 0),
            frame(cl, sv, 1001, 5001, ACK | PSH, 20),
            frame(sv, cl, 5001, 1021, ACK | PSH, 100),
            frame(cl, sv, 1021, 0, RST, 0),
            frame(sv, cl, 5101, 1021, ACK | PSH, 100),
            frame(cl, sv, 1021, 0, RST, 0),
        ]
    });
    // Picked up mid-stream: both ends' pure ACKs before the first data (both ends seen),
    // then the client's data alone.
    let (c2, s2) = ([10, 0, 1, 1], [10, 0, 1, 2]);
    let untracked = interleaved(24, |k| {
        let (cl, sv) = ((c2, 50_000 + k as u16), (s2, 8080));
        let mut v = vec![
            frame(cl, sv, 100, 900, ACK, 0),
            frame(sv, cl, 900, 100, ACK, 0),
        ];
        v.extend((0..4).map(|i| frame(cl, sv, 100 + 50 * i, 900, ACK | PSH, 50)));
        v
    });
    for (what, frames) in [("reset", reset), ("untracked", untracked)] {
        let feed = |push: &mut dyn FnMut(&RawPacket<'_>)| {
            for (i, f) in frames.iter().enumerate() {
                push(&RawPacket {
                    frame: i as u64 + 1,
                    ts_ns: 1_000_000_000 + i as i64 * 1_000_000,
                    link: netdoctor_core::LinkType::Ethernet,
                    data: f,
                    orig_len: f.len() as u32,
                });
            }
        };
        let mut one = Analyzer::new(AnalyzerConfig::default());
        feed(&mut |p| one.push(p));
        let want = json(&one.finish());
        for round in [3, 5, 24] {
            let (got, moves) = sharded_with_moves(2, (1, round), &feed);
            assert!(moves > 0, "{what}: no bucket was moved");
            assert!(
                got == want,
                "{what}, rounds of {round} packets: the analysis differs"
            );
        }
    }
}

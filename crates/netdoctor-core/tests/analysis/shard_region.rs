//! `analyze -j N` with frames handed to the workers as offsets into shared bytes (the map of
//! the capture file, `ShardedAnalyzer::with_region`) instead of copies: the analysis is the
//! single thread's, whether every frame lies in the region, only some do (the rest copied),
//! and the reader is told how far the workers got, never past what it pushed.
//!
//! Input: every committed capture one after the other (each shifted to start 10 s after the
//! one before ends, frames numbered on), ~20,000 frames of mixed link types: several rounds
//! of the sharded reader, so rounds are merged and reported while frames are still pushed.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{capture_path, for_each_packet};
use netdoctor_core::analyze::shard::ShardedAnalyzer;
use netdoctor_core::packet::LinkType;
use netdoctor_core::{Analyzer, AnalyzerConfig, RawPacket};

/// A frame without its bytes: they are `off..off + len` of the region.
struct Meta {
    frame: u64,
    ts_ns: i64,
    link: LinkType,
    orig_len: u32,
    off: usize,
    len: usize,
}

/// Every committed capture's frames, in one buffer.
fn all_captures() -> (Vec<Meta>, Vec<u8>) {
    let dir = capture_path("");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("testdata/captures")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pcap") || n.ends_with(".pcapng") || n.ends_with(".pcap.gz"))
        .collect();
    names.sort();
    let (mut metas, mut bytes) = (Vec::new(), Vec::new());
    let mut shift = 0i64;
    for name in &names {
        let (mut first, mut last) = (None, 0i64);
        let start = metas.len();
        for_each_packet(name, |p| {
            let first = *first.get_or_insert(p.ts_ns);
            last = last.max(p.ts_ns - first);
            metas.push(Meta {
                frame: metas.len() as u64 + 1,
                ts_ns: p.ts_ns - first,
                link: p.link,
                orig_len: p.orig_len,
                off: bytes.len(),
                len: p.data.len(),
            });
            bytes.extend_from_slice(p.data);
        });
        for m in &mut metas[start..] {
            m.ts_ns += shift;
        }
        shift += last + 10_000_000_000;
    }
    (metas, bytes)
}

fn pkt<'a>(m: &Meta, from: &'a [u8]) -> RawPacket<'a> {
    RawPacket {
        frame: m.frame,
        ts_ns: m.ts_ns,
        link: m.link,
        data: &from[m.off..m.off + m.len],
        orig_len: m.orig_len,
    }
}

/// Frames warmed by [`count_warmed`] (tests run in parallel: only ever more).
static WARMED: AtomicUsize = AtomicUsize::new(0);

/// A `Warm` that counts the frames it is given (each a whole frame's bytes).
fn count_warmed(bytes: &[u8]) {
    assert!(!bytes.is_empty());
    WARMED.fetch_add(1, Ordering::Relaxed);
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serialize")
}

#[test]
fn frames_read_from_shared_bytes_give_the_single_threads_analysis() {
    let (metas, bytes) = all_captures();
    assert!(metas.len() > 3 * 4096, "{} frames", metas.len());
    let region: Arc<Vec<u8>> = Arc::new(bytes);
    // Copies of the frames outside the region, for the mixed case.
    let copy: Vec<u8> = region.as_ref().clone();
    let mut one = Analyzer::new(AnalyzerConfig::default());
    for m in &metas {
        one.push(&pkt(m, &region));
    }
    let want = json(&one.finish());
    // every frame in the region; every other frame copied; none in it; with frames warmed
    // ahead of the worker (`Warm`) or not: the hint changes no result
    let warm: Option<netdoctor_core::analyze::shard::Warm> = Some(count_warmed);
    // (and with the reader's connections moved to a worker at every round: where a
    // connection is analyzed changes no result either)
    for (jobs, in_region, warm, moving) in [
        (2, 1, warm, false),
        (3, 1, None, false),
        (2, 2, warm, false),
        (2, 0, warm, false),
        (2, 1, None, false),
        (2, 1, warm, true),
        (3, 2, None, true),
    ] {
        let done = Arc::new(Mutex::new(Vec::new()));
        let told = Arc::clone(&done);
        let warmed = WARMED.load(Ordering::Relaxed);
        let mut a = ShardedAnalyzer::with_region(
            AnalyzerConfig::default(),
            jobs,
            Arc::clone(&region) as _,
            Box::new(move |n| told.lock().unwrap().push(n)),
            warm,
        );
        if moving {
            a = a.moving_every_round();
        }
        for (k, m) in metas.iter().enumerate() {
            let from: &[u8] = if in_region > 0 && k % in_region == 0 {
                &region
            } else {
                &copy
            };
            a.push(&pkt(m, from));
        }
        let moved = a.connections_moved();
        let got = json(&a.finish());
        if moving {
            assert!(moved > 5, "-j {jobs}: {moved} connections moved");
        }
        if warm.is_some() {
            assert!(
                WARMED.load(Ordering::Relaxed) > warmed,
                "-j {jobs}: no frame warmed"
            );
        }
        assert!(
            got == want,
            "-j {jobs}, every {in_region}. frame in the region, moving {moving}: the \
             analysis differs"
        );
        let done = done.lock().unwrap();
        assert!(
            !done.is_empty(),
            "-j {jobs}: never told how far the workers got"
        );
        assert!(done.windows(2).all(|w| w[0] < w[1]), "{done:?}");
        assert!(*done.last().unwrap() <= metas.len() as u64, "{done:?}");
    }
}

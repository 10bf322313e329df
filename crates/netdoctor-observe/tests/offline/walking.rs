//! The merge during the walk (`CaptureFile::merge_walking`, `analyze` of a mapped pcap) must
//! hand the frames on exactly as the merge after the whole walk does (`time_runs` then
//! `TimeRuns::for_each`), or stop: never a
//! different order. It stops for a run that starts before frames already handed on (captures
//! appended with `mergecap -a`), more runs than allowed, a file cut short and out of order.

use crate::runs::{Walked, frames, pcap, walk};
use netdoctor_core::analyze::order::backdated_after;
use netdoctor_observe::CaptureFile;
use netdoctor_observe::pcapfile::{Abort, LEAD};
use std::path::Path;

/// What the merge during the walk found, as [`walk`] reports it, and its warnings.
fn walking(path: &Path, max_runs: usize) -> Result<(Walked, Vec<String>), Abort> {
    let file = CaptureFile::open(path).expect("open");
    let mut order = Vec::new();
    let w = file
        .merge_walking(max_runs, &backdated_after, &mut |p| order.push(p.frame))
        .expect("a mapped file")?;
    assert_eq!(w.summary.packets, order.len() as u64);
    Ok((
        (
            w.runs,
            w.first_backdated,
            w.summary.packets,
            w.backdated,
            order,
        ),
        w.summary.warnings,
    ))
}

/// Frames of 200–1,700 bytes, 100 µs apart; every 7th backdated by 250 µs when `jitter`
/// (a capture on several CPUs): the walk often stops right before one.
fn jittered(n: usize, jitter: bool) -> Vec<(i64, Vec<u8>)> {
    let base = 1_700_000_000_000_000i64;
    (0..n)
        .map(|i| {
            let back = if jitter && i % 7 == 6 { 250 } else { 0 };
            let ts = base + i as i64 * 100 - back;
            (ts, vec![(i % 251) as u8; 200 + (i * 37) % 1500])
        })
        .collect()
}

#[test]
fn a_capture_with_jitter_merges_while_walked_as_after_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jitter.pcap");
    let data = pcap(&jittered(12_000, true));
    // Several leads long: walked a chunk at a time, many times.
    assert!(data.len() > 2 * LEAD);
    std::fs::write(&path, &data).unwrap();
    let full = walk(&path, 1).expect("a walk");
    assert!(full.0 > 1_000, "runs {}", full.0);
    let (got, warnings) = walking(&path, 1 << 20).expect("no stop");
    assert_eq!(got, full);
    assert!(warnings.is_empty());
    // More runs than allowed: stopped, as the full walk gives none.
    let file = CaptureFile::open(&path).expect("open");
    assert!(file.time_runs(50, 1, &backdated_after).is_none());
    assert_eq!(walking(&path, 50).err(), Some(Abort::Runs));
}

#[test]
fn a_capture_in_order_is_one_run_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ordered.pcap");
    let data = pcap(&jittered(12_000, false));
    std::fs::write(&path, &data).unwrap();
    let ((runs, first, n, back, order), warnings) = walking(&path, 1 << 20).expect("no stop");
    assert_eq!((runs, first, n, back), (1, None, 12_000, 0));
    assert!(order.iter().copied().eq(1..=12_000));
    assert!(warnings.is_empty());
    // Cut short: the frames before the cut and the in-order reader's warning.
    let cut = dir.path().join("cut.pcap");
    std::fs::write(&cut, &data[..data.len() - 100]).unwrap();
    let ((runs, _, n, _, order), warnings) = walking(&cut, 1 << 20).expect("no stop");
    assert_eq!((runs, n, order.len()), (1, 11_999, 11_999));
    assert_eq!(
        warnings,
        ["capture file ends in the middle of a packet after 11999 packets (truncated?)"]
    );
}

#[test]
fn a_capture_cut_short_and_out_of_order_is_left_to_the_reorder_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.pcap");
    let data = pcap(&jittered(12_000, true));
    std::fs::write(&path, &data[..data.len() - 100]).unwrap();
    // The full walk gives none either.
    assert!(walk(&path, 1).is_none());
    assert_eq!(walking(&path, 1 << 20).err(), Some(Abort::Odd));
}

#[test]
fn captures_appended_far_back_stop_the_merge_or_merge_as_after_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    // The last third of the frames stamped a third of the capture back (`mergecap -a` of two
    // captures that overlap), and a backdated frame every 97th.
    let big = dir.path().join("appended.pcap");
    let data = pcap(&frames(12_000, |i| vec![3u8; 200 + (i * 37) % 1500]));
    assert!(data.len() > 2 * LEAD);
    std::fs::write(&big, &data).unwrap();
    let stop = walking(&big, 1 << 20).err();
    assert!(matches!(stop, Some(Abort::Late | Abort::Lead)), "{stop:?}");
    // Small enough to be walked whole before the first frame is handed on: merged.
    let small = dir.path().join("small.pcap");
    std::fs::write(&small, pcap(&frames(300, |_| vec![5u8; 300]))).unwrap();
    let full = walk(&small, 1).expect("a walk");
    assert_eq!(walking(&small, 1 << 20).expect("merged").0, full);
}

#[test]
fn a_run_backdated_past_the_hold_stops_the_merge() {
    // Every 2,000th frame starts a run 40 ms back (400 frames), past the 10 ms the merge stays
    // behind the walk (the 250 µs of the jitter above are well within it).
    let base = 1_700_000_000_000_000i64;
    let far: Vec<(i64, Vec<u8>)> = (0..12_000)
        .map(|i| {
            let back = if i % 2_000 == 1_999 { 40_000 } else { 0 };
            (
                base + i as i64 * 100 - back,
                vec![9u8; 200 + (i * 37) % 1500],
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("far.pcap");
    std::fs::write(&path, pcap(&far)).unwrap();
    let full = walk(&path, 1).expect("a walk");
    assert_eq!(full.0, 7);
    // The first such run is found when the merge is already past its start.
    assert_eq!(walking(&path, 1 << 20).err(), Some(Abort::Late));
}

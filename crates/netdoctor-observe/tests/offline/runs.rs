//! The walk of a mapped pcap's record headers (`CaptureFile::time_runs`) in several parts at
//! once (`analyze -j N`) must find what the one-thread walk finds: the same runs, frames and
//! backdated count, and the same merged order. A part starts where records seem to start after
//! its cut point; a frame whose payload is itself a string of pcap records (a capture of a pcap
//! download) makes such a start false, and the walk must notice and still agree.

use netdoctor_core::analyze::order::backdated_after;
use netdoctor_observe::CaptureFile;
use std::path::Path;

/// A classic little-endian microsecond pcap (Ethernet) of `(ts_us, payload)` records.
pub(crate) fn pcap(frames: &[(i64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&262_144u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (ts, data) in frames {
        record(&mut out, *ts, data);
    }
    out
}

pub(crate) fn record(out: &mut Vec<u8>, ts_us: i64, data: &[u8]) {
    out.extend_from_slice(&((ts_us / 1_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&((ts_us % 1_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
}

/// What a walk found: runs, first backdated frame, frames, backdated count and the frame
/// numbers in merged order.
pub(crate) type Walked = (usize, Option<u64>, u64, u64, Vec<u64>);

/// What a walk in `parts` found.
pub(crate) fn walk(path: &Path, parts: usize) -> Option<Walked> {
    let file = CaptureFile::open(path).expect("open");
    let (runs, back) = file.time_runs(1 << 20, parts, &backdated_after)?;
    let mut order = Vec::new();
    runs.for_each(&mut |p| order.push(p.frame));
    Some((
        runs.len(),
        runs.first_backdated(),
        runs.frames(),
        back,
        order,
    ))
}

/// Frames of varied sizes, stamped mostly in order with a backdated frame every 97th and a
/// second capture's worth appended part way (a long overlapping run).
pub(crate) fn frames(n: usize, payload: impl Fn(usize) -> Vec<u8>) -> Vec<(i64, Vec<u8>)> {
    let base = 1_700_000_000_000_000i64;
    (0..n)
        .map(|i| {
            let mut ts = base + i as i64 * 100;
            if i % 97 == 96 {
                ts -= 250;
            }
            if i >= n * 2 / 3 {
                ts -= (n as i64 / 3) * 100;
            }
            (ts, payload(i))
        })
        .collect()
}

#[test]
fn a_walk_in_parts_finds_what_one_thread_finds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parts.pcap");
    // ~12 MB: above the size from which the walk is split.
    let data = pcap(&frames(12_000, |i| {
        vec![(i % 251) as u8; 200 + (i * 37) % 1500]
    }));
    assert!(data.len() > 10 << 20);
    std::fs::write(&path, &data).unwrap();
    let one = walk(&path, 1).expect("a walk");
    assert!(one.0 > 100, "runs {}", one.0);
    assert!(one.3 > 100, "backdated {}", one.3);
    assert_eq!(one.2, 12_000);
    for parts in [2, 3, 4, 7] {
        assert_eq!(walk(&path, parts).as_ref(), Some(&one), "{parts} parts");
    }
}

#[test]
fn a_payload_that_looks_like_records_does_not_fool_the_parts() {
    // Every frame's payload is 60–65 KB of well-formed pcap records stamped near the capture's
    // own time, so a part's search for a record start lands inside a payload.
    let base = 1_700_000_000_000_000i64;
    let fake = |i: usize| {
        let mut p = Vec::new();
        while p.len() < 60_000 + (i * 1_237) % 5_000 {
            record(&mut p, base + i as i64, &[7u8; 40]);
        }
        p
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake.pcap");
    let data = pcap(&frames(300, fake));
    assert!(data.len() > 16 << 20);
    std::fs::write(&path, &data).unwrap();
    let one = walk(&path, 1).expect("a walk");
    assert_eq!(one.2, 300);
    for parts in [2, 3, 5] {
        assert_eq!(walk(&path, parts).as_ref(), Some(&one), "{parts} parts");
    }
}

#[test]
fn a_file_cut_short_gives_no_runs_split_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.pcap");
    let data = pcap(&frames(12_000, |i| vec![1u8; 300 + i % 900]));
    std::fs::write(&path, &data[..data.len() - 100]).unwrap();
    assert!(walk(&path, 1).is_none());
    assert!(walk(&path, 3).is_none());
}

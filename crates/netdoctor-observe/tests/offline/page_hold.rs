//! A consumer that shares the map of a capture (`CaptureFile::share_map`, `analyze -j N`'s
//! workers reading frames in place) keeps the pages it has not said it is done with: the
//! reader releases pages behind itself only as far as the consumer got. Measured as the
//! mapping's resident size in /proc/self/smaps after a read of an 8 MiB file.

use netdoctor_observe::{CaptureFile, PacketSource};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;

/// An 8 MiB classic pcap: 8,000 Ethernet frames of 1,000 bytes, stamps counting up.
fn write_capture(path: &Path) {
    let mut out = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        match v {
            0x0004_0002 => out.extend_from_slice(&[2, 0, 4, 0]),
            _ => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
    for k in 0..8_000u32 {
        for v in [k, 0, 1000, 1000] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&[0u8; 1000]);
    }
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(&out))
        .unwrap();
}

/// KiB of the map of `path` resident in this process.
fn resident_kib(path: &Path) -> u64 {
    let canon = path.canonicalize().unwrap();
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut ours = false;
    let mut kib = 0;
    for l in smaps.lines() {
        if l.contains('-') && l.split_whitespace().count() >= 5 && !l.ends_with(" kB") {
            ours = l.ends_with(&*canon.to_string_lossy());
        } else if ours && let Some(v) = l.strip_prefix("Rss:") {
            kib += v
                .trim()
                .trim_end_matches(" kB")
                .trim()
                .parse::<u64>()
                .unwrap();
        }
    }
    kib
}

#[test]
fn pages_are_released_only_behind_the_consumer_that_shares_the_map() {
    let dir = std::env::temp_dir().join(format!("nd-page-hold-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("eight-mib.pcap");
    write_capture(&path);
    // (shares the map, tells the hold as it goes) -> most KiB left resident
    for (share, tell) in [(false, false), (true, false), (true, true)] {
        let mut file = CaptureFile::open(&path).unwrap();
        let shared = if share { file.share_map() } else { None };
        assert_eq!(shared.is_some(), share, "a plain pcap is mapped");
        let mut n = 0u64;
        file.for_each_packet(&mut |_| {
            n += 1;
            if tell && let Some(s) = &shared {
                s.hold.done_through(n);
            }
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(n, 8_000);
        let kib = resident_kib(&path);
        match (share, tell) {
            // Never told: every page read stays (8 MiB less the last step or so).
            (true, false) => assert!(kib >= 6 * 1024, "{kib} KiB resident, want the pages held"),
            // Released behind the reader (or behind the consumer right on its heels).
            _ => assert!(
                kib <= 3 * 1024,
                "share {share}, tell {tell}: {kib} KiB resident"
            ),
        }
        drop(shared);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

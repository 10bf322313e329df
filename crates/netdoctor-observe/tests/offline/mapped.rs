//! A plain pcap file opened by path is read in place from a map of it (`pcapfile::mapped`); the
//! same bytes read as a stream go through `pcap-parser`. Both must deliver the same packets,
//! summaries and errors: every committed classic pcap, those files in big-endian and with
//! nanosecond timestamps, cut at many points, and with a hostile captured length.

use netdoctor_observe::{CaptureFile, PacketSource};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// Everything a reader delivers: each packet's fields and bytes, the summary or the error.
#[derive(Debug, PartialEq)]
struct Seen {
    packets: Vec<(u64, i64, String, u32, Vec<u8>)>,
    end: Result<(u64, Vec<String>), String>,
}

fn collect(mut file: CaptureFile) -> Seen {
    let mut packets = Vec::new();
    let end = file
        .for_each_packet(&mut |p| {
            packets.push((
                p.frame,
                p.ts_ns,
                format!("{:?}", p.link),
                p.orig_len,
                p.data.to_vec(),
            ));
            ControlFlow::Continue(())
        })
        .map(|s| (s.packets, s.warnings))
        .map_err(|e| e.to_string());
    Seen { packets, end }
}

/// Whether `path` is mapped into this process now.
fn is_mapped(path: &Path) -> bool {
    let canon = path.canonicalize().unwrap();
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .any(|l| l.ends_with(&*canon.to_string_lossy()))
}

/// Reads `path` both ways and compares; returns the packet count.
fn same_both_ways(path: &Path) -> usize {
    let shown = path.display().to_string();
    let mapped = CaptureFile::open(path).map(collect);
    let stream = std::fs::File::open(path)
        .map_err(|e| e.to_string())
        .and_then(|f| {
            CaptureFile::from_reader(&shown, Box::new(f), None).map_err(|e| e.to_string())
        })
        .map(collect);
    let mapped = mapped.map_err(|e| e.to_string());
    assert_eq!(mapped, stream, "{shown}: the map and the stream differ");
    mapped.map_or(0, |s| s.packets.len())
}

fn committed_pcaps() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["testdata/captures", "crates/netdoctor-observe/tests/data"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "pcap") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn committed_pcaps_read_the_same_mapped_and_streamed() {
    let files = committed_pcaps();
    assert!(files.len() >= 10, "committed captures: {files:?}");
    let mut packets = 0;
    for f in &files {
        packets += same_both_ways(f);
    }
    assert!(packets > 1000, "{packets} packets in {} files", files.len());
}

#[test]
fn a_plain_pcap_is_mapped_and_others_are_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pcap = root.join("tests/data/lo-http.pcap");
    let ng = root.join("tests/data/lo-http.pcapng");
    for (path, want) in [(&pcap, true), (&ng, false)] {
        let mut file = CaptureFile::open(path).unwrap();
        let mut seen = None;
        file.for_each_packet(&mut |_| {
            seen.get_or_insert_with(|| is_mapped(path));
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(seen, Some(want), "{}", path.display());
        drop(file);
        assert!(!is_mapped(path), "{} still mapped", path.display());
    }
}

/// The file's records rewritten big-endian and/or with nanosecond timestamps.
fn rewrite(v: &[u8], big: bool, nanos: bool) -> Vec<u8> {
    let le = |o: usize| u32::from_le_bytes(v[o..o + 4].try_into().unwrap());
    let put = |out: &mut Vec<u8>, x: u32| {
        out.extend_from_slice(&if big {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        })
    };
    assert_eq!(
        le(0),
        0xa1b2_c3d4,
        "a little-endian microsecond file to start from"
    );
    let mut out = Vec::new();
    put(&mut out, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
    let ver = |x: u16| {
        if big {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        }
    };
    out.extend_from_slice(&ver(2));
    out.extend_from_slice(&ver(4));
    for o in [8, 12, 16, 20] {
        put(&mut out, le(o));
    }
    let mut pos = 24;
    while pos + 16 <= v.len() {
        let caplen = le(pos + 8) as usize;
        put(&mut out, le(pos));
        put(
            &mut out,
            if nanos {
                le(pos + 4) * 1000 + 7
            } else {
                le(pos + 4)
            },
        );
        put(&mut out, le(pos + 8));
        put(&mut out, le(pos + 12));
        out.extend_from_slice(&v[pos + 16..pos + 16 + caplen]);
        pos += 16 + caplen;
    }
    out
}

#[test]
fn byte_orders_cuts_and_lies_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lo-http.pcap");
    let orig = std::fs::read(&src).unwrap();
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for (big, nanos) in [(false, false), (true, false), (false, true), (true, true)] {
        cases.push((format!("be{big}-ns{nanos}"), rewrite(&orig, big, nanos)));
    }
    // Cut inside the file header, inside a record header and inside packet data.
    for cut in [
        0,
        10,
        24,
        30,
        40,
        60,
        100,
        24 + 16 + 3,
        orig.len() / 2,
        orig.len() - 1,
    ] {
        cases.push((format!("cut{cut}"), orig[..cut].to_vec()));
    }
    // A captured length past the snap length, on the second record.
    let mut lie = orig.clone();
    let second = 24 + 16 + u32::from_le_bytes(orig[32..36].try_into().unwrap()) as usize;
    lie[second + 8..second + 12].copy_from_slice(&0x00ff_ffffu32.to_le_bytes());
    cases.push(("lie".into(), lie));
    let mut errors = 0;
    for (name, bytes) in &cases {
        let path = dir.path().join(format!("{name}.pcap"));
        std::fs::write(&path, bytes).unwrap();
        let shown = path.display().to_string();
        let mapped = CaptureFile::open(&path)
            .map(collect)
            .map_err(|e| e.to_string());
        let stream =
            CaptureFile::from_reader(&shown, Box::new(std::fs::File::open(&path).unwrap()), None)
                .map(collect)
                .map_err(|e| e.to_string());
        assert_eq!(mapped, stream, "{name}");
        errors += usize::from(mapped.is_err() || mapped.as_ref().is_ok_and(|s| s.end.is_err()));
    }
    // The empty file, the cut headers and the lie end in errors; the rest read.
    assert!((3..cases.len() - 4).contains(&errors), "{errors} errors");
}

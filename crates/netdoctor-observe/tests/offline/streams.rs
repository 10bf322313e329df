//! Captures from streams: the same packets from a pipe that hands out a few bytes per read as
//! from the file, gzip'd or not, and damaged gzip data never panics (errors are one line).

use netdoctor_observe::{CaptureFile, PacketSource};
use std::io::{Read, Write};
use std::ops::ControlFlow;
use std::path::Path;

fn data(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    )
    .unwrap()
}

/// A reader that hands out at most `n` bytes per read, like a slow pipe.
struct Trickle {
    data: std::io::Cursor<Vec<u8>>,
    n: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.n);
        self.data.read(&mut buf[..n])
    }
}

/// (frame, timestamp, bytes) of every packet, the warnings, or the error's text.
type Packets = Vec<(u64, i64, Vec<u8>)>;

fn read(bytes: Vec<u8>, per_read: usize) -> Result<(Packets, Vec<String>), String> {
    let reader = Box::new(Trickle {
        data: std::io::Cursor::new(bytes),
        n: per_read,
    });
    let mut cap = CaptureFile::from_reader("test", reader, None).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let summary = cap
        .for_each_packet(&mut |p| {
            out.push((p.frame, p.ts_ns, p.data.to_vec()));
            ControlFlow::Continue(())
        })
        .map_err(|e| e.to_string())?;
    assert_eq!(summary.packets as usize, out.len());
    Ok((out, summary.warnings))
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn a_trickling_pipe_gives_the_packets_of_the_file() {
    for name in ["lo-http.pcap", "lo-http.pcapng"] {
        let bytes = data(name);
        let (whole, warnings) = read(bytes.clone(), usize::MAX).unwrap();
        assert!(
            !whole.is_empty() && warnings.is_empty(),
            "{name}: {warnings:?}"
        );
        for per_read in [1, 7, 4096] {
            let (got, w) = read(bytes.clone(), per_read).unwrap();
            assert_eq!(got, whole, "{name}, {per_read} bytes per read");
            assert!(w.is_empty(), "{name}: {w:?}");
            let (got, w) = read(gzip(&bytes), per_read).unwrap();
            assert_eq!(got, whole, "{name} gzip'd, {per_read} bytes per read");
            assert!(w.is_empty(), "{name}: {w:?}");
        }
    }
}

#[test]
fn concatenated_gzip_members_read_as_one_capture() {
    let bytes = data("lo-http.pcap");
    let (whole, _) = read(bytes.clone(), usize::MAX).unwrap();
    let cut = bytes.len() / 2;
    let mut two = gzip(&bytes[..cut]);
    two.extend(gzip(&bytes[cut..]));
    let (got, _) = read(two, 100).unwrap();
    assert_eq!(got, whole);
}

#[test]
fn damaged_gzip_never_panics() {
    let bytes = data("lo-http.pcapng");
    let gz = gzip(&bytes);
    let (whole, _) = read(bytes, usize::MAX).unwrap();
    // xorshift: a fixed sequence of damage, so a failure reproduces.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut partial, mut errors) = (0, 0);
    for round in 0..400 {
        let mut d = gz.clone();
        match round % 3 {
            // Cut anywhere.
            0 => d.truncate((next() as usize) % d.len()),
            // Flip a few bytes.
            1 => {
                for _ in 0..1 + next() % 4 {
                    let i = (next() as usize) % d.len();
                    d[i] ^= 1 << (next() % 8);
                }
            }
            // Cut, then flip.
            _ => {
                d.truncate(1 + (next() as usize) % d.len());
                let i = (next() as usize) % d.len();
                d[i] = next() as u8;
            }
        }
        match read(d, 1 + (next() as usize) % 5000) {
            Ok((got, warnings)) => {
                assert!(got.len() <= whole.len() + 1, "round {round}");
                if got.len() < whole.len() {
                    partial += 1;
                    assert!(
                        !warnings.is_empty() || got.is_empty(),
                        "round {round}: silent loss"
                    );
                }
            }
            Err(msg) => {
                errors += 1;
                assert!(
                    !msg.contains('\n') && !msg.is_empty(),
                    "round {round}: {msg}"
                );
            }
        }
    }
    assert!(
        partial > 0 && errors > 0,
        "partial {partial}, errors {errors}"
    );
}

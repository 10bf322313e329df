//! Capture file reading and writing: committed tcpdump/dumpcap captures, round trips through
//! PcapWriter, hand-built pcap/pcapng in both byte orders, and bad input of every kind.

use netdoctor_core::{LinkType, RawPacket};
use netdoctor_observe::{BadCaptureKind, CaptureFile, ObserveError, PacketSource, PcapWriter};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[derive(Debug, Clone, PartialEq)]
struct Owned {
    frame: u64,
    ts_ns: i64,
    link: LinkType,
    data: Vec<u8>,
    orig_len: u32,
}

fn read_all(path: &Path) -> Result<(Vec<Owned>, netdoctor_observe::SourceSummary), ObserveError> {
    let mut cap = CaptureFile::open(path)?;
    let mut out = Vec::new();
    let summary = cap.for_each_packet(&mut |p: &RawPacket<'_>| {
        out.push(Owned {
            frame: p.frame,
            ts_ns: p.ts_ns,
            link: p.link,
            data: p.data.to_vec(),
            orig_len: p.orig_len,
        });
        ControlFlow::Continue(())
    })?;
    Ok((out, summary))
}

fn write_file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn bad_kind(r: Result<impl std::fmt::Debug, ObserveError>) -> (BadCaptureKind, String) {
    match r {
        Err(e @ ObserveError::BadCapture { kind, .. }) => (kind, e.to_string()),
        other => panic!("expected a BadCapture error, got {other:?}"),
    }
}

// Frame lengths and first timestamps as printed by `tshark -r … -T fields -e frame.cap_len
// -e frame.time_epoch` when the captures were committed.
const LENGTHS: [usize; 20] = [
    74, 74, 66, 145, 66, 250, 66, 72, 66, 66, 66, 66, 74, 74, 66, 145, 66, 250, 66, 72,
];

#[test]
fn reads_tcpdump_pcap() {
    let (pkts, summary) = read_all(&data("lo-http.pcap")).unwrap();
    assert_eq!(summary.packets, 20);
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    let lens: Vec<usize> = pkts.iter().map(|p| p.data.len()).collect();
    assert_eq!(lens, LENGTHS);
    assert!(pkts.iter().all(|p| p.link == LinkType::Ethernet));
    assert_eq!(pkts[0].ts_ns, 1_795_266_222_817_330_000);
    assert_eq!(pkts[1].ts_ns, 1_795_266_222_817_352_000);
    assert!(pkts.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
    assert_eq!(
        pkts.iter().map(|p| p.frame).collect::<Vec<_>>(),
        (1..=20).collect::<Vec<_>>()
    );
    // Ethernet type IPv4 and TCP in every frame.
    assert!(
        pkts.iter()
            .all(|p| p.data[12..14] == [8, 0] && p.data[23] == 6)
    );
}

#[test]
fn reads_dumpcap_pcapng() {
    let (pkts, summary) = read_all(&data("lo-http.pcapng")).unwrap();
    assert_eq!(summary.packets, 20);
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    let lens: Vec<usize> = pkts.iter().map(|p| p.data.len()).collect();
    assert_eq!(lens, LENGTHS);
    assert!(pkts.iter().all(|p| p.link == LinkType::Ethernet));
    // dumpcap writes nanosecond resolution (if_tsresol = 9).
    assert_eq!(pkts[0].ts_ns, 1_795_266_222_817_329_481);
    assert_eq!(pkts[1].ts_ns, 1_795_266_222_817_352_562);
    assert!(pkts.iter().all(|p| p.orig_len as usize == p.data.len()));
}

#[test]
fn break_stops_reading() {
    let mut cap = CaptureFile::open(&data("lo-http.pcapng")).unwrap();
    let mut seen = 0;
    let summary = cap
        .for_each_packet(&mut |_| {
            seen += 1;
            if seen == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(seen, 3);
    assert_eq!(summary.packets, 3);
}

fn sample_packets(link: LinkType) -> Vec<Owned> {
    (0..50u32)
        .map(|i| Owned {
            frame: u64::from(i) + 1,
            ts_ns: 1_700_000_000_123_456_789 + i64::from(i) * 1_000_003,
            link,
            data: (0..(i * 7 % 300)).map(|b| (b ^ i) as u8).collect(),
            orig_len: i * 7 % 300 + (i % 3) * 10,
        })
        .collect()
}

#[test]
fn pcap_round_trip_keeps_bytes_and_nanoseconds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt.pcap");
    let pkts = sample_packets(LinkType::Raw);
    let mut w = PcapWriter::create(&path, LinkType::Raw, 65535).unwrap();
    for p in &pkts {
        w.write(&RawPacket {
            frame: p.frame,
            ts_ns: p.ts_ns,
            link: p.link,
            data: &p.data,
            orig_len: p.orig_len,
        })
        .unwrap();
    }
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes[..4], [0x4d, 0x3c, 0xb2, 0xa1], "nanosecond magic");
    let (back, summary) = read_all(&path).unwrap();
    assert_eq!(summary.packets, pkts.len() as u64);
    // orig_len is never below the captured length in a pcap record.
    let expected: Vec<Owned> = pkts
        .into_iter()
        .map(|mut p| {
            p.orig_len = p.orig_len.max(p.data.len() as u32);
            p
        })
        .collect();
    assert_eq!(back, expected);
}

#[test]
fn writer_cuts_at_snaplen_and_rejects_mismatches() {
    let mut buf = Vec::new();
    let mut w = PcapWriter::new(&mut buf, LinkType::Ethernet, 10).unwrap();
    let data = [7u8; 40];
    let pkt = RawPacket {
        frame: 1,
        ts_ns: 5_000_000_001,
        link: LinkType::Ethernet,
        data: &data,
        orig_len: 40,
    };
    w.write(&pkt).unwrap();
    let wrong_link = RawPacket {
        link: LinkType::Raw,
        ..pkt
    };
    assert!(matches!(
        w.write(&wrong_link),
        Err(ObserveError::BadPacket { .. })
    ));
    let negative = RawPacket { ts_ns: -1, ..pkt };
    assert!(w.write(&negative).is_err());
    w.finish().unwrap();
    assert_eq!(buf.len(), 24 + 16 + 10);
    assert_eq!(
        u32::from_le_bytes(buf[32..36].try_into().unwrap()),
        10,
        "caplen"
    );
    assert_eq!(
        u32::from_le_bytes(buf[36..40].try_into().unwrap()),
        40,
        "orig_len"
    );
    assert_eq!(
        u32::from_le_bytes(buf[24..28].try_into().unwrap()),
        5,
        "seconds"
    );
    assert_eq!(
        u32::from_le_bytes(buf[28..32].try_into().unwrap()),
        1,
        "nanoseconds"
    );
}

/// A classic pcap file in either byte order, micro- or nanosecond.
fn legacy_pcap(
    be: bool,
    nanos: bool,
    link: u32,
    snaplen: u32,
    recs: &[(u32, u32, &[u8])],
) -> Vec<u8> {
    let u32b = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let u16b = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut out = Vec::new();
    out.extend(u32b(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
    out.extend(u16b(2));
    out.extend(u16b(4));
    out.extend([0; 8]);
    out.extend(u32b(snaplen));
    out.extend(u32b(link));
    for (sec, frac, data) in recs {
        out.extend(u32b(*sec));
        out.extend(u32b(*frac));
        out.extend(u32b(data.len() as u32));
        out.extend(u32b(data.len() as u32 + 4));
        out.extend(*data);
    }
    out
}

#[test]
fn legacy_pcap_both_byte_orders_and_resolutions() {
    let dir = tempfile::tempdir().unwrap();
    let recs: [(u32, u32, &[u8]); 2] = [(10, 250, b"\x45abc"), (11, 999_999, b"\x45")];
    for be in [false, true] {
        for nanos in [false, true] {
            let path = write_file(&dir, "x.pcap", &legacy_pcap(be, nanos, 101, 1000, &recs));
            let (pkts, _) = read_all(&path).unwrap();
            let unit = if nanos { 1 } else { 1000 };
            assert_eq!(pkts.len(), 2, "be={be} nanos={nanos}");
            assert_eq!(pkts[0].ts_ns, 10_000_000_000 + 250 * unit);
            assert_eq!(pkts[1].ts_ns, 11_000_000_000 + 999_999 * unit);
            assert_eq!(pkts[0].data, b"\x45abc");
            assert_eq!(pkts[0].orig_len, 8);
            assert_eq!(pkts[0].link, LinkType::Raw);
        }
    }
}

/// pcapng builder for tests: one section in the given byte order.
struct Ng {
    be: bool,
    out: Vec<u8>,
}

impl Ng {
    fn new(be: bool) -> Ng {
        let mut ng = Ng {
            be,
            out: Vec::new(),
        };
        let mut body = Vec::new();
        body.extend([0x1a2b_3c4du32].iter().flat_map(|v| ng.u32b(*v)));
        body.extend(ng.u16b(1));
        body.extend(ng.u16b(0));
        body.extend((-1i64).to_le_bytes());
        ng.block(0x0A0D_0D0A, &body);
        ng
    }
    fn u32b(&self, v: u32) -> [u8; 4] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn u16b(&self, v: u16) -> [u8; 2] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn block(&mut self, ty: u32, body: &[u8]) {
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let len = body.len() as u32 + 12;
        let (t, l) = (self.u32b(ty), self.u32b(len));
        self.out.extend(t);
        self.out.extend(l);
        self.out.extend(&body);
        self.out.extend(l);
    }
    fn idb(&mut self, link: u16, snaplen: u32, tsresol: Option<u8>, tsoffset: Option<i64>) {
        let mut b = Vec::new();
        b.extend(self.u16b(link));
        b.extend(self.u16b(0));
        b.extend(self.u32b(snaplen));
        if let Some(r) = tsresol {
            b.extend(self.u16b(9));
            b.extend(self.u16b(1));
            b.extend([r, 0, 0, 0]);
        }
        if let Some(o) = tsoffset {
            b.extend(self.u16b(14));
            b.extend(self.u16b(8));
            b.extend(if self.be {
                o.to_be_bytes()
            } else {
                o.to_le_bytes()
            });
        }
        if tsresol.is_some() || tsoffset.is_some() {
            b.extend([0; 4]); // opt_endofopt
        }
        self.block(1, &b);
    }
    fn epb(&mut self, if_id: u32, ts: u64, data: &[u8], orig_len: u32) {
        let mut b = Vec::new();
        b.extend(self.u32b(if_id));
        b.extend(self.u32b((ts >> 32) as u32));
        b.extend(self.u32b(ts as u32));
        b.extend(self.u32b(data.len() as u32));
        b.extend(self.u32b(orig_len));
        b.extend(data);
        self.block(6, &b);
    }
}

#[test]
fn pcapng_interfaces_resolutions_and_byte_orders() {
    let dir = tempfile::tempdir().unwrap();
    for be in [false, true] {
        let mut ng = Ng::new(be);
        ng.idb(1, 262_144, None, None); // Ethernet, microseconds (default)
        ng.idb(101, 65_535, Some(9), Some(100)); // raw IP, nanoseconds, +100 s
        ng.idb(276, 65_535, Some(0x80 | 10), None); // SLL2, 2^-10 s units
        ng.epb(0, 1_500_000, b"eth-frame", 60);
        ng.epb(1, 2_000_000_123, b"\x45raw", 4);
        ng.epb(2, 5 * 1024 + 512, b"sll2", 4);
        let path = write_file(&dir, "x.pcapng", &ng.out);
        let (pkts, summary) = read_all(&path).unwrap();
        assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
        assert_eq!(pkts.len(), 3, "be={be}");
        assert_eq!(
            pkts.iter().map(|p| p.link).collect::<Vec<_>>(),
            [LinkType::Ethernet, LinkType::Raw, LinkType::LinuxSll2]
        );
        assert_eq!(pkts[0].ts_ns, 1_500_000_000);
        assert_eq!(pkts[1].ts_ns, 102_000_000_123);
        assert_eq!(pkts[2].ts_ns, 5_500_000_000);
        assert_eq!(pkts[0].data, b"eth-frame");
        assert_eq!(pkts[0].orig_len, 60);
    }
}

#[test]
fn pcapng_new_section_resets_interfaces_and_byte_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = Ng::new(false);
    a.idb(101, 100, Some(9), None);
    a.epb(0, 7, b"\x45one", 4);
    let mut b = Ng::new(true);
    b.idb(1, 100, None, None);
    b.epb(0, 3, b"two", 3);
    let mut bytes = a.out;
    bytes.extend(b.out);
    let (pkts, _) = read_all(&write_file(&dir, "two.pcapng", &bytes)).unwrap();
    assert_eq!(pkts.len(), 2);
    assert_eq!((pkts[0].link, pkts[0].ts_ns), (LinkType::Raw, 7));
    assert_eq!((pkts[1].link, pkts[1].ts_ns), (LinkType::Ethernet, 3_000));
}

#[test]
fn pcapng_unsupported_interface_is_skipped_with_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut ng = Ng::new(false);
    ng.idb(147, 100, None, None); // LINKTYPE_USER0
    ng.idb(101, 100, None, None);
    ng.epb(0, 1, b"user", 4);
    ng.epb(1, 2, b"\x45ip", 3);
    let (pkts, summary) = read_all(&write_file(&dir, "mixed.pcapng", &ng.out)).unwrap();
    assert_eq!(pkts.len(), 1);
    assert_eq!(pkts[0].data, b"\x45ip");
    // Frame numbers count every packet block, as Wireshark does.
    assert_eq!(pkts[0].frame, 2);
    assert_eq!(summary.warnings.len(), 1);
    assert!(
        summary.warnings[0].contains("147"),
        "{:?}",
        summary.warnings
    );

    // Only unsupported packets: an error that names the number.
    let mut ng = Ng::new(false);
    ng.idb(147, 100, None, None);
    ng.epb(0, 1, b"user", 4);
    let (kind, msg) = bad_kind(read_all(&write_file(&dir, "user.pcapng", &ng.out)));
    assert_eq!(kind, BadCaptureKind::UnsupportedLinkType(147));
    assert!(msg.contains("unsupported link type 147"), "{msg}");
}

#[test]
fn missing_file() {
    let err = CaptureFile::open(Path::new("/nonexistent/capture.pcap"))
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "open /nonexistent/capture.pcap: No such file or directory"
    );
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(&dir, "empty.pcap", b"");
    let (kind, msg) = bad_kind(CaptureFile::open(&path).map(|_| ()));
    assert_eq!(kind, BadCaptureKind::Empty);
    assert!(msg.ends_with("empty.pcap: empty file (0 bytes)"), "{msg}");
}

#[test]
fn text_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(&dir, "capture.txt", b"hello world\n");
    let (kind, msg) = bad_kind(CaptureFile::open(&path).map(|_| ()));
    assert_eq!(kind, BadCaptureKind::NotCapture);
    assert!(
        msg.ends_with("capture.txt: not a pcap or pcapng file (starts with 'hello')"),
        "{msg}"
    );
}

#[test]
fn unknown_link_type_in_pcap() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(&dir, "usb.pcap", &legacy_pcap(false, false, 189, 100, &[]));
    let (kind, msg) = bad_kind(CaptureFile::open(&path).map(|_| ()));
    assert_eq!(kind, BadCaptureKind::UnsupportedLinkType(189));
    assert!(msg.contains("unsupported link type 189"), "{msg}");
}

#[test]
fn truncated_tail_is_a_warning_with_partial_packets() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["lo-http.pcap", "lo-http.pcapng"] {
        let full = std::fs::read(data(name)).unwrap();
        // dumpcap ends the pcapng with a statistics block: cut inside the last packet block
        // before it (a pcapng block ends with its own length).
        let mut end = full.len();
        if name.ends_with("ng") {
            end -= u32::from_le_bytes(full[end - 4..].try_into().unwrap()) as usize;
        }
        let path = write_file(&dir, name, &full[..end - 30]);
        let (pkts, summary) = read_all(&path).unwrap();
        assert_eq!(pkts.len(), 19, "{name}");
        assert_eq!(
            summary.warnings,
            ["capture file ends in the middle of a packet after 19 packets (truncated?)"],
            "{name}"
        );
        assert_eq!(
            pkts.iter().map(|p| p.data.len()).collect::<Vec<_>>(),
            LENGTHS[..19]
        );
    }
}

/// Two captures joined with `cat` (the second one's file header where a record should be):
/// no reader takes them as one file, so the error says what the file is and how captures are
/// joined, on the mapped path (a file) and the streaming one (gzip'd), instead of a captured
/// length read from the second header's fields.
#[test]
fn two_pcaps_joined_with_cat_are_named_as_such() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let one = legacy_pcap(
        false,
        false,
        1,
        262_144,
        &[(1, 2, b"abcd"), (1, 3, b"efgh")],
    );
    let mut joined = one.clone();
    joined.extend_from_slice(&one);
    let plain = write_file(&dir, "joined.pcap", &joined);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&joined).unwrap();
    let zipped = write_file(&dir, "joined.pcap.gz", &gz.finish().unwrap());
    for p in [plain, zipped] {
        let (kind, msg) = bad_kind(read_all(&p));
        assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
        assert!(
            msg.contains(&format!(
                "byte {}: a second pcap file header after packet 2",
                one.len()
            )),
            "{msg}"
        );
        assert!(msg.contains("mergecap"), "{msg}");
    }
    // A record of zero captured bytes is no second header: read as before.
    let empty = legacy_pcap(false, false, 1, 262_144, &[(1, 2, b""), (1, 3, b"efgh")]);
    let (pkts, _) = read_all(&write_file(&dir, "empty.pcap", &empty)).unwrap();
    assert_eq!(pkts.len(), 2);
}

#[test]
fn hostile_caplen_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // caplen field 0xfffffff0 in a pcap record, with only a few bytes following.
    let mut bytes = legacy_pcap(false, false, 1, 262_144, &[(1, 2, b"abcd")]);
    bytes[24 + 8..24 + 12].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    let (kind, msg) = bad_kind(read_all(&write_file(&dir, "huge.pcap", &bytes)));
    assert_eq!(kind, BadCaptureKind::HostileLength);
    assert!(msg.contains("4294967280"), "{msg}");

    // caplen above the file's snap length (but below 256 KiB).
    let big = vec![0x45u8; 2000];
    let bytes = legacy_pcap(false, false, 101, 1500, &[(1, 2, &big)]);
    let (kind, _) = bad_kind(read_all(&write_file(&dir, "snap.pcap", &bytes)));
    assert_eq!(kind, BadCaptureKind::HostileLength);

    // pcapng: a huge block length, and an EPB caplen above the interface snap length.
    let mut ng = Ng::new(false);
    ng.idb(101, 100, None, None);
    let at = ng.out.len();
    ng.epb(0, 1, &[0x45; 16], 16);
    ng.out[at + 4..at + 8].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let (kind, _) = bad_kind(read_all(&write_file(&dir, "huge.pcapng", &ng.out)));
    assert_eq!(kind, BadCaptureKind::HostileLength);

    let mut ng = Ng::new(false);
    ng.idb(101, 100, None, None);
    ng.epb(0, 1, &[0x45; 200], 200);
    let (kind, _) = bad_kind(read_all(&write_file(&dir, "snap.pcapng", &ng.out)));
    assert_eq!(kind, BadCaptureKind::HostileLength);

    // EPB caplen larger than its own block: malformed, not "truncated".
    let mut ng = Ng::new(false);
    ng.idb(101, 0, None, None);
    let at = ng.out.len();
    ng.epb(0, 1, &[0x45; 16], 16);
    ng.epb(0, 2, &[0x45; 16], 16);
    ng.out[at + 20..at + 24].copy_from_slice(&40u32.to_le_bytes());
    let (kind, _) = bad_kind(read_all(&write_file(&dir, "inner.pcapng", &ng.out)));
    assert_eq!(kind, BadCaptureKind::Malformed);
}

/// xorshift64*: deterministic pseudo-random bytes without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_and_mutated_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz");
    let seeds = [
        std::fs::read(data("lo-http.pcap")).unwrap(),
        std::fs::read(data("lo-http.pcapng")).unwrap(),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut errors) = (0, 0);
    for i in 0..300 {
        let bytes: Vec<u8> = if i % 3 == 0 {
            // Pure noise, sometimes behind a valid magic.
            let mut b: Vec<u8> = (0..rng.below(400)).map(|_| rng.next() as u8).collect();
            let magics: [&[u8]; 3] = [&[0xd4, 0xc3, 0xb2, 0xa1], &[0x0a, 0x0d, 0x0d, 0x0a], &[]];
            let m = magics[rng.below(3)];
            if b.len() >= m.len() {
                b[..m.len()].copy_from_slice(m);
            }
            b
        } else {
            // A real capture with a few bytes changed and maybe cut.
            let mut b = seeds[i % 2].clone();
            for _ in 0..1 + rng.below(6) {
                let at = rng.below(b.len());
                b[at] = rng.next() as u8;
            }
            if rng.below(4) == 0 {
                b.truncate(rng.below(b.len()));
            }
            b
        };
        std::fs::write(&path, &bytes).unwrap();
        match read_all(&path) {
            Ok((pkts, summary)) => {
                ok += 1;
                assert_eq!(pkts.len() as u64, summary.packets);
                assert!(pkts.iter().all(|p| p.data.len() <= 256 * 1024));
            }
            Err(e) => {
                errors += 1;
                let msg = e.to_string();
                assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
            }
        }
    }
    // Both outcomes happen: the mutations are neither all harmless nor all fatal.
    assert!(ok > 0 && errors > 0, "ok={ok} errors={errors}");
}

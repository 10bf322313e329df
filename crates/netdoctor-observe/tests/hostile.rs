//! Hostile capture files, built byte by byte in the tests: lying length fields, impossible
//! block layouts, undescribed interfaces, unknown link types, zeros, wrong byte-order magic.
//! Each must end in a clear one-line error (or a warning with the packets read so far), never
//! a panic, and never an allocation sized from a length field in the file: a child process runs
//! every case and its peak resident and virtual memory (VmHWM, VmPeak from /proc/self/status)
//! must stay small.
//!
//! Every packet read is also pushed through the core `Analyzer`, so the pair reader + analyzer
//! is exercised the way `netdoctor analyze` uses it.

use netdoctor_core::{Analyzer, AnalyzerConfig, CaptureStats, RawPacket};
use netdoctor_observe::pcapfile::{MAX_BLOCK_LEN, MAX_CAPLEN};
use netdoctor_observe::{BadCaptureKind, CaptureFile, ObserveError, PacketSource, SourceSummary};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// Building files.

/// A classic little-endian microsecond pcap file header.
fn pcap_header(snaplen: u32, linktype: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&0i32.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&snaplen.to_le_bytes());
    v.extend_from_slice(&linktype.to_le_bytes());
    v
}

/// A pcap record header claiming `caplen`, followed by `data` (which may be shorter: a lie).
fn pcap_record(v: &mut Vec<u8>, ts_sec: u32, caplen: u32, orig_len: u32, data: &[u8]) {
    v.extend_from_slice(&ts_sec.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&caplen.to_le_bytes());
    v.extend_from_slice(&orig_len.to_le_bytes());
    v.extend_from_slice(data);
}

/// A valid 60-byte Ethernet/IPv4/TCP SYN from 127.0.0.1:40000 to 127.0.0.1:80.
fn syn_frame() -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[0x08, 0x00]);
    // IPv4: version 4, IHL 5, total length 40, TTL 64, protocol TCP; checksum left 0.
    f.extend_from_slice(&[0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&[127, 0, 0, 1, 127, 0, 0, 1]);
    // TCP: ports, seq, ack, data offset 5, flags SYN, window.
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&80u16.to_be_bytes());
    f.extend_from_slice(&1000u32.to_be_bytes());
    f.extend_from_slice(&0u32.to_be_bytes());
    f.extend_from_slice(&[0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
    f.resize(60, 0);
    f
}

/// A little-endian pcapng file under construction.
struct Ng(Vec<u8>);

impl Ng {
    /// Starts with a section header block.
    fn new() -> Ng {
        let mut ng = Ng(Vec::new());
        let mut body = Vec::new();
        body.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&(-1i64).to_le_bytes());
        ng.block(0x0A0D_0D0A, &body);
        ng
    }

    /// A block with correct total lengths (body padded to 4 bytes).
    fn block(&mut self, ty: u32, body: &[u8]) {
        let padded = body.len().div_ceil(4) * 4;
        let total = u32::try_from(12 + padded).unwrap();
        self.raw_block(ty, total, body, total);
    }

    /// A block with whatever lengths the caller claims.
    fn raw_block(&mut self, ty: u32, len: u32, body: &[u8], trailer_len: u32) {
        self.0.extend_from_slice(&ty.to_le_bytes());
        self.0.extend_from_slice(&len.to_le_bytes());
        self.0.extend_from_slice(body);
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
        self.0.extend_from_slice(&trailer_len.to_le_bytes());
    }

    fn idb(&mut self, link: u16, snaplen: u32) {
        let mut body = Vec::new();
        body.extend_from_slice(&link.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&snaplen.to_le_bytes());
        self.block(1, &body);
    }

    fn epb_body(if_id: u32, caplen: u32, orig_len: u32, data: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&if_id.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&caplen.to_le_bytes());
        body.extend_from_slice(&orig_len.to_le_bytes());
        body.extend_from_slice(data);
        body
    }

    fn epb(&mut self, if_id: u32, data: &[u8]) {
        let n = u32::try_from(data.len()).unwrap();
        self.block(6, &Ng::epb_body(if_id, n, n, data));
    }
}

// ---------------------------------------------------------------------------------------------
// Reading files.

/// What reading a file through `CaptureFile` + `Analyzer` gave.
struct Outcome {
    /// Packets handed to the callback (also when reading ended in an error).
    delivered: Vec<Vec<u8>>,
    result: Result<SourceSummary, ObserveError>,
    stats: CaptureStats,
}

fn read(path: &Path) -> Result<Outcome, ObserveError> {
    let mut file = CaptureFile::open(path)?;
    let mut analyzer = Analyzer::new(AnalyzerConfig::default());
    let mut delivered = Vec::new();
    let result = file.for_each_packet(&mut |p: &RawPacket<'_>| {
        delivered.push(p.data.to_vec());
        analyzer.push(p);
        ControlFlow::Continue(())
    });
    let stats = analyzer.finish().stats;
    Ok(Outcome {
        delivered,
        result,
        stats,
    })
}

/// The error of opening or reading `path`, with its printed form.
fn read_err(path: &Path) -> (BadCaptureKind, String, usize) {
    let (e, delivered) = match read(path) {
        Err(e) => (e, 0),
        Ok(Outcome {
            result: Err(e),
            delivered,
            ..
        }) => (e, delivered.len()),
        Ok(o) => panic!(
            "{}: expected an error, read {} packets, summary {:?}",
            path.display(),
            o.delivered.len(),
            o.result
        ),
    };
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "one-line message: {msg}");
    assert!(
        msg.contains(&path.display().to_string()),
        "message names the file: {msg}"
    );
    match e {
        ObserveError::BadCapture { kind, .. } => (kind, msg, delivered),
        other => panic!("expected BadCapture, got {other:?}"),
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

// ---------------------------------------------------------------------------------------------
// The cases. Each builds its file in `dir`, reads it and checks the outcome; the memory test
// runs them all again in a child process.

fn huge_snaplen(dir: &Path) {
    // A snap length of 4 GiB is only a header value: normal packets read fine ...
    let mut v = pcap_header(u32::MAX, 1);
    let syn = syn_frame();
    for i in 0..3 {
        pcap_record(&mut v, i, 60, 60, &syn);
    }
    let o = read(&write(dir, "huge-snaplen.pcap", &v)).unwrap();
    let summary = o.result.unwrap();
    assert_eq!(summary.packets, 3);
    assert_eq!(o.delivered, vec![syn.clone(); 3]);
    assert_eq!(o.stats.tcp_segments, 3);
    // ... but it does not lift the 256 KiB packet limit.
    let claim = MAX_CAPLEN + 1;
    pcap_record(&mut v, 9, claim, claim, &syn);
    let (kind, msg, delivered) = read_err(&write(dir, "huge-snaplen-big.pcap", &v));
    assert_eq!(kind, BadCaptureKind::HostileLength, "{msg}");
    assert!(msg.contains(&claim.to_string()), "{msg}");
    assert_eq!(delivered, 3, "packets before the bad record are delivered");
}

fn caplen_near_u32_max(dir: &Path) {
    let mut v = pcap_header(65535, 1);
    pcap_record(&mut v, 1, 60, 60, &syn_frame());
    pcap_record(&mut v, 2, 0xFFFF_FFF0, 0xFFFF_FFF0, &[0xab; 64]);
    let (kind, msg, delivered) = read_err(&write(dir, "caplen-fffffff0.pcap", &v));
    assert_eq!(kind, BadCaptureKind::HostileLength, "{msg}");
    assert!(msg.contains("4294967280"), "{msg}");
    assert!(msg.contains("packet 2"), "{msg}");
    assert_eq!(delivered, 1);
}

fn caplen_above_snaplen(dir: &Path) {
    let mut v = pcap_header(200, 1);
    pcap_record(&mut v, 1, 60, 60, &syn_frame());
    // The bytes are there, but 300 > snap length 200: tcpdump never writes that.
    let mut big = syn_frame();
    big.resize(300, 0);
    pcap_record(&mut v, 2, 300, 300, &big);
    let (kind, msg, delivered) = read_err(&write(dir, "caplen-over-snaplen.pcap", &v));
    assert_eq!(kind, BadCaptureKind::HostileLength, "{msg}");
    assert!(msg.contains("300") && msg.contains("200"), "{msg}");
    assert_eq!(delivered, 1);
}

fn zero_length_packets(dir: &Path) {
    let mut v = pcap_header(65535, 1);
    for i in 0..5 {
        pcap_record(&mut v, i, 0, 60, &[]);
    }
    pcap_record(&mut v, 5, 60, 60, &syn_frame());
    let o = read(&write(dir, "zero-length.pcap", &v)).unwrap();
    let summary = o.result.unwrap();
    assert_eq!(summary.packets, 6);
    assert!(o.delivered[..5].iter().all(Vec::is_empty));
    // Empty frames are counted as undecodable, the real one is still analyzed.
    assert_eq!(o.stats.packets, 6);
    assert_eq!(o.stats.decode_errors, 5);
    assert_eq!(o.stats.tcp_segments, 1);
    assert_eq!(o.stats.bytes, 6 * 60);
}

fn truncated_record(dir: &Path) {
    let mut v = pcap_header(65535, 1);
    pcap_record(&mut v, 1, 60, 60, &syn_frame());
    pcap_record(&mut v, 2, 60, 60, &syn_frame()[..25]);
    let o = read(&write(dir, "truncated.pcap", &v)).unwrap();
    let summary = o.result.unwrap();
    assert_eq!(summary.packets, 1);
    assert_eq!(summary.warnings.len(), 1, "{:?}", summary.warnings);
    assert!(
        summary.warnings[0].contains("truncated"),
        "{:?}",
        summary.warnings
    );
}

fn pcap_header_cut_short(dir: &Path) {
    let v = pcap_header(65535, 1);
    let (kind, msg, _) = read_err(&write(dir, "short-header.pcap", &v[..10]));
    assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
    assert!(msg.contains("10 of 24"), "{msg}");
}

fn ng_block_shorter_than_header(dir: &Path) {
    // Total length 8: less than the 12 bytes of type, length and trailing length.
    let mut ng = Ng::new();
    ng.idb(1, 65535);
    ng.raw_block(6, 8, &[], 8);
    let (kind, msg, _) = read_err(&write(dir, "ng-len8.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
    assert!(msg.contains("invalid block length 8"), "{msg}");

    // An enhanced packet block of 20 bytes cannot hold its own 28-byte header.
    let mut ng = Ng::new();
    ng.idb(1, 65535);
    ng.epb(0, &syn_frame());
    let body = Ng::epb_body(0, 0, 0, &[]);
    ng.raw_block(6, 20, &body, 20);
    let (kind, msg, delivered) = read_err(&write(dir, "ng-epb20.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
    assert_eq!(delivered, 1);
}

fn ng_block_len_not_multiple_of_4(dir: &Path) {
    let mut ng = Ng::new();
    ng.idb(1, 65535);
    let syn = syn_frame();
    ng.raw_block(6, 32 + 60 + 2, &Ng::epb_body(0, 60, 60, &syn), 94);
    let (kind, msg, _) = read_err(&write(dir, "ng-len94.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
    assert!(msg.contains("invalid block length 94"), "{msg}");
}

fn ng_huge_lengths(dir: &Path) {
    // A block claiming almost 4 GiB.
    let mut ng = Ng::new();
    ng.idb(1, 0);
    ng.raw_block(
        6,
        0xFFFF_FFF0,
        &Ng::epb_body(0, 60, 60, &syn_frame()),
        0xFFFF_FFF0,
    );
    let (kind, msg, _) = read_err(&write(dir, "ng-huge-block.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::HostileLength, "{msg}");
    assert!(msg.contains(&MAX_BLOCK_LEN.to_string()), "{msg}");

    // A normal-sized block whose packet claims almost 4 GiB.
    let mut ng = Ng::new();
    ng.idb(1, 0);
    let body = Ng::epb_body(0, 0xFFFF_FFF0, 60, &syn_frame());
    let total = u32::try_from(12 + body.len()).unwrap();
    ng.raw_block(6, total, &body, total);
    let (kind, msg, _) = read_err(&write(dir, "ng-huge-caplen.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
    assert!(msg.contains("4294967280"), "{msg}");

    // A packet larger than its interface's snap length.
    let mut ng = Ng::new();
    ng.idb(1, 40);
    ng.epb(0, &syn_frame());
    let (kind, msg, _) = read_err(&write(dir, "ng-over-snaplen.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::HostileLength, "{msg}");
}

fn ng_undescribed_interface(dir: &Path) {
    let mut ng = Ng::new();
    ng.idb(1, 65535);
    ng.epb(0, &syn_frame());
    ng.epb(3, &syn_frame());
    let (kind, msg, delivered) = read_err(&write(dir, "ng-if3.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
    assert!(msg.contains("interface 3 is not described"), "{msg}");
    assert_eq!(delivered, 1);

    // A simple packet block needs interface 0 too.
    let mut ng = Ng::new();
    let mut spb = 60u32.to_le_bytes().to_vec();
    spb.extend_from_slice(&syn_frame());
    ng.block(3, &spb);
    let (kind, msg, _) = read_err(&write(dir, "ng-spb-no-if.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
    assert!(msg.contains("interface 0 is not described"), "{msg}");
}

fn bogus_link_type(dir: &Path) {
    let mut v = pcap_header(65535, 0xBEEF);
    pcap_record(&mut v, 1, 60, 60, &syn_frame());
    let (kind, msg, _) = read_err(&write(dir, "beef.pcap", &v));
    assert_eq!(kind, BadCaptureKind::UnsupportedLinkType(0xBEEF), "{msg}");
    assert!(msg.contains("48879"), "{msg}");

    // pcapng with only a 0xBEEF interface: nothing to analyze is an error.
    let mut ng = Ng::new();
    ng.idb(0xBEEF, 65535);
    ng.epb(0, &syn_frame());
    let (kind, msg, _) = read_err(&write(dir, "beef.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::UnsupportedLinkType(0xBEEF), "{msg}");

    // Next to an Ethernet interface: partial results and a warning.
    let mut ng = Ng::new();
    ng.idb(0xBEEF, 65535);
    ng.idb(1, 65535);
    ng.epb(0, &syn_frame());
    ng.epb(1, &syn_frame());
    ng.epb(0, &syn_frame());
    let o = read(&write(dir, "beef-mixed.pcapng", &ng.0)).unwrap();
    let summary = o.result.unwrap();
    assert_eq!(summary.packets, 1);
    assert_eq!(o.stats.tcp_segments, 1);
    assert!(
        summary
            .warnings
            .iter()
            .any(|w| w.contains("skipped 2 packets") && w.contains("48879")),
        "{:?}",
        summary.warnings
    );
}

fn megabyte_of_zeros(dir: &Path) {
    let (kind, msg, _) = read_err(&write(dir, "zeros.bin", &vec![0u8; 1 << 20]));
    assert_eq!(kind, BadCaptureKind::NotCapture, "{msg}");
    assert!(msg.contains("0x00000000"), "{msg}");
}

fn ng_wrong_byte_order_magic(dir: &Path) {
    let mut ng = Ng::new();
    ng.idb(1, 65535);
    ng.epb(0, &syn_frame());
    ng.0[8..12].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let (kind, msg, delivered) = read_err(&write(dir, "ng-bad-bom.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
    assert_eq!(delivered, 0);

    // The same in a second section, after good packets.
    let mut ng = Ng::new();
    ng.idb(1, 65535);
    ng.epb(0, &syn_frame());
    let second = ng.0.len();
    let first_shb = Ng::new().0;
    ng.0.extend_from_slice(&first_shb);
    ng.0[second + 8..second + 12].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let (kind, msg, delivered) = read_err(&write(dir, "ng-bad-bom-2.pcapng", &ng.0));
    assert_eq!(kind, BadCaptureKind::Malformed, "{msg}");
    assert!(msg.contains("byte-order magic"), "{msg}");
    assert_eq!(delivered, 1);
}

/// A valid 1.6 MB capture (20 000 SYNs): the streaming reader's memory does not grow with it.
fn many_small_packets(dir: &Path) {
    let mut v = pcap_header(65535, 1);
    let syn = syn_frame();
    // The same 4-tuple each time (port reuse), so the analyzer holds one connection and the
    // memory measured is the reader's.
    for i in 0..20_000u32 {
        pcap_record(&mut v, i, 60, 60, &syn);
    }
    let mut file = CaptureFile::open(&write(dir, "many.pcap", &v)).unwrap();
    let mut analyzer = Analyzer::new(AnalyzerConfig::default());
    let summary = file
        .for_each_packet(&mut |p| {
            analyzer.push(p);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(summary.packets, 20_000);
    assert_eq!(analyzer.finish().stats.tcp_segments, 20_000);
}

/// One `#[test]` per case (in module `case`), and the list [`CASES`] the memory test runs.
macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        const CASES: &[(&str, fn(&Path))] = &[$((stringify!($name), $name)),*];
        mod case {
            $(#[test]
            fn $name() {
                let dir = tempfile::tempdir().unwrap();
                super::$name(dir.path());
            })*
        }
    };
}

cases!(
    huge_snaplen,
    caplen_near_u32_max,
    caplen_above_snaplen,
    zero_length_packets,
    truncated_record,
    pcap_header_cut_short,
    ng_block_shorter_than_header,
    ng_block_len_not_multiple_of_4,
    ng_huge_lengths,
    ng_undescribed_interface,
    bogus_link_type,
    megabyte_of_zeros,
    ng_wrong_byte_order_magic,
    many_small_packets,
);

// ---------------------------------------------------------------------------------------------
// Reproducers found by the fuzzer (fuzz/README.md), minimized with `cargo fuzz tmin`.

/// fuzz `capture_reader`, minimized: a pcapng whose timestamps make a handshake RTT near the
/// i64 limit; the Nagle detector then computes `10 * rtt` / `2 * rtt` and overflows
/// (crates/netdoctor-core/src/detect/nagle_delayed_ack.rs, `on_data`: a panic in debug builds,
/// a wrapped bound in release builds). Fails until the detector uses saturating arithmetic.
const NAGLE_RTT_OVERFLOW: &[&str] = &[
    "0a0d0d0ab40000004d3c2b1a01000000ffffffffffffffff0200280031000000000000002058656f6e2852292050726f",
    "636573736f7220287769746820535345342e3229030015004c696e757820362e31382e34342d66632d76363537000000",
    "0400450044756d70636170202857697265736861726b2920342e302e313720284769742076342e302e3137207061636b",
    "6167656420617320342e302e31372d302b646562313275332900000000000000b4000000010000006400000001000000",
    "00000400020002006c6f0000030008004c6f6f706261636b09000100090000000b000f000074637020706f7274203437",
    "383131000c0015004c696e757820362e31382e34342d66632d763635370000000000000064000000060000006c000000",
    "000000001e11ea1849c148304a0000004a00000000000000000000000000000008004500003c39ed4000400602cd7f00",
    "00017f000001da9abac3c5c3910e00000000a002ffd7fe3000000204ffd70402080a0845926a000000000103030a0000",
    "6c000000060000006c000000000000001e11ea18721b49304a0000004a00000000000000000000000000000008004500",
    "003c0000400040063cba7f0000017f000001bac3da9a8e1b7b8fc5c3910fa012ffcbfe3000000204ffd70402080aef07",
    "8abd0845926a0103030a00006c0000000600000064000000000000001e1118eae46f4930420000004200000000000000",
    "000000000000000008004500003439ee4000400602d47f0000017f000001da9abac3c5c3910f8e1b7b9080100040fe28",
    "00000101080a0845926aef078abd00006400000006000000b4000000000000001e11ea181e4a4a309100000091000000",
    "00000000000000000000000008004500008339ef4000400602847f0000017f000001da9abac3c5c3910f8e1b7b908018",
    "0040fe7700000101080a0845926aef078abd474554202f20485454502f312e310d0a486f73743a203132372e302e302e",
    "313a34373831310d0a557365722d4167656e743a206375726c2f372e38382e310d0a4163636570743a202a2f2a0d0a0d",
    "0a000000b40000000600000064000000000000001e11ea181b644a304200000042000000000000000000000000000000",
    "0800450000341e92400040061e307f0000017f000001bac3da9a8e1b7b90c5c3915e80100040fe2800000101080aef07",
    "8abd0845926a000064000000060000001c010000000000001e11ea18d9425f30fa000000fa0000000000000000000000",
    "000000000800450000ec1e93400040061d777f0000017f000001bac3da9a8e1b7b90c5c3915e80180040fee000000101",
    "080aef078abe0845926a485454502f312e3020323030204f4b0d0a5365727665723a2053696d706c65485454502f302e",
    "3620507974686f6e2f332e31312e370d0a446174653a205361742c203231204e6f7620323032362031333a30333a3432",
    "20474d540d0a436f6e74656e742d747970653a20746578742f68746d6c0d0a436f6e74656e742d4c656e6774683a2036",
    "0d0a4c6173742d4d6f6469666965643a205361742c2032312001000000000000502031333a30333a343020474d540d0a",
    "0d0a00001c0100000600000064000000000000001e11ea18ede75f304200000042000000000000000000000000000000",
    "08004500003439f04000400602d27f0000017f000001da9abac3c5c3915e8e1b7c4880100040fe2800000101080a0845",
    "926bef078abe0000640000000600000068000000000000001e11ea185697603048000000480000000000000000000000",
    "0000000008004500003a1e94400040061e287f0000017f000001bac3da9a8e1b7c48c5c3915e80180040fe2e00000101",
    "080aef078abe0845926b68656c6c6f0a680000000600000064000000000000001eef078abe0845925f5640004006dd6b",
    "7f00000000000000000000000000006c000000",
];

fn unhex(lines: &[&str]) -> Vec<u8> {
    let hex: String = lines.concat();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn fuzz_nagle_rtt_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "nagle-rtt-overflow.pcapng",
        &unhex(NAGLE_RTT_OVERFLOW),
    );
    // Reading and analyzing must not panic; the file itself may be accepted or rejected.
    let o = read(&path).unwrap();
    assert_eq!(o.stats.packets as usize, o.delivered.len());
}

// ---------------------------------------------------------------------------------------------
// Memory.

/// (VmHWM, VmPeak) of this process in KiB.
fn vm_peaks() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| -> u64 {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in /proc/self/status"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    (field("VmHWM:"), field("VmPeak:"))
}

/// Peak resident growth allowed over all cases (the reader's buffer is ~640 KiB).
const MAX_HWM_GROWTH_KIB: u64 = 64 * 1024;
/// Peak virtual growth allowed: far below the 4 GiB a hostile length would reserve.
const MAX_PEAK_GROWTH_KIB: u64 = 512 * 1024;

/// Runs every case in this process and prints the peaks; started by
/// [`peak_memory_stays_small`] in a child process so parallel tests do not blur the numbers.
#[test]
#[ignore = "run in a child process by peak_memory_stays_small"]
fn memory_child() {
    let dir = tempfile::tempdir().unwrap();
    // Warm up: the allocator's arena for this thread, the reader's buffer size class.
    huge_snaplen(dir.path());
    let (hwm0, peak0) = vm_peaks();
    for (name, f) in CASES {
        eprintln!("case {name}");
        f(dir.path());
    }
    let (hwm1, peak1) = vm_peaks();
    println!(
        "HWM_GROWTH_KIB={} PEAK_GROWTH_KIB={}",
        hwm1 - hwm0,
        peak1 - peak0
    );
    assert!(
        hwm1 - hwm0 <= MAX_HWM_GROWTH_KIB,
        "VmHWM {hwm0} -> {hwm1} KiB"
    );
    assert!(
        peak1 - peak0 <= MAX_PEAK_GROWTH_KIB,
        "VmPeak {peak0} -> {peak1} KiB"
    );
}

#[test]
fn peak_memory_stays_small() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(&exe)
        .args([
            "memory_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child failed: {}\n{stdout}\n{stderr}",
        out.status
    );
    let line = stdout
        .lines()
        .find_map(|l| l.find("HWM_GROWTH_KIB=").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("child ran no cases:\n{stdout}\n{stderr}"));
    let nums: Vec<u64> = line
        .split_whitespace()
        .map(|kv| kv.split('=').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(nums[0] <= MAX_HWM_GROWTH_KIB, "{line}");
    assert!(nums[1] <= MAX_PEAK_GROWTH_KIB, "{line}");
    eprintln!("hostile cases: {line}");
}

//! Fuzz target: packet decoding and the analyzer on arbitrary frames.
//!
//! Input layout: byte 0 picks the [`LinkType`]; the rest is (a) one frame handed to
//! [`decode`], and (b) read as a sequence of records `[len: u16 LE][dt: u8][len bytes]`, each
//! pushed through one [`Analyzer`] with the same link type, so connection state, the HTTP
//! exchange splitter and the detectors see multi-packet conversations. `dt` advances the clock
//! by `dt² × 10 µs` (0 … 650 ms), enough to cross the 40 ms delayed-ACK and 200 ms RTO scales.
//! The seed corpus (see fuzz/README.md) holds real conversations from testdata/captures in this
//! format.
//!
//! Checked besides "no panic": the decoded payload lies inside the frame, the analyzer's
//! packet counters add up, and every finding's confidence is within 0..=1.
#![no_main]

use libfuzzer_sys::fuzz_target;
use netdoctor_core::{Analyzer, AnalyzerConfig, LinkType, RawPacket, decode};

const LINKS: [LinkType; 8] = [
    LinkType::Null,
    LinkType::Ethernet,
    LinkType::Raw,
    LinkType::Loop,
    LinkType::LinuxSll,
    LinkType::Ipv4,
    LinkType::Ipv6,
    LinkType::LinuxSll2,
];

/// Bounds the records per input (inputs are small anyway; this keeps the loop obviously finite).
const MAX_RECORDS: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let link = LINKS[usize::from(sel) % LINKS.len()];

    // (a) The whole rest as one frame.
    let pkt = RawPacket {
        frame: 1,
        ts_ns: 0,
        link,
        data: rest,
        orig_len: u32::try_from(rest.len()).unwrap_or(u32::MAX),
    };
    if let Ok(Some(seg)) = decode(&pkt) {
        let start = seg.payload.as_ptr() as usize;
        let frame = rest.as_ptr() as usize;
        assert!(start >= frame && start + seg.payload.len() <= frame + rest.len());
    }

    // (b) The rest as a sequence of records through one analyzer.
    let mut analyzer = Analyzer::new(AnalyzerConfig {
        server_port: (sel & 0x80 != 0).then_some(80),
    });
    let mut buf = rest;
    let mut ts_ns: i64 = 1_700_000_000_000_000_000;
    let mut frame = 0u64;
    while buf.len() >= 3 && (frame as usize) < MAX_RECORDS {
        let len = usize::from(u16::from_le_bytes([buf[0], buf[1]]));
        let dt = i64::from(buf[2]);
        buf = &buf[3..];
        let take = len.min(buf.len());
        let (bytes, tail) = buf.split_at(take);
        buf = tail;
        frame += 1;
        ts_ns += dt * dt * 10_000;
        analyzer.push(&RawPacket {
            frame,
            ts_ns,
            link,
            data: bytes,
            // A frame cut by a snap length: the wire length is the declared one.
            orig_len: u32::try_from(len.max(take)).unwrap_or(u32::MAX),
        });
    }
    let analysis = analyzer.finish();
    let s = &analysis.stats;
    assert_eq!(s.packets, frame);
    assert_eq!(
        s.tcp_segments + s.other_packets + s.decode_errors,
        s.packets
    );
    for f in &analysis.findings {
        assert!((0.0..=1.0).contains(&f.confidence), "{f:?}");
    }
});

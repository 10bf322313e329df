//! A D-SACK that comes right after the ACK that ended a loss episode, on third-party captures
//! (`../shared/realworld-pcaps/`, skipped when missing): the resend it reports had arrived
//! twice, so it was spurious, not a loss.
//!
//! - `ndpi-iphone`, captured next to a phone: the server sends 2352853139-2352854430 (#81) and
//!   resends it 80 ms later (#84, a tail-loss probe); the phone's delayed ACK of the original
//!   (#92, ACK 2352854430) ends the episode and its next packet (#93) D-SACKs the resend. The
//!   same again at #122/#134, D-SACKed in #154 (tshark). Told before as "Packet loss: 2
//!   segments of the server's data retransmitted (0.91% of data segments), +81.3 ms on 4% of
//!   requests" (warning, network): both resends were spurious, no data was lost.
//! - The look-alike: the same capture with those two D-SACK blocks made NOPs. Nothing then
//!   shows that the originals arrived (the capture point is unknown to `analyze`): the resends
//!   stay loss.
//! - A D-SACK later than the very next packet (`testdata/captures/bulk-clean.pcap.gz`, a
//!   veth upload, tshark): the client resends 73421630-73454934 (#2095) of a hole the server
//!   SACKed around (#2093); the server's ACK 73583806 (#2096) ends the episode; then the
//!   client's data (#2097, #2098), the server's ACK of it (#2099), more data (#2100), and the
//!   server's D-SACK of that resend (#2101), 38 µs after #2096 (the hold lasts one RTT, at
//!   least 20 ms). The same again at #2107 (resend), #2108 (closing ACK), #2113 (its D-SACK,
//!   after two more ACKs of the server and the client's data). Told before as 4 segments
//!   lost; both resends were spurious (the originals arrived too, reordered on the veth), 2
//!   were lost. Look-alikes from the same file, #2101's block changed: made NOPs; made a
//!   D-SACK of an older episode's resend (#1793, 59620502-59653806); made a plain SACK above
//!   the cumulative ACK: each leaves that resend a loss, 3 lost.

use crate::common;

use std::path::PathBuf;

use common::{corpus_file, json, netdoctor};
use serde_json::Value;

fn analyze(path: &std::path::Path) -> Value {
    let o = netdoctor(&["analyze", "--json", path.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{o:?}");
    json(&o)
}

fn findings<'a>(r: &'a Value, id: &str) -> Vec<&'a Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id)
        .collect()
}

/// The offsets and lengths of each record's packet data in a little-endian classic pcap.
fn pcap_records(b: &[u8]) -> Vec<(usize, usize)> {
    assert_eq!(b[..4], [0xd4, 0xc3, 0xb2, 0xa1], "a little-endian pcap");
    let mut out = Vec::new();
    let mut i = 24;
    while i + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[i + 8..i + 12].try_into().unwrap()) as usize;
        out.push((i + 16, incl));
        i += 16 + incl;
    }
    out
}

/// Replaces the SACK option of the Ethernet/IPv4/TCP frame at `off` by NOPs.
fn strip_sack(b: &mut [u8], off: usize) {
    assert_eq!(b[off + 12..off + 14], [0x08, 0x00], "IPv4 over Ethernet");
    let ip = off + 14;
    let tcp = ip + usize::from(b[ip] & 0x0f) * 4;
    let end = tcp + usize::from(b[tcp + 12] >> 4) * 4;
    let mut k = tcp + 20;
    while k < end {
        match b[k] {
            0 => break,
            1 => k += 1,
            5 => {
                let len = usize::from(b[k + 1]);
                b[k..k + len].fill(1);
                return;
            }
            _ => k += usize::from(b[k + 1]).max(2),
        }
    }
    panic!("no SACK option in the frame at {off}");
}

#[test]
fn tail_probes_dsacked_right_after_the_closing_ack_are_not_loss() {
    let Some(path) = corpus_file("ndpi-iphone.pcap") else {
        return;
    };
    let r = analyze(&path);
    assert!(
        findings(&r, "packet_loss_retransmission").is_empty(),
        "{:#}",
        r["findings"]
    );
    assert!(
        findings(&r, "retransmission_timeout").is_empty(),
        "{:#}",
        r["findings"]
    );
    let sp = findings(&r, "spurious_retransmission");
    assert_eq!(sp.len(), 1, "{:#}", r["findings"]);
    let s = sp[0]["summary"].as_str().unwrap();
    assert!(
        s.contains("the client reported 2 of them as received twice (D-SACK)"),
        "{s}"
    );
    assert_eq!(sp[0]["severity"], "info", "{s}");
    assert_eq!(sp[0]["side"], "server", "{s}");
    assert_ne!(r["verdict"], "problem", "{:#}", r["findings"]);
}

#[test]
fn the_same_resends_without_the_dsack_stay_loss() {
    let Some(path) = corpus_file("ndpi-iphone.pcap") else {
        return;
    };
    let mut b = std::fs::read(&path).unwrap();
    let recs = pcap_records(&b);
    for frame in [93, 154] {
        strip_sack(&mut b, recs[frame - 1].0);
    }
    let dir = tempfile::tempdir().unwrap();
    let mutated = dir.path().join("no-dsack.pcap");
    std::fs::write(&mutated, &b).unwrap();
    let r = analyze(&mutated);
    let loss = findings(&r, "packet_loss_retransmission");
    assert_eq!(loss.len(), 1, "{:#}", r["findings"]);
    let s = loss[0]["summary"].as_str().unwrap();
    assert!(
        s.starts_with("Packet loss: 2 segments of the server's data retransmitted"),
        "{s}"
    );
    assert_eq!(loss[0]["side"], "network", "{s}");
}

/// `testdata/captures/bulk-clean.pcap.gz` decompressed, with the SACK block of #2101 (the
/// D-SACK of 73421630-73454934; raw edges below) replaced by `with` (`None`: NOPs).
fn bulk_clean_with_block(with: Option<(u32, u32)>) -> (tempfile::TempDir, PathBuf) {
    use std::io::Read;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/bulk-clean.pcap.gz");
    let mut b = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_end(&mut b)
        .unwrap();
    let (l, r) = (3_256_903_498u32, 3_256_936_802u32);
    let mut pat = vec![5u8, 10];
    pat.extend(l.to_be_bytes());
    pat.extend(r.to_be_bytes());
    let at: Vec<usize> = b
        .windows(pat.len())
        .enumerate()
        .filter(|(_, w)| *w == pat.as_slice())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "the D-SACK block of #2101, once");
    let block = &mut b[at[0]..at[0] + 10];
    match with {
        None => block.fill(1),
        Some((l2, r2)) => {
            block[2..6].copy_from_slice(&l2.to_be_bytes());
            block[6..10].copy_from_slice(&r2.to_be_bytes());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bulk-clean.pcapng");
    std::fs::write(&out, &b).unwrap();
    (dir, out)
}

fn loss_summary(r: &Value) -> String {
    let loss = findings(r, "packet_loss_retransmission");
    assert_eq!(loss.len(), 1, "{:#}", r["findings"]);
    loss[0]["summary"].as_str().unwrap().to_string()
}

#[test]
fn a_dsack_after_the_senders_data_and_another_ack_counts_the_resend_spurious() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/bulk-clean.pcap.gz");
    let r = analyze(&path);
    let s = loss_summary(&r);
    assert!(
        s.starts_with("Packet loss: 2 segments of the client's data retransmitted"),
        "{s}"
    );
    // The look-alikes leave #2095 a loss.
    let older = (3_243_102_370u32, 3_243_135_674u32); // #1793's resend, an older episode
    let above = (3_256_903_498u32 + 292_496, 3_256_903_498u32 + 357_656); // #2100's data
    for (what, with) in [
        ("no D-SACK", None),
        ("a D-SACK of an older episode", Some(older)),
        ("a SACK above the ACK", Some(above)),
    ] {
        let (_dir, p) = bulk_clean_with_block(with);
        let s = loss_summary(&analyze(&p));
        assert!(
            s.starts_with("Packet loss: 3 segments of the client's data retransmitted"),
            "{what}: {s}"
        );
    }
}

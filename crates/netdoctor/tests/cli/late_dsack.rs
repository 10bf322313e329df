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

use crate::common;

use std::path::PathBuf;

use common::{json, netdoctor};
use serde_json::Value;

fn corpus_file(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("NETDOCTOR_REALWORLD_PCAPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realworld-pcaps")
        })
        .join(name);
    if !path.exists() {
        eprintln!(
            "skipped: needs {} (the shared realworld-pcaps corpus)",
            path.display()
        );
        return None;
    }
    Some(path)
}

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

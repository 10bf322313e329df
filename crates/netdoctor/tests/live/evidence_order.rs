//! The pcap file `diagnose --pcap` writes from our own capture is in timestamp order. On
//! loopback under load two CPUs deliver into one capture ring, and a frame can come stamped
//! microseconds before the one ahead of it; `analyze` of such a file re-sorts it and warns.
//! The writer holds frames briefly and writes them in stamp order, so our own evidence never
//! carries that warning. Real loopback traffic: a 3 s closed-loop load on the built-in server
//! (port 19310 of this test's range).

use crate::common::*;
use netdoctor_lab::builtin::BuiltinServers;
use std::net::SocketAddr;
use std::process::Command;

/// Frame stamps of a nanosecond pcap file as the writer writes it.
fn stamps(path: &std::path::Path) -> Vec<i64> {
    let d = std::fs::read(path).unwrap();
    assert_eq!(d[..4], 0xa1b2_3c4du32.to_le_bytes(), "nanosecond pcap");
    let mut v = Vec::new();
    let mut off = 24;
    while off + 16 <= d.len() {
        let w = |at: usize| i64::from(u32::from_le_bytes(d[at..at + 4].try_into().unwrap()));
        v.push(w(off) * 1_000_000_000 + w(off + 4));
        off += 16 + w(off + 8) as usize;
    }
    v
}

#[test]
fn our_own_capture_is_written_in_timestamp_order() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (packet capture)");
        return;
    }
    let addr: SocketAddr = "127.0.0.1:19310".parse().unwrap();
    let _srv = BuiltinServers::start(&[(addr, true)]).expect("start built-in server");
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("run.pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["diagnose", "-d", "3s", "-c", "20", "--json", "--pcap"])
        .arg(&pcap)
        .arg(format!("http://{addr}/"))
        .env("NO_COLOR", "1")
        .output()
        .expect("run netdoctor");
    let v = json(&out);
    let captured = v["measurements"]["capture"]["stats"]["packets"]
        .as_u64()
        .unwrap();
    let ts = stamps(&pcap);
    // Every frame the run analyzed is in the file (none left in the writer's buffer)...
    assert_eq!(
        ts.len() as u64,
        captured,
        "{}",
        v["measurements"]["capture"]["stats"]
    );
    assert!(captured > 1000, "{captured}");
    // ...in stamp order.
    let back = ts.windows(2).filter(|w| w[1] < w[0]).count();
    assert_eq!(
        back, 0,
        "{back} frames stamped before the frame ahead of them"
    );
    let an = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["analyze", "--json"])
        .arg(&pcap)
        .output()
        .expect("run netdoctor analyze");
    let a = json(&an);
    let warnings = a["measurements"]["capture"]["warnings"].to_string();
    assert!(!warnings.contains("stamped earlier"), "{warnings}");
    assert_eq!(
        a["measurements"]["capture"]["stats"]["packets"].as_u64(),
        Some(captured)
    );
}

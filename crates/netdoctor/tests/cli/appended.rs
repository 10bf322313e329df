//! `netdoctor analyze` of captures appended one after another while their times overlap
//! (`mergecap -a`): the file is a few runs in time order that a reorder buffer cannot mend, so
//! it is read merged by timestamp. Its report must be the report of the same frames sorted by
//! timestamp (here by a stable sort of the records, the oracle) and say what the file is.

use crate::common;
use common::*;

use std::path::Path;
use std::process::Command;

/// The classic pcap (little-endian, microseconds) at `src` with every timestamp moved so the
/// first frame is at `start_us`, written to `dst`.
fn retime(src: &Path, dst: &Path, start_us: i64) {
    let b = std::fs::read(src).unwrap();
    assert_eq!(&b[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "{}", src.display());
    let mut out = b[..24].to_vec();
    let mut pos = 24;
    let mut shift = None;
    while pos + 16 <= b.len() {
        let u = |o: usize| u32::from_le_bytes(b[pos + o..pos + o + 4].try_into().unwrap());
        let ts = i64::from(u(0)) * 1_000_000 + i64::from(u(4));
        let d = *shift.get_or_insert(start_us - ts);
        let t = ts + d;
        out.extend_from_slice(&((t / 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((t % 1_000_000) as u32).to_le_bytes());
        let end = pos + 16 + u(8) as usize;
        out.extend_from_slice(&b[pos + 8..end]);
        pos = end;
    }
    std::fs::write(dst, out).unwrap();
}

/// The records of `src` stably sorted by timestamp (file order among equal ones), to `dst`.
fn sorted(src: &Path, dst: &Path) {
    let b = std::fs::read(src).unwrap();
    let mut recs = Vec::new();
    let mut pos = 24;
    while pos + 16 <= b.len() {
        let u = |o: usize| u32::from_le_bytes(b[pos + o..pos + o + 4].try_into().unwrap());
        let end = pos + 16 + u(8) as usize;
        recs.push(((u(0), u(4)), &b[pos..end]));
        pos = end;
    }
    recs.sort_by_key(|r| r.0);
    let mut out = b[..24].to_vec();
    for (_, r) in recs {
        out.extend_from_slice(r);
    }
    std::fs::write(dst, out).unwrap();
}

#[test]
fn captures_appended_with_overlapping_times_report_as_the_sorted_file() {
    if Command::new("mergecap").arg("-h").output().is_err() {
        eprintln!("skipped: needs mergecap (apt-get install wireshark-common)");
        return;
    }
    let dir = TempDir(tempdir("appended"));
    // Two copies of four captures, each starting a few hundred microseconds after the one
    // before: eight runs of 5,033 frames each overlapping the others (10,066 frames).
    let t0 = 1_700_000_000_000_000i64;
    let mut parts = Vec::new();
    for copy in 0..2 {
        for (i, name) in ["healthy-eth", "redis-healthy", "tls-healthy", "loss"]
            .iter()
            .enumerate()
        {
            let p = dir.0.join(format!("{name}-{copy}.pcap"));
            retime(
                &captures_dir().join(format!("{name}.pcap")),
                &p,
                t0 + (copy * 4 + i as i64) * 311,
            );
            parts.push(p);
        }
    }
    let appended = dir.0.join("appended.pcap");
    let st = Command::new("mergecap")
        .args(["-a", "-F", "pcap", "-w"])
        .arg(&appended)
        .args(&parts)
        .status()
        .unwrap();
    assert!(st.success());
    let oracle = dir.0.join("sorted.pcap");
    sorted(&appended, &oracle);

    let run = |p: &Path| netdoctor(&["analyze", "-j", "1", "--json", p.to_str().unwrap()]);
    let (ra, rs) = (run(&appended), run(&oracle));
    assert_eq!(ra.status.code(), rs.status.code(), "{}", stderr(&ra));
    let (a, s) = (json(&ra), json(&rs));
    assert_schema(&a);
    // Findings without their frame numbers (the appended file's are its own), evidence
    // packets in time order.
    let strip = |v: &serde_json::Value| -> String {
        let mut v = v["findings"].clone();
        fn drop_frames(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => {
                    m.remove("frame");
                    m.remove("frames");
                    m.values_mut().for_each(drop_frames);
                    // Evidence lists packets in frame order: the file's, not the time's.
                    if let Some(serde_json::Value::Array(p)) = m.get_mut("packets") {
                        p.sort_by(|a, b| a["ts"].as_f64().partial_cmp(&b["ts"].as_f64()).unwrap());
                    }
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(drop_frames),
                _ => {}
            }
        }
        drop_frames(&mut v);
        v.to_string()
    };
    assert_eq!(strip(&a), strip(&s));
    assert_eq!(a["verdict"], s["verdict"]);
    let mut qa = a["measurements"]["capture"]["stats"].clone();
    let qs = &s["measurements"]["capture"]["stats"];
    // Sorted in the reading, not in the file: that count is the only difference.
    let sorted_frames = qa["quality"]["sorted_frames"].take();
    assert!(sorted_frames.as_u64().unwrap() >= 7, "{sorted_frames}");
    qa["quality"]
        .as_object_mut()
        .unwrap()
        .remove("sorted_frames");
    assert_eq!(&qa, qs);
    assert_eq!(qs["quality"]["backdated_frames"], serde_json::Value::Null);
    // One line says what the file is and what was done.
    let (status, reason) = check(&a, "capture");
    assert_eq!(status, "ok");
    assert!(
        reason.contains("runs of frames in time order that overlap")
            && reason.contains("merged by timestamp"),
        "{reason}"
    );
    assert!(!check(&s, "capture").1.contains("merged"));
}

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
    same_as_sorted(&dir.0, &appended, 7, true, true);
}

/// The report of `appended` must be the report of its frames sorted by timestamp (at least
/// `sorted_at_least` of them moved; the findings' evidence too when `evidence`) and say what
/// the file is when `runs_note` (frames moved further than a reorder buffer mends).
fn same_as_sorted(
    dir: &Path,
    appended: &Path,
    sorted_at_least: u64,
    runs_note: bool,
    evidence: bool,
) {
    let oracle = dir.join("sorted.pcap");
    sorted(appended, &oracle);

    let run = |p: &Path| netdoctor(&["analyze", "-j", "1", "--json", p.to_str().unwrap()]);
    let (ra, rs) = (run(appended), run(&oracle));
    assert_eq!(ra.status.code(), rs.status.code(), "{}", stderr(&ra));
    // `-j 2` prints what `-j 1` prints, byte for byte but the run time, evidence packets too
    // (issue 25: its merge replayed the workers' conclusions by frame number, not in the
    // order the frames were read).
    let timeless = |o: &std::process::Output| -> String {
        let text = String::from_utf8_lossy(&o.stdout);
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("\"elapsed_s\":"))
            .collect();
        assert!(kept.len() + 1 == text.lines().count(), "one elapsed_s line");
        kept.join("\n")
    };
    for (p, one) in [(appended, &ra), (oracle.as_path(), &rs)] {
        let two = netdoctor(&["analyze", "-j", "2", "--json", p.to_str().unwrap()]);
        assert_eq!(two.status.code(), one.status.code(), "{}", stderr(&two));
        assert!(
            timeless(&two) == timeless(one),
            "{}: -j 2 JSON differs from -j 1",
            p.display()
        );
    }
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
    if evidence {
        assert_eq!(strip(&a), strip(&s));
    }
    let said = |v: &serde_json::Value| -> Vec<String> {
        let f = v["findings"].as_array().unwrap();
        f.iter()
            .map(|f| format!("{} {}", f["id"], f["summary"]))
            .collect()
    };
    assert_eq!(said(&a), said(&s));
    assert_eq!(a["verdict"], s["verdict"]);
    let mut qa = a["measurements"]["capture"]["stats"].clone();
    let qs = &s["measurements"]["capture"]["stats"];
    // Sorted in the reading, not in the file: that count is the only difference.
    let sorted_frames = qa["quality"]["sorted_frames"].take();
    assert!(
        sorted_frames.as_u64().unwrap() >= sorted_at_least,
        "{sorted_frames}"
    );
    qa["quality"]
        .as_object_mut()
        .unwrap()
        .remove("sorted_frames");
    assert_eq!(&qa, qs);
    assert_eq!(qs["quality"]["backdated_frames"], serde_json::Value::Null);
    // One line says what the file is and what was done.
    let (status, reason) = check(&a, "capture");
    assert_eq!(status, "ok");
    assert_eq!(
        reason.contains("runs of frames in time order that overlap")
            && reason.contains("merged by timestamp"),
        runs_note,
        "{reason}"
    );
    assert!(!check(&s, "capture").1.contains("merged"));
}

#[test]
fn copies_appended_far_back_in_a_large_file_report_as_the_sorted_file() {
    // 40 copies of one capture (1,200 frames in 19 ms each, 7.5 MB): the first 20 one after
    // another 20 ms apart, then 20 more over the same time 7 ms later. The analysis, a few MB
    // behind the walk, has gone past the 21st copy's start when the walk finds it: it stops
    // and the file is read again with its runs found first. Each connection is in the file
    // 40 times, twice at once: which of them a finding shows as evidence depends on frame
    // numbers, so only what the findings say is compared.
    let dir = TempDir(tempdir("appended-far"));
    let t0 = 1_700_000_000_000_000i64;
    let mut out = Vec::new();
    for k in 0..40i64 {
        let p = dir.0.join(format!("copy{k}.pcap"));
        let start = t0 + (k % 20) * 20_000 + if k >= 20 { 7_000 } else { 0 };
        retime(&captures_dir().join("healthy-eth.pcap"), &p, start);
        let b = std::fs::read(&p).unwrap();
        out.extend_from_slice(if k == 0 { &b[..] } else { &b[24..] });
    }
    assert!(out.len() > 7 << 20);
    let appended = dir.0.join("appended.pcap");
    std::fs::write(&appended, out).unwrap();
    same_as_sorted(&dir.0, &appended, 1, true, false);
}

#[test]
fn a_file_of_more_runs_than_merged_reports_as_the_sorted_file() {
    // 460 copies of one capture one after another, its frames cut to 80 bytes (~50 MB), and
    // the stamps of every pair swapped: ~276,000 runs of two frames, more than the
    // merge by runs takes (16 MiB of them, 262,144): the analysis stops when the walk finds
    // one too many and reads the file through the reorder buffer.
    let dir = TempDir(tempdir("many-runs"));
    let one = dir.0.join("one.pcap");
    retime(&captures_dir().join("healthy-eth.pcap"), &one, 0);
    let b = std::fs::read(&one).unwrap();
    let u = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    // (timestamp µs from the first frame, the record cut to 80 bytes)
    let mut recs: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut pos = 24;
    while pos + 16 <= b.len() {
        let (caplen, orig) = (u(pos + 8) as usize, u(pos + 12));
        let keep = caplen.min(80);
        let mut r = Vec::with_capacity(16 + keep);
        r.extend_from_slice(&[0; 8]);
        r.extend_from_slice(&(keep as u32).to_le_bytes());
        r.extend_from_slice(&orig.to_le_bytes());
        r.extend_from_slice(&b[pos + 16..pos + 16 + keep]);
        recs.push((i64::from(u(pos)) * 1_000_000 + i64::from(u(pos + 4)), r));
        pos += 16 + caplen;
    }
    let t0 = 1_700_000_000_000_000i64;
    let mut out = b[..24].to_vec();
    let mut back = 0u64;
    for k in 0..460i64 {
        let stamps: Vec<i64> = recs.iter().map(|r| t0 + k * 20_000 + r.0).collect();
        for (i, (_, r)) in recs.iter().enumerate() {
            // Pairs swapped: the second of each is stamped before the first.
            let j = if i % 2 == 0 {
                (i + 1).min(recs.len() - 1)
            } else {
                i - 1
            };
            let ts = stamps[j];
            back += u64::from(i % 2 == 1 && stamps[i - 1] < stamps[i]);
            out.extend_from_slice(&((ts / 1_000_000) as u32).to_le_bytes());
            out.extend_from_slice(&((ts % 1_000_000) as u32).to_le_bytes());
            out.extend_from_slice(&r[8..]);
        }
    }
    assert!(back > 262_144 + 1_000, "{back} backdated");
    let file = dir.0.join("many.pcap");
    std::fs::write(&file, out).unwrap();
    same_as_sorted(&dir.0, &file, back, false, true);
}

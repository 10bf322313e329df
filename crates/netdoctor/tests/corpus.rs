//! `netdoctor analyze` over third-party captures (the shared corpus, skipped when missing) and
//! over a capture with every frame twice (`mergecap`), issue 19: no panic, no hang, an exit
//! code of 0–3, retransmission shares of at most 100 %, and duplicates changing nothing.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CORPUS: &str = "/work/shared/realworld-pcaps";

/// Runs `netdoctor analyze --json FILE`, killed (by its PID) after 60 s; (exit code, stdout,
/// stderr), `None` for a hang.
fn analyze_bounded(file: &Path) -> Option<(i32, Vec<u8>, String)> {
    let dir = tempdir();
    let out = dir.join("out.json");
    let err = dir.join("err.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["analyze", "--json"])
        .arg(file)
        .env("NETDOCTOR_QUIET", "1")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("run netdoctor");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let r = status.map(|s| {
        (
            s.code().unwrap_or(-1),
            std::fs::read(&out).unwrap_or_default(),
            std::fs::read_to_string(&err).unwrap_or_default(),
        )
    });
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "nd-corpus-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every "(X% of data segments)" in the findings' summaries is at most 100 %.
fn assert_shares(name: &str, v: &serde_json::Value) {
    for f in v["findings"].as_array().into_iter().flatten() {
        let s = f["summary"].as_str().unwrap_or("");
        if let Some(i) = s.find("% of data segments") {
            let head = &s[..i];
            let num = head.rsplit(['(', ' ']).next().unwrap_or("");
            let pct: f64 = num.parse().unwrap_or_else(|_| panic!("{name}: {s}"));
            assert!(pct <= 100.0, "{name}: {s}");
        }
    }
    let st = &v["measurements"]["capture"]["stats"];
    if let (Some(r), Some(d)) = (
        st["retransmitted_segments"].as_u64(),
        st["data_segments"].as_u64(),
    ) {
        let q = &st["quality"];
        let dup = q["duplicate_frames"].as_u64().unwrap_or(0);
        assert!(
            r <= d + r && dup <= st["tcp_segments"].as_u64().unwrap(),
            "{name}: {st}"
        );
    }
}

#[test]
fn no_corpus_capture_panics_hangs_or_exits_outside_0_to_3() {
    let dir = Path::new(CORPUS);
    if !dir.is_dir() {
        eprintln!("skipped: needs the shared corpus at {CORPUS}");
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e != "md"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let mut reports = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let (code, out, err) =
            analyze_bounded(f).unwrap_or_else(|| panic!("{name}: analyze did not end in 60 s"));
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!((0..=3).contains(&code), "{name}: exit {code}: {err}");
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out) {
            assert_schema(&v);
            assert_shares(&name, &v);
            reports += 1;
        } else {
            // Refused input (an unsupported link type, no TCP): one clear line.
            assert!(
                err.trim().lines().count() == 1 && err.contains(&name),
                "{name}: {err}"
            );
        }
    }
    assert!(reports * 2 >= files.len(), "{reports} of {}", files.len());
}

#[test]
fn a_capture_merged_with_itself_gives_the_same_findings() {
    if Command::new("mergecap").arg("-h").output().is_err() {
        eprintln!("skipped: needs mergecap (apt-get install wireshark-common)");
        return;
    }
    for name in ["healthy-eth.pcap", "loss.pcap"] {
        let src = captures_dir().join(name);
        let dir = tempdir();
        let dup = dir.join("dup.pcap");
        let st = Command::new("mergecap")
            .args(["-F", "pcap", "-w"])
            .arg(&dup)
            .arg(&src)
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success());
        let (c1, o1, _) = analyze_bounded(&src).unwrap();
        let (c2, o2, e2) = analyze_bounded(&dup).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let (a, b): (serde_json::Value, serde_json::Value) = (
            serde_json::from_slice(&o1).unwrap(),
            serde_json::from_slice(&o2).unwrap_or_else(|_| panic!("{e2}")),
        );
        assert_schema(&b);
        assert_eq!(c1, c2, "{name}: exit code");
        let sums = |v: &serde_json::Value| -> Vec<(String, String, String)> {
            v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    (
                        f["id"].as_str().unwrap().to_string(),
                        f["severity"].as_str().unwrap().to_string(),
                        f["summary"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        };
        assert_eq!(sums(&b), sums(&a), "{name}");
        assert_eq!(b["verdict"], a["verdict"], "{name}");
        let q = &b["measurements"]["capture"]["stats"]["quality"];
        assert!(q["duplicate_frames"].as_u64().unwrap() > 100, "{name}: {q}");
        let w = b["measurements"]["capture"]["warnings"].to_string();
        assert!(w.contains("duplicate frames dropped"), "{name}: {w}");
        assert!(!sums(&b).iter().any(|s| s.0 == "syn_retransmit"), "{name}");
    }
}

#[test]
fn frames_cut_out_of_a_lab_capture_are_a_capture_gap_not_a_problem() {
    // lab-healthy.pcap (namespaces, no loss) with three of the server's data frames removed
    // (editcap, as a capture that dropped them): the client's ACKs cover data the capture
    // never held. That is the capture's loss, not the network's: no loss, stall or
    // delayed-ACK finding, and the report says how much is missing.
    if Command::new("editcap").arg("-h").output().is_err() {
        eprintln!("skipped: needs editcap (apt-get install wireshark-common)");
        return;
    }
    let src = captures_dir().join("lab-healthy.pcap");
    let dir = tempdir();
    let gap = dir.join("gap.pcap");
    let st = Command::new("editcap")
        .arg(&src)
        .arg(&gap)
        .args(["8", "20", "40"])
        .status()
        .unwrap();
    assert!(st.success());
    let (c0, o0, _) = analyze_bounded(&src).unwrap();
    let (c1, o1, e1) = analyze_bounded(&gap).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&o0).unwrap(),
        serde_json::from_slice(&o1).unwrap_or_else(|_| panic!("{e1}")),
    );
    assert_schema(&b);
    assert_eq!(c1, c0, "exit code");
    assert_eq!(b["verdict"], a["verdict"]);
    assert_eq!(b["findings"], a["findings"], "{}", b["findings"]);
    let st = &b["measurements"]["capture"]["stats"];
    assert_eq!(st["quality"]["missing_segments"], 3, "{st}");
    assert_eq!(st["quality"]["missing_bytes"], 3 * 1448, "{st}");
    assert_eq!(st["retransmitted_segments"], 0, "{st}");
    let w = b["measurements"]["capture"]["warnings"].to_string();
    assert!(
        w.contains("3 segments (4344 bytes, 0.66 % of the data) that the receiver acknowledged were never captured"),
        "{w}"
    );
}

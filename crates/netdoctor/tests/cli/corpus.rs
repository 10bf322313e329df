//! `netdoctor analyze` over captures edited as a capture point would spoil them (issue 19):
//! every frame twice (`mergecap`) changes nothing, frames cut out are the capture's gap. The
//! walk over the shared third-party corpus is in `realworld_corpus.rs`.

use crate::common;
use common::*;

use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn a_capture_merged_with_itself_gives_the_same_findings() {
    if Command::new("mergecap").arg("-h").output().is_err() {
        eprintln!("skipped: needs mergecap (apt-get install wireshark-common)");
        return;
    }
    for name in ["healthy-eth.pcap", "loss.pcap"] {
        let src = captures_dir().join(name);
        let dir = tempdir("corpus");
        let dup = dir.join("dup.pcap");
        let st = Command::new("mergecap")
            .args(["-F", "pcap", "-w"])
            .arg(&dup)
            .arg(&src)
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success());
        let (c1, o1, _) = analyze_bounded(&src, LIMIT).unwrap();
        let (c2, o2, e2) = analyze_bounded(&dup, LIMIT).unwrap();
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
    let dir = tempdir("corpus");
    let gap = dir.join("gap.pcap");
    let st = Command::new("editcap")
        .arg(&src)
        .arg(&gap)
        .args(["8", "20", "40"])
        .status()
        .unwrap();
    assert!(st.success());
    let (c0, o0, _) = analyze_bounded(&src, LIMIT).unwrap();
    let (c1, o1, e1) = analyze_bounded(&gap, LIMIT).unwrap();
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

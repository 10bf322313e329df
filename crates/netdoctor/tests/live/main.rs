//! The netdoctor binary's live tests: labs, namespaces, nginx, captures, load against servers of
//! their own, the Debian package. One test binary: one link of the whole netdoctor tree instead of
//! forty (each file was its own binary). Every test first takes its file's turn
//! ([`common::file_turn`]): tests of one file run beside each other as they did when each file was
//! its own binary, never beside another file's, so the lab name nd-demo, the fixed ports
//! 18080/18081/18450 and the CPU stay one file's at a time. A new file here needs its `mod` line
//! below and `let _turn = crate::common::file_turn(file!());` first in each test. Run one file's
//! tests with a filter: `cargo test --release -p netdoctor --test live lab_cases::`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../labcase/mod.rs"]
mod labcase;
#[path = "../prom/mod.rs"]
mod prom;
#[path = "../routelab/mod.rs"]
mod routelab;

mod base_rtt_lab;
mod bloat;
mod client_drop;
mod compare_lab;
mod compare_median;
mod compare_tls;
mod connect_cli;
mod dead_record;
mod deb_package;
mod diagnose_h2;
mod dns_answers;
mod dns_search_list;
mod evidence_order;
mod host_cmd;
mod host_diagnose;
mod https_nginx;
mod idle_timeout_live;
mod interrupt;
mod keepalive_cost;
mod lab_cases;
mod lab_cases_h2;
mod lab_leftovers;
mod lang;
mod load_cli;
mod lossy_path;
mod lost_answer;
mod netns_retransmits;
mod passive;
mod preflight;
mod reference_case;
mod route_lab;
mod route_lab_v6;
mod shaper;
mod slow_body;
mod syn_flood_cap;
mod throughput_lab;
mod unprivileged;
mod watch_native_histogram;
mod watch_pods_live;
mod watch_pods_windows;
mod watch_prometheus;
mod watch_ring_shrink;

/// Every test of every file here takes its file's turn first: one without it would run beside
/// another file's tests (a second lab named nd-demo, a port taken, a latency measured on a busy
/// CPU), and fail only on the runs where the two meet.
#[test]
fn every_live_test_takes_its_files_turn_first() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live");
    let mut missing = Vec::new();
    let mut tests = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "rs") || path.ends_with("main.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, _) in lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.trim() == "#[test]")
        {
            tests += 1;
            // The first line after the signature's opening brace.
            let open = (i..lines.len()).find(|&j| lines[j].trim_end().ends_with('{'));
            let first = open.and_then(|j| lines.get(j + 1)).map(|l| l.trim());
            if first != Some("let _turn = crate::common::file_turn(file!());") {
                missing.push(format!("{}:{}", path.display(), i + 2));
            }
        }
    }
    assert!(
        tests > 100,
        "only {tests} tests found under {}",
        dir.display()
    );
    assert!(
        missing.is_empty(),
        "tests without their file's turn: {missing:#?}"
    );
}

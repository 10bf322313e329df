//! The terminal report of every committed capture, compared with its golden file in
//! `tests/golden/` (colour off, capture paths relative to the repository; the terminal report
//! prints no elapsed time). And every report reads back from its JSON unchanged.
//!
//! Regenerate the golden files after a deliberate change of the report (one command):
//!
//! ```text
//! UPDATE_GOLDEN=1 cargo test --release -p netdoctor --test golden
//! ```
//! then review `git diff crates/netdoctor/tests/golden`.

mod common;
use common::*;
use netdoctor::analyze::analyze;
use netdoctor::cli::{AnalyzeArgs, OutputArgs};
use netdoctor::output::Progress;
use netdoctor_report::{Format, Report};
use std::path::{Path, PathBuf};

/// Every committed capture (pcap, pcapng, gzip'd or not).
fn captures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(captures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            [".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz"]
                .iter()
                .any(|ext| name.ends_with(ext))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "captures not found: {files:?}");
    files
}

fn report_of(path: &Path) -> Report {
    let args = AnalyzeArgs {
        file: path.to_path_buf(),
        server_port: None,
        follow: false,
        follow_timeout: None,
        follow_idle: None,
        html: None,
        slo: None,
        jobs: None,
        dump_flags: None,
        output: OutputArgs::of(Format::Terminal),
    };
    analyze(&args, &Progress::new()).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()))
}

fn render(report: &Report, format: Format) -> String {
    let mut out = Vec::new();
    format.write(report, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The terminal report without colour, with the machine's path to the captures replaced.
fn terminal_text(report: &Report) -> String {
    let text = anstream::adapter::strip_str(&render(report, Format::Terminal)).to_string();
    let dir = captures_dir().display().to_string();
    text.replace(&dir, "testdata/captures")
}

#[test]
fn terminal_reports_match_the_golden_files() {
    let golden_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut differ = Vec::new();
    for path in captures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let golden = golden_dir.join(format!("{name}.txt"));
        let got = terminal_text(&report_of(&path));
        if update {
            std::fs::write(&golden, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (make it with UPDATE_GOLDEN=1 cargo test --release -p netdoctor --test golden)",
                golden.display()
            )
        });
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(got.lines().count().min(want.lines().count()));
            differ.push(format!(
                "{name}: first difference at line {}:\n  got:  {:?}\n  want: {:?}",
                line + 1,
                got.lines().nth(line).unwrap_or(""),
                want.lines().nth(line).unwrap_or("")
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "terminal reports changed (UPDATE_GOLDEN=1 regenerates after a deliberate change):\n{}",
        differ.join("\n")
    );
}

#[test]
fn every_report_reads_back_from_its_json() {
    for path in captures() {
        let report = report_of(&path);
        let first = render(&report, Format::Json);
        let v: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_schema(&v);
        let back: Report = serde_json::from_str(&first)
            .unwrap_or_else(|e| panic!("{}: does not read back: {e}", path.display()));
        let second = render(&back, Format::Json);
        assert_eq!(
            first,
            second,
            "{}: JSON → Report → JSON differs",
            path.display()
        );
        // The terminal report of the read-back report is the same too.
        assert_eq!(
            terminal_text(&back),
            terminal_text(&report),
            "{}",
            path.display()
        );
    }
}

//! `analyze -j N`: the JSON report of every committed capture, and of every capture of the
//! shared corpus (skipped when it is missing), is byte-identical with 1 and with 2, 3 and 4
//! worker threads (the elapsed time aside); a bad `-j` is one line naming it.

mod common;
use common::*;
use netdoctor::analyze::analyze;
use netdoctor::cli::{AnalyzeArgs, OutputArgs};
use netdoctor::output::Progress;
use netdoctor_report::Format;
use std::path::{Path, PathBuf};

fn json_of(path: &Path, jobs: usize) -> Result<String, String> {
    let args = AnalyzeArgs {
        file: path.to_path_buf(),
        server_port: None,
        follow: false,
        follow_timeout: None,
        follow_idle: None,
        html: None,
        slo: None,
        jobs: Some(jobs),
        dump_flags: None,
        output: OutputArgs::of(Format::Json),
    };
    let mut report = analyze(&args, &Progress::new()).map_err(|e| format!("{e:#}"))?;
    report.elapsed_s = 0.0;
    let mut out = Vec::new();
    Format::Json.write(&report, &mut out).unwrap();
    Ok(String::from_utf8(out).unwrap())
}

fn captures_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        [".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz"]
            .iter()
            .any(|ext| name.ends_with(ext))
    });
    files.sort();
    files
}

/// Compares the reports; returns how many captures were compared.
fn assert_same_for_every_n(files: &[PathBuf], ns: &[usize]) -> usize {
    let mut compared = 0;
    let mut differ = Vec::new();
    for f in files {
        let one = json_of(f, 1);
        for &n in ns {
            let many = json_of(f, n);
            if one != many {
                differ.push(format!("{} with -j {n}", f.display()));
                if let (Ok(a), Ok(b)) = (&one, &many) {
                    let line = a.lines().zip(b.lines()).position(|(x, y)| x != y);
                    if let Some(k) = line {
                        eprintln!(
                            "{}: -j 1 line {k}: {}\n-j {n}: {}",
                            f.display(),
                            a.lines().nth(k).unwrap_or(""),
                            b.lines().nth(k).unwrap_or("")
                        );
                    }
                }
            }
        }
        compared += usize::from(one.is_ok());
    }
    assert!(differ.is_empty(), "reports differ: {differ:#?}");
    compared
}

#[test]
fn committed_captures_give_the_same_json_with_any_worker_count() {
    let files = captures_in(&captures_dir());
    assert!(
        files.len() >= 10,
        "captures not found in {}",
        captures_dir().display()
    );
    let compared = assert_same_for_every_n(&files, &[2, 3, 4]);
    assert!(compared >= 10, "only {compared} captures could be read");
}

#[test]
fn corpus_captures_give_the_same_json_with_any_worker_count() {
    let dir = std::env::var_os("NETDOCTOR_REALWORLD_PCAPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realworld-pcaps")
        });
    let files = captures_in(&dir);
    if files.is_empty() {
        eprintln!(
            "skipped: needs {} (the shared realworld-pcaps corpus)",
            dir.display()
        );
        return;
    }
    let compared = assert_same_for_every_n(&files, &[4]);
    assert!(compared > 0, "no corpus capture could be read");
}

#[test]
fn bad_job_counts_are_one_line_errors() {
    let cap = captures_dir().join("reset.pcap");
    let cap = cap.to_str().unwrap();
    for bad in ["0", "many", "100000", "2.5"] {
        let o = netdoctor(&["analyze", "-j", bad, cap]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "-j {bad}: {err}");
        assert!(err.starts_with("error: "), "-j {bad}: {err}");
        // One line naming the option and the range; clap's usual hint may follow it.
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.contains("--jobs") && first.contains("worker threads from 1 to"),
            "-j {bad}: {err}"
        );
        assert!(!err.contains("panicked"), "-j {bad}: {err}");
        let others: Vec<&str> = err
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert!(
            others.iter().all(|l| l.starts_with("For more information")),
            "-j {bad}: {err}"
        );
    }
    let o = netdoctor(&["analyze", "-j", "2", "--json", cap]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    assert!(json(&o)["findings"].is_array());
}

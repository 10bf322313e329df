//! `netdoctor analyze` on what tcpdump users pipe into it, through the real binary: standard
//! input (`-`), `/dev/stdin`, a FIFO, gzip'd captures, a file that grows while it is read
//! (`--follow`), and a reader that goes away (broken pipe).

use crate::common;
use common::*;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_netdoctor"));
    c.env("NETDOCTOR_QUIET", "1").env("NO_COLOR", "1");
    c
}

/// What must not depend on how the bytes arrived: verdict, findings, capture figures.
fn essence(v: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "verdict": v["verdict"],
        "findings": v["findings"],
        "capture": v["measurements"]["capture"],
    })
}

fn analyze_file(path: &Path) -> serde_json::Value {
    let o = netdoctor(&["analyze", "--json", path.to_str().unwrap()]);
    let v = json(&o);
    assert_schema(&v);
    v
}

/// Runs `analyze --json ARGS` with `input` written to its standard input.
fn analyze_stdin(args: &[&str], input: &[u8]) -> (i32, serde_json::Value, String) {
    let mut child = bin()
        .arg("analyze")
        .arg("--json")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (o.status.code().unwrap_or(-1), json(&o), stderr(&o))
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn stdin_gives_the_same_findings_as_the_file() {
    for file in ["nagle-eth.pcap", "nagle-full.pcapng", "loss.pcap"] {
        let path = captures_dir().join(file);
        let from_file = analyze_file(&path);
        let bytes = std::fs::read(&path).unwrap();
        for arg in ["-", "/dev/stdin"] {
            let (code, v, err) = analyze_stdin(&[arg], &bytes);
            assert_eq!(code, 1, "{file} via {arg}: {err}");
            assert_schema(&v);
            assert_eq!(essence(&v), essence(&from_file), "{file} via {arg}");
        }
    }
}

#[test]
fn tcpdump_writing_to_a_pipe() {
    if Command::new("tcpdump").arg("--version").output().is_err() {
        eprintln!("skipped: needs tcpdump (apt-get install tcpdump)");
        return;
    }
    let path = captures_dir().join("nagle-sll2.pcap");
    let from_file = analyze_file(&path);
    // `tcpdump -r FILE -w - | netdoctor analyze -`
    let mut tcpdump = Command::new("tcpdump")
        .args(["-r", path.to_str().unwrap(), "-w", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let o = bin()
        .args(["analyze", "--json", "-"])
        .stdin(tcpdump.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(tcpdump.wait().unwrap().success());
    let v = json(&o);
    assert_eq!(essence(&v), essence(&from_file));
    assert_eq!(v["findings"][0]["id"], "nagle_delayed_ack");
}

#[test]
fn a_fifo_is_read_like_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("capture.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let path = captures_dir().join("nagle-eth.pcap");
    let bytes = std::fs::read(&path).unwrap();
    let f2 = fifo.clone();
    // Opening a FIFO for writing blocks until the reader opens it: the writer thread ends
    // when netdoctor has read everything.
    let writer = std::thread::spawn(move || {
        let mut w = std::fs::OpenOptions::new().write(true).open(&f2).unwrap();
        w.write_all(&bytes).unwrap();
    });
    let o = netdoctor(&["analyze", "--json", fifo.to_str().unwrap()]);
    writer.join().unwrap();
    let v = json(&o);
    assert_eq!(essence(&v), essence(&analyze_file(&path)));
}

#[test]
fn gzip_captures_are_detected_by_magic() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["nagle-eth.pcap", "nagle-full.pcapng"] {
        let path = captures_dir().join(file);
        let bytes = std::fs::read(&path).unwrap();
        // A name without .gz: the magic decides.
        let gz = dir.path().join(format!("{file}.data"));
        std::fs::write(&gz, gzip(&bytes)).unwrap();
        let v = analyze_file(&gz);
        assert_eq!(essence(&v), essence(&analyze_file(&path)), "{file}");
        // And through a pipe.
        let (_, v, _) = analyze_stdin(&["-"], &gzip(&bytes));
        assert_eq!(
            essence(&v),
            essence(&analyze_file(&path)),
            "{file} via stdin"
        );
    }
}

#[test]
fn a_cut_gzip_reports_what_it_read_with_a_warning() {
    let bytes = std::fs::read(captures_dir().join("nagle-eth.pcap")).unwrap();
    let mut gz = gzip(&bytes);
    gz.truncate(gz.len() / 2);
    let (code, v, err) = analyze_stdin(&["-"], &gz);
    assert!(!err.contains("panicked"), "{err}");
    assert_schema(&v);
    let packets = v["measurements"]["capture"]["stats"]["packets"]
        .as_u64()
        .unwrap();
    assert!(packets > 0 && packets < 1116, "{packets} packets");
    let warnings = v["measurements"]["capture"]["warnings"].to_string();
    assert!(warnings.contains("gzip data ends early"), "{warnings}");
    assert!([0, 1, 3].contains(&code), "exit {code}");

    // Cut inside the gzip header: one clear line, exit 2.
    let dir = tempfile::tempdir().unwrap();
    let tiny = dir.path().join("tiny.pcap.gz");
    std::fs::write(&tiny, &gzip(&bytes)[..6]).unwrap();
    let o = netdoctor(&["analyze", tiny.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: ") && err.contains("gzip"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    // Gzip'd text: named as not a capture.
    std::fs::write(&tiny, gzip(b"hello, world")).unwrap();
    let o = netdoctor(&["analyze", tiny.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a pcap or pcapng file inside the gzip data"));
}

#[test]
fn follow_reads_what_is_appended_while_running() {
    let src = std::fs::read(captures_dir().join("nagle-eth.pcap")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("growing.pcap");
    // The first part ends in the middle of a packet record, as a file being written does.
    let cut = 50_001;
    std::fs::write(&path, &src[..cut]).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["analyze", "--json", "--follow", "--follow-idle", "2s"])
        .args(["--follow-timeout", "60s"])
        .arg(&path)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ready signal: the progress line printed once the file is open and being followed.
    let mut stderr_pipe = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&seen).contains("as it grows") {
        assert_eq!(
            stderr_pipe.read(&mut byte).unwrap(),
            1,
            "stderr ended early"
        );
        seen.push(byte[0]);
    }
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(&src[cut..]).unwrap();
    drop(f);
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let status = child.wait().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(status.code(), Some(1), "{v:#}");
    assert_eq!(
        essence(&v),
        essence(&analyze_file(&captures_dir().join("nagle-eth.pcap")))
    );
    let capture_check = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "capture")
        .unwrap();
    assert!(
        capture_check["reason"]
            .as_str()
            .unwrap()
            .contains("no new data for 2 s"),
        "{capture_check}"
    );
}

#[test]
fn follow_stops_on_sigterm_and_reports() {
    let src = std::fs::read(captures_dir().join("nagle-eth.pcap")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("growing.pcap");
    std::fs::write(&path, &src).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["analyze", "--json", "--follow", "--follow-timeout", "60s"])
        .arg(&path)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&seen).contains("as it grows") {
        assert_eq!(
            stderr_pipe.read(&mut byte).unwrap(),
            1,
            "stderr ended early"
        );
        seen.push(byte[0]);
    }
    // SAFETY: kill(2) on the PID of the child this test spawned and has not reaped.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let status = child.wait().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(status.code(), Some(1), "{v:#}");
    assert_eq!(v["findings"][0]["id"], "nagle_delayed_ack");
    assert!(
        v["checks"].to_string().contains("stopped by a signal"),
        "{v:#}"
    );
}

#[test]
fn a_closed_stdout_ends_quietly_in_every_format() {
    let path = captures_dir().join("nagle-eth.pcap");
    for format in ["json", "terminal"] {
        // The reader is gone before netdoctor writes a byte, as with `| head -0`.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
            .args(["analyze", "--format", format, path.to_str().unwrap()])
            .env("NETDOCTOR_QUIET", "1")
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{format}: {err}");
        assert!(err.is_empty(), "{format}: {err}");
    }
}

#[test]
fn head_dash_1_on_json_output_prints_no_error() {
    // The shell form from the issue; the exit code is 0 when the write hit the closed pipe, or
    // the verdict's (1) when the whole report fit in the pipe before `head` exited.
    let path = captures_dir().join("nagle-eth.pcap");
    let cmd = format!(
        "{} analyze --json {} | head -1",
        env!("CARGO_BIN_EXE_netdoctor"),
        path.display()
    );
    let o = Command::new("sh")
        .args(["-c", &cmd])
        .env("NETDOCTOR_QUIET", "1")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "{\n");
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
}

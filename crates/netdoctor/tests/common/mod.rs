//! Helpers shared by the binary's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn netdoctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(args)
        .env("NETDOCTOR_QUIET", "1")
        .env("NO_COLOR", "1")
        .output()
        .expect("run netdoctor")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The block of finding `id` in the Chinese terminal report of `analyze` on the capture at
/// `path`, whitespace removed (the report wraps its lines).
#[allow(dead_code)]
pub fn zh_finding_block(path: &std::path::Path, id: &str) -> String {
    let o = netdoctor(&["analyze", "--lang", "zh", path.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{o:?}");
    let out = stdout(&o);
    out.split("\n[")
        .find(|b| b.contains(&format!("] {id}")))
        .unwrap_or_else(|| panic!("no {id} finding: {out}"))
        .split_whitespace()
        .collect()
}

/// The JSON on stdout of a run that must have exited 0.
pub fn json_ok(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    json(o)
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

/// Validates a report against the committed schema, panicking with every error.
/// `netdoctor diagnose URL ARGS… --json`: the report, checked against the schema, its findings
/// printed one per line under `tag` (what a failing live test's log needs to be read).
pub fn diagnose_json(tag: &str, url: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["diagnose", url];
    all.extend_from_slice(args);
    all.push("--json");
    let r = json(&netdoctor(&all));
    assert_schema(&r);
    for f in r["findings"].as_array().into_iter().flatten() {
        eprintln!(
            "{tag}: {} {} {} caused_by={} : {}",
            f["id"], f["severity"], f["side"], f["caused_by"], f["summary"]
        );
    }
    r
}

/// The report's finding `id`, if it has one.
pub fn finding<'a>(report: &'a serde_json::Value, id: &str) -> Option<&'a serde_json::Value> {
    report["findings"]
        .as_array()?
        .iter()
        .find(|f| f["id"] == id)
}

pub fn assert_schema(report: &serde_json::Value) {
    assert_doc_schema(report, netdoctor_report::SCHEMA_JSON)
}

/// Validates a document against one of the committed schemas (given as its JSON text),
/// panicking with every error.
pub fn assert_doc_schema(doc: &serde_json::Value, schema: &str) {
    let schema: serde_json::Value = serde_json::from_str(schema).expect("schema is JSON");
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "breaks the schema: {errors:#?}\n{doc}");
}

/// The ids of a report's findings, in order.
pub fn ids(report: &serde_json::Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// The check `name` of a report: (status, reason).
pub fn check<'a>(r: &'a serde_json::Value, name: &str) -> (&'a str, &'a str) {
    let c = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {}", r["checks"]));
    (
        c["status"].as_str().unwrap(),
        c["reason"].as_str().unwrap_or(""),
    )
}

/// The shared third-party capture corpus (`NETDOCTOR_REALWORLD_PCAPS`, default
/// `../shared/realworld-pcaps` beside the repository).
pub fn corpus_dir() -> PathBuf {
    std::env::var_os("NETDOCTOR_REALWORLD_PCAPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realworld-pcaps")
        })
}

/// Corpus file `name`, or `None` with one line saying what the skipped test needs.
pub fn corpus_file(name: &str) -> Option<PathBuf> {
    let path = corpus_dir().join(name);
    if !path.exists() {
        eprintln!(
            "skipped: needs {} (the shared realworld-pcaps corpus)",
            path.display()
        );
        return None;
    }
    Some(path)
}

pub fn captures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/captures")
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn nginx_installed() -> bool {
    std::path::Path::new("/usr/sbin/nginx").exists()
}

/// Why a root/nginx test cannot run here, if it cannot.
pub fn lab_unavailable() -> Option<&'static str> {
    if !is_root() {
        Some("needs root (network namespaces, packet capture)")
    } else if !nginx_installed() {
        Some("needs nginx: apt-get install nginx-light")
    } else {
        None
    }
}

/// A comparison (`--compare --json`) against its schema, and both embedded reports against
/// theirs.
pub fn assert_compare_schema(v: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(netdoctor_report::COMPARE_SCHEMA_JSON).unwrap();
    let val = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = val
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "comparison breaks the schema: {errors:#?}"
    );
    assert_schema(&v["a"]["report"]);
    assert_schema(&v["b"]["report"]);
}

/// A comparison's measurement `name` in A and B.
pub fn compare_metric(c: &serde_json::Value, name: &str) -> (f64, f64) {
    let m = c["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name}"));
    (m["a"].as_f64().unwrap(), m["b"].as_f64().unwrap())
}

/// A comparison's summary says latency is lower and names p50 and p99, and never "higher"
/// without the reason (the offered load moved the median).
pub fn assert_says_lower(summary: &str) {
    assert!(
        summary.contains("latency significantly lower (p50 ") && summary.contains(", p99 "),
        "{summary}"
    );
    assert!(
        !summary.contains("higher") || summary.contains("the median rose because"),
        "{summary}"
    );
}

/// Runs `netdoctor analyze --json FILE`, killed (by its PID) after `timeout`; (exit code,
/// stdout, stderr), `None` for a hang. Output goes to files, not pipes: a report larger than
/// a pipe's 64 KiB would block the child on write while the test waits for it to exit.
pub fn analyze_bounded(file: &Path, timeout: Duration) -> Option<(i32, Vec<u8>, String)> {
    let dir = tempdir("analyze");
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
    let deadline = Instant::now() + timeout;
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

/// A fresh directory under the temp dir, unique per process and call.
pub fn tempdir(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "nd-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A directory removed on drop (also when the test fails).
pub struct TempDir(pub PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bytes of [`nginx_site`]'s `/big.bin` (not compressible, the same every run).
pub fn site_body(size: usize) -> Vec<u8> {
    (0..size as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

/// nginx's files for serving `/big.bin` (`size` bytes) on `ip:8080` as one process
/// (`master_process off`: ending it leaves no worker behind): the directory (`name` under the
/// temp dir, removed on drop) and the arguments to start nginx with.
pub fn nginx_site(name: &str, ip: std::net::IpAddr, size: usize) -> (TempDir, Vec<String>) {
    let dir = TempDir(std::env::temp_dir().join(name));
    std::fs::create_dir_all(dir.0.join("www")).unwrap();
    std::fs::write(dir.0.join("www/big.bin"), site_body(size)).unwrap();
    let d = dir.0.display();
    std::fs::write(
        dir.0.join("nginx.conf"),
        format!(
            "daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid; error_log {d}/err.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{ access_log off; keepalive_requests 100000; server {{ listen {ip}:8080; root {d}/www; }} }}\n"
        ),
    )
    .unwrap();
    let args = vec![
        "-c".into(),
        format!("{d}/nginx.conf"),
        "-e".into(),
        format!("{d}/err.log"),
    ];
    (dir, args)
}

/// Starts nginx ([`nginx_site`]) in `lab`'s server namespace, ended by the lab, and returns its
/// directory once it accepts connections there.
pub fn nginx_serving_file(
    lab: &mut netdoctor_lab::hostcases::HostLab,
    name: &str,
    ip: std::net::IpAddr,
    size: usize,
) -> TempDir {
    let (dir, args) = nginx_site(name, ip, size);
    let srv = lab.server_netns().to_string();
    let nginx = lab
        .command(&srv, "nginx")
        .unwrap()
        .args(&args)
        .spawn()
        .expect("start nginx");
    lab.keep_child(nginx);
    let deadline = Instant::now() + Duration::from_secs(15);
    while !lab
        .in_ns(&srv, || {
            std::net::TcpStream::connect_timeout(&(ip, 8080).into(), Duration::from_millis(500))
                .is_ok()
        })
        .unwrap()
    {
        assert!(Instant::now() < deadline, "nginx did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    dir
}

/// Whose turn it is in a grouped test binary (`tests/live`): the file whose tests run now, and
/// how many of them.
static TURN: std::sync::Mutex<(Option<&'static str>, usize)> = std::sync::Mutex::new((None, 0));
static TURN_CHANGED: std::sync::Condvar = std::sync::Condvar::new();

/// Held by every test of `tests/live` while it runs ([`file_turn`]).
pub struct FileTurn;

/// Waits until no test of another file runs, then runs with the tests of this file (`file!()`).
/// The live files were one test binary each, so their tests ran beside their own file's tests
/// only; grouped into one binary (one link instead of forty) they keep exactly that: the lab
/// name nd-demo, the fixed ports 18080/18081/18450 and the machine's CPU stay one file's at a
/// time, and a file's own `SERIAL` still orders its tests among themselves.
pub fn file_turn(file: &'static str) -> FileTurn {
    let mut t = TURN.lock().unwrap_or_else(|e| e.into_inner());
    while t.0.is_some_and(|f| f != file) {
        t = TURN_CHANGED.wait(t).unwrap_or_else(|e| e.into_inner());
    }
    t.0 = Some(file);
    t.1 += 1;
    FileTurn
}

impl Drop for FileTurn {
    fn drop(&mut self) {
        let mut t = TURN.lock().unwrap_or_else(|e| e.into_inner());
        t.1 -= 1;
        if t.1 == 0 {
            t.0 = None;
            TURN_CHANGED.notify_all();
        }
    }
}

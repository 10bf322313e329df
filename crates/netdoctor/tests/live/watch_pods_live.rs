//! `watch --pods` while pods come and go: the agent starts with one pod; a second pod (a
//! network namespace made here with an HTTP server, and a fake proc root entry naming it as a
//! kubelet pod: `netdoctor_lab::fakepod`, shared with crates/netdoctor-agent/tests/pods.rs) started later must appear in
//! /metrics with its labels and traffic; once it is deleted its series must go, the first pod's
//! must stay, and the agent must exit 0 on SIGTERM. Needs root; everything made is removed on
//! drop, also on failure.

use netdoctor_lab::fakepod::{self, FakePod};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const UID_A: &str = "11111111-2222-4333-8444-555555555555";
const UID_B: &str = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";

/// A fake pod named by `tag` (`netdoctor_lab::fakepod`: a namespace with a server on
/// 127.0.0.1:8080); `None` without `ip netns`.
fn start_pod(tag: &str) -> Option<FakePod> {
    FakePod::start(&format!("ndsoak{}{tag}", std::process::id() % 100_000))
}

/// The pod's entry in the fake proc root (cgroupfs driver) and its kubelet log directory
/// (its namespace and name).
fn fake_pod(root: &Path, pod: &FakePod, uid: &str, name: &str) -> PathBuf {
    let d = pod.proc_entry(&root.join("proc"), &fakepod::cgroup_cgroupfs(uid));
    std::fs::create_dir_all(root.join("logs").join(format!("shop_{name}_{uid}"))).unwrap();
    d
}

/// The fake roots, removed on drop (also when an assertion fails).
struct TempRoot(PathBuf);

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The agent, SIGTERM'd then killed by PID on drop.
struct Agent(Option<Child>);

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // SAFETY: kill with a PID of our own child and a valid signal number.
            unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
            let _ = c.wait();
        }
    }
}

fn scrape(port: u16) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
    let mut b = Vec::new();
    let _ = s.read_to_end(&mut b);
    String::from_utf8_lossy(&b).into_owned()
}

/// Polls /metrics (calling `each` before every scrape) until `ok` holds, for up to 60 s.
fn wait_for(
    port: u16,
    what: &str,
    log: &Path,
    each: &dyn Fn(),
    ok: &dyn Fn(&str) -> bool,
) -> String {
    let t0 = Instant::now();
    loop {
        each();
        let m = scrape(port);
        if ok(&m) {
            return m;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{what} not seen within 60 s; agent log:\n{}\nlast scrape:\n{m}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn requests_of(m: &str, pod: &str) -> u64 {
    m.lines()
        .filter(|l| {
            l.starts_with("netdoctor_requests_total{") && l.contains(&format!("pod=\"{pod}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn a_pod_started_later_is_watched_and_a_pod_gone_loses_its_series() {
    let _turn = crate::common::file_turn(file!());
    if !crate::common::is_root() {
        eprintln!("skipped: not root (needs network namespaces, setns and packet capture)");
        return;
    }
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: needs python3 (apt-get install python3)");
        return;
    }
    let Some(a) = start_pod("a") else {
        eprintln!("skipped: needs ip netns (apt-get install iproute2)");
        return;
    };
    let dir = TempRoot(crate::common::tempdir("podslive"));
    let root = dir.0.clone();
    fake_pod(&root, &a, UID_A, "web-1");
    let listen = netdoctor_lab::ports::unused_port([127, 0, 0, 1]);
    let log = root.join("agent.log");
    let agent = Agent(Some(
        Command::new(env!("CARGO_BIN_EXE_netdoctor"))
            .args(["watch", "--pods", "--window", "2s", "--pods-rescan", "1s"])
            .arg("--proc-root")
            .arg(root.join("proc"))
            .arg("--pod-logs-dir")
            .arg(root.join("logs"))
            .arg("--kubelet-pods-dir")
            .arg(root.join("kubelet"))
            .args(["--listen", &listen.to_string()])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start netdoctor watch"),
    ));
    let has = |m: &str, pod: &str| m.contains(&format!("pod=\"{pod}\""));
    wait_for(listen, "pod web-1's windows", &log, &|| {}, &|m| {
        m.contains(r#"netdoctor_windows_total{port="8080",verdict="#) && has(m, "web-1")
    });

    // A second pod after the start.
    let b = start_pod("b").expect("second namespace");
    let b_dir = fake_pod(&root, &b, UID_B, "web-2");
    let m = wait_for(
        listen,
        "pod web-2's traffic",
        &log,
        &|| {
            let _ = b.get();
        },
        &|m| requests_of(m, "web-2") >= 1,
    );
    // The listener's info series (`netdoctor_pod_listener`, a gauge of 1) names the pod.
    assert!(
        m.lines().any(|l| l.starts_with("netdoctor_pod_listener")
            && l.contains(&format!(
                r#"{{port="8080",namespace="shop",pod="web-2",pod_uid="{UID_B}""#
            ))),
        "{m}"
    );
    assert_eq!(
        requests_of(&m, "web-1"),
        0,
        "web-2's requests are web-2's only"
    );

    // The second pod goes away: its series go, the first pod's stay.
    drop(b);
    let _ = std::fs::remove_dir_all(&b_dir);
    let m = wait_for(listen, "web-2's series removed", &log, &|| {}, &|m| {
        !has(m, "web-2")
    });
    assert!(has(&m, "web-1"), "{m}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("web-2 is gone"), "{text}");

    let mut agent = agent;
    let child = agent.0.as_mut().unwrap();
    // SAFETY: kill with our own child's PID and a valid signal number.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no exit 30 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    agent.0 = None;
    assert!(
        status.success(),
        "exit status {status}; log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    drop(a);
    drop(dir);
}

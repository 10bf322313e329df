//! End-to-end lab tests: real namespaces, veth and nginx. They need root and /usr/sbin/nginx and
//! skip (with a printed reason) otherwise. Each test uses its own lab name, so they run in
//! parallel; all IPs live in namespaces the test created.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use netdoctor_lab::{
    DEFAULT_NGINX, DEFAULT_PAGE, Lab, LabConfig, LabError, LabGuard, in_netns, list_labs_in,
    netns_exists, remove_abandoned, stop, stop_all_in,
};

fn prerequisites() -> Result<(), String> {
    if !netdoctor_sys::privilege::is_root() {
        return Err("not root".into());
    }
    if !Path::new(DEFAULT_NGINX).exists() {
        return Err(format!("{DEFAULT_NGINX} not installed"));
    }
    Ok(())
}

macro_rules! require_lab {
    () => {
        if let Err(why) = prerequisites() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

fn unique_cfg(tag: &str) -> LabConfig {
    let name = format!("ndt{tag}{}", std::process::id());
    LabConfig {
        state_dir: std::env::temp_dir().join(format!("netdoctor-lab-{name}")),
        name,
    }
}

/// A plain HTTP/1.1 GET; returns (status line, headers, body).
fn get(addr: SocketAddr) -> Result<(String, String, String), String> {
    let timeout = Duration::from_secs(5);
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("{addr}: {e}"))?;
    s.set_read_timeout(Some(timeout)).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    s.take(1 << 20)
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no header end")?;
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    Ok((status.to_string(), headers.to_lowercase(), body.to_string()))
}

fn pid_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A reparented daemon may linger as a zombie until init reaps it.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn assert_gone(cfg: &LabConfig, nginx_pid: Option<u32>) {
    assert!(!netns_exists(&cfg.server_netns()), "server netns left");
    assert!(!netns_exists(&cfg.client_netns()), "client netns left");
    assert!(!cfg.state_dir.exists(), "state dir left");
    if let Some(pid) = nginx_pid {
        assert!(pid_gone(pid), "nginx {pid} still running");
    }
    let status = Lab::status(cfg).unwrap();
    assert!(!status.running);
    assert!(!status.server_netns_present && !status.client_netns_present);
    assert!(!status.state_file_present && !status.nginx_alive);
    assert!(status.servers.iter().all(|s| !s.answering));
}

#[test]
fn lab_lifecycle_start_serve_status_attach_stop() {
    require_lab!();
    let cfg = unique_cfg("life");
    let lab = Lab::start(&cfg).expect("start lab");
    let guard = LabGuard::new(lab);
    let lab = guard.lab();
    assert_eq!(lab.server_netns(), cfg.server_netns());
    assert_eq!(lab.client_netns(), cfg.client_netns());
    let pid = lab.nginx_pid().expect("nginx pid");

    // Both servers answer nginx's default page from inside the client namespace.
    let servers = lab.servers().to_vec();
    assert_eq!(servers.len(), 2);
    let answers = in_netns(lab.client_netns(), || {
        servers.iter().map(|s| get(s.addr)).collect::<Vec<_>>()
    })
    .unwrap();
    for (server, answer) in servers.iter().zip(answers) {
        let (status, headers, body) = answer.unwrap_or_else(|e| panic!("{}: {e}", server.url));
        assert!(
            status.starts_with("HTTP/1.1 200"),
            "{}: {status}",
            server.url
        );
        assert!(headers.contains("server: nginx"), "{headers}");
        assert!(headers.contains("content-length: 615"), "{headers}");
        assert_eq!(body, DEFAULT_PAGE);
    }
    // The servers are not reachable from the root namespace: the lab is isolated.
    assert!(!Path::new("/sys/class/net/nd-srv").exists());

    // A command in the client namespace sees the client address.
    let out = lab
        .command_in_client(OsStr::new("ip"))
        .args(["-4", "-o", "addr", "show"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("10.213.0.2/24"), "{text}");

    // Status and attach describe the running lab.
    let status = Lab::status(&cfg).unwrap();
    assert!(status.running, "{status:?}");
    assert_eq!(status.nginx_pid, Some(pid));
    assert!(status.servers.iter().all(|s| s.answering), "{status:?}");
    let shown = status.to_string();
    assert!(
        shown.contains("running") && shown.contains(&format!("pid {pid}")),
        "{shown}"
    );
    let attached = Lab::attach(&cfg).unwrap().expect("attach");
    assert_eq!(attached.nginx_pid(), Some(pid));
    assert_eq!(attached.servers(), lab.servers());

    // A second start is refused and does not disturb the running lab.
    let err = Lab::start(&cfg).unwrap_err();
    assert!(matches!(err, LabError::AlreadyRunning { .. }), "{err}");
    assert!(err.to_string().contains("netdoctor lab stop"), "{err}");
    assert!(Lab::status(&cfg).unwrap().running);

    // Stop removes everything and says so.
    let removed = stop(&cfg).unwrap();
    let all = removed.join("\n");
    assert!(
        all.contains(&format!("nginx master process {pid}")),
        "{all}"
    );
    assert!(all.contains(&cfg.server_netns()), "{all}");
    assert!(all.contains(&cfg.client_netns()), "{all}");
    assert!(all.contains("veth"), "{all}");
    assert!(all.contains("state dir"), "{all}");
    assert_gone(&cfg, Some(pid));
    assert!(Lab::attach(&cfg).unwrap().is_none());
    // Idempotent: a second stop finds nothing; the guard's drop is harmless too.
    assert_eq!(stop(&cfg).unwrap(), Vec::<String>::new());
    drop(guard);
    assert_gone(&cfg, Some(pid));
}

#[test]
fn lab_stop_method_and_guard_drop_clean_up() {
    require_lab!();
    let cfg = unique_cfg("drop");
    let lab = Lab::start(&cfg).expect("start lab");
    let pid = lab.nginx_pid();
    drop(LabGuard::new(lab));
    assert_gone(&cfg, pid);

    let lab = Lab::start(&cfg).expect("restart after stop");
    let pid = lab.nginx_pid();
    lab.stop().unwrap();
    assert_gone(&cfg, pid);
}

#[test]
fn stop_of_a_lab_that_does_not_exist_removes_nothing() {
    require_lab!();
    let cfg = unique_cfg("none");
    assert_eq!(stop(&cfg).unwrap(), Vec::<String>::new());
    assert!(Lab::attach(&cfg).unwrap().is_none());
    let status = Lab::status(&cfg).unwrap();
    assert!(!status.running && !status.state_file_present);
}

fn example_binary(name: &str) -> PathBuf {
    // target/<profile>/deps/<test binary> → target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    profile_dir.join("examples").join(name)
}

/// Spawns `labhold <name> <state_dir>` and waits for its "ready" line.
fn spawn_labhold(cfg: &LabConfig) -> std::process::Child {
    spawn_labhold_with(cfg, false)
}

/// Spawns `labhold <name> <state_dir> [builtin]` and waits for its "ready" line.
fn spawn_labhold_with(cfg: &LabConfig, builtin: bool) -> std::process::Child {
    let bin = example_binary("labhold");
    assert!(
        bin.exists(),
        "{} missing: run `cargo test -p netdoctor-lab` (builds examples) or `cargo build -p netdoctor-lab --example labhold`",
        bin.display()
    );
    let mut child = Command::new(&bin)
        .arg(&cfg.name)
        .arg(&cfg.state_dir)
        .args(builtin.then_some("builtin"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the ready line (bounded: start itself gives up after 5 s).
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
    if !line.starts_with("ready ") {
        let _ = child.kill();
        let _ = child.wait();
        let _ = stop(cfg);
        let mut err = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        panic!("labhold did not get ready: {line:?} {err}");
    }
    assert!(line.contains(&cfg.server_netns()), "{line}");
    child
}

#[test]
fn ctrl_c_tears_the_lab_down() {
    require_lab!();
    let cfg = unique_cfg("sig");
    let mut child = spawn_labhold(&cfg);
    let status = Lab::status(&cfg).unwrap();
    assert!(status.running, "{status:?}");
    let pid = status.nginx_pid;

    // SAFETY: kill(2) on the PID of the child we spawned and have not yet waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let exit = child.wait().unwrap();
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    assert_eq!(exit.code(), Some(130), "{err}");
    assert!(err.contains("removed"), "{err}");
    assert_gone(&cfg, pid);
}

#[test]
fn stop_from_another_process_cleans_up_after_a_crash() {
    require_lab!();
    let cfg = unique_cfg("crash");
    let mut child = spawn_labhold(&cfg);
    let pid = Lab::status(&cfg).unwrap().nginx_pid;
    assert!(pid.is_some());
    // SIGKILL: no handler runs, the lab is left behind as after a crash.
    child.kill().unwrap();
    child.wait().unwrap();
    let status = Lab::status(&cfg).unwrap();
    assert!(
        status.running,
        "nginx is a daemon and outlives the crash: {status:?}"
    );
    // A new start is refused until the leftovers are removed.
    assert!(matches!(
        Lab::start(&cfg),
        Err(LabError::AlreadyRunning { .. })
    ));
    let removed = stop(&cfg).unwrap();
    assert!(!removed.is_empty());
    assert_gone(&cfg, pid);
}

#[test]
fn builtin_lab_serves_both_ports_and_leaves_nothing() {
    if !netdoctor_sys::privilege::is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let cfg = unique_cfg("b");
    let lab = Lab::start_builtin(&cfg).expect("start builtin lab");
    assert!(lab.is_builtin());
    assert_eq!(lab.nginx_pid(), None);
    let addrs: Vec<SocketAddr> = lab.servers().iter().map(|s| s.addr).collect();
    let answers = in_netns(lab.client_netns(), || {
        addrs.iter().map(|a| get(*a)).collect::<Vec<_>>()
    })
    .unwrap();
    for a in answers {
        let (status, headers, body) = a.expect("answer");
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(headers.contains("content-length: 615"), "{headers}");
        assert_eq!(body, DEFAULT_PAGE);
    }
    lab.stop().unwrap();
    assert_gone(&cfg, None);
}

/// A state parent of this test's own, so listing and stopping "every lab" never touches a lab
/// of the user or of another test run (those live under /run/netdoctor or their own dirs).
fn unique_parent(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("netdoctor-labs-{tag}-{}", std::process::id()))
}

fn cfg_under(parent: &Path, tag: &str) -> LabConfig {
    let name = format!("ndt{tag}{}", std::process::id());
    LabConfig {
        state_dir: parent.join(format!("lab-{name}")),
        name,
    }
}

#[test]
fn stop_all_removes_every_lab_left_by_killed_processes() {
    require_lab!();
    let parent = unique_parent("all");
    let with_nginx = cfg_under(&parent, "alln");
    let builtin = cfg_under(&parent, "allb");
    let mut a = spawn_labhold_with(&with_nginx, false);
    let mut b = spawn_labhold_with(&builtin, true);
    let nginx_pid = Lab::status(&with_nginx).unwrap().nginx_pid;
    assert!(nginx_pid.is_some());
    // Both holders are alive: listed with their owners running.
    let labs = list_labs_in(&parent).unwrap();
    let names: Vec<&str> = labs.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, [builtin.name.as_str(), with_nginx.name.as_str()]);
    assert!(
        labs.iter().all(|l| l.owner_alive && l.serving()),
        "{labs:?}"
    );
    assert_eq!((labs[0].builtin, labs[1].builtin), (true, false));
    assert_eq!(labs[1].nginx_pid, nginx_pid);

    // SIGKILL: no handler runs; nginx (a daemon) and both labs' namespaces stay behind.
    for child in [&mut a, &mut b] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let labs = list_labs_in(&parent).unwrap();
    assert_eq!(labs.len(), 2, "{labs:?}");
    assert!(labs.iter().all(|l| !l.owner_alive), "{labs:?}");
    assert!(
        !labs[0].serving(),
        "built-in servers die with their process"
    );
    assert!(labs[1].serving(), "nginx outlives the crash");
    assert!(netns_exists(&builtin.server_netns()));

    let stopped = stop_all_in(&parent).unwrap();
    assert_eq!(stopped.len(), 2, "{stopped:?}");
    for s in &stopped {
        assert_eq!(s.error, None, "{s:?}");
        assert!(
            s.removed.iter().any(|r| r.starts_with("network namespace")),
            "{s:?}"
        );
    }
    assert!(
        stopped[1]
            .removed
            .iter()
            .any(|r| r.starts_with("nginx master process")),
        "{stopped:?}"
    );
    assert_gone(&with_nginx, nginx_pid);
    assert_gone(&builtin, None);
    assert!(list_labs_in(&parent).unwrap().is_empty());
    assert!(stop_all_in(&parent).unwrap().is_empty(), "idempotent");
    let _ = std::fs::remove_dir(&parent);
}

#[test]
fn an_abandoned_lab_is_removed_but_a_live_one_is_not() {
    require_lab!();
    let parent = unique_parent("aband");
    let cfg = cfg_under(&parent, "aband");
    assert_eq!(remove_abandoned(&cfg).unwrap(), Vec::<String>::new());
    let mut child = spawn_labhold(&cfg);
    let nginx_pid = Lab::status(&cfg).unwrap().nginx_pid;
    // Its owner runs: not abandoned, and nothing is touched.
    let err = remove_abandoned(&cfg).unwrap_err();
    assert!(matches!(err, LabError::AlreadyRunning { .. }), "{err}");
    assert!(err.to_string().contains(&child.id().to_string()), "{err}");
    assert!(Lab::status(&cfg).unwrap().running);
    child.kill().unwrap();
    child.wait().unwrap();
    let removed = remove_abandoned(&cfg).unwrap();
    assert!(
        removed
            .iter()
            .any(|r| r.starts_with("nginx master process")),
        "{removed:?}"
    );
    assert_gone(&cfg, nginx_pid);
    let _ = std::fs::remove_dir(&parent);
}

//! The lab's nginx: its configuration file, the default page, and process handling by PID.
//!
//! One nginx master (one worker) serves two `server` blocks on the server veth address: port 8080
//! with `tcp_nodelay on;` and port 8081 with `tcp_nodelay off;`. It uses `sendfile on;
//! tcp_nopush off;` (nginx.org's stock config): the response headers go out with writev() and the
//! 615-byte body with sendfile(), two writes — the shape that lets Nagle hold the body until the
//! client's delayed ACK. `tcp_nopush on` (Debian's packaged nginx.conf) sets TCP_CORK around the
//! two writes, so headers and body leave as one 853-byte segment and the stall does NOT happen
//! (measured on veth: p50 1.4 ms on both ports); the lab therefore pins `tcp_nopush off`.
//!
//! nginx runs daemonized with its pid file in the state dir, so `lab start` can return and a later
//! `lab stop` (another process) finds it. It is stopped by the PID from that file, and only after
//! `/proc/<pid>/cmdline` shows it is an nginx started with this lab's config (or it lives in this
//! lab's server namespace): a stale pid file never makes us signal an unrelated process.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// nginx's default "Welcome to nginx!" page (Debian's /usr/share/nginx/html/index.html, 615
/// bytes), written into the state dir so the lab does not depend on the package's files.
pub const DEFAULT_PAGE: &str = "<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>

<p>For online documentation and support please refer to
<a href=\"http://nginx.org/\">nginx.org</a>.<br/>
Commercial support is available at
<a href=\"http://nginx.com/\">nginx.com</a>.</p>

<p><em>Thank you for using nginx.</em></p>
</body>
</html>
";

/// Files and directories inside the state dir. Teardown removes exactly these (never the whole
/// directory tree blindly), then the state dir itself if it is empty.
pub(crate) struct StatePaths {
    pub dir: PathBuf,
    pub conf: PathBuf,
    pub pid: PathBuf,
    pub error_log: PathBuf,
    pub start_log: PathBuf,
    pub lock: PathBuf,
    pub html_dir: PathBuf,
    pub page: PathBuf,
    pub temp_dir: PathBuf,
    pub state: PathBuf,
    /// Standard error of a lab case's process (`lab start --case`).
    pub case_log: PathBuf,
}

impl StatePaths {
    pub fn new(dir: &Path) -> Self {
        StatePaths {
            dir: dir.to_path_buf(),
            conf: dir.join("nginx.conf"),
            pid: dir.join("nginx.pid"),
            error_log: dir.join("error.log"),
            start_log: dir.join("nginx-start.log"),
            lock: dir.join("nginx.lock"),
            html_dir: dir.join("html"),
            page: dir.join("html").join("index.html"),
            temp_dir: dir.join("nginx-temp"),
            state: dir.join("lab.state"),
            case_log: dir.join("case.log"),
        }
    }
}

/// One `server` block: listen address and port, and whether `tcp_nodelay` is on.
pub(crate) struct ServerBlock {
    pub ip: std::net::Ipv4Addr,
    pub port: u16,
    pub tcp_nodelay: bool,
}

/// Renders the nginx configuration for the lab.
pub(crate) fn render_config(paths: &StatePaths, servers: &[ServerBlock]) -> String {
    let dir = paths.dir.display();
    let temp = paths.temp_dir.display();
    let mut conf = format!(
        "# netdoctor lab: generated, removed by `netdoctor lab stop`.
worker_processes 1;
daemon on;
master_process on;
user root;
pid {pid};
lock_file {lock};
error_log {error_log} notice;

events {{
    worker_connections 4096;
}}

http {{
    access_log off;
    sendfile on;
    tcp_nopush off;
    keepalive_requests 100000;
    keepalive_timeout 65s;
    types {{ text/html html; }}
    default_type text/html;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
",
        pid = paths.pid.display(),
        lock = paths.lock.display(),
        error_log = paths.error_log.display(),
    );
    for s in servers {
        conf.push_str(&format!(
            "
    server {{
        listen {ip}:{port};
        tcp_nodelay {nodelay};
        root {dir}/html;
        index index.html;
        location / {{ }}
    }}
",
            ip = s.ip,
            port = s.port,
            nodelay = if s.tcp_nodelay { "on" } else { "off" },
        ));
    }
    conf.push_str("}\n");
    conf
}

/// Reads the PID from nginx's pid file; `None` when absent or unparsable.
pub(crate) fn read_pid(path: &Path) -> Option<i32> {
    let text = fs::read_to_string(path).ok()?;
    text.trim().parse::<i32>().ok().filter(|&pid| pid > 1)
}

/// Whether the process exists and is not a zombie. (PID 1 in some containers does not reap
/// orphans, so a dead daemon can linger as a zombie; it counts as gone.)
pub(crate) fn pid_alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => match stat.rsplit_once(')') {
            Some((_, rest)) => !matches!(rest.trim_start().chars().next(), Some('Z') | Some('X')),
            None => true,
        },
        Err(_) => false,
    }
}

/// Whether `pid` is an nginx of this lab: its command line names `conf`, or it is an nginx that
/// lives in the network namespace whose bind mount is `netns`.
pub(crate) fn is_lab_nginx(pid: i32, conf: &Path, netns: &Path) -> bool {
    let Ok(raw) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
    if !cmdline.contains("nginx") {
        return false;
    }
    if cmdline.contains(&*conf.to_string_lossy()) {
        return true;
    }
    same_netns(pid, netns)
}

/// Whether process `pid` lives in the network namespace bound at `netns`.
pub(crate) fn same_netns(pid: i32, netns: &Path) -> bool {
    match (
        fs::metadata(format!("/proc/{pid}/ns/net")),
        fs::metadata(netns),
    ) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Sends SIGTERM (nginx's fast shutdown), waits up to `grace` for the process to go, then sends
/// SIGKILL and waits briefly again. Returns whether the process is gone.
pub(crate) fn terminate(pid: i32, grace: Duration) -> bool {
    if !pid_alive(pid) {
        return true;
    }
    send_signal(pid, libc::SIGTERM);
    if wait_gone(pid, grace) {
        return true;
    }
    send_signal(pid, libc::SIGKILL);
    wait_gone(pid, Duration::from_secs(2))
}

fn send_signal(pid: i32, sig: libc::c_int) {
    // SAFETY: kill(2) with a positive PID signals exactly that process; no memory is involved.
    // The callers have checked that `pid` is one of this lab's nginx processes.
    unsafe {
        libc::kill(pid, sig);
    }
}

fn wait_gone(pid: i32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if !pid_alive(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Last `max_lines` lines of a log file, or a note that it could not be read.
pub(crate) fn log_tail(path: &Path, max_lines: usize) -> String {
    match fs::read_to_string(path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(max_lines);
            let tail = lines[start..].join("\n");
            if tail.trim().is_empty() {
                "(empty)".to_string()
            } else {
                tail
            }
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_page_is_nginx_welcome_page_615_bytes() {
        assert_eq!(DEFAULT_PAGE.len(), 615);
        assert!(DEFAULT_PAGE.contains("<title>Welcome to nginx!</title>"));
    }

    #[test]
    fn config_has_both_servers_and_state_paths() {
        let paths = StatePaths::new(Path::new("/run/netdoctor/lab-x"));
        let conf = render_config(
            &paths,
            &[
                ServerBlock {
                    ip: "10.213.0.1".parse().unwrap(),
                    port: 8080,
                    tcp_nodelay: true,
                },
                ServerBlock {
                    ip: "10.213.0.1".parse().unwrap(),
                    port: 8081,
                    tcp_nodelay: false,
                },
            ],
        );
        assert!(conf.contains("pid /run/netdoctor/lab-x/nginx.pid;"));
        assert!(conf.contains("error_log /run/netdoctor/lab-x/error.log"));
        assert!(conf.contains("worker_processes 1;"));
        assert!(conf.contains("access_log off;"));
        assert!(conf.contains("keepalive_requests 100000;"));
        // TCP_CORK would coalesce headers and body and hide the Nagle stall.
        assert!(conf.contains("tcp_nopush off;"));
        assert!(conf.contains("sendfile on;"));
        let on = conf.find("listen 10.213.0.1:8080;").unwrap();
        let off = conf.find("listen 10.213.0.1:8081;").unwrap();
        let on_block = &conf[on..off];
        let off_block = &conf[off..];
        assert!(on_block.contains("tcp_nodelay on;"), "{on_block}");
        assert!(off_block.contains("tcp_nodelay off;"), "{off_block}");
        assert_eq!(conf.matches('{').count(), conf.matches('}').count());
    }

    #[test]
    fn pid_file_parsing() {
        let dir = std::env::temp_dir().join(format!("ndlab-pid-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("nginx.pid");
        fs::write(&p, "1234\n").unwrap();
        assert_eq!(read_pid(&p), Some(1234));
        fs::write(&p, "garbage").unwrap();
        assert_eq!(read_pid(&p), None);
        fs::write(&p, "1\n").unwrap();
        assert_eq!(read_pid(&p), None, "pid 1 must never be a target");
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(read_pid(&p), None);
    }

    #[test]
    fn liveness_and_identity_of_processes() {
        let me = std::process::id() as i32;
        assert!(pid_alive(me));
        assert!(!pid_alive(i32::MAX));
        // The test binary is not an nginx, whatever namespace it is in.
        assert!(!is_lab_nginx(
            me,
            Path::new("/nonexistent/nginx.conf"),
            Path::new("/proc/self/ns/net")
        ));
        assert!(same_netns(me, Path::new("/proc/self/ns/net")));
    }

    #[test]
    fn log_tail_keeps_last_lines() {
        let dir = std::env::temp_dir().join(format!("ndlab-log-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("error.log");
        fs::write(&p, "a\nb\nc\nd\n").unwrap();
        assert_eq!(log_tail(&p, 2), "c\nd");
        fs::remove_dir_all(&dir).unwrap();
        assert!(log_tail(&p, 2).contains("cannot read"));
    }
}

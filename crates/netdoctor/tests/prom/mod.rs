//! Helpers of the tests where a real Prometheus scrapes `netdoctor watch`: processes stopped by
//! PID on drop, an nginx with a Nagle-stalled and a healthy port, HTTP and PromQL over std.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_netdoctor");

pub fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root for packet capture".into());
    }
    for tool in ["nginx", "prometheus", "promtool"] {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
            || Path::new("/usr/sbin").join(tool).is_file();
        if !found {
            let pkg = if tool == "nginx" {
                "nginx-light"
            } else {
                "prometheus"
            };
            return Some(format!("needs {tool} (apt-get install {pkg})"));
        }
    }
    None
}

/// A port for nginx, the exporter or prometheus to bind: below the ephemeral range and distinct
/// (a port bind(0) freed could be taken before they bind it).
pub fn free_port() -> u16 {
    netdoctor_lab::ports::unused_port([127, 0, 0, 1])
}

/// A child process killed (SIGTERM, then SIGKILL) by its PID on drop.
pub struct Proc {
    name: &'static str,
    child: Option<Child>,
}

impl Proc {
    pub fn spawn(name: &'static str, cmd: &mut Command) -> Proc {
        let child = cmd.spawn().unwrap_or_else(|e| panic!("start {name}: {e}"));
        Proc {
            name,
            child: Some(child),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// SIGTERM and wait (bounded); returns the exit code.
    pub fn terminate(&mut self, within: Duration) -> Option<i32> {
        let mut c = self.child.take()?;
        // SAFETY: kill on the PID of a child we spawned and have not reaped.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + within;
        while Instant::now() < end {
            if let Ok(Some(st)) = c.try_wait() {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
        panic!("{} did not exit within {within:?} of SIGTERM", self.name);
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: as in terminate.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            for _ in 0..100 {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// nginx (daemonized master) stopped by the PID in its pid file on drop.
pub struct Nginx {
    dir: PathBuf,
}

impl Nginx {
    fn conf(
        d: &std::path::Display<'_>,
        stall_port: u16,
        stall_nodelay: &str,
        healthy_port: u16,
    ) -> String {
        format!(
            "worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/logs/error.log notice;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n access_log off;\n sendfile on;\n tcp_nopush off;\n default_type text/html;\n\
             keepalive_requests 1000000;\n client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp;\n\
             fastcgi_temp_path {d}/tmp; uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n\
             server {{ listen 127.0.0.1:{stall_port}; tcp_nodelay {stall_nodelay}; root {d}/html; }}\n\
             server {{ listen 127.0.0.1:{healthy_port}; tcp_nodelay on; root {d}/html; }}\n}}\n"
        )
    }

    /// The fix: `tcp_nodelay on` on the stalled port too, by `nginx -s reload`; returns when
    /// the new worker has started (its notice in the error log).
    pub fn fix(&self, stall_port: u16, healthy_port: u16) {
        let d = self.dir.display();
        let log = self.dir.join("logs/error.log");
        let workers = || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .matches("start worker process")
                .count()
        };
        let before = workers();
        std::fs::write(
            self.dir.join("nginx.conf"),
            Nginx::conf(&d, stall_port, "on", healthy_port),
        )
        .unwrap();
        let st = Command::new("nginx")
            .args([
                "-c",
                &format!("{d}/nginx.conf"),
                "-p",
                &format!("{d}"),
                "-s",
                "reload",
            ])
            .status()
            .expect("run nginx -s reload");
        assert!(st.success(), "nginx reload failed");
        wait_for("nginx's new worker", Duration::from_secs(10), || {
            workers() > before
        });
    }

    pub fn start(dir: &Path, stall_port: u16, healthy_port: u16) -> Nginx {
        for d in ["html", "logs", "tmp"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        // nginx workers run as nobody and must read html/.
        Command::new("chmod")
            .args(["755", dir.to_str().unwrap()])
            .status()
            .unwrap();
        let body = format!("<html><body>{}</body></html>", "x".repeat(574));
        std::fs::write(dir.join("html/index.html"), body).unwrap();
        let d = dir.display();
        let conf = Nginx::conf(&d, stall_port, "off", healthy_port);
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let ng = Nginx {
            dir: dir.to_path_buf(),
        };
        let st = Command::new("nginx")
            .args(["-c", &format!("{d}/nginx.conf"), "-p", &format!("{d}")])
            .status()
            .expect("run nginx");
        assert!(st.success(), "nginx failed to start");
        ng
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let Ok(pid) = std::fs::read_to_string(self.dir.join("nginx.pid")) else {
            return;
        };
        let Ok(pid) = pid.trim().parse::<i32>() else {
            return;
        };
        // SAFETY: kill on the PID our nginx master wrote.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        for _ in 0..100 {
            // SAFETY: signal 0 only checks that the process exists.
            if unsafe { libc::kill(pid, 0) } != 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

pub fn http_get(addr: SocketAddr, path_and_query: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path_and_query} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

pub fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The result vector of an instant PromQL query.
pub fn promql(prom: SocketAddr, q: &str) -> Vec<serde_json::Value> {
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={}", urlencode(q)))
        .unwrap_or_else(|| panic!("query {q}: no answer"));
    assert_eq!(status, 200, "query {q}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("Prometheus JSON");
    assert_eq!(v["status"], "success", "{body}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

pub fn wait_for(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("timed out after {within:?} waiting for {what}");
}

pub fn load(port: u16, secs: u32, rate: Option<u32>) {
    load_json(port, secs, rate);
}

/// `netdoctor load -c 50 --json` for `secs` seconds; its JSON (netdoctor.load/v1).
/// `netdoctor load` on `port`, closed-loop, or at a constant `rate` (requests/s). A fast port
/// takes a rate: the tests check what Prometheus reads, not how many packets per second the
/// agent's capture keeps up with on a machine the load generator shares (closed-loop, one
/// thread reached 70k requests/s on nginx here and the capture dropped a third of them). A
/// Nagle port stays closed-loop: a rate above its ~1,100 requests/s would time a backlog.
pub fn load_json(port: u16, secs: u32, rate: Option<u32>) -> serde_json::Value {
    let (secs, url) = (format!("{secs}s"), format!("http://127.0.0.1:{port}/"));
    let rate = rate.map(|r| r.to_string());
    let mut args = vec!["load", "-c", "50", "-t", "1", "-d", &secs, "--json"];
    if let Some(r) = &rate {
        args.extend(["--rate", r.as_str()]);
    }
    args.push(&url);
    let out = Command::new(BIN)
        .args(&args)
        .stderr(Stdio::null())
        .output()
        .expect("run netdoctor load");
    assert!(out.status.success(), "netdoctor load on port {port} failed");
    serde_json::from_slice(&out.stdout).expect("load's JSON")
}

/// `netdoctor watch ARGS --listen <a port of its own>`; returns once `/metrics` answers.
pub fn start_watch(args: &[&str]) -> (Proc, SocketAddr) {
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let watch = Proc::spawn(
        "netdoctor watch",
        Command::new(BIN)
            .arg("watch")
            .args(args)
            .args(["--listen", &metrics.to_string()])
            .env("NETDOCTOR_QUIET", "1")
            .stdout(Stdio::null()),
    );
    wait_for("watch's /metrics", Duration::from_secs(10), || {
        http_get(metrics, "/metrics").is_some_and(|(s, _)| s == 200)
    });
    (watch, metrics)
}

/// The first value of an instant PromQL query, if any.
pub fn promql_f64(prom: SocketAddr, q: &str) -> Option<f64> {
    promql(prom, q)
        .first()?
        .get("value")?
        .get(1)?
        .as_str()?
        .parse()
        .ok()
}

/// Prometheus on a port of its own with `config` (YAML) and `extra` flags, storing under
/// `dir`; returns once it is ready.
pub fn start_prometheus(dir: &Path, config: &str, extra: &[&str]) -> (Proc, SocketAddr) {
    std::fs::create_dir_all(dir).unwrap();
    let prom: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let cfg = dir.join("prometheus.yml");
    std::fs::write(&cfg, config).unwrap();
    let proc = Proc::spawn(
        "prometheus",
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_for("Prometheus ready", Duration::from_secs(30), || {
        http_get(prom, "/-/ready").is_some_and(|(s, _)| s == 200)
    });
    (proc, prom)
}

//! A real Prometheus (Debian's `prometheus` package) scrapes `netdoctor watch` while it watches
//! two nginx servers on 127.0.0.1: one with the Nagle stall (`tcp_nodelay off`, sendfile, a
//! ~600-byte page) and one without (`tcp_nodelay on`), each loaded with `netdoctor load -c 50`.
//! PromQL over Prometheus's HTTP API must return the nagle_delayed_ack series for the first port
//! and no problem series for the second; `promtool check metrics` must accept the live
//! exposition; the evidence ring must hold the stalled port's window (JSON + pcap) only; and
//! SIGTERM must end watch with exit code 0.
//!
//! Needs root (packet capture), nginx and prometheus/promtool; skipped with the reason printed
//! otherwise. Every process it starts is stopped by PID on drop, also when an assertion fails.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_netdoctor");

fn skip_reason() -> Option<String> {
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
fn free_port() -> u16 {
    netdoctor_lab::ports::unused_port([127, 0, 0, 1])
}

/// A child process killed (SIGTERM, then SIGKILL) by its PID on drop.
struct Proc {
    name: &'static str,
    child: Option<Child>,
}

impl Proc {
    fn spawn(name: &'static str, cmd: &mut Command) -> Proc {
        let child = cmd.spawn().unwrap_or_else(|e| panic!("start {name}: {e}"));
        Proc {
            name,
            child: Some(child),
        }
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// SIGTERM and wait (bounded); returns the exit code.
    fn terminate(&mut self, within: Duration) -> Option<i32> {
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
struct Nginx {
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
    fn fix(&self, stall_port: u16, healthy_port: u16) {
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

    fn start(dir: &Path, stall_port: u16, healthy_port: u16) -> Nginx {
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

fn http_get(addr: SocketAddr, path_and_query: &str) -> Option<(u16, String)> {
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

fn dechunk(mut s: &str) -> String {
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

fn urlencode(s: &str) -> String {
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
fn promql(prom: SocketAddr, q: &str) -> Vec<serde_json::Value> {
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={}", urlencode(q)))
        .unwrap_or_else(|| panic!("query {q}: no answer"));
    assert_eq!(status, 200, "query {q}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("Prometheus JSON");
    assert_eq!(v["status"], "success", "{body}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

fn wait_for(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("timed out after {within:?} waiting for {what}");
}

fn load(port: u16, secs: u32) {
    let out = Command::new(BIN)
        .args([
            "load",
            "-c",
            "50",
            "-t",
            "1",
            "-d",
            &format!("{secs}s"),
            &format!("http://127.0.0.1:{port}/"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run netdoctor load");
    assert!(out.success(), "netdoctor load on port {port} failed");
}

#[test]
fn prometheus_sees_the_nagle_finding_and_nothing_on_the_healthy_port() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED prometheus_sees_the_nagle_finding…: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (stall, healthy) = (free_port(), free_port());
    let _nginx = Nginx::start(&tmp.path().join("nginx"), stall, healthy);

    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let ring = tmp.path().join("ring");
    let mut watch = Proc::spawn(
        "netdoctor watch",
        Command::new(BIN)
            .args([
                "watch",
                "-p",
                &format!("{stall},{healthy}"),
                "--window",
                "3s",
                "--listen",
                &metrics.to_string(),
                "--dir",
                ring.to_str().unwrap(),
                "--keep",
                "3",
            ])
            .env("NETDOCTOR_QUIET", "1")
            .stdout(Stdio::null()),
    );
    wait_for("watch's /metrics", Duration::from_secs(10), || {
        http_get(metrics, "/metrics").is_some_and(|(s, _)| s == 200)
    });

    let prom: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let cfg = tmp.path().join("prometheus.yml");
    // The shipped alert rules, with `for: 1m` (two 30 s windows) shortened to two of this
    // test's 3 s windows.
    let rules = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/alerts/netdoctor-rules.yaml"),
    )
    .expect("shipped rules");
    assert!(rules.contains("for: 1m"));
    let rules_file = tmp.path().join("rules.yaml");
    std::fs::write(&rules_file, rules.replace("for: 1m", "for: 2s")).unwrap();
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n\
             scrape_configs:\n  \
             - job_name: netdoctor\n    static_configs:\n      - targets: ['{metrics}']\n",
            rules_file.display()
        ),
    )
    .unwrap();
    let _prom = Proc::spawn(
        "prometheus",
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                tmp.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_for("Prometheus ready", Duration::from_secs(30), || {
        http_get(prom, "/-/ready").is_some_and(|(s, _)| s == 200)
    });

    load(stall, 5);
    load(healthy, 5);
    // Both ports' loaded windows must have ended and been scraped.
    let q_requests = format!("max_over_time(netdoctor_requests_total{{port=\"{healthy}\"}}[10m])");
    wait_for(
        "Prometheus to see the healthy port's requests",
        Duration::from_secs(30),
        || {
            promql(prom, &q_requests).first().is_some_and(|s| {
                s["value"][1]
                    .as_str()
                    .and_then(|v| v.parse::<f64>().ok())
                    .is_some_and(|v| v > 1000.0)
            })
        },
    );
    let q_nagle = format!(
        "max_over_time(netdoctor_finding_active{{id=\"nagle_delayed_ack\",port=\"{stall}\"}}[10m]) > 0"
    );
    wait_for(
        "the nagle_delayed_ack series in Prometheus",
        Duration::from_secs(15),
        || !promql(prom, &q_nagle).is_empty(),
    );
    let series = promql(prom, &q_nagle);
    assert_eq!(series[0]["metric"]["side"], "server", "{series:?}");
    let q_added = format!(
        "max_over_time(netdoctor_finding_added_latency_seconds{{id=\"nagle_delayed_ack\",port=\"{stall}\"}}[10m])"
    );
    let added: f64 = promql(prom, &q_added)[0]["value"][1]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (0.03..0.25).contains(&added),
        "added latency {added} s is not the delayed-ACK timer"
    );
    let q_healthy =
        format!("max_over_time(netdoctor_finding_severity{{port=\"{healthy}\"}}[10m]) >= 2");
    assert_eq!(
        promql(prom, &q_healthy),
        Vec::<serde_json::Value>::new(),
        "problem series on the tcp_nodelay-on port"
    );
    let q_windows = format!(
        "max_over_time(netdoctor_windows_total{{port=\"{stall}\",verdict=\"problem\"}}[10m])"
    );
    assert!(!promql(prom, &q_windows).is_empty());

    // The shipped alert fired for the stalled port, with its runbook, and never for the other.
    let q_fired = format!(
        "max_over_time(ALERTS{{alertname=\"NetdoctorNagleDelayedAck\",alertstate=\"firing\",port=\"{stall}\"}}[10m])"
    );
    wait_for(
        "the NetdoctorNagleDelayedAck alert to fire",
        Duration::from_secs(20),
        || !promql(prom, &q_fired).is_empty(),
    );
    // The loaded rule carries its runbook (the alert itself has resolved once the load ended).
    let (_, rules) = http_get(prom, "/api/v1/rules?type=alert").unwrap();
    assert!(
        rules.contains("NetdoctorNagleDelayedAck") && rules.contains("TCP_NODELAY"),
        "runbook missing: {rules}"
    );
    let q_any_healthy = format!("max_over_time(ALERTS{{port=\"{healthy}\"}}[10m])");
    assert_eq!(
        promql(prom, &q_any_healthy),
        Vec::<serde_json::Value>::new()
    );

    // The fix (tcp_nodelay on), under load again: the port's windows are healthy with traffic
    // and the alert resolves.
    _nginx.fix(stall, healthy);
    load(stall, 7);
    let q_healthy_windows = format!(
        "increase(netdoctor_windows_total{{port=\"{stall}\",verdict!=\"problem\"}}[15s]) > 0 \
         and on(port) increase(netdoctor_requests_total{{port=\"{stall}\"}}[15s]) > 1000"
    );
    wait_for(
        "a window of the fixed port with traffic and no problem",
        Duration::from_secs(15),
        || !promql(prom, &q_healthy_windows).is_empty(),
    );
    let q_alert_now = format!("ALERTS{{alertname=\"NetdoctorNagleDelayedAck\",port=\"{stall}\"}}");
    wait_for(
        "the alert to resolve after the fix",
        Duration::from_secs(15),
        || promql(prom, &q_alert_now).is_empty(),
    );

    // promtool accepts the live exposition (classic text format, as curl gets it).
    let (_, text) = http_get(metrics, "/metrics").unwrap();
    let mut pt = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    pt.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = pt.wait_with_output().unwrap();
    let msg = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && msg.trim().is_empty(),
        "promtool: {msg}"
    );

    // SIGTERM: the window in progress ends, and watch exits 0.
    assert!(watch.pid() > 0);
    assert_eq!(watch.terminate(Duration::from_secs(10)), Some(0));

    // The evidence ring holds the stalled port's problem windows only, each with its pcap.
    let names: Vec<String> = std::fs::read_dir(&ring)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let jsons: Vec<&String> = names.iter().filter(|n| n.ends_with(".json")).collect();
    assert!(!jsons.is_empty(), "no problem window kept: {names:?}");
    assert!(
        jsons.len() <= 3,
        "ring not bounded to --keep 3 per port: {names:?}"
    );
    for j in &jsons {
        assert!(j.ends_with(&format!("-p{stall}.json")), "{names:?}");
        let pcap = j.replace(".json", ".pcap");
        assert!(names.contains(&pcap), "{j} has no pcap: {names:?}");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(ring.join(j)).unwrap()).unwrap();
        assert_eq!(report["verdict"], "problem");
    }
    // At least one kept window ended while the load held connections open: its report carries
    // nginx's socket options, which confirm the finding (TCP_NODELAY off).
    let with_sockets = jsons
        .iter()
        .filter_map(|j| {
            serde_json::from_slice::<serde_json::Value>(&std::fs::read(ring.join(j)).ok()?).ok()
        })
        .filter(|r| {
            r["checks"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["name"] == "socket_options" && c["status"] == "ok")
            })
        })
        .count();
    assert!(
        with_sockets > 0,
        "no kept window read nginx's socket options"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("current-")),
        "window-in-progress files left behind: {names:?}"
    );
}

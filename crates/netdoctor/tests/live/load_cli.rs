//! `netdoctor load` through the real binary, against servers started by the test (127.0.0.1,
//! port 0) that count what they see (`netdoctor connect`: connect_cli.rs).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{
    assert_doc_schema as assert_schema, json_ok as json, netdoctor, stderr, stdout,
};

fn assert_clean_error(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(o.stdout.is_empty(), "stdout: {}", stdout(o));
}

/// What the test server saw.
#[derive(Default)]
struct Seen {
    requests: AtomicU64,
    /// The last request's head and body.
    last: Mutex<(String, Vec<u8>)>,
}

/// A thread-per-connection HTTP/1.1 server: 200 with a 615-byte body after `delay`; `/500`
/// answers 500. Listening before `start` returns (the ready signal is the listen itself).
struct Server {
    addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(delay: Duration) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, st2) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for c in l.incoming() {
                if st2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(c) = c else { continue };
                let s = s2.clone();
                std::thread::spawn(move || serve(c, delay, &s));
            }
        });
        Server { addr, seen, stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> u64 {
        self.seen.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(mut s: TcpStream, delay: Duration, seen: &Seen) {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        let end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            match s.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < end + len {
            match s.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
        let body = buf[end..end + len].to_vec();
        buf.drain(..end + len);
        let is_500 = head.starts_with("GET /500 ") || head.contains(" /500 HTTP");
        *seen.last.lock().unwrap() = (head, body);
        seen.requests.fetch_add(1, Ordering::SeqCst);
        if !delay.is_zero() {
            // The server's simulated processing time.
            std::thread::sleep(delay);
        }
        let resp = if is_500 {
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nerr".to_string()
        } else {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: 615\r\n\r\n{}",
                "x".repeat(615)
            )
        };
        if s.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn load_json_counts_agree_with_the_server() {
    let _turn = crate::common::file_turn(file!());
    let server = Server::start(Duration::ZERO);
    let o = netdoctor(&[
        "load",
        &server.url("/index.html"),
        "-c",
        "4",
        "-t",
        "2",
        "-d",
        "500ms",
        "--json",
    ]);
    let v = json(&o);
    assert_schema(&v, netdoctor_load::LOAD_SCHEMA_JSON);
    assert_eq!(v["schema"], "netdoctor.load/v1");
    assert_eq!(v["target"]["address"], server.addr.to_string());
    assert_eq!(
        (v["connections"].as_u64(), v["threads"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(v["keepalive"], true);
    let requests = v["requests"].as_u64().unwrap();
    let seen = server.requests();
    // Every counted response was served; at most one per connection was in flight at the end.
    assert!(
        requests > 0 && seen >= requests && seen <= requests + 4,
        "{requests} vs {seen}"
    );
    assert_eq!(v["status"]["200"].as_u64(), Some(requests));
    for kind in ["connect", "read", "write", "timeout", "status"] {
        assert_eq!(v["errors"][kind], 0, "{kind}: {v}");
    }
    assert!(v["requests_per_s"].as_f64().unwrap() > 0.0);
    let l = &v["latency_ms"];
    assert!(l["p50"].as_f64().unwrap() <= l["p99"].as_f64().unwrap());
    assert!(v.get("rate").is_none(), "closed loop has no rate: {v}");
}

/// `--no-pin-threads` and `--pin-threads` both run; given together the last one wins (no
/// "cannot be used with" error), so a wrapper can append either to a command line. So do
/// `--no-batch-sched` and `--no-rcvlowat`.
#[test]
fn pin_flags_run_and_the_last_one_wins() {
    let _turn = crate::common::file_turn(file!());
    let server = Server::start(Duration::ZERO);
    let url = server.url("/");
    for flags in [
        &["--no-pin-threads"][..],
        &["--pin-threads", "--no-pin-threads"],
        &["--no-pin-threads", "--pin-threads"],
        // The wake-up opt-outs (SCHED_BATCH, SO_RCVLOWAT) run too, alone and together.
        &["--no-batch-sched"],
        &["--no-rcvlowat", "--no-batch-sched"],
    ] {
        let mut args = vec![
            "load",
            url.as_str(),
            "-c",
            "2",
            "-t",
            "2",
            "-d",
            "300ms",
            "--json",
        ];
        args.extend_from_slice(flags);
        let v = json(&netdoctor(&args));
        assert!(v["requests"].as_u64().unwrap() > 0, "{flags:?}: {v}");
    }
}

#[test]
fn load_text_is_wrk_like() {
    let _turn = crate::common::file_turn(file!());
    let server = Server::start(Duration::ZERO);
    let o = netdoctor(&[
        "load",
        &server.url("/"),
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "300ms",
        "--latency",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        "Running 300.00ms test @ http://",
        "1 threads and 2 connections (keep-alive",
        "Latency Distribution",
        "     50%",
        "     99%",
        " requests in ",
        "Requests/sec:",
        "Transfer/sec:",
    ] {
        assert!(out.contains(needle), "'{needle}' missing:\n{out}");
    }
    assert!(!out.contains("Errors:"), "{out}");
}

#[test]
fn method_headers_and_body_reach_the_server() {
    let _turn = crate::common::file_turn(file!());
    let server = Server::start(Duration::ZERO);
    let o = netdoctor(&[
        "load",
        &server.url("/submit?x=1"),
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "200ms",
        "-m",
        "POST",
        "-H",
        "X-Test: yes",
        "-H",
        "Host: example.test",
        "--body",
        "hello=world",
        "--json",
    ]);
    let v = json(&o);
    assert!(v["requests"].as_u64().unwrap() > 0);
    let (head, body) = server.seen.last.lock().unwrap().clone();
    assert!(head.starts_with("POST /submit?x=1 HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("\r\nX-Test: yes\r\n"), "{head}");
    assert!(head.contains("\r\nHost: example.test\r\n"), "{head}");
    assert!(head.contains("\r\nContent-Length: 11\r\n"), "{head}");
    assert_eq!(body, b"hello=world");
}

#[test]
fn diagnose_sends_the_method_headers_and_body_of_load() {
    let _turn = crate::common::file_turn(file!());
    let server = Server::start(Duration::ZERO);
    let o = netdoctor(&[
        "diagnose",
        &server.url("/submit"),
        "--no-capture",
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "200ms",
        "-m",
        "PUT",
        "-H",
        "X-Test: yes",
        "--body",
        "hello",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["measurements"]["load"]["requests"].as_u64().unwrap() > 0);
    // The load ran last: the last request the server saw is one of the load's.
    let (head, body) = server.seen.last.lock().unwrap().clone();
    assert!(head.starts_with("PUT /submit HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("\r\nX-Test: yes\r\n"), "{head}");
    assert_eq!(body, b"hello");
    // The one-request probe cannot send them yet, and says so.
    let probe = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "http_probe")
        .unwrap();
    assert!(
        probe["reason"].as_str().unwrap().contains("plain GET"),
        "{probe}"
    );
}

#[test]
fn percentiles_follow_a_known_server_delay() {
    let _turn = crate::common::file_turn(file!());
    let server = Server::start(Duration::from_millis(20));
    let o = netdoctor(&[
        "load",
        &server.url("/"),
        "-c",
        "4",
        "-t",
        "1",
        "-d",
        "600ms",
        "--json",
    ]);
    let v = json(&o);
    let p50 = v["latency_ms"]["p50"].as_f64().unwrap();
    let p90 = v["latency_ms"]["p90"].as_f64().unwrap();
    // At least the server's 20 ms, and of its order: a busy machine adds its scheduling delays
    // (tens of ms at a load average of 20 on 2 cores), a wrong measurement seconds.
    assert!((20.0..200.0).contains(&p50), "p50 {p50}");
    assert!(p90 >= p50 && p90 < 400.0, "p90 {p90}");
}

#[test]
fn constant_rate_in_json() {
    let _turn = crate::common::file_turn(file!());
    let server = Server::start(Duration::ZERO);
    let o = netdoctor(&[
        "load",
        &server.url("/"),
        "-c",
        "4",
        "-d",
        "1s",
        "-R",
        "100",
        "--json",
    ]);
    let v = json(&o);
    assert_schema(&v, netdoctor_load::LOAD_SCHEMA_JSON);
    assert_eq!(v["rate"].as_f64(), Some(100.0));
    let requests = v["requests"].as_u64().unwrap();
    // 100 due, never more; at least three quarters even when a busy machine holds the
    // client back near the end (the due requests then wait, in flight when the run ends).
    assert!(
        (75..=100).contains(&requests),
        "{requests} at 100/s for 1 s"
    );
    let seen = server.requests();
    assert!(
        seen >= requests && seen <= requests + 4,
        "{requests} vs {seen}"
    );
}

#[test]
fn request_errors_are_reported_and_exit_zero() {
    let _turn = crate::common::file_turn(file!());
    let server = Server::start(Duration::ZERO);
    let o = netdoctor(&[
        "load",
        &server.url("/500"),
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "200ms",
        "--json",
    ]);
    let v = json(&o);
    assert_schema(&v, netdoctor_load::LOAD_SCHEMA_JSON);
    let requests = v["requests"].as_u64().unwrap();
    assert!(requests > 0);
    assert_eq!(v["errors"]["status"].as_u64(), Some(requests));
    assert_eq!(v["status"]["500"].as_u64(), Some(requests));
    assert!(
        v["first_error"]
            .as_str()
            .unwrap()
            .contains("HTTP status 500")
    );
    // The text report names them too.
    let o = netdoctor(&[
        "load",
        &server.url("/500"),
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "100ms",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(
        out.contains("Errors: connect 0, read 0, write 0, timeout 0, status "),
        "{out}"
    );
    assert!(out.contains("Status codes: 500: "), "{out}");
}

#[test]
fn bad_input_is_a_clear_error_with_exit_2() {
    let _turn = crate::common::file_turn(file!());
    // Held closed for the test (a freed port may be taken, or be a connect's own local port).
    let closed = netdoctor_lab::ports::ClosedPort::loopback();
    let port = closed.port();
    let o = netdoctor(&["load", &format!("http://127.0.0.1:{port}/"), "-d", "1s"]);
    assert_clean_error(
        &o,
        &format!("error: connect 127.0.0.1:{port}: connection refused"),
    );
    let o = netdoctor(&["connect", &format!("127.0.0.1:{port}"), "-n", "3"]);
    assert_clean_error(
        &o,
        "connection refused (ECONNREFUSED): all 3 connects failed",
    );
    let o = netdoctor(&["load", "http://[::1/"]);
    assert_clean_error(&o, "invalid URL");
    let o = netdoctor(&["load", "ftp://127.0.0.1/"]);
    assert_clean_error(&o, "scheme 'ftp'");
    for (args, needle) in [
        (
            &["load", "-c", "0", "http://127.0.0.1:1/"][..],
            "at least 1",
        ),
        (
            &["load", "-t", "0", "http://127.0.0.1:1/"][..],
            "at least 1",
        ),
        (&["load", "-c", "-5", "http://127.0.0.1:1/"][..], "-5"),
        (
            &["load", "-d", "0s", "http://127.0.0.1:1/"][..],
            "greater than zero",
        ),
        (
            &["load", "-R", "0", "http://127.0.0.1:1/"][..],
            "greater than zero",
        ),
        (&["load", "-R", "-3", "http://127.0.0.1:1/"][..], "-3"),
        (
            &["load", "-H", "nocolon", "http://127.0.0.1:1/"][..],
            "Name: value",
        ),
        (&["connect", "127.0.0.1:1", "-n", "0"][..], "at least 1"),
        (&["connect", "127.0.0.1:1", "-c", "0"][..], "at least 1"),
        (&["connect", "127.0.0.1"][..], "HOST:PORT"),
        (&["connect", "127.0.0.1:99999"][..], "1..65535"),
    ] {
        let o = netdoctor(args);
        assert_clean_error(&o, needle);
    }
}

/// Ctrl-C ends a long run early and still reports what was measured.
#[test]
fn sigint_ends_the_run_with_a_report() {
    let _turn = crate::common::file_turn(file!());
    let server = Server::start(Duration::ZERO);
    let child = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args([
            "load",
            &server.url("/"),
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "60s",
            "--json",
        ])
        .env("NETDOCTOR_QUIET", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn netdoctor");
    // Ready signal: the server has answered requests of this run (bounded: 20 s).
    let t0 = std::time::Instant::now();
    while server.requests() < 100 && t0.elapsed() < Duration::from_secs(20) {
        std::thread::yield_now();
    }
    assert!(server.requests() >= 100, "the load did not start");
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the PID of the child this test spawned and has not waited for yet.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    let v = json(&o);
    assert!(v["requests"].as_u64().unwrap() >= 100);
    assert!(v["duration_s"].as_f64().unwrap() < 30.0, "{v}");
}

/// HTTP/2 through the CLI: `--http2` on an http:// URL is h2c with prior knowledge, the
/// terminal report names the protocol and the JSON has the protocol and the HTTP/2 counts
/// (schema-checked); `https://` picks h2 by ALPN without a flag.
#[test]
fn load_http2_prints_the_protocol_and_matches_the_schema() {
    let _turn = crate::common::file_turn(file!());
    use netdoctor_lab::tls_nginx::{TlsNginx, TlsNginxConfig, TlsNginxError};
    let n = match TlsNginx::start(&TlsNginxConfig {
        http2: true,
        keepalive_requests: Some(100),
        ..TlsNginxConfig::default()
    }) {
        Ok(n) => n,
        Err(TlsNginxError::Missing(tool)) => {
            eprintln!("skipped: needs {tool} (apt-get install nginx-light openssl)");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let url = format!("http://{}/", n.http);
    let args = ["-c", "2", "-t", "1", "-d", "400ms", "--streams", "4"];
    let o = netdoctor(&[&["load", &url, "--http2", "--json"][..], &args[..]].concat());
    let v = json(&o);
    assert_schema(&v, netdoctor_load::LOAD_SCHEMA_JSON);
    assert_eq!(v["protocol"], "h2c");
    assert_eq!(v["h2"]["streams"], 4);
    assert!(
        v["h2"]["goaway"]["NO_ERROR"].as_u64().unwrap_or(0) > 0,
        "{v}"
    );
    assert_eq!(v["errors"]["status"], 0);

    let o = netdoctor(&[&["load", &n.https_url(), "-k"][..], &args[..]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("protocol h2, 4 concurrent streams per connection"),
        "{text}"
    );

    // nginx sends its SETTINGS right after its TLS Finished, so they can arrive with it and wait
    // in rustls when the handshake ends. The first read after the handshake must still look at
    // the socket: it once stopped at that buffered plaintext, the response's edge was spent,
    // and about half of the one-connection runs against a busy nginx (load average 18) completed
    // no request at all. These runs guard the path; on an idle machine the race is rare, so
    // they do not reproduce it reliably.
    for round in 0..8 {
        let o = netdoctor(&[
            "load",
            &n.https_url(),
            "-k",
            "-c",
            "1",
            "-t",
            "1",
            "-d",
            "250ms",
            "--json",
        ]);
        let v = json(&o);
        assert!(v["requests"].as_u64().unwrap() > 0, "round {round}: {v}");
    }

    // gRPC is HTTP/2 only: asking for HTTP/1.1 is a usage error before anything is sent.
    let o = netdoctor(&[&["load", "grpc://127.0.0.1:1", "--http1.1"][..], &args[..]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("gRPC runs over HTTP/2 only"),
        "{}",
        stderr(&o)
    );
}

//! Failed requests make a run a problem (or inconclusive when the load generator itself was the
//! limit), with the real binary against small servers on loopback.

use crate::common;
use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// A keep-alive HTTP/1.1 server on 127.0.0.1 that answers `status(n)` to its n-th request.
struct Server {
    url: String,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(status: fn(u64) -> u16) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", l.local_addr().unwrap());
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let s = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((c, _)) => {
                        let (s, count) = (Arc::clone(&s), Arc::clone(&count));
                        std::thread::spawn(move || serve(c, status, &count, &s));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server { url, stop }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(mut c: TcpStream, status: fn(u64) -> u16, count: &AtomicU64, stop: &AtomicBool) {
    let _ = c.set_nodelay(true);
    let _ = c.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        match c.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => return,
        }
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            let code = status(count.fetch_add(1, Ordering::Relaxed));
            let body = "ok\n";
            let resp = format!(
                "HTTP/1.1 {code} X\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n{body}",
                body.len()
            );
            if c.write_all(resp.as_bytes()).is_err() {
                return;
            }
        }
    }
}

fn diagnose(url: &str, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["diagnose", "--no-capture", "-d", "1s", "-c", "4", "--json"];
    args.extend_from_slice(extra);
    args.push(url);
    let out = netdoctor(&args);
    let v = json(&out);
    assert_schema(&v);
    (out.status.code().unwrap(), v)
}

fn http_errors(v: &serde_json::Value) -> &serde_json::Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "http_errors")
        .unwrap_or_else(|| panic!("no http_errors: {v:#}"))
}

#[test]
fn a_path_that_404s_is_a_problem_on_the_client_side() {
    let srv = Server::start(|_| 404);
    let (code, v) = diagnose(&srv.url, &[]);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["verdict"], "problem");
    let f = http_errors(&v);
    assert_eq!(f["side"], "client");
    assert_eq!(f["severity"], "critical");
    assert!(f["summary"].as_str().unwrap().contains("404"), "{f:#}");
}

#[test]
fn a_fraction_of_503s_is_the_servers_with_that_fraction() {
    // Every 20th request: 5 %.
    let srv = Server::start(|n| if n % 20 == 19 { 503 } else { 200 });
    let (code, v) = diagnose(&srv.url, &[]);
    assert_eq!(code, 1, "{v:#}");
    let f = http_errors(&v);
    assert_eq!(f["side"], "server");
    let share = f["impact"]["affected_fraction"].as_f64().unwrap();
    assert!((0.03..0.07).contains(&share), "{share}");
}

#[test]
fn a_load_generator_out_of_file_descriptors_is_not_healthy_and_says_why() {
    let srv = Server::start(|_| 200);
    let bin = env!("CARGO_BIN_EXE_netdoctor");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 64 && exec {bin} diagnose --no-capture -d 1s -c 200 --json {}",
            srv.url
        ))
        .env("NETDOCTOR_QUIET", "1")
        .output()
        .unwrap();
    let v = json(&out);
    assert_schema(&v);
    assert_ne!(v["verdict"], "healthy", "{v:#}");
    let f = http_errors(&v);
    assert_eq!(f["side"], "host", "{f:#}");
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("own load generator"),
        "{f:#}"
    );
    let reasons: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "verdict")
        .filter_map(|c| c["reason"].as_str())
        .collect();
    // Nothing above info is the server's (or the network's). The load opened a connection per request, so the
    // keep-alive probe times what a new connection costs: `short_connections` on the client's
    // side, info or warning by that timing (a busy machine gave both). At info the verdict is
    // inconclusive and names the load generator; at warning the problem is the client's own
    // (the verdict then lists the findings only).
    let above_info: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert!(
        above_info
            .iter()
            .all(|f| f["side"] == "client" || f["side"] == "host"),
        "{above_info:#?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("load generator"))
            || (v["verdict"] == "problem" && !above_info.is_empty()),
        "{reasons:?} {v:#}"
    );
}

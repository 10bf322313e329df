//! A server that answers at once but streams its body slowly (chunked, first byte in under a
//! millisecond, the last 200 ms later) is a slow server, not a healthy one whose time went to
//! "transfer": `slow_server_processing` names the time after the first byte. Its look-alikes,
//! diagnosed from the same client namespace, are told apart:
//! - the same server taking 200 ms before its first byte: `slow_server_processing` that says
//!   the start was slow (not the body);
//! - the same stream written with Nagle on (TCP_NODELAY off): `nagle_delayed_ack` stays the
//!   first finding;
//! - a 200 KB answer written at once behind a token bucket on the server's egress: its
//!   segments arrive spread out too, but the server's TCP timestamps say they left together
//!   (and waited in the queue): no server time, no `slow_server_processing`.
//!
//!
//! Also a rate limiter (nginx `limit_req`, 50 r/s) that answers 429: `http_errors` says a rate
//! limit turned the load away (a warning, and `--rate` in the fix); the same limiter answering
//! its default 503 stays the server's errors (the status alone cannot tell it from an
//! overloaded backend). A URL that only answers a 301 redirect is not called healthy (the
//! redirect was timed, not the page: the verdict is inconclusive and says so); the page it
//! points to, on the same nginx, is.
//!
//! One python3 HTTP server (ports 19410 and 19411) and one nginx (19412-19414, in namespaces `nd-ex-sb<pid>-*` this test
//! creates and removes on drop, also on failure).

use crate::common::*;
use netdoctor_lab::hostcases::{HOST_SERVER_IP, HostLab};
use serde_json::Value;
use std::time::{Duration, Instant};

const SERVER: &str = r#"
import socketserver, sys, time
from http.server import BaseHTTPRequestHandler
NODELAY = sys.argv[2] == "nodelay"
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        if NODELAY: self.connection.setsockopt(6, 1, 1)
        if self.path == "/stream":
            self.send_response(200); self.send_header("Transfer-Encoding", "chunked"); self.end_headers()
            for i in range(4):
                self.wfile.write(b"3e8\r\n" + b"x" * 1000 + b"\r\n"); time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path == "/slow":
            time.sleep(0.2)
        body = b"y" * (200000 if self.path == "/big" else 4000)
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True; allow_reuse_address = True; request_queue_size = 128
S((sys.argv[3], int(sys.argv[1])), H).serve_forever()
"#;

fn diagnose(lab: &HostLab, tag: &str, port: u16, path: &str) -> Value {
    let url = format!("http://{HOST_SERVER_IP}:{port}{path}");
    diagnose_json(
        tag,
        &url,
        &["--netns", lab.client_netns(), "-c", "8", "-d", "3s"],
    )
}

fn server_p50(r: &Value) -> f64 {
    r["measurements"]["capture"]["exchanges"]["server_time_ms"]["p50"]
        .as_f64()
        .unwrap()
}

#[test]
fn a_body_streamed_slowly_is_the_servers_time_and_its_look_alikes_are_not() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    if !netdoctor_lab::tools::have(&[("python3", "python3"), ("tc", "iproute2")]) {
        return;
    }
    let name = format!("nd-ex-sb{}", std::process::id());
    let mut lab = HostLab::create(&name, false).expect("create netns");
    let srv = lab.server_netns().to_string();
    let dir = TempDir(tempdir("slowbody"));
    let script = dir.0.join("server.py");
    std::fs::write(&script, SERVER).unwrap();
    for (port, mode) in [(19410u16, "nodelay"), (19411, "nagle")] {
        let child = lab
            .command(&srv, "python3")
            .unwrap()
            .arg(&script)
            .args([&port.to_string(), mode, &HOST_SERVER_IP.to_string()])
            .spawn()
            .expect("start python3");
        lab.keep_child(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !lab
            .in_ns(&srv, || {
                std::net::TcpStream::connect_timeout(
                    &(HOST_SERVER_IP, port).into(),
                    Duration::from_millis(300),
                )
                .is_ok()
            })
            .unwrap()
        {
            assert!(Instant::now() < deadline, "the server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    if netdoctor_lab::tools::have(&[("nginx", "nginx-light")]) {
        let d = dir.0.display();
        let ip = HOST_SERVER_IP;
        std::fs::write(dir.0.join("index.html"), "ok\n").unwrap();
        std::fs::write(
            dir.0.join("nginx.conf"),
            format!(
                "daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid; error_log {d}/err.log;\n\
                 events {{ worker_connections 1024; }}\n\
                 http {{ access_log off; limit_req_zone $server_addr zone=one:1m rate=50r/s;\n\
                 server {{ listen {ip}:19412; root {d}; location / {{ limit_req zone=one burst=5 nodelay; limit_req_status 429; }} }}\n\
                 server {{ listen {ip}:19413; root {d}; location / {{ limit_req zone=one burst=5 nodelay; }} }}\n\
                 server {{ listen {ip}:19414; root {d}; location = /old {{ return 301 /; }} }} }}\n"
            ),
        )
        .unwrap();
        let nginx = lab
            .command(&srv, "nginx")
            .unwrap()
            .args([
                "-c",
                &format!("{d}/nginx.conf"),
                "-e",
                &format!("{d}/err.log"),
            ])
            .spawn()
            .expect("start nginx");
        lab.keep_child(nginx);
        std::thread::sleep(Duration::from_millis(500));
        let r = diagnose(&lab, "429", 19412, "/");
        let f = finding(&r, "http_errors").expect("http_errors");
        assert_eq!(
            (&f["severity"], &f["side"]),
            (&"warning".into(), &"server".into())
        );
        assert!(f["summary"].as_str().unwrap().contains("rate limit"), "{f}");
        assert!(f["fix"].as_str().unwrap().contains("--rate"), "{f}");
        let r = diagnose(&lab, "503", 19413, "/");
        let f = finding(&r, "http_errors").expect("http_errors");
        assert_eq!(
            (&f["severity"], &f["side"]),
            (&"critical".into(), &"server".into())
        );
        assert!(f["summary"].as_str().unwrap().contains("503"), "{f}");
        // A URL that only redirects: what was timed is the 301, not the page; the page
        // itself, on the same server, is healthy.
        let r = diagnose(&lab, "301", 19414, "/old");
        assert_eq!(r["verdict"], "inconclusive", "{}", r["verdict"]);
        let (status, reason) = check(&r, "verdict");
        assert_eq!(status, "skipped");
        assert!(
            reason.contains("redirects") && reason.contains("301"),
            "{reason}"
        );
        let r = diagnose(&lab, "page", 19414, "/");
        assert_eq!(r["verdict"], "healthy", "{}", r["verdict"]);
    } else {
        eprintln!("rate limit part skipped: needs nginx (apt-get install nginx-light)");
    }

    // The body streamed slowly: the server's time, after its first byte.
    let r = diagnose(&lab, "stream", 19410, "/stream");
    assert_ne!(r["verdict"], "healthy", "{}", r["verdict"]);
    let f = finding(&r, "slow_server_processing").expect("slow_server_processing");
    assert_eq!(f["side"], "server");
    let s = f["summary"].as_str().unwrap();
    assert!(s.contains("after its first byte"), "{s}");
    assert!(server_p50(&r) >= 100.0, "server time {}", server_p50(&r));
    let b = &r["measurements"]["capture"]["exchanges"]["breakdown_p50_ms"];
    assert!(
        b["server"].as_f64().unwrap() > b["transfer"].as_f64().unwrap(),
        "{b}"
    );

    // The same wait before the first byte: slow to start, not a slow body.
    let r = diagnose(&lab, "first-byte", 19410, "/slow");
    let f = finding(&r, "slow_server_processing").expect("slow_server_processing");
    let s = f["summary"].as_str().unwrap();
    assert!(s.contains("to start answering"), "{s}");

    // The stream with Nagle on: the delayed ACK stalls stay the first story.
    let r = diagnose(&lab, "nagle", 19411, "/stream");
    assert_eq!(
        r["findings"][0]["id"], "nagle_delayed_ack",
        "{}",
        r["findings"]
    );

    // A whole answer written at once, spread on the way by a token bucket: not server time.
    let st = lab
        .command(&srv, "tc")
        .unwrap()
        .args([
            "qdisc", "add", "dev", "h-srv", "root", "tbf", "rate", "20mbit", "burst", "16kb",
            "limit", "3000000",
        ])
        .status()
        .expect("run tc");
    assert!(st.success(), "tc failed");
    let r = diagnose(&lab, "shaper", 19410, "/big");
    assert!(
        finding(&r, "slow_server_processing").is_none(),
        "{}",
        r["findings"]
    );
    assert!(server_p50(&r) < 10.0, "server time {}", server_p50(&r));
}

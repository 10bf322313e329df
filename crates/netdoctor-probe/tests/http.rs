//! HTTP timing and resolution against local test servers (plain std TcpListener threads).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netdoctor_probe::{HttpProbeConfig, ProbeError, http_timing, resolve};

/// Serves one connection: reads the request head, hands it to the test through the join
/// handle, then writes `parts` with `pause` before each part.
fn serve_once(parts: Vec<(Duration, Vec<u8>)>) -> (SocketAddr, JoinHandle<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut req = Vec::new();
        let mut b = [0u8; 1024];
        while !req.ends_with(b"\r\n\r\n") {
            let n = s.read(&mut b).unwrap();
            assert!(n > 0, "client closed before the end of the request");
            req.extend_from_slice(&b[..n]);
        }
        s.set_nodelay(true).unwrap();
        for (pause, bytes) in parts {
            std::thread::sleep(pause); // the behaviour under test, not a wait for readiness
            s.write_all(&bytes).unwrap();
        }
        String::from_utf8(req).unwrap()
    });
    (addr, h)
}

fn now(bytes: &[u8]) -> (Duration, Vec<u8>) {
    (Duration::ZERO, bytes.to_vec())
}

fn cfg(host: &str, path: &str) -> HttpProbeConfig {
    HttpProbeConfig {
        host: host.into(),
        path: path.into(),
        timeout: Duration::from_secs(5),
        connect_timeout: None,
        tls: None,
        ..Default::default()
    }
}

#[test]
fn content_length_response() {
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nServer: t\r\n\r\n";
    let (addr, server) = serve_once(vec![now(head), now(b"hello"), now(b" world")]);
    let t = http_timing(addr, &cfg("example.test", "/a?b=c")).unwrap();
    let req = server.join().unwrap();
    assert_eq!(
        req,
        "GET /a?b=c HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\
         User-Agent: netdoctor/0.1\r\n\r\n"
    );
    assert_eq!(t.status, 200);
    assert_eq!(t.header_bytes, head.len() as u64);
    assert_eq!(t.body_bytes, 11);
    assert!(t.connect_ms >= 0.0 && t.connect_ms <= t.total_ms, "{t:?}");
    assert_eq!(t.tls_ms, None, "plain HTTP has no TLS handshake");
    assert!(t.ttfb_ms <= t.total_ms, "{t:?}");
}

#[test]
fn chunked_response_with_trailer() {
    let head = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n";
    let (addr, server) = serve_once(vec![
        now(head),
        now(b"5\r\nhel"),
        now(b"lo\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n"),
        now(b"0\r\nX-Trailer: 1\r\n\r\n"),
    ]);
    let t = http_timing(addr, &cfg("", "/")).unwrap();
    let req = server.join().unwrap();
    assert!(req.contains(&format!("\r\nHost: {addr}\r\n")), "{req}");
    assert_eq!(t.status, 404);
    assert_eq!(t.header_bytes, head.len() as u64);
    assert_eq!(t.body_bytes, 5 + 26);
}

#[test]
fn body_until_close_and_100_continue_skipped() {
    let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
    let head = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n";
    let body = vec![b'x'; 100_000];
    let (addr, server) = serve_once(vec![now(interim), now(head), now(&body)]);
    let t = http_timing(addr, &cfg("h", "/big")).unwrap();
    server.join().unwrap();
    assert_eq!(t.status, 200);
    assert_eq!(t.header_bytes, (interim.len() + head.len()) as u64);
    assert_eq!(t.body_bytes, 100_000);
}

#[test]
fn delayed_first_byte_shows_in_ttfb() {
    let (addr, server) = serve_once(vec![(
        Duration::from_millis(50),
        b"HTTP/1.1 204 No Content\r\n\r\n".to_vec(),
    )]);
    let t = http_timing(addr, &cfg("h", "/slow")).unwrap();
    server.join().unwrap();
    assert_eq!((t.status, t.body_bytes), (204, 0));
    assert!(t.ttfb_ms >= 50.0, "{t:?}");
    // Cumulative like curl's time_starttransfer: connect + request + waiting.
    assert!(t.first_byte_ms >= t.connect_ms + t.ttfb_ms - 0.01, "{t:?}");
    assert!(t.first_byte_ms <= t.total_ms, "{t:?}");
    assert!(t.total_ms >= t.ttfb_ms, "{t:?}");
    assert!(t.ttfb_ms < 5_000.0, "{t:?}"); // sanity only
}

#[test]
fn truncated_body_is_an_http_error() {
    let (addr, server) = serve_once(vec![now(
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
    )]);
    let err = http_timing(addr, &cfg("h", "/")).unwrap_err();
    server.join().unwrap();
    assert!(matches!(err, ProbeError::Http { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&addr.to_string()) && msg.contains("3 of 10"),
        "{msg}"
    );
}

#[test]
fn garbage_is_an_http_error() {
    let (addr, server) = serve_once(vec![now(b"SSH-2.0-OpenSSH\r\n\r\n")]);
    let err = http_timing(addr, &cfg("h", "/")).unwrap_err();
    server.join().unwrap();
    assert!(matches!(err, ProbeError::Http { .. }), "{err:?}");
}

#[test]
fn silent_server_times_out() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap(); // accepts in the backlog, never answers
    let addr = l.local_addr().unwrap();
    let mut c = cfg("h", "/");
    c.timeout = Duration::from_millis(200);
    let start = Instant::now();
    let err = http_timing(addr, &c).unwrap_err();
    assert!(
        matches!(err, ProbeError::Timeout { op: "read", addr: a } if a == addr),
        "{err:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(10)); // sanity only
    assert_eq!(err.to_string(), format!("read {addr}: timed out"));
}

#[test]
fn refused_names_the_address() {
    // Held, not merely freed: a freed port may be taken, or be a connect's own local port.
    let closed = netdoctor_lab::ports::ClosedPort::loopback();
    let addr = closed.addr();
    let err = http_timing(addr, &cfg("h", "/")).unwrap_err();
    assert!(
        matches!(err, ProbeError::Refused { addr: a } if a == addr),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("connect {addr}: connection refused")
    );
}

#[test]
fn header_injection_is_rejected_before_connecting() {
    let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let err = http_timing(addr, &cfg("h\r\nX: y", "/")).unwrap_err();
    assert!(matches!(err, ProbeError::Http { .. }), "{err:?}");
}

#[test]
fn resolve_unknown_host_names_it() {
    let err = resolve("nosuch.invalid", 80).unwrap_err();
    assert!(matches!(err, ProbeError::Resolve { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with("resolve nosuch.invalid: "), "{msg}");
    assert!(msg.len() > "resolve nosuch.invalid: ".len(), "{msg}");
}

#[test]
fn resolve_literals_and_localhost() {
    assert_eq!(
        resolve("127.0.0.1", 80).unwrap(),
        vec!["127.0.0.1:80".parse().unwrap()]
    );
    assert_eq!(
        resolve("[::1]", 443).unwrap(),
        vec!["[::1]:443".parse().unwrap()]
    );
    let local = resolve("localhost", 8080).unwrap();
    assert!(
        !local.is_empty()
            && local
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 8080)
    );
    assert!(resolve("", 80).is_err());
}

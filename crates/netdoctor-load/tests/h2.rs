//! HTTP/2 load against real servers: Debian's nginx with `listen ... http2` (h2 by ALPN on its
//! TLS port, h2c with prior knowledge on its plain port; `netdoctor_lab::tls_nginx`), and a
//! small gRPC server on Debian's python3-grpcio (`tests/data/grpc_server.py`). Each test skips
//! with one line when its server's tools are missing.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use netdoctor_lab::tls_nginx::{TlsNginx, TlsNginxConfig, TlsNginxError};
use netdoctor_load::{LoadConfig, LoadResult, Protocol, run};

fn nginx(cfg: &TlsNginxConfig) -> Option<TlsNginx> {
    match TlsNginx::start(cfg) {
        Ok(n) => Some(n),
        Err(TlsNginxError::Missing(tool)) => {
            eprintln!("skipped: needs {tool} (apt-get install nginx-light openssl)");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn h2_nginx() -> Option<TlsNginx> {
    nginx(&TlsNginxConfig {
        http2: true,
        ..TlsNginxConfig::default()
    })
}

fn config(url: &str, connections: usize, streams: usize, ms: u64) -> LoadConfig {
    let mut cfg = LoadConfig::from_url(url, true).unwrap();
    cfg.connections = connections;
    cfg.streams = streams;
    cfg.threads = 1;
    cfg.duration = Duration::from_millis(ms);
    cfg.timeout = Duration::from_secs(2);
    cfg
}

fn go(cfg: &LoadConfig) -> LoadResult {
    run(cfg, &AtomicBool::new(false), &mut |_| {}).unwrap()
}

fn assert_clean(r: &LoadResult) {
    assert!(r.requests > 100, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?} {:?}", r.errors, r.first_error);
    assert_eq!(r.status.get(&200), Some(&r.requests), "{:?}", r.status);
}

#[test]
fn h2_over_tls_is_chosen_by_alpn_and_multiplexes() {
    let Some(n) = h2_nginx() else { return };
    let r = go(&config(&n.https_url(), 4, 10, 600));
    assert_eq!(r.protocol.as_deref(), Some("h2"));
    assert_clean(&r);
    let h2 = r.h2.as_ref().expect("h2 counts");
    assert_eq!(h2.streams, 10);
    // nginx's default http2_max_concurrent_streams.
    assert_eq!(h2.server_max_streams, Some(128));
    // Every response carries the page (HEADERS + DATA bytes are counted).
    assert!(r.bytes_read >= r.requests * n.page_bytes as u64);

    // The same server, HTTP/1.1 asked for: ALPN offers only http/1.1 and nginx takes it.
    let mut cfg = config(&n.https_url(), 4, 1, 300);
    cfg.protocol = Protocol::Http1;
    let r = go(&cfg);
    assert_eq!(r.protocol.as_deref(), Some("http/1.1"));
    assert_clean(&r);
    assert!(r.h2.is_none());
}

#[test]
fn tls_server_without_h2_falls_back_to_http1_or_says_why() {
    let Some(n) = nginx(&TlsNginxConfig::default()) else {
        return;
    };
    let r = go(&config(&n.https_url(), 2, 10, 300));
    assert_eq!(r.protocol.as_deref(), Some("http/1.1"));
    assert_clean(&r);

    // --http2 against it: every connection fails its handshake with the reason.
    let mut cfg = config(&n.https_url(), 2, 10, 300);
    cfg.protocol = Protocol::Http2;
    let r = go(&cfg);
    assert_eq!(r.requests, 0);
    assert!(r.errors.connect > 0, "{r:?}");
    let e = r.first_error.unwrap_or_default();
    assert!(e.contains("not h2") || e.contains("tls handshake"), "{e}");
}

#[test]
fn h2c_prior_knowledge_with_goaway_and_constant_rate() {
    // nginx ends each connection with GOAWAY (NO_ERROR) after 50 requests: the load replaces
    // it and retries the streams the server did not take, so no request fails.
    let Some(n) = nginx(&TlsNginxConfig {
        http2: true,
        keepalive_requests: Some(50),
        ..TlsNginxConfig::default()
    }) else {
        return;
    };
    let url = format!("http://{}/", n.http);
    let mut cfg = config(&url, 4, 8, 600);
    cfg.protocol = Protocol::Http2;
    let r = go(&cfg);
    assert_eq!(r.protocol.as_deref(), Some("h2c"));
    assert_clean(&r);
    let h2 = r.h2.as_ref().unwrap();
    let goaways = h2.goaway.get("NO_ERROR").copied().unwrap_or(0);
    assert!(
        goaways * 50 + 4 * 50 >= r.requests,
        "{h2:?} for {} requests",
        r.requests
    );
    assert!(r.connects > 4, "{r:?}");

    // Constant rate: 400 req/s over 4 × 8 streams for 1 s.
    let mut cfg = config(&url, 4, 8, 1000);
    cfg.protocol = Protocol::Http2;
    cfg.rate = Some(400.0);
    let r = go(&cfg);
    // At least three quarters of the 400 due (a busy machine holds the client back).
    assert!(
        (300..=440).contains(&r.requests),
        "{} requests at 400/s for 1 s",
        r.requests
    );
    assert_eq!(r.errors.total(), 0, "{:?}", r.first_error);

    // A missing page: errors by HTTP status, as over HTTP/1.1.
    let mut cfg = config(&format!("http://{}/missing", n.http), 2, 4, 300);
    cfg.protocol = Protocol::Http2;
    let r = go(&cfg);
    assert!(r.requests > 10);
    assert_eq!(r.errors.status, r.requests);
    assert_eq!(r.status.get(&404), Some(&r.requests));
}

/// The gRPC test server (python3-grpcio); stopped by PID on drop.
struct GrpcServer {
    child: Child,
    port: u16,
}

impl GrpcServer {
    fn start() -> Option<GrpcServer> {
        let ok = Command::new("/usr/bin/python3")
            .args(["-c", "import grpc"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: needs python3-grpcio (apt-get install python3-grpcio)");
            return None;
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/grpc_server.py");
        let mut child = Command::new("/usr/bin/python3")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start grpc server");
        let mut line = String::new();
        let out = child.stdout.take().unwrap();
        BufReader::new(out).read_line(&mut line).unwrap();
        let port = line
            .strip_prefix("ready ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("grpc server said {line:?}"));
        Some(GrpcServer { child, port })
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn grpc_health_check_methods_and_status_codes() {
    let Some(g) = GrpcServer::start() else { return };
    let base = format!("grpc://127.0.0.1:{}", g.port);

    // Runs of a second: the Python server on a busy machine answered only 9 requests in
    // 300 ms (p50 60 ms), and the counts below need more.
    // Default: grpc.health.v1.Health/Check.
    let cfg = config(&base, 2, 4, 1000);
    assert!(cfg.grpc);
    assert_eq!(cfg.target.path, "/grpc.health.v1.Health/Check");
    let r = go(&cfg);
    assert_eq!(r.protocol.as_deref(), Some("h2c"));
    assert!(r.requests > 20, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.first_error);
    let h2 = r.h2.as_ref().unwrap();
    assert_eq!(h2.grpc_status.get("OK"), Some(&r.requests), "{h2:?}");

    // Any method, with a request message (the load adds gRPC's 5-byte framing).
    let mut cfg = config(&format!("{base}/test.Echo/Echo"), 1, 2, 1000);
    cfg.body = Some(b"\x0a\x03abc".to_vec());
    let r = go(&cfg);
    assert!(r.requests > 10, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.first_error);
    // Response: HEADERS, DATA (5 + 5 bytes of message), trailers: more than the message.
    assert!(r.bytes_read > r.requests * 10);

    // gRPC errors count like HTTP statuses (the HTTP status is 200).
    let r = go(&config(&format!("{base}/test.Echo/Fail"), 1, 2, 1000));
    assert!(r.requests > 10, "{r:?}");
    assert_eq!(r.errors.status, r.requests);
    assert_eq!(r.status.get(&200), Some(&r.requests));
    let h2 = r.h2.as_ref().unwrap();
    assert_eq!(h2.grpc_status.get("UNAVAILABLE"), Some(&r.requests));
    assert!(
        r.first_error
            .unwrap()
            .contains("gRPC status 14 (UNAVAILABLE)")
    );

    let r = go(&config(&format!("{base}/test.Echo/Missing"), 1, 1, 300));
    assert_eq!(r.errors.status, r.requests);
    assert_eq!(
        r.h2.unwrap().grpc_status.get("UNIMPLEMENTED"),
        Some(&r.requests)
    );
}

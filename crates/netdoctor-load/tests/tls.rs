//! HTTPS load against Debian's nginx with a self-signed certificate on 127.0.0.1
//! (`netdoctor_lab::tls_nginx`; skipped with a message when nginx or openssl is missing), and
//! handshakes that fail against small servers started in the test.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use netdoctor_lab::tls_nginx::{TlsNginx, TlsNginxConfig, TlsNginxError};
use netdoctor_load::{LoadConfig, LoadResult, run};

fn nginx(cfg: &TlsNginxConfig) -> Option<TlsNginx> {
    match TlsNginx::start(cfg) {
        Ok(n) => Some(n),
        Err(TlsNginxError::Missing(tool)) => {
            eprintln!("skipped: {tool} is not installed (apt-get install nginx-light openssl)");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn load(url: &str, insecure: bool, connections: usize, ms: u64) -> LoadResult {
    let mut cfg = LoadConfig::from_url(url, insecure).unwrap();
    cfg.connections = connections;
    cfg.threads = 1;
    cfg.duration = Duration::from_millis(ms);
    cfg.timeout = Duration::from_secs(2);
    run(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap()
}

#[test]
fn https_load_with_insecure_gets_2xx() {
    let Some(n) = nginx(&TlsNginxConfig::default()) else {
        return;
    };
    let r = load(&n.https_url(), true, 8, 500);
    assert!(r.requests > 50, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.first_error);
    assert_eq!(r.status.get(&200), Some(&r.requests), "{:?}", r.status);
    // Decrypted bytes are counted: every response carries the whole page.
    assert!(
        r.bytes_read >= r.requests * n.page_bytes as u64,
        "{} bytes for {} responses",
        r.bytes_read,
        r.requests
    );

    // One connection (and one full or resumed handshake) per request.
    let mut cfg = LoadConfig::from_url(&n.https_url(), true).unwrap();
    cfg.connections = 4;
    cfg.threads = 1;
    cfg.keepalive = false;
    cfg.duration = Duration::from_millis(400);
    let r = run(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(r.requests > 10, "{r:?}");
    assert_eq!(r.errors.total(), 0, "{:?}", r.first_error);
}

/// A reconnection offers the session of an earlier connection and nginx resumes it: a full
/// handshake (ECDSA signature, key exchange) costs the server far more than a resumed one, and
/// nginx closes a keep-alive connection every `keepalive_requests` (1000 by default).
#[test]
fn reconnections_resume_the_tls_session() {
    let Some(n) = nginx(&TlsNginxConfig {
        handshake_log: true,
        ..Default::default()
    }) else {
        return;
    };
    // One connection (and one handshake) per request.
    let mut cfg = LoadConfig::from_url(&n.https_url(), true).unwrap();
    cfg.connections = 4;
    cfg.threads = 1;
    cfg.keepalive = false;
    cfg.duration = Duration::from_millis(400);
    let r = run(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(r.errors.total(), 0, "{:?}", r.first_error);
    let h = n.handshakes().unwrap();
    eprintln!("{} requests, {} connections: {h:?}", r.requests, r.connects);
    assert!(h.full + h.resumed >= 20, "{h:?} for {r:?}");
    // The first connections may be full ones (and, the session cache being the process's, one
    // whose ticket came from another test's nginx); every other one is resumed.
    assert!(
        h.full * 10 <= h.full + h.resumed,
        "{} of {} handshakes were full ones",
        h.full,
        h.full + h.resumed
    );
}

#[test]
fn a_certificate_that_does_not_verify_is_a_connect_error_naming_insecure() {
    let Some(n) = nginx(&TlsNginxConfig::default()) else {
        return;
    };
    let r = load(&n.https_url(), false, 2, 200);
    assert_eq!(r.requests, 0, "{r:?}");
    assert!(r.errors.connect > 0, "{:?}", r.errors);
    assert_eq!(
        r.first_error.as_deref(),
        Some(
            format!(
                "tls handshake with {}: invalid peer certificate: UnknownIssuer (use --insecure \
                 to accept a self-signed certificate)",
                n.https
            )
            .as_str()
        )
    );
}

#[test]
fn plain_http_behind_an_https_url_says_use_http() {
    let Some(n) = nginx(&TlsNginxConfig::default()) else {
        return;
    };
    let r = load(&format!("https://{}/", n.http), true, 2, 200);
    assert_eq!(r.requests, 0, "{r:?}");
    assert!(r.errors.connect > 0, "{:?}", r.errors);
    assert_eq!(
        r.first_error.as_deref(),
        Some(
            format!(
                "tls handshake with {}: the server answered in plain HTTP, not TLS: use http://",
                n.http
            )
            .as_str()
        )
    );
}

/// Accepts connections, reads what the client sends first, then answers with `reply` (maybe
/// nothing) and closes; until stopped.
fn bad_server(reply: &'static [u8]) -> (SocketAddr, Arc<AtomicBool>, JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let h = std::thread::spawn(move || {
        while !s.load(Ordering::SeqCst) {
            match l.accept() {
                Ok((mut c, _)) => {
                    c.set_nonblocking(false).unwrap();
                    c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
                    let mut b = [0u8; 2048];
                    let _ = c.read(&mut b); // the ClientHello
                    let _ = c.write_all(reply);
                }
                // Polling for the stop flag; not a wait for readiness.
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    });
    (addr, stop, h)
}

#[test]
fn failed_handshakes_name_the_reason() {
    for (reply, want) in [
        (
            &b""[..],
            "the server closed the connection during the handshake (is this a TLS port?)",
        ),
        (
            &b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"[..],
            "the server does not speak TLS on this port (received corrupt message of type \
             InvalidContentType)",
        ),
    ] {
        let (addr, stop, h) = bad_server(reply);
        let r = load(&format!("https://{addr}/"), true, 1, 150);
        stop.store(true, Ordering::SeqCst);
        h.join().unwrap();
        assert_eq!(r.requests, 0, "{r:?}");
        assert!(r.errors.connect > 0, "{:?}", r.errors);
        assert_eq!(
            r.first_error.as_deref(),
            Some(format!("tls handshake with {addr}: {want}").as_str())
        );
    }
}

#[test]
fn https_setup_errors() {
    let e = LoadConfig::from_url("https://127.0.0.1:1/", true)
        .map(|_| ())
        .err();
    assert!(e.is_none(), "an https URL is accepted: {e:?}");
    let e = LoadConfig::from_url("ftp://127.0.0.1/", true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid url ftp://127.0.0.1/: scheme 'ftp' is not supported (use http://, https://, grpc:// or grpcs://)"
    );
    // Nothing listens: a connect error, as for plain HTTP (the handshake never starts).
    let r = load("https://127.0.0.1:1/", true, 1, 100);
    assert!(r.errors.connect > 0, "{:?}", r.errors);
    assert_eq!(
        r.first_error.as_deref(),
        Some("connect 127.0.0.1:1: connection refused")
    );
}

/// The reference stall over TLS: with `tcp_nodelay off`, a response nginx writes as several TLS
/// records (`ssl_buffer_size 4k`, 8 KiB page) waits on the client's delayed ACK (~40 ms); with
/// `tcp_nodelay on`, or a page that fits one record, it does not.
#[test]
fn nagle_stall_over_tls_shows_in_load_latency() {
    let multi = |nodelay| TlsNginxConfig {
        tcp_nodelay: nodelay,
        ssl_buffer_size: Some(4096),
        page_bytes: Some(8192),
        ..TlsNginxConfig::default()
    };
    let Some(off) = nginx(&multi(false)) else {
        return;
    };
    let Some(on) = nginx(&multi(true)) else {
        return;
    };
    let Some(small_off) = nginx(&TlsNginxConfig {
        tcp_nodelay: false,
        ..TlsNginxConfig::default()
    }) else {
        return;
    };
    let r_off = load(&off.https_url(), true, 10, 1500);
    let r_on = load(&on.https_url(), true, 10, 1000);
    let r_small = load(&small_off.https_url(), true, 10, 1000);
    for r in [&r_off, &r_on, &r_small] {
        assert_eq!(r.errors.total(), 0, "{:?}", r.first_error);
        assert!(r.requests > 10, "{r:?}");
    }
    let (p_off, p_on, p_small) = (
        r_off.latency_ms.p50,
        r_on.latency_ms.p50,
        r_small.latency_ms.p50,
    );
    eprintln!(
        "p50: multi-record nodelay off {p_off} ms, on {p_on} ms, one record off {p_small} ms"
    );
    assert!(
        p_off >= 30.0,
        "no delayed-ACK stall with nodelay off: {p_off} ms"
    );
    assert!(p_on < 20.0, "stall with nodelay on: {p_on} ms");
    assert!(p_small < 20.0, "stall with a one-record page: {p_small} ms");
}

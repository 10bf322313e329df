//! The one-request probe over HTTPS: against Debian's nginx with a self-signed certificate on
//! 127.0.0.1 (`netdoctor_lab::tls_nginx`; skipped with a message when nginx or openssl is
//! missing), and against small servers that fail the handshake.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use netdoctor_lab::tls_nginx::{TlsNginx, TlsNginxConfig, TlsNginxError};
use netdoctor_load::TlsOptions;
use netdoctor_probe::{CertificateProblem, Failure, HttpProbeConfig, ProbeError, http_timing};

fn nginx() -> Option<TlsNginx> {
    match TlsNginx::start(&TlsNginxConfig::default()) {
        Ok(n) => Some(n),
        Err(TlsNginxError::Missing(tool)) => {
            eprintln!("skipped: {tool} is not installed (apt-get install nginx-light openssl)");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn cfg(name: &str, insecure: bool) -> HttpProbeConfig {
    HttpProbeConfig {
        host: String::new(),
        path: "/".into(),
        timeout: Duration::from_secs(5),
        connect_timeout: None,
        tls: Some(TlsOptions {
            server_name: name.into(),
            insecure,
        }),
        ..Default::default()
    }
}

#[test]
fn https_probe_times_the_handshake() {
    let Some(n) = nginx() else {
        return;
    };
    for name in ["127.0.0.1", "localhost"] {
        let t = http_timing(n.https, &cfg(name, true)).unwrap();
        assert_eq!(t.status, 200, "{t:?}");
        assert_eq!(t.body_bytes, n.page_bytes as u64, "{t:?}");
        let tls = t.tls_ms.expect("an https probe reports tls_ms");
        assert!(tls > 0.0, "{t:?}");
        assert!(t.connect_ms + tls + t.ttfb_ms <= t.total_ms + 0.01, "{t:?}");
        // The breakdown reads back from JSON with the new field, and without it.
        let json = serde_json::to_value(&t).unwrap();
        assert!(json["tls_ms"].as_f64().unwrap() > 0.0, "{json}");
    }
    // Plain HTTP on the same nginx: no TLS figure, and none in the JSON.
    let mut plain = cfg("", false);
    plain.tls = None;
    let t = http_timing(n.http, &plain).unwrap();
    assert_eq!((t.status, t.tls_ms), (200, None));
    assert!(serde_json::to_value(&t).unwrap().get("tls_ms").is_none());
}

#[test]
fn https_probe_bad_certificate_and_plain_http() {
    let Some(n) = nginx() else {
        return;
    };
    let e = http_timing(n.https, &cfg("127.0.0.1", false)).unwrap_err();
    assert!(matches!(e, ProbeError::Tls { .. }), "{e:?}");
    assert_eq!(
        e.failure(),
        Failure::Certificate(CertificateProblem::Untrusted)
    );
    assert_eq!(
        e.to_string(),
        format!(
            "tls handshake with {}: invalid peer certificate: UnknownIssuer (use --insecure to \
             accept a self-signed certificate)",
            n.https
        )
    );
    // The certificate is for localhost and 127.0.0.1, not for this name.
    let e = http_timing(n.https, &cfg("example.invalid", false)).unwrap_err();
    assert!(e.to_string().contains("invalid peer certificate"), "{e}");
    assert!(matches!(e.failure(), Failure::Certificate(_)), "{e:?}");
    let e = http_timing(n.http, &cfg("127.0.0.1", true)).unwrap_err();
    assert_eq!(e.failure(), Failure::Other, "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "tls handshake with {}: the server answered in plain HTTP, not TLS: use http://",
            n.http
        )
    );
}

#[test]
fn https_probe_server_that_closes_or_is_silent() {
    // Closes right after the ClientHello.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut b = [0u8; 2048];
        let _ = s.read(&mut b);
    });
    let e = http_timing(addr, &cfg("127.0.0.1", true)).unwrap_err();
    h.join().unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "tls handshake with {addr}: the server closed the connection during the handshake \
             (is this a TLS port?)"
        )
    );

    // Accepts and never answers: the handshake times out at the probe's deadline.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut b = [0u8; 2048];
        let _ = s.read(&mut b);
        // Hold the connection until the client gives up (its close ends this read).
        let _ = s.read(&mut b);
        let _ = s.write_all(b"");
    });
    let mut c = cfg("127.0.0.1", true);
    c.timeout = Duration::from_millis(300);
    let e = http_timing(addr, &c).unwrap_err();
    h.join().unwrap();
    assert!(
        matches!(
            e,
            ProbeError::Timeout {
                op: "tls handshake with",
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!("tls handshake with {addr}: timed out")
    );
}

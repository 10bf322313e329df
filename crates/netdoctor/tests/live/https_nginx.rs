//! `diagnose https://…` against Debian's nginx with TLS (netdoctor-lab's `tls_nginx`: a
//! certificate made by the test with openssl), inside a network namespace this test creates:
//! `tcp_nodelay off` with a response of several TLS records (`ssl_buffer_size 4k`, an 8 KiB
//! page) stalls behind the client's delayed ACK → `nagle_delayed_ack`; `tcp_nodelay on` is
//! healthy. The namespace (and nginx, by PID) is removed on drop, also on failure.

use crate::common::*;
use netdoctor_lab::hostcases::HostLab;
use netdoctor_lab::tls_nginx::{TlsNginx, TlsNginxConfig, TlsNginxError};

/// Runs `diagnose` over HTTPS against a TLS nginx in a fresh namespace; `None` when nginx or
/// openssl is missing (the reason is printed).
fn diagnose_tls(tag: &str, tcp_nodelay: bool) -> Option<(i32, serde_json::Value)> {
    let lab =
        HostLab::create(&format!("ndt-{tag}-{}", std::process::id()), false).expect("create netns");
    let cfg = TlsNginxConfig {
        tcp_nodelay,
        ssl_buffer_size: Some(4096),
        page_bytes: Some(8192),
        ..TlsNginxConfig::default()
    };
    // nginx inherits the namespace of the thread that starts it.
    let nginx = match lab
        .in_ns(lab.server_netns(), move || TlsNginx::start(&cfg))
        .unwrap()
    {
        Ok(n) => n,
        Err(TlsNginxError::Missing(tool)) => {
            eprintln!("skipped: {tool} is not installed (apt-get install nginx-light openssl)");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    let out = netdoctor(&[
        "diagnose",
        &nginx.https_url(),
        "-k",
        "-d",
        "3s",
        "-c",
        "20",
        "--json",
        "--netns",
        lab.server_netns(),
    ]);
    let code = out.status.code().unwrap_or(-1);
    let v = json(&out);
    drop(nginx);
    drop(lab);
    Some((code, v))
}

#[test]
fn https_nginx_with_nagle_and_several_records_stalls_and_with_nodelay_is_healthy() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    let Some((code, v)) = diagnose_tls("off", false) else {
        return;
    };
    assert_schema(&v);
    assert_eq!(v["target"]["protocol"], "https");
    assert_eq!(code, 1, "{v:#}");
    let f = &v["findings"][0];
    assert_eq!(f["id"], "nagle_delayed_ack", "{v:#}");
    assert_eq!(f["side"], "server", "{f:#}");
    let x = &v["measurements"]["capture"]["exchanges"];
    assert_eq!(x["method"], "turns", "{x:#}");
    assert!(
        v["measurements"]["probe"]["http"]["tls_ms"]
            .as_f64()
            .is_some(),
        "{v:#}"
    );

    let Some((code, v)) = diagnose_tls("on", true) else {
        return;
    };
    assert_schema(&v);
    assert_eq!(v["verdict"], "healthy", "{v:#}");
    assert_eq!(code, 0);
}

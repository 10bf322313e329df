//! `diagnose` over HTTP/2 against Debian's nginx with `http2` (netdoctor-lab's `tls_nginx`, in
//! a network namespace this test creates): over TLS, ALPN picks h2 by itself and the probe,
//! the preflight and the load all speak it (`--http1.1` keeps HTTP/1.1); on nginx's plain port
//! (h2c only) `--http2` speaks h2c with prior knowledge, and the capture of the run's own
//! traffic is read as HTTP/2 frames. The namespace and nginx (by PID) are removed on drop.

use crate::common::*;
use netdoctor_lab::hostcases::HostLab;
use netdoctor_lab::tls_nginx::{TlsNginx, TlsNginxConfig, TlsNginxError};
use serde_json::Value;

/// nginx with `http2` on both ports in a fresh namespace; `None` when nginx or openssl is
/// missing (the reason is printed).
fn nginx_h2(tag: &str) -> Option<(HostLab, TlsNginx)> {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return None;
    }
    let lab = HostLab::create(&format!("ndh2-{tag}-{}", std::process::id()), false).expect("netns");
    let cfg = TlsNginxConfig {
        http2: true,
        page_bytes: Some(4096),
        ..TlsNginxConfig::default()
    };
    match lab
        .in_ns(lab.server_netns(), move || TlsNginx::start(&cfg))
        .unwrap()
    {
        Ok(n) => Some((lab, n)),
        Err(TlsNginxError::Missing(tool)) => {
            eprintln!("skipped: needs {tool} (apt-get install nginx-light openssl)");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn diagnose(lab: &HostLab, url: &str, more: &[&str]) -> (i32, Value) {
    let mut args = vec![
        "diagnose",
        url,
        "-d",
        "2s",
        "-c",
        "10",
        "--json",
        "--netns",
        lab.server_netns(),
    ];
    args.extend_from_slice(more);
    let out = netdoctor(&args);
    (out.status.code().unwrap_or(-1), json(&out))
}

fn text(lab: &HostLab, url: &str, more: &[&str]) -> String {
    let mut args = vec![
        "diagnose",
        url,
        "-d",
        "1s",
        "-c",
        "4",
        "--netns",
        lab.server_netns(),
    ];
    args.extend_from_slice(more);
    let out = netdoctor(&args);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every error count of the load is 0.
fn assert_no_errors(m: &Value) {
    let errors = m["load"]["errors"].as_object().expect("load errors");
    assert!(!errors.is_empty(), "{m:#}");
    for (kind, n) in errors {
        assert_eq!(n.as_u64(), Some(0), "{kind}: {m:#}");
    }
}

#[test]
fn https_with_h2_by_alpn_probes_and_loads_over_h2() {
    let _turn = crate::common::file_turn(file!());
    let Some((lab, nginx)) = nginx_h2("tls") else {
        return;
    };
    let url = nginx.https_url();
    let (code, v) = diagnose(&lab, &url, &["-k"]);
    assert_schema(&v);
    let m = &v["measurements"];
    assert_eq!(m["load"]["protocol"], "h2", "{m:#}");
    assert_eq!(m["probe"]["http"]["protocol"], "h2", "{m:#}");
    assert_eq!(m["probe"]["http"]["status"], 200, "{m:#}");
    assert!(m["probe"]["http"]["tls_ms"].as_f64().is_some(), "{m:#}");
    assert!(m["load"]["requests"].as_u64().unwrap() > 100, "{m:#}");
    assert_no_errors(m);
    // TLS-wrapped h2 keeps the record-level view of the capture.
    assert_ne!(m["capture"]["exchanges"]["method"], "h2", "{m:#}");
    assert_eq!(code, 0, "{v:#}");
    // The terminal report names the protocol on the probe's and the load's rows.
    let out = text(&lab, &url, &["-k"]);
    assert!(
        out.lines()
            .any(|l| l.contains("Under load") && l.contains("· h2")),
        "{out}"
    );
    // --http1.1: ALPN offers only http/1.1; the probe and the load speak it.
    let (_, v) = diagnose(&lab, &url, &["-k", "--http1.1"]);
    let m = &v["measurements"];
    assert_eq!(m["load"]["protocol"], "http/1.1", "{m:#}");
    assert!(m["probe"]["http"].get("protocol").is_none(), "{m:#}");
    drop(nginx);
}

#[test]
fn h2c_with_prior_knowledge_is_read_as_http2_frames() {
    let _turn = crate::common::file_turn(file!());
    let Some((lab, nginx)) = nginx_h2("h2c") else {
        return;
    };
    let url = format!("http://{}/", nginx.http);
    // No --snaplen: an h2c run keeps whole segments by itself, and says so.
    let (code, v) = diagnose(&lab, &url, &["--http2"]);
    assert_schema(&v);
    let m = &v["measurements"];
    assert_eq!(m["capture"]["snaplen"], 65535, "{m:#}");
    let capture = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "capture")
        .expect("the capture check");
    assert!(
        capture["reason"]
            .as_str()
            .is_some_and(|r| r.contains("snap length raised from 256 to 65535")),
        "{capture}"
    );
    assert_eq!(m["load"]["protocol"], "h2c", "{m:#}");
    assert_eq!(m["probe"]["http"]["protocol"], "h2c", "{m:#}");
    assert_eq!(m["probe"]["http"]["status"], 200, "{m:#}");
    // The whole page: the probe read DATA to END_STREAM.
    assert_eq!(m["probe"]["http"]["body_bytes"], 4096, "{m:#}");
    assert_no_errors(m);
    let x = &m["capture"]["exchanges"];
    assert_eq!(x["method"], "h2", "{x:#}");
    // Every request the load made is an exchange of the capture (the probes add a few).
    let requests = m["load"]["requests"].as_f64().unwrap();
    let count = x["count"].as_f64().unwrap();
    assert!(count >= 0.9 * requests, "{count} of {requests}: {x:#}");
    assert!(
        m["capture"]["stats"].get("h2_framing_lost").is_none(),
        "{m:#}"
    );
    // Healthy or a finding about the server (nginx's sendfile path was seen to hold h2c
    // answers ~40 ms on this host), never a usage or run error.
    assert!(code == 0 || code == 1, "{v:#}");
    eprintln!(
        "h2c findings: {:?}",
        v["findings"]
            .as_array()
            .map(|f| f.iter().map(|f| f["id"].clone()).collect::<Vec<_>>())
    );
    drop(nginx);
}

#[test]
fn http1_against_an_h2c_only_port_stops_at_the_preflight() {
    let _turn = crate::common::file_turn(file!());
    let Some((lab, nginx)) = nginx_h2("h1") else {
        return;
    };
    // nginx's plain port is `listen … http2;`: it answers HTTP/1.1 with SETTINGS and a
    // GOAWAY. --http1.1, or the cleartext default (HTTP/1.1): an error naming --http2, no
    // report, no load.
    let url = format!("http://{}/", nginx.http);
    for more in [&["--http1.1"][..], &[]] {
        let mut args = vec!["diagnose", &url, "-d", "2s", "--json", "--netns"];
        args.push(lab.server_netns());
        args.extend_from_slice(more);
        let out = netdoctor(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{more:?}: {err}");
        assert!(out.stdout.is_empty(), "{more:?}: a report was written");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("preflight"), "{err}");
        assert!(err.contains("speaks only HTTP/2"), "{err}");
        assert!(err.contains("use --http2"), "{err}");
    }
    // The look-alike: the same nginx over TLS with --http1.1 is served (ALPN), not stopped.
    let (code, v) = diagnose(&lab, &nginx.https_url(), &["-k", "--http1.1"]);
    assert!(code == 0 || code == 1, "{v:#}");
    assert_eq!(v["measurements"]["load"]["protocol"], "http/1.1", "{v:#}");
    drop(nginx);
}

/// A Nagle-on HTTP/2 server (the lab's python3-h2 server with `--nagle`: no TCP_NODELAY,
/// HEADERS and DATA in two writes, so Nagle holds the DATA until the client's delayed ACK)
/// diagnosed over h2c: `nagle_delayed_ack` on the server's side, read from the capture's
/// HTTP/2 streams; the same server with TCP_NODELAY, in the same namespace, has none.
#[test]
fn a_nagle_on_h2_server_is_nagle_delayed_ack_and_a_nodelay_one_is_not() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    let h2 = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import h2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !h2 {
        eprintln!("skipped: needs python3-h2 (apt-get install python3-h2)");
        return;
    }
    let mut lab = HostLab::create(&format!("ndh2n-{}", std::process::id()), false).expect("netns");
    let dir = std::env::temp_dir().join(format!("nd-h2nagle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("h2server.py");
    std::fs::write(&script, netdoctor_lab::h2case::SERVER_PY).unwrap();
    let ip = netdoctor_lab::hostcases::HOST_SERVER_IP;
    let (nagle_port, nodelay_port) = (18471u16, 18472u16);
    for (port, nagle) in [(nagle_port, true), (nodelay_port, false)] {
        let mut cmd = lab.command(lab.server_netns(), "/usr/bin/python3").unwrap();
        cmd.arg(&script)
            .args([
                ip.to_string(),
                port.to_string(),
                "--body".into(),
                "600".into(),
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if nagle {
            cmd.arg("--nagle");
        }
        lab.keep_child(cmd.spawn().expect("start h2server.py"));
        let addr = std::net::SocketAddr::from((ip, port));
        let up = (0..100).any(|_| {
            let ok = lab
                .in_ns(lab.server_netns(), move || {
                    std::net::TcpStream::connect_timeout(
                        &addr,
                        std::time::Duration::from_millis(100),
                    )
                    .is_ok()
                })
                .unwrap();
            if !ok {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            ok
        });
        assert!(up, "h2server.py on {addr} did not listen");
    }
    let (code, v) = diagnose(&lab, &format!("http://{ip}:{nagle_port}/"), &["--http2"]);
    assert_schema(&v);
    let m = &v["measurements"];
    assert_eq!(m["load"]["protocol"], "h2c", "{m:#}");
    assert_eq!(m["capture"]["exchanges"]["method"], "h2", "{m:#}");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "nagle_delayed_ack")
        .unwrap_or_else(|| panic!("no nagle_delayed_ack: {v:#}"));
    assert_eq!(f["side"], "server", "{f:#}");
    assert_eq!(code, 1, "{v:#}");
    let p50 = m["load"]["latency_ms"]["p50"].as_f64().unwrap();
    assert!(p50 >= 30.0, "p50 {p50} ms: {m:#}");

    let (_, v) = diagnose(&lab, &format!("http://{ip}:{nodelay_port}/"), &["--http2"]);
    assert_schema(&v);
    assert_eq!(v["measurements"]["capture"]["exchanges"]["method"], "h2");
    assert!(!ids(&v).contains(&"nagle_delayed_ack".to_string()), "{v:#}");
    let _ = std::fs::remove_dir_all(&dir);
    drop(lab);
}

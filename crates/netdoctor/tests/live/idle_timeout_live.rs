//! A server idle timeout shorter than the client's reuse gap, live: nginx with
//! `keepalive_timeout 1` in a network namespace this test creates (netdoctor-lab's `HostLab`,
//! `nd-idle-<pid>-srv`; nginx on the namespace's 127.0.0.1 ports 19710/19711, stopped by PID and
//! the namespace removed on drop, also when an assertion fails), loaded open-loop at 8
//! requests/s over 40 connections (`--rate 8 -c 40`): each connection waits about 5 s before
//! its next request, nginx closes it after 1 s idle, so every request opens a new connection.
//! The closed-loop keep-alive probe that follows never idles and gets its connections kept.
//! That was told as "ended by the client" (side client); it is the server's idle timeout set
//! shorter than the client's wait (side server, both knobs in the fix). The offline look-alikes
//! are in `crates/netdoctor-core/tests/analysis/idle_timeout.rs`.

use crate::common::*;
use netdoctor_lab::hostcases::HostLab;
use netdoctor_lab::tls_nginx::{TlsNginx, TlsNginxConfig, TlsNginxError};

#[test]
fn an_open_loop_load_that_idles_longer_than_nginx_keepalive_timeout_blames_the_timeout() {
    let _turn = crate::common::file_turn(file!());
    if let Some(why) = lab_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let lab =
        HostLab::create(&format!("nd-idle-{}", std::process::id()), false).expect("create netns");
    let cfg = TlsNginxConfig {
        keepalive_timeout: Some(1),
        ports: Some((19710, 19711)),
        ..TlsNginxConfig::default()
    };
    let n = match lab
        .in_ns(lab.server_netns(), || TlsNginx::start(&cfg))
        .unwrap()
    {
        Ok(n) => n,
        Err(TlsNginxError::Missing(tool)) => {
            eprintln!("skipped: needs {tool} (apt-get install nginx-light openssl)");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let url = format!("http://{}/", n.http);
    let out = netdoctor(&[
        "diagnose",
        url.as_str(),
        "--netns",
        lab.server_netns(),
        "--rate",
        "8",
        "-c",
        "40",
        "-d",
        "8s",
        "--json",
    ]);
    let r = json(&out);
    assert_schema(&r);
    let f = finding(&r, "short_connections").unwrap_or_else(|| panic!("{r:#}"));
    eprintln!("keepalive_timeout 1, --rate 8 -c 40: {}", f["summary"]);
    let summary = f["summary"].as_str().unwrap();
    assert_eq!(f["side"], "server", "{f:#}");
    assert!(summary.contains("s idle"), "{summary}");
    assert!(
        summary.contains("shorter than the client's wait"),
        "{summary}"
    );
    assert!(!summary.contains("ended by the client"), "{summary}");
    let fix = f["fix"].as_str().unwrap();
    assert!(fix.contains("keepalive_timeout"), "{fix}");
    assert!(fix.contains("client's pool idle timeout"), "{fix}");
    let idle = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["probe"] == "idle_timeout")
        .unwrap_or_else(|| panic!("{f:#}"));
    let note = idle["note"].as_str().unwrap();
    // nginx's timer: about 1 s (its median, whatever the machine's load).
    let secs: f64 = note
        .split(" came after ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{note}"));
    assert!((0.9..1.5).contains(&secs), "{note}");
    // The open-loop load's wait between its connect and its scheduled request is the
    // client's own, never setup: setup on loopback is well under a millisecond.
    let setup = f["impact"]["added_latency_ms"].as_f64().unwrap();
    assert!(setup < 50.0, "{f:#}");
}

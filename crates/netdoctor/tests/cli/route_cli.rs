//! `netdoctor trace` and `netdoctor dns` without root: usage errors and a trace to loopback.
//! (Tests that need other addresses run on the route lab: tests/live/route_lab.rs.)

use crate::common;

use std::process::Command;

fn netdoctor(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(args)
        .env("NETDOCTOR_QUIET", "1")
        .output()
        .expect("run netdoctor");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn usage_errors_exit_2_with_one_clear_line() {
    for (args, needle) in [
        (
            &["trace", "127.0.0.1", "--icmp", "-p", "80"][..],
            "-p/--port does not apply to --icmp",
        ),
        (
            &["trace", "::1", "-4"][..],
            "trace ::1: not an IPv4 address",
        ),
        (&["trace", "127.0.0.1", "-6"][..], "not an IPv6 address"),
        (&["trace", "127.0.0.1", "--rounds", "0"][..], "--rounds"),
        (
            &["trace", "127.0.0.1", "--tcp", "--udp"][..],
            "cannot be used with",
        ),
        (&["dns", "a b"][..], "invalid name \"a b\""),
    ] {
        let (code, stdout, stderr) = netdoctor(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: ") && stderr.contains(needle),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn trace_to_a_loopback_listener_is_one_healthy_hop_in_json() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let (code, stdout, stderr) = netdoctor(&[
        "trace",
        "127.0.0.1",
        "-p",
        &port,
        "-n",
        "--rounds",
        "3",
        "--interval",
        "10ms",
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    common::assert_schema(&r);
    assert_eq!(r["command"], "trace");
    assert_eq!(r["verdict"], "healthy");
    let hops = r["measurements"]["trace"]["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 1);
    assert_eq!(hops[0]["addrs"][0]["ip"], "127.0.0.1");
    assert_eq!(
        (hops[0]["sent"].as_u64(), hops[0]["received"].as_u64()),
        (Some(3), Some(3))
    );
}

/// IPv6 loopback is one healthy hop; an IPv4-mapped address is traced over IPv4 (shown as
/// 127.0.0.1).
#[test]
fn trace_over_ipv6_loopback_and_a_mapped_address() {
    for (bind, host, hop) in [
        ("[::1]:0", "::1", "::1"),
        ("127.0.0.1:0", "::ffff:127.0.0.1", "127.0.0.1"),
    ] {
        let listener = std::net::TcpListener::bind(bind).unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        let (code, stdout, stderr) = netdoctor(&[
            "trace",
            host,
            "-p",
            &port,
            "-n",
            "--rounds",
            "2",
            "--interval",
            "10ms",
            "--json",
        ]);
        assert_eq!(code, 0, "{host}: {stderr}");
        let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        common::assert_schema(&r);
        assert_eq!(r["verdict"], "healthy", "{host}: {r}");
        let hops = r["measurements"]["trace"]["hops"].as_array().unwrap();
        assert_eq!(hops.len(), 1, "{host}: {r}");
        assert_eq!(hops[0]["addrs"][0]["ip"], hop, "{host}: {r}");
        assert_eq!(r["measurements"]["trace"]["target"], hop, "{host}: {r}");
    }
}

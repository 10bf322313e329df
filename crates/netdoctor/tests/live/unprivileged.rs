//! Without privileges (as root, the binary is run through `setpriv` as nobody with no
//! capabilities; as any other user, directly): `diagnose` against a loopback server this test
//! starts, and `host`, still work and name each skipped check with the capability it needs.

use crate::common::{assert_schema, is_root, json};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};

/// The binary as an unprivileged user.
fn unprivileged(args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_netdoctor");
    let mut cmd = if is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--inh-caps=-all",
            "--",
            bin,
        ]);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args)
        .env("NETDOCTOR_QUIET", "1")
        .env("NO_COLOR", "1")
        .output()
        .expect("run netdoctor (setpriv from util-linux when root)")
}

/// A loopback HTTP server: one thread per connection, `Connection: close`. Its threads end with
/// the test process.
fn serve() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
                );
            });
        }
    });
    port
}

fn check<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {}", v["checks"]))
}

#[test]
fn diagnose_without_privileges_names_what_it_skipped() {
    let _turn = crate::common::file_turn(file!());
    let port = serve();
    let url = format!("http://127.0.0.1:{port}/");
    let out = unprivileged(&["diagnose", &url, "-d", "1s", "-c", "4", "--json"]);
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 1 | 3)),
        "exit {code:?}: {}",
        crate::common::stderr(&out)
    );
    let v = json(&out);
    assert_schema(&v);
    assert!(v["measurements"]["load"]["requests"].as_u64().unwrap() > 0);
    assert_eq!(check(&v, "load")["status"], "ok");
    // Without the eBPF programs in this build, the bpf check names that instead of the
    // capability.
    let bpf_reason = if netdoctor_bpf::BUILT {
        "CAP_BPF"
    } else {
        "not built"
    };
    for (name, why) in [("capture", "CAP_NET_RAW"), ("bpf", bpf_reason)] {
        let c = check(&v, name);
        assert_eq!(c["status"], "skipped", "{c}");
        assert!(c["reason"].as_str().unwrap().contains(why), "{c}");
    }
    // The host observer runs and says which collector it skipped, and why.
    let host = check(&v, "host");
    assert_eq!(host["status"], "ok", "{host}");
    let reason = host["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("kernel_log skipped"), "{host}");
    assert_eq!(
        reason.matches("needs CAP_SYSLOG").count(),
        1,
        "the capability is named once: {host}"
    );
    assert!(
        check(&v, "syn_probe")["reason"]
            .as_str()
            .unwrap()
            .contains("CAP_NET_RAW")
    );
}

#[test]
fn host_without_privileges_names_what_it_skipped() {
    let _turn = crate::common::file_turn(file!());
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let out = unprivileged(&["host", "--json"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        crate::common::stderr(&out)
    );
    let v = json(&out);
    let kmsg = check(&v, "kernel_log");
    assert_eq!(kmsg["status"], "skipped", "{kmsg}");
    assert!(
        kmsg["reason"].as_str().unwrap().contains("CAP_SYSLOG"),
        "{kmsg}"
    );
    // What needs no privilege is still there: our listener, counters with meanings.
    assert!(
        v["listeners"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["local"] == format!("127.0.0.1:{port}")),
        "{}",
        v["listeners"]
    );
    assert!(!v["counters"].as_array().unwrap().is_empty());
}

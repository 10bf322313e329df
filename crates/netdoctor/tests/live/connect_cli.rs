//! `netdoctor connect` through the real binary: against a listener the test starts on
//! 127.0.0.1, and (as root) inside network namespaces the test creates and removes.

use std::net::TcpListener;
use std::process::{Command, Output};

use crate::common::{
    assert_doc_schema as assert_schema, is_root, json_ok as json, netdoctor, stderr, stdout,
};

#[test]
fn connect_json_counts_every_connect() {
    let _turn = crate::common::file_turn(file!());
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let accept = std::thread::spawn(move || {
        for _ in 0..30 {
            if l.accept().is_err() {
                break;
            }
        }
    });
    let o = netdoctor(&[
        "connect",
        &addr.to_string(),
        "-n",
        "30",
        "-c",
        "3",
        "--json",
    ]);
    let v = json(&o);
    accept.join().unwrap();
    assert_schema(&v, netdoctor_load::CONNECT_SCHEMA_JSON);
    assert_eq!(v["schema"], "netdoctor.connect/v1");
    assert_eq!(v["target"]["address"], addr.to_string());
    assert_eq!(
        (
            v["attempts"].as_u64(),
            v["connected"].as_u64(),
            v["failed"].as_u64()
        ),
        (Some(30), Some(30), Some(0))
    );
    assert_eq!(v["concurrency"], 3);
    assert_eq!(v["syn_retransmit_suspects"], 0);
    assert!(v["errors"].as_object().unwrap().is_empty());
    assert!(v["latency_ms"]["p50"].as_f64().unwrap() > 0.0);
}

/// A network namespace made for one test (loopback up), deleted on drop, also on panic.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("nd-t-cli{}-{tag}", std::process::id());
        let run = |args: &[&str]| {
            let st = Command::new("ip").args(args).status().expect("run ip");
            assert!(st.success(), "ip {args:?}");
        };
        run(&["netns", "add", &name]);
        let ns = Netns(name);
        run(&["-n", &ns.0, "link", "set", "lo", "up"]);
        ns
    }

    fn netdoctor(&self, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.0, env!("CARGO_BIN_EXE_netdoctor")])
            .args(args)
            .env("NETDOCTOR_QUIET", "1")
            .env("NO_COLOR", "1")
            .output()
            .expect("run netdoctor in the namespace")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
fn connect_names_eaddrnotavail_when_local_ports_run_out() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let ns = Netns::new("pr");
    let st = Command::new("ip")
        .args(["netns", "exec", &ns.0, "sysctl", "-q", "-w"])
        .arg("net.ipv4.ip_local_port_range=40000 40003")
        .status()
        .unwrap();
    assert!(st.success());
    // The listener lives in the namespace (created from a thread that joined it).
    let l = netdoctor_lab::in_netns(&ns.0, || TcpListener::bind("127.0.0.1:8080").unwrap())
        .expect("in_netns");
    let o = ns.netdoctor(&["connect", "127.0.0.1:8080", "-n", "40", "-c", "8"]);
    drop(l);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Failures by errno: EADDRNOTAVAIL "), "{out}");
    assert!(out.contains("local ports ran out"), "{out}");
    assert!(out.contains("ip_local_port_range"), "{out}");
}

#[test]
fn connect_shows_syn_retransmit_suspects_on_a_full_listen_queue() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let ns = Netns::new("bl");
    // listen(1) and never accept: once two connections wait, new SYNs are dropped.
    let l = netdoctor_lab::in_netns(&ns.0, || {
        // SAFETY: plain socket syscalls on a descriptor this closure owns; every return value is
        // checked, and the descriptor is closed below by OwnedFd.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(fd >= 0);
            let owned = <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd);
            let sa = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: 8080u16.to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
                },
                sin_zero: [0; 8],
            };
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            assert_eq!(libc::bind(fd, (&raw const sa).cast(), len), 0);
            assert_eq!(libc::listen(fd, 1), 0);
            owned
        }
    })
    .expect("in_netns");
    let o = ns.netdoctor(&[
        "connect",
        "127.0.0.1:8080",
        "-n",
        "8",
        "-c",
        "8",
        "--timeout",
        "1500ms",
        "--json",
    ]);
    drop(l);
    let v = json(&o);
    assert_schema(&v, netdoctor_load::CONNECT_SCHEMA_JSON);
    let suspects = v["syn_retransmit_suspects"].as_u64().unwrap();
    assert!(suspects >= 4, "{v}");
    assert!(v["syn_retransmits"].as_u64().unwrap() >= v["timeouts"].as_u64().unwrap());
    assert_eq!(v["errors"]["timeout"], v["timeouts"]);
}

//! A shaper with a deep queue (bufferbloat): htb 50 Mbit/s with a 5,000-packet pfifo on the
//! server's egress, 16 connections fetching 50 KB from nginx. Nothing is dropped, so the
//! loss-based shaper rule is silent; the story is `shaper_limited` held by a queue: the round
//! trip under load (TCP timestamps echoed by the server's data) far above the idle one, the
//! summed arrivals flat at the rate. Look-alikes, each diagnosed the same way and told apart:
//!
//! - the same deep queue at low load (one connection): no queue builds, healthy;
//! - no shaper, 16 connections: healthy;
//! - a slow server (one request at a time, 4 ms each: its time grows under load, the path's
//!   round trip does not): no `shaper_limited`;
//! - a client whose receive window is small (`tcp_rmem` 8 KB in its namespace): no queue;
//! - a long path without a queue (the route lab's delay bridge, 40 ms idle and loaded):
//!   no `shaper_limited`.
//!
//! (A tbf shaper that drops stays the loss-based `shaper_limited`: `shaper.rs`.) Built in
//! namespaces this test creates (prefix `ndblt` + pid); nginx runs as one process
//! (`master_process off`); everything is removed on drop, also on failure.

use crate::common::*;
use netdoctor_lab::hostcases::{HOST_SERVER_IP, HostLab};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const BODY: usize = 50_000;

/// Waits until `ip:8080` accepts a connection from namespace `ns`.
fn wait_ready(ns: &str, ip: IpAddr) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let ok = netdoctor_lab::in_netns(ns, || {
            std::net::TcpStream::connect_timeout(&(ip, 8080).into(), Duration::from_millis(500))
                .is_ok()
        })
        .unwrap();
        if ok {
            return;
        }
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A server that answers one request at a time, each after 4 ms of work (then the 50 KB at
/// once): its time grows with the load. Stops when the flag is set.
fn slow_server(l: TcpListener, stop: Arc<AtomicBool>) {
    let work = Arc::new(std::sync::Mutex::new(()));
    l.set_nonblocking(true).unwrap();
    let body = Arc::new(site_body(BODY));
    while !stop.load(Ordering::Relaxed) {
        let Ok((mut s, _)) = l.accept() else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let (work, body, stop) = (work.clone(), body.clone(), stop.clone());
        std::thread::spawn(move || {
            let _ = s.set_nonblocking(false);
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0u8; 4096];
            let mut have = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match s.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => have.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
                    Err(_) => return,
                }
                while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                    have.drain(..end + 4);
                    {
                        let _g = work.lock().unwrap();
                        std::thread::sleep(Duration::from_millis(4));
                    }
                    let head = netdoctor_lab::builtin::response_head(body.len());
                    if s.write_all(head.as_bytes()).is_err() || s.write_all(&body).is_err() {
                        return;
                    }
                }
            }
        });
    }
}

/// What to build before the load.
enum Case {
    /// A command run in the server's namespace (a qdisc), or none.
    Nginx(&'static [&'static [&'static str]]),
    /// The slow server, no qdisc.
    Slow,
    /// nginx, and the client's receive buffer at 8 KB.
    SmallWindow,
}

const DEEP_QUEUE: &[&[&str]] = &[
    &[
        "tc", "qdisc", "add", "dev", "h-srv", "root", "handle", "1:", "htb", "default", "10",
        "r2q", "100",
    ],
    &[
        "tc", "class", "add", "dev", "h-srv", "parent", "1:", "classid", "1:10", "htb", "rate",
        "50mbit",
    ],
    &[
        "tc", "qdisc", "add", "dev", "h-srv", "parent", "1:10", "handle", "10:", "pfifo", "limit",
        "5000",
    ],
];

/// `diagnose -c CONNS -d 3s --json` from the client namespace, its findings printed.
fn diagnose(ns: &str, ip: IpAddr, conns: &str, tag: &str) -> Value {
    let url = format!("http://{ip}:8080/big.bin");
    let r = diagnose_json(tag, &url, &["--netns", ns, "-c", conns, "-d", "3s"]);
    let b = &r["measurements"]["capture"]["exchanges"]["breakdown_p50_ms"];
    eprintln!("{tag}: p50 breakdown {b}");
    r
}

fn diagnose_host(tag: &str, case: Case, conns: &str) -> Value {
    let name = format!("ndblt{tag}{}", std::process::id());
    let mut lab = HostLab::create(&name, false).expect("create netns");
    let srv = lab.server_netns().to_string();
    let ip = IpAddr::V4(HOST_SERVER_IP);
    let stop = Arc::new(AtomicBool::new(false));
    let mut slow = None;
    let mut _files = None;
    match &case {
        Case::Nginx(_) | Case::SmallWindow => {
            _files = Some(nginx_serving_file(&mut lab, &name, ip, BODY));
        }
        Case::Slow => {
            let l = lab
                .in_ns(&srv, || TcpListener::bind((HOST_SERVER_IP, 8080)))
                .unwrap()
                .expect("bind the slow server");
            let stop = stop.clone();
            slow = Some(std::thread::spawn(move || slow_server(l, stop)));
        }
    }
    wait_ready(&srv, ip);
    if let Case::Nginx(cmds) = case {
        for c in cmds {
            let st = lab
                .command(&srv, c[0])
                .unwrap()
                .args(&c[1..])
                .status()
                .expect("run tc");
            assert!(st.success(), "{c:?} failed");
        }
    }
    if let Case::SmallWindow = case {
        lab.sysctl(lab.client_netns(), "net.ipv4.tcp_rmem", "4096 8192 8192")
            .expect("set tcp_rmem in the client namespace");
    }
    let r = diagnose(lab.client_netns(), ip, conns, tag);
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = slow {
        let _ = t.join();
    }
    r
}

fn shaper(r: &Value) -> Option<&Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "shaper_limited")
}

/// A number after `key` in `text` ("… a flat 47.6 Mbit/s …").
fn number_after(text: &str, key: &str) -> f64 {
    text.split(key)
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no number after {key:?} in {text}"))
}

#[test]
fn a_deep_queue_behind_a_shaper_is_the_story_and_its_look_alikes_are_not() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    if !netdoctor_lab::tools::have(&[("tc", "iproute2"), ("nginx", "nginx-light")]) {
        return;
    }
    let r = diagnose_host("q", Case::Nginx(DEEP_QUEUE), "16");
    let f = shaper(&r).unwrap_or_else(|| panic!("no shaper_limited: {r:#}"));
    assert_eq!(r["findings"][0]["id"], "shaper_limited", "{r:#}");
    let s = f["summary"].as_str().unwrap();
    assert!(s.contains("deep queue"), "{s}");
    // Its numbers: the rate near the shaper's, the loaded round trip far above the idle one,
    // and the queue the difference of the two.
    let rate = number_after(s, "a flat ");
    assert!((35.0..=52.0).contains(&rate), "rate {rate}: {s}");
    let loaded = number_after(s, "the round trip was ");
    let idle = number_after(s, "against ");
    let queue = number_after(s, "— ");
    assert!(loaded >= 5.0 && loaded >= 4.0 * idle, "{s}");
    assert!((queue - (loaded - idle)).abs() <= 0.11, "{s}");
    // Packets alone place the queue on the path (no drop for eBPF to place it).
    assert_eq!(f["side"], "network", "{f:#}");
    // The breakdown agrees with the verdict's claim: the queue's wait is not server time, the
    // transfer through the rate is most of a typical request.
    let b = &r["measurements"]["capture"]["exchanges"]["breakdown_p50_ms"];
    let (transfer, server, latency) = (
        b["transfer"].as_f64().unwrap(),
        b["server"].as_f64().unwrap(),
        b["latency"].as_f64().unwrap(),
    );
    assert!(transfer >= 0.5 * latency, "{b:#}");
    assert!(server < 0.5 * transfer, "{b:#}");

    // The same deep queue at low load: one connection, no queue of others' data.
    let r = diagnose_host("l", Case::Nginx(DEEP_QUEUE), "1");
    assert!(shaper(&r).is_none(), "{r:#}");
    // No shaper, 16 connections.
    let r = diagnose_host("u", Case::Nginx(&[]), "16");
    assert!(shaper(&r).is_none(), "{r:#}");
    // A slow server: its time grows under load, the path's round trip does not.
    let r = diagnose_host("s", Case::Slow, "16");
    assert!(shaper(&r).is_none(), "{r:#}");
    // A client with a small receive window.
    let r = diagnose_host("w", Case::SmallWindow, "16");
    assert!(shaper(&r).is_none(), "{r:#}");
}

#[test]
fn a_long_path_without_a_queue_is_not_bloat() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    if !netdoctor_lab::tools::have(&[("nginx", "nginx-light")]) {
        return;
    }
    use netdoctor_lab::route_lab::{RouteLab, RouteLabConfig, SERVER_IP};
    let lab = RouteLab::start(&RouteLabConfig {
        one_way_delay: Duration::from_millis(20),
        routers: false,
        ..Default::default()
    })
    .expect("start the route lab without routers");
    let ip = IpAddr::V4(SERVER_IP);
    let (_files, args) = nginx_site(&format!("ndbltr{}", std::process::id()), ip, BODY);
    let mut nginx = std::process::Command::new("ip")
        .args(["netns", "exec", lab.server_netns(), "nginx"])
        .args(&args)
        .spawn()
        .expect("start nginx");
    struct Kill<'a>(&'a mut std::process::Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _k = Kill(&mut nginx);
    wait_ready(lab.server_netns(), ip);
    let r = diagnose(lab.client_netns(), ip, "16", "far");
    assert!(shaper(&r).is_none(), "{r:#}");
    // The look-alike was built: the path's round trip is 40 ms idle, and most of a request.
    let b = &r["measurements"]["capture"]["exchanges"]["breakdown_p50_ms"];
    assert!(b["network"].as_f64().unwrap() >= 30.0, "{b:#}");
}

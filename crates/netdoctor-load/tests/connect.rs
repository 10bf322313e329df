//! The connect benchmark against listeners started in the test: on loopback, and (as root) in
//! network namespaces the test creates and removes: one with a listen queue of 1 that never
//! accepts (SYNs dropped → retransmitted after 1 s), one with 4 local ports (EADDRNOTAVAIL).

use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use netdoctor_load::{ConnectConfig, ConnectResult, LoadError, connect_bench};

fn bench(cfg: &ConnectConfig) -> ConnectResult {
    connect_bench(cfg, &AtomicBool::new(false), &mut |_| {}).expect("connect_bench")
}

#[test]
fn connects_to_a_listener_are_all_counted() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut cfg = ConnectConfig::new(l.local_addr().unwrap());
    cfg.count = 50;
    cfg.concurrency = 4;
    // Accept on a thread so the listen queue never fills.
    let accept = std::thread::spawn(move || {
        for _ in 0..50 {
            if l.accept().is_err() {
                break;
            }
        }
    });
    let r = bench(&cfg);
    accept.join().unwrap();
    assert_eq!((r.attempts, r.connected, r.failed), (50, 50, 0), "{r:?}");
    assert!(r.errors.is_empty() && r.first_error.is_none(), "{r:?}");
    assert_eq!(r.concurrency, 4);
    let l = &r.latency_ms;
    assert!(l.p50 > 0.0 && l.p50 <= l.p99 && l.p99 <= l.max, "{l:?}");
    // Loopback handshakes: no SYN retransmission (generous bound on a noisy machine).
    assert!(l.max < 1000.0, "{l:?}");
    assert_eq!((r.syn_retransmit_suspects, r.syn_retransmits), (0, 0));
    assert!(r.connects_per_s > 0.0);
}

#[test]
fn refused_connects_are_counted_by_errno() {
    // Held, not merely freed: a freed port may be taken, or be a connect's own local port.
    let closed = netdoctor_lab::ports::ClosedPort::loopback();
    let addr = closed.addr();
    let mut cfg = ConnectConfig::new(addr);
    cfg.count = 5;
    cfg.concurrency = 2;
    let r = bench(&cfg);
    assert_eq!((r.connected, r.failed), (0, 5), "{r:?}");
    assert_eq!(r.errors.get("ECONNREFUSED"), Some(&5), "{r:?}");
    assert_eq!(
        r.first_error.as_deref(),
        Some(format!("connect {addr}: connection refused (ECONNREFUSED)").as_str())
    );
}

#[test]
fn zero_counts_are_errors() {
    let mut cfg = ConnectConfig::new("127.0.0.1:1".parse().unwrap());
    cfg.count = 0;
    let e = connect_bench(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(matches!(e, LoadError::InvalidCount), "{e}");
    cfg.count = 1;
    cfg.concurrency = 0;
    let e = connect_bench(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(matches!(e, LoadError::NoConnections), "{e}");
}

fn is_root() -> bool {
    netdoctor_sys::privilege::is_root()
}

/// A network namespace made for one test (loopback up), deleted on drop, also on panic.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("nd-t-ld{}-{tag}", std::process::id());
        let ok = |args: &[&str]| {
            let st = Command::new("ip").args(args).status().expect("run ip");
            assert!(st.success(), "ip {args:?}");
        };
        ok(&["netns", "add", &name]);
        let ns = Netns(name);
        ok(&["-n", &ns.0, "link", "set", "lo", "up"]);
        ns
    }

    fn sysctl(&self, setting: &str) {
        let st = Command::new("ip")
            .args(["netns", "exec", &self.0, "sysctl", "-q", "-w", setting])
            .status()
            .expect("run sysctl");
        assert!(st.success(), "sysctl {setting} in {}", self.0);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// listen(1) and never accept: once the accept queue is full, the kernel drops new SYNs, the
/// client retransmits them after 1 s, and the connects show up as SYN-retransmit suspects.
#[test]
fn full_listen_queue_shows_syn_retransmit_suspects() {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let ns = Netns::new("bl");
    let r = netdoctor_lab::in_netns(&ns.0, || {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        s.bind(&addr.into()).unwrap();
        s.listen(1).unwrap();
        let mut cfg = ConnectConfig::new(addr);
        cfg.count = 8;
        cfg.concurrency = 8;
        cfg.timeout = Duration::from_millis(1500);
        let r = bench(&cfg);
        drop(s);
        r
    })
    .expect("in_netns");
    assert_eq!(r.attempts, 8);
    // The queue holds two; the rest wait on retransmitted SYNs until the timeout.
    assert!(r.syn_retransmit_suspects >= 4, "{r:?}");
    assert_eq!(r.syn_retransmit_suspects, r.slow_connects + r.timeouts);
    assert!(
        r.timeouts >= 4 && r.errors.get("timeout") == Some(&r.timeouts),
        "{r:?}"
    );
    // The kernel's own count: each timed-out connect sent its SYN again at 1 s.
    assert!(r.syn_retransmits >= r.timeouts, "{r:?}");
    assert!(r.connected >= 1, "{r:?}");
}

/// Four local ports and eight connects at once: connect() fails with EADDRNOTAVAIL.
#[test]
fn tiny_port_range_reports_eaddrnotavail() {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let ns = Netns::new("pr");
    ns.sysctl("net.ipv4.ip_local_port_range=40000 40003");
    let r = netdoctor_lab::in_netns(&ns.0, || {
        let l = TcpListener::bind("127.0.0.1:8080").unwrap();
        let mut cfg = ConnectConfig::new(l.local_addr().unwrap());
        cfg.count = 40;
        cfg.concurrency = 8;
        bench(&cfg)
    })
    .expect("in_netns");
    assert_eq!(r.attempts, 40);
    let n = r.errors.get("EADDRNOTAVAIL").copied().unwrap_or(0);
    assert!(n >= 4, "{r:?}");
    assert!(r.connected >= 1 && r.connected <= 36, "{r:?}");
    assert_eq!(r.connected + r.failed, 40);
    assert!(
        r.first_error
            .as_deref()
            .is_some_and(|e| e.contains("EADDRNOTAVAIL")),
        "{r:?}"
    );
}

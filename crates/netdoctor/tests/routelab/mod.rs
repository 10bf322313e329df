//! The route-lab tests' shared steps (`route_lab` over IPv4, `route_lab_v6` over IPv6): one lab
//! at a time, the real binary run in the client namespace, a trace's hops checked against the
//! lab's routers, and the ICMP trace over a ping socket run in-process. Both families take the
//! same steps and make the same assertions; only addresses and tolerances differ.
#![allow(dead_code)]

use crate::common;
pub use crate::common::{check, ids};
use netdoctor_lab::builtin::BuiltinServers;
use netdoctor_lab::route_lab::{RouteLab, RouteLabConfig, SERVER_IP, SERVER_IP6};
use netdoctor_route::trace::{self, Protocol, TraceOptions};
use serde_json::Value;
use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

/// The lab tests measure milliseconds: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// True (with the one line) where the lab cannot run.
pub fn skip() -> bool {
    if !common::is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return true;
    }
    false
}

/// The start of every route-lab test: `None` (after the skip line) where the lab cannot run,
/// else the guard that keeps the other lab tests of this binary waiting.
pub fn begin() -> Option<std::sync::MutexGuard<'static, ()>> {
    (!skip()).then(serial)
}

/// A route lab whose middle hop adds `rtt_ms` and loses `loss`, `more` changing the rest.
pub fn lab(rtt_ms: f64, loss: f64, more: impl FnOnce(&mut RouteLabConfig)) -> RouteLab {
    let mut cfg = RouteLabConfig {
        one_way_delay: Duration::from_secs_f64(rtt_ms / 2000.0),
        loss,
        ..Default::default()
    };
    more(&mut cfg);
    RouteLab::start(&cfg).expect("start the route lab")
}

/// The built-in HTTP server (TCP_NODELAY on: a healthy server) on the server's IPv4 address,
/// and its IPv6 one with `ipv6`, port 8080, inside the server namespace. Stop it (or drop it)
/// before the lab.
pub fn server(lab: &RouteLab, ipv6: bool) -> BuiltinServers {
    let mut addrs = vec![((SERVER_IP, 8080).into(), true)];
    if ipv6 {
        addrs.push(((SERVER_IP6, 8080).into(), true));
    }
    netdoctor_lab::in_netns(lab.server_netns(), || BuiltinServers::start(&addrs))
        .expect("enter the server namespace")
        .expect("start the built-in server")
}

/// `netdoctor ARGS` in the lab's client namespace (so /etc/resolv.conf is the lab's): exit
/// code, the JSON on stdout, stderr, wall time.
pub fn netdoctor_in(lab: &RouteLab, args: &[&str]) -> (i32, Value, String, Duration) {
    let t = Instant::now();
    let out = Command::new("ip")
        .args(["netns", "exec", lab.client_netns()])
        .arg(env!("CARGO_BIN_EXE_netdoctor"))
        .args(args)
        .env("NETDOCTOR_QUIET", "1")
        .output()
        .expect("run netdoctor");
    let wall = t.elapsed();
    let err = common::stderr(&out);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout {:?} stderr {err}", out.stdout));
    (out.status.code().unwrap_or(-1), json, err, wall)
}

/// The trace's hops of a `trace` or `diagnose` report.
pub fn hops(report: &Value) -> Vec<Value> {
    report["measurements"]["trace"]["hops"]
        .as_array()
        .unwrap()
        .clone()
}

/// A hop's first address (`???` for a silent hop).
pub fn hop_ip(h: &Value) -> String {
    h["addrs"][0]["ip"].as_str().unwrap_or("???").to_string()
}

/// Every hop's first address, in order.
pub fn hop_ips(report: &Value) -> Vec<String> {
    hops(report).iter().map(hop_ip).collect()
}

/// A hop's best RTT (NaN when it never answered).
pub fn best(h: &Value) -> f64 {
    h["best_ms"].as_f64().unwrap_or(f64::NAN)
}

/// `trace TARGET -n --json PROTO… --rounds 8 --interval 100ms MORE…` in the client namespace;
/// asserts that the hops are `want`, in order, and that the last one is the destination.
/// Returns the exit code, the report, stderr, the wall time and the hops.
pub fn trace_hops(
    lab: &RouteLab,
    target: IpAddr,
    proto: &[&str],
    more: &[&str],
    want: &[String],
) -> (i32, Value, String, Duration, Vec<Value>) {
    let target = target.to_string();
    let mut args = vec!["trace", target.as_str(), "-n", "--json"];
    args.extend_from_slice(proto);
    args.extend_from_slice(&["--rounds", "8", "--interval", "100ms"]);
    args.extend_from_slice(more);
    let (code, r, err, wall) = netdoctor_in(lab, &args);
    let hs = hops(&r);
    assert_eq!(
        hs.iter().map(hop_ip).collect::<Vec<_>>(),
        want,
        "{proto:?}: {r} {err}"
    );
    assert!(
        hs.last().unwrap()["destination"].as_bool().unwrap(),
        "{proto:?}: {r}"
    );
    (code, r, err, wall, hs)
}

/// What hop `k` adds to the best RTT of hop `k - 1` (a busy host's stalls only ever add to a
/// sample, so the best ones are compared).
pub fn added_ms(hs: &[Value], k: usize) -> f64 {
    best(&hs[k]) - best(&hs[k - 1])
}

/// An ICMP trace to `target` over a ping socket (the unprivileged path: the client namespace's
/// `net.ipv4.ping_group_range`, which governs ICMPv6 ping sockets too, is set to allow root's
/// group), 5 rounds, run in-process inside the client namespace; asserts the method and
/// returns the hops' addresses and what hop 2 adds to hop 1's best RTT.
pub fn ping_socket_trace(lab: &RouteLab, target: IpAddr) -> (Vec<String>, f64) {
    let ok = Command::new("ip")
        .args(["netns", "exec", lab.client_netns(), "sysctl", "-qw"])
        .arg("net.ipv4.ping_group_range=0 0")
        .status()
        .unwrap();
    assert!(ok.success());
    let mut o = TraceOptions::new(target, Protocol::Icmp);
    o.icmp_ping_socket = true;
    o.rounds = 5;
    o.interval = Duration::from_millis(100);
    o.names = false;
    let r = netdoctor_lab::in_netns(lab.client_netns(), || trace::run(&o, &mut |_, _| {}))
        .unwrap()
        .unwrap();
    assert!(r.method.contains("(ping) socket"), "{}", r.method);
    let ips = r.hops.iter().map(|h| h.addrs[0].ip.to_string()).collect();
    let added = r.hops[1].best_ms.unwrap() - r.hops[0].best_ms.unwrap();
    (ips, added)
}

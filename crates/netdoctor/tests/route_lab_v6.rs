//! IPv6 on the route lab (cli → r1 → delay/loss hop → r2 → srv, `ipv6: true`): `trace` over
//! IPv6 in its three modes compared with `traceroute -6` in the same run, the IPv6 look-alikes
//! of a bad hop (a router that forwards but never answers, one that answers from a link-local
//! address), and `diagnose` of an IPv6 URL end to end. Needs root; every lab is removed on drop,
//! also when an assertion fails.

mod common;

use netdoctor_lab::builtin::BuiltinServers;
use netdoctor_lab::route_lab::{
    R1_IP6, R1_LINK_LOCAL, R2_IP6, RouteLab, RouteLabConfig, SERVER_IP, SERVER_IP6,
};
use serde_json::Value;
use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

/// The lab tests measure milliseconds: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn skip() -> bool {
    if !common::is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return true;
    }
    false
}

fn lab_v6(rtt_ms: f64, loss: f64, more: impl FnOnce(&mut RouteLabConfig)) -> RouteLab {
    let mut cfg = RouteLabConfig {
        one_way_delay: Duration::from_secs_f64(rtt_ms / 2000.0),
        loss,
        ipv6: true,
        ..Default::default()
    };
    more(&mut cfg);
    RouteLab::start(&cfg).expect("start the IPv6 route lab")
}

/// The built-in HTTP server (TCP_NODELAY on) on the server's IPv4 and IPv6 addresses, port
/// 8080. Stop it (or drop it) before the lab.
fn server(lab: &RouteLab) -> BuiltinServers {
    netdoctor_lab::in_netns(lab.server_netns(), || {
        BuiltinServers::start(&[
            ((SERVER_IP, 8080).into(), true),
            ((SERVER_IP6, 8080).into(), true),
        ])
    })
    .expect("enter the server namespace")
    .expect("start the built-in server")
}

fn ids(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn hop_ips(hops: &Value) -> Vec<String> {
    hops.as_array()
        .unwrap()
        .iter()
        .map(|h| h["addrs"][0]["ip"].as_str().unwrap_or("???").to_string())
        .collect()
}

/// `netdoctor ARGS` in the lab's client namespace: exit code, JSON, stderr, wall time.
fn netdoctor_in(lab: &RouteLab, args: &[&str]) -> (i32, Value, String, Duration) {
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

/// One hop of `traceroute -n` output: its first address and its RTTs.
#[derive(Debug)]
struct TrHop {
    addr: Option<String>,
    rtts: Vec<f64>,
}

/// Parses `traceroute -n` output (` 2  fd00:231:2::2  20.4 ms  20.3 ms *`).
fn parse_traceroute(text: &str) -> Vec<TrHop> {
    text.lines()
        .skip(1)
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|t| t.parse::<u8>().is_ok())
        })
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().skip(1).collect();
            let addr = t
                .iter()
                .find(|w| w.parse::<IpAddr>().is_ok())
                .map(|s| s.to_string());
            let rtts = t
                .windows(2)
                .filter(|w| w[1] == "ms")
                .filter_map(|w| w[0].parse().ok())
                .collect();
            TrHop { addr, rtts }
        })
        .collect()
}

/// `traceroute -6 -n MODE… TARGET` in the client namespace, 3 probes per hop.
fn traceroute6(lab: &RouteLab, mode: &[&str]) -> (Vec<TrHop>, Duration) {
    let t = Instant::now();
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            lab.client_netns(),
            "traceroute",
            "-6",
            "-n",
        ])
        .args(["-q", "3", "-w", "2", "-m", "8"])
        .args(mode)
        .arg(SERVER_IP6.to_string())
        .output()
        .expect("run traceroute");
    let wall = t.elapsed();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "traceroute -6 {mode:?}: {text} {}",
        common::stderr(&out)
    );
    (parse_traceroute(&text), wall)
}

fn best(h: &Value) -> f64 {
    h["best_ms"].as_f64().unwrap_or(f64::NAN)
}

/// The same hops, in the same order, as `traceroute -6` in TCP, UDP and ICMP modes; the
/// delayed hop's added RTT seen by both; the figures printed for the report (8 rounds against
/// traceroute's 3 probes per hop, all at once: the wall times are not a like-for-like race).
#[test]
fn trace_over_ipv6_finds_the_hops_traceroute_finds() {
    if skip() {
        return;
    }
    if !netdoctor_lab::tools::have(&[("traceroute", "traceroute")]) {
        return;
    }
    let _serial = serial();
    let lab = lab_v6(20.0, 0.0, |_| {});
    let srv = server(&lab);
    let want = [R1_IP6, R2_IP6, SERVER_IP6].map(|a| a.to_string());
    let target = SERVER_IP6.to_string();
    for (ours, theirs) in [
        (&["--tcp", "-p", "8080"][..], &["-T", "-p", "8080"][..]),
        (&["--udp"][..], &[][..]),
        (&["--icmp"][..], &["-I"][..]),
    ] {
        let mut args = vec!["trace", target.as_str(), "-n", "--json"];
        args.extend_from_slice(ours);
        args.extend_from_slice(&["--rounds", "8", "--interval", "100ms", "--timeout", "1s"]);
        let (code, r, err, wall) = netdoctor_in(&lab, &args);
        // A fixed step is distance (`high_base_rtt`, exit 0); a busy machine can stretch
        // hop 2's samples into added variation (`route_problem`, exit 1). Either way the
        // finding is the path's and names hop 2, never hop 1 or the destination.
        assert!(matches!(code, 0 | 1), "{ours:?}: {r} {err}");
        let hops = &r["measurements"]["trace"]["hops"];
        assert_eq!(hop_ips(hops), want, "{ours:?}: {r}");
        let hs = hops.as_array().unwrap();
        assert!(hs[2]["destination"].as_bool().unwrap(), "{ours:?}");
        // A busy machine's stalls only ever add to a sample (traceroute's 3 probes per hop
        // leave at once, so one stall delays all three): the bounds are narrow below the 20 ms
        // the hop adds and wide above it.
        let added = best(&hs[1]) - best(&hs[0]);
        assert!(
            (18.5..40.0).contains(&added),
            "{ours:?}: hop 2 adds {added} ms"
        );
        let found = ids(&r);
        assert!(
            found.contains(&"high_base_rtt".to_string()),
            "{ours:?}: {r}"
        );
        for f in r["findings"].as_array().unwrap() {
            if f["id"] == "route_problem" {
                let summary = f["summary"].as_str().unwrap();
                assert!(summary.starts_with("hop 2"), "{ours:?}: {summary}");
            }
        }

        let (tr, tr_wall) = traceroute6(&lab, theirs);
        let tr_addrs: Vec<String> = tr.iter().filter_map(|h| h.addr.clone()).collect();
        assert_eq!(tr_addrs, want, "traceroute -6 {theirs:?}: {tr:?}");
        let tr_best = |i: usize| tr[i].rtts.iter().copied().fold(f64::INFINITY, f64::min);
        let tr_added = tr_best(1) - tr_best(0);
        assert!(
            (18.5..100.0).contains(&tr_added),
            "{ours:?}: hop 2 adds {added} ms, traceroute says {tr_added} ms"
        );
        eprintln!(
            "ipv6 {ours:?}: netdoctor best {:.2}/{:.2}/{:.2} ms in {:.2} s; traceroute -6 {theirs:?} best {:.2}/{:.2}/{:.2} ms in {:.2} s",
            best(&hs[0]),
            best(&hs[1]),
            best(&hs[2]),
            wall.as_secs_f64(),
            tr_best(0),
            tr_best(1),
            tr_best(2),
            tr_wall.as_secs_f64()
        );
    }
    srv.stop();
    lab.stop().unwrap();
}

const LOSS_ARGS: [&str; 9] = [
    "-n",
    "--rounds",
    "60",
    "--interval",
    "50ms",
    "--timeout",
    "300ms",
    "--json",
    "--icmp",
];

/// A lossy hop over IPv6 is named; a router that forwards but never sends ICMPv6 Time Exceeded
/// (silent) and one that answers from its link-local address are not route problems.
#[test]
fn ipv6_lossy_hop_is_told_from_a_silent_or_link_local_router() {
    if skip() {
        return;
    }
    if !netdoctor_lab::tools::have(&[("ip6tables", "iptables")]) {
        return;
    }
    let _serial = serial();
    let target = SERVER_IP6.to_string();
    let mut args = vec!["trace", target.as_str()];
    args.extend_from_slice(&LOSS_ARGS);

    let lossy = lab_v6(0.0, 0.15, |_| {});
    let (code, r, err, _) = netdoctor_in(&lossy, &args);
    assert_eq!(code, 1, "{r} {err}");
    let problems: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "route_problem")
        .collect();
    assert_eq!(problems.len(), 1, "{r}");
    let summary = problems[0]["summary"].as_str().unwrap();
    assert!(summary.starts_with("hop 2 loses"), "{summary}");
    assert!(lossy.dropped() > 0);
    lossy.stop().unwrap();

    // r1 forwards but drops its own Time Exceeded: hop 1 is silent, the path behind is whole.
    let silent = lab_v6(0.0, 0.0, |c| c.r1_icmp6_silent = true);
    let (code, r, err, _) = netdoctor_in(&silent, &args);
    let hops = r["measurements"]["trace"]["hops"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(hops.len(), 3, "{r}");
    assert_eq!(hops[0]["received"], 0, "{}", hops[0]);
    assert_eq!(hops[2]["loss"].as_f64().unwrap(), 0.0, "{}", hops[2]);
    assert_eq!(
        hop_ips(&r["measurements"]["trace"]["hops"])[1..],
        [R2_IP6.to_string(), SERVER_IP6.to_string()]
    );
    assert!(!ids(&r).contains(&"route_problem".to_string()), "{r}");
    assert_eq!(code, 0, "{r} {err}");
    let notes = &r["measurements"]["hop_assessment"][0]["notes"];
    assert_eq!(notes[0]["kind"], "silent", "{notes}");
    silent.stop().unwrap();

    // r1 has only link-local addresses: hop 1 answers from fe80::1, a hop like any other.
    let ll = lab_v6(0.0, 0.0, |c| c.r1_link_local_only = true);
    for proto in ["--icmp", "--udp", "--tcp"] {
        let args = ["trace", &target, "-n", "--json", proto, "--rounds", "5"];
        let args = [&args[..], &["--interval", "100ms"]].concat();
        let (code, r, err, _) = netdoctor_in(&ll, &args);
        assert_eq!(
            hop_ips(&r["measurements"]["trace"]["hops"]),
            [R1_LINK_LOCAL, R2_IP6, SERVER_IP6].map(|a| a.to_string()),
            "{proto}: {r}"
        );
        assert_eq!(code, 0, "{proto}: {r} {err}");
        assert!(ids(&r).is_empty(), "{proto}: {r}");
    }
    ll.stop().unwrap();
}

/// `diagnose` of an IPv6 URL behind the delayed hop: every stage runs over IPv6 and the
/// finding is the path's RTT; the same server without the delay is healthy.
#[test]
fn diagnose_of_an_ipv6_url_finds_high_base_rtt_and_a_near_one_is_healthy() {
    if skip() {
        return;
    }
    let _serial = serial();
    let url = format!("http://[{SERVER_IP6}]:8080/");
    let diagnose = |lab: &RouteLab, more: &[&str]| {
        let args = ["diagnose", &url, "-c", "4", "-d", "1500ms", "--json"];
        let (code, r, err, _) = netdoctor_in(lab, &[&args[..], more].concat());
        common::assert_schema(&r);
        assert!(matches!(code, 0 | 1), "exit {code}: {err} {r}");
        (code, r)
    };
    let check = |r: &Value, name: &str| -> (String, String) {
        let c = r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {}", r["checks"]))
            .clone();
        (
            c["status"].as_str().unwrap().to_string(),
            c["reason"].as_str().unwrap_or("").to_string(),
        )
    };

    let far = lab_v6(37.0, 0.0, |_| {});
    let srv = server(&far);
    let (code, r) = diagnose(&far, &[]);
    assert_eq!(code, 1, "{r}");
    // The path's RTT is the root cause, ranked first. (A forwarder thread of the lab stalled
    // by a busy machine can add a retransmission timeout beside it; the IPv4 twin of this test
    // is `route_lab.rs`'s `diagnose_of_a_target_behind_the_delayed_hop…`.)
    assert_eq!(r["findings"][0]["id"], "high_base_rtt", "{r}");
    let added = r["findings"][0]["impact"]["added_latency_ms"]
        .as_f64()
        .unwrap();
    assert!((36.0..45.0).contains(&added), "base RTT {added} ms");
    let (status, reason) = check(&r, "trace");
    assert_eq!(status, "ok", "{reason}");
    assert!(
        reason.starts_with(&format!("tcp trace via {R1_LINK_LOCAL}: 3 hop(s)")),
        "{reason}"
    );
    assert_eq!(
        hop_ips(&r["measurements"]["trace"]["hops"]),
        [R1_IP6, R2_IP6, SERVER_IP6].map(|a| a.to_string())
    );
    // The capture saw the load's IPv6 connections, and the load ran.
    assert_eq!(check(&r, "capture").0, "ok", "{}", r["checks"]);
    let p50 = r["measurements"]["load"]["latency_ms"]["p50"]
        .as_f64()
        .unwrap();
    assert!((37.0..60.0).contains(&p50), "p50 {p50} ms");
    srv.stop();
    far.stop().unwrap();

    let near = lab_v6(0.0, 0.0, |_| {});
    let srv = server(&near);
    // An open-loop rate a busy machine's capture keeps up with (closed loop, 10 k req/s over a
    // sub-millisecond path overflow the capture ring, and an incomplete capture is no verdict).
    let (code, r) = diagnose(&near, &["--rate", "300"]);
    assert_eq!(code, 0, "{r}");
    assert!(ids(&r).is_empty(), "{r}");
    assert_eq!(check(&r, "trace").0, "ok", "{}", r["checks"]);
    assert_eq!(hop_ips(&r["measurements"]["trace"]["hops"]).len(), 3, "{r}");
    srv.stop();
    near.stop().unwrap();
}

/// The unprivileged ICMPv6 path: a ping socket (`net.ipv4.ping_group_range`, which governs
/// ICMPv6 ping sockets too, allows root's group in the client namespace), run in-process.
#[test]
fn icmpv6_over_a_ping_socket_finds_the_same_hops() {
    use netdoctor_route::trace::{self, Protocol, TraceOptions};
    if skip() {
        return;
    }
    let _serial = serial();
    let lab = lab_v6(7.0, 0.0, |_| {});
    let ok = Command::new("ip")
        .args(["netns", "exec", lab.client_netns(), "sysctl", "-qw"])
        .arg("net.ipv4.ping_group_range=0 0")
        .status()
        .unwrap();
    assert!(ok.success());
    let mut o = TraceOptions::new(SERVER_IP6, Protocol::Icmp);
    o.icmp_ping_socket = true;
    o.rounds = 5;
    o.interval = Duration::from_millis(100);
    o.names = false;
    let r = netdoctor_lab::in_netns(lab.client_netns(), || trace::run(&o, &mut |_, _| {}))
        .unwrap()
        .unwrap();
    assert!(r.method.contains("(ping) socket"), "{}", r.method);
    let ips: Vec<String> = r.hops.iter().map(|h| h.addrs[0].ip.to_string()).collect();
    assert_eq!(ips, [R1_IP6, R2_IP6, SERVER_IP6].map(|a| a.to_string()));
    let added = r.hops[1].best_ms.unwrap() - r.hops[0].best_ms.unwrap();
    assert!((6.5..20.0).contains(&added), "hop 2 adds {added} ms");
    lab.stop().unwrap();
}

//! IPv6 on the route lab (cli → r1 → delay/loss hop → r2 → srv, `ipv6: true`): `trace` over
//! IPv6 in its three modes compared with `traceroute -6` in the same run, the IPv6 look-alikes
//! of a bad hop (a router that forwards but never answers, one that answers from a link-local
//! address), and `diagnose` of an IPv6 URL end to end. Needs root; every lab is removed on drop,
//! also when an assertion fails.

use crate::routelab::{
    added_ms, best, check, hop_ips, hops, ids, netdoctor_in, ping_socket_trace, serial, server,
    skip, trace_hops,
};
use netdoctor_lab::route_lab::{
    R1_IP6, R1_LINK_LOCAL, R2_IP6, RouteLab, RouteLabConfig, SERVER_IP6,
};
use serde_json::Value;
use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

fn lab_v6(rtt_ms: f64, loss: f64, more: impl FnOnce(&mut RouteLabConfig)) -> RouteLab {
    crate::routelab::lab(rtt_ms, loss, |c| {
        c.ipv6 = true;
        more(c)
    })
}

/// One hop of `traceroute -n` output: its first address and its RTTs.
#[derive(Debug)]
struct TrHop {
    addr: Option<String>,
    rtts: Vec<f64>,
}

/// Parses `traceroute -n` output (` 2  fd00:231:2::2  20.4 ms  20.3 ms *`; a link-local
/// address with its scope: `fe80::1%cli-r1`).
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
                .find(|w| w.split('%').next().unwrap().parse::<IpAddr>().is_ok())
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
        crate::common::stderr(&out)
    );
    (parse_traceroute(&text), wall)
}

/// The same hops, in the same order, as `traceroute -6` in TCP, UDP and ICMP modes; the
/// delayed hop's added RTT seen by both; the figures printed for the report (8 rounds against
/// traceroute's 3 probes per hop, all at once: the wall times are not a like-for-like race).
#[test]
fn trace_over_ipv6_finds_the_hops_traceroute_finds() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    if !netdoctor_lab::tools::have(&[("traceroute", "traceroute")]) {
        return;
    }
    let _serial = serial();
    let lab = lab_v6(20.0, 0.0, |_| {});
    let srv = server(&lab, true);
    let want = [R1_IP6, R2_IP6, SERVER_IP6].map(|a| a.to_string());
    for (ours, theirs) in [
        (&["--tcp", "-p", "8080"][..], &["-T", "-p", "8080"][..]),
        (&["--udp"][..], &[][..]),
        (&["--icmp"][..], &["-I"][..]),
    ] {
        let timeout = ["--timeout", "1s"];
        let (code, r, err, wall, hs) = trace_hops(&lab, SERVER_IP6.into(), ours, &timeout, &want);
        // A fixed step is distance (`high_base_rtt`, exit 0); a busy machine can stretch
        // hop 2's samples into added variation (`route_problem`, exit 1). Either way the
        // finding is the path's and names hop 2, never hop 1 or the destination.
        assert!(matches!(code, 0 | 1), "{ours:?}: {r} {err}");
        // A busy machine's stalls only ever add to a sample (traceroute's 3 probes per hop
        // leave at once, so one stall delays all three): the bounds are narrow below the 20 ms
        // the hop adds and wide above it.
        let added = added_ms(&hs, 1);
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
/// (silent) is not a route problem (one that answers from its link-local address is not
/// either: `a_link_local_hop_keeps_its_scope`).
#[test]
fn ipv6_lossy_hop_is_told_from_a_silent_router() {
    let _turn = crate::common::file_turn(file!());
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
    let hs = hops(&r);
    assert_eq!(hs.len(), 3, "{r}");
    assert_eq!(hs[0]["received"], 0, "{}", hs[0]);
    assert_eq!(hs[2]["loss"].as_f64().unwrap(), 0.0, "{}", hs[2]);
    assert_eq!(
        hop_ips(&r)[1..],
        [R2_IP6.to_string(), SERVER_IP6.to_string()]
    );
    assert!(!ids(&r).contains(&"route_problem".to_string()), "{r}");
    assert_eq!(code, 0, "{r} {err}");
    let notes = &r["measurements"]["hop_assessment"][0]["notes"];
    assert_eq!(notes[0]["kind"], "silent", "{notes}");
    silent.stop().unwrap();
}

/// r1 has only link-local addresses: hop 1 answers from fe80::1, a hop like any other, kept
/// with its scope (the client's interface the reply arrived on) in JSON and text, as
/// `traceroute -6` prints it in the same run; the reported scope is what a follow-up needs (a
/// UDP probe with it reaches r1, the bare address names no link), and the hop's name is looked
/// up with it.
#[test]
fn a_link_local_hop_keeps_its_scope() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let ll = lab_v6(0.0, 0.0, |c| c.r1_link_local_only = true);
    let want = [R1_LINK_LOCAL, R2_IP6, SERVER_IP6].map(|a| a.to_string());
    let scoped = format!("{R1_LINK_LOCAL}%cli-r1");
    let have_traceroute = netdoctor_lab::tools::have(&[("traceroute", "traceroute")]);
    let mut scope_id = 0;
    for (ours, theirs) in [
        ("--icmp", &["-I"][..]),
        ("--udp", &[][..]),
        ("--tcp", &["-T", "-p", "8080"][..]),
    ] {
        let (code, r, err, _, hs) = trace_hops(&ll, SERVER_IP6.into(), &[ours], &[], &want);
        assert_eq!(code, 0, "{ours}: {r} {err}");
        assert!(ids(&r).is_empty(), "{ours}: {r}");
        let a = &hs[0]["addrs"][0];
        assert_eq!(a["scope"], "cli-r1", "{ours}: {a}");
        scope_id = a["scope_id"].as_u64().unwrap_or(0) as u32;
        assert!(scope_id > 0, "{ours}: {a}");
        for h in &hs[1..] {
            let a = &h["addrs"][0];
            assert!(
                a.get("scope").is_none(),
                "{ours}: a global address has none: {a}"
            );
        }
        if have_traceroute {
            let (tr, _) = traceroute6(&ll, theirs);
            let first = tr.first().and_then(|h| h.addr.clone());
            assert_eq!(
                first.as_deref(),
                Some(scoped.as_str()),
                "traceroute -6 {theirs:?}: {tr:?}"
            );
            eprintln!("{ours}: netdoctor hop 1 {scoped}; traceroute -6 {theirs:?} hop 1 {first:?}");
        }
    }
    // The follow-up: a UDP probe to the reported address and scope id reaches r1 (its Port
    // Unreachable comes back: refused); the bare address names no link (EINVAL), and another
    // interface's index (lo) does not reach it.
    let probe = move |scope: u32| {
        let s = std::net::UdpSocket::bind("[::]:0")?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.connect(std::net::SocketAddrV6::new(R1_LINK_LOCAL, 33434, 0, scope))?;
        s.send(b"netdoctor follow-up")?;
        s.recv(&mut [0u8; 64]).map(|_| ())
    };
    let answers = netdoctor_lab::in_netns(ll.client_netns(), move || {
        [scope_id, 0, 1].map(|scope| probe(scope).map_err(|e| e.kind()))
    })
    .unwrap();
    use std::io::ErrorKind;
    assert_eq!(answers[0], Err(ErrorKind::ConnectionRefused), "{answers:?}");
    assert_eq!(answers[1], Err(ErrorKind::InvalidInput), "{answers:?}");
    assert!(
        answers[2].is_err() && answers[2] != answers[0],
        "{answers:?}"
    );
    // The name, looked up with the scope (the namespace's /etc/hosts, bind-mounted by
    // `ip netns exec` from the lab's /etc/netns directory, which the lab removes), in text.
    let hosts = ll.client_resolv_conf().with_file_name("hosts");
    std::fs::write(&hosts, format!("{R1_LINK_LOCAL} r1-ll.lab.test\n")).unwrap();
    let target = SERVER_IP6.to_string();
    let out = Command::new("ip")
        .args(["netns", "exec", ll.client_netns()])
        .arg(env!("CARGO_BIN_EXE_netdoctor"))
        .args([
            "trace",
            &target,
            "--icmp",
            "--rounds",
            "3",
            "--interval",
            "100ms",
        ])
        .env("NETDOCTOR_QUIET", "1")
        .env("NO_COLOR", "1")
        .output()
        .expect("run netdoctor");
    let text = crate::common::stdout(&out);
    assert!(
        text.contains(&format!("r1-ll.lab.test ({scoped})")),
        "{text} {}",
        crate::common::stderr(&out)
    );
    ll.stop().unwrap();
}

/// `diagnose` of an IPv6 URL behind the delayed hop: every stage runs over IPv6 and the
/// finding is the path's RTT; the same server without the delay is healthy.
#[test]
fn diagnose_of_an_ipv6_url_finds_high_base_rtt_and_a_near_one_is_healthy() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let url = format!("http://[{SERVER_IP6}]:8080/");
    let diagnose = |lab: &RouteLab, more: &[&str]| {
        let args = ["diagnose", &url, "-c", "4", "-d", "1500ms", "--json"];
        let (code, r, err, _) = netdoctor_in(lab, &[&args[..], more].concat());
        crate::common::assert_schema(&r);
        assert!(matches!(code, 0 | 1), "exit {code}: {err} {r}");
        (code, r)
    };

    let far = lab_v6(37.0, 0.0, |_| {});
    let srv = server(&far, true);
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
    // The default route's gateway is r1's link-local address, named with its interface.
    assert!(
        reason.starts_with(&format!("tcp trace via {R1_LINK_LOCAL}%cli-r1: 3 hop(s)")),
        "{reason}"
    );
    assert_eq!(
        hop_ips(&r),
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
    let srv = server(&near, true);
    // An open-loop rate a busy machine's capture keeps up with (closed loop, 10 k req/s over a
    // sub-millisecond path overflow the capture ring, and an incomplete capture is no verdict).
    let (code, r) = diagnose(&near, &["--rate", "300"]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["verdict"], "healthy", "{r}");
    // Healthy, and no finding above info: at load 14 on 2 CPUs the client, short of CPU, acked
    // late and the server resent 14 segments that had arrived (D-SACK): a true `info`
    // `spurious_retransmission`, not a problem of the path (a high base RTT is a warning).
    let loud: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert!(loud.is_empty(), "{loud:?}");
    assert_eq!(check(&r, "trace").0, "ok", "{}", r["checks"]);
    assert_eq!(hop_ips(&r).len(), 3, "{r}");
    srv.stop();
    near.stop().unwrap();
}

/// The unprivileged ICMPv6 path: a ping socket (`net.ipv4.ping_group_range`, which governs
/// ICMPv6 ping sockets too, allows root's group in the client namespace), run in-process.
#[test]
fn icmpv6_over_a_ping_socket_finds_the_same_hops() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let lab = lab_v6(7.0, 0.0, |_| {});
    let (ips, added) = ping_socket_trace(&lab, SERVER_IP6.into());
    assert_eq!(ips, [R1_IP6, R2_IP6, SERVER_IP6].map(|a| a.to_string()));
    assert!((6.5..20.0).contains(&added), "hop 2 adds {added} ms");
    lab.stop().unwrap();
}

/// A link-local target with its zone: `trace fe80::1%cli-r1` (r1's link-local address on the
/// client's link) reaches r1 in one hop in TCP, UDP and ICMP modes, the target and its hop
/// kept with their scope in JSON and text, as `traceroute -6` prints it in the same run. A
/// zone that names no interface, a bare link-local address, a zone on an IPv4 or global
/// address, and a zone in a URL for `diagnose` are one-line errors naming what was wrong.
#[test]
fn a_link_local_target_is_traced_on_its_interface() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let lab = lab_v6(0.0, 0.0, |_| {});
    let scoped = format!("{R1_LINK_LOCAL}%cli-r1");
    let have_traceroute = netdoctor_lab::tools::have(&[("traceroute", "traceroute")]);
    for (ours, theirs) in [
        ("--tcp", &["-T", "-p", "80"][..]),
        ("--udp", &[][..]),
        ("--icmp", &["-I"][..]),
    ] {
        let args = [
            "trace",
            &scoped,
            "-n",
            "--json",
            ours,
            "--rounds",
            "3",
            "--interval",
            "100ms",
        ];
        let (code, r, err, _) = netdoctor_in(&lab, &args);
        assert_eq!(code, 0, "{ours}: {r} {err}");
        assert_eq!(r["target"]["address"], scoped.as_str(), "{ours}: {r}");
        let t = &r["measurements"]["trace"];
        assert_eq!(t["target"], R1_LINK_LOCAL.to_string(), "{ours}: {t}");
        assert_eq!(t["scope"], "cli-r1", "{ours}: {t}");
        let scope_id = t["scope_id"].as_u64().unwrap_or(0);
        assert!(scope_id > 0, "{ours}: {t}");
        let hs = hops(&r);
        assert_eq!(hs.len(), 1, "{ours}: {r}");
        assert!(hs[0]["destination"].as_bool().unwrap(), "{ours}: {r}");
        assert_eq!(hs[0]["received"], 3, "{ours}: {}", hs[0]);
        let a = &hs[0]["addrs"][0];
        assert_eq!(a["ip"], R1_LINK_LOCAL.to_string(), "{ours}: {a}");
        assert_eq!(a["scope"], "cli-r1", "{ours}: {a}");
        assert_eq!(a["scope_id"].as_u64(), Some(scope_id), "{ours}: {a}");
        if have_traceroute {
            let out = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    lab.client_netns(),
                    "traceroute",
                    "-6",
                    "-n",
                ])
                .args(["-q", "3", "-w", "2", "-m", "4"])
                .args(theirs)
                .arg(&scoped)
                .output()
                .expect("run traceroute");
            let text = crate::common::stdout(&out);
            let tr = parse_traceroute(&text);
            assert_eq!(tr.len(), 1, "traceroute -6 {theirs:?}: {text}");
            assert_eq!(
                tr[0].addr.as_deref(),
                Some(scoped.as_str()),
                "traceroute -6 {theirs:?}: {text}"
            );
            eprintln!(
                "{ours}: netdoctor 1 hop {scoped} best {:.3} ms; traceroute -6 {theirs:?} 1 hop {:?} {:?} ms",
                best(&hs[0]),
                tr[0].addr,
                tr[0].rtts
            );
        }
    }
    let run = |args: &[&str]| {
        Command::new("ip")
            .args(["netns", "exec", lab.client_netns()])
            .arg(env!("CARGO_BIN_EXE_netdoctor"))
            .args(args)
            .env("NETDOCTOR_QUIET", "1")
            .env("NO_COLOR", "1")
            .output()
            .expect("run netdoctor")
    };
    // The text names the target with its scope.
    let out = run(&[
        "trace",
        &scoped,
        "-n",
        "--rounds",
        "2",
        "--interval",
        "100ms",
    ]);
    let text = crate::common::stdout(&out);
    assert!(
        text.starts_with(&format!("trace to {scoped} (tcp port 80)")),
        "{text} {}",
        crate::common::stderr(&out)
    );
    let ll = R1_LINK_LOCAL.to_string();
    for (target, says) in [
        (
            format!("{ll}%nd-nosuch0"),
            "no interface named 'nd-nosuch0'",
        ),
        (ll.clone(), "needs its interface"),
        (format!("{SERVER_IP6}%cli-r1"), "is not link-local"),
        ("10.231.1.1%cli-r1".to_string(), "is an IPv4 address"),
    ] {
        let out = run(&["trace", &target, "--rounds", "1"]);
        let err = crate::common::stderr(&out);
        assert_ne!(out.status.code(), Some(0), "{target}: {err}");
        assert!(err.contains(says), "{target}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{target}: {err}");
    }
    // RFC 6874: a zone in a URL, for diagnose and load.
    let url = format!("http://[{ll}%25cli-r1]:8080/");
    for cmd in ["diagnose", "load"] {
        let out = run(&[cmd, &url, "-d", "1s"]);
        let err = crate::common::stderr(&out);
        assert_ne!(out.status.code(), Some(0), "{cmd}: {err}");
        assert!(
            err.contains("IPv6 zone in a URL ('%cli-r1'"),
            "{cmd}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{cmd}: {err}");
    }
    lab.stop().unwrap();
}

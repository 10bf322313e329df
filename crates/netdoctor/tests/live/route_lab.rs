//! `netdoctor trace`, `netdoctor dns` and `netdoctor diagnose` on the route lab (cli → r1 → delay/loss hop → r2 → srv,
//! lab nameserver): real probes through real namespaces. Needs root; each test prints why it is
//! skipped otherwise. Every lab is removed on drop, also when an assertion fails.

use crate::routelab::{
    added_ms, check, hop_ips, hops, ids, netdoctor_in, ping_socket_trace, trace_hops,
};
use netdoctor_lab::nameserver::Behavior;
use netdoctor_lab::route_lab::{
    NAMESERVER_IP, R1_IP, R2_IP, Resolver, RouteLab, RouteLabConfig, SERVER_IP,
};
use serde_json::Value;
use std::time::Duration;

fn lab(rtt_ms: f64, loss: f64, resolver: Resolver) -> RouteLab {
    crate::routelab::lab(rtt_ms, loss, |c| c.resolver = resolver)
}

#[test]
fn trace_finds_every_hop_and_the_slow_hops_added_delay() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let lab = lab(30.0, 0.0, Resolver::Lab(Behavior::default()));
    let want = [R1_IP, R2_IP, SERVER_IP].map(|a| a.to_string());
    for proto in ["--tcp", "--udp", "--icmp"] {
        let (code, r, err, _, hs) = trace_hops(&lab, SERVER_IP.into(), &[proto], &[], &want);
        // The bridge can only hold a frame longer than 15 ms each way, never shorter: by how
        // late its thread woke up to send (this machine's scheduling, measured by the lab).
        // Below, the step is exact to 3 ms; above, to 3 ms plus what the bridge measured.
        let late = lab.late_max_ms();
        let added = added_ms(&hs, 1);
        eprintln!(
            "{proto}: hop 2 adds {added:.2} ms; the bridge's sends were up to {late:.2} ms late"
        );
        assert!(
            added > 27.0 && added < 33.0 + late,
            "{proto}: hop 2 adds {added} ms (the bridge was up to {late} ms late)"
        );
        // The step is judged against the hops before it: a fixed one is distance. It is named
        // in high_base_rtt (info without a request latency to weigh), not a route_problem.
        // A bridge that was late by milliseconds really varied the step: then a route problem
        // is allowed, on hop 2 only.
        let problems: Vec<&Value> = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["id"] == "route_problem")
            .collect();
        if late < 2.0 || problems.is_empty() {
            assert_eq!(
                code, 0,
                "{proto}: a fixed 30 ms step is distance, not a route problem: {r} {err}"
            );
            assert_eq!(ids(&r), ["high_base_rtt"], "{proto}");
            let base = &r["findings"][0];
            assert_eq!(base["severity"], "info", "{proto}: {base}");
            assert!(
                base["explanation"].as_str().unwrap().contains("hop 2 adds"),
                "{proto}: {base}"
            );
        } else {
            assert_eq!(code, 1, "{proto}: {r} {err}");
            let mut found = ids(&r);
            found.sort();
            assert_eq!(found, ["high_base_rtt", "route_problem"], "{proto}: {r}");
            let summary = problems[0]["summary"].as_str().unwrap();
            assert!(summary.starts_with("hop 2"), "{proto}: {summary}");
        }
    }
    // An address r1 has no route to: r1 answers Network Unreachable, the route ends there.
    // Linux sends that (ip_error) at most once a second per client, from the same per-peer
    // tokens that every other ICMP r1 sends the client empties (with icmp_ratelimit=0, each Time
    // Exceeded of the traces above leaves them at 0): captured in r1, the Unreachable came
    // 1.03-1.06 s after r1's last Time Exceeded. Started at once, the trace's first round got
    // nothing, and the budget came back during a later round, on whichever probe reached r1
    // then: hop 1 silent and "hop 4 (10.231.1.1) says … unreachable". So the budget is let
    // refill first; the first probe (TTL 1) then gets the answer.
    std::thread::sleep(Duration::from_millis(1100));
    let (code, r, err, _) = netdoctor_in(
        &lab,
        &[
            "trace",
            "10.231.9.9",
            "-n",
            "--rounds",
            "2",
            "--interval",
            "100ms",
            "--json",
        ],
    );
    assert_eq!(code, 1, "{r} {err}");
    assert_eq!(r["findings"][0]["id"], "route_problem", "{r}");
    assert_eq!(r["findings"][0]["severity"], "critical", "{r}");
    let summary = r["findings"][0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("hop 1 (10.231.1.1)") && summary.contains("network unreachable"),
        "{summary}"
    );
    lab.stop().unwrap();
}

/// The unprivileged ICMP path: a ping socket (the lab allows root's group in the client
/// namespace's `net.ipv4.ping_group_range`), run in-process inside the namespace.
#[test]
fn icmp_trace_over_a_ping_socket_finds_the_same_hops() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let lab = lab(7.0, 0.0, Resolver::Lab(Behavior::default()));
    let (ips, added) = ping_socket_trace(&lab, SERVER_IP.into());
    assert_eq!(
        ips,
        [R1_IP.to_string(), R2_IP.to_string(), SERVER_IP.to_string()]
    );
    // Exact to 2 ms below; above, plus how late the bridge's sends were (see the trace test).
    let late = lab.late_max_ms();
    assert!(
        added > 5.0 && added < 9.0 + late,
        "hop 2 adds {added} ms (the bridge was up to {late} ms late)"
    );
    lab.stop().unwrap();
}

#[test]
fn trace_tells_a_lossy_hop_from_a_router_that_rate_limits_its_icmp() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    // Loss on the r1–r2 link: it persists to the destination, so hop 2 is named. 60 rounds:
    // over 30, hop 2 once showed 2 of 30 lost and the destination 7 of 30, which the
    // carried-loss test (Fisher, p < 0.01) rightly cannot tell from noise.
    let lossy = lab(0.0, 0.15, Resolver::Lab(Behavior::default()));
    let args = [
        "trace",
        "10.231.3.2",
        "-n",
        "--rounds",
        "60",
        "--interval",
        "50ms",
        "--timeout",
        "300ms",
        "--json",
    ];
    let (code, r, _, _) = netdoctor_in(&lossy, &args);
    assert_eq!(code, 1, "{r}");
    let problems: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "route_problem")
        .collect();
    assert_eq!(problems.len(), 1, "{r}");
    assert!(
        problems[0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("hop 2 loses"),
        "{}",
        problems[0]
    );
    lossy.stop().unwrap();

    // r1 rate-limits its own ICMP (1/s after a burst of 6): its row loses replies, the path
    // does not. No route problem; the row is marked as rate limiting.
    let cfg = RouteLabConfig {
        r1_icmp_ratelimit_ms: Some(1000),
        ..Default::default()
    };
    let limited = RouteLab::start(&cfg).expect("start route lab");
    let (code, r, _, _) = netdoctor_in(&limited, &args);
    let hs = hops(&r);
    assert!(hs[0]["loss"].as_f64().unwrap() > 0.3, "{}", hs[0]);
    assert_eq!(hs[2]["loss"].as_f64().unwrap(), 0.0, "{}", hs[2]);
    assert!(
        !ids(&r).contains(&"route_problem".to_string()),
        "{:?}",
        ids(&r)
    );
    assert_eq!(code, 0, "{r}");
    let notes = &r["measurements"]["hop_assessment"][0]["notes"];
    assert_eq!(notes[0]["kind"], "icmp_rate_limited", "{notes}");
    limited.stop().unwrap();
}

fn dns_json(lab: &RouteLab) -> (i32, Value) {
    let (code, r, err, _) = netdoctor_in(
        lab,
        &["dns", "srv", "--tries", "3", "--timeout", "1s", "--json"],
    );
    crate::common::assert_schema(&r);
    assert!(matches!(code, 0 | 1), "{err}");
    (code, r)
}

#[test]
fn dns_tells_dead_from_slow_from_empty_and_finds_ptr_timeouts() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    // Slow: 300 ms per answer; answered every time.
    let slow = lab(
        0.0,
        0.0,
        Resolver::Lab(Behavior {
            delay: Duration::from_millis(300),
            ..Default::default()
        }),
    );
    let (code, r) = dns_json(&slow);
    assert_eq!(code, 1);
    assert_eq!(ids(&r), ["dns_slow"], "{r}");
    let udp = &r["measurements"]["dns"]["servers"][0]["udp"];
    assert_eq!(udp["answered"], 3);
    let median = udp["median_ms"].as_f64().unwrap();
    assert!((300.0..360.0).contains(&median), "{median}");
    slow.stop().unwrap();

    // Dead: the nameserver's address is up but nothing ever answers.
    let dead = lab(0.0, 0.0, Resolver::Dead);
    let (code, r) = dns_json(&dead);
    assert_eq!(code, 1);
    assert_eq!(ids(&r), ["dns_server_unreachable"], "{r}");
    assert_eq!(r["findings"][0]["severity"], "critical");
    assert!(
        r["measurements"]["dns"]["getaddrinfo"]["error"].is_string(),
        "{}",
        r["measurements"]["dns"]["getaddrinfo"]
    );
    dead.stop().unwrap();

    // Empty resolv.conf.
    let empty = lab(0.0, 0.0, Resolver::Empty);
    let (code, r) = dns_json(&empty);
    assert_eq!(code, 1);
    assert_eq!(ids(&r), ["dns_no_nameserver"], "{r}");
    assert_eq!(
        r["measurements"]["dns"]["servers"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    empty.stop().unwrap();

    // Healthy, then deaf to PTR: only the reverse lookups fail.
    let ok = lab(0.0, 0.0, Resolver::Lab(Behavior::default()));
    let (code, r) = dns_json(&ok);
    assert_eq!((code, ids(&r)), (0, vec![]), "{r}");
    assert_eq!(r["verdict"], "healthy");
    ok.stop().unwrap();
    let deaf = lab(
        0.0,
        0.0,
        Resolver::Lab(Behavior {
            drop_reverse: true,
            ..Default::default()
        }),
    );
    let (code, r) = dns_json(&deaf);
    assert_eq!(code, 1);
    assert_eq!(ids(&r), ["reverse_dns_timeout"], "{r}");
    let rev = &r["measurements"]["dns"]["reverse"][0];
    assert_eq!(rev["address"], SERVER_IP.to_string());
    assert_eq!(rev["direct"][0][0], NAMESERVER_IP.to_string());
    assert_eq!(rev["direct"][0][1]["status"], "timeout");
    deaf.stop().unwrap();
}

/// The bridge's loss drops probes, never r1's neighbour resolution of r2 (the ARP entries across
/// the bridge are fixed): with every frame dropped on the r1–r2 link, r1's entry for r2 is
/// PERMANENT once traffic for r2 arrived. Resolved over the bridge, r1's three ARP requests
/// (1 s apart) would go unanswered and the entry would be FAILED: r1 drops everything for r2
/// and answers host unreachable (what left the lossy-hop trace with 0 of 60 answers from hop 2
/// once in CI). Read at once: the kernel never resolves, ages or fails a permanent entry, and
/// any other entry (none, INCOMPLETE, REACHABLE, STALE, FAILED) fails the check whenever it is
/// read, so waiting out the 3 s of ARP tries (as this test did) proves nothing more.
#[test]
fn a_lossy_bridge_never_fails_a_neighbour_resolution() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let dead = lab(0.0, 1.0, Resolver::Empty);
    netdoctor_lab::in_netns(dead.client_netns(), || {
        let s = std::net::UdpSocket::bind(("0.0.0.0", 0)).expect("bind");
        s.send_to(b"probe", (SERVER_IP, 9)).expect("send");
    })
    .expect("enter the client namespace");
    let r1 = &dead.namespaces()[1];
    let out = std::process::Command::new("ip")
        .args(["-n", r1, "neigh", "show", &R2_IP.to_string()])
        .output()
        .expect("run ip neigh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PERMANENT"), "r1's entry for r2: {text:?}");
    dead.stop().unwrap();
}

#[test]
fn labs_leave_nothing_behind() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let l = lab(7.0, 0.0, Resolver::Empty);
    let names = l.namespaces().to_vec();
    let etc = l.client_resolv_conf();
    assert!(etc.exists());
    drop(l);
    for n in names {
        assert!(!netdoctor_lab::netns_exists(&n), "{n} left behind");
    }
    assert!(!etc.exists());
}

fn healthy_server(lab: &RouteLab) -> netdoctor_lab::builtin::BuiltinServers {
    crate::routelab::server(lab, false)
}

/// `diagnose URL --json` from the lab's client namespace (its resolv.conf is the lab's), with
/// a short load.
fn diagnose_in(lab: &RouteLab, url: &str) -> (i32, Value) {
    let (code, r, err, _) =
        netdoctor_in(lab, &["diagnose", url, "-c", "4", "-d", "1500ms", "--json"]);
    crate::common::assert_schema(&r);
    assert!(matches!(code, 0 | 1 | 3), "exit {code}: {err}");
    (code, r)
}

#[test]
fn diagnose_tells_dead_from_slow_from_empty_and_an_unresolvable_name_is_a_diagnosis() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let url = "http://srv.lab.test:8080/";
    // Dead nameserver, empty resolv.conf: the name does not resolve; the DNS finding is the
    // diagnosis (exit 1, JSON, every other stage skipped with the reason).
    for (resolver, id) in [
        (Resolver::Dead, "dns_server_unreachable"),
        (Resolver::Empty, "dns_no_nameserver"),
    ] {
        let l = lab(0.0, 0.0, resolver);
        let (code, r) = diagnose_in(&l, url);
        assert_eq!(code, 1, "{id}: {r}");
        assert_eq!(r["verdict"], "problem", "{id}");
        assert_eq!(ids(&r), [id], "{r}");
        assert_eq!(r["findings"][0]["severity"], "critical", "{id}");
        assert!(r["target"]["address"].is_null(), "{id}");
        let (status, reason) = check(&r, "dns");
        assert_eq!(status, "failed", "{id}");
        assert!(
            reason.starts_with("srv.lab.test did not resolve"),
            "{reason}"
        );
        for stage in ["syn_probe", "load", "capture", "trace"] {
            assert_eq!(
                check(&r, stage),
                ("skipped", "srv.lab.test did not resolve"),
                "{id} {stage}"
            );
        }
        assert!(r["measurements"]["load"].is_null(), "{id}");
        l.stop().unwrap();
    }

    // Slow nameserver (300 ms per answer): the name resolves, the run goes on to the load, and
    // `dns_slow` is in the report with the server's median.
    let l = lab(
        0.0,
        0.0,
        Resolver::Lab(Behavior {
            delay: Duration::from_millis(300),
            ..Default::default()
        }),
    );
    let server = healthy_server(&l);
    let (code, r) = diagnose_in(&l, url);
    assert_eq!(code, 1, "{r}");
    assert_eq!(r["target"]["address"], "10.231.3.2:8080");
    assert!(ids(&r).contains(&"dns_slow".to_string()), "{:?}", ids(&r));
    assert_eq!(check(&r, "dns").0, "ok");
    assert_eq!(check(&r, "load").0, "ok");
    let median = r["measurements"]["dns"]["servers"][0]["udp"]["median_ms"]
        .as_f64()
        .unwrap();
    assert!((300.0..360.0).contains(&median), "{median}");
    let gai = r["measurements"]["dns"]["getaddrinfo"]["elapsed_ms"]
        .as_f64()
        .unwrap();
    assert!(gai >= 300.0, "getaddrinfo {gai} ms");
    server.stop();
    l.stop().unwrap();

    // The same name through a healthy nameserver, by its short name (search lab.test): no
    // DNS finding, the check says what the lookup took.
    let l = lab(0.0, 0.0, Resolver::Lab(Behavior::default()));
    let server = healthy_server(&l);
    let (_, r) = diagnose_in(&l, "http://srv:8080/");
    assert!(
        !ids(&r).iter().any(|i| i.starts_with("dns_")),
        "{:?}",
        ids(&r)
    );
    let (status, reason) = check(&r, "dns");
    assert_eq!(status, "ok");
    assert!(
        reason.contains("→ 10.231.3.2; 1 of 1 nameserver(s) answered"),
        "{reason}"
    );
    // A name the zone does not have: the resolver works, the name does not exist.
    let (code, r) = diagnose_in(&l, "http://nope.lab.test:8080/");
    assert_eq!(
        (code, ids(&r)),
        (1, vec!["dns_name_not_found".to_string()]),
        "{r}"
    );
    assert_eq!(
        check(&r, "load"),
        ("skipped", "nope.lab.test did not resolve")
    );
    server.stop();
    l.stop().unwrap();
}

#[test]
fn diagnose_of_a_target_behind_the_delayed_hop_finds_high_base_rtt_not_a_transport_cause() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let l = lab(37.0, 0.0, Resolver::Lab(Behavior::default()));
    let server = healthy_server(&l);
    let (code, r) = diagnose_in(&l, "http://10.231.3.2:8080/");
    assert_eq!(code, 1, "{r}");
    let base = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "high_base_rtt")
        .unwrap_or_else(|| panic!("{:?}", ids(&r)));
    assert_eq!(base["severity"], "warning", "{base}");
    let added = base["impact"]["added_latency_ms"].as_f64().unwrap();
    assert!((36.0..45.0).contains(&added), "base RTT {added} ms");
    let transport: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["layer"] == "transport")
        .collect();
    assert!(transport.is_empty(), "{transport:?}");
    let (status, reason) = check(&r, "trace");
    assert_eq!(status, "ok");
    assert!(
        reason.starts_with("tcp trace via 10.231.1.1: 3 hop(s)"),
        "{reason}"
    );
    assert_eq!(
        hop_ips(&r),
        [R1_IP.to_string(), R2_IP.to_string(), SERVER_IP.to_string()]
    );
    assert_eq!(check(&r, "dns").0, "skipped");
    // The load's median is the path's RTT plus almost nothing.
    let p50 = r["measurements"]["load"]["latency_ms"]["p50"]
        .as_f64()
        .unwrap();
    // (Under load 16-20 with a build in the same session this read 68-76 ms in 3 of 6 runs
    // while the bridge was at most 0.4 ms late: the excess is the client's or the server's
    // waiting for a CPU, and the capture's figures say which. The path's RTT itself is
    // checked above from the captured handshakes; the upper bound is checked only on a
    // machine that is not overloaded.)
    let captured = &r["measurements"]["capture"]["exchanges"];
    assert!(p50 >= 37.0, "p50 {p50} ms; captured exchanges: {captured}");
    let load1 = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    if load1 <= 2.0 * cpus {
        assert!(
            p50 < 60.0,
            "p50 {p50} ms (load average {load1}); captured exchanges: {captured}"
        );
    } else {
        eprintln!(
            "skipped: the load's p50 upper bound (60 ms) needs a machine not overloaded (load \
             average {load1} on {cpus} CPUs); p50 was {p50} ms"
        );
    }

    // --no-trace: the check says so, no route finding.
    let (_, r) = {
        let (code, r, err, _) = netdoctor_in(
            &l,
            &[
                "diagnose",
                "http://10.231.3.2:8080/",
                "-c",
                "4",
                "-d",
                "1s",
                "--no-trace",
                "--json",
            ],
        );
        assert!(matches!(code, 0 | 1 | 3), "{err}");
        (code, r)
    };
    assert_eq!(check(&r, "trace"), ("skipped", "--no-trace was given"));
    // Without the trace the SYN probe and the handshakes still measure the round trip.
    assert_eq!(ids(&r), ["high_base_rtt"], "{r}");
    let ev = r["findings"][0]["evidence"].to_string();
    assert!(
        ev.contains("syn probe") && ev.contains("captured handshakes"),
        "{ev}"
    );
    server.stop();
    l.stop().unwrap();
}

fn l2_lab(rtt_ms: f64) -> RouteLab {
    let cfg = RouteLabConfig {
        one_way_delay: Duration::from_secs_f64(rtt_ms / 2000.0),
        routers: false,
        ..Default::default()
    };
    RouteLab::start(&cfg).expect("start the route lab without routers")
}

/// A server 40 ms away behind a user-space bridge, no router in between (a VPN, a stretched
/// VLAN): there is no trace, and the SYN probe and the captured handshakes say 40 ms. The
/// server answers in microseconds, so the round trip is the latency: high_base_rtt, warning,
/// side network, verdict problem. The same lab without delay is a healthy local server.
#[test]
fn diagnose_without_routers_finds_the_base_rtt_from_syn_probe_and_handshakes() {
    let _turn = crate::common::file_turn(file!());
    let Some(_serial) = crate::routelab::begin() else {
        return;
    };
    let l = l2_lab(40.0);
    let server = healthy_server(&l);
    let (code, r) = diagnose_in(&l, "http://srv.lab.test:8080/");
    assert_eq!(code, 1, "{r}");
    assert_eq!(r["verdict"], "problem");
    let (status, reason) = check(&r, "trace");
    assert_eq!(status, "skipped");
    assert!(reason.contains("no router in between"), "{reason}");
    assert_eq!(ids(&r), ["high_base_rtt"], "{r}");
    let f = &r["findings"][0];
    assert_eq!(
        (f["severity"].as_str(), f["side"].as_str()),
        (Some("warning"), Some("network")),
        "{f}"
    );
    let added = f["impact"]["added_latency_ms"].as_f64().unwrap();
    assert!((39.0..46.0).contains(&added), "base RTT {added} ms");
    let summary = f["summary"].as_str().unwrap();
    assert!(
        summary.contains("of the requests' median latency"),
        "{summary}"
    );
    let ev = f["evidence"].to_string();
    assert!(
        ev.contains("syn probe") && ev.contains("captured handshakes"),
        "{ev}"
    );
    server.stop();
    l.stop().unwrap();

    // No delay: a healthy local server, no high_base_rtt.
    let l = l2_lab(0.0);
    let server = healthy_server(&l);
    let (code, r) = diagnose_in(&l, "http://srv.lab.test:8080/");
    assert!(!ids(&r).contains(&"high_base_rtt".to_string()), "{r}");
    assert_eq!((code, r["verdict"].as_str()), (0, Some("healthy")), "{r}");
    server.stop();
    l.stop().unwrap();
}

//! `netdoctor lab start --case CASE`: each case is started through the real binary, diagnosed
//! with exactly the command it prints (plus `--json`), checked for the finding it promises, and
//! stopped; then nothing of it may be left (namespaces, its process, /etc/netns dirs, state).
//! Needs root (skips with a printed reason otherwise). Lab names are unique to this test run and
//! every lab is stopped by name (never `lab stop` without `--name`, which would remove other
//! runs' labs), also when an assertion fails.

use crate::common::*;
use crate::labcase::*;
// The panicking lookup of the lab cases, not common's Option.
use crate::labcase::finding;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The band of a tail percentile is the full queue's: every request in it waited for a
/// repeated SYN or for a setup-time RTO (a dropped handshake ACK: the request resent after
/// 1 s + 2 s), which gave it ≥ 0.9 s and explains at least half of the band's time. The rest is
/// mostly server time: an accepted-late connection waits in the accept queue (the acceptor
/// takes one per 100 ms). Which of the two consequences the few slowest requests met is chance
/// (at load 11 the max band of the printed command held 2 requests, both RTO: 3.4 of 3.6 s),
/// so each band may be either; the caller asserts the SYN retransmits across its bands.
/// Returns the band's SYN retransmit time (ms).
fn assert_band_is_the_full_queues(report: &Value, band: &str) -> f64 {
    let b = &report["measurements"]["capture"]["exchanges"][band];
    let latency = b["latency"].as_f64().unwrap();
    let syn = b["stalls"]["syn_retransmit"].as_f64().unwrap();
    let rto = b["stalls"]["retransmission_timeout"].as_f64().unwrap();
    let share = |k: &str| b["share"][k].as_f64().unwrap();
    assert!(
        share("syn_retransmit") + share("retransmission_timeout") >= 0.999,
        "{band}: not every request waited for a repeated SYN or an RTO: {b}"
    );
    assert!(
        syn + rto >= 900.0,
        "{band}: SYN retransmit + RTO {syn} + {rto} ms: {b}"
    );
    assert!(
        syn + rto >= 0.5 * latency,
        "{band}: SYN retransmit + RTO {syn} + {rto} of {latency} ms: {b}"
    );
    eprintln!("{band}: {latency:.0} ms, SYN retransmit {syn:.0} ms, RTO {rto:.0} ms");
    syn
}

#[test]
fn backlog_is_a_listen_queue_overflow() {
    let _turn = crate::common::file_turn(file!());
    if !skip() {
        // The tail, live: with the printed command (keep-alive, ~90k requests, 47 of 50
        // connections' first request delayed) only the max band holds them; at 500 req/s
        // (~500 requests, the same 47) they are the p99 band too.
        let mut at_rate = Value::Null;
        let report = case_round_trip_with("backlog", "bl", |info| {
            let argv = suggested(info);
            let mut args = argv[1..argv.len() - 1].to_vec();
            args.extend(["--rate", "500", "--json", argv[argv.len() - 1]]);
            at_rate = json(&netdoctor(&args));
        });
        let syn = assert_band_is_the_full_queues(&report, "breakdown_max_ms")
            + assert_band_is_the_full_queues(&at_rate, "breakdown_p99_ms")
            + assert_band_is_the_full_queues(&at_rate, "breakdown_max_ms");
        // The repeated SYNs are found and timed: 47 first requests waited for one, and the
        // tail bands hold them (each ≥ 0.9 s), whichever band the RTOs took.
        assert!(
            syn >= 900.0,
            "no tail band waited for a repeated SYN: {syn} ms"
        );
        // The typical request is not: p50's band has no SYN retransmit.
        let p50 = &at_rate["measurements"]["capture"]["exchanges"]["breakdown_p50_ms"];
        assert_eq!(p50["stalls"]["syn_retransmit"], 0.0, "{p50}");
        // One root, its consequences under it: the repeated SYNs and the setup-time RTOs are
        // the overflow's, whatever side the packets alone suggested.
        let root = finding(&report, "listen_queue_overflow");
        assert_eq!(
            report["findings"][0]["id"], "listen_queue_overflow",
            "{report}"
        );
        assert_eq!(report["verdict"], "problem");
        for id in ["syn_retransmit", "retransmission_timeout"] {
            if let Some(f) = report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["id"] == id)
            {
                assert_eq!(f["caused_by"], "listen_queue_overflow", "{f}");
                assert!(
                    root["consequences"]
                        .as_array()
                        .unwrap()
                        .contains(&Value::from(id)),
                    "{root}"
                );
                // A share that rounds to 0 % says its counts.
                assert!(
                    !f["summary"].as_str().unwrap().contains(" 0% of requests"),
                    "{f}"
                );
            }
        }
        // Keep-alive: the repeated SYNs delayed the first request of each affected
        // connection, a small share of the requests; said apart from the connections.
        let syn = finding(&report, "syn_retransmit");
        let s = syn["summary"].as_str().unwrap();
        assert!(s.contains("connections, the first request of each"), "{s}");
        assert!(
            syn["impact"]["affected_fraction"].as_f64().unwrap() < 0.5,
            "{syn}"
        );
    }
}

#[test]
fn port_exhaustion_is_ephemeral_port_exhaustion() {
    let _turn = crate::common::file_turn(file!());
    if !skip() {
        let report = case_round_trip("port-exhaustion", "pe");
        // The load's own connect() calls failed with EADDRNOTAVAIL: that is the evidence, the
        // finding is critical, and the failed requests are its consequence.
        let f = finding(&report, "ephemeral_port_exhaustion");
        assert_eq!(f["severity"], "critical", "{f}");
        assert!(
            f["summary"].as_str().unwrap().contains("EADDRNOTAVAIL"),
            "{f}"
        );
        let errors = finding(&report, "http_errors");
        assert_eq!(errors["caused_by"], "ephemeral_port_exhaustion", "{errors}");
        // The case's server accepts as connections come (it used to look every 10 ms, and
        // every one-connection request waited for that): no server time to blame.
        let ids: Vec<&str> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert!(!ids.contains(&"slow_server_processing"), "{ids:?}");
        let server_p50 = report["measurements"]["capture"]["exchanges"]["server_time_ms"]["p50"]
            .as_f64()
            .unwrap();
        assert!(server_p50 < 5.0, "server time p50 {server_p50} ms");
        assert!(
            report["measurements"]["load"]["errors"]["connect_addr_not_avail"]
                .as_u64()
                .is_some_and(|n| n > 0),
            "{}",
            report["measurements"]["load"]
        );
    }
}

#[test]
fn syn_flood_is_a_syn_flood_and_the_flood_ends_with_the_lab() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    if !netdoctor_lab::tools::have(&[("hping3", "hping3"), ("iptables", "iptables")]) {
        return;
    }
    case_round_trip("syn-flood", "sf");
}

#[test]
fn dns_cases_are_told_apart() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    for (case, tag) in [
        ("slow-dns", "sd"),
        ("dead-dns", "dd"),
        ("no-dns", "nd"),
        ("ptr-timeout", "pt"),
    ] {
        case_round_trip(case, tag);
    }
}

/// The preflight cases: the printed command stops at the preflight with the case's finding on
/// its side, and the load never runs.
#[test]
fn preflight_cases_stop_before_the_load() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    for (case, tag, id, side) in [
        ("no-arp", "na", "neighbour_unreachable", "network"),
        ("no-route", "nr", "no_route", "client"),
    ] {
        let r = case_round_trip(case, tag);
        assert_eq!(ids(&r), [id], "{case}: {r}");
        assert_eq!(r["findings"][0]["side"], side, "{case}");
        assert_eq!(r["findings"][0]["severity"], "critical", "{case}");
        assert_eq!(r["verdict"], "problem", "{case}");
        assert!(r["measurements"]["load"].is_null(), "{case}: the load ran");
    }
}

/// HTTPS with a self-signed certificate: the printed command (no `-k`) stops at the preflight
/// with `tls_verify_failed` on the client's side, exit 1, no load; the same command with `-k`
/// (and 4 connections, as the case's note says: 100 TLS connections saturate a 2-core
/// machine's CPU, reported as `slow_server_processing` on the host) loads the server and
/// finds it healthy (exit 0). The case's nginx ends with the lab.
#[test]
fn self_signed_stops_at_the_preflight_without_k_and_is_healthy_with_it() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    if !netdoctor_lab::tools::have(&[("nginx", "nginx-light"), ("openssl", "openssl")]) {
        return;
    }
    let mut nginx_pid = None;
    let r = case_round_trip_with("self-signed", "ss", |info| {
        let st = json(&netdoctor(&[
            "lab",
            "status",
            "--name",
            info["lab"].as_str().unwrap(),
            "--json",
        ]));
        nginx_pid = st["case"]["processes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["label"].as_str().is_some_and(|l| l.contains("nginx")))
            .and_then(|p| p["pid"].as_u64());
        assert!(nginx_pid.is_some_and(pid_alive), "{st}");
        let argv = suggested(info);
        let url = *argv.last().unwrap();
        assert!(url.starts_with("https://"), "{argv:?}");
        let mut with_k = argv[1..argv.len() - 1].to_vec();
        with_k.extend(["-k", "-c", "4", "-d", "2s", "--json", url]);
        let out = netdoctor(&with_k);
        let r = json(&out);
        assert_schema(&r);
        let preflight = r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "preflight")
            .unwrap();
        assert_eq!(preflight["status"], "ok", "{r}");
        assert!(
            preflight["reason"]
                .as_str()
                .unwrap_or("")
                .contains("TLS unverified (-k)"),
            "{preflight}"
        );
        assert!(
            r["measurements"]["load"]["requests"].as_u64().unwrap_or(0) > 100,
            "-k: the load ran: {}",
            r["measurements"]["load"]
        );
        assert_eq!(r["verdict"], "healthy", "-k: {r}");
        assert_eq!(out.status.code(), Some(0), "-k: {}", stderr(&out));
    });
    assert_eq!(ids(&r), ["tls_verify_failed"], "{r}");
    let f = &r["findings"][0];
    assert_eq!(f["side"], "client", "{f}");
    assert_eq!(f["severity"], "critical", "{f}");
    assert!(f["fix"].as_str().unwrap().contains("-k"), "{f}");
    assert_eq!(r["verdict"], "problem");
    assert!(r["measurements"]["load"].is_null(), "the load ran: {r}");
    assert!(
        r["elapsed_s"].as_f64().unwrap() < 5.0,
        "the preflight stops in about a second: {}",
        r["elapsed_s"]
    );
    let pid = nginx_pid.unwrap();
    assert!(!pid_alive(pid), "the case's nginx {pid} outlived the lab");
}

/// A nameserver that answers every query after 2 s, with glibc's timeouts (5 s): getaddrinfo
/// succeeds, so it is `dns_slow` with its time, never `dns_server_unreachable`, and the run
/// goes on to the load.
#[test]
fn a_nameserver_that_answers_after_2_s_is_slow_not_unreachable() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    let r = case_round_trip("slow-dns-2s", "s2");
    let found = ids(&r);
    assert!(
        !found.iter().any(|i| i == "dns_server_unreachable"),
        "{found:?}"
    );
    let slow = finding(&r, "dns_slow");
    assert_eq!(slow["severity"], "warning", "{slow}");
    let median = r["measurements"]["dns"]["servers"][0]["udp"]["median_ms"]
        .as_f64()
        .unwrap();
    assert!((2000.0..2400.0).contains(&median), "{median}");
    let said = slow["impact"]["added_latency_ms"].as_f64().unwrap();
    assert!((median - said).abs() < 1.0, "{said} vs {median}");
    // The tries followed resolv.conf: glibc's 5 s deadline, 2 attempts.
    assert_eq!(r["measurements"]["dns"]["timeout_ms"], 5000.0, "{r}");
    assert_eq!(r["measurements"]["dns"]["tries"], 2, "{r}");
    assert!(!r["measurements"]["load"].is_null());
}

#[test]
fn far_server_and_lossy_hop_are_found_on_the_route() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    case_round_trip("far-server", "fs");
    case_round_trip("lossy-hop", "lh");
}

/// `far-server` over IPv6: the suggested command diagnoses an IPv6 URL and finds the path's RTT.
#[test]
fn ipv6_case_is_found_over_ipv6() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    let r = case_round_trip("ipv6", "v6");
    assert_eq!(
        r["target"]["address"]
            .as_str()
            .map(|a| a.starts_with("[fd00:231:3::2]")),
        Some(true),
        "{}",
        r["target"]
    );
}

#[test]
fn nagle_is_the_reference_lab() {
    let _turn = crate::common::file_turn(file!());
    if let Some(why) = lab_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    case_round_trip("nagle", "ng");
}

/// The case's process killed with SIGKILL (no handler runs): status says so, and `lab stop
/// --name` still removes every namespace and /etc/netns dir the case made; a second start with
/// the same name is refused while the first runs.
#[test]
fn a_killed_case_process_is_cleaned_by_stop_and_names_are_not_reused() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = name("kill");
    let (info, guard) = start("no-dns", &lab);
    let again = netdoctor(&["lab", "start", "--case", "no-dns", "--name", &lab]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("already running"),
        "{}",
        stderr(&again)
    );
    let pid = info["pid"].as_u64().unwrap();
    assert!(pid_alive(pid), "the refused start must not end the first");
    let namespaces: Vec<String> = info["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let ok = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    for _ in 0..100 {
        if !pid_alive(pid) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let st = json(&netdoctor(&["lab", "status", "--name", &lab, "--json"]));
    assert_eq!(st["running"], false, "{st}");
    assert_eq!(st["case"]["process_alive"], false, "{st}");
    let text = netdoctor(&["lab", "status", "--name", &lab]);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("broken"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    let out = netdoctor(&["lab", "stop", "--name", &lab]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_nothing_left("killed no-dns", &lab, &namespaces, Some(pid));
    drop(guard);
}

#[test]
fn unknown_case_is_a_usage_error_listing_the_cases() {
    let _turn = crate::common::file_turn(file!());
    let out = netdoctor(&["lab", "start", "--case", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("nope") && err.contains("syn-flood"), "{err}");
    let help = netdoctor(&["lab", "start", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    for case in netdoctor_lab::cases::ALL {
        assert!(
            text.contains(&format!("- {}:", case.name())),
            "{case} not in help: {text}"
        );
    }
}

#[test]
fn a_case_started_without_root_says_it_needs_root_and_makes_nothing() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root to drop to nobody with setpriv");
        return;
    }
    let lab = name("np");
    let out = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["lab", "start", "--case", "no-dns", "--name", &lab])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("needs root"), "{}", stderr(&out));
    assert!(!netdoctor_lab::netns_exists(&format!("{lab}-cli")));
    assert!(!Path::new(&format!("/run/netdoctor/lab-{lab}")).exists());
}

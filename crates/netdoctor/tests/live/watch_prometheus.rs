//! A real Prometheus (Debian's `prometheus` package) scrapes `netdoctor watch` while it watches
//! two nginx servers on 127.0.0.1: one with the Nagle stall (`tcp_nodelay off`, sendfile, a
//! ~600-byte page) and one without (`tcp_nodelay on`), each loaded with `netdoctor load -c 50`.
//! PromQL over Prometheus's HTTP API must return the nagle_delayed_ack series for the first port
//! and no problem series for the second; `promtool check metrics` must accept the live
//! exposition; the evidence ring must hold the stalled port's window (JSON + pcap) only; and
//! SIGTERM must end watch with exit code 0.
//!
//! Needs root (packet capture), nginx and prometheus/promtool; skipped with the reason printed
//! otherwise. Every process it starts is stopped by PID on drop, also when an assertion fails.

use crate::prom::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn prometheus_sees_the_nagle_finding_and_nothing_on_the_healthy_port() {
    let _turn = crate::common::file_turn(file!());
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED prometheus_sees_the_nagle_finding…: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (stall, healthy) = (free_port(), free_port());
    let _nginx = Nginx::start(&tmp.path().join("nginx"), stall, healthy);

    let ring = tmp.path().join("ring");
    let (mut watch, metrics) = start_watch(&[
        "-p",
        &format!("{stall},{healthy}"),
        "--window",
        "3s",
        "--dir",
        ring.to_str().unwrap(),
        "--keep",
        "3",
    ]);

    // The shipped alert rules, with `for: 1m` (two 30 s windows) shortened to two of this
    // test's 3 s windows.
    let rules = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/alerts/netdoctor-rules.yaml"),
    )
    .expect("shipped rules");
    assert!(rules.contains("for: 1m"));
    let rules_file = tmp.path().join("rules.yaml");
    std::fs::write(&rules_file, rules.replace("for: 1m", "for: 2s")).unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n\
         scrape_configs:\n  \
         - job_name: netdoctor\n    static_configs:\n      - targets: ['{metrics}']\n",
        rules_file.display()
    );
    let (_prom, prom) = start_prometheus(&tmp.path().join("prom"), &config, &[]);

    load(stall, 5, None);
    load(healthy, 5, Some(5000));
    // Both ports' loaded windows must have ended and been scraped.
    let q_requests = format!("max_over_time(netdoctor_requests_total{{port=\"{healthy}\"}}[10m])");
    wait_for(
        "Prometheus to see the healthy port's requests",
        Duration::from_secs(30),
        || {
            promql(prom, &q_requests).first().is_some_and(|s| {
                s["value"][1]
                    .as_str()
                    .and_then(|v| v.parse::<f64>().ok())
                    .is_some_and(|v| v > 1000.0)
            })
        },
    );
    let q_nagle = format!(
        "max_over_time(netdoctor_finding_active{{id=\"nagle_delayed_ack\",port=\"{stall}\"}}[10m]) > 0"
    );
    wait_for(
        "the nagle_delayed_ack series in Prometheus",
        Duration::from_secs(15),
        || !promql(prom, &q_nagle).is_empty(),
    );
    let series = promql(prom, &q_nagle);
    assert_eq!(series[0]["metric"]["side"], "server", "{series:?}");
    let q_added = format!(
        "max_over_time(netdoctor_finding_added_latency_seconds{{id=\"nagle_delayed_ack\",port=\"{stall}\"}}[10m])"
    );
    let added: f64 = promql(prom, &q_added)[0]["value"][1]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (0.03..0.25).contains(&added),
        "added latency {added} s is not the delayed-ACK timer"
    );
    let q_healthy =
        format!("max_over_time(netdoctor_finding_severity{{port=\"{healthy}\"}}[10m]) >= 2");
    assert_eq!(
        promql(prom, &q_healthy),
        Vec::<serde_json::Value>::new(),
        "problem series on the tcp_nodelay-on port"
    );
    let q_windows = format!(
        "max_over_time(netdoctor_windows_total{{port=\"{stall}\",verdict=\"problem\"}}[10m])"
    );
    assert!(!promql(prom, &q_windows).is_empty());

    // The shipped alert fired for the stalled port, with its runbook, and never for the other.
    let q_fired = format!(
        "max_over_time(ALERTS{{alertname=\"NetdoctorNagleDelayedAck\",alertstate=\"firing\",port=\"{stall}\"}}[10m])"
    );
    wait_for(
        "the NetdoctorNagleDelayedAck alert to fire",
        Duration::from_secs(20),
        || !promql(prom, &q_fired).is_empty(),
    );
    // The loaded rule carries its runbook (the alert itself has resolved once the load ended).
    let (_, rules) = http_get(prom, "/api/v1/rules?type=alert").unwrap();
    assert!(
        rules.contains("NetdoctorNagleDelayedAck") && rules.contains("TCP_NODELAY"),
        "runbook missing: {rules}"
    );
    let q_any_healthy = format!("max_over_time(ALERTS{{port=\"{healthy}\"}}[10m])");
    assert_eq!(
        promql(prom, &q_any_healthy),
        Vec::<serde_json::Value>::new()
    );

    // The fix (tcp_nodelay on), under load again: the port's windows are healthy with traffic
    // and the alert resolves.
    _nginx.fix(stall, healthy);
    load(stall, 7, Some(5000));
    let q_healthy_windows = format!(
        "increase(netdoctor_windows_total{{port=\"{stall}\",verdict!=\"problem\"}}[15s]) > 0 \
         and on(port) increase(netdoctor_requests_total{{port=\"{stall}\"}}[15s]) > 1000"
    );
    wait_for(
        "a window of the fixed port with traffic and no problem",
        Duration::from_secs(15),
        || !promql(prom, &q_healthy_windows).is_empty(),
    );
    let q_alert_now = format!("ALERTS{{alertname=\"NetdoctorNagleDelayedAck\",port=\"{stall}\"}}");
    wait_for(
        "the alert to resolve after the fix",
        Duration::from_secs(15),
        || promql(prom, &q_alert_now).is_empty(),
    );

    // promtool accepts the live exposition (classic text format, as curl gets it).
    let (_, text) = http_get(metrics, "/metrics").unwrap();
    let mut pt = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    pt.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = pt.wait_with_output().unwrap();
    let msg = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && msg.trim().is_empty(),
        "promtool: {msg}"
    );

    // SIGTERM: the window in progress ends, and watch exits 0.
    assert!(watch.pid() > 0);
    assert_eq!(watch.terminate(Duration::from_secs(10)), Some(0));

    // The evidence ring holds the stalled port's problem windows only, each with its pcap.
    let names: Vec<String> = std::fs::read_dir(&ring)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    // On a busy machine the healthy port can have a problem window of its own (a warning
    // from a CPU-starved nginx); Prometheus above already showed it has no critical finding.
    // The bound is per port.
    let jsons: Vec<&String> = names
        .iter()
        .filter(|n| n.ends_with(&format!("-p{stall}.json")))
        .collect();
    assert!(!jsons.is_empty(), "no problem window kept: {names:?}");
    for port in [stall, healthy] {
        let n = names
            .iter()
            .filter(|n| n.ends_with(&format!("-p{port}.json")))
            .count();
        assert!(
            n <= 3,
            "ring not bounded to --keep 3 for port {port}: {names:?}"
        );
    }
    for j in names.iter().filter(|n| n.ends_with(".json")) {
        let pcap = j.replace(".json", ".pcap");
        assert!(names.contains(&pcap), "{j} has no pcap: {names:?}");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(ring.join(j)).unwrap()).unwrap();
        assert_eq!(report["verdict"], "problem");
    }
    // At least one kept window ended while the load held connections open: its report carries
    // nginx's socket options, which confirm the finding (TCP_NODELAY off).
    let with_sockets = jsons
        .iter()
        .filter_map(|j| {
            serde_json::from_slice::<serde_json::Value>(&std::fs::read(ring.join(j)).ok()?).ok()
        })
        .filter(|r| {
            r["checks"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["name"] == "socket_options" && c["status"] == "ok")
            })
        })
        .count();
    assert!(
        with_sockets > 0,
        "no kept window read nginx's socket options"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("current-")),
        "window-in-progress files left behind: {names:?}"
    );
}

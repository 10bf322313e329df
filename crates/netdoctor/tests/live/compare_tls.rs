//! `diagnose -k https://A --compare https://B` over TLS, as issue 21 tried it: A is nginx with
//! `tcp_nodelay off`, B the same with `on` (netdoctor-lab's `tls_nginx` Nagle case: an 8 KiB
//! page in 4 KiB TLS records, so each response leaves in several writes and, with Nagle on,
//! waits for the client's delayed ACK). Both nginx run in a namespace this test creates, removed
//! (and nginx stopped by PID) on drop, also on failure. Checked in the default (closed-loop)
//! mode and at one constant rate (`--rate`): the comparison says fixed, and its latency
//! sentence agrees with the p99 and the throughput beside it. The same server twice must not
//! read as a change, also when one run was starved of CPU by busy loops (this test's own, ended
//! by PID); a real regression measured beside them must still read as one. Needs root,
//! nginx-light and openssl; skips with the reason otherwise.

use crate::common::*;
use netdoctor_lab::hostcases::HostLab;
use netdoctor_lab::tls_nginx::{TlsNginx, TlsNginxConfig, TlsNginxError};
use serde_json::Value;
use std::sync::Mutex;

/// One load at a time: a load on a 2-core machine disturbs another.
static SERIAL: Mutex<()> = Mutex::new(());

/// The namespace and the two servers (`off`, `on`); all removed on drop.
struct Servers {
    off: TlsNginx,
    on: TlsNginx,
    lab: HostLab,
}

/// nginx over TLS in the lab's server namespace, Nagle's case (4 KiB records, 8 KiB page),
/// on free ports or `ports`.
fn nginx(
    lab: &HostLab,
    tcp_nodelay: bool,
    ports: Option<(u16, u16)>,
) -> Result<TlsNginx, TlsNginxError> {
    let cfg = TlsNginxConfig {
        tcp_nodelay,
        ssl_buffer_size: Some(4096),
        page_bytes: Some(8192),
        ports,
        ..TlsNginxConfig::default()
    };
    // nginx inherits the namespace of the thread that starts it.
    lab.in_ns(lab.server_netns(), move || TlsNginx::start(&cfg))
        .unwrap()
}

/// The namespace, or `None` (the reason printed) without root.
fn lab(tag: &str) -> Option<HostLab> {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return None;
    }
    Some(
        HostLab::create(&format!("ndct-{tag}-{}", std::process::id()), false)
            .expect("create netns"),
    )
}

/// The server, or `None` (the reason printed) when nginx or openssl is missing.
fn started(r: Result<TlsNginx, TlsNginxError>) -> Option<TlsNginx> {
    match r {
        Ok(n) => Some(n),
        Err(TlsNginxError::Missing(tool)) => {
            eprintln!("skipped: needs {tool} (apt-get install nginx-light openssl)");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn servers(tag: &str) -> Option<Servers> {
    let lab = lab(tag)?;
    let off = started(nginx(&lab, false, None))?;
    let on = started(nginx(&lab, true, None))?;
    Some(Servers { off, on, lab })
}

fn compare(s: &Servers, extra: &[&str]) -> (i32, Value) {
    let (a, b) = (s.off.https_url(), s.on.https_url());
    let mut args = vec![
        "diagnose",
        "-k",
        "-d",
        "3s",
        "--json",
        "--netns",
        s.lab.server_netns(),
    ];
    args.extend_from_slice(extra);
    args.extend([a.as_str(), "--compare", b.as_str()]);
    let out = netdoctor(&args);
    let code = out.status.code().unwrap_or(-1);
    let c = json(&out);
    assert_compare_schema(&c);
    (code, c)
}

/// Fixed, Nagle fixed, and a latency sentence that agrees with p99 and requests/s: B's p99 is
/// lower by more than the noise rule's minimum, the judgement is `better`, the sentence says
/// "lower" and names p99, and says "higher" only with the reason (the offered load).
fn assert_fixed_and_consistent(code: i32, c: &Value) {
    let summary = c["summary"].as_str().unwrap();
    eprint_waits(c);
    for run in ["a", "b"] {
        let slots: Vec<(u64, f64)> = c[run]["report"]["measurements"]["load"]["timeline"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                (
                    s["requests"].as_u64().unwrap_or(0),
                    s["p99_ms"].as_f64().unwrap_or(-1.0),
                )
            })
            .collect();
        eprintln!("{run}: per-second (requests, p99 ms): {slots:?}");
    }
    assert_eq!(c["verdict"], "fixed", "{summary}");
    assert_eq!(code, 0, "{summary}");
    let nagle = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "nagle_delayed_ack")
        .unwrap_or_else(|| panic!("no nagle row: {:#}", c["findings"]));
    assert_eq!(nagle["change"], "fixed", "{nagle:#}");
    let p = &c["performance"];
    assert_eq!(p["direction"], "better", "{p:#}");
    assert_eq!(p["tail"], "better", "{p:#}");
    assert_ne!(p["throughput"], "worse", "{p:#}");
    let (a99, b99) = compare_metric(c, "latency_p99_ms");
    let min = p["p99_min_change_ms"].as_f64().unwrap();
    assert!(a99 - b99 >= min, "p99 {a99} → {b99}, must fall by {min}");
    let (ra, rb) = compare_metric(c, "requests_per_s");
    assert!(rb >= ra * 0.9, "requests/s {ra} → {rb}");
    assert_says_lower(summary);
    eprintln!("{summary}");
}

#[test]
fn nagle_off_vs_on_over_tls_closed_loop_is_fixed_and_says_so_consistently() {
    let _turn = crate::common::file_turn(file!());
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = servers("cl") else {
        return;
    };
    let (code, c) = compare(&s, &["-c", "20"]);
    assert!(c.get("offered_rate").is_none(), "{c:#}");
    assert_eq!(c["performance"]["same_rate"], false);
    assert_fixed_and_consistent(code, &c);
}

/// Both runs at one constant rate, chosen so the stall exists. At a rate, each keep-alive
/// connection gets a request every `g = c / rate` seconds. The stall needs the client to delay
/// its ACK of the response's first record, which Linux does only in "pingpong" (interactive)
/// mode: the client sent its request within the delayed-ACK timeout (`ato`, 40 ms after a
/// stall) of its last receive. Otherwise it ACKs a small pushed segment as soon as the
/// application has read it, and the stall vanishes: at `g` = 100 ms (20 connections at
/// 200 req/s) A's p50 was 0.4 ms. So `g` must be above the ~44 ms a stalled request takes (or
/// the open loop falls behind the `off` server) and below that plus 40 ms (or the connection
/// leaves pingpong mode for good): 12 connections at 200 req/s give `g` = 60 ms, 73 % of the
/// `off` server's closed-loop capacity (12 / 44 ms ≈ 270 req/s).
#[test]
fn nagle_off_vs_on_over_tls_at_one_rate_is_fixed_and_says_so_consistently() {
    let _turn = crate::common::file_turn(file!());
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = servers("rt") else {
        return;
    };
    let (code, c) = compare(&s, &["-c", "12", "--rate", "200"]);
    assert_eq!(c["offered_rate"]["rate"], 200.0, "{c:#}");
    assert_eq!(c["offered_rate"]["chosen"], "given");
    assert_eq!(
        c["performance"]["same_rate"], true,
        "{:#}",
        c["performance"]
    );
    // The stall exists at this rate: A's p50 is the delayed ACK's.
    let (a50, b50) = compare_metric(&c, "latency_p50_ms");
    assert!(a50 >= 30.0, "no stall at this rate: A p50 {a50} ms");
    assert!(b50 < 15.0, "B p50 {b50} ms");
    // Same offered load: throughput did not move, and no median note is needed.
    assert_eq!(
        c["performance"]["throughput"], "same",
        "{:#}",
        c["performance"]
    );
    assert_eq!(c["performance"]["median_confounded"], false);
    assert_fixed_and_consistent(code, &c);
}

/// The noise the p99 rule must not fire on (issue 21: at 500 req/s the p99 moved ×1.5 between
/// two runs of one server): the same `on` server twice at 500 req/s. Whatever the two p99s
/// are, the tail is `same` unless they differ by the rule's minimum, and the comparison is
/// `unchanged`.
#[test]
fn the_same_server_twice_at_500_per_s_has_the_same_tail() {
    let _turn = crate::common::file_turn(file!());
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = servers("nz") else {
        return;
    };
    let url = s.on.https_url();
    let out = netdoctor(&[
        "diagnose",
        "-k",
        "-d",
        "3s",
        "-c",
        "20",
        "--rate",
        "500",
        "--json",
        "--netns",
        s.lab.server_netns(),
        &url,
        "--compare",
        &url,
    ]);
    let c = json(&out);
    assert_compare_schema(&c);
    let p = &c["performance"];
    let (a99, b99) = compare_metric(&c, "latency_p99_ms");
    let min = p["p99_min_change_ms"].as_f64().unwrap();
    eprintln!(
        "p99 {a99} → {b99} ms, minimum change {min} ms: {}",
        c["summary"]
    );
    assert!(min >= 1.0, "{p:#}");
    if (a99 - b99).abs() < min {
        assert_eq!(p["tail"], "same", "{p:#}");
    }
    assert_ne!(p["direction"], "worse", "{p:#}");
    assert_ne!(p["direction"], "better", "{p:#}");
    assert_eq!(c["verdict"], "unchanged", "{}", c["summary"]);
}

/// Busy loops this test starts (`timeout 60 sh -c 'while :; do :; done'`, one per CPU), ended
/// by PID on drop, also on failure: SIGTERM to `timeout`, which passes it on to its loop (a
/// SIGKILL would end `timeout` alone and leave the loop spinning).
struct BusyLoops(Vec<std::process::Child>);

impl BusyLoops {
    fn start(n: usize) -> BusyLoops {
        BusyLoops(
            (0..n)
                .map(|_| {
                    std::process::Command::new("timeout")
                        .args(["60", "sh", "-c", "while :; do :; done"])
                        .spawn()
                        .expect("start a busy loop")
                })
                .collect(),
        )
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
    }
}

/// Run A of `url` beside busy loops (one per CPU) for its whole length, saved; then
/// `between` (a change to the server, or nothing); run B of `url` quiet against A
/// (`--baseline`). Both `-d 3s --json` in namespace `netns` with `args`.
fn a_beside_busy_loops(netns: &str, args: &[&str], url: &str, between: impl FnOnce()) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("a.json");
    let saved_arg = saved.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut all = vec!["diagnose", "-k", "-d", "3s", "--json", "--netns", netns];
        all.extend_from_slice(args);
        all.extend_from_slice(extra);
        all.push(url);
        netdoctor(&all)
    };
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let busy = BusyLoops::start(cpus);
    let a = run(&[]);
    drop(busy);
    std::fs::write(&saved, &a.stdout).unwrap();
    between();
    let c = json(&run(&["--baseline", saved_arg]));
    assert_compare_schema(&c);
    eprint_waits(&c);
    c
}

/// Session 17's wrong story, made on purpose: the same `on` server twice at 500 req/s, run A
/// beside busy loops (one per CPU) for its whole length and saved, run B quiet against it
/// (`--baseline`). A starved run is slow in every second alike, so the per-second noise does
/// not cover it ("B is better, p99 8.0 → 4.2 ms"). The runs' own evidence must: A's load
/// threads waited for a CPU more than B's, and the comparison claims no change; when it
/// withheld a direction it names A and says why. Ignored in sessions 18 and 19 as a known
/// wrong story: the mean share missed moderate starvation (session 18; the tail of each
/// request's waits covers it since), and the starved A's *p50* was lower (0.09 vs 0.20 ms)
/// and read as "B is worse" (session 19). A busy host moves a short request's p50 either way
/// (`compare::judge`'s module docs: measured, the CPU time of each wake-up halves beside
/// nice-0 loops), so that median is withheld too (`busy`).
#[test]
fn the_same_server_with_run_a_starved_of_cpu_is_not_better() {
    let _turn = crate::common::file_turn(file!());
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = servers("st") else {
        return;
    };
    let url = s.on.https_url();
    let args = ["-c", "20", "--rate", "500"];
    // The premise, A waited more than B, fails when this shared host is as busy from
    // elsewhere during B (seen at a load average of 13: A 38 %, B 38 %): measured again then,
    // up to three times. Whatever the host did, one server twice is no change.
    for attempt in 1..=3 {
        let c = a_beside_busy_loops(s.lab.server_netns(), &args, &url, || {});
        let p = &c["performance"];
        let share = p["cpu_wait_share"].as_array().expect("cpu_wait_share");
        let (sa, sb) = (share[0].as_f64().unwrap(), share[1].as_f64().unwrap());
        let (a99, b99) = compare_metric(&c, "latency_p99_ms");
        let (a50, b50) = compare_metric(&c, "latency_p50_ms");
        let summary = c["summary"].as_str().unwrap();
        eprintln!(
            "attempt {attempt}: load threads waiting for a CPU: A {sa:.3}, B {sb:.3}; \
             p50 {a50} → {b50} ms, p99 {a99} → {b99} ms: {summary}"
        );
        assert_ne!(p["direction"], "better", "{p:#}");
        assert_ne!(p["direction"], "worse", "{p:#}");
        assert_eq!(c["verdict"], "unchanged", "{summary}");
        if sa <= sb {
            assert!(attempt < 3, "B was as busy as A three times: {p:#}");
            continue;
        }
        assert_ne!(p["tail"], "better", "{p:#}");
        if !p["starved"].is_null() {
            assert_eq!(p["starved"], "a", "{p:#}");
            assert!(
                summary.contains("run A's load generator waited for a CPU")
                    || summary.contains("run A's requests waited for a CPU"),
                "{summary}"
            );
        }
        if !p["busy"].is_null() {
            assert_eq!(p["busy"], "a", "{p:#}");
            assert!(
                summary.contains("run A was measured on a busy host"),
                "{summary}"
            );
        }
        return;
    }
}

/// A real regression beside the busy loops: run A is the `on` server beside them (starved as
/// above); then that server is replaced on the same ports by the `off` one, whose responses
/// wait for the client's delayed ACK (p50 ≥ 30 ms at 12 connections and 200 req/s, the rate
/// test's setting above), and run B measures it quiet. The busy A must not hide the
/// regression: B is the slower overall and at the median, no direction is withheld as the busy
/// run's, and the tail is not called better. The tail is not asserted `worse`: on this shared
/// host (load average 11) B's 40 ms requests each sat through more of its load thread's waits
/// for a CPU than A's short ones (request-wait p99 53–91 ms against 20–34 ms), and the tail
/// rule then withheld B's higher p99 as B's waits' (`starved: b`) in 2 of 8 runs.
#[test]
fn a_real_regression_beside_busy_loops_is_still_worse() {
    let _turn = crate::common::file_turn(file!());
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab("rg") else {
        return;
    };
    let Some(on) = started(nginx(&lab, true, None)) else {
        return;
    };
    let url = on.https_url();
    let ports = (on.https.port(), on.http.port());
    let mut off = None;
    let args = ["-c", "12", "--rate", "200"];
    let c = a_beside_busy_loops(lab.server_netns(), &args, &url, || {
        drop(on);
        off = Some(nginx(&lab, false, Some(ports)).expect("the off server on the same ports"));
    });
    drop(off);
    let p = &c["performance"];
    let (a50, b50) = compare_metric(&c, "latency_p50_ms");
    eprintln!("p50 {a50} → {b50} ms: {}", c["summary"]);
    assert!(b50 >= 30.0, "no stall in B: p50 {b50} ms");
    assert_eq!(p["direction"], "worse", "{p:#}");
    assert_eq!(p["median"], "worse", "{p:#}");
    assert_ne!(p["tail"], "better", "{p:#}");
    assert!(p["busy"].is_null(), "{p:#}");
    assert_ne!(p["starved"], "a", "{p:#}");
    assert!(
        c["verdict"] == "new" || c["verdict"] == "worse",
        "{}",
        c["summary"]
    );
    let nagle = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "nagle_delayed_ack")
        .unwrap_or_else(|| panic!("no nagle row: {:#}", c["findings"]));
    assert_eq!(nagle["change"], "new", "{nagle:#}");
}

fn eprint_waits(c: &Value) {
    for run in ["a", "b"] {
        let l = &c[run]["report"]["measurements"]["load"];
        eprintln!(
            "WAITS {run}: p50 {} p99 {} cpu_wait {}",
            l["latency_ms"]["p50"], l["latency_ms"]["p99"], l["cpu_wait"]
        );
    }
}

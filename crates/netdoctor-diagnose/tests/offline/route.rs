//! The names and the route in a diagnosis, on a recorded host (no root, no network, no
//! resolver asked): a name that does not resolve is a diagnosis with the DNS finding; a slow
//! resolver joins the report of a run that goes on; a routed target is traced and its base RTT
//! compared with the load; IP targets, direct networks and the off switches skip with the
//! reason. The real thing on the route lab: `crates/netdoctor/tests/live/route_lab.rs`.

use netdoctor_core::{FindingId, Severity, Verdict};
use netdoctor_diagnose::fake::FakeHost;
use netdoctor_diagnose::{DiagnoseError, DiagnosePlan, Silent, TargetSpec, run};
use netdoctor_load::{LoadResult, Percentiles};
use netdoctor_report::{CheckStatus, Report};
use netdoctor_route::dns::config::parse_resolv_conf;
use netdoctor_route::dns::query::{Outcome, Transport, Try};
use netdoctor_route::dns::{DnsReport, ResolverPath, ServerTiming, TransportTiming};
use netdoctor_route::names::SystemLookup;
use netdoctor_route::route_table::NextHop;
use netdoctor_route::trace::probe::ReplyKind;
use netdoctor_route::trace::stats::{Hop, Sample};
use netdoctor_route::trace::{Protocol, TraceResult};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::atomic::AtomicBool;

const ADDR: &str = "10.0.3.2:8080";

fn plan(host: &str) -> DiagnosePlan {
    DiagnosePlan::new(TargetSpec {
        input: format!("http://{host}:8080/"),
        host: host.into(),
        port: 8080,
        path: "/".into(),
        host_header: format!("{host}:8080"),
        tls: None,
        scheme: netdoctor_load::target::Scheme::Http,
    })
}

fn load(p50: f64) -> LoadResult {
    LoadResult {
        connections: 4,
        threads: 1,
        duration_s: 2.0,
        requests: 200,
        requests_per_s: 100.0,
        bytes_read: 170_600,
        transfer_per_s: 85_300.0,
        latency_ms: Percentiles {
            p50,
            p99: p50 * 1.2,
            max: p50 * 1.5,
            ..Percentiles::default()
        },
        status: [(200, 200)].into_iter().collect(),
        errors: Default::default(),
        connects: 0,
        first_error: None,
        rate: None,
        latency_histogram: None,
        latency_curve: None,
        timeline: None,
        protocol: None,
        h2: None,
        cpu_wait: None,
        spin: None,
    }
}

fn host(p50: f64) -> FakeHost {
    FakeHost::answering(ADDR.parse().unwrap(), load(p50))
}

fn check(r: &Report, name: &str) -> (CheckStatus, String) {
    let c = r
        .checks
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("no check {name} in {:?}", r.checks));
    (c.status, c.reason.clone().unwrap_or_default())
}

fn ids(r: &Report) -> Vec<FindingId> {
    r.findings.iter().map(|f| f.id).collect()
}

fn answered(ms: f64) -> Try {
    Try {
        elapsed_ms: Some(ms),
        outcome: Outcome::Answer {
            rcode: "No Error".into(),
            answers: vec!["A 10.0.3.2".into()],
            truncated: false,
        },
    }
}

fn lost() -> Try {
    Try {
        elapsed_ms: None,
        outcome: Outcome::Timeout,
    }
}

/// A DNS result as `netdoctor-route` records it: `resolv` is the resolv.conf text, `udp` the
/// tries at its first nameserver, `gai` the getaddrinfo outcome (`Err`: its message).
fn dns(resolv: &str, udp: Vec<Try>, gai: Result<f64, &str>) -> DnsReport {
    let rc = parse_resolv_conf(Path::new("/etc/resolv.conf"), resolv);
    let servers = rc
        .nameservers
        .iter()
        .map(|&server| ServerTiming {
            server,
            position: 0,
            udp: TransportTiming::from_tries(Transport::Udp, udp.clone()),
            tcp: None,
            aaaa: None,
        })
        .collect();
    DnsReport {
        name: "svc.example".into(),
        query_name: "svc.example.".into(),
        record_type: "A".into(),
        resolver: ResolverPath {
            nsswitch_path: "/etc/nsswitch.conf".into(),
            nsswitch_hosts: Some(vec!["files".into(), "dns".into()]),
            resolv_conf: rc,
            hosts_path: "/etc/hosts".into(),
            hosts_matches: vec![],
        },
        timeout_ms: 1000.0,
        tries: 2,
        getaddrinfo: Some(match gai {
            Ok(ms) => SystemLookup {
                elapsed_ms: Some(ms),
                timed_out: false,
                results: vec!["10.0.3.2".into()],
                error: None,
            },
            Err(e) => SystemLookup {
                elapsed_ms: Some(1002.0),
                timed_out: false,
                results: vec![],
                error: Some(e.into()),
            },
        }),
        servers,
        search: None,
        reverse: vec![],
        answered_without_dns: false,
        notes: vec!["reverse (PTR) lookups skipped".into()],
    }
}

const TEMP_FAIL: &str = "Temporary failure in name resolution";

fn unresolved_host(report: DnsReport) -> FakeHost {
    let mut h = host(1.0);
    h.dns = Some(report);
    h.resolve_error = Some(TEMP_FAIL.into());
    h
}

/// Every stage after resolution is skipped, naming the reason; nothing was traced.
fn assert_unresolved_diagnosis(r: &Report, h: &FakeHost, finding: FindingId) {
    assert_eq!(r.verdict, Verdict::Problem, "{:?}", r.findings);
    assert_eq!(r.exit_code(), 1);
    assert_eq!(r.findings[0].id, finding, "{:?}", ids(r));
    assert_eq!(r.findings[0].severity, Severity::Critical);
    assert!(r.target.address.is_none());
    let (status, reason) = check(r, "dns");
    assert_eq!(status, CheckStatus::Failed);
    assert!(
        reason.starts_with("svc.example did not resolve"),
        "{reason}"
    );
    assert!(reason.contains(TEMP_FAIL), "{reason}");
    for stage in [
        "syn_probe",
        "http_probe",
        "trace",
        "load",
        "capture",
        "counters",
    ] {
        assert_eq!(
            check(r, stage),
            (
                CheckStatus::Skipped,
                "svc.example did not resolve".to_string()
            ),
            "{stage}"
        );
    }
    assert!(r.measurements.dns.is_some());
    assert!(r.measurements.probe.is_none() && r.measurements.load.is_none());
    assert!(h.traces_asked.lock().unwrap().is_empty());
    // The report is a whole report: it reads back from its JSON.
    let back: Report = serde_json::from_str(&serde_json::to_string(r).unwrap()).unwrap();
    assert_eq!(back.verdict, Verdict::Problem);
    assert_eq!(
        back.measurements.dns.unwrap()["resolver"]["resolv_conf"]["nameservers"],
        serde_json::to_value(
            &r.measurements.dns.as_ref().unwrap()["resolver"]["resolv_conf"]["nameservers"]
        )
        .unwrap()
    );
}

#[test]
fn a_dead_nameserver_is_the_diagnosis_not_an_error() {
    let h = unresolved_host(dns(
        "nameserver 10.0.3.54\noptions timeout:1 attempts:1\n",
        vec![lost(), lost()],
        Err(TEMP_FAIL),
    ));
    let r = run(&plan("svc.example"), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_unresolved_diagnosis(&r, &h, FindingId::DnsServerUnreachable);
    assert_eq!(ids(&r), [FindingId::DnsServerUnreachable]);
}

#[test]
fn an_empty_resolv_conf_is_the_diagnosis_not_an_error() {
    let h = unresolved_host(dns("search example\n", vec![], Err(TEMP_FAIL)));
    let r = run(&plan("svc.example"), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_unresolved_diagnosis(&r, &h, FindingId::DnsNoNameserver);
    assert_eq!(ids(&r), [FindingId::DnsNoNameserver]);
}

#[test]
fn a_name_the_nameservers_say_does_not_exist_is_the_diagnosis() {
    let nx = Try {
        elapsed_ms: Some(0.4),
        outcome: Outcome::Answer {
            rcode: "Non-Existent Domain".into(),
            answers: vec![],
            truncated: false,
        },
    };
    let mut report = dns(
        "nameserver 10.0.3.53\n",
        vec![nx.clone(), nx],
        Err("Name or service not known"),
    );
    report.getaddrinfo.as_mut().unwrap().elapsed_ms = Some(2.0);
    let h = unresolved_host(report);
    let r = run(&plan("svc.example"), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(r.verdict, Verdict::Problem);
    assert_eq!(ids(&r), [FindingId::DnsNameNotFound]);
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn a_failure_only_the_second_lookup_sees_is_still_a_diagnosis() {
    // The timed lookup answered, the run's own resolution then failed (a flapping resolver).
    let mut h = unresolved_host(dns(
        "nameserver 10.0.3.53\n",
        vec![answered(300.0), lost()],
        Ok(310.0),
    ));
    h.resolve_error = Some(TEMP_FAIL.into());
    let r = run(&plan("svc.example"), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(r.verdict, Verdict::Problem);
    assert_eq!(ids(&r), [FindingId::DnsSlow]);
    let (status, reason) = check(&r, "dns");
    assert_eq!(status, CheckStatus::Failed);
    assert!(
        reason.starts_with(&format!(
            "resolve svc.example: {TEMP_FAIL}; getaddrinfo 310.0 ms"
        )),
        "{reason}"
    );
}

#[test]
fn a_slow_nameserver_joins_the_report_of_a_run_that_goes_on() {
    let mut h = host(1.0);
    h.dns = Some(dns(
        "nameserver 10.0.3.53\n",
        vec![answered(300.0), answered(305.0)],
        Ok(302.0),
    ));
    let r = run(&plan("svc.example"), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(r.target.address.as_deref(), Some(ADDR));
    assert_eq!(r.verdict, Verdict::Problem);
    assert!(ids(&r).contains(&FindingId::DnsSlow), "{:?}", ids(&r));
    let (status, reason) = check(&r, "dns");
    assert_eq!(status, CheckStatus::Ok);
    assert!(
        reason.starts_with("getaddrinfo 302.0 ms → 10.0.3.2; 1 of 1 nameserver(s) answered"),
        "{reason}"
    );
    assert_eq!(check(&r, "load").0, CheckStatus::Ok);
    let m = r.measurements.dns.as_ref().unwrap();
    assert_eq!(m["servers"][0]["udp"]["median_ms"], 305.0);
}

#[test]
fn ip_targets_and_no_dns_skip_the_dns_checks_with_the_reason() {
    // No recorded DNS result: asking for one would fail the check.
    let h = host(1.0);
    let r = run(&plan("10.0.3.2"), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(
        check(&r, "dns"),
        (
            CheckStatus::Skipped,
            "the target is an IP address: no name to resolve".into()
        )
    );
    let mut p = plan("svc.example");
    p.dns = false;
    let r = run(&p, &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(
        check(&r, "dns"),
        (CheckStatus::Skipped, "--no-dns was given".into())
    );
    // Without the DNS checks a name that does not resolve stays an error (nothing to diagnose).
    let mut h = host(1.0);
    h.resolve_error = Some(TEMP_FAIL.into());
    assert!(matches!(
        run(&p, &h, &Silent, &AtomicBool::new(false)),
        Err(DiagnoseError::Resolve(_))
    ));
}

#[test]
fn names_under_invalid_are_an_error_and_nothing_is_asked() {
    // FakeHost would answer both the DNS checks and the resolution: neither is asked.
    let mut h = host(1.0);
    h.dns = Some(dns("nameserver 10.0.3.53\n", vec![answered(1.0)], Ok(1.0)));
    let e = run(
        &plan("nosuch-host.invalid"),
        &h,
        &Silent,
        &AtomicBool::new(false),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "resolve nosuch-host.invalid: names under .invalid never resolve (RFC 6761); nothing was asked"
    );
}

fn hop(ttl: u8, from: &str, rtts: &[f64], kind: ReplyKind) -> Hop {
    let rounds: Vec<u32> = (0..rtts.len() as u32).collect();
    let samples: Vec<Sample> = rtts
        .iter()
        .enumerate()
        .map(|(i, &rtt_ms)| Sample {
            round: i as u32,
            from: from.parse().unwrap(),
            scope_id: None,
            rtt_ms,
            kind,
        })
        .collect();
    Hop::from_samples(ttl, rtts.len() as u32, &rounds, &samples)
}

/// cli → 10.0.1.1 → (37 ms) 10.0.2.2 → 10.0.3.2, as the route lab's far-server case.
fn far_trace() -> TraceResult {
    let ex = ReplyKind::TimeExceeded;
    TraceResult {
        target: "10.0.3.2".parse().unwrap(),
        scope: None,
        scope_id: None,
        protocol: Protocol::Tcp,
        port: Some(8080),
        method: "tcp connect()",
        rounds: 6,
        interval_ms: 100.0,
        timeout_ms: 500.0,
        reached: true,
        hops: vec![
            hop(1, "10.0.1.1", &[0.1, 0.12, 0.1, 0.11, 0.1, 0.1], ex),
            hop(2, "10.0.2.2", &[37.2, 37.4, 37.1, 37.3, 37.2, 37.5], ex),
            hop(
                3,
                "10.0.3.2",
                &[37.3, 37.5, 37.2, 37.4, 37.3, 37.6],
                ReplyKind::Reached,
            ),
        ],
        notes: vec![],
    }
}

fn gateway() -> Result<Option<NextHop>, String> {
    Ok(Some(NextHop::Gateway {
        gateway: "10.0.1.1".parse::<IpAddr>().unwrap(),
        iface: "eth0".into(),
    }))
}

#[test]
fn a_routed_target_is_traced_and_its_base_rtt_explains_the_latency() {
    let mut h = host(38.0);
    h.next_hop = gateway();
    h.trace = Some(far_trace());
    let r = run(&plan("10.0.3.2"), &h, &Silent, &AtomicBool::new(false)).unwrap();
    let asked = h.traces_asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    let o = &asked[0];
    assert_eq!(
        (o.target.to_string(), o.port, o.protocol, o.names),
        ("10.0.3.2".to_string(), 8080, Protocol::Tcp, false)
    );
    let base = r
        .findings
        .iter()
        .find(|f| f.id == FindingId::HighBaseRtt)
        .unwrap_or_else(|| panic!("{:?}", ids(&r)));
    // p50 38 ms against a 37.2 ms path: the path explains it, a warning.
    assert_eq!(base.severity, Severity::Warning);
    assert_eq!(r.verdict, Verdict::Problem);
    let (status, reason) = check(&r, "trace");
    assert_eq!(status, CheckStatus::Ok);
    assert_eq!(
        reason,
        "tcp trace via 10.0.1.1: 3 hop(s), best round trip to the target 37.2 ms"
    );
    let t = r.measurements.trace.as_ref().unwrap();
    assert_eq!(t["next_hop"]["kind"], "gateway");
    assert_eq!(t["hops"].as_array().unwrap().len(), 3);
    assert_eq!(t["hop_assessment"][1]["notes"][0]["kind"], "adds_latency");
}

#[test]
fn direct_networks_local_targets_and_no_trace_skip_the_trace_with_the_reason() {
    type Case = (
        Result<Option<NextHop>, String>,
        bool,
        CheckStatus,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            Ok(Some(NextHop::Direct {
                iface: "eth0".into(),
            })),
            true,
            CheckStatus::Skipped,
            "10.0.3.2 is on a directly connected network (eth0): no router in between",
        ),
        (
            Ok(Some(NextHop::Local)),
            true,
            CheckStatus::Skipped,
            "10.0.3.2 is an address of this host",
        ),
        (
            Err("read /proc/thread-self/net/route: denied".into()),
            true,
            CheckStatus::Failed,
            "route lookup: read /proc/thread-self/net/route: denied",
        ),
        (
            gateway(),
            false,
            CheckStatus::Skipped,
            "--no-trace was given",
        ),
    ];
    for (next_hop, trace, status, reason) in cases {
        let mut h = host(1.0);
        h.next_hop = next_hop;
        h.trace = Some(far_trace());
        let mut p = plan("10.0.3.2");
        p.trace = trace;
        let r = run(&p, &h, &Silent, &AtomicBool::new(false)).unwrap();
        assert_eq!(check(&r, "trace"), (status, reason.to_string()));
        assert!(h.traces_asked.lock().unwrap().is_empty(), "{reason}");
        assert!(r.measurements.trace.is_none());
        assert!(!ids(&r).contains(&FindingId::HighBaseRtt));
    }
}

#[test]
fn a_trace_that_cannot_run_is_a_failed_check_and_the_run_goes_on() {
    let mut h = host(1.0);
    h.next_hop = gateway();
    let r = run(&plan("10.0.3.2"), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(
        check(&r, "trace"),
        (CheckStatus::Failed, "no recorded trace".to_string())
    );
    assert_eq!(check(&r, "load").0, CheckStatus::Ok);
    let _: SocketAddr = r.target.address.unwrap().parse().unwrap();
}

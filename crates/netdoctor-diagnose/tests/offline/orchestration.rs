//! The orchestration on a recorded host: real packets from committed captures, recorded probe,
//! counter, socket and load results. No root, no network.

use netdoctor_core::packet::LinkType;
use netdoctor_core::sockets::{ServerSocket, SocketState};
use netdoctor_core::{Evidence, FindingId, Verdict};
use netdoctor_diagnose::fake::{FakeCapture, FakeHost};
use netdoctor_diagnose::{DiagnosePlan, Silent, TargetSpec, run};
use netdoctor_load::{LoadResult, Percentiles};
use netdoctor_observe::counters::snapshot_from;
use netdoctor_report::{CheckStatus, Report};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures")
        .join(name)
}

fn plan(addr: SocketAddr) -> DiagnosePlan {
    DiagnosePlan::new(TargetSpec {
        input: format!("http://{addr}/"),
        host: addr.ip().to_string(),
        port: addr.port(),
        path: "/".into(),
        host_header: addr.to_string(),
        tls: None,
        scheme: netdoctor_load::target::Scheme::Http,
    })
}

fn load(p50: f64) -> LoadResult {
    LoadResult {
        connections: 100,
        threads: 2,
        duration_s: 5.0,
        requests: 10_000,
        requests_per_s: 2_000.0,
        bytes_read: 8_530_000,
        transfer_per_s: 1_706_000.0,
        latency_ms: Percentiles {
            p50,
            p99: p50 * 1.2,
            max: p50 * 1.5,
            ..Percentiles::default()
        },
        status: [(200, 10_000)].into_iter().collect(),
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

fn counters(retrans: u64) -> netdoctor_observe::CounterSnapshot {
    snapshot_from(
        "TcpExt: ListenOverflows DelayedACKs\nTcpExt: 0 10\n",
        &format!("Tcp: RetransSegs\nTcp: {retrans}\n"),
    )
    .unwrap()
}

fn socket(state: SocketState, nodelay: bool, fd: i32) -> ServerSocket {
    ServerSocket {
        pid: 4242,
        process: "nginx".into(),
        fd,
        state,
        local: "127.0.0.1:18081".into(),
        tcp_nodelay: nodelay,
        tcp_cork: false,
        sndbuf: 2_626_560,
        rcvbuf: 131_072,
    }
}

fn check(r: &Report, name: &str) -> (CheckStatus, String) {
    let c = r
        .checks
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("no check {name} in {:?}", r.checks));
    (c.status, c.reason.clone().unwrap_or_default())
}

fn nagle_host() -> FakeHost {
    let addr: SocketAddr = "127.0.0.1:18081".parse().unwrap();
    let mut h = FakeHost::answering(addr, load(44.0));
    h.capture = FakeCapture::File(capture("nagle-eth.pcap"), LinkType::Ethernet);
    h.counters = Mutex::new(vec![counters(5), counters(9)]);
    h.sockets = Ok(vec![
        socket(SocketState::Listen, false, 6),
        socket(SocketState::Established, false, 10),
        socket(SocketState::Established, false, 11),
    ]);
    h
}

#[test]
fn nagle_from_packets_is_confirmed_by_the_servers_sockets() {
    let h = nagle_host();
    let r = run(&plan(h.addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(r.verdict, Verdict::Problem);
    let f = &r.findings[0];
    assert_eq!(f.id, FindingId::NagleDelayedAck);
    assert!(f.confidence >= 0.99, "confirmed: {}", f.confidence);
    assert!(
        f.evidence
            .iter()
            .any(|e| matches!(e, Evidence::SocketOption { pid: 4242, .. })),
        "{:?}",
        f.evidence
    );
    for name in [
        "syn_probe",
        "http_probe",
        "counters",
        "capture",
        "load",
        "socket_options",
    ] {
        assert_eq!(check(&r, name).0, CheckStatus::Ok, "{name}: {:?}", r.checks);
    }
    let changed = &r.measurements.counters.as_ref().unwrap().changed;
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!((changed[0].before, changed[0].after), (5, 9));
    assert!(!r.interrupted);
}

#[test]
fn contradicting_sockets_lower_the_confidence() {
    let mut h = nagle_host();
    h.sockets = Ok(vec![
        socket(SocketState::Established, true, 10),
        socket(SocketState::Established, true, 11),
    ]);
    let r = run(&plan(h.addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    let f = r
        .findings
        .iter()
        .find(|f| f.id == FindingId::NagleDelayedAck)
        .unwrap();
    assert!(f.confidence < 0.9, "contradicted: {}", f.confidence);
}

#[test]
fn without_capture_privilege_the_run_goes_on_and_says_why() {
    let mut h = nagle_host();
    h.capture = FakeCapture::Denied;
    let r = run(&plan(h.addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    let (status, reason) = check(&r, "capture");
    assert_eq!(status, CheckStatus::Skipped);
    assert!(reason.contains("CAP_NET_RAW"), "{reason}");
    assert_eq!(check(&r, "load").0, CheckStatus::Ok);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert_eq!(check(&r, "verdict").0, CheckStatus::Skipped);
    assert!(r.measurements.load.is_some());
}

#[test]
fn a_refused_connection_is_the_diagnosis_and_nothing_else_runs() {
    let mut h = nagle_host();
    h.http = None;
    h.syn.answered = 0;
    h.syn.refused = 5;
    let r = run(&plan(h.addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(r.verdict, Verdict::Problem);
    assert_eq!(r.findings[0].id, FindingId::ServerNotListening);
    for name in ["load", "capture", "counters"] {
        assert_eq!(check(&r, name).0, CheckStatus::Skipped, "{name}");
    }
    assert!(r.measurements.load.is_none());
}

#[test]
fn an_interrupted_run_still_reports_what_it_saw() {
    let mut h = nagle_host();
    h.interrupt_after_ticks = Some(3);
    let stop = AtomicBool::new(false);
    let r = run(&plan(h.addr), &h, &Silent, &stop).unwrap();
    assert!(r.interrupted);
    // The packets seen before the interrupt are analyzed.
    assert_eq!(r.findings[0].id, FindingId::NagleDelayedAck);
    // The sockets were to be sampled at 0.5 s; the load ended at 0.3 s.
    let (status, reason) = check(&r, "socket_options");
    assert_eq!(status, CheckStatus::Skipped);
    assert!(reason.contains("ended before"), "{reason}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["interrupted"], true);
}

#[test]
fn the_pcap_copy_is_written_or_its_failure_is_a_failed_check() {
    let dir = tempfile::tempdir().unwrap();
    let h = nagle_host();
    let mut p = plan(h.addr);
    let out = dir.path().join("run.pcap");
    p.capture.pcap = Some(out.clone());
    let r = run(&p, &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(check(&r, "pcap").0, CheckStatus::Ok);
    let copy = netdoctor_observe::pcapfile::CaptureFile::open(&out).unwrap();
    drop(copy);
    assert_eq!(
        r.measurements
            .capture
            .as_ref()
            .unwrap()
            .pcap_file
            .as_deref(),
        Some(out.to_str().unwrap())
    );

    let h = nagle_host();
    p.capture.pcap = Some(dir.path().join("no/such/dir/run.pcap"));
    let r = run(&p, &h, &Silent, &AtomicBool::new(false)).unwrap();
    let (status, reason) = check(&r, "pcap");
    assert_eq!(status, CheckStatus::Failed);
    assert!(reason.contains("no/such/dir"), "{reason}");
    // The capture itself still ran and was analyzed.
    assert_eq!(check(&r, "capture").0, CheckStatus::Ok);
    assert!(r.measurements.capture.as_ref().unwrap().pcap_file.is_none());
    assert_eq!(r.findings[0].id, FindingId::NagleDelayedAck);
}

#[test]
fn a_healthy_capture_with_matching_load_is_healthy() {
    let addr: SocketAddr = "127.0.0.1:18080".parse().unwrap();
    let mut h = FakeHost::answering(addr, load(1.8));
    h.capture = FakeCapture::File(capture("healthy-eth.pcap"), LinkType::Ethernet);
    h.counters = Mutex::new(vec![counters(1), counters(1)]);
    let r = run(&plan(addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(
        r.verdict,
        Verdict::Healthy,
        "{:?} {:?}",
        r.findings,
        r.checks
    );
    // The server process is not on this (fake) host: a skipped check with the reason.
    assert_eq!(check(&r, "socket_options").0, CheckStatus::Skipped);
}

#[test]
fn latency_nothing_explains_is_not_healthy() {
    let addr: SocketAddr = "127.0.0.1:18080".parse().unwrap();
    let mut h = FakeHost::answering(addr, load(80.0));
    h.capture = FakeCapture::File(capture("healthy-eth.pcap"), LinkType::Ethernet);
    let r = run(&plan(addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(r.verdict, Verdict::Inconclusive);
    let (status, reason) = check(&r, "explained");
    assert_eq!(status, CheckStatus::Failed);
    assert!(reason.contains("80.0 ms"), "{reason}");
    // Counters could not be read on this host: a failed check, not an error.
    assert_eq!(check(&r, "counters").0, CheckStatus::Failed);
}

#[test]
fn failed_requests_are_never_healthy() {
    let addr: SocketAddr = "127.0.0.1:18080".parse().unwrap();
    let mut l = load(1.8);
    l.status = [(404, 10_000)].into_iter().collect();
    l.errors.status = 10_000;
    let mut h = FakeHost::answering(addr, l);
    h.capture = FakeCapture::File(capture("healthy-eth.pcap"), LinkType::Ethernet);
    let r = run(&plan(addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(r.verdict, Verdict::Problem, "{:?}", r.findings);
    let f = r
        .findings
        .iter()
        .find(|f| f.id == FindingId::HttpErrors)
        .expect("http_errors");
    assert_eq!(f.side, netdoctor_core::Side::Client);
    assert!(f.summary.contains("404"), "{}", f.summary);
}

#[test]
fn a_load_generator_out_of_file_descriptors_is_not_a_verdict_on_the_server() {
    let addr: SocketAddr = "127.0.0.1:18080".parse().unwrap();
    let mut l = load(1.8);
    l.errors.connect = 60_000;
    l.first_error = Some("connect 127.0.0.1:18080: too many open files".into());
    let mut h = FakeHost::answering(addr, l);
    h.capture = FakeCapture::File(capture("healthy-eth.pcap"), LinkType::Ethernet);
    let r = run(&plan(addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(r.verdict, Verdict::Inconclusive, "{:?}", r.findings);
    let f = r
        .findings
        .iter()
        .find(|f| f.id == FindingId::HttpErrors)
        .expect("http_errors");
    assert_eq!(f.side, netdoctor_core::Side::Host);
    let (status, reason) = check(&r, "verdict");
    assert_eq!(status, CheckStatus::Skipped);
    assert!(reason.contains("load generator"), "{reason}");
}

#[test]
fn ebpf_that_cannot_run_is_a_skipped_check_and_the_run_goes_on() {
    let h = nagle_host();
    let r = run(&plan(h.addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(
        check(&r, "bpf"),
        (
            CheckStatus::Skipped,
            "eBPF does not run on this recorded host".to_string()
        )
    );
    assert_eq!(r.measurements.kernel, None);
    assert_eq!(r.findings[0].id, FindingId::NagleDelayedAck);
}

#[test]
fn kernel_events_become_the_kernel_section() {
    use netdoctor_observe::host_findings::{KernelDrop, KernelEvents, KernelStateChange};
    let mut h = nagle_host();
    let events = KernelEvents {
        netns: "network namespace net:[4026532318] of nginx (pid 4242)".into(),
        drops: vec![KernelDrop {
            reason: "NETFILTER_DROP".into(),
            location: "nf_hook_slow+0x9c".into(),
            count: 7,
        }],
        retransmits_total: 3,
        retransmit_connections: 2,
        target_retransmits: 1,
        target_retransmit_connections: 1,
        state_changes: vec![KernelStateChange {
            from: "ESTABLISHED".into(),
            to: "CLOSE_WAIT".into(),
            count: 100,
        }],
        ..Default::default()
    };
    h.kernel = Ok(events.clone());
    let r = run(&plan(h.addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    let (status, reason) = check(&r, "bpf");
    assert_eq!(status, CheckStatus::Ok);
    assert!(reason.contains("of nginx (pid 4242)"), "{reason}");
    assert_eq!(r.measurements.kernel.as_ref(), Some(&events));
    let mut text = Vec::new();
    netdoctor_report::terminal::render(&r, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(
            "drops NETFILTER_DROP ×7 at nf_hook_slow+0x9c; 3 retransmits on 2 connections in \
             the namespace, 1 of them on 1 of the target's"
        ),
        "{text}"
    );
}

#[test]
fn host_observers_switched_off_say_so() {
    let h = nagle_host();
    let mut p = plan(h.addr);
    p.host = false;
    p.bpf = false;
    let r = run(&p, &h, &Silent, &AtomicBool::new(false)).unwrap();
    for name in ["host", "bpf"] {
        let (status, reason) = check(&r, name);
        assert_eq!(status, CheckStatus::Skipped, "{name}");
        assert!(reason.contains("switched off"), "{name}: {reason}");
    }
    assert_eq!(r.findings[0].id, FindingId::NagleDelayedAck);
}

/// A load whose requests all timed out while eBPF counted the server's retransmissions on
/// the target's connections (the lost-answer sign), with `pmtu` as the MTU probe's result.
fn lost_answer_host(pmtu: Option<netdoctor_probe::PmtuProbe>) -> FakeHost {
    use netdoctor_observe::host_findings::KernelEvents;
    let addr: SocketAddr = "127.0.0.1:18082".parse().unwrap();
    let mut l = load(4000.0);
    l.requests = 0;
    l.errors.timeout = 4;
    let mut h = FakeHost::answering(addr, l);
    h.capture = FakeCapture::File(capture("healthy-eth.pcap"), LinkType::Ethernet);
    h.kernel = Ok(KernelEvents {
        target_retransmits: 31,
        target_retransmit_connections: 10,
        retransmits_total: 31,
        retransmit_connections: 10,
        ..Default::default()
    });
    h.pmtu = pmtu;
    h
}

fn pmtu_result(stalled: &[u32], delivered: &[u32]) -> netdoctor_probe::PmtuProbe {
    use netdoctor_probe::{PmtuProbe, PmtuStep, StepOutcome};
    let step = |size: u32, outcome: StepOutcome, bytes| PmtuStep {
        size,
        mss: size - 40,
        bytes,
        outcome,
    };
    PmtuProbe {
        steps: stalled
            .iter()
            .map(|&s| step(s, StepOutcome::Stalled, 116))
            .chain(
                delivered
                    .iter()
                    .map(|&s| step(s, StepOutcome::Delivered, 65_652)),
            )
            .collect(),
        wait_ms: 2000.0,
    }
}

fn finding_of(r: &Report, id: FindingId) -> Option<&netdoctor_core::Finding> {
    r.findings.iter().find(|f| f.id == id)
}

#[test]
fn answers_lost_where_large_packets_stall_are_an_mtu_black_hole() {
    let h = lost_answer_host(Some(pmtu_result(&[1500, 1400], &[1280, 576])));
    let r = run(&plan(h.addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(h.pmtu_asked.load(std::sync::atomic::Ordering::Relaxed), 1);
    let f = finding_of(&r, FindingId::MssMtuProblem).unwrap_or_else(|| panic!("{:#?}", r.findings));
    assert_eq!(f.side, netdoctor_core::Side::Network);
    assert!(
        f.summary
            .starts_with("packets of 1400 bytes and more are dropped on the path"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("the server answered"), "{}", f.summary);
    assert!(
        f.evidence
            .iter()
            .any(|e| matches!(e, Evidence::Probe { probe, note }
            if probe == "pmtu" && note.contains("1400 stalled (116 B)"))),
        "{:#?}",
        f.evidence
    );
    assert!(finding_of(&r, FindingId::HttpErrors).is_none());
    let (status, reason) = check(&r, "pmtu_probe");
    assert_eq!(status, CheckStatus::Ok);
    assert!(
        reason.starts_with("packets of 1400 bytes and more stalled"),
        "{reason}"
    );
}

#[test]
fn without_a_size_dependence_or_a_probe_the_lost_answers_stay_http_errors() {
    // Every size stalls (the filter drops the server's data whatever its size); the probe
    // fails (refused).
    for (pmtu, status) in [
        (
            Some(pmtu_result(&[1500, 1400, 1280, 576], &[])),
            CheckStatus::Ok,
        ),
        (None, CheckStatus::Failed),
    ] {
        let h = lost_answer_host(pmtu);
        let r = run(&plan(h.addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
        assert!(finding_of(&r, FindingId::MssMtuProblem).is_none());
        let f = finding_of(&r, FindingId::HttpErrors).expect("http_errors");
        assert_eq!(f.side, netdoctor_core::Side::Network, "{}", f.summary);
        assert_eq!(check(&r, "pmtu_probe").0, status);
    }
}

#[test]
fn a_run_without_lost_answers_sends_no_mtu_probe() {
    let h = nagle_host();
    let r = run(&plan(h.addr), &h, &Silent, &AtomicBool::new(false)).unwrap();
    assert_eq!(h.pmtu_asked.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert!(r.checks.iter().all(|c| c.name.as_str() != "pmtu_probe"));
}

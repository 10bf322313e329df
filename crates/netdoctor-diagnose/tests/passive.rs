//! The passive path and `tcp://` targets on a recorded host: real packets from committed
//! captures (line protocol picked up mid-stream, Redis, TLS), no root, no network. A passive
//! run must send nothing: the fake host counts every probe and load it is asked for.

use netdoctor_core::packet::LinkType;
use netdoctor_core::verdict::MIN_EXCHANGES;
use netdoctor_core::{FindingId, Side, Verdict};
use netdoctor_diagnose::fake::{FakeCapture, FakeHost};
use netdoctor_diagnose::{DiagnosePlan, Progress, Silent, TargetSpec, run};
use netdoctor_load::LoadResult;
use netdoctor_load::target::parse_target;
use netdoctor_report::{CheckStatus, Report, TargetProtocol};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures")
        .join(name)
}

fn plan(input: &str, passive: bool) -> DiagnosePlan {
    let u = parse_target(input).unwrap();
    let mut p = DiagnosePlan::new(TargetSpec {
        input: u.input,
        host: u.host,
        port: u.port,
        path: u.path,
        host_header: u.host_header,
        tls: None,
        scheme: u.scheme,
    });
    p.passive = passive;
    p.load.duration = Duration::from_millis(300);
    p
}

/// What the fake load would return; a passive run must never ask for it.
fn no_load() -> LoadResult {
    LoadResult {
        connections: 0,
        threads: 0,
        duration_s: 0.0,
        requests: 0,
        requests_per_s: 0.0,
        bytes_read: 0,
        transfer_per_s: 0.0,
        latency_ms: Default::default(),
        status: Default::default(),
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

fn host(addr: &str, file: Option<&str>) -> FakeHost {
    let addr: SocketAddr = addr.parse().unwrap();
    let mut h = FakeHost::answering(addr, no_load());
    if let Some(f) = file {
        h.capture = FakeCapture::File(capture(f), LinkType::Ethernet);
    }
    h
}

fn check(r: &Report, name: &str) -> (CheckStatus, String) {
    let c = r
        .checks
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("no check {name} in {:?}", r.checks));
    (c.status, c.reason.clone().unwrap_or_default())
}

fn sent_nothing(h: &FakeHost, r: &Report) {
    assert_eq!(
        h.sent.load(Ordering::Relaxed),
        0,
        "a passive run sent traffic"
    );
    assert!(r.passive);
    assert!(r.measurements.probe.is_none() && r.measurements.load.is_none());
    for name in ["syn_probe", "http_probe", "load"] {
        assert_eq!(
            check(r, name),
            (CheckStatus::Skipped, "passive: no traffic sent".to_string()),
            "{name}"
        );
    }
}

#[test]
fn passive_line_protocol_midstream_finds_the_servers_nagle() {
    let h = host("127.0.0.1:18450", Some("line-midstream.pcap"));
    let r = run(
        &plan("tcp://127.0.0.1:18450", true),
        &h,
        &Silent,
        &AtomicBool::new(false),
    )
    .unwrap();
    sent_nothing(&h, &r);
    assert_eq!(r.verdict, Verdict::Problem, "{:?}", r.checks);
    assert_eq!(r.findings[0].id, FindingId::NagleDelayedAck);
    assert_eq!(r.findings[0].side, Side::Server);
    assert_eq!(r.target.protocol, Some(TargetProtocol::Tcp));
    let c = r.measurements.capture.as_ref().unwrap();
    assert_eq!(
        c.stats.connections_with_handshake, 0,
        "picked up mid-stream"
    );
    assert_eq!(
        c.exchanges.method,
        Some(netdoctor_core::analyze::ExchangeMethod::Turns)
    );
    assert_eq!(check(&r, "capture").0, CheckStatus::Ok);
}

#[test]
fn passive_redis_is_healthy_and_https_passive_sees_the_tls_stall() {
    let h = host("127.0.0.1:18460", Some("redis-healthy.pcap"));
    let r = run(
        &plan("tcp://127.0.0.1:18460", true),
        &h,
        &Silent,
        &AtomicBool::new(false),
    )
    .unwrap();
    sent_nothing(&h, &r);
    assert_eq!(r.verdict, Verdict::Healthy, "{:?}", r.checks);
    assert!(r.measurements.capture.as_ref().unwrap().exchanges.count >= MIN_EXCHANGES);

    let tls = capture("tls-nagle.pcap");
    let port = tls_port(&tls);
    let h = host(&format!("127.0.0.1:{port}"), Some("tls-nagle.pcap"));
    let r = run(
        &plan(&format!("https://127.0.0.1:{port}/"), true),
        &h,
        &Silent,
        &AtomicBool::new(false),
    )
    .unwrap();
    sent_nothing(&h, &r);
    assert_eq!(r.target.protocol, Some(TargetProtocol::Https));
    assert_eq!(
        r.findings[0].id,
        FindingId::NagleDelayedAck,
        "{:?}",
        r.findings
    );
}

/// The server port of a committed capture: the destination port of its first SYN.
fn tls_port(path: &std::path::Path) -> u16 {
    use netdoctor_observe::PacketSource;
    let mut file = netdoctor_observe::pcapfile::CaptureFile::open(path).unwrap();
    let mut port = None;
    file.for_each_packet(&mut |p| {
        if let Ok(Some(seg)) = netdoctor_core::decode::decode(p)
            && seg.flags.syn()
            && !seg.flags.ack()
        {
            port = Some(seg.dst.port());
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    port.expect("a SYN in the capture")
}

#[test]
fn passive_without_traffic_is_inconclusive_with_the_counts() {
    // A capture that opens but sees nothing: an empty file of the right format.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pcap");
    let w =
        netdoctor_observe::pcapwrite::PcapWriter::create(&empty, LinkType::Ethernet, 256).unwrap();
    w.finish().unwrap();
    let mut h = host("10.0.0.5:6379", None);
    h.capture = FakeCapture::File(empty, LinkType::Ethernet);
    let r = run(
        &plan("tcp://10.0.0.5:6379", true),
        &h,
        &Silent,
        &AtomicBool::new(false),
    )
    .unwrap();
    sent_nothing(&h, &r);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert_eq!(r.exit_code(), 3);
    let (status, why) = check(&r, "verdict");
    assert_eq!(status, CheckStatus::Skipped);
    assert!(
        why.contains(&format!(
            "0 completed request/response exchanges seen, at least {MIN_EXCHANGES}"
        )),
        "{why}"
    );
}

/// Records the passive window's ticks.
#[derive(Default)]
struct Ticks(Mutex<Vec<(Duration, Duration, Option<u64>)>>);
impl Progress for Ticks {
    fn watch_tick(&self, elapsed: Duration, total: Duration, exchanges: Option<u64>) {
        self.0.lock().unwrap().push((elapsed, total, exchanges));
    }
}

#[test]
fn the_window_ticks_with_the_exchanges_seen_and_an_interrupt_ends_it() {
    let h = host("127.0.0.1:18450", Some("line-midstream.pcap"));
    // A tick every 100 ms: ten in 1 s on an idle machine, and still three when a busy one
    // holds the loop back for most of a second (in a 500 ms window, a 350 ms delay of the
    // first tick would leave only two).
    let mut p = plan("tcp://127.0.0.1:18450", true);
    p.load.duration = Duration::from_secs(1);
    let ticks = Ticks::default();
    let r = run(&p, &h, &ticks, &AtomicBool::new(false)).unwrap();
    let t = ticks.0.lock().unwrap().clone();
    assert!(t.len() >= 3, "{t:?}");
    let last = t.last().unwrap();
    assert_eq!(last.0, last.1, "the last tick is at the full duration");
    // The ticks count completed exchanges; the ones the window's end cut are added after.
    let x = &r.measurements.capture.as_ref().unwrap().exchanges;
    assert_eq!(
        last.2,
        Some(x.count - x.incomplete),
        "exchanges so far, from the capture"
    );

    // Ctrl-C: the window ends at once, the report is marked and the capture still counts.
    let mut p = plan("tcp://127.0.0.1:18450", true);
    p.load.duration = Duration::from_secs(60);
    let started = std::time::Instant::now();
    let r = run(&p, &h, &Silent, &AtomicBool::new(true)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(r.interrupted);
    assert_eq!(r.findings[0].id, FindingId::NagleDelayedAck);
}

#[test]
fn a_tcp_target_without_passive_gets_the_probes_only() {
    let h = host("10.0.0.5:6379", Some("redis-healthy.pcap"));
    let r = run(
        &plan("tcp://10.0.0.5:6379", false),
        &h,
        &Silent,
        &AtomicBool::new(false),
    )
    .unwrap();
    assert!(!r.passive);
    assert_eq!(check(&r, "syn_probe").0, CheckStatus::Ok);
    let (status, why) = check(&r, "load");
    assert_eq!(status, CheckStatus::Skipped);
    assert!(why.starts_with("load is HTTP(S)-only"), "{why}");
    assert_eq!(check(&r, "http_probe").0, CheckStatus::Skipped);
    assert!(r.measurements.load.is_none());
    let probe = r.measurements.probe.as_ref().unwrap();
    assert!(probe.syn.is_some() && probe.http.is_none());
    assert_eq!(r.verdict, Verdict::Inconclusive);
    // One SYN probe series (connect() timing already: no raw sockets) and nothing else.
    assert_eq!(h.sent.load(Ordering::Relaxed), 1);
    assert!(probe.connect.is_none());

    // With raw SYNs, connect() is timed too: the handshake through the listener.
    let mut h = host("10.0.0.5:6379", None);
    h.syn.method = netdoctor_probe::SynMethod::RawSyn;
    let r = run(
        &plan("tcp://10.0.0.5:6379", false),
        &h,
        &Silent,
        &AtomicBool::new(false),
    )
    .unwrap();
    let probe = r.measurements.probe.as_ref().unwrap();
    let c = probe.connect.as_ref().expect("connect probe");
    assert_eq!(c.method, netdoctor_probe::SynMethod::Connect);
    assert_eq!(h.sent.load(Ordering::Relaxed), 2);

    // Refused: server_not_listening, as for HTTP.
    let mut h = host("10.0.0.5:6379", None);
    h.syn.answered = 0;
    h.syn.refused = 5;
    let r = run(
        &plan("tcp://10.0.0.5:6379", false),
        &h,
        &Silent,
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(r.findings[0].id, FindingId::ServerNotListening);
}

#[test]
fn listening_ports_orient_connections_picked_up_midstream() {
    // Target port 1 (not in the capture), so only the namespace's listening ports orient
    // line-midstream.pcap's connections (no handshakes). With the real listener (18450) the
    // server's replies are the held data; a namespace that (wrongly) listened on the clients'
    // ports turns every connection around, which shows the listeners reach the analyzer.
    let run_with = |listening: Vec<u16>| {
        let mut h = host("127.0.0.1:1", Some("line-midstream.pcap"));
        h.listening = listening;
        run(
            &plan("tcp://127.0.0.1:1", true),
            &h,
            &Silent,
            &AtomicBool::new(false),
        )
        .unwrap()
    };
    let r = run_with(vec![18450]);
    assert_eq!(r.findings[0].id, FindingId::NagleDelayedAck);
    assert_eq!(r.findings[0].side, Side::Server);
    let r = run_with(vec![60526, 60536, 60550, 60562]);
    let nagle = r
        .findings
        .iter()
        .find(|f| f.id == FindingId::NagleDelayedAck);
    assert!(
        nagle.is_none_or(|f| f.side == Side::Client),
        "{:?}",
        r.findings
    );
}

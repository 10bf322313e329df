//! Who caused it, on real traffic: the committed captures (testdata/captures, made by
//! `make-attribution.sh`, `make-slow-reader.sh` and `make.sh`) with the observations a live
//! run would add (the run's config, kernel counters, CPU use).

use crate::common;

use common::for_each_packet;
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};
use netdoctor_core::observation::{CounterDelta, Observation};
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};

fn analyze_with(name: &str, obs: &[Observation]) -> Analysis {
    let mut a = Analyzer::new(AnalyzerConfig::default());
    for o in obs {
        a.observe(o.clone());
    }
    for_each_packet(name, |p| a.push(p));
    a.finish()
}

fn one(an: &Analysis, id: FindingId) -> &Finding {
    let v: Vec<&Finding> = an.findings.iter().filter(|f| f.id == id).collect();
    assert_eq!(v.len(), 1, "{id}: {:#?}", an.findings);
    v[0]
}

#[test]
fn a_server_that_resets_before_any_byte_refused_at_setup() {
    let an = analyze_with("setup-reset.pcap", &[]);
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!((f.side, f.severity), (Side::Server, Severity::Critical));
    assert!(
        f.summary
            .contains("reset 10 connections right after the handshake"),
        "{}",
        f.summary
    );
    assert!(
        !f.summary.contains("idle") && !f.fix.contains("idle timeouts"),
        "{f:#?}"
    );
    assert!(f.fix.contains("listen queue"), "{}", f.fix);
}

#[test]
fn a_server_that_closes_first_is_told_to_keep_connections() {
    let an = analyze_with("server-close.pcap", &[]);
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.side, Side::Server);
    assert!(
        f.summary.contains("the server closed 10 of them first"),
        "{}",
        f.summary
    );
    assert!(f.fix.contains("keepalive_timeout"), "{}", f.fix);
    // The client closed first in short-connections.pcap (`client perconn`).
    let an = analyze_with("short-connections.pcap", &[]);
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!(f.side, Side::Client);
    assert!(
        f.summary.contains("the client closed 40 of them first"),
        "{}",
        f.summary
    );
}

#[test]
fn one_connection_per_request_that_was_asked_for_blames_nobody() {
    let cfg = Observation::RunConfig {
        keepalive: false,
        timeout_ms: 2000,
        connections: 1,
    };
    let an = analyze_with("server-close.pcap", &[cfg]);
    let f = one(&an, FindingId::ShortConnections);
    assert_eq!((f.severity, f.side), (Severity::Info, Side::Client));
    assert!(f.summary.contains("as requested"), "{}", f.summary);
    assert!(f.fix.starts_with("Nothing to fix"), "{}", f.fix);
}

#[test]
fn a_slow_reader_is_not_a_stopped_one() {
    let an = analyze_with("slow-reader.pcap", &[]);
    let f = one(&an, FindingId::ZeroWindow);
    assert_eq!(f.side, Side::Client);
    assert!(f.summary.contains("reads slowly"), "{}", f.summary);
    // SO_RCVBUF 4096 on loopback (MSS 65495): every reopening is below one MSS.
    assert!(
        f.summary.contains("less than one MSS (32 of 32 times"),
        "{}",
        f.summary
    );
    assert!(f.explanation.contains("silly window"), "{}", f.explanation);
    // One long period: it stopped.
    let an = analyze_with("zero-window.pcap", &[]);
    let f = one(&an, FindingId::ZeroWindow);
    assert!(f.summary.contains("stopped reading"), "{}", f.summary);
}

#[test]
fn syn_repeats_with_listen_drops_are_the_hosts_listen_queue() {
    let counters = Observation::Counters(vec![
        CounterDelta {
            name: "TcpExt.ListenOverflows".into(),
            before: 100,
            after: 109,
        },
        CounterDelta {
            name: "TcpExt.ListenDrops".into(),
            before: 100,
            after: 109,
        },
    ]);
    let an = analyze_with("syn-retransmit.pcap", &[counters]);
    let f = one(&an, FindingId::SynRetransmit);
    assert_eq!(f.side, Side::Host);
    assert!(
        f.summary.contains("TcpExt.ListenOverflows +9"),
        "{}",
        f.summary
    );
    // Without counters, from the client's side: nothing places the lost SYNs on the server
    // (syn_side.rs).
    let an = analyze_with("syn-retransmit.pcap", &[]);
    assert_eq!(one(&an, FindingId::SynRetransmit).side, Side::Network);
}

#[test]
fn a_slow_server_on_a_saturated_machine_is_cpu_contention() {
    let cpu = |server_wait_ms, server_cpu_ms| Observation::Cpu {
        machine_busy: 0.98,
        own_busy: 0.6,
        cores: 2,
        server_wait_ms,
        server_cpu_ms,
    };
    let an = analyze_with("slow-eth.pcap", &[cpu(None, None)]);
    let f = one(&an, FindingId::SlowServerProcessing);
    assert_eq!((f.side, f.severity), (Side::Host, Severity::Warning));
    assert!(f.summary.contains("CPU contention"), "{}", f.summary);
    // The server's threads waited for a CPU about as long as it took: contention.
    let n = an.exchanges.count as f64;
    let st = an.exchanges.server_time_ms.p50;
    let an = analyze_with(
        "slow-eth.pcap",
        &[cpu(Some(0.8 * st * n), Some(0.01 * st * n))],
    );
    assert_eq!(one(&an, FindingId::SlowServerProcessing).side, Side::Host);
    // It hardly waited but computed most of the time (a forking server whose children's
    // waits left with them): still the busy machine's.
    let an = analyze_with(
        "slow-eth.pcap",
        &[cpu(Some(0.01 * st * n), Some(0.8 * st * n))],
    );
    assert_eq!(one(&an, FindingId::SlowServerProcessing).side, Side::Host);
    // A busy machine whose server hardly waited for a CPU (a proxy waiting on a slow upstream,
    // a sleep, a lock): the time is the server's own, whatever else keeps the CPUs busy.
    let an = analyze_with(
        "slow-eth.pcap",
        &[cpu(Some(0.01 * st * n), Some(0.01 * st * n))],
    );
    let f = one(&an, FindingId::SlowServerProcessing);
    assert_eq!(f.side, Side::Server, "{f:#?}");
    assert!(!f.summary.contains("CPU contention"), "{}", f.summary);
    assert!(
        f.explanation.contains("waited for a CPU only"),
        "{}",
        f.explanation
    );
    let an = analyze_with("slow-eth.pcap", &[]);
    assert_eq!(one(&an, FindingId::SlowServerProcessing).side, Side::Server);
}

#[test]
fn resets_at_the_load_generators_own_timeout_are_not_against_the_server() {
    // The client gave up after 300 ms and reset: with the run's 300 ms timeout known, that is
    // netdoctor's own doing (info, side client); without it, the client's resets as seen.
    let cfg = Observation::RunConfig {
        keepalive: true,
        timeout_ms: 300,
        connections: 1,
    };
    let an = analyze_with("client-timeout.pcap", &[cfg]);
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!((f.side, f.severity), (Side::Client, Severity::Info));
    assert!(
        f.summary
            .contains("load generator reset 5 connections itself"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("300 ms timeout"), "{}", f.summary);
    let an = analyze_with("client-timeout.pcap", &[]);
    let f = one(&an, FindingId::ConnectionReset);
    assert_eq!(f.side, Side::Client);
    assert!(
        f.summary.contains("The client reset 5 connections"),
        "{}",
        f.summary
    );
    // A longer timeout than the requests waited: not the load generator's.
    let long = Observation::RunConfig {
        keepalive: true,
        timeout_ms: 5000,
        connections: 1,
    };
    let an = analyze_with("client-timeout.pcap", &[long]);
    assert!(
        !one(&an, FindingId::ConnectionReset)
            .summary
            .contains("load generator")
    );
}

#[test]
fn a_request_dropped_by_a_full_listen_queue_is_not_network_loss() {
    // The server's accept queue was full when the client's first request arrived: the
    // kernel dropped it (ListenOverflows +5 in the namespace, printed by make-attribution.sh)
    // and the client resent it on its RTO.
    let counters = Observation::Counters(vec![
        CounterDelta {
            name: "TcpExt.ListenOverflows".into(),
            before: 0,
            after: 5,
        },
        CounterDelta {
            name: "TcpExt.ListenDrops".into(),
            before: 0,
            after: 5,
        },
    ]);
    let an = analyze_with("listen-full.pcap", &[counters]);
    let f = one(&an, FindingId::RetransmissionTimeout);
    assert_eq!(f.side, Side::Host);
    assert!(
        f.summary.contains("listen queue overflowed"),
        "{}",
        f.summary
    );
    assert!(!f.fix.contains("ethtool"), "{}", f.fix);
    assert_eq!(one(&an, FindingId::SynRetransmit).side, Side::Host);
    // Without counters: on one host there is no path to blame, and no certainty.
    let an = analyze_with("listen-full.pcap", &[]);
    let f = one(&an, FindingId::RetransmissionTimeout);
    assert_eq!(f.side, Side::Host);
    assert!(f.confidence <= 0.5, "{}", f.confidence);
    assert!(
        f.summary.contains("a full listen queue or a lossy path"),
        "{}",
        f.summary
    );
}

#[test]
fn a_synack_repeated_to_an_idle_preconnect_delays_nobody() {
    // defer-accept.pcap (make-defer-accept.sh): a TCP_DEFER_ACCEPT server; client A ACKs the
    // SYN/ACK at once and stays idle 4 s, the server's kernel repeats its SYN/ACK 1 s later and
    // A answers it; client B sends its request at once. Nobody waited on a handshake.
    let an = analyze_with("defer-accept.pcap", &[]);
    let f = one(&an, FindingId::SynRetransmit);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Info, Side::Client),
        "{f:#?}"
    );
    assert_eq!(f.impact.added_latency_ms, None);
    assert!(
        f.summary
            .starts_with("The server repeated its SYN/ACK on 1 of 2 connections after their client had answered it"),
        "{}",
        f.summary
    );
    assert!(
        an.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        an.findings
    );
    // The look-alike: a server that speaks first, client B's first ACK dropped in the
    // server's namespace. The SYN/ACK repeat 1 s later held B's banner: a delayed setup.
    let an = analyze_with("banner-ack-lost.pcap", &[]);
    let f = one(&an, FindingId::SynRetransmit);
    assert_eq!(
        (f.severity, f.side),
        (Severity::Critical, Side::Server),
        "{f:#?}"
    );
    assert!(
        f.summary.contains("on 1 of 2 connections")
            && f.summary
                .contains("the server had to repeat its SYN/ACK on 1"),
        "{}",
        f.summary
    );
    let added = f.impact.added_latency_ms.unwrap();
    assert!((900.0..1500.0).contains(&added), "{added}");
    // And a full accept queue that dropped the ACK and the request behind it stays a
    // delayed setup too.
    let an = analyze_with("listen-full.pcap", &[]);
    assert_ne!(one(&an, FindingId::SynRetransmit).severity, Severity::Info);
}

//! Host collectors and findings on real scenarios in namespaces these tests create (as root;
//! each test skips with a printed reason otherwise). Every namespace, server thread, process and
//! iptables rule is removed when the lab guard drops, also when an assertion fails.
//!
//! conntrack_table_full is not here: nf_conntrack_max is global and cannot be set in a child
//! namespace, so a full table cannot be produced without changing the host. Its finding is tested
//! with recorded kernel-log lines and counter values (src/host_findings/conntrack.rs).

use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use netdoctor_core::finding::{FindingId, Severity};
use netdoctor_lab::hostcases::{self, HostLab};
use netdoctor_observe::counters::{self, CounterSnapshot};
use netdoctor_observe::host_findings::{ConnectOutcome, HostObservations, host_findings};
use netdoctor_observe::host_run::{HostRun, HostRunConfig, read_client_side};

fn require_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root (needs to create network namespaces)");
        return false;
    }
    true
}

fn prefix(tag: &str) -> String {
    format!("nd-host-{}-{tag}", std::process::id())
}

fn nstat(lab: &HostLab, netns: &str) -> CounterSnapshot {
    let out = lab
        .command(netns, "nstat")
        .unwrap()
        .args(["-a", "-s", "-z"])
        .stderr(Stdio::inherit())
        .output()
        .expect("run nstat");
    let mut snap = CounterSnapshot::default();
    for line in String::from_utf8_lossy(&out.stdout).lines().skip(1) {
        let mut f = line.split_whitespace();
        if let (Some(name), Some(v)) = (f.next(), f.next())
            && let Ok(v) = v.parse()
        {
            snap.values.insert(name.to_string(), v);
        }
    }
    snap
}

#[test]
fn counters_come_from_the_threads_namespace() {
    if !require_root() {
        return;
    }
    let lab = HostLab::create(&prefix("ns"), false).unwrap();
    let srv = lab.server_netns().to_string();
    // 7 TCP connections over loopback and 5 UDP/IPv6 datagrams, inside the namespace only.
    let (ours, main_thread_view) = lab
        .in_ns(&srv, || {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let conns: Vec<TcpStream> = (0..7)
                .map(|_| TcpStream::connect(l.local_addr().unwrap()).unwrap())
                .collect();
            let u = UdpSocket::bind("[::1]:0").unwrap();
            for _ in 0..5 {
                u.send_to(b"x", "[::1]:9").unwrap();
            }
            drop(conns);
            // Closing the listener resets the 7 unaccepted connections (Tcp.OutRsts +7).
            drop(l);
            // The resets may leave a moment after close() returns (seen on a busy machine):
            // wait for them, bounded, so both reads below see the same settled counters.
            let t = std::time::Instant::now();
            let mut ours = counters::snapshot().unwrap();
            while ours.get("Tcp.OutRsts") != Some(7) && t.elapsed().as_secs() < 3 {
                std::thread::sleep(std::time::Duration::from_millis(20));
                ours = counters::snapshot().unwrap();
            }
            // What the old code read: /proc/net follows the main thread, in the root namespace.
            let netstat = std::fs::read_to_string("/proc/net/netstat").unwrap();
            let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap();
            (ours, counters::snapshot_from(&netstat, &snmp).unwrap())
        })
        .unwrap();
    assert_eq!(ours.get("Tcp.ActiveOpens"), Some(7));
    assert_eq!(ours.get("Tcp.PassiveOpens"), Some(7));
    assert_eq!(ours.get("Udp6.OutDatagrams"), Some(5));
    assert_ne!(
        main_thread_view.get("Tcp.ActiveOpens"),
        Some(7),
        "root namespace read"
    );
    // Same values as `ip netns exec NS nstat -az` (nstat spells TcpActiveOpens, Udp6OutDatagrams).
    let theirs = nstat(&lab, &srv);
    for name in [
        "Tcp.ActiveOpens",
        "Tcp.PassiveOpens",
        "Tcp.OutRsts",
        "Udp6.OutDatagrams",
        "Udp.NoPorts",
    ] {
        let nstat_name = name.replace('.', "");
        assert_eq!(
            ours.get(name),
            theirs.get(&nstat_name),
            "{name} vs nstat {nstat_name}"
        );
    }
    assert!(Path::new(&format!("/run/netns/{srv}")).exists());
    drop(lab);
    assert!(
        !Path::new(&format!("/run/netns/{srv}")).exists(),
        "namespace left behind"
    );
}

/// Collects around `run` in the lab's namespaces, the way a diagnose run would.
fn observe(lab: &HostLab, port: u16, run: impl FnOnce()) -> HostObservations {
    observe_ns(lab.server_netns(), lab.client_netns(), port, run)
}

fn observe_ns(srv: &str, cli: &str, port: u16, run: impl FnOnce()) -> HostObservations {
    let cfg = HostRunConfig {
        listener_port: Some(port),
        sample_every: Duration::from_millis(20),
        max_samples: 5000,
        kmsg_lookback: Duration::ZERO,
    };
    let started = netdoctor_lab::in_netns(srv, || HostRun::start(&cfg)).unwrap();
    run();
    let (mut obs, mut skipped) = netdoctor_lab::in_netns(srv, || started.finish()).unwrap();
    skipped.extend(netdoctor_lab::in_netns(cli, || read_client_side(&mut obs)).unwrap());
    // As root, only conntrack may be missing (when the module is not loaded).
    assert!(skipped.iter().all(|s| s.name == "conntrack"), "{skipped:?}");
    obs
}

fn ids(obs: &HostObservations) -> Vec<FindingId> {
    host_findings(obs).iter().map(|f| f.id).collect()
}

#[test]
fn tiny_backlog_with_a_slow_acceptor_is_a_listen_queue_overflow() {
    if !require_root() {
        return;
    }
    let mut lab = HostLab::create(&prefix("bl"), false).unwrap();
    let addr = hostcases::backlog_server(&mut lab, 8181, 1, Duration::from_millis(100)).unwrap();
    let mut outcome = None;
    // Note: on 6.18 these overflow drops do not reach skb:kfree_skb (a SYN refused for a full
    // accept queue is freed with consume_skb), so eBPF adds no TCP_LISTEN_OVERFLOW evidence here;
    // the counters and the sampled queue carry the finding.
    let obs = observe(&lab, 8181, || {
        outcome = Some(hostcases::burst_clients(&lab, addr, 20, Duration::from_secs(4)).unwrap());
    });
    let outcome = outcome.unwrap();
    eprintln!(
        "clients: {} of {} connected; {:?}",
        outcome.connected, outcome.attempts, outcome.first_error
    );
    let findings = host_findings(&obs);
    let f = findings
        .iter()
        .find(|f| f.id == FindingId::ListenQueueOverflow)
        .unwrap_or_else(|| panic!("no listen_queue_overflow in {findings:#?}\n{obs:#?}"));
    assert!(f.summary.contains("port 8181"), "{}", f.summary);

    assert!(obs.delta("TcpExt.ListenOverflows") > 0);
    assert!(!ids(&obs).contains(&FindingId::SynFlood), "{findings:#?}");
    assert_eq!(obs.listener.as_ref().unwrap().max_queue().unwrap().1, 1);
}

/// The look-alike of the case above: the same overflow, but of another listener in the
/// namespace, while the target's listener (sampled all along) accepts at once. The namespace's
/// counters move the same way; the finding is info on the host and does not blame the target.
#[test]
fn another_listeners_overflow_is_info_and_not_the_targets() {
    if !require_root() {
        return;
    }
    let mut lab = HostLab::create(&prefix("bo"), false).unwrap();
    let target = hostcases::echo_server(&mut lab, 9090, 128).unwrap();
    let other = hostcases::backlog_server(&mut lab, 8181, 1, Duration::from_millis(100)).unwrap();
    let mut outcome = None;
    let obs = observe(&lab, 9090, || {
        // The target's own clients connect and are answered while the other queue overflows.
        let ok = hostcases::burst_clients(&lab, target, 5, Duration::from_secs(2)).unwrap();
        assert_eq!(ok.connected, ok.attempts, "{ok:?}");
        outcome = Some(hostcases::burst_clients(&lab, other, 20, Duration::from_secs(4)).unwrap());
    });
    eprintln!("other listener's clients: {:?}", outcome.unwrap());
    assert!(obs.delta("TcpExt.ListenOverflows") > 0, "{obs:#?}");
    let findings = host_findings(&obs);
    let f = findings
        .iter()
        .find(|f| f.id == FindingId::ListenQueueOverflow)
        .unwrap_or_else(|| panic!("no listen_queue_overflow in {findings:#?}\n{obs:#?}"));
    assert_eq!(f.severity, Severity::Info, "{}", f.summary);
    assert_eq!(f.side, netdoctor_core::finding::Side::Host, "{}", f.summary);
    assert!(
        f.summary.contains("another listener") && f.summary.contains("port 9090 held at most"),
        "{}",
        f.summary
    );
    assert!(
        findings.iter().all(|f| f.severity == Severity::Info),
        "{findings:#?}"
    );
}

#[test]
fn tiny_port_range_is_ephemeral_port_exhaustion() {
    if !require_root() {
        return;
    }
    let mut lab = HostLab::create(&prefix("pe"), false).unwrap();
    let addr = hostcases::echo_server(&mut lab, 9090, 128).unwrap();
    let mut outcome = None;
    let mut obs = observe(&lab, 9090, || {
        outcome = Some(hostcases::port_exhaustion(&lab, addr, 40000, 40009, 30).unwrap());
        // The last connections reach TIME_WAIT when the server's FIN arrives: wait for it
        // (bounded), so the snapshot below is not taken while some are still in FIN_WAIT2.
        // Up to 5 s: session 23's CI (tests of other crates running beside it) saw 8 of 10
        // after the 2 s it waited before.
        lab.in_ns(lab.client_netns(), || {
            for _ in 0..250 {
                let c = netdoctor_observe::sockdiag::state_counts().unwrap();
                if c.time_wait >= 10 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
        .unwrap();
    });
    let outcome = outcome.unwrap();
    assert_eq!(outcome.connected, 10, "{outcome:?}");
    assert_eq!(outcome.addr_not_avail, 20, "{outcome:?}");
    obs.connects = Some(ConnectOutcome {
        attempts: outcome.attempts,
        addr_not_avail: outcome.addr_not_avail,
        remote: Some(addr),
    });
    let findings = host_findings(&obs);
    let f = findings
        .iter()
        .find(|f| f.id == FindingId::EphemeralPortExhaustion)
        .unwrap_or_else(|| panic!("no ephemeral_port_exhaustion in {findings:#?}"));
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.summary.contains("40000-40009 (10 ports)"),
        "{}",
        f.summary
    );
    // The TIME_WAIT evidence comes from sock_diag in the client namespace.
    let tw = obs
        .client_sockets
        .as_ref()
        .unwrap()
        .time_wait_by_remote
        .first()
        .copied();
    assert_eq!(tw, Some((addr, 10)));
    // Even without the connect() errors, TIME_WAIT filling the range is seen.
    obs.connects = None;
    assert!(ids(&obs).contains(&FindingId::EphemeralPortExhaustion));
}

#[test]
fn bounded_syn_flood_from_a_third_namespace_is_a_syn_flood() {
    if !require_root() {
        return;
    }
    if !Path::new("/usr/sbin/hping3").exists() {
        eprintln!("skipped: hping3 not installed (apt-get install hping3)");
        return;
    }
    let mut lab = HostLab::create(&prefix("sf"), true).unwrap();
    let addr = hostcases::echo_server(&mut lab, 7070, 128).unwrap();
    let mut real = None;
    let obs = observe(&lab, 7070, || {
        hostcases::syn_flood(&lab, 7070, 2000, 200).unwrap();
        // Real clients during the flood still get in (SYN cookies).
        real = Some(hostcases::burst_clients(&lab, addr, 10, Duration::from_secs(4)).unwrap());
    });
    let real = real.unwrap();
    let findings = host_findings(&obs);
    let f = findings
        .iter()
        .find(|f| f.id == FindingId::SynFlood)
        .unwrap_or_else(|| panic!("no syn_flood in {findings:#?}\n{obs:#?}"));
    eprintln!(
        "{}\nreal clients: {} of {} connected, connect ms {:?}",
        f.summary, real.connected, real.attempts, real.connect_ms
    );
    assert!(
        obs.server_sockets.as_ref().unwrap().syn_recv >= 100,
        "{obs:#?}"
    );
    assert!(obs.delta("TcpExt.SyncookiesSent") > 0);
    assert!(
        !ids(&obs).contains(&FindingId::ListenQueueOverflow),
        "{findings:#?}"
    );
    assert_eq!(real.connected, 10, "real clients: {real:?}");
}

#[test]
fn healthy_nginx_under_connection_churn_has_no_host_findings() {
    if !require_root() {
        return;
    }
    if !Path::new("/usr/sbin/nginx").exists() || !Path::new("/usr/bin/wrk").exists() {
        eprintln!("skipped: needs nginx and wrk (apt-get install nginx-light wrk)");
        return;
    }
    let name = format!("ndh{}", std::process::id());
    let cfg = netdoctor_lab::LabConfig {
        state_dir: std::env::temp_dir().join(format!("netdoctor-lab-{name}")),
        name,
    };
    let guard = netdoctor_lab::LabGuard::new(netdoctor_lab::Lab::start(&cfg).unwrap());
    let lab = guard.lab();
    let url = lab.server(true).unwrap().url.clone();
    let srv = lab.server_netns().to_string();
    let cli = lab.client_netns().to_string();
    let obs = observe_ns(&srv, &cli, netdoctor_lab::PORT_NODELAY_ON, || {
        // One connection per request: the server closes, so TIME_WAIT piles up there.
        let out = lab
            .command_in_client(std::ffi::OsStr::new("wrk"))
            .args(["-t2", "-c50", "-d3s", "-H", "Connection: close", &url])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    });
    // Churn is the server's accepted connections. Where TIME_WAIT lands is a race (who
    // closes first) and a new SYN from a reused client port ends a server TIME_WAIT early:
    // quiet, 133,603 connections left 13,399 on the server and 5,617 on the client; session
    // 20's CI, at load, 121,675 requests left 382 on the server.
    let accepted = obs.delta("Tcp.PassiveOpens");
    let (server_tw, client_tw) = (
        obs.server_sockets.as_ref().unwrap().time_wait,
        obs.client_sockets.as_ref().unwrap().time_wait,
    );
    eprintln!("{accepted} connections accepted; TIME_WAIT: server {server_tw}, client {client_tw}");
    assert!(
        accepted > 1000,
        "expected connection churn, saw {accepted} accepted"
    );
    let findings = host_findings(&obs);
    assert!(
        findings.iter().all(|f| f.severity == Severity::Info),
        "false positives: {findings:#?}"
    );
    guard.stop().unwrap();
}

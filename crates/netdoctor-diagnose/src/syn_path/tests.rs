//! On `syn-ratelimit.pcap.gz` (explore9: iptables `-p tcp --syn -m limit --limit 20/s
//! --limit-burst 5` then DROP in a router namespace between client and server, `netdoctor
//! diagnose --no-keepalive -c 10 -d 8s`, captured in the client's namespace) with the kernel
//! events that run's eBPF counted in the server's namespace (`LISTEN→SYN_RECV` 46, drops
//! `QUEUE_PURGE` ×45 only), and look-alikes where the server's host took or dropped the SYNs.

use super::*;
use netdoctor_core::{Analysis, Analyzer, AnalyzerConfig};
use netdoctor_observe::PacketSource;
use netdoctor_observe::host_findings::{KernelDrop, KernelStateChange};
use netdoctor_observe::pcapfile::CaptureFile;
use std::ops::ControlFlow;
use std::path::Path;

fn analysis() -> Analysis {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/captures/syn-ratelimit.pcap.gz");
    let mut file = CaptureFile::open(&path).expect("open the capture");
    let mut a = Analyzer::new(AnalyzerConfig::default());
    // A diagnose run reads the kernel's counters (none of the listen queue's grew here);
    // without any, `analyze` tells an unanswered SYN seen from the client as the path's.
    a.observe(netdoctor_core::observation::Observation::Counters(
        Vec::new(),
    ));
    file.for_each_packet(&mut |p| {
        a.push(p);
        ControlFlow::Continue(())
    })
    .expect("read the capture");
    a.finish()
}

/// The server namespace's kernel events of the recorded run, with `syn_recv` SYNs taken and
/// `drops` added to its `QUEUE_PURGE` drops.
fn kernel(syn_recv: u64, drops: &[(&str, u64)]) -> KernelEvents {
    let mut d = vec![KernelDrop {
        reason: "QUEUE_PURGE".into(),
        location: "sk_stream_kill_queues+0x57".into(),
        count: 45,
    }];
    d.extend(drops.iter().map(|(r, n)| KernelDrop {
        reason: (*r).into(),
        location: "tcp_conn_request+0x5d2".into(),
        count: *n,
    }));
    KernelEvents {
        netns: "net:[4026532315]".into(),
        server_netns: true,
        drops: d,
        state_changes: vec![
            KernelStateChange {
                from: "LISTEN".into(),
                to: "SYN_RECV".into(),
                count: syn_recv,
            },
            KernelStateChange {
                from: "SYN_RECV".into(),
                to: "ESTABLISHED".into(),
                count: 46,
            },
        ],
        ..KernelEvents::default()
    }
}

fn syn(findings: &[Finding]) -> &Finding {
    findings
        .iter()
        .find(|f| f.id == FindingId::SynRetransmit)
        .expect("syn_retransmit")
}

#[test]
fn syns_a_hop_dropped_are_the_paths_when_the_servers_kernel_never_saw_them() {
    let an = analysis();
    let mut findings = an.findings.clone();
    assert_eq!(syn(&findings).side, Side::Server, "the packets alone");
    assert!(apply(
        Some(&kernel(46, &[])),
        Some(&an.stats),
        &mut findings
    ));
    let f = syn(&findings);
    assert_eq!(f.side, Side::Network, "{}", f.summary);
    assert!(
        f.summary
            .contains("the server's host never received the repeated SYNs"),
        "{}",
        f.summary
    );
    assert!(
        f.explanation
            .contains("listener took 46 SYNs (LISTEN→SYN_RECV) and completed each handshake"),
        "{}",
        f.explanation
    );
    assert!(
        f.explanation.contains("for the 70 connections"),
        "{}",
        f.explanation
    );
    assert!(
        f.explanation.contains("a SYN rate limit"),
        "{}",
        f.explanation
    );
    assert!(
        f.fix
            .starts_with("The server's listen queue is not the cause"),
        "{}",
        f.fix
    );
}

#[test]
fn syns_the_servers_host_took_or_dropped_stay_the_servers() {
    let an = analysis();
    // As many SYNs reached the listener as the client tried connections; more than the
    // listener completed (SYN/ACKs left unanswered: lost on the way back, or the client gone);
    // the listener dropped some, or the server host's firewall did.
    for k in [
        kernel(85, &[]),
        kernel(60, &[]),
        kernel(46, &[("TCP_LISTEN_OVERFLOW", 39)]),
        kernel(46, &[("NETFILTER_DROP", 39)]),
    ] {
        let mut findings = an.findings.clone();
        assert!(!apply(Some(&k), Some(&an.stats), &mut findings), "{k:?}");
        assert_eq!(syn(&findings).side, Side::Server);
    }
    // Counted in the client's namespace (a remote server): nothing said about the server.
    let mut k = kernel(46, &[]);
    k.server_netns = false;
    let mut findings = an.findings.clone();
    assert!(!apply(Some(&k), Some(&an.stats), &mut findings));
}

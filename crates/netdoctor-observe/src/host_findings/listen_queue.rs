//! `listen_queue_overflow`: the accept queue of a listener was full, so the kernel dropped
//! SYNs or handshake-completing ACKs. Clients see it as connection setup that takes 1 s, 3 s, …
//! (their SYN is retransmitted), which is why TCPSynRetrans is listed as its consequence.
//!
//! Evidence: `TcpExt.ListenOverflows` / `ListenDrops` deltas (per namespace), and the sampled
//! listener's Recv-Q reaching its Send-Q (the backlog). Either alone is enough: the counters
//! cover listeners we did not sample, the samples show which listener it was.
//!
//! The counters (and the eBPF drops) are the whole namespace's, and a namespace holds many
//! listeners (a node's host namespace: the kubelet's, the exporters'). When the target's own
//! listener was sampled all along and never came near its limit, the overflow was another
//! listener's: the finding is then `info` on the host, names the full listeners it found, and
//! explains none of the target's symptoms (a burst that filled a large backlog and drained it
//! between two samples 100 ms apart would have to be far larger than the backlog).

use netdoctor_core::finding::{Evidence, Finding, FindingId, Severity, Side};

use super::HostObservations;

/// Overflows below this many count as a warning, not critical.
const CRITICAL_OVERFLOWS: u64 = 10;
/// Samples of the target's listener needed to say it never filled.
const CLEAR_MIN_SAMPLES: usize = 5;
/// Backlogs below this are small enough to fill and drain between two samples.
const CLEAR_MIN_BACKLOG: u32 = 16;

/// The target's listener, when it was sampled often enough and its queue stayed below half
/// its backlog throughout: `(port, largest queue, backlog, samples)`.
fn target_listener_clear(obs: &HostObservations) -> Option<(u16, u32, u32, usize)> {
    let s = obs.listener.as_ref()?;
    let (max_q, bl) = s.max_queue()?;
    let min_backlog = s.samples.iter().map(|x| x.backlog).min()?;
    (s.samples.len() >= CLEAR_MIN_SAMPLES
        && s.full_samples() == 0
        && min_backlog >= CLEAR_MIN_BACKLOG
        && max_q.saturating_mul(2) < min_backlog)
        .then_some((s.port, max_q, bl, s.samples.len()))
}

/// The finding, when the accept queue overflowed during the run.
pub fn listen_queue_overflow(obs: &HostObservations) -> Option<Finding> {
    let overflows = obs.delta("TcpExt.ListenOverflows");
    let drops = obs.delta("TcpExt.ListenDrops");
    let full = obs.listener.as_ref().map(|s| s.full_samples()).unwrap_or(0);
    let bpf_drops = obs.drops_of("TCP_LISTEN_OVERFLOW");
    let overflows = overflows.max(bpf_drops);
    if overflows == 0 && full == 0 {
        return None;
    }
    let mut evidence: Vec<Evidence> = Vec::new();
    evidence.extend(obs.counter_evidence("TcpExt.ListenOverflows", ""));
    evidence.extend(obs.counter_evidence("TcpExt.ListenDrops", ""));
    evidence.extend(obs.drop_evidence(
        "TCP_LISTEN_OVERFLOW",
        "the kernel's own reason: the accept queue was full",
    ));
    let mut where_ = String::from("a listener");
    let mut backlog = None;
    if let Some(series) = &obs.listener
        && let Some((max_q, bl)) = series.max_queue()
    {
        // The counters are the namespace's: name the sampled listener only when its own queue
        // was seen full (a brief overflow between samples stays "a listener").
        if full > 0 {
            where_ = format!("the listener on port {}", series.port);
            backlog = Some(bl);
        }
        evidence.push(Evidence::Probe {
            probe: format!("sock_diag listener :{}", series.port),
            note: format!(
                "accept queue (Recv-Q) up to {max_q} against a backlog (Send-Q) of {bl}; full in {full} of {} samples",
                series.samples.len()
            ),
        });
    }
    if let Some(clear) = target_listener_clear(obs) {
        return Some(elsewhere(obs, overflows, clear, evidence));
    }
    let syn_retrans = obs.delta("TcpExt.TCPSynRetrans");
    evidence.extend(obs.counter_evidence(
        "TcpExt.TCPSynRetrans",
        "a consequence: clients resent SYNs the full queue dropped",
    ));
    evidence.extend(obs.counter_evidence("TcpExt.EmbryonicRsts", ""));
    let severity = if overflows >= CRITICAL_OVERFLOWS || full >= 3 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let summary = if overflows > 0 {
        format!("accept queue of {where_} overflowed: {overflows} connection attempts dropped")
    } else {
        format!("accept queue of {where_} was full in {full} samples")
    };
    let mut f = Finding::new(
        FindingId::ListenQueueOverflow,
        severity,
        Side::Server,
        summary,
    );
    f.confidence = if overflows > 0 && full > 0 {
        0.95
    } else {
        0.85
    };
    f.explanation = format!(
        "The kernel completes handshakes on its own and queues the connections until the \
         application calls accept(). That queue holds at most the listen() backlog \
         (capped by net.core.somaxconn){}. It was full: the kernel dropped {} SYNs or \
         handshake ACKs (ListenDrops +{drops}), and each dropped client waited for its SYN \
         retransmission — 1 s, then 3 s, 7 s — before it got in{}.",
        backlog.map(|b| format!(", here {b}")).unwrap_or_default(),
        overflows,
        if syn_retrans > 0 {
            format!(" (TCPSynRetrans +{syn_retrans})")
        } else {
            String::new()
        },
    );
    let abort = obs
        .server_sysctls
        .as_ref()
        .and_then(|s| s.tcp_abort_on_overflow)
        .is_some_and(|v| v != 0);
    f.fix = format!(
        "Make the server accept faster (more worker processes or threads, no blocking work in \
         the accept loop) and give it a larger backlog: the application's listen() backlog \
         (nginx: `listen … backlog=4096;`) and net.core.somaxconn, which caps it. {}",
        if abort {
            // Already set in the server's namespace: saying "set it" would tell the reader to
            // do what was done (a SYN met by a full queue is dropped whatever it says).
            "tcp_abort_on_overflow is already 1 on the server: a handshake completed while the \
             queue is full gets a reset, but SYNs that meet a full queue are still dropped and \
             resent, so it does not spare clients the wait."
        } else {
            "Set tcp_abort_on_overflow=1 only if clients should fail fast rather than wait."
        }
    );
    f.evidence = evidence;
    Some(f)
}

/// The overflow of another listener in the target's namespace: `info` on the host.
fn elsewhere(
    obs: &HostObservations,
    overflows: u64,
    (port, max_q, backlog, samples): (u16, u32, u32, usize),
    mut evidence: Vec<Evidence>,
) -> Finding {
    let full: Vec<String> = obs
        .server_sockets
        .iter()
        .flat_map(|s| s.full_listeners.iter())
        .filter(|l| l.0 != port)
        .map(|(p, q, b)| format!("port {p} ({q} queued, backlog {b})"))
        .collect();
    if !full.is_empty() {
        evidence.push(Evidence::Probe {
            probe: "sock_diag listeners".to_string(),
            note: format!(
                "accept queue at its limit at the end of the run: {}",
                full.join(", ")
            ),
        });
    }
    let which = if full.is_empty() {
        "another listener".to_string()
    } else {
        format!("another listener, {},", full.join(", "))
    };
    let summary = format!(
        "accept queue of {which} in this network namespace overflowed: {overflows} connection \
         attempts dropped; the target's listener on port {port} held at most {max_q} of its \
         backlog of {backlog} in {samples} samples"
    );
    let mut f = Finding::new(
        FindingId::ListenQueueOverflow,
        Severity::Info,
        Side::Host,
        summary,
    );
    f.confidence = 0.7;
    f.explanation = format!(
        "The kernel's overflow counters count every listener of the network namespace. The \
         target's own listener on port {port} was sampled {samples} times during the run and \
         its accept queue never went past {max_q} of {backlog}: it did not drop these \
         connection attempts. Another service in the same namespace accepts too slowly for \
         its clients. It does not explain the target's latency."
    );
    f.fix = "Nothing to change for the target. To find the listener that overflows, compare \
             Recv-Q with Send-Q per listener (`ss -ltn`) while `nstat -az \
             TcpExtListenOverflows` rises; that service needs to accept faster or a larger \
             listen() backlog (capped by net.core.somaxconn)."
        .to_string();
    f.evidence = evidence;
    f
}

#[cfg(test)]
mod tests {
    use super::super::test_support::delta;
    use super::*;
    use crate::sockdiag::{ListenerSample, ListenerSeries};

    fn series(queues: &[(u32, u32)]) -> ListenerSeries {
        ListenerSeries {
            port: 8080,
            samples: queues
                .iter()
                .enumerate()
                .map(|(i, &(q, b))| ListenerSample {
                    at_ms: i as u64 * 100,
                    accept_queue: q,
                    backlog: b,
                    syn_recv: 0,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_fix_does_not_ask_for_abort_on_overflow_when_it_is_already_set() {
        let mut obs = HostObservations {
            counters: vec![
                delta("TcpExt.ListenOverflows", 0, 40),
                delta("TcpExt.ListenDrops", 0, 40),
            ],
            listener: Some(series(&[(2, 1), (2, 1), (2, 1)])),
            ..Default::default()
        };
        let f = listen_queue_overflow(&obs).unwrap();
        assert!(
            f.fix.contains("Set tcp_abort_on_overflow=1 only if"),
            "{}",
            f.fix
        );
        obs.server_sysctls = Some(crate::sysctl::Sysctls {
            tcp_abort_on_overflow: Some(1),
            ..Default::default()
        });
        let f = listen_queue_overflow(&obs).unwrap();
        assert!(!f.fix.contains("Set tcp_abort_on_overflow"), "{}", f.fix);
        assert!(f.fix.contains("already 1 on the server"), "{}", f.fix);
    }

    #[test]
    fn overflow_counters_and_full_queue_make_a_critical_finding() {
        let obs = HostObservations {
            counters: vec![
                delta("TcpExt.ListenOverflows", 0, 40),
                delta("TcpExt.ListenDrops", 0, 40),
                delta("TcpExt.TCPSynRetrans", 5, 25),
            ],
            listener: Some(series(&[(0, 1), (2, 1), (2, 1), (2, 1)])),
            ..Default::default()
        };
        let f = listen_queue_overflow(&obs).unwrap();
        assert_eq!(f.id, FindingId::ListenQueueOverflow);
        assert_eq!(f.severity, Severity::Critical);
        assert!(
            f.summary.contains("port 8080") && f.summary.contains("40"),
            "{}",
            f.summary
        );
        let names: Vec<String> = f
            .evidence
            .iter()
            .filter_map(|e| match e {
                Evidence::Counter { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            names,
            [
                "TcpExt.ListenOverflows",
                "TcpExt.ListenDrops",
                "TcpExt.TCPSynRetrans"
            ]
        );
        assert!(
            f.evidence.iter().any(
                |e| matches!(e, Evidence::Probe { note, .. } if note.contains("full in 3 of 4"))
            )
        );
    }

    #[test]
    fn ebpf_drop_reasons_are_evidence_too() {
        let obs = HostObservations {
            kernel_drops: vec![super::super::KernelDrop {
                reason: "TCP_LISTEN_OVERFLOW".into(),
                location: "tcp_conn_request+0x5d2".into(),
                count: 12,
            }],
            ..Default::default()
        };
        let f = listen_queue_overflow(&obs).unwrap();
        assert_eq!(f.severity, Severity::Critical);
        assert!(
            matches!(&f.evidence[0], Evidence::Counter { name, after: 12, note, .. }
            if name == "kfree_skb:TCP_LISTEN_OVERFLOW" && note.contains("tcp_conn_request"))
        );
    }

    #[test]
    fn overflows_elsewhere_do_not_blame_the_sampled_listener() {
        let obs = HostObservations {
            counters: vec![delta("TcpExt.ListenOverflows", 0, 30)],
            listener: Some(series(&[(0, 511), (3, 511)])),
            ..Default::default()
        };
        let f = listen_queue_overflow(&obs).unwrap();
        assert!(
            f.summary.contains("of a listener") && !f.summary.contains("port 8080"),
            "{}",
            f.summary
        );
        assert!(f.evidence.iter().any(|e| matches!(e, Evidence::Probe { note, .. } if note.contains("up to 3") && note.contains("full in 0"))));
    }

    /// A namespace holds many listeners: the target's, sampled all along and never near its
    /// limit, did not overflow; another one did. Info on the host, naming the full one.
    #[test]
    fn overflows_of_another_listener_while_the_target_stayed_clear_are_info() {
        let mut obs = HostObservations {
            counters: vec![
                delta("TcpExt.ListenOverflows", 55, 704),
                delta("TcpExt.TCPSynRetrans", 0, 422),
            ],
            listener: Some(series(&[(0, 1024); 31])),
            server_sockets: Some(crate::sockdiag::StateCounts {
                full_listeners: vec![(18512, 2, 1)],
                ..Default::default()
            }),
            ..Default::default()
        };
        let f = listen_queue_overflow(&obs).unwrap();
        assert_eq!((f.severity, f.side), (Severity::Info, Side::Host));
        assert!(
            f.summary.contains("port 18512 (2 queued, backlog 1)")
                && f.summary.contains("649")
                && f.summary
                    .contains("port 8080 held at most 0 of its backlog of 1024 in 31"),
            "{}",
            f.summary
        );
        // The look-alikes keep the server's finding: the target's queue seen full once, a
        // small backlog (fills and drains between samples), too few samples, a queue past half.
        for queues in [
            vec![(0, 1024); 30]
                .into_iter()
                .chain([(1024, 1024)])
                .collect::<Vec<_>>(),
            vec![(0, 8); 31],
            vec![(0, 1024); 4],
            vec![(600, 1024); 31],
        ] {
            obs.listener = Some(series(&queues));
            let f = listen_queue_overflow(&obs).unwrap();
            assert_eq!(f.side, Side::Server, "{queues:?}: {}", f.summary);
            assert_eq!(f.severity, Severity::Critical, "{queues:?}");
        }
    }

    #[test]
    fn a_few_overflows_are_a_warning() {
        let obs = HostObservations {
            counters: vec![delta("TcpExt.ListenOverflows", 7, 9)],
            ..Default::default()
        };
        let f = listen_queue_overflow(&obs).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.summary.contains("a listener"));
    }

    #[test]
    fn busy_but_not_full_is_nothing() {
        let obs = HostObservations {
            counters: vec![delta("TcpExt.TCPSynRetrans", 0, 3)],
            listener: Some(series(&[(10, 511), (100, 511)])),
            ..Default::default()
        };
        assert_eq!(listen_queue_overflow(&obs), None);
    }
}

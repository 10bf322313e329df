//! `listen_queue_overflow`: the accept queue of a listener was full, so the kernel dropped
//! SYNs or handshake-completing ACKs. Clients see it as connection setup that takes 1 s, 3 s, …
//! (their SYN is retransmitted), which is why TCPSynRetrans is listed as its consequence.
//!
//! Evidence: `TcpExt.ListenOverflows` / `ListenDrops` deltas (per namespace), and the sampled
//! listener's Recv-Q reaching its Send-Q (the backlog). Either alone is enough: the counters
//! cover listeners we did not sample, the samples show which listener it was.

use netdoctor_core::finding::{Evidence, Finding, FindingId, Severity, Side};

use super::HostObservations;

/// Overflows below this many count as a warning, not critical.
const CRITICAL_OVERFLOWS: u64 = 10;

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
    f.fix = "Make the server accept faster (more worker processes or threads, no blocking work in \
             the accept loop) and give it a larger backlog: the application's listen() backlog \
             (nginx: `listen … backlog=4096;`) and net.core.somaxconn, which caps it. Set \
             tcp_abort_on_overflow=1 only if clients should fail fast rather than wait."
        .to_string();
    f.evidence = evidence;
    Some(f)
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

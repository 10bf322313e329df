//! `syn_flood`: many half-open connections, SYN cookies sent, or SYNs dropped from a full SYN
//! queue. A tiny accept queue also makes the kernel send cookies and log "Possible SYN flooding"
//! (the SYN queue's limit is the listen backlog too), so cookies alone do not make a flood: when
//! the accept queue overflowed and few connections were half-open, that is
//! `listen_queue_overflow`, not this.

use netdoctor_core::finding::{Evidence, Finding, FindingId, Severity, Side};

use super::{HostObservations, log_evidence};
use crate::kmsg::KmsgKind;

/// Half-open connections at or above this count are a flood by themselves.
const MANY_HALF_OPEN: u32 = 256;
/// Half-open connections at or above this count back up cookie/log evidence.
const SOME_HALF_OPEN: u32 = 16;

/// The finding, when the SYN queue was under pressure beyond a burst of real clients.
pub fn syn_flood(obs: &HostObservations) -> Option<Finding> {
    let cookies = obs.delta("TcpExt.SyncookiesSent");
    let qfull_drop = obs.delta("TcpExt.TCPReqQFullDrop");
    let qfull_cookie = obs.delta("TcpExt.TCPReqQFullDoCookies");
    let overflows = obs.delta("TcpExt.ListenOverflows");
    // The kernel log is machine-wide: with a known listener, only its port's lines count.
    let port = obs.listener.as_ref().map(|s| s.port);
    let ours = |l: &&crate::kmsg::KmsgLine| port.is_none() || l.port.is_none() || l.port == port;
    let logged = obs.kmsg_of(KmsgKind::SynFlooding).filter(ours).count();
    let listener_half_open = obs.listener.as_ref().map(|s| s.max_syn_recv()).unwrap_or(0);
    let ns_half_open = obs.server_sockets.as_ref().map(|s| s.syn_recv).unwrap_or(0);
    let half_open = listener_half_open.max(ns_half_open);
    // Counters and sockets are the namespace's own; the log is the machine's, so a log line
    // supports a finding but never makes one without half-open connections here.
    let pressure = cookies > 0 || qfull_drop > 0 || qfull_cookie > 0;
    let flood = half_open >= MANY_HALF_OPEN
        || ((pressure || logged > 0) && half_open >= SOME_HALF_OPEN)
        || (pressure && overflows == 0);
    if !flood {
        return None;
    }
    let mut evidence: Vec<Evidence> = Vec::new();
    for name in [
        "TcpExt.SyncookiesSent",
        "TcpExt.TCPReqQFullDoCookies",
        "TcpExt.TCPReqQFullDrop",
        "TcpExt.SyncookiesRecv",
    ] {
        evidence.extend(obs.counter_evidence(name, ""));
    }
    if half_open > 0 {
        let port = obs
            .listener
            .as_ref()
            .map(|s| format!(" on port {}", s.port))
            .or_else(|| {
                obs.server_sockets
                    .as_ref()
                    .and_then(|s| s.syn_recv_by_port.first())
                    .map(|(p, n)| format!(", {n} of them on port {p}"))
            })
            .unwrap_or_default();
        evidence.push(Evidence::Probe {
            probe: "sock_diag SYN_RECV".to_string(),
            note: format!("{half_open} half-open connections (SYN_RECV){port}"),
        });
    }
    evidence.extend(log_evidence(
        obs.kmsg_of(KmsgKind::SynFlooding).filter(ours),
        3,
        "the kernel found the SYN queue full",
    ));
    let severity = if qfull_drop > 0 || half_open >= MANY_HALF_OPEN {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let summary = format!(
        "SYN flood: {half_open} half-open connections, {} SYN cookies sent, {qfull_drop} SYNs dropped",
        cookies.max(qfull_cookie)
    );
    let mut f = Finding::new(FindingId::SynFlood, severity, Side::Host, summary);
    f.confidence = if half_open >= SOME_HALF_OPEN {
        0.9
    } else {
        0.7
    };
    f.explanation = "SYNs arrived faster than handshakes completed: the SYN queue (half-open \
                     connections, SYN_RECV) filled up. With SYN cookies on, the kernel still \
                     answers every SYN but without keeping state (no window scaling or SACK \
                     negotiated for those connections); with cookies off, new SYNs are dropped \
                     and real clients wait 1 s, 3 s, … for their retransmission. Many half-open \
                     connections from addresses that never complete the handshake are a flood, \
                     not load."
        .to_string();
    f.fix = "Keep net.ipv4.tcp_syncookies=1, size net.ipv4.tcp_max_syn_backlog and the listen \
             backlog for real bursts, and rate-limit or filter the sources upstream (firewall \
             `-p tcp --syn -m hashlimit`, a load balancer's SYN proxy). Check the sources with \
             `ss -n state syn-recv`."
        .to_string();
    f.evidence = evidence;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{delta, line};
    use super::*;
    use crate::sockdiag::StateCounts;

    fn sockets(syn_recv: u32) -> StateCounts {
        StateCounts {
            syn_recv,
            syn_recv_by_port: vec![(8080, syn_recv)],
            ..Default::default()
        }
    }

    #[test]
    fn cookies_and_half_open_make_a_flood() {
        let obs = HostObservations {
            counters: vec![delta("TcpExt.SyncookiesSent", 0, 900)],
            server_sockets: Some(sockets(129)),
            kmsg: vec![line(
                KmsgKind::SynFlooding,
                "TCP: request_sock_TCP: Possible SYN flooding on port 10.0.0.1:8080. Sending cookies.",
            )],
            ..Default::default()
        };
        let f = syn_flood(&obs).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.summary.contains("129 half-open") && f.summary.contains("900"),
            "{}",
            f.summary
        );
        assert!(f.evidence.iter().any(|e| matches!(e, Evidence::Log { .. })));
        assert!(
            f.evidence
                .iter()
                .any(|e| matches!(e, Evidence::Probe { note, .. } if note.contains("port 8080")))
        );
    }

    #[test]
    fn many_half_open_alone_is_critical() {
        let obs = HostObservations {
            server_sockets: Some(sockets(1000)),
            ..Default::default()
        };
        assert_eq!(syn_flood(&obs).unwrap().severity, Severity::Critical);
    }

    #[test]
    fn cookies_from_a_tiny_accept_queue_are_not_a_flood() {
        // What a listen backlog of 1 with a slow acceptor does: overflows, a few cookies.
        let obs = HostObservations {
            counters: vec![
                delta("TcpExt.ListenOverflows", 0, 50),
                delta("TcpExt.SyncookiesSent", 0, 4),
            ],
            server_sockets: Some(sockets(2)),
            ..Default::default()
        };
        assert_eq!(syn_flood(&obs), None);
    }

    #[test]
    fn log_lines_about_another_port_do_not_count() {
        let mut other = line(
            KmsgKind::SynFlooding,
            "TCP: request_sock_TCP: Possible SYN flooding on port 0.0.0.0:7070. Sending cookies.",
        );
        other.port = Some(7070);
        let obs = HostObservations {
            listener: Some(crate::sockdiag::ListenerSeries {
                port: 8080,
                ..Default::default()
            }),
            kmsg: vec![other.clone()],
            ..Default::default()
        };
        assert_eq!(syn_flood(&obs), None);
        let obs = HostObservations {
            kmsg: vec![other],
            ..obs
        };
        let mut mine = obs.clone();
        mine.listener.as_mut().unwrap().port = 7070;
        // A log line alone (machine-wide) is not enough; with half-open connections here it is.
        assert_eq!(syn_flood(&mine), None);
        mine.server_sockets = Some(sockets(20));
        assert!(syn_flood(&mine).is_some());
    }

    #[test]
    fn a_few_half_open_without_pressure_is_nothing() {
        let obs = HostObservations {
            server_sockets: Some(sockets(40)),
            ..Default::default()
        };
        assert_eq!(syn_flood(&obs), None);
    }
}

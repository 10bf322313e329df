//! What the server's own sockets say. When the server runs on this host, the observe crate reads
//! the socket options of the process that owns the target port (`pidfd_getfd` + `getsockopt`);
//! this module turns them into evidence for (or against) the findings made from packets. The
//! analyzer path is `Analyzer::observe(Observation::ServerSockets(..))`, which the
//! `nagle_delayed_ack` detector uses; [`corroborate`] applies the same rule to findings made
//! already (to be removed once `diagnose` feeds observations).

use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SocketState {
    Listen,
    Established,
}

/// One socket of the server process and the options that shape how it sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSocket {
    pub pid: u32,
    /// Process name (`/proc/<pid>/comm`), e.g. `nginx`.
    pub process: String,
    pub fd: i32,
    pub state: SocketState,
    /// `ip:port` the socket is bound to.
    pub local: String,
    pub tcp_nodelay: bool,
    pub tcp_cork: bool,
    pub sndbuf: u32,
    pub rcvbuf: u32,
}

/// Adds socket-option evidence to the findings it bears on. A server-side
/// `nagle_delayed_ack` whose connections really have TCP_NODELAY off (and no TCP_CORK) is
/// confirmed; one whose connections have TCP_NODELAY on is marked as contradicted, its
/// confidence lowered and its severity capped at `warning`, because the held segments must
/// then come from somewhere else.
pub fn corroborate(findings: &mut [Finding], sockets: &[ServerSocket]) {
    for f in findings
        .iter_mut()
        .filter(|f| f.id == FindingId::NagleDelayedAck && f.side == Side::Server)
    {
        corroborate_nagle(f, sockets);
    }
}

/// [`corroborate`] for one server-side `nagle_delayed_ack` finding.
pub(crate) fn corroborate_nagle(f: &mut Finding, sockets: &[ServerSocket]) {
    let conns: Vec<&ServerSocket> = sockets
        .iter()
        .filter(|s| s.state == SocketState::Established)
        .collect();
    let Some(example) = conns.first() else {
        return;
    };
    let nagle_on = conns.iter().filter(|s| !s.tcp_nodelay).count();
    let corked = conns.iter().filter(|s| s.tcp_cork).count();
    let n = conns.len();
    {
        let (value, note) = if nagle_on == n && corked == 0 {
            f.confidence = f.confidence.max(0.99);
            (
                "0 (Nagle on)".to_string(),
                format!(
                    "TCP_NODELAY is off on all {n} connections of {} (pid {}) that were sampled: \
                     Nagle's algorithm is on, as the packets show",
                    example.process, example.pid
                ),
            )
        } else if nagle_on == 0 && corked == 0 {
            // The run's own observation contradicts the detector: the server's Nagle cannot
            // hold data with TCP_NODELAY on. The pattern stays visible, as information that
            // says why it is not the cause (loss recovery and a window that reopens late
            // release small segments after a late ACK too).
            f.confidence *= 0.5;
            f.severity = Severity::Info;
            f.summary.push_str(&format!(
                " (but TCP_NODELAY is on for all {n} sampled server connections: not the \
                 server's Nagle)"
            ));
            (
                "1 (Nagle off)".to_string(),
                format!(
                    "TCP_NODELAY is on for all {n} sampled connections of {} (pid {}), none \
                     corked, so its own Nagle algorithm is not what holds the data: look for a \
                     proxy or another process between, or for loss recovery",
                    example.process, example.pid
                ),
            )
        } else if nagle_on == 0 {
            f.confidence *= 0.7;
            f.severity = f.severity.min(Severity::Warning);
            (
                "1 (Nagle off)".to_string(),
                format!(
                    "TCP_NODELAY is on for all {n} sampled connections of {} (pid {}), so its own \
                     Nagle algorithm is not what holds the data: look for a proxy or another \
                     process between, or TCP_CORK ({corked} of {n} corked)",
                    example.process, example.pid
                ),
            )
        } else {
            (
                "mixed".to_string(),
                format!(
                    "TCP_NODELAY is off on {nagle_on} of {n} sampled connections of {} (pid {})",
                    example.process, example.pid
                ),
            )
        };
        let fd = conns
            .iter()
            .find(|s| !s.tcp_nodelay)
            .map_or(example.fd, |s| s.fd);
        f.evidence.insert(
            0,
            Evidence::SocketOption {
                pid: example.pid,
                fd,
                option: "TCP_NODELAY".into(),
                value,
                note,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(state: SocketState, nodelay: bool) -> ServerSocket {
        ServerSocket {
            pid: 42,
            process: "nginx".into(),
            fd: 7,
            state,
            local: "10.0.0.1:8081".into(),
            tcp_nodelay: nodelay,
            tcp_cork: false,
            sndbuf: 16384,
            rcvbuf: 131072,
        }
    }

    fn nagle() -> Finding {
        let mut f = Finding::new(
            FindingId::NagleDelayedAck,
            Severity::Critical,
            Side::Server,
            "x",
        );
        f.confidence = 0.9;
        f
    }

    #[test]
    fn nodelay_off_confirms() {
        let mut v = vec![nagle()];
        corroborate(
            &mut v,
            &[
                sock(SocketState::Listen, false),
                sock(SocketState::Established, false),
            ],
        );
        assert!(v[0].confidence >= 0.99);
        assert!(
            matches!(&v[0].evidence[0], Evidence::SocketOption { option, value, .. }
            if option == "TCP_NODELAY" && value.starts_with('0'))
        );
    }

    #[test]
    fn nodelay_on_contradicts() {
        let mut v = vec![nagle()];
        corroborate(&mut v, &[sock(SocketState::Established, true)]);
        assert!(v[0].confidence < 0.9);
        assert_eq!(
            v[0].severity,
            Severity::Info,
            "not a problem of the server with TCP_NODELAY on everywhere"
        );
        assert!(
            matches!(&v[0].evidence[0], Evidence::SocketOption { note, .. }
            if note.contains("not what holds"))
        );
    }

    #[test]
    fn listeners_alone_say_nothing() {
        // nginx sets TCP_NODELAY per accepted connection, not on the listener.
        let mut v = vec![nagle()];
        corroborate(&mut v, &[sock(SocketState::Listen, false)]);
        assert!(v[0].evidence.is_empty());
        assert_eq!(v[0].confidence, 0.9);
    }
}

//! Findings from active probes (as opposed to packets): what a refused connection means.

use crate::finding::{Evidence, Finding, FindingId, Severity, Side};

/// `server_not_listening`: SYNs to `addr` were answered with RST (or connect() was refused).
pub fn server_not_listening(addr: &str, syn_sent: u32, syn_refused: u32) -> Finding {
    let mut f = Finding::new(
        FindingId::ServerNotListening,
        Severity::Critical,
        Side::Server,
        format!("Nothing listens on {addr}: connections are refused"),
    );
    f.confidence = if syn_refused > 0 { 0.99 } else { 0.9 };
    f.impact.affected_fraction = Some(1.0);
    f.explanation = format!(
        "The host at {addr} answered connection attempts with a TCP reset, which is what a kernel \
         does when no socket listens on that port. Requests do not get slow here, they fail at once. \
         Either the server process is not running, it listens on another port or address (e.g. \
         127.0.0.1 only, or IPv6 only), or a firewall rejects the port with a reset."
    );
    f.fix = "Start the server, or point netdoctor at the port it really listens on \
             (`ss -ltnp` on the server host lists listening sockets and their processes)."
        .into();
    let note = if syn_sent > 0 {
        format!(
            "{syn_refused} of {syn_sent} SYNs answered with RST; the HTTP request's connect() was refused"
        )
    } else {
        "connect() was refused".to_string()
    };
    f.evidence.push(Evidence::Probe {
        probe: "syn".into(),
        note,
    });
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_address_and_is_critical() {
        let f = server_not_listening("127.0.0.1:1", 5, 5);
        assert_eq!(f.id, FindingId::ServerNotListening);
        assert_eq!(f.severity, Severity::Critical);
        assert!(f.summary.contains("127.0.0.1:1"));
        assert!(matches!(&f.evidence[0], Evidence::Probe { note, .. } if note.contains("5 of 5")));
    }
}

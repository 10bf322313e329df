//! `server_not_listening`: connection attempts were refused ([`Observation::ConnectRefused`],
//! from the SYN and connect() probes): nothing listens on the target port.

use super::{Context, Detector, Interests};
use crate::event::Event;
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::observation::Observation;

/// The `server_not_listening` detector.
#[derive(Default)]
pub struct ServerNotListening {
    /// (addr, SYNs sent, SYNs refused), the first of each address.
    refused: Vec<(String, u32, u32)>,
}

impl Detector for ServerNotListening {
    fn interests(&self) -> Interests {
        Interests::OBSERVED
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        if let Event::Observed(Observation::ConnectRefused {
            addr,
            syn_sent,
            syn_refused,
        }) = ev
            && !self.refused.iter().any(|r| &r.0 == addr)
        {
            self.refused.push((addr.clone(), *syn_sent, *syn_refused));
        }
    }

    fn finish(&mut self, _cx: &Context, out: &mut Vec<Finding>) {
        for (addr, sent, refused) in &self.refused {
            out.push(finding(addr, *sent, *refused));
        }
    }
}

/// The finding for refused connections to `addr`: `syn_refused` of `syn_sent` SYNs were
/// answered with RST (0 of 0: only connect() was tried).
pub fn finding(addr: &str, syn_sent: u32, syn_refused: u32) -> Finding {
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
    use crate::detect::testkit::{cx, run};

    fn refused(addr: &str, sent: u32, refused: u32) -> Observation {
        Observation::ConnectRefused {
            addr: addr.into(),
            syn_sent: sent,
            syn_refused: refused,
        }
    }

    #[test]
    fn a_refused_connect_is_critical_and_names_the_address() {
        let obs = refused("127.0.0.1:1", 5, 5);
        let again = refused("127.0.0.1:1", 1, 1);
        let v =
            run::<ServerNotListening>(&[Event::Observed(&obs), Event::Observed(&again)], &cx(0));
        assert_eq!(v.len(), 1, "one finding per address");
        assert_eq!(v[0].id, FindingId::ServerNotListening);
        assert_eq!(v[0].severity, Severity::Critical);
        assert!(v[0].summary.contains("127.0.0.1:1"));
        assert!(
            matches!(&v[0].evidence[0], Evidence::Probe { note, .. } if note.contains("5 of 5"))
        );
    }

    #[test]
    fn nothing_refused_nothing_found() {
        let other = Observation::Counters(vec![]);
        assert!(run::<ServerNotListening>(&[Event::Observed(&other)], &cx(3)).is_empty());
    }
}

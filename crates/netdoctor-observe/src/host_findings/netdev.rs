//! `interface_errors`: errors, drops, FIFO overruns or carrier errors of an interface grew
//! during the run.

use netdoctor_core::finding::{Evidence, Finding, FindingId, Severity, Side};

use super::HostObservations;

/// Grown errors at or above this fraction of the interval's packets (or this count) warn.
const WARN_FRACTION: f64 = 0.001;
const WARN_COUNT: u64 = 100;

/// The finding, when an interface counted errors or drops during the run.
pub fn interface_errors(obs: &HostObservations) -> Option<Finding> {
    let mut evidence = Vec::new();
    let mut total = 0u64;
    let mut packets = 0u64;
    let mut names = Vec::new();
    for d in &obs.netdev {
        let grown = d.grown_errors();
        if grown.is_empty() {
            continue;
        }
        names.push(d.after.name.clone());
        packets += d.packets();
        for (what, before, after) in grown {
            total += after - before;
            evidence.push(Evidence::Counter {
                name: format!("{}.{what}", d.after.name),
                before,
                after,
                note: format!(
                    "+{} during the run ({} packets moved)",
                    after - before,
                    d.packets()
                ),
            });
        }
    }
    if total == 0 {
        return None;
    }
    let fraction = if packets > 0 {
        total as f64 / packets as f64
    } else {
        1.0
    };
    let severity = if fraction >= WARN_FRACTION || total >= WARN_COUNT {
        Severity::Warning
    } else {
        Severity::Info
    };
    let mut f = Finding::new(
        FindingId::InterfaceErrors,
        severity,
        Side::Host,
        format!(
            "{total} interface errors/drops on {} during the run",
            names.join(", ")
        ),
    );
    f.confidence = 0.8;
    f.impact.affected_fraction = Some(fraction.min(1.0));
    f.explanation = "The interface counted packets it could not receive or send: rx_drop/rx_fifo \
                     (the host did not take packets off the ring fast enough, or no buffer), \
                     rx_errs/rx_frame (corrupt frames: cable, optics, duplex), tx_carrier \
                     (link flaps), tx_drop (queue full). Each lost packet costs a retransmission."
        .to_string();
    f.fix = "Look at `ip -s -s link show DEV` and `ethtool -S DEV` for the exact cause: larger \
             rings (`ethtool -G`) or more RX queues for drops/fifo, the cable/optics/switch port \
             for frame and carrier errors, a longer qdisc (txqueuelen) for tx drops."
        .to_string();
    f.evidence = evidence;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netdev::{NetDevDelta, NetDevStats};

    fn dev(rx_packets: u64, rx_drop: u64) -> NetDevStats {
        NetDevStats {
            name: "eth0".into(),
            rx_packets,
            rx_drop,
            ..Default::default()
        }
    }

    #[test]
    fn growing_drops_warn() {
        let obs = HostObservations {
            netdev: vec![NetDevDelta {
                before: dev(1000, 5),
                after: dev(11_000, 505),
            }],
            ..Default::default()
        };
        let f = interface_errors(&obs).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.summary.starts_with("500 interface errors/drops on eth0"));
        assert!(
            matches!(&f.evidence[0], Evidence::Counter { name, before: 5, after: 505, .. } if name == "eth0.rx_drop")
        );
    }

    #[test]
    fn one_drop_in_a_million_is_info() {
        let obs = HostObservations {
            netdev: vec![NetDevDelta {
                before: dev(0, 0),
                after: dev(1_000_000, 1),
            }],
            ..Default::default()
        };
        assert_eq!(interface_errors(&obs).unwrap().severity, Severity::Info);
    }

    #[test]
    fn steady_counters_are_nothing() {
        let obs = HostObservations {
            netdev: vec![NetDevDelta {
                before: dev(0, 7),
                after: dev(100, 7),
            }],
            ..Default::default()
        };
        assert_eq!(interface_errors(&obs), None);
    }
}

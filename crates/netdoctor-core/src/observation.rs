//! Observations: what observers saw outside the packets (kernel counters, the server's sockets,
//! probe results). They enter the same stream as the events the packet path raises
//! ([`crate::Analyzer::observe`]), so a detector can use both; an analyzer fed only
//! observations (a run without a capture) still reports what they show.

use serde::{Deserialize, Serialize};

pub use crate::sockets::{ServerSocket, SocketState};

/// One kernel counter that changed during a run (`/proc/net/netstat`, `/proc/net/snmp`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterDelta {
    pub name: String,
    pub before: u64,
    pub after: u64,
}

impl CounterDelta {
    /// `after - before`, negative when a counter went down (gauges such as Tcp.CurrEstab).
    pub fn change(&self) -> i128 {
        i128::from(self.after) - i128::from(self.before)
    }
}

/// Something an observer saw. New kinds are added as observers grow (listener queue samples,
/// kernel log lines, DNS timings, ...); match with a wildcard arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Observation {
    /// Kernel counters that changed during the run.
    Counters(Vec<CounterDelta>),
    /// Sockets of the process that owns the server port, with their options.
    ServerSockets(Vec<ServerSocket>),
    /// Connection attempts to `addr` were refused: `syn_refused` of `syn_sent` raw SYNs were
    /// answered with a reset (0 of 0 when only connect() was tried and refused).
    ConnectRefused {
        addr: String,
        syn_sent: u32,
        syn_refused: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_tagged_by_kind_and_reads_back() {
        let obs = vec![
            Observation::Counters(vec![CounterDelta {
                name: "TcpExt.ListenOverflows".into(),
                before: 1,
                after: 4,
            }]),
            Observation::ConnectRefused {
                addr: "127.0.0.1:1".into(),
                syn_sent: 3,
                syn_refused: 3,
            },
        ];
        let json = serde_json::to_string(&obs).unwrap();
        assert!(
            json.contains("\"counters\":[{\"name\":\"TcpExt.ListenOverflows\""),
            "{json}"
        );
        assert!(json.contains("\"connect_refused\":{\"addr\""), "{json}");
        let back: Vec<Observation> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, obs);
        let Observation::Counters(c) = &back[0] else {
            panic!("{back:?}")
        };
        assert_eq!(c[0].change(), 3);
    }
}

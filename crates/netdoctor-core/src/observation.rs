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

/// The change of counter `name` in `deltas`, when it was reported.
pub fn counter_change(deltas: &[CounterDelta], name: &str) -> Option<i128> {
    deltas
        .iter()
        .find(|d| d.name == name)
        .map(CounterDelta::change)
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
    /// How netdoctor's own load was run, so effects of the user's choices and of the load
    /// generator itself are not blamed on the server.
    RunConfig {
        /// HTTP keep-alive; `false` when the user asked for one connection per request.
        keepalive: bool,
        /// The load generator's request timeout, ms (0: none). It resets a connection whose
        /// request timed out.
        timeout_ms: u64,
        /// Concurrent connections the load opened.
        connections: u32,
    },
    /// CPU use of the machine during the run: `machine_busy` is the busy share (0..=1) of all
    /// `cores`, `own_busy` the share netdoctor itself used (same scale). `server_wait_ms`: how
    /// long the server's threads waited for a CPU in all during the run (their scheduler
    /// run-queue delay, `/proc/PID/task/*/schedstat`), and `server_cpu_ms` the CPU time its
    /// processes used, when the server is on this host.
    Cpu {
        machine_busy: f64,
        own_busy: f64,
        cores: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server_wait_ms: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server_cpu_ms: Option<f64>,
    },
    /// What the load's requests got: answers by status and failures by kind.
    Load(LoadOutcome),
    /// A short keep-alive probe after the load: does the server keep connections, and what a
    /// connection per request costs.
    KeepAlive(KeepAliveCost),
}

/// What a short keep-alive probe measured (`netdoctor_probe::keepalive_probe`), run after a
/// load whose connections carried about one request each although keep-alive was on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeepAliveCost {
    /// Requests answered (all with `Connection: keep-alive`).
    pub requests: u32,
    /// Connections those requests opened.
    pub connections: u32,
    /// Connections the server closed after its first answer although keep-alive was asked
    /// (it answered `Connection: close`, or the connection ended before the next answer).
    pub server_closed: u32,
    /// Requests answered on a connection that had already carried one (keep-alive honoured).
    pub reused: u32,
    /// Median of a connection's first request, its setup included (connect, TLS), ms.
    pub first_p50_ms: f64,
    /// Median of a request alone (written → answered): on kept connections when the server
    /// kept any, else the first requests without their setup, ms.
    pub request_p50_ms: f64,
    /// Requests per second the probe got over its connections.
    pub requests_per_s: f64,
    /// How many times the requests/s a kept connection serves (or would serve).
    pub rps_ratio: f64,
    /// How many times lower the median is with a kept connection.
    pub p50_ratio: f64,
    /// The server kept no connection, so keep-alive could not be timed on it: the ratios count
    /// only the setup the client sees (connect, TLS, close), not the server's own accept and
    /// close work inside the request time. A lower bound.
    pub lower_bound: bool,
}

/// The requests of a load run, as the load generator saw them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadOutcome {
    /// Complete responses (any status).
    pub responses: u64,
    /// Responses by status code.
    pub status: std::collections::BTreeMap<u16, u64>,
    pub connect_errors: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    /// No complete response within the load generator's timeout.
    pub timeouts: u64,
    /// Of `timeouts`: the connection was still being set up (connect() had not completed)
    /// when the load generator's own timeout cut it.
    #[serde(default)]
    pub connect_timeouts: u64,
    /// The first error, e.g. `connect 127.0.0.1:8080: too many open files`.
    pub first_error: Option<String>,
    /// Limits the load generator itself hit (its file descriptors, its local ports): then
    /// the failures are the client's, not the server's.
    pub client_limits: Vec<String>,
}

impl LoadOutcome {
    /// Responses with a 4xx or 5xx status.
    pub fn error_responses(&self) -> u64 {
        self.status
            .iter()
            .filter(|(c, _)| **c >= 400)
            .map(|(_, n)| n)
            .sum()
    }

    /// Requests that did not succeed: 4xx/5xx answers and requests that got no answer.
    pub fn failed(&self) -> u64 {
        self.error_responses()
            + self.connect_errors
            + self.read_errors
            + self.write_errors
            + self.timeouts
    }

    /// Requests attempted: every response plus every request that failed without one.
    pub fn attempted(&self) -> u64 {
        self.responses + self.connect_errors + self.read_errors + self.write_errors + self.timeouts
    }
}

/// The machine's CPU counts as saturated from this busy share on: the server's time then
/// reflects waiting for a CPU as much as its own work.
pub const CPU_SATURATED: f64 = 0.9;

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
            Observation::RunConfig {
                keepalive: false,
                timeout_ms: 2000,
                connections: 10,
            },
            Observation::Cpu {
                machine_busy: 0.95,
                own_busy: 0.4,
                cores: 2,
                server_wait_ms: Some(12.5),
                server_cpu_ms: Some(40.0),
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
        assert_eq!(counter_change(c, "TcpExt.ListenOverflows"), Some(3));
        assert_eq!(counter_change(c, "TcpExt.ListenDrops"), None);
        assert!(
            json.contains("\"run_config\":{\"keepalive\":false"),
            "{json}"
        );
        assert!(json.contains("\"cpu\":{\"machine_busy\":0.95"), "{json}");
    }
}

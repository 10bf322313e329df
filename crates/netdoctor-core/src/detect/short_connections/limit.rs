//! A server that ends each kept connection after a fixed number of requests (nginx
//! `keepalive_requests`, Apache `MaxKeepAliveRequests`, Envoy's `max_requests_per_connection`).
//!
//! Keep-alive works, so the connections carry more than the two requests a connection per
//! request allows, and nothing was told: over +37 ms, nginx with `keepalive_requests 5`
//! closed every connection right after its 5th answer, and one request in 5 paid a new
//! connection's handshake (`testdata/captures/keepalive-requests5.pcap.gz`: 30 requests on 6
//! connections, told healthy). The signature is the count: most of the server's closes (a FIN
//! within [`super::IDLE_MIN_MS`] of the connection's last packet, not an idle timer) end
//! connections that carried the same number of requests. A client that stops after its own
//! count closes first (not this); an idle timeout closes after a steady silence instead
//! ([`super::idle`]); connections of varying lengths closed by the server have no one limit.

use super::{IDLE_MIN_MS, MAX_EXCHANGES_PER_CONN, MIN_CONNECTIONS};

/// The evidence entry of the limit (the zh texts key on it).
pub const LIMIT_EVIDENCE: &str = "request_limit";
/// The largest limit told: past it a handshake every N requests costs little.
pub const LIMIT_MAX: u32 = 100;
/// Share of the median request latency, per request on average, from which the limit is a
/// warning.
const WARNING_SHARE: f64 = 0.1;

/// The requests carried by the connections the server closed right after an answer.
#[derive(Default)]
pub(super) struct LimitCloses {
    counts: Vec<u32>,
}

/// One limit the server's closes share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Limit {
    /// Requests per connection.
    pub n: u32,
    /// Connections closed at exactly `n`, of `closed` the server closed right after an answer.
    pub at: u64,
    pub closed: u64,
}

impl LimitCloses {
    /// A connection the server closed with a FIN `idle_ns` after its last packet, after
    /// `requests` requests.
    pub(super) fn record(&mut self, requests: u32, idle_ns: Option<i64>, rst: bool) {
        let prompt = idle_ns.is_some_and(|ns| (ns as f64) / 1e6 < IDLE_MIN_MS);
        if !rst && prompt && self.counts.len() < 4096 {
            self.counts.push(requests);
        }
    }

    /// The limit, when at least [`MIN_CONNECTIONS`] and 80 % of the server's prompt closes,
    /// and most of all `conns`, ended connections of the same length (3 to [`LIMIT_MAX`]).
    pub(super) fn limit(&self, conns: u64) -> Option<Limit> {
        let closed = self.counts.len() as u64;
        let mut c = self.counts.clone();
        c.sort_unstable();
        let (mut best, mut at) = (0, 0u64);
        for run in c.chunk_by(|a, b| a == b) {
            if run.len() as u64 > at {
                (best, at) = (run[0], run.len() as u64);
            }
        }
        let l = Limit {
            n: best,
            at,
            closed,
        };
        (f64::from(best) > MAX_EXCHANGES_PER_CONN
            && best <= LIMIT_MAX
            && at >= MIN_CONNECTIONS
            && at * 10 >= closed * 8
            && at * 2 > conns)
            .then_some(l)
    }
}

impl Limit {
    /// The setup paid once per `n` requests, per request on average (ms).
    pub(super) fn per_request_ms(&self, setup_ms: f64) -> f64 {
        setup_ms / f64::from(self.n.max(1))
    }

    /// Warning when the average cost per request is ≥ [`WARNING_SHARE`] of the median.
    pub(super) fn warning(&self, setup_ms: f64, latency_p50_ms: f64) -> bool {
        latency_p50_ms > 0.0 && self.per_request_ms(setup_ms) >= WARNING_SHARE * latency_p50_ms
    }

    pub(super) fn summary(&self, conns: u64, setup_ms: f64, latency_p50_ms: f64) -> String {
        let avg = self.per_request_ms(setup_ms);
        format!(
            "The server ends each kept connection after {n} requests: {} of {conns} connections \
             ended with its FIN right after their {n}th answer, so one request in {n} pays a new \
             connection's setup ({setup_ms:.2} ms; {avg:.2} ms a request on average{})",
            self.at,
            if latency_p50_ms > 0.0 {
                format!(
                    ", {:.0}% of the median request",
                    avg / latency_p50_ms * 100.0
                )
            } else {
                String::new()
            },
            n = self.n
        )
    }

    pub(super) fn explanation(&self, setup_ms: f64) -> String {
        format!(
            "Keep-alive works here, but only for {n} requests: the server sent its FIN right \
             after the {n}th answer on {} of the {} connections it closed promptly (not after an \
             idle time), which is a per-connection request limit (nginx `keepalive_requests`, \
             Apache `MaxKeepAliveRequests`, Envoy `max_requests_per_connection`, or the \
             application's own). Every {n}th request then waits for a new connection: its \
             handshake ({setup_ms:.2} ms median here, from the SYN to the client's ACK of the \
             SYN/ACK, more with TLS) and a fresh congestion window, and each closed connection \
             leaves a TIME_WAIT socket behind. The farther the client, the more each of those \
             handshakes costs.",
            self.at,
            self.closed,
            n = self.n
        )
    }

    pub(super) fn fix(&self) -> String {
        format!(
            "Raise the server's per-connection request limit from {}: nginx `keepalive_requests` \
             (default 1000 since 1.19.10), Apache `MaxKeepAliveRequests` (default 100), Envoy \
             `max_requests_per_connection`. A limit exists to rebalance connections and free \
             per-connection memory, so keep it in the hundreds or thousands rather than \
             removing it.",
            self.n
        )
    }

    /// "6 of 6 connections the server closed right after an answer carried 5 requests".
    pub(super) fn note(&self) -> String {
        format!(
            "{} of {} connections the server closed right after an answer carried exactly {} \
             requests",
            self.at, self.closed, self.n
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closes(counts: &[u32]) -> LimitCloses {
        let mut l = LimitCloses::default();
        for &n in counts {
            l.record(n, Some(1_000_000), false);
        }
        l
    }

    #[test]
    fn one_count_shared_by_the_server_closes_is_a_limit_and_varied_counts_are_not() {
        let l = closes(&[5, 5, 5, 5, 5, 5]).limit(6).unwrap();
        assert_eq!((l.n, l.at, l.closed), (5, 6, 6));
        // Lengths that vary (a client that stops when its work is done): no one limit.
        assert_eq!(closes(&[3, 5, 7, 4, 9, 6]).limit(6), None);
        // Too few, or beyond what a handshake every N requests costs.
        assert_eq!(closes(&[5, 5, 5, 5]).limit(4), None);
        assert_eq!(closes(&[500; 6]).limit(6), None);
        // The server's prompt closes are a minority of the connections.
        assert_eq!(closes(&[5; 6]).limit(20), None);
        // Closes after an idle time, or resets, are not the limit's.
        let mut idle = LimitCloses::default();
        for _ in 0..6 {
            idle.record(5, Some(1_000_000_000), false);
            idle.record(5, Some(1_000_000), true);
        }
        assert_eq!(idle.limit(12), None);
    }
}

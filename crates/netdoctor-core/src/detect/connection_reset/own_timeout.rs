//! The client resets that were netdoctor's own load generator giving up: a request that had
//! waited its `--timeout` ([`Observation::RunConfig`](crate::observation::Observation)'s
//! `timeout_ms`) when the client reset it. Reported apart, at info, on the client.

use super::{ConnectionReset, Example, KindAgg, OWN_TIMEOUT_SLACK};
use crate::detect::{MAX_EXAMPLES, conn_label};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};

impl ConnectionReset {
    /// Whether a request that waited `waited_ns` before the client reset it hit the load
    /// generator's own timeout.
    pub(super) fn is_own_timeout(&self, waited_ns: i64) -> bool {
        self.timeout_ms
            .is_some_and(|t| waited_ns as f64 / 1e6 >= OWN_TIMEOUT_SLACK * t as f64)
    }

    /// How many of a kind's client resets came at the load generator's own timeout.
    pub(super) fn own_timeouts(&self, k: &KindAgg) -> u64 {
        match (self.timeout_ms, &k.client_waited) {
            (Some(t), Some(h)) => h.count_at_least_ms(OWN_TIMEOUT_SLACK * t as f64),
            _ => 0,
        }
    }

    pub(super) fn own_timeout_finding(
        &self,
        n: u64,
        exchanges: u64,
        examples: &[&Example],
        t0_ns: i64,
    ) -> Finding {
        let t = self.timeout_ms.unwrap_or(0);
        let mut f = Finding::new(
            FindingId::ConnectionReset,
            Severity::Info,
            Side::Client,
            format!(
                "netdoctor's load generator reset {n} connections itself, when their request \
                 reached its {t} ms timeout"
            ),
        );
        f.confidence = 0.9;
        f.impact.affected_fraction = Some((n as f64 / (exchanges + n).max(1) as f64).min(1.0));
        f.explanation = format!(
            "These resets were sent by the client after its request had waited {t} ms, the \
             request timeout the load was run with: the load generator gave up and aborted the \
             connection. They are not the server resetting connections; the slowness that made \
             the requests wait that long is what to look at (the other findings, the latency \
             figures)."
        );
        f.fix = "Nothing to fix in the resets themselves. If the server is expected to take \
                 this long, run with a longer --timeout; otherwise follow the other findings."
            .to_string();
        f.evidence = examples
            .iter()
            .take(MAX_EXAMPLES)
            .map(|e| {
                let waited = e.req.map_or(0, |r| e.rst.ts_ns - r.ts_ns);
                Evidence::Packets {
                    connection: conn_label(e.client, e.server),
                    packets: e
                        .req
                        .into_iter()
                        .chain([e.rst])
                        .map(|p| p.to_ref(t0_ns))
                        .collect(),
                    note: format!(
                        "the request, then the client's reset {:.1} ms later",
                        waited as f64 / 1e6
                    ),
                }
            })
            .collect();
        f
    }
}

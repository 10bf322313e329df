//! After the load: what a connection per request costs, measured.
//!
//! When the load asked for keep-alive and still opened about a connection per request, the
//! server (or something on the way) closed them. A short keep-alive probe against the same
//! target (`netdoctor_probe::keepalive_probe`: at most a second, a few connections) says
//! whether the server keeps a connection when asked, and times a request on an open
//! connection apart from a connection's setup and close. `short_connections` takes its
//! severity from that cost and its side from who closed. A load whose connections carried
//! many requests each never runs it, so a healthy keep-alive server's run takes no longer.

use crate::observer::{Outcome, RunCtx};
use crate::plan::DiagnosePlan;
use crate::run::Progress;
use netdoctor_core::detect::short_connections::MAX_EXCHANGES_PER_CONN;
use netdoctor_core::observation::Observation;
use netdoctor_probe::{HttpProbeConfig, KeepAliveConfig};
use netdoctor_report::{Check, CheckName};
use std::time::Duration;

/// Fewer answered requests than this say too little about reuse to be worth a probe.
const MIN_REQUESTS: u64 = 20;
/// The probe's limits: threads, time.
const PROBE_CONNECTIONS: usize = 8;
const PROBE_BUDGET: Duration = Duration::from_secs(1);

/// Whether the load's requests asked for keep-alive: the plan's keep-alive, and no
/// `Connection: close` among the user's headers (then the user asked to close).
pub(crate) fn requested(plan: &DiagnosePlan) -> bool {
    plan.load.keepalive
        && !plan.load.headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("connection")
                && value
                    .split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("close"))
        })
}

/// Runs the probe when the load asked for keep-alive over HTTP/1.1 and got no more than
/// [`MAX_EXCHANGES_PER_CONN`] requests per connection; its check and observation go into `out`.
pub(crate) fn after_load(
    ctx: &RunCtx<'_>,
    load: Option<&netdoctor_load::LoadResult>,
    progress: &dyn Progress,
    out: &mut Outcome,
) {
    let plan = ctx.plan;
    let Some(l) = load else { return };
    let http1 = l.protocol.as_deref().is_none_or(|p| p == "http/1.1");
    if !requested(plan) || !http1 || l.requests < MIN_REQUESTS || l.connects == 0 {
        return;
    }
    let per_conn = l.requests as f64 / l.connects as f64;
    if per_conn > MAX_EXCHANGES_PER_CONN {
        return;
    }
    progress.stage(&format!(
        "{per_conn:.1} requests per connection although keep-alive was asked: measuring \
             keep-alive for up to {:.0} s",
        PROBE_BUDGET.as_secs_f64()
    ));
    let cfg = KeepAliveConfig {
        http: HttpProbeConfig {
            host: plan.target.host_header.clone(),
            path: plan.target.path.clone(),
            timeout: plan.load.timeout,
            connect_timeout: None,
            tls: plan.target.tls.clone(),
            protocol: netdoctor_load::Protocol::Http1,
        },
        connections: PROBE_CONNECTIONS.min(plan.load.connections.max(1)),
        budget: PROBE_BUDGET,
    };
    match ctx.host.keepalive_probe(ctx.addr, &cfg) {
        Ok(p) => {
            out.checks.push(Check::ok_with(
                CheckName::KeepaliveProbe,
                format!(
                    "{} requests on {} connections, {} closed by the server after one answer",
                    p.requests, p.connections, p.server_closed
                ),
            ));
            out.observations.push(Observation::KeepAlive(p));
        }
        Err(e) => out.checks.push(Check::failed(
            CheckName::KeepaliveProbe,
            crate::run::error_chain(&e),
        )),
    }
}
